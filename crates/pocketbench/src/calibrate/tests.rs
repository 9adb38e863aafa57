//! The cache term, the KV cost and the prefill attention cost: a fit
//! recovers a synthetic host whose small shapes are served from its caches,
//! whose attention reads the KV cache slower than its bandwidth, or whose
//! prefill attention runs slower than its matmuls, and predicts held-out
//! shapes from it;
//! and the repeatability summary a calibration prints beside its errors.

use super::design::Design;
use super::*;
use crate::device::{CalPoint, Devices};
use crate::predict::predict;

/// The built-in host with the full design's points, their decode and peak
/// memory made by `truth` (and the free list widened to the cache term).
fn synthetic(truth: &DeviceModel) -> Device {
    synthetic_fitting(truth, &[FreeParam::CacheSize, FreeParam::CacheEfficiency])
}

/// As [`synthetic`], the free list widened by `more`.
fn synthetic_fitting(truth: &DeviceModel, more: &[FreeParam]) -> Device {
    synthetic_at(truth, more, &|_| None)
}

/// As [`synthetic_fitting`], each point (by index) measured at the
/// same-moment bandwidth `moment` gives it, where it gives one.
fn synthetic_at(truth: &DeviceModel, more: &[FreeParam], moment: &dyn Fn(usize) -> Option<f64>) -> Device {
    let d = Devices::built_in().unwrap().get("host").unwrap().clone();
    let points = Design::built_in(false)
        .points
        .iter()
        .flat_map(|p| p.workloads.iter().map(move |w| (p, *w)))
        .enumerate()
        .map(|(index, (p, workload))| {
            let bandwidth = moment(index);
            let at = DeviceModel { bandwidth: bandwidth.unwrap_or(truth.bandwidth), ..*truth };
            let pred = predict(&p.shape, &p.shape.accounting(), &at, &workload);
            CalPoint {
                index,
                shape: p.shape,
                label: p.shape.to_string(),
                workload,
                decode_tok_s: Some(pred.decode_tok_s),
                prefill_tok_s: (workload.prompt >= 64).then_some(pred.prefill_tok_s),
                peak_memory: Some(pred.peak_mem_bytes),
                package: None,
                energy_j: None,
                source: "synthetic".into(),
                holdout: p.holdout,
                machine: None,
                cpu: None,
                engine_build: None,
                threads: None,
                bandwidth,
                noise: None,
                imported: None,
                citation: None,
                class: "native on cpu".into(),
                ran_on: None,
                unstated: Vec::new(),
            }
        })
        .collect();
    d.changed(|profile, model, p| {
        model.bandwidth = truth.bandwidth;
        profile.model.fit.extend(more);
        *p = points;
    })
}

#[test]
fn a_host_whose_caches_hold_the_small_shapes_is_fitted_and_its_held_out_shapes_predicted() {
    let mut truth = Devices::built_in().unwrap().get("host").unwrap().model().to_owned();
    truth.bandwidth = 19e9;
    truth.params.bandwidth_efficiency = 0.6;
    truth.params.cache_size = 50e6;
    truth.params.cache_efficiency = 1.8;
    truth.params.layer_cost = 20e-6;
    truth.params.attention_cost = 6e-9;
    let d = synthetic(&truth);
    let cal = calibrate(&d).unwrap();
    let size = cal.params.cache_size;
    assert!((40e6..62e6).contains(&size), "cache size {size}");
    let worst = cal.residuals.iter().filter(|r| r.metric == "decode").map(|r| r.rel_error.abs()).fold(0.0, f64::max);
    // The cache size is searched over a grid of the points' own working
    // sets, so it lands beside the true 50 MB (51.7 MB with the 15-shape
    // design) and the fit is close rather than exact.
    assert!(worst < 0.04, "worst decode residual {worst}: {:?}", cal.params);
    // Without the cache term the same points cannot be fitted as well.
    let plain = d.clone().changed(|profile, _, _| {
        profile.model.fit.retain(|p| !matches!(p, FreeParam::CacheSize | FreeParam::CacheEfficiency))
    });
    let worse = calibrate(&plain).unwrap();
    let worst_plain =
        worse.residuals.iter().filter(|r| r.metric == "decode").map(|r| r.rel_error.abs()).fold(0.0, f64::max);
    assert!(worst_plain > 3.0 * worst, "{worst_plain} vs {worst}");
}

#[test]
fn a_host_whose_attention_reads_the_kv_cache_slowly_is_fitted_and_qwen3_predicted_at_long_context() {
    let mut truth = Devices::built_in().unwrap().get("host").unwrap().model().to_owned();
    truth.params.cache_size = 0.0;
    truth.params.attention_cost = 3e-9;
    // The KV cache read at a third of the weights' rate, as the Zen 4 VM
    // read Qwen3-0.6B's at one thread.
    truth.params.kv_cost = 2.0 / (truth.params.bandwidth_efficiency * truth.bandwidth);
    let qwen = crate::arch::presets::preset("qwen3-0.6b").unwrap().shape;
    let study = crate::workload::Workload { prompt: 1024, gen: 128, context: 1152 };
    let truth_qwen = predict(&qwen, &qwen.accounting(), &truth, &study).decode_tok_s;

    let cal = calibrate(&synthetic_fitting(&truth, &[FreeParam::KvCost])).unwrap();
    let kv = cal.params.kv_cost;
    assert!((kv / truth.params.kv_cost - 1.0).abs() < 0.02, "kv cost {kv} vs {}", truth.params.kv_cost);
    let mut fitted = truth;
    fitted.params = cal.params;
    let got = predict(&qwen, &qwen.accounting(), &fitted, &study).decode_tok_s;
    assert!((got / truth_qwen - 1.0).abs() < 0.01, "{got} vs {truth_qwen}");

    // Without the term the per-score cost takes what it can of the KV's,
    // and Qwen3-0.6B (two query heads per KV head of 128 dimensions: more
    // bytes per score than any fitted shape) comes out too fast.
    let cal = calibrate(&synthetic_fitting(&truth, &[])).unwrap();
    fitted.params = cal.params;
    let without = predict(&qwen, &qwen.accounting(), &fitted, &study).decode_tok_s;
    assert!(without > 1.05 * truth_qwen, "{without} vs {truth_qwen}");
}

#[test]
fn a_host_whose_prefill_attention_runs_below_its_matmuls_is_fitted_and_held_out_prefill_predicted() {
    let mut truth = Devices::built_in().unwrap().get("host").unwrap().model().to_owned();
    truth.params.cache_size = 0.0;
    // About what the Zen 4 VM fitted at two threads: 0.0085 ns a FLOP on
    // top of the compute rate.
    truth.params.prefill_attention_cost = 8.5e-12;
    let with = synthetic_fitting(&truth, &[FreeParam::PrefillAttentionCost]);
    let cal = calibrate(&with).unwrap();
    let got = cal.params.prefill_attention_cost;
    assert!((got / truth.params.prefill_attention_cost - 1.0).abs() < 0.02, "{got}");
    let worst = |cal: &Calibration| {
        cal.residuals
            .iter()
            .filter(|r| r.metric == "prefill" && r.holdout)
            .map(|r| r.rel_error.abs())
            .fold(0.0, f64::max)
    };
    assert!(worst(&cal) < 0.01, "worst held-out prefill residual {}", worst(&cal));
    // Without the term one compute efficiency cannot serve narrow shapes,
    // where attention is a large share of a 1024-token prefill, and wide ones.
    let without = calibrate(&synthetic_fitting(&truth, &[])).unwrap();
    assert!(worst(&without) > 0.05, "{}", worst(&without));
}

#[test]
fn a_host_without_a_cache_effect_is_fitted_with_no_cache_term() {
    let mut truth = Devices::built_in().unwrap().get("host").unwrap().model().to_owned();
    truth.params.cache_size = 0.0;
    let d = synthetic(&truth);
    let cal = calibrate(&d).unwrap();
    let worst = cal.residuals.iter().filter(|r| r.metric == "decode").map(|r| r.rel_error.abs()).fold(0.0, f64::max);
    assert!(worst < 0.02, "{worst}");
}

#[test]
fn the_cache_share_falls_linearly_from_the_cache_size_to_twice_it() {
    let mut p = Devices::built_in().unwrap().get("host").unwrap().model().params;
    p.cache_size = 50e6;
    p.cache_efficiency = 2.0;
    p.bandwidth_efficiency = 0.5;
    assert_eq!(p.cache_share(10e6), 1.0);
    assert_eq!(p.cache_share(50e6), 1.0);
    assert!((p.cache_share(75e6) - 0.5).abs() < 1e-12);
    assert_eq!(p.cache_share(100e6), 0.0);
    assert_eq!(p.efficiency_for(10e6), 2.0);
    assert_eq!(p.efficiency_for(200e6), 0.5);
    // Half the bytes at each rate: the harmonic mean.
    assert!((p.efficiency_for(75e6) - 0.8).abs() < 1e-12);
    p.cache_size = 0.0;
    assert_eq!(p.efficiency_for(10e6), 0.5);
}

#[test]
fn repeatability_counts_the_jobs_whose_rounds_spread_wider_than_the_tolerance() {
    use super::session::Half;
    let raw = |raw| Half { raw, at_bandwidth: None };
    let r = repeatability(&[0.05, 0.2, 0.12], &[raw(0.04), raw(0.05), raw(0.1)], None, 0.10).unwrap();
    assert_eq!((r.jobs, r.wider, r.tolerance), (3, 2, 0.10));
    assert_eq!((r.median_spread, r.worst_spread), (0.12, 0.2));
    // Halves within the split-half tolerance (5%), the boundary included.
    assert_eq!((r.halves_agree, r.split_half_tolerance), (2, 0.05));
    assert_eq!((r.halves_agree_raw, r.halves_at_bandwidth), (2, 0));
    // Where the halves could be taken to one bandwidth, that is what is judged.
    let moved = [Half { raw: 0.12, at_bandwidth: Some(0.02) }, Half { raw: 0.01, at_bandwidth: Some(0.08) }];
    let r = repeatability(&[0.12, 0.08], &moved, None, 0.10).unwrap();
    assert_eq!((r.halves_agree, r.halves_agree_raw, r.halves_at_bandwidth), (1, 1, 2));
    // A spread equal to the tolerance is within it, as an error equal to it is.
    assert_eq!(repeatability(&[0.10], &[raw(0.10)], None, 0.10).unwrap().wider, 0);
    assert_eq!(repeatability(&[], &[], None, 0.10), None);
}

#[test]
fn decode_is_fitted_against_each_points_own_moment_bandwidth() {
    let mut truth = Devices::built_in().unwrap().get("host").unwrap().model().to_owned();
    truth.params.cache_size = 0.0;
    truth.bandwidth = 40e9;
    truth.params.bandwidth_efficiency = 0.8;
    truth.params.layer_cost = 10e-6;
    // The machine moved between 30 and 60 GB/s while the points were measured.
    let moments = [30e9, 60e9, 45e9, 35e9, 55e9];
    let moment = |i: usize| Some(moments[i % moments.len()]);
    let cal = calibrate(&synthetic_at(&truth, &[], &moment)).unwrap();
    let e = cal.params.bandwidth_efficiency;
    assert!((e / 0.8 - 1.0).abs() < 0.01, "efficiency {e}");
    let worst = cal.residuals.iter().filter(|r| r.metric == "decode").map(|r| r.rel_error.abs()).fold(0.0, f64::max);
    assert!(worst < 0.01, "worst decode residual {worst}");
    // The same speeds fitted as if measured at the fact's bandwidth: the
    // machine's moves become the model's error.
    let blind = synthetic_at(&truth, &[], &moment).changed(|_, _, points| {
        for p in points.iter_mut() {
            p.bandwidth = None;
        }
    });
    let cal = calibrate(&blind).unwrap();
    let worst_blind =
        cal.residuals.iter().filter(|r| r.metric == "decode").map(|r| r.rel_error.abs()).fold(0.0, f64::max);
    assert!(worst_blind > 10.0 * worst.max(1e-3), "{worst_blind} vs {worst}");
}
