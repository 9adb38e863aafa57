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
    // 400 trials, not 1000: the interval rule bootstraps every trial, and
    // unoptimized that made this the test suite's slowest test (25 s).
    let fewer = |slowdown| Scenario { trials: 400, ..scenario(slowdown) };
    let strict = Settings { effect_rule: EffectRule::Interval, ..Settings::default() };
    let rate = regression_rate(&strict, &fewer(0.05));
    let default = regression_rate(&Settings::default(), &fewer(0.05));
    assert!(rate < default, "interval {rate} vs estimate {default}");
    assert!(regression_rate(&strict, &fewer(0.0)) <= 0.01);
}

fn side(records: Vec<Record>) -> Loaded {
    Loaded::new("test", "test", records, Vec::new())
}

/// Decode speeds at the 2% noise, seeded.
fn speeds(n: usize, mean: f64, seed: u64) -> Vec<f64> {
    noisy(n, mean, 0.02, seed)
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
    let f = crate::outcome::FailedMeasurement {
        config_id: r.config_id.clone(),
        config_name: r.config_name.clone(),
        device: r.device.clone(),
        attempts: 3,
        failure: crate::runner::Failure::Unavailable { reason: "adb: device offline".into() },
    };
    let base = side(vec![r.clone()]);
    let cand = Loaded::new("c", "test", vec![r], vec![f]);
    let v = evaluate(&base, &cand, &Settings::default());
    assert!(v.comparisons.iter().all(|c| c.status == Status::Invalid), "{:#?}", v.comparisons);
    assert!(v.comparisons[0].reason.contains("device offline"));
}

#[test]
fn junit_and_summary_render_every_comparison() {
    let base = side(vec![measured_record(2, 128, 16, &speeds(10, 300.0, 1))]);
    let slow = side(vec![measured_record(2, 128, 16, &speeds(10, 270.0, 2))]);
    let v = evaluate(&base, &slow, &Settings::default());
    let x = crate::report::gate::junit(&v);
    assert_eq!(x.matches("<testcase ").count(), v.comparisons.len());
    assert_eq!(x.matches("<failure ").count(), 1);
    let md = crate::report::gate::summary(&v, crate::report::gate::SUMMARY_LIMIT);
    assert!(md.starts_with("## pocketbench gate: FAILED"), "{md}");
    // A limit too small for every row drops rows with a note, under the limit.
    let short = crate::report::gate::summary(&v, md.len() - 10);
    assert!(short.len() <= md.len() - 10);
    assert!(short.contains("more row(s) left out"), "{short}");
}

#[test]
fn settings_are_checked() {
    assert!(Settings::default().validate().is_ok());
    let bad = Settings { alpha: 1.5, ..Settings::default() };
    assert!(bad.validate().unwrap_err().0.contains("alpha"));
    let bad = Settings { min_effect_speed: 3.0, ..Settings::default() };
    assert!(bad.validate().unwrap_err().0.contains("0.03 is 3%"));
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

#[test]
fn a_baseline_that_names_the_built_in_engine_by_its_old_name_still_matches() {
    // Results written before the rename say `candle`; today's say `native`.
    let mut old = measured_record(2, 128, 16, &speeds(10, 300.0, 5));
    old.measurement.as_mut().unwrap().probe.engine = "candle".into();
    let old = side(vec![old]);
    let now = side(vec![measured_record(2, 128, 16, &speeds(10, 300.0, 6))]);
    let v = evaluate(&old, &now, &Settings::default());
    assert!(v.only_in_baseline.is_empty() && v.only_in_candidate.is_empty(), "{v:#?}");
    assert!(v.comparisons.iter().all(|c| c.key.engine == "native"));
    assert_eq!(v.comparisons.iter().filter(|c| c.metric == Metric::DecodeTokS).count(), 1);
    // A stored result reads back with the engine of today's name.
    let kind: crate::probe::EngineKind = serde_json::from_str("\"candle\"").unwrap();
    assert_eq!(kind, crate::probe::EngineKind::Native);
}

/// A record whose repetitions ran at `bws` GB/s on an engine whose token
/// takes `fixed_ms` plus 100 MB at the moment's bandwidth, with 1% noise.
fn at_moments(fixed_ms: f64, bws: &[f64], seed: u64) -> Record {
    let noise = speeds(bws.len(), 1.0, seed);
    let tok_s: Vec<f64> =
        bws.iter().zip(&noise).map(|(bw, n)| 1.0 / ((fixed_ms / 1e3 + 0.1 / bw) * (1.0 + (n - 1.0) / 2.0))).collect();
    let mut r = measured_record(2, 128, 16, &tok_s);
    let m = r.measurement.as_mut().unwrap();
    for (rep, bw) in m.probe.reps.iter_mut().zip(bws) {
        rep.drift =
            Some(crate::probe::drift::Drift { before_gb_s: *bw, after_gb_s: *bw, efficiency: 0.0, drifted: false });
    }
    r
}

#[test]
fn decode_at_bandwidth_takes_the_machine_out_and_sees_the_engine() {
    // The candidate's engine is 10% slower per token, but it ran while the
    // machine's bandwidth was high: raw decode calls it an improvement.
    let slow_moments = [33.0, 34.0, 32.0, 33.5, 34.5, 32.5, 33.0, 34.0, 33.0, 32.0];
    let fast_moments = [55.0, 56.0, 54.0, 57.0, 55.5, 56.5, 54.5, 55.0, 33.0, 56.0];
    let base = side(vec![at_moments(2.0, &slow_moments, 1)]);
    let cand = side(vec![at_moments(2.0 * 1.1 + 0.3, &fast_moments, 2)]);
    let v = evaluate_metrics(&base, &cand, &Settings::default(), &[Metric::DecodeTokS, Metric::DecodeAtBandwidth]);
    let by = |m: Metric| v.comparisons.iter().find(|c| c.metric == m).unwrap();
    assert_eq!(by(Metric::DecodeTokS).status, Status::Improvement, "{:#?}", by(Metric::DecodeTokS));
    let adj = by(Metric::DecodeAtBandwidth);
    assert_eq!(adj.status, Status::Regression, "{adj:#?}");
    assert!(adj.method.contains("MB / bandwidth a token"), "{}", adj.method);
    // Both sides in one regime: nothing to fit, said so.
    let flat = side(vec![at_moments(2.0, &slow_moments, 3)]);
    let v = evaluate_metrics(&base, &flat, &Settings::default(), &[Metric::DecodeAtBandwidth]);
    assert_eq!(v.comparisons[0].status, Status::NotMeasured, "{:#?}", v.comparisons[0]);
    assert!(v.comparisons[0].reason.contains("could be fitted"), "{}", v.comparisons[0].reason);
}

/// Decode speeds at `noise` (relative), seeded.
fn noisy(n: usize, mean: f64, noise: f64, seed: u64) -> Vec<f64> {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let d = rand_distr::Normal::new(mean, mean * noise).unwrap();
    (0..n).map(|_| d.sample(&mut rng)).collect()
}

#[test]
fn a_comparison_that_could_not_have_seen_the_minimum_effect_is_inconclusive_not_a_pass() {
    // A noisy source (8% a repetition): 10 repetitions a side cannot see a
    // 3% change; 200 can. Equal sides both times.
    let verdict = |n: usize| {
        let b = side(vec![measured_record(2, 128, 16, &noisy(n, 300.0, 0.08, 11))]);
        let c = side(vec![measured_record(2, 128, 16, &noisy(n, 300.0, 0.08, 12))]);
        let s = Settings { resamples: 200, ..Settings::default() };
        let v = evaluate_metrics(&b, &c, &s, &[Metric::DecodeTokS]);
        v.comparisons.into_iter().next().unwrap()
    };
    let few = verdict(10);
    assert_eq!(few.status, Status::Inconclusive, "{few:#?}");
    assert!(few.reason.starts_with("inconclusive (underpowered: could see "), "{}", few.reason);
    let d = few.detectable.unwrap();
    assert!(d > 0.05 && d < 0.25, "{d}");
    let many = verdict(200);
    assert_eq!(many.status, Status::Pass, "{many:#?}");
    assert!(many.detectable.unwrap() <= 0.03 && many.reason.contains("could see"), "{}", many.reason);
}
