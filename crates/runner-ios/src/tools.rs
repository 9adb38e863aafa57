//! The Mac's other tools a run's energy is read with, as processes: each
//! bounded in time (its whole process group killed past its limit), stdin
//! closed. `xcrun xctrace record` runs beside a launch and is stopped with
//! SIGINT, which makes xctrace finish the trace file, as Ctrl-C does.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{drain, kill, wait};
use crate::Xcrun;

/// What a bounded call printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Printed {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

fn describe(cmd: &Command) -> String {
    let mut words = vec![cmd.get_program().to_string_lossy().into_owned()];
    words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    words.join(" ")
}

fn prepare(cmd: &mut Command) {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
}

/// Run `cmd` within `timeout`: what it printed, or why it failed (could
/// not start, timed out, exited non-zero), in words that name the command.
pub fn bounded(mut cmd: Command, timeout: Duration) -> Result<Printed, String> {
    let what = describe(&cmd);
    prepare(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| format!("`{what}` cannot be run: {e}"))?;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let status = wait(&mut child, timeout);
    let printed = Printed { stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() };
    match status {
        None => Err(format!("`{what}` did not finish within {:.0} s and was killed", timeout.as_secs_f64())),
        Some(s) if !s.success() => Err(format!("`{what}` exited with {s}: {}", printed.stderr.trim())),
        Some(_) => Ok(printed),
    }
}

/// An `xctrace record` running beside a launch.
#[derive(Debug)]
pub struct Recording {
    child: Child,
    what: String,
    /// When it was started (the recording's clock starts a little later).
    pub started: Instant,
}

impl Recording {
    /// Start `cmd` (an `xctrace record`), running until [`Recording::stop`].
    pub fn start(mut cmd: Command) -> Result<Recording, String> {
        let what = describe(&cmd);
        prepare(&mut cmd);
        // Its output is not read while it records: discard it rather than
        // let a full pipe stall it.
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let child = cmd.spawn().map_err(|e| format!("`{what}` cannot be run: {e}"))?;
        Ok(Recording { child, what, started: Instant::now() })
    }

    /// Whether it already ended (its time limit, or a failure).
    pub fn ended(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// SIGINT (xctrace then writes the trace out and exits), waiting up to
    /// `timeout`; past it the process group is killed and the trace is
    /// taken as lost.
    pub fn stop(mut self, timeout: Duration) -> Result<(), String> {
        #[cfg(unix)]
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        match wait(&mut self.child, timeout) {
            Some(s) if s.success() || s.code() == Some(130) || s.code().is_none() => Ok(()),
            Some(s) => Err(format!("`{}` exited with {s}", self.what)),
            None => {
                kill(&mut self.child);
                Err(format!("`{}` did not finish its trace within {:.0} s", self.what, timeout.as_secs_f64()))
            }
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill(&mut self.child);
        }
    }
}

impl Xcrun {
    /// `xcrun TOOL` (xctrace), with this xcrun's environment.
    pub fn tool(&self, tool: &str) -> Command {
        let mut cmd = Command::new(self.program());
        cmd.arg(tool);
        cmd.envs(self.envs());
        cmd
    }
}

/// `xctrace record` of the Power Profiler template on `device` (its UDID),
/// every process, at most `limit`, into `output` (a `.trace` to be).
pub fn xctrace_record(device: &str, limit: Duration, output: &Path) -> Vec<OsString> {
    let limit = format!("{}s", limit.as_secs().max(1));
    let mut v: Vec<OsString> = ["record", "--template", "Power Profiler", "--device", device, "--all-processes"]
        .iter()
        .map(OsString::from)
        .collect();
    v.extend(["--time-limit".into(), limit.into(), "--output".into(), output.as_os_str().to_owned()]);
    v.push("--no-prompt".into());
    v
}

/// `xctrace export` of a trace's table of contents into `output`.
pub fn xctrace_toc(input: &Path, output: &Path) -> Vec<OsString> {
    vec!["export".into(), "--input".into(), input.into(), "--output".into(), output.into(), "--toc".into()]
}

/// `xctrace export` of the first run's table with `schema` into `output`.
pub fn xctrace_table(input: &Path, schema: &str, output: &Path) -> Vec<OsString> {
    let xpath = format!("/trace-toc/run[@number=\"1\"]/data/table[@schema=\"{schema}\"]");
    vec![
        "export".into(),
        "--input".into(),
        input.into(),
        "--output".into(),
        output.into(),
        "--xpath".into(),
        xpath.into(),
    ]
}

/// `pymobiledevice3 diagnostics battery single` of the device `udid`.
pub fn battery_single(udid: &str) -> Vec<OsString> {
    ["diagnostics", "battery", "single", "--udid", udid].iter().map(OsString::from).collect()
}
