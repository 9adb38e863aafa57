//! `gate --measure`: both sides measured on the same device, alternating
//! one repetition at a time (A B A B ...), so the device's drift over the
//! minutes of the measurement hits both alike. The sides differ in what the
//! caller gives each: another engine, another probe binary, another engine
//! model, another thread count; the same for both is an A/A gate.
//!
//! Every repetition is its own probe run (one VmHWM reading each, so peak
//! memory gets a sample per repetition too), run by the [`Scheduler`] under
//! [`Policy::single_repetition`], and each finished record is handed to the
//! caller before the next starts, so the data is saved first. Where the
//! runner reads the device's temperature, each repetition waits until the
//! device has cooled to the threshold (polling, up to a timeout); a
//! repetition that cannot start cool is not counted and is reported.

use super::{Attempted, Cooling, Policy, Scheduler};
use crate::arch::Shape;
use crate::capability::{capability, ProxySettings};
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::outcome::FailedMeasurement;
use crate::record::Record;
use crate::runner::{Job, JobSettings, Runner};
use crate::workload::Workload;

/// One side.
pub struct Arm<'a> {
    /// `baseline` or `candidate`.
    pub name: &'static str,
    /// What measures it.
    pub runner: &'a dyn Runner,
    /// Its settings (repetitions are forced to one per probe run).
    pub settings: JobSettings,
}

/// Each side's measured records (one per repetition) and failures.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Baseline records.
    pub baseline: Vec<Record>,
    /// Candidate records.
    pub candidate: Vec<Record>,
    /// Baseline failures.
    pub baseline_failures: Vec<FailedMeasurement>,
    /// Candidate failures.
    pub candidate_failures: Vec<FailedMeasurement>,
    /// Repetitions not counted because the device stayed hot.
    pub too_hot: usize,
}

/// What to measure: `shapes` at `workload`, `reps` repetitions a side.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The device.
    pub device: &'a Device,
    /// The configurations.
    pub shapes: &'a [Shape],
    /// Their workload.
    pub workload: Workload,
    /// Repetitions a side (the minimum, with `auto`).
    pub reps: u32,
    /// Alternate until both sides' median decode speed is as precise as
    /// asked (or, with `detect`, until the two sides' noise lets a change
    /// of that size be seen), or a cap is hit; `None`: exactly `reps` a side.
    pub auto: Option<crate::probe::timing::AutoReps>,
    /// With `auto`: the change the comparison must be able to see, and the
    /// level it will be tested at; alternation stops once the decode
    /// samples so far could catch it with 80% power.
    pub detect: Option<Detect>,
    /// Cooling before each repetition.
    pub cooling: Cooling,
}

/// What `gate --measure --reps auto` alternates until it can see.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detect {
    /// The minimum effect, relative (0.03).
    pub effect: f64,
    /// The significance level the comparison is tested at.
    pub alpha: f64,
}

/// Measure `plan` alternating the two arms. `sink` gets each record (with
/// its side) the moment it lands. Every job is built, and so checked,
/// before anything runs.
pub fn measure(
    plan: &Plan,
    arms: [&Arm; 2],
    sink: &mut dyn FnMut(&'static str, &Record) -> Result<(), crate::Error>,
    reporter: &mut dyn Reporter,
) -> Result<Measured, crate::Error> {
    let device = plan.device;
    let jobs = jobs(plan, arms)?;
    let runs = jobs.len() * plan.reps as usize * 2;
    let temperature = arms[0].runner.temperature();
    reporter.report(&Event::AbabPlanned {
        device: device.id().into(),
        configs: plan.shapes.len(),
        reps: plan.reps,
        runs,
        celsius: temperature.as_ref().map(|t| t.celsius),
        sensor: temperature.map(|t| t.source),
        cool_to_c: plan.cooling.target_c,
    });
    let policy = Policy::single_repetition(Some(plan.cooling));
    let schedulers = arms.map(|a| Scheduler::new(a.runner, device, policy));
    let proxy = ProxySettings::default();
    let mut out = Measured::default();
    let mut done = 0;
    for pair in &jobs {
        let acct = pair[0].shape.accounting();
        let cap = capability(&pair[0].shape, &acct, &proxy, None);
        let started = std::time::Instant::now();
        let first = [out.baseline.len(), out.candidate.len()];
        for i in 0.. {
            if let Some(why) = stop(plan, i, started, [&out.baseline[first[0]..], &out.candidate[first[1]..]]) {
                reporter.report(&Event::AbabStopped {
                    device: device.id().into(),
                    config: pair[0].shape.to_string(),
                    pairs: i,
                    reason: why,
                });
                break;
            }
            for (side, (arm, job)) in arms.iter().zip(pair).enumerate() {
                done += 1;
                let attempted = schedulers[side].run(job, &cap, reporter);
                let rep = Rep { plan, arm, job, done, runs: runs.max(done) };
                rep.keep(attempted, side, &mut out, sink, reporter)?;
            }
        }
    }
    Ok(out)
}

/// Why one configuration has enough pairs after `pairs`, or `None`: the
/// fixed count; with `auto`, both sides' median decode speed within the
/// precision, or (with `detect`) the change the gate must see within reach
/// of the two sides' noise (each record one repetition); or a cap.
fn stop(plan: &Plan, pairs: u32, started: std::time::Instant, sides: [&[Record]; 2]) -> Option<String> {
    if pairs < plan.reps {
        return None;
    }
    let Some(auto) = plan.auto else { return Some(format!("{pairs} repetitions a side, as asked")) };
    let decode = |records: &[Record]| -> Vec<f64> { records.iter().map(|r| r.decode_tok_s).collect() };
    let [b, c] = sides.map(decode);
    let reached = match plan.detect {
        Some(d) => {
            let cv = [crate::stats::robust_cv(&b), crate::stats::robust_cv(&c)];
            let seen = match cv {
                [Some(x), Some(y)] => Some(crate::stats::detectable_change(
                    crate::stats::relative_se([x, y], [b.len(), c.len()]),
                    d.alpha,
                    0.8,
                )),
                _ => None,
            };
            seen.filter(|s| *s <= d.effect).map(|s| {
                format!(
                    "the noise so far lets a {:.1}% change be seen (the minimum effect is {:.0}%)",
                    s * 100.0,
                    d.effect * 100.0
                )
            })
        }
        None => [&b, &c]
            .iter()
            .all(|v| crate::probe::timing::relative_half_width(v).is_some_and(|w| w <= auto.precision))
            .then(|| format!("both medians within ±{:.1}%", auto.precision * 100.0)),
    };
    reached.or_else(|| (pairs >= auto.max_reps).then(|| format!("cap: {} repetitions a side", auto.max_reps))).or_else(
        || (started.elapsed().as_secs_f64() >= auto.max_seconds).then(|| format!("cap: {:.0} s", auto.max_seconds)),
    )
}

/// One side's measurements as saved: the file that holds them (JSON
/// Lines, one record a line), its records and its failures. Measurement
/// does not know who judges them (the gate reads a `Saved` as any other
/// side: `gate::Loaded::from(saved)`).
#[derive(Debug, Clone)]
pub struct Saved {
    /// The file the records were appended to.
    pub path: std::path::PathBuf,
    /// The side's records, one per repetition.
    pub records: Vec<Record>,
    /// Its failed repetitions.
    pub failures: Vec<FailedMeasurement>,
}

/// [`measure`] with each record appended to `dir/baseline.jsonl` or
/// `dir/candidate.jsonl` (synced) the moment it lands, the samples saved as
/// data first; then both sides, baseline first.
pub fn measure_into(
    plan: &Plan,
    arms: [&Arm; 2],
    dir: &std::path::Path,
    reporter: &mut dyn Reporter,
) -> Result<[Saved; 2], crate::Error> {
    use std::io::Write;
    std::fs::create_dir_all(dir).map_err(|e| crate::Error::io(dir, e))?;
    let path_of = |arm: &str| dir.join(format!("{arm}.jsonl"));
    let open = |p: &std::path::Path| std::fs::File::create(p).map_err(|e| crate::Error::io(p, e));
    let (mut fa, mut fb) = (open(&path_of("baseline"))?, open(&path_of("candidate"))?);
    let mut sink = |arm: &'static str, r: &Record| -> Result<(), crate::Error> {
        let (f, p) = if arm == "baseline" { (&mut fa, path_of("baseline")) } else { (&mut fb, path_of("candidate")) };
        let line = serde_json::to_string(r).map_err(|e| crate::Error::io(&p, std::io::Error::other(e)))?;
        writeln!(f, "{line}").and_then(|_| f.sync_data()).map_err(|e| crate::Error::io(&p, e))
    };
    let got = measure(plan, arms, &mut sink, reporter)?;
    Ok([
        Saved { path: path_of("baseline"), records: got.baseline, failures: got.baseline_failures },
        Saved { path: path_of("candidate"), records: got.candidate, failures: got.candidate_failures },
    ])
}

/// Each configuration's pair of jobs, one repetition each.
fn jobs(plan: &Plan, arms: [&Arm; 2]) -> Result<Vec<[Job; 2]>, crate::Error> {
    let job = |a: &Arm, s: &Shape| -> Result<Job, crate::Error> {
        let settings = JobSettings { reps: 1, ..a.settings.clone() };
        Ok(settings.job(plan.device, *s, plan.workload)?)
    };
    plan.shapes.iter().map(|s| Ok([job(arms[0], s)?, job(arms[1], s)?])).collect()
}

/// One repetition of one side, run.
struct Rep<'a> {
    plan: &'a Plan<'a>,
    arm: &'a Arm<'a>,
    job: &'a Job,
    done: usize,
    runs: usize,
}

impl Rep<'_> {
    /// Keep what the repetition came to: its record saved and counted, its
    /// failure recorded, or that it was not run.
    fn keep(
        &self,
        attempted: Attempted,
        side: usize,
        out: &mut Measured,
        sink: &mut dyn FnMut(&'static str, &Record) -> Result<(), crate::Error>,
        reporter: &mut dyn Reporter,
    ) -> Result<(), crate::Error> {
        let (device, arm, config) = (self.plan.device.id().to_string(), self.arm.name, self.job.shape.to_string());
        let (records, failures) = if side == 0 {
            (&mut out.baseline, &mut out.baseline_failures)
        } else {
            (&mut out.candidate, &mut out.candidate_failures)
        };
        match attempted {
            Attempted::TooHot { celsius } => {
                out.too_hot += 1;
                let timeout_s = self.plan.cooling.timeout.as_secs_f64();
                reporter.report(&Event::TooHot { device, arm: arm.into(), config, celsius, timeout_s });
            }
            Attempted::Measured { record, celsius, .. } => {
                sink(arm, &record)?;
                let (done, runs, decode_tok_s) = (self.done, self.runs, record.decode_tok_s);
                reporter.report(&Event::RepMeasured {
                    device,
                    arm: arm.into(),
                    config,
                    done,
                    runs,
                    decode_tok_s,
                    celsius,
                });
                records.push(*record);
            }
            Attempted::Failed { failure, attempts } => {
                let reason = failure.to_string();
                failures.push(FailedMeasurement {
                    config_id: self.job.shape.id(),
                    config_name: config.clone(),
                    device: device.clone(),
                    attempts,
                    failure,
                });
                reporter.report(&Event::RepFailed { device, arm: arm.into(), config, reason });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::{measure, Arm, Plan};
    use crate::event::{Collect, Event};
    use crate::probe::ProbeResult;
    use crate::runner::thermal::Temperature;
    use crate::runner::{Failure, Job, JobSettings, Runner};
    use crate::schedule::Cooling;
    use crate::testing::{measured_record, probe_for};

    /// A device that answers with a fixed decode speed, a scripted series of
    /// temperatures, and a failure on chosen calls; it logs who measured.
    struct Fake {
        name: &'static str,
        decode: f64,
        temps: Mutex<Vec<f64>>,
        fail_calls: Vec<usize>,
        calls: Mutex<usize>,
        log: &'static Mutex<Vec<&'static str>>,
    }

    impl Runner for Fake {
        fn device(&self) -> &str {
            "host"
        }
        fn build(&self, _: crate::probe::EngineKind) -> String {
            "fake".into()
        }
        fn measure(&self, job: &Job) -> Result<ProbeResult, Failure> {
            let mut n = self.calls.lock().unwrap();
            *n += 1;
            if self.fail_calls.contains(&n) {
                return Err(Failure::Unavailable { reason: "adb: device offline".into() });
            }
            self.log.lock().unwrap().push(self.name);
            let rec = measured_record(job.shape.layers, job.workload.prompt, job.workload.gen, &[self.decode]);
            let mut p = probe_for(&rec, &[self.decode]);
            p.config_id = job.shape.id();
            Ok(p)
        }
        fn temperature(&self) -> Option<Temperature> {
            let mut t = self.temps.lock().unwrap();
            let c = if t.len() > 1 { t.remove(0) } else { *t.first()? };
            Some(Temperature { celsius: c, source: "fake".into() })
        }
    }

    fn settings() -> JobSettings {
        JobSettings {
            reps: 1,
            threads: Some(1),
            timeout: Duration::from_secs(60),
            force: false,
            engine: None,
            engine_model: None,
            auto: None,
            pin: false,
        }
    }

    fn shape() -> crate::arch::Shape {
        let r = measured_record(2, 16, 8, &[100.0, 100.0]);
        let mut s = r.shape;
        s.context = 64;
        s
    }

    #[test]
    fn sides_alternate_cool_down_and_a_failure_is_recorded() {
        static LOG: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let devices = crate::device::Devices::built_in().unwrap();
        let host = devices.get("host").unwrap();
        // The baseline's device is hot for its first two readings, then cool.
        let a = Fake {
            name: "A",
            decode: 300.0,
            temps: Mutex::new(vec![45.0, 41.0, 36.0]),
            fail_calls: vec![],
            calls: Mutex::new(0),
            log: &LOG,
        };
        // The candidate fails its 2nd and 3rd calls: one repetition is retried and lost.
        let b = Fake {
            name: "B",
            decode: 250.0,
            temps: Mutex::new(vec![30.0]),
            fail_calls: vec![2, 3],
            calls: Mutex::new(0),
            log: &LOG,
        };
        let (aa, bb) = (
            Arm { name: "baseline", runner: &a, settings: settings() },
            Arm { name: "candidate", runner: &b, settings: settings() },
        );
        let cooling = Cooling { target_c: 37.0, timeout: Duration::from_secs(5), poll: Duration::from_millis(1) };
        let mut sunk = Vec::new();
        let mut events = Collect::default();
        let workload = crate::workload::Workload::new(16, 8, None).unwrap();
        let shapes = [shape()];
        let plan = Plan { device: host, shapes: &shapes, workload, reps: 3, auto: None, detect: None, cooling };
        let mut sink = |arm, r: &crate::record::Record| {
            sunk.push((arm, r.decode_tok_s));
            Ok(())
        };
        let got = measure(&plan, [&aa, &bb], &mut sink, &mut events).unwrap();
        let events = events.0;
        assert_eq!(*LOG.lock().unwrap(), vec!["A", "B", "A", "A", "B"], "ABAB, the failed B not logged");
        assert_eq!(got.baseline.len(), 3);
        assert_eq!(got.candidate.len(), 2);
        assert_eq!(got.candidate_failures.len(), 1);
        assert!(got.candidate_failures[0].failure.to_string().contains("device offline"));
        assert_eq!(sunk.len(), 5, "every record saved as it landed");
        let cooled = events.iter().filter(|e| matches!(e, Event::Cooling { .. })).count();
        // 45 C is read at the start, 41 C makes the first repetition wait, 36 C lets it go.
        assert_eq!(cooled, 1, "{events:?}");
        assert!(got.baseline[0].methods[&crate::provenance::MethodKey::Thermal]
            .to_string()
            .starts_with("36.0 C before the repetition"));
    }

    #[test]
    fn a_device_that_stays_hot_is_not_counted() {
        static LOG: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let devices = crate::device::Devices::built_in().unwrap();
        let host = devices.get("host").unwrap();
        let hot = Fake {
            name: "A",
            decode: 300.0,
            temps: Mutex::new(vec![50.0]),
            fail_calls: vec![],
            calls: Mutex::new(0),
            log: &LOG,
        };
        let arm = Arm { name: "baseline", runner: &hot, settings: settings() };
        let other = Arm { name: "candidate", runner: &hot, settings: settings() };
        let cooling = Cooling { target_c: 37.0, timeout: Duration::from_millis(20), poll: Duration::from_millis(5) };
        let workload = crate::workload::Workload::new(16, 8, None).unwrap();
        let shapes = [shape()];
        let plan = Plan { device: host, shapes: &shapes, workload, reps: 2, auto: None, detect: None, cooling };
        let got = measure(&plan, [&arm, &other], &mut |_, _| Ok(()), &mut Collect::default()).unwrap();
        assert_eq!(got.too_hot, 4);
        assert!(got.baseline.is_empty() && LOG.lock().unwrap().is_empty());
    }
}
