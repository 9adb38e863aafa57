//! Runners: how a configuration gets measured on a device. One small trait;
//! the host runner spawns the probe as a child process; the Android runner
//! pushes it to a phone and runs it over adb (`pocketbench-runner-android`);
//! the iOS runner launches the pocketbench app on an iPhone or iPad over
//! `xcrun devicectl` (`pocketbench-runner-ios`).

pub mod android;
pub mod attached;
mod host;
pub mod ios;
mod job;
pub use crate::probe::thermal;

pub use android::AndroidRunner;
pub use host::HostRunner;
pub use ios::IosRunner;
pub use job::{JobError, JobSettings};

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::arch::Shape;
use crate::device::{Device, Transport};
use crate::probe::ProbeResult;
use crate::workload::Workload;
use crate::Error;

/// The runner that measures `device`, chosen by its transport: this
/// machine runs the probe as a child process of this same executable (which
/// must be `pocketbench`, whose `probe` subcommand it starts); an adb
/// profile pushes the static probe to its phone; an iOS profile launches the
/// app over devicectl. A device with no runner in
/// this build, or a profile that cannot reach its device as written, is an
/// error that says what to do.
pub fn for_device(device: &Device) -> Result<Box<dyn Runner>, Error> {
    for_device_with(device, None)
}

/// [`for_device`], with `probe` as the host probe binary instead of this
/// executable (`gate --measure --baseline-probe`): only a local device
/// takes one.
pub fn for_device_with(device: &Device, probe: Option<&Path>) -> Result<Box<dyn Runner>, Error> {
    if let Some((base, class)) = device.id().split_once('@') {
        return Err(Error::usage(format!(
            "`{}` predicts engine class `{class}` from published points; pocketbench's probe runs its own engine, so \
             measure `{base}` instead",
            device.id()
        )));
    }
    match (&device.profile().transport, probe) {
        (Transport::Local, exe) => {
            let exe = match exe {
                Some(p) if !p.is_file() => return Err(Error::usage(format!("{}: no such probe binary", p.display()))),
                Some(p) => p.to_path_buf(),
                None => std::env::current_exe().map_err(|e| Error::io(Path::new("the running executable"), e))?,
            };
            Ok(Box::new(HostRunner::new(device.id(), exe, crate::probe::cache_dir())))
        }
        (_, Some(_)) => Err(Error::usage(format!(
            "--baseline-probe and --candidate-probe take a binary for this machine; `{}` is not local",
            device.id()
        ))),
        (Transport::Adb { serial, probe, cpu_mask, any }, None) => {
            if serial.is_empty() && !any {
                return Err(Error::usage(format!(
                    "device `{}` names no adb serial: set `serial` in its profile's [transport] (`pocketbench devices` lists the attached phones' serials), or measure whichever phone is attached with `--device android-any`",
                    device.id()
                )));
            }
            let adb = pocketbench_runner_android::Adb::found(serial.clone())
                .map_err(|e| Error::Unavailable(e.to_string()))?;
            let probe = android::probe_path(probe.as_deref())?;
            Ok(Box::new(AndroidRunner::new(device.id(), adb, probe, cpu_mask.clone(), crate::probe::cache_dir())))
        }
        (Transport::Ios { udid, bundle_id, app, any, energy }, None) => {
            if udid.is_empty() && !any {
                return Err(Error::usage(format!(
                    "device `{}` names no iPhone or iPad: set `udid` in its profile's [transport] (its identifier, UDID or name; `pocketbench devices` lists the reachable ones), or measure whichever one is attached with `--device ios-any`",
                    device.id()
                )));
            }
            let xcrun = pocketbench_runner_ios::Xcrun::locate().map_err(|e| Error::Unavailable(e.to_string()))?;
            let app = ios::app_path(app.as_deref())?;
            let energy = ios::energy::method(*energy)?;
            Ok(Box::new(IosRunner::new(device.id(), xcrun, udid.clone(), bundle_id.clone(), app).with_energy(energy)))
        }
    }
}

/// One measurement to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The configuration.
    pub shape: Shape,
    /// The run.
    pub workload: Workload,
    /// Measured repetitions.
    pub reps: u32,
    /// Threads.
    pub threads: u32,
    /// Give up after this long.
    pub timeout: Duration,
    /// Predicted peak memory increase, bytes (for the admission check).
    pub predicted_peak_bytes: f64,
    /// Run even when the prediction says it will not fit.
    pub force: bool,
    /// The engine to measure through.
    pub engine: crate::probe::EngineKind,
    /// A model in the engine's own format to run instead of the GGUF the
    /// runner builds (MNN's `config.json` for `mnn-llm-bench`).
    pub engine_model: Option<std::path::PathBuf>,
    /// Cool the device down before each repetition (the profile's
    /// `[thermal]`, where it has one).
    pub cooling: Option<crate::probe::thermal::Cooling>,
    /// Repeat until the median is as precise as asked (`reps` the minimum).
    pub auto: Option<crate::probe::timing::AutoReps>,
    /// Pin the engine's threads one to a CPU.
    pub pin: bool,
    /// The probe's 256 MiB bandwidth pass after the repetitions
    /// ([`crate::probe::ProbeSpec::bandwidth_pass`]); a calibration skips it.
    pub bandwidth_pass: bool,
    /// The probe's timed reloads after the repetitions
    /// ([`crate::probe::ProbeSpec::timed_reloads`]); a calibration skips them.
    pub timed_reloads: bool,
    /// When a repetition counts as contended and how many are retaken: set
    /// by the scheduler from its policy, applied by the probe.
    pub contention: Option<crate::probe::window::Contention>,
    /// Run the workload back to back for a set time instead of `reps`
    /// repetitions (`pocketbench soak`).
    pub soak: Option<crate::probe::soak::SoakSpec>,
}

impl Job {
    /// How long a runner waits for the probe: the timeout, plus what the
    /// probe may spend waiting for the device to cool before each
    /// repetition, which is not the configuration's fault.
    pub fn limit(&self) -> Duration {
        let reps = self.auto.map_or(self.reps, |a| a.max_reps) + self.contention.map_or(0, |c| c.retakes);
        let cooling = self.cooling.map_or(0.0, |c| c.timeout_s.max(0.0) * reps as f64);
        // Automatic repetitions stop at their time cap; the timeout is for
        // the rest (the load, the fixed minimum).
        let auto = self.auto.map_or(0.0, |a| a.max_seconds.max(0.0));
        // A soak runs its seconds (whole windows), after one cool-down.
        let soak = self
            .soak
            .map_or(0.0, |s| s.windows() as f64 * s.window_s + self.cooling.map_or(0.0, |c| c.timeout_s.max(0.0)));
        self.timeout + Duration::from_secs_f64(cooling + auto + soak)
    }

    /// The probe's spec for this job, its model at `model` (a path on the
    /// machine that runs the probe, relative to its working folder or not).
    pub fn spec(&self, model: std::path::PathBuf) -> crate::probe::ProbeSpec {
        crate::probe::ProbeSpec {
            schema: crate::probe::SCHEMA,
            shape: self.shape,
            model,
            workload: self.workload,
            reps: self.reps,
            threads: self.threads,
            seed: crate::probe::seed_of(&self.shape),
            engine: self.engine,
            timeout_s: Some(self.timeout.as_secs_f64()),
            cooling: self.cooling,
            contention: self.contention,
            auto: self.auto,
            pin: self.pin,
            bandwidth_pass: self.bandwidth_pass,
            timed_reloads: self.timed_reloads,
            soak: self.soak,
        }
    }
}

/// Threads to measure `device` with: the requested count, else the device
/// profile's engine threads, else every core of this machine.
pub fn threads_for(device: &crate::device::Device, requested: Option<u32>) -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    requested.or(device.profile().engine.threads).unwrap_or(cores)
}

/// Why a measurement produced no result. Each is recorded, never fatal to a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Failure {
    /// Refused before running.
    #[error("refused: {reason}")]
    Refused {
        /// Why.
        reason: String,
    },
    /// Building the model file failed.
    #[error("could not build the model file: {reason}")]
    Build {
        /// Why.
        reason: String,
    },
    /// The probe ran past the timeout and was killed.
    #[error("timed out after {seconds:.0} s (killed)")]
    Timeout {
        /// The limit.
        seconds: f64,
    },
    /// The probe was killed by a signal.
    #[error("killed by signal {signal}{hint}")]
    Killed {
        /// Signal number.
        signal: i32,
        /// ", probably out of memory" for SIGKILL.
        hint: String,
    },
    /// The probe exited with an error.
    #[error("probe failed (exit {code}): {stderr}")]
    Crashed {
        /// Exit code.
        code: i32,
        /// Last lines of its stderr.
        stderr: String,
    },
    /// The probe ran in an app (iOS) and reported its own error, with no
    /// exit code to give.
    #[error("the app's probe failed: {message}")]
    AppError {
        /// What the app printed after `[pocketbench] error: `.
        message: String,
    },
    /// The probe's output was not a result.
    #[error("probe output unreadable: {reason}")]
    BadOutput {
        /// Why.
        reason: String,
    },
    /// The runner cannot reach the device.
    #[error("device unavailable: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// Measures configurations on one device. `Send + Sync`: a sweep measures
/// its devices in parallel, one thread per runner.
pub trait Runner: Send + Sync {
    /// Device id.
    fn device(&self) -> &str;
    /// What will measure through `engine` here, as far as it is known before
    /// running: the probe's build, its kernel ISA and the machine. A stored
    /// measurement is reused only by a runner with the same build.
    fn build(&self, engine: crate::probe::EngineKind) -> String;
    /// Measure one configuration.
    fn measure(&self, job: &Job) -> Result<ProbeResult, Failure>;
    /// The device's temperature now, where it can be read (for cooling down
    /// between repetitions); `None` where there is no reading.
    fn temperature(&self) -> Option<thermal::Temperature> {
        None
    }
}
