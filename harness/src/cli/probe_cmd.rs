//! `pocketbench probe` (the on-device process) and `pocketbench export-gguf`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use pocketbench::probe::{self, ProbeSpec};

use super::exit::Usage;
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

/// Run `probe`.
pub fn run(a: &ProbeArgs) -> anyhow::Result<Code> {
    let text = std::fs::read_to_string(&a.spec).with_context(|| format!("reading {}", a.spec.display()))?;
    let spec: ProbeSpec =
        serde_json::from_str(&text).map_err(|e| Usage(format!("{}: not a probe spec: {e}", a.spec.display())))?;
    spec.validate().map_err(|e| Usage(e.to_string()))?;
    let (meter, why) = match pocketbench::meter::detect() {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let result = probe::run(&spec, meter, why)?;
    let json = serde_json::to_string_pretty(&result)?;
    match &a.out {
        Some(p) => pocketbench::calibrate::write_atomic(p, json.as_bytes()).with_context(|| format!("writing {}", p.display()))?,
        None => outln!("{json}"),
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
}

/// Run `export-gguf`.
pub fn export(a: &ExportArgs) -> anyhow::Result<Code> {
    let shape = a.shape.resolve()?;
    probe::gguf::write_model(&shape, probe::seed_of(&shape), &a.out)?;
    let size = std::fs::metadata(&a.out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {} ({}, {:.1} MB, seed {:#x}: the same weights as the probe runs)",
        a.out.display(),
        shape,
        size as f64 / 1e6,
        probe::seed_of(&shape)
    );
    Ok(Code::Ok)
}
