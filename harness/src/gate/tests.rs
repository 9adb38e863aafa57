use super::power::{regression_rate, Scenario};
use super::*;
use crate::testing::measured_record;

/// The figures: 10 samples a side at 2% noise.
fn scenario(slowdown: f64) -> Scenario {
    Scenario { samples: 10, noise: 0.02, slowdown, trials: 1000, seed: 42 }
}

#[test]
fn a_a_gates_fail_in_at_most_one_percent_of_trials() {
    let rate = regression_rate(&Settings::default(), &scenario(0.0));
    assert!(rate <= 0.01, "A/A false alarms: {rate}");
}

#[test]
fn a_five_percent_slowdown_is_caught_in_at_least_95_percent_of_trials() {
    let rate = regression_rate(&Settings::default(), &scenario(0.05));
    assert!(rate >= 0.95, "power against a 5% slowdown: {rate}");
    // A slowdown inside the minimum effect is rarely declared one (the
    // estimate's own noise carries a few trials past it).
    let small = regression_rate(&Settings::default(), &scenario(0.01));
    assert!(small <= 0.05, "a 1% slowdown fired {small}");
}

#[test]
fn the_whole_interval_rule_is_stricter_and_costs_power() {
    let strict = Settings { effect_rule: EffectRule::Interval, ..Settings::default() };
    let rate = regression_rate(&strict, &scenario(0.05));
    let default = regression_rate(&Settings::default(), &scenario(0.05));
    assert!(rate < default, "interval {rate} vs estimate {default}");
    assert!(regression_rate(&strict, &scenario(0.0)) <= 0.01);
}

fn side(records: Vec<Record>) -> source::Loaded {
    source::Loaded::new("test", "test", records, Vec::new())
}

fn speeds(n: usize, mean: f64, seed: u64) -> Vec<f64> {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let d = rand_distr::Normal::new(mean, mean * 0.02).unwrap();
    (0..n).map(|_| d.sample(&mut rng)).collect()
}

#[test]
fn a_slowed_candidate_fails_and_an_equal_one_passes() {
    let base = side(vec![
        measured_record(2, 128, 16, &speeds(10, 300.0, 1)),
        measured_record(3, 128, 16, &speeds(10, 250.0, 2)),
    ]);
    let same = side(vec![
        measured_record(2, 128, 16, &speeds(10, 300.0, 3)),
        measured_record(3, 128, 16, &speeds(10, 250.0, 4)),
    ]);
    let v = evaluate(&base, &same, &Settings::default());
    let decode: Vec<&Comparison> = v.comparisons.iter().filter(|c| c.metric == Metric::DecodeTokS).collect();
    assert_eq!(decode.len(), 2);
    assert!(decode.iter().all(|c| c.status == Status::Pass), "{decode:#?}");
    assert_ne!(v.outcome, Outcome::Fail);

    let slow = side(vec![
        measured_record(2, 128, 16, &speeds(10, 270.0, 5)),
        measured_record(3, 128, 16, &speeds(10, 250.0, 6)),
    ]);
    let v = evaluate(&base, &slow, &Settings::default());
    assert_eq!(v.outcome, Outcome::Fail);
    let bad: Vec<&Comparison> = v.comparisons.iter().filter(|c| c.fails()).collect();
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert_eq!(bad[0].metric, Metric::DecodeTokS);
    assert!(bad[0].reason.starts_with("regression: decode_tok_s"), "{}", bad[0].reason);
    assert!(bad[0].p_regression_holm.unwrap() < 0.01);
    // Energy is not measured on the host: said, not compared.
    let energy = v.comparisons.iter().find(|c| c.metric == Metric::EnergyJPerRun).unwrap();
    assert_eq!(energy.status, Status::NotMeasured);
    assert!(energy.reason.contains("estimate"), "{}", energy.reason);
    // The other direction is an improvement, not a failure.
    let v = evaluate(&slow, &base, &Settings::default());
    assert!(v.comparisons.iter().any(|c| c.status == Status::Improvement));
    assert_ne!(v.outcome, Outcome::Fail);
}

#[test]
fn too_few_samples_are_inconclusive_and_unmatched_results_are_listed() {
    let base = side(vec![
        measured_record(2, 128, 16, &[300.0, 301.0, 299.0]),
        measured_record(4, 128, 16, &speeds(10, 400.0, 1)),
    ]);
    let cand = side(vec![
        measured_record(2, 128, 16, &[240.0, 241.0, 239.0]),
        measured_record(5, 128, 16, &speeds(10, 400.0, 1)),
    ]);
    let v = evaluate(&base, &cand, &Settings::default());
    let d = v.comparisons.iter().find(|c| c.metric == Metric::DecodeTokS).unwrap();
    assert_eq!(d.status, Status::Inconclusive, "{d:#?}");
    assert!(d.reason.contains("too few samples: 3 baseline and 3 candidate"), "{}", d.reason);
    assert_eq!(v.only_in_baseline.len(), 1);
    assert_eq!(v.only_in_candidate.len(), 1);
    assert_eq!(v.outcome, Outcome::Inconclusive);
}

#[test]
fn a_device_error_makes_the_comparison_invalid() {
    let r = measured_record(2, 128, 16, &speeds(10, 300.0, 1));
    let f = crate::sweep::FailedMeasurement {
        config_id: r.config_id.clone(),
        config_name: r.config_name.clone(),
        device: r.device.clone(),
        attempts: 3,
        failure: crate::runner::Failure::Unavailable { reason: "adb: device offline".into() },
    };
    let base = side(vec![r.clone()]);
    let cand = source::Loaded::new("c", "test", vec![r], vec![f]);
    let v = evaluate(&base, &cand, &Settings::default());
    assert!(v.comparisons.iter().all(|c| c.status == Status::Invalid), "{:#?}", v.comparisons);
    assert!(v.comparisons[0].reason.contains("device offline"));
}

#[test]
fn junit_and_summary_render_every_comparison() {
    let base = side(vec![measured_record(2, 128, 16, &speeds(10, 300.0, 1))]);
    let slow = side(vec![measured_record(2, 128, 16, &speeds(10, 270.0, 2))]);
    let v = evaluate(&base, &slow, &Settings::default());
    let x = render::junit(&v);
    assert_eq!(x.matches("<testcase ").count(), v.comparisons.len());
    assert_eq!(x.matches("<failure ").count(), 1);
    let md = render::summary(&v, render::SUMMARY_LIMIT);
    assert!(md.starts_with("## pocketbench gate: FAILED"), "{md}");
    // A limit too small for every row drops rows with a note, under the limit.
    let short = render::summary(&v, md.len() - 10);
    assert!(short.len() <= md.len() - 10);
    assert!(short.contains("more row(s) left out"), "{short}");
}

#[test]
fn settings_are_checked() {
    assert!(Settings::default().validate().is_ok());
    let bad = Settings { alpha: 1.5, ..Settings::default() };
    assert!(bad.validate().unwrap_err().contains("alpha"));
    let bad = Settings { min_effect_speed: 3.0, ..Settings::default() };
    assert!(bad.validate().unwrap_err().contains("0.03 is 3%"));
}

mod abab_tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::super::abab::{measure, Arm, Cooling, Progress};
    use crate::probe::ProbeResult;
    use crate::runner::thermal::Temperature;
    use crate::runner::{Failure, Job, JobSettings, Runner};
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
        let mut events = Vec::new();
        let w = crate::workload::Workload::new(16, 8, None).unwrap();
        let got = measure(
            host,
            &[shape()],
            w,
            3,
            [&aa, &bb],
            &cooling,
            &mut |arm, r| {
                sunk.push((arm, r.decode_tok_s));
                Ok(())
            },
            &mut |p| events.push(p),
        )
        .unwrap();
        assert_eq!(*LOG.lock().unwrap(), vec!["A", "B", "A", "A", "B"], "ABAB, the failed B not logged");
        assert_eq!(got.baseline.len(), 3);
        assert_eq!(got.candidate.len(), 2);
        assert_eq!(got.candidate_failures.len(), 1);
        assert!(got.candidate_failures[0].failure.to_string().contains("device offline"));
        assert_eq!(sunk.len(), 5, "every record saved as it landed");
        let cooled = events.iter().filter(|e| matches!(e, Progress::Cooling { .. })).count();
        // 45 C is read at the start, 41 C makes the first repetition wait, 36 C lets it go.
        assert_eq!(cooled, 1, "{events:?}");
        assert!(got.baseline[0].methods["thermal"].starts_with("36.0 C before the repetition"));
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
        let w = crate::workload::Workload::new(16, 8, None).unwrap();
        let got = measure(host, &[shape()], w, 2, [&arm, &other], &cooling, &mut |_, _| Ok(()), &mut |_| {}).unwrap();
        assert_eq!(got.too_hot, 4);
        assert!(got.baseline.is_empty() && LOG.lock().unwrap().is_empty());
    }
}

#[test]
fn names_are_the_serialized_names() {
    let json = |v: serde_json::Value| v.as_str().unwrap().to_owned();
    for s in [
        Status::Pass,
        Status::Regression,
        Status::Improvement,
        Status::Inconclusive,
        Status::Invalid,
        Status::NotMeasured,
    ] {
        assert_eq!(s.name(), json(serde_json::to_value(s).unwrap()));
    }
    for o in [Outcome::Pass, Outcome::Inconclusive, Outcome::Fail] {
        assert_eq!(o.name(), json(serde_json::to_value(o).unwrap()));
    }
    for r in [EffectRule::Estimate, EffectRule::Interval] {
        assert_eq!(r.name(), json(serde_json::to_value(r).unwrap()));
    }
}
