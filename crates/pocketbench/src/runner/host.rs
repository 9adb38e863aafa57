//! The host runner: each configuration in a fresh child process
//! (`pocketbench probe --spec FILE`), with a timeout, its stdout and stderr
//! going to files (so a chatty child can never block on a full pipe).
//!
//! On Unix the probe starts in a process group of its own, and a timeout
//! kills the whole group, as cargo-nextest does: an external engine the
//! probe runs (llama-bench, llm_bench) dies with it instead of living on as
//! an orphan that keeps loading the machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wait_timeout::ChildExt;

use super::{Failure, Job, Runner};
use crate::probe::{self, ProbeResult};

/// Runs the probe on this machine.
#[derive(Debug, Clone)]
pub struct HostRunner {
    /// Device id (normally `host`).
    pub device: String,
    /// The pocketbench binary to spawn.
    pub exe: PathBuf,
    /// Model-file cache.
    pub cache: PathBuf,
    /// Memory available to a probe, bytes (sysinfo, at start).
    pub available_bytes: u64,
    /// CPU brand string.
    pub cpu: String,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// Extra environment for the probe process only (for instance where an
    /// external engine's tool is), so callers need not change their own.
    pub probe_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl HostRunner {
    /// A runner spawning `exe`.
    pub fn new(device: &str, exe: PathBuf, cache: PathBuf) -> Self {
        let facts = crate::probe::HostFacts::collect();
        HostRunner {
            device: device.into(),
            exe,
            cache,
            available_bytes: facts.available_bytes,
            cpu: facts.cpu,
            logical_cpus: facts.logical_cpus,
            probe_env: Vec::new(),
        }
    }

    fn work_dir(&self, job: &Job) -> Result<tempfile::TempDir, Failure> {
        std::fs::create_dir_all(&self.cache).map_err(|e| Failure::Build { reason: e.to_string() })?;
        tempfile::Builder::new()
            .prefix(&format!("probe-{}-", job.shape.id()))
            .tempdir_in(&self.cache)
            .map_err(|e| Failure::Build { reason: e.to_string() })
    }
}

/// Kill `child` and, on Unix, every process of its group (it leads one).
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(lines)..].join(" | ")
}

impl Runner for HostRunner {
    fn device(&self) -> &str {
        &self.device
    }

    fn build(&self, engine: crate::probe::EngineKind) -> String {
        // The probe is this same executable: its build and kernels are ours.
        let b = probe::BuildInfo::current();
        format!(
            "{} via pocketbench {} ({} {} opt-level {}, {}), kernels {}, on {} ({} logical CPUs)",
            engine.name(),
            b.pocketbench,
            b.target,
            b.profile,
            b.opt_level,
            b.rustc,
            crate::kernels::isa().name(),
            self.cpu,
            self.logical_cpus
        )
    }

    fn temperature(&self) -> Option<super::thermal::Temperature> {
        super::thermal::hottest_sensor(Path::new("/sys/class"))
    }

    fn measure(&self, job: &Job) -> Result<ProbeResult, Failure> {
        if !job.force && job.predicted_peak_bytes > self.available_bytes as f64 {
            return Err(Failure::Refused {
                reason: format!(
                    "predicted peak {:.0} MB exceeds the {:.0} MB available; pass --force to run anyway",
                    job.predicted_peak_bytes / 1e6,
                    self.available_bytes as f64 / 1e6
                ),
            });
        }
        let model = match &job.engine_model {
            Some(m) => m.clone(),
            None => probe::model_file(&job.shape, &self.cache).map_err(|e| Failure::Build { reason: e.to_string() })?,
        };
        let dir = self.work_dir(job)?;
        let spec = job.spec(model);
        let spec_path = dir.path().join("spec.json");
        let out_path = dir.path().join("result.json");
        let err_path = dir.path().join("stderr.txt");
        let write = |p: &Path, s: &str| std::fs::write(p, s).map_err(|e| Failure::Build { reason: e.to_string() });
        write(&spec_path, &serde_json::to_string(&spec).map_err(|e| Failure::Build { reason: e.to_string() })?)?;
        let stderr = std::fs::File::create(&err_path).map_err(|e| Failure::Build { reason: e.to_string() })?;
        let mut cmd = Command::new(&self.exe);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .arg("probe")
            .arg("--spec")
            .arg(&spec_path)
            .arg("--out")
            .arg(&out_path)
            .env("RAYON_NUM_THREADS", job.threads.to_string())
            .envs(self.probe_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| Failure::Unavailable { reason: format!("cannot start {}: {e}", self.exe.display()) })?;
        let status =
            match child.wait_timeout(job.limit()).map_err(|e| Failure::Unavailable { reason: e.to_string() })? {
                Some(s) => s,
                None => {
                    kill_group(&mut child);
                    let _ = child.wait();
                    return Err(Failure::Timeout { seconds: job.limit().as_secs_f64() });
                }
            };
        if !status.success() {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                if let Some(signal) = status.signal() {
                    let hint =
                        if signal == 9 { ", probably by the out-of-memory killer".to_string() } else { String::new() };
                    return Err(Failure::Killed { signal, hint });
                }
            }
            return Err(Failure::Crashed { code: status.code().unwrap_or(-1), stderr: tail(&err_path, 5) });
        }
        let text = std::fs::read_to_string(&out_path).map_err(|e| Failure::BadOutput { reason: e.to_string() })?;
        crate::probe::ProbeResult::from_json(&text).map_err(|e| Failure::BadOutput { reason: e.to_string() })
    }
}
