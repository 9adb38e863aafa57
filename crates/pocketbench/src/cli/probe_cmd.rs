//! `pocketbench probe` (the on-device process) and `pocketbench export-gguf`.

use std::path::PathBuf;

use clap::Args;
use pocketbench::probe;

use pocketbench::event::{Event, Reporter};

use super::render::EventArgs;
use super::{Code, ShapeArgs};

/// Arguments of `probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The probe spec (JSON, written by a runner).
    #[arg(long, value_name = "FILE")]
    pub spec: PathBuf,
    /// Write the result here (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Run `probe`: the probe crate's own entry, so `pocketbench probe` and the
/// `pocketbench-probe` binary pushed to phones are one process.
pub fn run(a: &ProbeArgs) -> pocketbench::Result<Code> {
    use pocketbench::probe::entry::{self, Outcome};
    let args = entry::Args { spec: a.spec.clone(), out: a.out.clone() };
    match entry::run(&args) {
        Ok(Outcome::Print(json) | Outcome::Info(json)) => outln!("{json}"),
        Ok(Outcome::Written) => {}
        Err(e) => return Err(pocketbench::Error::from(e)),
    }
    Ok(Code::Ok)
}

/// Arguments of `export-gguf`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The configuration.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Output file.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `export-gguf`.
pub fn export(a: &ExportArgs) -> pocketbench::Result<Code> {
    let shape = a.shape.resolve()?;
    probe::gguf::write_model(&shape, probe::seed_of(&shape), &a.out)?;
    let size = std::fs::metadata(&a.out).map(|m| m.len()).unwrap_or(0);
    a.events.reporter().report(&Event::Exported {
        path: a.out.clone(),
        config: shape.to_string(),
        mb: size as f64 / 1e6,
        seed: probe::seed_of(&shape),
    });
    Ok(Code::Ok)
}
