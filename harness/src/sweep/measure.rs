//! Measuring the promising configurations of a predicted sweep on every
//! device that has a runner, with results saved as data first: each probe
//! result (the raw samples) is written to the store directory the moment it
//! finishes, and a rerun loads it instead of measuring again, so a killed
//! sweep resumes without redoing or losing finished work. The record is
//! derived from the stored samples on every run, so its prediction, budgets
//! and verdicts are judged against today's profile, not the first run's.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::run::mark_frontier;
use super::{Outcome, Plan};
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::probe::ProbeResult;
use crate::record::{measured, Record};
use crate::runner::{Failure, Job, JobSettings, Runner};

/// How many configurations to measure per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// The first K candidates: frontier first (highest capability first), then
    /// the other feasible configurations, then the rest.
    Top(usize),
    /// Every configuration.
    All,
}

/// Settings for measurement.
#[derive(Debug, Clone)]
pub struct MeasureSettings {
    /// Which configurations.
    pub selection: Selection,
    /// Repetitions, threads, timeout, engine: what every job is built from.
    pub job: JobSettings,
    /// Extra attempts after a device-unavailable failure.
    pub retries: u32,
    /// Where finished measurements are stored.
    pub store: PathBuf,
}

/// Why a sweep cannot measure as asked: every problem found, not the first.
#[derive(Debug, thiserror::Error)]
#[error("cannot measure as asked:\n  {}", .problems.join("\n  "))]
pub struct MeasurePlanError {
    /// One line per problem (device: what).
    pub problems: Vec<String>,
}

/// Most problems listed by [`validate`] (a wide sweep can have thousands of
/// unbuildable shapes; the first ones say what is wrong).
const MAX_PROBLEMS: usize = 20;

/// Check, before anything is predicted or measured, that every configuration
/// of the plan can be built into a job on every measurable device, with the
/// same builder the measurement uses.
pub fn validate(plan: &Plan, measurable: &[&Device], settings: &MeasureSettings) -> Result<(), MeasurePlanError> {
    let mut problems = Vec::new();
    if let Err(e) = settings.job.validate() {
        problems.push(e.to_string());
    }
    if settings.job.engine_model.is_some() {
        problems.push(
            "--engine-model is a `run` option: a sweep measures many configurations, one model cannot stand for them all"
                .into(),
        );
    }
    let mut more = 0;
    for device in measurable {
        match settings.job.engine_for(device) {
            Err(e) => problems.push(format!("{}: {e}", device.id())),
            Ok(e) if e.needs_engine_model() => problems.push(format!(
                "{}: {e} reads one MNN export per configuration, so a sweep cannot measure through it: measure each with `pocketbench run --engine {e} --engine-model …`",
                device.id(),
                e = e.name()
            )),
            Ok(_) => {
                for (shape, _) in &plan.shapes {
                    if let Err(e) = settings.job.job_for_shape(device, *shape, plan.workload) {
                        if problems.len() < MAX_PROBLEMS {
                            problems.push(format!("{}: {e}", device.id()));
                        } else {
                            more += 1;
                        }
                    }
                }
            }
        }
    }
    if more > 0 {
        problems.push(format!("… and {more} more"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(MeasurePlanError { problems })
    }
}

/// A measurement that produced no result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedMeasurement {
    /// Configuration id.
    pub config_id: String,
    /// Shape name.
    pub config_name: String,
    /// Device id.
    pub device: String,
    /// Attempts made.
    pub attempts: u32,
    /// Why.
    pub failure: Failure,
}

/// Candidates of one device, in measuring order.
fn candidates(recs: &[&Record], sel: Selection) -> Vec<String> {
    let mut v: Vec<&&Record> = recs.iter().collect();
    let rank = |r: &Record| {
        if r.on_frontier {
            0
        } else if r.feasible {
            1
        } else {
            2
        }
    };
    v.sort_by(|a, b| {
        rank(a).cmp(&rank(b)).then(b.capability.total_cmp(&a.capability)).then(a.config_id.cmp(&b.config_id))
    });
    let n = match sel {
        Selection::Top(k) => k.min(v.len()),
        Selection::All => v.len(),
    };
    v[..n].iter().map(|r| r.config_id.clone()).collect()
}

/// The file a measurement is stored in. Everything that changes the
/// measured numbers is in the name: the configuration, engine, workload,
/// repetitions and threads, and a digest of what runs them (the runner's
/// build: harness version, target, profile, kernel ISA and machine) and of
/// the device profile's engine settings. The budgets are not: a stored
/// result is re-judged against today's.
pub fn store_path(store: &Path, device: &Device, build: &str, job: &Job) -> PathBuf {
    let engine = serde_json::to_string(&device.profile.engine).unwrap_or_default();
    let what_runs = crate::fnv1a(format!("{build}\n{engine}").as_bytes());
    store.join(device.id()).join(format!(
        "{}-{}-p{}-g{}-r{}-t{}-{:08x}.json",
        job.shape.id(),
        job.engine.name(),
        job.workload.prompt,
        job.workload.gen,
        job.reps,
        job.threads,
        what_runs as u32
    ))
}

/// Measure candidates on every device that has a runner, replace their
/// predicted records with measured ones, and recompute each device's frontier.
pub fn measure(
    plan: &Plan,
    outcome: &mut Outcome,
    devices: &[&Device],
    runners: &[Box<dyn Runner>],
    settings: &MeasureSettings,
    reporter: &mut dyn Reporter,
) {
    for runner in runners {
        let Some(device) = devices.iter().find(|d| d.id() == runner.device()) else { continue };
        let recs: Vec<&Record> = outcome.results.iter().filter(|r| r.device == device.id()).collect();
        let ids = candidates(&recs, settings.selection);
        let total = ids.len();
        for (i, id) in ids.iter().enumerate() {
            let Some((shape, acct)) = plan.shapes.iter().find(|(s, _)| s.id() == *id) else { continue };
            let job = match settings.job.job(device, *shape, plan.workload) {
                Ok(j) => j,
                // `validate` refuses these before a sweep starts; a caller that
                // skipped it still gets a recorded failure, not a crash.
                Err(e) => {
                    outcome.failures.push(FailedMeasurement {
                        config_id: id.clone(),
                        config_name: shape.to_string(),
                        device: device.id().into(),
                        attempts: 0,
                        failure: Failure::Refused { reason: e.to_string() },
                    });
                    continue;
                }
            };
            let path = store_path(&settings.store, device, &runner.build(job.engine), &job);
            reporter.report(&Event::Measuring {
                device: device.id().into(),
                config: shape.to_string(),
                index: i + 1,
                total,
            });
            let cap = recs_capability(outcome, device.id(), id);
            let probe = match load_stored(&path) {
                Some(p) => {
                    reporter.report(&Event::Resumed {
                        device: device.id().into(),
                        config: shape.to_string(),
                        path: path.clone(),
                    });
                    Ok(p)
                }
                None => measure_with_retries(runner.as_ref(), &job, settings.retries).and_then(|(probe, _)| {
                    save(&path, &probe).map_err(|e| {
                        (Failure::BadOutput { reason: format!("cannot store {}: {e}", path.display()) }, 1)
                    })?;
                    Ok(probe)
                }),
            };
            let record = probe.and_then(|probe| {
                measured(shape, acct, device, probe, &cap)
                    .map_err(|e| (Failure::BadOutput { reason: e.to_string() }, 1))
            });
            match record {
                Ok(rec) => {
                    reporter.report(&Event::Measured {
                        device: device.id().into(),
                        config: shape.to_string(),
                        decode_tok_s: rec.decode_tok_s,
                        peak_mem_mb: rec.peak_mem_increase_mb,
                    });
                    if let Some(slot) =
                        outcome.results.iter_mut().find(|r| r.device == device.id() && r.config_id == *id)
                    {
                        *slot = rec;
                    }
                }
                Err((failure, attempts)) => {
                    reporter.report(&Event::Warning(format!("{} on {}: {failure}", shape, device.id())));
                    outcome.failures.push(FailedMeasurement {
                        config_id: id.clone(),
                        config_name: shape.to_string(),
                        device: device.id().into(),
                        attempts,
                        failure,
                    });
                }
            }
        }
        // Measured values can move configurations on or off the frontier.
        let mut recs: Vec<Record> = outcome.results.iter().filter(|r| r.device == device.id()).cloned().collect();
        let summary = mark_frontier(&mut recs, &super::DeviceSummary::header(device), &plan.objectives);
        let mut it = recs.into_iter();
        for r in outcome.results.iter_mut().filter(|r| r.device == device.id()) {
            if let Some(new) = it.next() {
                *r = new;
            }
        }
        if let Some(s) = outcome.devices.iter_mut().find(|s| s.device == device.id()) {
            *s = summary;
        }
    }
}

fn recs_capability(outcome: &Outcome, device: &str, id: &str) -> crate::capability::Capability {
    outcome
        .results
        .iter()
        .find(|r| r.device == device && r.config_id == id)
        .map(|r| crate::capability::Capability { score: r.capability, source: r.capability_source.clone() })
        .unwrap_or(crate::capability::Capability { score: 0.0, source: "unknown".into() })
}

fn measure_with_retries(
    runner: &dyn Runner,
    job: &Job,
    retries: u32,
) -> Result<(crate::probe::ProbeResult, u32), (Failure, u32)> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match runner.measure(job) {
            Ok(p) => return Ok((p, attempt)),
            // Only a device that went away is worth another try; a crash or timeout would repeat.
            Err(Failure::Unavailable { .. }) if attempt <= retries => continue,
            Err(f) => return Err((f, attempt)),
        }
    }
}

fn load_stored(path: &Path) -> Option<ProbeResult> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn save(path: &Path, probe: &ProbeResult) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let json = serde_json::to_string_pretty(probe).map_err(std::io::Error::other)?;
    crate::calibrate::write_atomic(path, json.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Devices;
    use crate::event::Collect;
    use std::cell::Cell;

    /// A device that is never there.
    struct Gone {
        calls: Cell<u32>,
    }

    impl Runner for Gone {
        fn device(&self) -> &str {
            "host"
        }
        fn build(&self, _: crate::probe::EngineKind) -> String {
            "test".into()
        }
        fn measure(&self, _: &Job) -> Result<crate::probe::ProbeResult, Failure> {
            self.calls.set(self.calls.get() + 1);
            Err(Failure::Unavailable { reason: "adb: device offline".into() })
        }
    }

    #[test]
    fn an_unavailable_device_is_retried_then_recorded_as_failed() {
        let toml = "[sweep]\nname = \"t\"\ndevices = [\"host\"]\n[workload]\nprompt = 8\ngen = 4\n\
                    [space]\nlayers = [1, 2]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\n";
        let spec = crate::config::parse(std::path::Path::new("t.toml"), toml).unwrap();
        let plan = Plan::from_toml(std::path::Path::new("t.toml"), spec, &Default::default()).unwrap();
        let devices = Devices::built_in().unwrap();
        let devs = devices.select(&plan.devices).unwrap();
        let mut outcome = super::super::run(&plan, &devs, None, &mut Collect::default());
        let store = tempfile::tempdir().unwrap();
        let job = JobSettings {
            reps: 2,
            threads: Some(1),
            timeout: std::time::Duration::from_secs(5),
            force: false,
            engine: None,
            engine_model: None,
        };
        let settings =
            MeasureSettings { selection: Selection::All, job, retries: 2, store: store.path().to_path_buf() };
        let gone = Gone { calls: Cell::new(0) };
        let runners: Vec<Box<dyn Runner>> = vec![Box::new(gone)];
        measure(&plan, &mut outcome, &devs, &runners, &settings, &mut Collect::default());
        assert_eq!(outcome.failures.len(), 2, "both configurations recorded, the sweep went on");
        assert!(outcome.failures.iter().all(|f| f.attempts == 3 && matches!(f.failure, Failure::Unavailable { .. })));
        assert!(outcome.results.iter().all(|r| r.provenance == crate::record::Provenance::Predicted));
    }
}
