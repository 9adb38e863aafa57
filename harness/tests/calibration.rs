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
    let p = predict(&shape, &shape.accounting(), &dev.model, &w);
    let got = match metric {
        "decode" => p.decode_tok_s,
        "package" => p.package_bytes / 1e6,
        "peak" => p.peak_mem_bytes / 1e6,
        "energy" => p.energy_j,
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
    let p = predict(&s, &s.accounting(), &dev.model, &Workload::reference());
    let share = p.battery_fraction.unwrap() * 100.0 * 100.0;
    assert!((share - 0.32).abs() < 0.04, "{share}% for 100 runs");
    assert!((dev.budgets.energy_j.unwrap() - 8.36).abs() < 0.05);
}

#[test]
fn stored_fits_are_current() {
    for dev in devices().all() {
        if dev.points.is_empty() {
            assert_eq!(dev.state, CalibrationState::Priors);
            continue;
        }
        assert!(matches!(dev.state, CalibrationState::Calibrated { .. }), "{}: {}", dev.id(), dev.state);
        let fresh = calibrate(dev).unwrap();
        for p in &dev.profile.model.fit {
            let (stored, refit) = (dev.model.params.get(*p), fresh.params.get(*p));
            let tolerance = 1e-3 * stored.abs().max(refit.abs());
            assert!((stored - refit).abs() <= tolerance, "{} {}: stored {stored}, refit {refit}", dev.id(), p.key());
        }
    }
}

#[test]
fn borrowed_priors_match_their_source_fit() {
    let d = devices();
    for dev in d.all() {
        let m = &dev.profile.model;
        for (param, source) in [
            (FreeParam::EngineOverhead, &m.engine_overhead.source),
            (FreeParam::ActivePower, &m.active_power.source),
            (FreeParam::BandwidthEfficiency, &m.bandwidth_efficiency.source),
        ] {
            let Some(rest) = source.split("borrowed from the ").nth(1) else { continue };
            let from = rest.split(' ').next().unwrap();
            let src = d.get(from).unwrap();
            assert!(
                src.profile.model.fit.contains(&param),
                "{} borrows {} from {from}, which does not fit it",
                dev.id(),
                param.key()
            );
            let (a, b) = (dev.model.params.get(param), src.model.params.get(param));
            assert!((a / b - 1.0).abs() < 1e-3, "{} {}: {a} vs {from}'s {b}", dev.id(), param.key());
        }
    }
}

#[test]
fn every_residual_is_reported() {
    let d = devices();
    let cal = calibrate(d.get("ipad-pro-m5").unwrap()).unwrap();
    // 2 points x (decode, package, peak-memory).
    assert_eq!(cal.residuals.len(), 6);
    assert!(cal.residuals.iter().all(|r| r.rel_error.abs() < 0.10));
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
    let fitted: Vec<_> = host.points.iter().filter(|p| !p.holdout).map(|p| p.shape).collect();
    let mut new_vocab = 0;
    for p in host.points.iter().filter(|p| p.holdout) {
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
    assert!(matches!(parse(&text).state, CalibrationState::Calibrated { .. }));
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
        assert_eq!(parse(&changed).state, CalibrationState::Stale, "after `{from}` -> `{to}`");
    }
}
