//! Running `xcrun devicectl`: every call with `--json-output FILE` (a fresh
//! file a call), stdin closed, in a process group of its own that a timeout
//! kills whole; the launch with `--console` read line by line for the
//! app's markers.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::error::DevicectlError;
use crate::json;

pub use crate::contract::{DONE, ERROR};

/// How the launched app's console ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Console {
    /// `[pocketbench] done`: the result is in the app's container.
    Done,
    /// `[pocketbench] error: MESSAGE`.
    Failed(String),
    /// The app died: devicectl said it was terminated by a signal, or failed
    /// to launch it, or the console ended without a marker. The text says
    /// which.
    Died(String),
}

/// `xcrun`, found once.
#[derive(Debug, Clone)]
pub struct Xcrun {
    program: PathBuf,
    envs: Vec<(OsString, OsString)>,
}

fn joined(args: &[OsString]) -> String {
    args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
}

impl Xcrun {
    /// `$XCRUN`, else `xcrun` on `PATH`.
    pub fn locate() -> Result<Xcrun, DevicectlError> {
        if let Some(p) = std::env::var_os("XCRUN").filter(|v| !v.is_empty()) {
            let p = PathBuf::from(p);
            return if p.is_file() {
                Ok(Xcrun::at(p))
            } else {
                Err(DevicectlError::NoXcrun { xcrun: p.display().to_string(), why: "$XCRUN names no file".into() })
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join("xcrun"))
            .find(|p| p.is_file())
            .map(Xcrun::at)
            .ok_or_else(|| DevicectlError::NoXcrun { xcrun: "xcrun".into(), why: "not on PATH".into() })
    }

    /// `program` as xcrun (a stand-in, a wrapper).
    pub fn at(program: impl Into<PathBuf>) -> Xcrun {
        Xcrun { program: program.into(), envs: Vec::new() }
    }

    /// Set `key` in the environment of every call.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Xcrun {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// The program run.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The environment every call gets.
    pub fn envs(&self) -> impl Iterator<Item = (&OsString, &OsString)> {
        self.envs.iter().map(|(k, v)| (k, v))
    }

    fn spawn(&self, args: &[OsString], out: &Path, stdout: Stdio) -> Result<Child, DevicectlError> {
        // `--json-output FILE` right after the subcommand's words, before
        // its first option: never among the app's arguments at the end.
        let at = args.iter().position(|a| a.to_string_lossy().starts_with("--")).unwrap_or(args.len());
        let mut cmd = Command::new(&self.program);
        cmd.arg("devicectl").args(&args[..at]).arg("--json-output").arg(out).args(&args[at..]);
        cmd.envs(self.envs.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.spawn()
            .map_err(|e| DevicectlError::NoXcrun { xcrun: self.program.display().to_string(), why: e.to_string() })
    }

    /// `xcrun devicectl ARGS --json-output FILE` within `timeout`; its
    /// `result` as `T`, or the failure devicectl reported, classified.
    pub fn call<T: for<'de> Deserialize<'de>>(
        &self,
        what: &str,
        args: &[OsString],
        timeout: Duration,
    ) -> Result<T, DevicectlError> {
        let dir = tempfile::tempdir().map_err(|e| io_error(what, e))?;
        let out = dir.path().join("out.json");
        let mut child = self.spawn(args, &out, Stdio::piped())?;
        let stderr = drain(child.stderr.take());
        let stdout = drain(child.stdout.take());
        let status = wait(&mut child, timeout).ok_or_else(|| timed_out(what, args, timeout))?;
        let stderr = stderr.join().unwrap_or_default();
        let _ = stdout.join();
        match std::fs::read_to_string(&out) {
            Ok(text) => json::parse(what, &text),
            Err(_) => Err(DevicectlError::Output {
                what: what.into(),
                message: format!(
                    "exited with {status} and wrote no JSON ({}): `{} devicectl {}`",
                    stderr.trim(),
                    self.program.display(),
                    joined(args)
                ),
            }),
        }
    }

    /// `device process launch --console ...`: its output read line by line
    /// until the app's marker, a death devicectl reports, or `timeout`
    /// (then the launch is killed and the app's pid, where devicectl said
    /// it, is handed to `on_timeout` to terminate it on the device).
    pub fn launch_console(
        &self,
        args: &[OsString],
        timeout: Duration,
        on_timeout: &mut dyn FnMut(),
    ) -> Result<Console, DevicectlError> {
        let what = "process launch";
        let dir = tempfile::tempdir().map_err(|e| io_error(what, e))?;
        let out = dir.path().join("out.json");
        let mut child = self.spawn(args, &out, Stdio::piped())?;
        let stderr = drain(child.stderr.take());
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            if let Some(s) = stdout {
                for line in BufReader::new(s).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        });
        let deadline = Instant::now() + timeout;
        let mut seen: Vec<String> = Vec::new();
        let outcome = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                kill(&mut child);
                on_timeout();
                return Err(timed_out(what, args, timeout));
            }
            match rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    let l = line.trim();
                    if l == DONE {
                        break Some(Console::Done);
                    }
                    if let Some(m) = l.strip_prefix(ERROR) {
                        break Some(Console::Failed(m.to_string()));
                    }
                    let low = l.to_lowercase();
                    if low.contains("terminated due to signal") || low.contains("failed to launch") {
                        break Some(Console::Died(l.to_string()));
                    }
                    seen.push(line);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            }
        };
        // The console ends with the app; give devicectl a moment to write
        // its JSON, then stop waiting for it.
        let _ = wait(&mut child, Duration::from_secs(10)).or_else(|| {
            kill(&mut child);
            None
        });
        let _ = reader.join();
        let stderr = stderr.join().unwrap_or_default();
        if let Some(o) = outcome {
            return Ok(o);
        }
        // No marker: the launch itself may have failed (a locked device,
        // an untrusted profile); devicectl's JSON says why.
        if let Ok(text) = std::fs::read_to_string(&out) {
            json::parse::<json::Launched>(what, &text)?;
        }
        let tail: Vec<&str> = seen.iter().rev().take(5).rev().map(String::as_str).collect();
        Ok(Console::Died(format!(
            "the app's console ended without `{DONE}` or `{ERROR}...`{}{}",
            if tail.is_empty() { String::new() } else { format!("; its last lines: {}", tail.join(" | ")) },
            if stderr.trim().is_empty() { String::new() } else { format!("; devicectl: {}", stderr.trim()) }
        )))
    }
}

fn io_error(what: &str, e: std::io::Error) -> DevicectlError {
    DevicectlError::Output { what: what.into(), message: format!("a scratch folder for its JSON: {e}") }
}

fn timed_out(what: &str, args: &[OsString], timeout: Duration) -> DevicectlError {
    DevicectlError::DeviceGone {
        what: what.into(),
        detail: format!(
            "`devicectl {}` did not finish within {:.0} s and was killed with its process group",
            joined(args),
            timeout.as_secs_f64()
        ),
    }
}

pub(crate) fn drain(r: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut v);
        }
        String::from_utf8_lossy(&v).into_owned()
    })
}

/// Wait for `child` at most `timeout`; on timeout kill its process group.
pub(crate) fn wait(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() >= deadline {
            kill(child);
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kill `child` and everything in its process group.
pub(crate) fn kill(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}
