//! The probe process: read a spec, measure, write the result.
//!
//! `pocketbench-probe [probe] --spec FILE [--out FILE]`, the same command
//! line as `pocketbench probe`, so a runner may push either binary to a
//! device. Exit codes are the harness's: 0 measured, 2 the spec is unusable,
//! 3 the measurement failed. The library part never prints; the binaries
//! print what [`run`] returns.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{ProbeSpec, SCHEMA};

/// The probe's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The spec (JSON, written by a runner).
    pub spec: PathBuf,
    /// Where to write the result (atomically); stdout when absent.
    pub out: Option<PathBuf>,
}

/// The usage text (`--help`).
pub const USAGE: &str = "\
usage: pocketbench-probe [probe] --spec FILE [--out FILE]

Runs the measurement a pocketbench runner describes in FILE (JSON) and
writes the result JSON to --out (atomically: a partial file never appears
under that name) or to stdout. Exit codes: 0 measured, 2 the spec or the
command line is unusable, 3 the measurement failed.";

/// Why the probe stopped without a result.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    /// The command line or the spec is unusable (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The measurement failed (exit 3).
    #[error("{0}")]
    Failed(String),
}

impl EntryError {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            EntryError::Usage(_) => 2,
            EntryError::Failed(_) => 3,
        }
    }
}

/// What a finished probe hands its binary.
#[derive(Debug)]
pub enum Outcome {
    /// The result JSON, for stdout (no `--out`).
    Print(String),
    /// The result was written to `--out`.
    Written,
    /// `--help` or `--version`: print this and exit 0.
    Info(String),
}

/// A parsed command line: a measurement to run, or a text to print
/// (`--help`, `--version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Measure as the spec says.
    Run(Args),
    /// Print this and exit 0.
    Info(String),
}

/// Parse the command line (without the program name). A leading `probe`
/// is accepted, so the harness's `pocketbench probe` line runs here as is.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Parsed, EntryError> {
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a == "probe") {
        args.next();
    }
    let (mut spec, mut out) = (None, None);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next().map(PathBuf::from).ok_or_else(|| EntryError::Usage(format!("{name} needs a FILE\n\n{USAGE}")))
        };
        match a.to_str() {
            Some("--spec") => spec = Some(value("--spec")?),
            Some("--out") => out = Some(value("--out")?),
            Some("-h" | "--help") => return Ok(Parsed::Info(USAGE.to_string())),
            Some("-V" | "--version") => {
                return Ok(Parsed::Info(format!(
                    "pocketbench-probe {} (spec and result schema {SCHEMA}, {})",
                    env!("CARGO_PKG_VERSION"),
                    env!("PB_TARGET")
                )))
            }
            _ => return Err(EntryError::Usage(format!("unexpected argument {a:?}\n\n{USAGE}"))),
        }
    }
    let spec = spec.ok_or_else(|| EntryError::Usage(format!("--spec FILE is required\n\n{USAGE}")))?;
    Ok(Parsed::Run(Args { spec, out }))
}

/// The whole process after its arguments: `main` of both binaries.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<Outcome, EntryError> {
    match parse(args)? {
        Parsed::Run(a) => run(&a),
        Parsed::Info(info) => Ok(Outcome::Info(info)),
    }
}

/// Measure what `a.spec` asks and deliver the result.
pub fn run(a: &Args) -> Result<Outcome, EntryError> {
    die_with_parent();
    let text = std::fs::read_to_string(&a.spec)
        .map_err(|e| EntryError::Usage(format!("reading {}: {e}", a.spec.display())))?;
    let spec = ProbeSpec::from_json(&text).map_err(|e| EntryError::Usage(format!("{}: {e}", a.spec.display())))?;
    spec.validate().map_err(|e| EntryError::Usage(e.to_string()))?;
    if let Some(outcome) = injected_fault(&spec, a.out.as_deref())? {
        return Ok(outcome);
    }
    crate::ensure_model(&spec)
        .map_err(|e| EntryError::Failed(format!("{}: cannot be written: {e}", spec.model.display())))?;
    let (meter, why) = match crate::meter::detect() {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let result = crate::run(&spec, meter, why).map_err(|e| EntryError::Failed(e.to_string()))?;
    let json = serde_json::to_string_pretty(&result).map_err(|e| EntryError::Failed(e.to_string()))?;
    match &a.out {
        Some(p) => {
            write_atomic(p, json.as_bytes())
                .map_err(|e| EntryError::Failed(format!("writing {}: {e}", p.display())))?;
            Ok(Outcome::Written)
        }
        None => Ok(Outcome::Print(json)),
    }
}

/// Write via a temporary file and rename, so a crash never leaves half a
/// file (a probe killed mid-write leaves the name absent). The temporary
/// name keeps the whole file name ([`temporary_sibling`]), so two files that
/// differ only in extension can be written at once. The harness writes its
/// own files with this too.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary_sibling(path, "tmp~");
    // A failed write or rename removes its temporary file: the names are
    // unique, so nothing else would ever reuse (and so clear) it.
    std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// A name beside `path` for writing it before a rename: the whole file name,
/// then this process's id and a count, then `suffix`
/// (`results.json.4711.0.tmp~`). Every writer gets its own, so two
/// processes (or threads) writing the same file at once each rename a whole
/// file into place; with one shared name they wrote into each other's
/// temporary file, and one's rename took it from under the other.
pub fn temporary_sibling(path: &Path, suffix: &str) -> std::path::PathBuf {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{n}.{suffix}", std::process::id()));
    path.with_file_name(name)
}

/// A probe runs in a process group of its own (so a timeout can kill what
/// it starts); on Linux (Android included) it also asks to be killed when
/// the process that started it dies, so a sweep killed mid-measurement
/// leaves no probe running on. Elsewhere the runner's own timeout is the
/// only bound.
fn die_with_parent() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
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

/// Test hook: `POCKETBENCH_FAULT=KIND[:CONFIG_ID]` makes the probe fail on
/// purpose (for every configuration, or only the one named), so tests can
/// check that a sweep survives probes that crash, hang, are killed or write
/// garbage. KIND is `crash`, `hang`, `kill` (SIGKILL, as the OOM killer
/// sends) or `garbage`.
fn injected_fault(spec: &ProbeSpec, out: Option<&Path>) -> Result<Option<Outcome>, EntryError> {
    let Ok(fault) = std::env::var("POCKETBENCH_FAULT") else { return Ok(None) };
    let (kind, target) = fault.split_once(':').unwrap_or((fault.as_str(), ""));
    if !target.is_empty() && target != spec.shape.id() {
        return Ok(None);
    }
    match kind {
        "crash" => Err(EntryError::Failed("injected fault: crash".into())),
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
        "kill" => {
            let _ = std::process::Command::new("kill").arg("-9").arg(std::process::id().to_string()).status();
            std::thread::sleep(std::time::Duration::from_secs(10));
            Err(EntryError::Failed("injected fault: kill did not kill".into()))
        }
        "garbage" => {
            if let Some(p) = out {
                std::fs::write(p, "{ not a result").map_err(|e| EntryError::Failed(e.to_string()))?;
            }
            Ok(Some(Outcome::Written))
        }
        other => Err(EntryError::Usage(format!("POCKETBENCH_FAULT: unknown kind `{other}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_harness_command_line_and_the_bare_one_parse_alike() {
        let want = Args { spec: "s.json".into(), out: Some("r.json".into()) };
        let run = |a: &[&str]| match parse(os(a)).unwrap() {
            Parsed::Run(args) => args,
            other => panic!("{other:?}"),
        };
        assert_eq!(run(&["probe", "--spec", "s.json", "--out", "r.json"]), want);
        assert_eq!(run(&["--out", "r.json", "--spec", "s.json"]), want);
        assert_eq!(run(&["--spec", "s.json"]).out, None);
    }

    #[test]
    fn a_bad_command_line_is_a_usage_error_that_says_what() {
        for (args, says) in [
            (&["--out", "r.json"][..], "--spec FILE is required"),
            (&["--spec"][..], "--spec needs a FILE"),
            (&["--spec", "s", "--fast"][..], "unexpected argument \"--fast\""),
        ] {
            let e = parse(os(args)).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(says), "{e}");
        }
        assert!(matches!(parse(os(&["--help"])).unwrap(), Parsed::Info(t) if t.contains("usage: pocketbench-probe")));
    }
}
