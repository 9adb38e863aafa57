//! The shipped device profiles reproduce the reference study's published
//! figures after calibration, and the stored fits are current.

use pocketbench::arch::{preset, ShapeSpec};
use pocketbench::calibrate::calibrate;
use pocketbench::device::{CalibrationState, Device, Devices, FreeParam};
use pocketbench::predict::predict;
use pocketbench::workload::Workload;

fn devices() -> Devices {
    Devices::built_in().unwrap()
}

fn check(dev: &Device, spec: ShapeSpec, w: Workload, metric: &str, published: f64, tol: f64) {
    let shape = spec.resolve().unwrap();
    let p = predict(&shape, &shape.accounting(), dev.model(), &w);
    let got = match metric {
        "decode" => p.decode_tok_s,
        "package" => p.package_bytes / 1e6,
        "peak" => p.peak_mem_bytes / 1e6,
        "energy" => p.energy_j,
        "prefill" => p.prefill_tok_s,
        _ => unreachable!(),
    };
    let err = got / published - 1.0;
    assert!(
        err.abs() <= tol,
        "{} {metric}: predicted {got:.1}, published {published} ({:+.1}%)",
        dev.id(),
        err * 100.0
    );
}

fn pocket() -> ShapeSpec {
    ShapeSpec { preset: Some("mnn-pocket-0.3b".into()), ..Default::default() }
}

#[test]
fn ipad_pro_m5_reproduces_published_figures() {
    let d = devices();
    let dev = d.get("ipad-pro-m5").unwrap();
    let w = Workload::new(512, 128, None).unwrap();
    let qwen = ShapeSpec { preset: Some("qwen3-0.6b".into()), ..Default::default() };
    check(dev, pocket(), w, "decode", 466.0, 0.05);
    check(dev, qwen.clone(), w, "decode", 286.0, 0.05);
    check(dev, pocket(), w, "package", 173.0, 0.03);
    check(dev, qwen.clone(), w, "package", 340.0, 0.03);
    check(dev, pocket(), w, "peak", 228.0, 0.10);
    check(dev, qwen, w, "peak", 427.0, 0.10);
}

#[test]
fn iphone_18_pro_reproduces_the_depth_study() {
    let d = devices();
    let dev = d.get("iphone-18-pro").unwrap();
    let w = Workload::reference();
    check(dev, pocket(), w, "decode", 355.0, 0.05);
    let deep = ShapeSpec { layers: Some(36), ffn: Some(1856), ..pocket() };
    // Same size within 1%.
    let total = deep.resolve().unwrap().accounting().params_total as f64;
    assert!((total / 302.8e6 - 1.0).abs() < 0.01, "{total}");
    check(dev, deep, w, "decode", 323.0, 0.05);
}

#[test]
fn snapdragon_and_oneplus_reproduce_published_figures() {
    let d = devices();
    check(d.get("snapdragon-8-gen-5").unwrap(), pocket(), Workload::reference(), "decode", 251.0, 0.05);
    check(d.get("oneplus-13").unwrap(), pocket(), Workload::reference(), "energy", 2.7, 0.10);
}

#[test]
fn oneplus_13_energy_share_matches_published() {
    // 100 runs ~ 0.3% of a 6000 mAh battery.
    let d = devices();
    let dev = d.get("oneplus-13").unwrap();
    let s = preset("mnn-pocket-0.3b").unwrap().shape;
    let p = predict(&s, &s.accounting(), dev.model(), &Workload::reference());
    let share = p.battery_fraction.unwrap() * 100.0 * 100.0;
    assert!((share - 0.32).abs() < 0.04, "{share}% for 100 runs");
    assert!((dev.budgets().energy_j.unwrap() - 8.36).abs() < 0.05);
}

#[test]
fn stored_fits_are_current() {
    for dev in devices().all() {
        if dev.points().is_empty() {
            assert_eq!(*dev.state(), CalibrationState::Priors);
            continue;
        }
        assert!(matches!(dev.state(), CalibrationState::Calibrated { .. }), "{}: {}", dev.id(), dev.state());
        let fresh = calibrate(dev).unwrap();
        for p in &dev.profile().model.fit {
            let (stored, refit) = (dev.model().params.get(*p), fresh.params.get(*p));
            let tolerance = 1e-3 * stored.abs().max(refit.abs());
            assert!((stored - refit).abs() <= tolerance, "{} {}: stored {stored}, refit {refit}", dev.id(), p.key());
        }
    }
}

#[test]
fn borrowed_priors_match_their_source_fit() {
    let d = devices();
    for dev in d.all() {
        let m = &dev.profile().model;
        for (param, source) in [
            (FreeParam::EngineOverhead, &m.engine_overhead.source),
            (FreeParam::ActivePower, &m.active_power.source),
            (FreeParam::BandwidthEfficiency, &m.bandwidth_efficiency.source),
            (FreeParam::ComputeEfficiency, &m.compute_efficiency.source),
        ] {
            let Some(rest) = source.split("borrowed from the ").nth(1) else { continue };
            let from = rest.split(' ').next().unwrap();
            let src = d.get(from).unwrap();
            assert!(
                src.profile().model.fit.contains(&param),
                "{} borrows {} from {from}, which does not fit it",
                dev.id(),
                param.key()
            );
            let (a, b) = (dev.model().params.get(param), src.model().params.get(param));
            assert!((a / b - 1.0).abs() < 1e-3, "{} {}: {a} vs {from}'s {b}", dev.id(), param.key());
        }
    }
}

#[test]
fn every_residual_is_reported() {
    let d = devices();
    let cal = calibrate(d.get("ipad-pro-m5").unwrap()).unwrap();
    // 2 study points x (decode, package, peak-memory) + 2 prefill points.
    assert_eq!(cal.residuals.len(), 8);
    let fitted: Vec<_> = cal.residuals.iter().filter(|r| !r.holdout).collect();
    assert_eq!(fitted.len(), 7);
    assert!(fitted.iter().all(|r| r.rel_error.abs() < 0.10), "{fitted:?}");
    assert!(cal.warnings.is_empty(), "{:?}", cal.warnings);
}

fn qwen3_4b() -> ShapeSpec {
    // Qwen/Qwen3-4B config.json, as in the iPad profile's held-out point.
    ShapeSpec {
        hidden: Some(2560),
        layers: Some(36),
        heads: Some(32),
        kv_heads: Some(8),
        head_dim: Some(128),
        ffn: Some(9728),
        vocab: Some(151936),
        tied: Some(true),
        qk_norm: Some(true),
        quant: Some("int4 group=64".parse().unwrap()),
        ..Default::default()
    }
}

#[test]
fn ipad_pro_m5_reproduces_published_prefill_and_predicts_a_held_out_size() {
    // MNN fecee95475 on iPad Pro M5 (published.md, "Other public figures";
    // alibaba/MNN skills/test-ci/ios-llm-bench.md), prompt 512.
    let d = devices();
    let dev = d.get("ipad-pro-m5").unwrap();
    let w = Workload::new(512, 128, None).unwrap();
    let qwen = ShapeSpec {
        preset: Some("qwen3-0.6b".into()),
        quant: Some("int4 group=64".parse().unwrap()),
        ..Default::default()
    };
    check(dev, qwen, w, "prefill", 7795.2, 0.10);
    // Held out (not fitted): Qwen3-4B, 1231.1 tok/s in the same table.
    check(dev, qwen3_4b(), w, "prefill", 1231.1, 0.25);
    // The study's decode points stay within 5% (also checked above).
    check(dev, pocket(), w, "decode", 466.0, 0.05);
}

#[test]
fn a_fit_over_two_engine_builds_says_so() {
    let d = devices();
    let ipad = d.get("ipad-pro-m5").unwrap();
    // The fecee95475 build's Qwen3-0.6B decode, 241.7 tok/s, put beside the
    // study's decode points.
    let mut other = ipad.profile().calibration.iter().find(|p| p.prefill.is_some() && !p.holdout).unwrap().clone();
    other.decode = Some(pocketbench::units::TokRate(241.7));
    other.prefill = None;
    let text = pocketbench::device::home::text_of(ipad.origin()).unwrap();
    let text = pocketbench::calibrate::with_points(&text, &[other]).unwrap();
    let dev = pocketbench::device::parse(ipad.origin().clone(), &text).unwrap();
    let cal = calibrate(&dev).unwrap();
    let w = cal.warnings.iter().find(|w| w.contains("the decode fit mixes points of 2 engine builds"));
    assert!(w.is_some_and(|w| w.contains("MNN fecee95475") && w.contains("release build")), "{:?}", cal.warnings);
    // Alone, each stage's points share one build.
    assert!(calibrate(d.get("ipad-pro-m5").unwrap()).unwrap().warnings.is_empty());
}

#[test]
fn a_prefill_faster_than_the_compute_fact_is_a_warning() {
    // The GPU's plain FP32 ALUs (4.1 TFLOPS) cannot run the published
    // 7,795 tok/s prefill: the fit warns instead of ending silently at 100%.
    let d = devices();
    let ipad = d.get("ipad-pro-m5").unwrap();
    let dev = ipad.with_model(pocketbench::device::DeviceModel { compute: 4.096e12, ..*ipad.model() });
    let cal = calibrate(&dev).unwrap();
    assert!(cal.at_bound.iter().any(|k| k == "compute-efficiency"), "{:?}", cal.at_bound);
    // One line with the count; each point under --verbose. A phone's fact
    // is a published one: said too low, not changed.
    assert_eq!(cal.warnings.len(), 1, "{:?}", cal.warnings);
    assert!(
        cal.warnings[0].contains("prefill point(s) imply more compute than the fact 4.096 TFLOPS"),
        "{:?}",
        cal.warnings
    );
    assert!(
        cal.compute_details
            .iter()
            .any(|w| w.contains("calibration[2]") && w.contains("above the compute fact 4.096 TFLOPS")),
        "{:?}",
        cal.compute_details
    );
    assert_eq!(cal.compute_fact, None);
    assert!(calibrate(d.get("ipad-pro-m5").unwrap()).unwrap().warnings.is_empty());
}

#[test]
fn on_this_machine_a_compute_fact_below_the_prefill_points_is_raised_to_what_they_imply() {
    let d = devices();
    let host = d.get("host").unwrap();
    let low = 1e11;
    let dev = host.with_model(pocketbench::device::DeviceModel { compute: low, ..*host.model() });
    let cal = calibrate(&dev).unwrap();
    let raised = cal.compute_fact.as_ref().expect("the fact raised");
    assert!(raised.flops > low && raised.source.starts_with("M: the highest compute"), "{raised:?}");
    let n = cal.compute_details.len();
    assert!(n >= 1);
    assert!(
        cal.warnings
            .iter()
            .any(|w| w.starts_with(&format!("{n} prefill point(s) implied more compute")) && w.contains("raised")),
        "{:?}",
        cal.warnings
    );
    // The profile written holds the raised fact and a digest that matches it.
    let text = pocketbench::device::home::text_of(host.origin()).unwrap();
    let out = pocketbench::calibrate::fitted_text(&text, &dev, &cal).unwrap();
    let back = pocketbench::device::parse(host.origin().clone(), &out).unwrap();
    assert!((back.model().compute / raised.flops - 1.0).abs() < 1e-3, "{}", back.model().compute);
    assert!(!back.calibration_label().contains("stale"), "{}", back.calibration_label());
    // No point implies more than the raised fact.
    assert!(calibrate(&back).unwrap().compute_details.is_empty());
}

#[test]
fn energy_ranges_follow_the_priors_and_say_how_sure_a_verdict_is() {
    let d = devices();
    let s = preset("mnn-pocket-0.3b").unwrap().shape;
    let w = Workload::reference();
    for dev in d.all().iter().filter(|d| d.model().battery_j.is_some()) {
        let p = predict(&s, &s.accounting(), dev.model(), &w);
        let [lo, hi] = p.energy_j_range;
        assert!(lo <= p.energy_j && p.energy_j <= hi, "{}: {lo} {} {hi}", dev.id(), p.energy_j);
        let [tlo, thi] = p.ttft_ms_range;
        assert!(tlo <= p.ttft_ms && p.ttft_ms <= thi, "{}", dev.id());
        assert!(p.prefill_energy_share > 0.0 && p.prefill_energy_share < 1.0);
    }
    // OnePlus 13: the active power is fitted to the 2.7 J of this very run,
    // so across the compute-efficiency range the run keeps its 2.7 J; a
    // larger model's energy still spreads with that range, narrowly (its
    // prefill share is close to the reference run's).
    let op = d.get("oneplus-13").unwrap();
    let p = predict(&s, &s.accounting(), op.model(), &w);
    assert!((p.energy_j / 2.7 - 1.0).abs() < 1e-3, "{}", p.energy_j);
    let same = |v: f64| (v / p.energy_j - 1.0).abs() < 1e-9;
    assert!(same(p.energy_j_range[0]) && same(p.energy_j_range[1]), "{:?}", p.energy_j_range);
    assert!(p.ttft_ms_range[1] > 2.0 * p.ttft_ms_range[0], "{:?}", p.ttft_ms_range);
    let big = preset("qwen3-1.7b").unwrap().shape;
    let q = predict(&big, &big.accounting(), op.model(), &w);
    assert!(q.energy_j_range[1] > 1.005 * q.energy_j_range[0], "{:?}", q.energy_j_range);
    // Snapdragon 8 Gen 5: no energy or prefill figure of its own; the
    // reference run passes at the point, and its range crosses the budget.
    let sd = d.get("snapdragon-8-gen-5").unwrap();
    let cap = pocketbench::capability::capability(&s, &s.accounting(), &Default::default(), None);
    let r = pocketbench::record::predicted(&s, &s.accounting(), sd, &w, &cap);
    assert_eq!(r.budgets.energy.status, pocketbench::budget::Status::Pass);
    assert_eq!(r.budgets.energy.certainty, Some(pocketbench::budget::Certainty::Uncertain));
    assert!(r.energy_j_per_run_high.unwrap() > sd.budgets().energy_j.unwrap());
    // A prediction's JSON carries the range under these names.
    let json = serde_json::to_value(&r).unwrap();
    for k in ["ttft_ms_low", "ttft_ms_high", "energy_j_per_run_low", "energy_j_per_run_high", "prefill_energy_share"] {
        assert!(json[k].as_f64().is_some(), "{k}");
    }
    assert_eq!(json["budgets"]["energy"]["certainty"], "uncertain");
}

/// A recorded set of host measurements (one machine, one day), so the fit
/// code is tested on fixed data rather than on whatever devices/host.toml a
/// user has calibrated on their own machine.
fn host_fixture() -> Device {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/devices/host-fixture.toml");
    pocketbench::device::load_file(&path).unwrap()
}

#[test]
fn host_fit_predicts_held_out_measurements() {
    let fixture = host_fixture();
    let host = &fixture;
    let cal = calibrate(host).unwrap();
    let held: Vec<_> = cal.residuals.iter().filter(|r| r.holdout).collect();
    // Held-out configurations differ from every fitted one in at least two of
    // depth, width and vocabulary, and the held-out set brings vocabularies the fit never saw.
    let fitted: Vec<_> = host.points().iter().filter(|p| !p.holdout).map(|p| p.shape).collect();
    let mut new_vocab = 0;
    for p in host.points().iter().filter(|p| p.holdout) {
        let differ = |f: &pocketbench::arch::Shape| {
            [p.shape.layers != f.layers, p.shape.hidden != f.hidden, p.shape.vocab != f.vocab]
                .iter()
                .filter(|d| **d)
                .count()
        };
        assert!(fitted.iter().all(|f| differ(f) >= 2), "{}", p.label);
        new_vocab += usize::from(fitted.iter().all(|f| p.shape.vocab != f.vocab));
    }
    assert!(new_vocab >= 2);
    assert!(held.iter().filter(|r| r.metric == "decode").count() >= 3);
    for r in held {
        let limit = match r.metric {
            "decode" => 0.10,
            "peak-memory" => 0.15,
            _ => continue,
        };
        assert!(r.rel_error.abs() <= limit, "{} {}: {:+.1}%", r.model, r.metric, r.rel_error * 100.0);
    }
}

#[test]
fn a_fit_is_stale_when_any_input_of_it_changes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/devices/host-fixture.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let parse = |t: &str| pocketbench::device::parse(pocketbench::device::Origin::File(path.clone()), t).unwrap();
    assert!(matches!(parse(&text).state(), CalibrationState::Calibrated { .. }));
    // `host-info` rewrites the bandwidth fact: the fit was made against the old one.
    let edits = [
        ("value = \"69.5 GB/s\"", "value = \"27 GB/s\""),
        ("kv-bits = 16", "kv-bits = 8"),
        // A parameter outside the fit list (active power) is an input of the fit too.
        ("value = \"10 W\"", "value = \"9 W\""),
    ];
    for (from, to) in edits {
        assert!(text.contains(from), "the fixture has `{from}`");
        let changed = text.replacen(from, to, 1);
        assert_eq!(*parse(&changed).state(), CalibrationState::Stale, "after `{from}` -> `{to}`");
    }
}
