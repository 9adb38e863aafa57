//! Honest intervals (issue 44, item 4): every predicted figure carries a
//! low and a high bound, a 90% interval on a log scale,
//! `prediction x/÷ exp(1.645 σ)`, whose σ is built from three things:
//!
//! * **The fit's own error.** For a metric that two or more of the
//!   device's fitted points carry, the root mean square of their
//!   leave-one-out log errors ([`crate::calibrate::loo`]): each point
//!   predicted by a fit of the others, so an error the fit has not seen.
//!   With fewer, or where leave-one-out judged nothing, a prior σ for the
//!   metric ([`PRIOR_SIGMA`]), the project's judgement of how far a
//!   roofline model is off on a device it has not been fitted to; it is
//!   never below [`FLOOR_SIGMA`].
//! * **Few points.** With one or two fitted points carrying the metric the
//!   prediction is marked low-confidence, and σ is at least the prior's.
//! * **Distance.** Beyond the fitted points' range of weight bytes and of
//!   context (prompt + generated), σ grows by [`DISTANCE_SIGMA`] per e-fold
//!   outside it (added in quadrature); at another thread count than the
//!   profile's, by as much per e-fold of threads.
//!
//! The interval is the hull of this and of the ranges the profile's prior
//! parameters and bandwidth already give ([`crate::predict::Prediction`]).
//! `calibrate --device D --check` counts how many held-out and
//! left-out figures fall inside ([`coverage`]).

use std::sync::OnceLock;

use serde::Serialize;

use crate::arch::Shape;
use crate::device::{CalPoint, Device};
use crate::predict::Prediction;
use crate::workload::Workload;

/// The normal quantile of a two-sided 90% interval.
pub const Z90: f64 = 1.645;
/// σ (log scale) of a metric no or too few points constrain: decode,
/// prefill, peak memory, energy. A roofline on the right facts lands
/// within a factor of about 1.8 (decode), 2.3 (prefill), 1.5 (memory) and
/// 2.3 (energy) 90% of the time on the profiles of this repository.
pub const PRIOR_SIGMA: [f64; 4] = [0.35, 0.50, 0.25, 0.50];
/// The least σ of any metric: no fit is better than the machine's own
/// run-to-run spread.
pub const FLOOR_SIGMA: f64 = 0.03;
/// σ added per e-fold beyond the fitted range of size, context or threads.
pub const DISTANCE_SIGMA: f64 = 0.15;

/// The metrics with intervals of their own (TTFT follows prefill).
const METRICS: [&str; 4] = ["decode", "prefill", "peak-memory", "energy"];

/// What a device's fit says about its own error, once per device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Basis {
    /// σ of decode, prefill, peak memory and energy before distance.
    pub sigma: [f64; 4],
    /// Fitted points carrying each.
    pub points: [usize; 4],
    /// Where each σ came from: "leave-one-out over 3 points", "prior".
    pub from: [String; 4],
    /// The fitted points' range of weight bytes and of context, per metric.
    #[serde(skip)]
    ranges: [Option<([f64; 2], [f64; 2])>; 4],
}

impl Basis {
    /// One line: "90% intervals: decode from leave-one-out over 5 point(s)
    /// (σ 0.12), ...; low confidence".
    pub fn describe(&self) -> String {
        let parts: Vec<String> = METRICS
            .iter()
            .zip(&self.from)
            .zip(&self.sigma)
            .map(|((m, from), sigma)| format!("{m} from {from} (x/÷{:.2})", (Z90 * sigma).exp()))
            .collect();
        let low = if self.points[0] < 3 || self.points[1] < 3 {
            "; LOW confidence (fewer than 3 fitted speed points)"
        } else {
            ""
        };
        format!("90% intervals: {}{low}", parts.join(", "))
    }
}

/// A prediction's bounds: a 90% interval of each figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// Decode tok/s, low and high.
    pub decode_tok_s: [f64; 2],
    /// Prefill tok/s.
    pub prefill_tok_s: [f64; 2],
    /// Time to first token, ms.
    pub ttft_ms: [f64; 2],
    /// Peak memory increase, bytes.
    pub peak_mem_bytes: [f64; 2],
    /// Energy per run, J.
    pub energy_j: [f64; 2],
    /// One or two fitted points carry the speed figures (or none).
    pub low_confidence: bool,
}

/// The [`Basis`] of `device`, computed once and kept with it.
pub fn basis(device: &Device) -> &Basis {
    device.interval_basis(|| compute_basis(device))
}

fn compute_basis(device: &Device) -> Basis {
    let fitted: Vec<&CalPoint> = device.points().iter().filter(|p| !p.holdout).collect();
    let loo = crate::calibrate::loo::leave_one_out(device).ok();
    let mut b = Basis { sigma: PRIOR_SIGMA, points: [0; 4], from: Default::default(), ranges: [None; 4] };
    for (i, metric) in METRICS.iter().enumerate() {
        let with: Vec<&&CalPoint> = fitted.iter().filter(|p| figure(p, metric).is_some()).collect();
        b.points[i] = with.len();
        let errors: Vec<f64> = loo
            .iter()
            .flat_map(|l| &l.rows)
            .filter(|r| r.metric == *metric)
            .filter_map(|r| r.rel_error)
            .map(|e| (1.0 + e).ln())
            .collect();
        (b.sigma[i], b.from[i]) = if with.len() >= 3 && errors.len() >= 2 {
            let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
            (rms.max(FLOOR_SIGMA), format!("leave-one-out over {} point(s)", errors.len()))
        } else {
            (PRIOR_SIGMA[i], format!("prior ({} fitted point(s))", with.len()))
        };
        b.ranges[i] = range(&with);
    }
    b
}

fn figure(p: &CalPoint, metric: &str) -> Option<f64> {
    match metric {
        "decode" => p.decode_tok_s,
        "prefill" => p.prefill_tok_s,
        "peak-memory" => p.peak_memory,
        _ => p.energy_j,
    }
}

/// The points' range of weight bytes and of context.
fn range(points: &[&&CalPoint]) -> Option<([f64; 2], [f64; 2])> {
    let hull = |v: Vec<f64>| v.iter().fold([f64::INFINITY, 0.0_f64], |[lo, hi], x| [lo.min(*x), hi.max(*x)]);
    (!points.is_empty()).then(|| {
        (
            hull(points.iter().map(|p| p.shape.accounting().weight_bytes as f64).collect()),
            hull(points.iter().map(|p| (p.workload.prompt + p.workload.gen) as f64).collect()),
        )
    })
}

/// E-folds of `x` outside `[lo, hi]`.
fn beyond(x: f64, [lo, hi]: [f64; 2]) -> f64 {
    if x < lo {
        (lo / x).ln()
    } else if x > hi {
        (x / hi).ln()
    } else {
        0.0
    }
}

/// The bounds of `p`, a prediction of `shape` at `w` on `device`;
/// `threads` the thread count predicted at, where it differs from the
/// profile's.
pub fn bounds(device: &Device, shape: &Shape, w: &Workload, p: &Prediction, threads: Option<f64>) -> Bounds {
    let b = basis(device);
    let weight = shape.accounting().weight_bytes as f64;
    let context = (w.prompt + w.gen) as f64;
    let thread_folds = threads.map_or(0.0, |t| {
        let own = device.profile().engine.threads.unwrap_or(1) as f64;
        (t / own).ln().abs()
    });
    let sigma = |i: usize| {
        let d = b.ranges[i].map_or(0.0, |(wr, cr)| beyond(weight, wr) + beyond(context, cr)) + thread_folds;
        (b.sigma[i].powi(2) + (DISTANCE_SIGMA * d).powi(2)).sqrt()
    };
    let around = |v: f64, s: f64| [v * (-Z90 * s).exp(), v * (Z90 * s).exp()];
    let hull = |a: [f64; 2], r: [f64; 2]| [a[0].min(r[0]), a[1].max(r[1])];
    let prefill = around(p.prefill_tok_s, sigma(1));
    let ttft = [p.ttft_ms * p.prefill_tok_s / prefill[1], p.ttft_ms * p.prefill_tok_s / prefill[0]];
    Bounds {
        decode_tok_s: hull(around(p.decode_tok_s, sigma(0)), p.decode_tok_s_range),
        prefill_tok_s: prefill,
        ttft_ms: hull(ttft, p.ttft_ms_range),
        peak_mem_bytes: around(p.peak_mem_bytes, sigma(2)),
        energy_j: hull(around(p.energy_j, sigma(3)), p.energy_j_range),
        low_confidence: b.points[0] < 3 || b.points[1] < 3,
    }
}

/// Whether `v` lies in `[lo, hi]`.
pub fn inside(v: f64, [lo, hi]: [f64; 2]) -> bool {
    v >= lo && v <= hi
}

/// A lazily computed [`Basis`], kept with a device.
#[derive(Debug, Clone, Default)]
pub struct BasisCell(OnceLock<Basis>);

impl BasisCell {
    /// The basis, computed by `f` the first time.
    pub fn get_or_init(&self, f: impl FnOnce() -> Basis) -> &Basis {
        self.0.get_or_init(f)
    }
}

/// One figure the fit did not use against its 90% interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Covered {
    /// Point index in the profile.
    pub point: usize,
    /// The configuration.
    pub model: String,
    /// decode, prefill or peak-memory.
    pub metric: &'static str,
    /// How the fit did not use it: "held out", "left out" (leave-one-out),
    /// or "held out, class llama.cpp on gpu".
    pub how: String,
    /// The figure.
    pub value: f64,
    /// Its 90% interval.
    pub interval: [f64; 2],
    /// It lies inside.
    pub inside: bool,
}

/// Every figure of `device` that a fit did not use, against the 90%
/// interval of that fit: its held-out points, each fitted point left out
/// of a refit in turn, and the held-out points of its other engine
/// classes. The goal (issue 44): at least 90% inside.
pub fn coverage(device: &Device) -> Vec<Covered> {
    let mut out = Vec::new();
    let mut check = |d: &Device, pt: &CalPoint, how: String, decode_only: bool| {
        let at = crate::calibrate::at_moment(pt, d.model());
        let p = crate::predict::predict(&pt.shape, &pt.shape.accounting(), &at, &pt.workload);
        let b = bounds(d, &pt.shape, &pt.workload, &p, None);
        let figures = [
            ("decode", pt.decode_tok_s, b.decode_tok_s),
            ("prefill", pt.prefill_tok_s, b.prefill_tok_s),
            ("peak-memory", pt.peak_memory, b.peak_mem_bytes),
        ];
        for (metric, v, interval) in figures {
            if let Some(v) = v.filter(|_| !decode_only || metric == "decode") {
                let scale = if metric == "peak-memory" { 1e6 } else { 1.0 };
                out.push(Covered {
                    point: pt.index,
                    model: pt.label.clone(),
                    metric,
                    how: how.clone(),
                    value: v / scale,
                    interval: [interval[0] / scale, interval[1] / scale],
                    inside: inside(v, interval),
                });
            }
        }
    };
    // A point whose workload its source leaves unsaid is predicted at the
    // reference workload: its decode counts (at these sizes the KV cache
    // is a small part of what a token reads), its prefill, which a prompt's
    // length sets, does not. A point of the nearest chip is not this
    // device's and does not count.
    let unstated = |p: &CalPoint| {
        p.unstated.iter().any(|u| matches!(u, crate::device::Unstated::Prompt | crate::device::Unstated::Gen))
    };
    let own_chip =
        |p: &&CalPoint| p.ran_on.as_ref().is_none_or(|r| r.relation == crate::device::ChipRelation::SameChip);
    for pt in device.points().iter().filter(|p| p.holdout).filter(own_chip) {
        let how = if unstated(pt) { "held out, workload not stated" } else { "held out" };
        check(device, pt, how.into(), unstated(pt));
    }
    for pt in device.points().iter().filter(|p| !p.holdout) {
        let left = device.with_held_out(pt.index);
        if let Ok(c) = crate::calibrate::calibrate(&left) {
            let mut m = *device.model();
            m.params = c.params;
            if let Some(f) = &c.compute_fact {
                m.compute = f.flops;
            }
            check(&left.with_model(m), pt, "left out".into(), false);
        }
    }
    for fit in crate::calibrate::classes::classes(device) {
        let name = fit.class.replace(" on ", "/");
        if let Ok(d) = crate::calibrate::classes::for_class(device, &name) {
            for pt in d.points().iter().filter(|p| p.holdout).filter(own_chip) {
                check(&d, pt, format!("held out, class {}", fit.class), unstated(pt));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Devices;

    #[test]
    fn the_intervals_cover_nine_in_ten_figures_no_fit_used() {
        let devices = Devices::built_in().unwrap();
        let mut all = Vec::new();
        for d in devices.all() {
            all.extend(coverage(d).into_iter().map(|c| (d.id().to_string(), c)));
        }
        let inside = all.iter().filter(|(_, c)| c.inside).count();
        let outside: Vec<_> = all.iter().filter(|(_, c)| !c.inside).collect();
        assert!(all.len() >= 20, "too few figures to judge: {}", all.len());
        assert!(inside as f64 >= 0.9 * all.len() as f64, "{inside} of {}; outside: {outside:#?}", all.len());
    }

    #[test]
    fn an_interval_widens_with_distance_and_few_points_are_low_confidence() {
        let devices = Devices::built_in().unwrap();
        let phone = devices.get("iphone-18-pro").unwrap();
        let w = phone.reference_workload();
        let width = |preset: &str| {
            let s = crate::arch::presets::preset(preset).unwrap().shape;
            let p = crate::predict::predict(&s, &s.accounting(), phone.model(), &w);
            let b = bounds(phone, &s, &w, &p, None);
            assert!(b.low_confidence, "two points are few");
            b.decode_tok_s[1] / b.decode_tok_s[0]
        };
        assert!(width("qwen3-1.7b") > width("mnn-pocket-0.3b") * 1.05);
        let host = devices.get("host").unwrap();
        let s = crate::arch::presets::preset("qwen3-0.6b").unwrap().shape;
        let p = crate::predict::predict(&s, &s.accounting(), host.model(), &w);
        assert!(!bounds(host, &s, &w, &p, None).low_confidence);
    }
}
