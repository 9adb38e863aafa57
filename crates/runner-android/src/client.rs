//! Running the adb client: found from `$ADB`, else `PATH`; every call with a
//! timeout, its output captured, and its failure said in words.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A finished adb call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Exit code (`adb shell` passes the device command's through, with
    /// shell protocol v2).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// An adb call that did not run to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum AdbError {
    /// No adb binary.
    #[error(
        "adb not found: {0}; install Android's platform-tools (Debian: `apt-get install adb`) or set ADB to its path"
    )]
    NotFound(String),
    /// It ran past its time and was killed.
    #[error("`adb {args}` did not finish within {secs:.0} s and was killed")]
    Timeout {
        /// The arguments, joined.
        args: String,
        /// The limit.
        secs: f64,
    },
    /// Starting or waiting failed.
    #[error("running `adb {args}`: {source}")]
    Io {
        /// The arguments, joined.
        args: String,
        /// The error.
        source: std::io::Error,
    },
    /// Killed by a signal.
    #[error("`adb {args}` was killed by a signal")]
    Signalled {
        /// The arguments, joined.
        args: String,
    },
}

/// The adb binary: `$ADB` when set (it must exist), else the first `adb` on
/// `PATH`.
pub fn find_adb() -> Result<PathBuf, AdbError> {
    if let Some(p) = std::env::var_os("ADB").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(AdbError::NotFound(format!("ADB={} is not a file", p.display()))) };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("adb"))
        .find(|p| p.is_file())
        .ok_or_else(|| AdbError::NotFound("no `adb` on PATH and ADB is not set".into()))
}

fn joined(args: &[OsString]) -> String {
    args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
}

/// Run `program args…` with `timeout`, stdin closed, output captured (read
/// on their own threads, so a chatty command cannot block on a full pipe).
pub fn run(program: &OsStr, args: &[OsString], timeout: Duration) -> Result<Output, AdbError> {
    let io = |source| AdbError::Io { args: joined(args), source };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => AdbError::NotFound(format!("{} does not exist", program.to_string_lossy())),
            _ => io(e),
        })?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(io)? {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(AdbError::Timeout { args: joined(args), secs: timeout.as_secs_f64() });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    match status.code() {
        Some(code) => Ok(Output { code, stdout, stderr }),
        None => Err(AdbError::Signalled { args: joined(args) }),
    }
}
