//! Measuring the promising configurations of a predicted sweep on every
//! device that has a runner, with results saved as data first: each
//! measured record (its raw samples included) is committed to the store the
//! moment it lands, and a rerun keeps it instead of measuring again, so a
//! killed sweep resumes without redoing or losing finished work. A failure
//! is stored too and kept on resume unless the caller asks to retry it.

use std::sync::Mutex;

use super::Plan;
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::outcome::{FailedMeasurement, Outcome};
use crate::record::Record;
use crate::runner::{Failure, Job, JobSettings, Runner};
use crate::schedule::{Attempted, Policy, Scheduler};
use crate::store::{Store, StoreError};

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
    /// Measure again what an earlier run recorded as failed.
    pub retry_failed: bool,
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

/// The key a measurement is stored under beside its configuration, device
/// and workload: a digest of what runs it (the engine, repetitions and
/// threads, the runner's build: harness version, target, kernel ISA and
/// machine) and of the device profile's engine settings. The budgets are
/// not in it: a record is judged against the profile the store was made with.
pub fn job_key(device: &Device, build: &str, job: &Job) -> String {
    let engine = serde_json::to_string(&device.profile().engine).unwrap_or_default();
    let what = format!("{}\n{}\n{}\n{build}\n{engine}", job.engine.name(), job.reps, job.threads);
    format!("{}-r{}-t{}-{:016x}", job.engine.name(), job.reps, job.threads, crate::fnv1a(what.as_bytes()))
}

/// The profile digest and parameters a device's records are stored with.
pub fn calibration_of(device: &Device) -> (String, String) {
    let params = serde_json::to_string(&device.profile().model).unwrap_or_default();
    (profile_digest(device), params)
}

/// FNV-1a of a whole profile (facts, budgets, engine, model, points): a
/// store made with one profile refuses to resume under another.
pub fn profile_digest(device: &Device) -> String {
    let text = serde_json::to_string(&device.profile()).unwrap_or_default();
    format!("{:016x}", crate::fnv1a(text.as_bytes()))
}

/// Measure candidates on every device that has a runner, committing each
/// result (or failure) to `store` as it lands. Devices measure in parallel,
/// one thread each, and each device one job at a time (a phone measures one
/// thing at a time; the host one configuration at a time). `predicted` is
/// the predicted outcome the candidates are chosen from.
pub fn measure(
    plan: &Plan,
    predicted: &Outcome,
    devices: &[&Device],
    runners: &[Box<dyn Runner>],
    settings: &MeasureSettings,
    store: &mut Store,
    reporter: &mut (dyn Reporter + Send),
) -> Result<(), StoreError> {
    let store = Mutex::new(store);
    let reporter = Mutex::new(reporter);
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            runners
                .iter()
                .filter_map(|runner| {
                    let device = *devices.iter().find(|d| d.id() == runner.device())?;
                    let (store, reporter) = (&store, &reporter);
                    Some(scope.spawn(move || {
                        measure_device(plan, predicted, device, runner.as_ref(), settings, store, reporter)
                    }))
                })
                .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(Ok(()))).collect::<Result<Vec<()>, _>>().map(|_| ())
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A thread that panicked holding the lock left the store as SQLite keeps
    // it (each write is its own transaction): the data is still sound.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One device's candidates, in order.
fn measure_device(
    plan: &Plan,
    predicted: &Outcome,
    device: &Device,
    runner: &dyn Runner,
    settings: &MeasureSettings,
    store: &Mutex<&mut Store>,
    reporter: &Mutex<&mut (dyn Reporter + Send)>,
) -> Result<(), StoreError> {
    let report = |e: &Event| lock(reporter).report(e);
    let recs: Vec<&Record> = predicted.results.iter().filter(|r| r.device == device.id()).collect();
    let ids = candidates(&recs, settings.selection);
    let scheduler = Scheduler::new(runner, device, Policy::sweep(settings.retries));
    let total = ids.len();
    report(&Event::MeasurePlanned { device: device.id().into(), total });
    for (i, id) in ids.iter().enumerate() {
        let Some((shape, _)) = plan.shapes.iter().find(|(s, _)| s.id() == *id) else { continue };
        let config = shape.to_string();
        let job = match settings.job.job(device, *shape, plan.workload) {
            Ok(j) => j,
            // `validate` refuses these before a sweep starts; a caller that
            // skipped it still gets a recorded failure, not a crash.
            Err(e) => {
                let failure = Failure::Refused { reason: e.to_string() };
                let f = FailedMeasurement {
                    config_id: id.clone(),
                    config_name: config,
                    device: device.id().into(),
                    attempts: 0,
                    failure,
                };
                lock(store).insert_failure(&f, "")?;
                continue;
            }
        };
        let key = job_key(device, &runner.build(job.engine), &job);
        if lock(store).measured(device.id(), id, &key)?.is_some() {
            report(&Event::Resumed { device: device.id().into(), config });
            continue;
        }
        if !settings.retry_failed {
            if let Some(f) = lock(store).failure(device.id(), id, &key)? {
                report(&Event::KeptFailure { device: device.id().into(), config, reason: f.failure.to_string() });
                continue;
            }
        }
        report(&Event::Measuring { device: device.id().into(), config: config.clone(), index: i + 1, total });
        let cap = recs
            .iter()
            .find(|r| r.config_id == *id)
            .map(|r| crate::capability::Capability { score: r.capability, source: r.capability_source.clone() })
            .unwrap_or(crate::capability::Capability { score: 0.0, source: "unknown".into() });
        let failed = |failure, attempts| FailedMeasurement {
            config_id: id.clone(),
            config_name: config.clone(),
            device: device.id().into(),
            attempts,
            failure,
        };
        match scheduler.run(&job, &cap, &mut Shared(reporter)) {
            Attempted::Measured { record: rec, .. } => {
                lock(store).insert_measured(&rec, &key, calibration_of(device))?;
                let (decode_tok_s, peak_mem_mb) = (rec.decode_tok_s, rec.peak_mem_increase_mb);
                report(&Event::Measured { device: device.id().into(), config, decode_tok_s, peak_mem_mb });
            }
            Attempted::Failed { failure, attempts } => {
                let reason = failure.to_string();
                lock(store).insert_failure(&failed(failure, attempts), &key)?;
                report(&Event::Failed { device: device.id().into(), config, reason, attempts });
            }
            Attempted::TooHot { .. } => unreachable!("a sweep's policy does not cool"),
        }
    }
    Ok(())
}

/// The shared reporter of the devices' threads, as one reporter.
struct Shared<'a, 'r>(&'a Mutex<&'r mut (dyn Reporter + Send)>);

impl Reporter for Shared<'_, '_> {
    fn report(&mut self, event: &Event) {
        lock(self.0).report(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Devices;

    use crate::event::Collect;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A plan of `layers` tiny configurations on `devices` (a TOML list).
    fn tiny(devices: &str, layers: &str) -> Plan {
        let toml = format!(
            "[sweep]\nname = \"t\"\ndevices = {devices}\n[workload]\nprompt = 8\ngen = 4\n\
             [space]\nlayers = {layers}\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\n"
        );
        let spec = crate::config::parse(std::path::Path::new("t.toml"), &toml).unwrap();
        Plan::from_toml(std::path::Path::new("t.toml"), spec, &Default::default()).unwrap()
    }

    /// Measure `plan` on its devices through `runners` into a fresh store.
    fn measure_all(plan: &Plan, runners: &[Box<dyn Runner>], retries: u32) -> Outcome {
        let devices = Devices::built_in().unwrap();
        let devs = devices.select(&plan.devices).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join(crate::store::FILE_NAME)).unwrap();
        let job = JobSettings {
            reps: 2,
            threads: Some(1),
            timeout: std::time::Duration::from_secs(5),
            force: false,
            engine: Some(crate::probe::EngineKind::Native),
            engine_model: None,
            auto: None,
            pin: false,
        };
        let settings = MeasureSettings { selection: Selection::All, job, retries, retry_failed: false };
        let identity = crate::store::Identity::new("t", "t.toml", b"", "{}".into(), None);
        let m = super::super::Measuring { settings: &settings, runners };
        super::super::execute(&mut store, plan, &devs, None, identity, Some(m), &mut Collect::default()).unwrap()
    }

    #[test]
    fn an_unavailable_device_is_retried_then_recorded_as_failed() {
        let plan = tiny("[\"host\"]", "[1, 2]");
        let gone = Failure::Unavailable { reason: "adb: device offline".into() };
        let runners: Vec<Box<dyn Runner>> = vec![Box::new(crate::testing::Failing::new(gone))];
        let outcome = measure_all(&plan, &runners, 2);
        assert_eq!(outcome.failures.len(), 2, "both configurations recorded, the sweep went on");
        assert!(outcome.failures.iter().all(|f| f.attempts == 3 && matches!(f.failure, Failure::Unavailable { .. })));
        assert!(outcome.results.iter().all(|r| r.provenance == crate::record::Provenance::Predicted));
    }

    /// Two devices' runners that each wait (up to 2 s) for the other to be
    /// measuring too, and count how many of their own jobs overlap.
    struct Paired {
        device: &'static str,
        all: std::sync::Arc<AtomicU32>,
        mine: AtomicU32,
        most_all: std::sync::Arc<AtomicU32>,
        most_mine: std::sync::Arc<AtomicU32>,
    }

    impl Runner for Paired {
        fn device(&self) -> &str {
            self.device
        }
        fn build(&self, _: crate::probe::EngineKind) -> String {
            "test".into()
        }
        fn measure(&self, _: &Job) -> Result<crate::probe::ProbeResult, Failure> {
            let now = self.all.fetch_add(1, Ordering::SeqCst) + 1;
            let mine = self.mine.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_mine.fetch_max(mine, Ordering::SeqCst);
            self.most_all.fetch_max(now, Ordering::SeqCst);
            let t = std::time::Instant::now();
            while self.most_all.load(Ordering::SeqCst) < 2 && t.elapsed() < std::time::Duration::from_secs(2) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            self.mine.fetch_sub(1, Ordering::SeqCst);
            self.all.fetch_sub(1, Ordering::SeqCst);
            Err(Failure::Crashed { code: 1, stderr: "test".into() })
        }
    }

    #[test]
    fn devices_measure_in_parallel_and_each_one_job_at_a_time() {
        let plan = tiny("[\"host\", \"host-llama\"]", "[1, 2, 3]");
        let (all, most) = (std::sync::Arc::new(AtomicU32::new(0)), std::sync::Arc::new(AtomicU32::new(0)));
        let per_device = [std::sync::Arc::new(AtomicU32::new(0)), std::sync::Arc::new(AtomicU32::new(0))];
        let paired = |device, most_mine: &std::sync::Arc<AtomicU32>| Paired {
            device,
            all: all.clone(),
            mine: AtomicU32::new(0),
            most_all: most.clone(),
            most_mine: most_mine.clone(),
        };
        let runners: Vec<Box<dyn Runner>> =
            vec![Box::new(paired("host", &per_device[0])), Box::new(paired("host-llama", &per_device[1]))];
        let outcome = measure_all(&plan, &runners, 0);
        assert_eq!(outcome.failures.len(), 6, "every job on both devices was tried and recorded");
        assert_eq!(most.load(Ordering::SeqCst), 2, "the two devices measured at the same time");
        assert!(per_device.iter().all(|m| m.load(Ordering::SeqCst) == 1), "each device one job at a time");
    }
}
