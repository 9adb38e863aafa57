//! Running another engine's command: its output captured, its peak memory
//! polled, a timeout enforced. Shared by every external engine.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::meter::MemoryStatus;

/// What a finished command left.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// Its standard output.
    pub stdout: String,
    /// Largest VmHWM seen of the process (polled every 5 ms; 0 where
    /// `/proc` has no such field).
    pub peak_hwm_bytes: u64,
}

/// Running an external engine failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It could not be started.
    #[error("cannot start {bin}: {source}")]
    Spawn {
        /// The executable.
        bin: String,
        /// The cause.
        source: std::io::Error,
    },
    /// It failed.
    #[error("{tool} {args} failed ({status}): {stderr}")]
    Failed {
        /// The tool.
        tool: &'static str,
        /// Its arguments.
        args: String,
        /// Exit status.
        status: String,
        /// Last lines of its stderr.
        stderr: String,
    },
    /// It ran past the timeout and was killed.
    #[error("{tool} ran longer than {after:?} and was killed")]
    Timeout {
        /// The tool.
        tool: &'static str,
        /// The limit.
        after: Duration,
    },
    /// Its output could not be read.
    #[error("{tool}: {message}")]
    Parse {
        /// The tool.
        tool: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The expected test is not in the output.
    #[error("{tool} output has no {test} test")]
    Missing {
        /// The tool.
        tool: &'static str,
        /// The test, in the tool's own naming.
        test: String,
    },
}

/// Run `bin args`, polling its VmHWM, killing it after `timeout`. A non-zero
/// exit is an error carrying the last lines of its stderr.
pub fn run(tool: &'static str, bin: &Path, args: &[String], timeout: Duration) -> Result<Finished, RunError> {
    let spawn_error = |source| RunError::Spawn { bin: bin.display().to_string(), source };
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_error)?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let (pid, start) = (child.id(), Instant::now());
    let mut hwm = 0;
    let status = loop {
        if let Some(m) = MemoryStatus::of(pid) {
            hwm = hwm.max(m.vm_hwm);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout { tool, after: timeout });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(source) => return Err(spawn_error(source)),
        }
    };
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(RunError::Failed {
            tool,
            args: args.join(" "),
            status: status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    Ok(Finished { stdout, peak_hwm_bytes: hwm })
}

/// The executable to run: the file `$env` names, else `exe` on `PATH`.
pub fn locate(env: &str, exe: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(exe)).find(|p| p.is_file())
}
