//! `pocketbench soak`: one configuration run back to back on a device for a
//! set time, its throttle curve read window by window. The request is
//! checked into a job before the device is touched; the device is cooled
//! first by its runner's own temperature reading (over adb for a phone:
//! the zones the probe then reads on the phone), a device that drops is
//! retried once, and the record is written as `soak.json` before
//! `soak.html` is rendered from it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::probe::soak::SoakSpec;
use crate::record::Record;
use crate::runner::{Failure, Job, JobSettings, Runner};
use crate::schedule::{Attempted, Cooling, Policy, Retry, Scheduler};
use crate::Error;

/// The window a soak uses when none is given: a twentieth of its seconds,
/// between 1 and 30 s, and never longer than the soak.
pub fn default_window(seconds: f64) -> f64 {
    (seconds / 20.0).clamp(1.0, 30.0).min(seconds)
}

/// The job of a soak: `settings` on `device` with one cycle as the minimum
/// (no automatic repetitions: the soak's time decides), checked.
pub fn plan(
    device: &Device,
    settings: JobSettings,
    shape: crate::arch::Shape,
    workload: crate::workload::Workload,
    soak: SoakSpec,
) -> Result<Job, Error> {
    soak.validate().map_err(Error::usage)?;
    let timed_here = |engine: crate::probe::EngineKind| {
        if engine.in_process() {
            Ok(())
        } else {
            Err(Error::usage(format!(
                "soak times every decode step inside the probe; {} runs as an external tool that reports only its \
                 own figures: use native, candle-transformers or llama.cpp",
                engine.name()
            )))
        }
    };
    // Asked for by name: refused before it is looked for.
    settings.engine.map_or(Ok(()), timed_here)?;
    let job = JobSettings { reps: 1, auto: None, ..settings }.job(device, shape, workload)?;
    timed_here(job.engine)?;
    Ok(Job { soak: Some(soak), ..job })
}

/// Soak `job` on `device` and write `soak.json` and `soak.html` into `out`;
/// the record and the files written.
pub fn run(
    runner: &dyn Runner,
    device: &Device,
    job: &Job,
    out: &Path,
    reporter: &mut dyn Reporter,
) -> Result<(Record, Vec<PathBuf>), Error> {
    let soak = job.soak.ok_or_else(|| Error::usage("not a soak job"))?;
    reporter.report(&Event::SoakPlanned {
        device: device.id().to_string(),
        config: job.shape.to_string(),
        seconds: soak.seconds,
        window_s: soak.window_s,
        windows: soak.windows(),
        threads: job.threads,
        workload: job.workload.to_string(),
    });
    let cooling = device.profile().thermal.map(|t| Cooling {
        target_c: t.cool_to_c,
        timeout: Duration::from_secs(t.cool_timeout_s),
        ..Cooling::default()
    });
    let policy = Policy {
        retries: 1,
        retry: Retry::Unavailable,
        backoff: true,
        cooling,
        contention: Some(crate::probe::window::Contention::default()),
    };
    let acct = job.shape.accounting();
    let cap = crate::capability::capability(&job.shape, &acct, &crate::capability::ProxySettings::default(), None);
    let record = match Scheduler::new(runner, device, policy).run(job, &cap, reporter) {
        Attempted::Measured { record, .. } => *record,
        Attempted::Failed { failure, .. } => return Err(failure.into()),
        Attempted::TooHot { celsius } => {
            return Err(Failure::Refused {
                reason: format!(
                    "{} stayed at {celsius:.1} C, above its {:.1} C, for {} s: not soaked (a soak from hot would \
                     start throttled)",
                    device.id(),
                    cooling.map_or(f64::NAN, |c| c.target_c),
                    cooling.map_or(0, |c| c.timeout.as_secs())
                ),
            }
            .into())
        }
    };
    let written = crate::report::soak::write(out, &record)?;
    for path in &written {
        reporter.report(&Event::Wrote { path: path.clone() });
    }
    Ok((record, written))
}
