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
    die_with_parent();
    let text = std::fs::read_to_string(&a.spec).with_context(|| format!("reading {}", a.spec.display()))?;
    let spec: ProbeSpec =
        serde_json::from_str(&text).map_err(|e| Usage(format!("{}: not a probe spec: {e}", a.spec.display())))?;
    spec.validate().map_err(|e| Usage(e.to_string()))?;
    if let Some(code) = injected_fault(&spec, a.out.as_deref())? {
        return Ok(code);
    }
    let (meter, why) = match pocketbench::meter::detect() {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let result = probe::run(&spec, meter, why)?;
    let json = serde_json::to_string_pretty(&result)?;
    match &a.out {
        Some(p) => pocketbench::calibrate::write_atomic(p, json.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?,
        None => outln!("{json}"),
    }
    Ok(Code::Ok)
}

/// A probe runs in a process group of its own (so a timeout can kill what
/// it starts); on Linux it also asks to be killed when the process that
/// started it dies, so a sweep killed mid-measurement leaves no probe
/// running on. Elsewhere the runner's own timeout is the only bound.
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getppid, set_parent_process_death_signal, Signal};
        let parent = getppid();
        let _ = set_parent_process_death_signal(Some(Signal::KILL));
        // The parent may have died before the request was made.
        if getppid() != parent {
            std::process::exit(137);
        }
    }
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

/// Test hook: `POCKETBENCH_FAULT=KIND[:CONFIG_ID]` makes the probe fail on
/// purpose (for every configuration, or only the one named), so tests can
/// check that a sweep survives probes that crash, hang, are killed or write
/// garbage. KIND is `crash`, `hang`, `kill` (SIGKILL, as the OOM killer
/// sends) or `garbage`.
fn injected_fault(spec: &ProbeSpec, out: Option<&std::path::Path>) -> anyhow::Result<Option<Code>> {
    let Ok(fault) = std::env::var("POCKETBENCH_FAULT") else { return Ok(None) };
    let (kind, target) = fault.split_once(':').unwrap_or((fault.as_str(), ""));
    if !target.is_empty() && target != spec.shape.id() {
        return Ok(None);
    }
    match kind {
        "crash" => Err(super::exit::Harness("injected fault: crash".into()).into()),
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
        "kill" => {
            let _ = std::process::Command::new("kill").arg("-9").arg(std::process::id().to_string()).status();
            std::thread::sleep(std::time::Duration::from_secs(10));
            Ok(Some(Code::Harness))
        }
        "garbage" => {
            if let Some(p) = out {
                std::fs::write(p, "{ not a result")?;
            }
            Ok(Some(Code::Ok))
        }
        other => Err(Usage(format!("POCKETBENCH_FAULT: unknown kind `{other}`")).into()),
    }
}
