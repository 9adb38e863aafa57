//! How a fit stands against measurements: every figure's residual, a
//! check of a profile against points it was not fitted to, and the
//! summaries printed beside them (how many lie within a tolerance, and how
//! far the machine's own rounds lay apart).

use serde::Serialize;

use crate::device::{CalPoint, Device, DeviceModel};
use crate::predict::{predict, Prediction};

/// One measured figure against its prediction after the fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Residual {
    /// Point index in the profile.
    pub point: usize,
    /// The configuration.
    pub model: String,
    /// Its workload, e.g. "512+128".
    pub workload: String,
    /// decode, prefill, peak-memory, package or energy.
    pub metric: &'static str,
    /// Unit of the two values.
    pub unit: &'static str,
    /// What was measured or published.
    pub measured: f64,
    /// What the fitted model predicts.
    pub predicted: f64,
    /// predicted / measured − 1.
    pub rel_error: f64,
    /// The point's source.
    pub source: String,
    /// The point was held out of the fit.
    pub holdout: bool,
}

/// The figures a point carries: (metric, unit, its value in base units,
/// the unit's scale), in the order every table shows them.
pub(super) fn figures(pt: &CalPoint) -> [(&'static str, &'static str, Option<f64>, f64); 5] {
    [
        ("decode", "tok/s", pt.decode_tok_s, 1.0),
        ("prefill", "tok/s", pt.prefill_tok_s, 1.0),
        ("peak-memory", "MB", pt.peak_memory, 1e6),
        ("package", "MB", pt.package, 1e6),
        ("energy", "J", pt.energy_j, 1.0),
    ]
}

/// A point's workload as tables show it: "1024+128", or "not stated"
/// where its source leaves the prompt or generation length unsaid (it is
/// then predicted at the profile's reference workload, and held out).
pub(super) fn workload_label(pt: &CalPoint) -> String {
    use crate::device::Unstated;
    if pt.unstated.iter().any(|u| matches!(u, Unstated::Prompt | Unstated::Gen)) {
        "not stated".into()
    } else {
        format!("{}+{}", pt.workload.prompt, pt.workload.gen)
    }
}

/// What `p` predicts for the figure `metric` of [`figures`], in base units.
pub(super) fn predicted_figure(p: &Prediction, metric: &str) -> f64 {
    match metric {
        "decode" => p.decode_tok_s,
        "prefill" => p.prefill_tok_s,
        "peak-memory" => p.peak_mem_bytes,
        "package" => p.package_bytes,
        _ => p.energy_j,
    }
}

/// Residuals of every point's figures under `model`, each point predicted
/// at the bandwidth it was measured at where it carries one.
pub fn residuals(device: &Device, model: &DeviceModel) -> Vec<Residual> {
    let mut out = Vec::new();
    for pt in device.points() {
        let p = predict(&pt.shape, &pt.shape.accounting(), &super::at_moment(pt, model), &pt.workload);
        for (metric, unit, measured, scale) in figures(pt) {
            if let Some(m) = measured {
                let predicted = predicted_figure(&p, metric);
                out.push(Residual {
                    point: pt.index,
                    model: pt.label.clone(),
                    workload: workload_label(pt),
                    metric,
                    unit,
                    measured: m / scale,
                    predicted: predicted / scale,
                    rel_error: predicted / m - 1.0,
                    source: pt.source.clone(),
                    holdout: pt.holdout,
                });
            }
        }
    }
    out
}

/// How many of `residuals` of `metric` lie within `tolerance` (a fraction),
/// of how many; their mean and worst |error|. `None` without any.
pub fn accuracy(residuals: &[Residual], metric: &str, tolerance: f64) -> Option<Accuracy> {
    let errs: Vec<f64> = residuals.iter().filter(|r| r.metric == metric).map(|r| r.rel_error.abs()).collect();
    (!errs.is_empty()).then(|| Accuracy {
        metric: metric.to_string(),
        points: errs.len(),
        tolerance,
        within: errs.iter().filter(|e| **e <= tolerance).count(),
        mean_abs_error: errs.iter().sum::<f64>() / errs.len() as f64,
        worst_abs_error: errs.iter().copied().fold(0.0, f64::max),
    })
}

/// A check's summary of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// decode, prefill or peak-memory.
    pub metric: String,
    /// Residuals of the metric.
    pub points: usize,
    /// The tolerance counted against (a fraction: 0.10 is 10%).
    pub tolerance: f64,
    /// Of them, within the tolerance.
    pub within: usize,
    /// Mean |predicted / measured - 1|.
    pub mean_abs_error: f64,
    /// Worst |predicted / measured - 1|.
    pub worst_abs_error: f64,
}

/// How well this machine repeats itself: the decode spreads of a
/// calibration's or check's jobs ([`super::session::Measured::decode_spreads`])
/// against a tolerance. Where many jobs' own rounds lie further apart than
/// the tolerance, no prediction can be shown to be within it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeatability {
    /// Jobs measured in two rounds or more.
    pub jobs: usize,
    /// The tolerance compared against (a fraction: 0.10 is 10%).
    pub tolerance: f64,
    /// Of them, jobs whose rounds lay further apart than the tolerance.
    pub wider: usize,
    /// Median (fastest - slowest) / fastest over the jobs.
    pub median_spread: f64,
    /// Largest (fastest - slowest) / fastest.
    pub worst_spread: f64,
    /// Of them, jobs whose two halves (the fastest median of its odd
    /// rounds and of its even rounds, [`super::session::halves`]: with two
    /// rounds, two processes minutes apart) lie within
    /// [`Repeatability::split_half_tolerance`] of each other: the share of
    /// its own jobs the machine reproduces, a ceiling any check of as many
    /// rounds is unlikely to beat.
    pub halves_agree: usize,
    /// Of them, jobs whose halves were compared at one bandwidth
    /// ([`super::session::Half::at_bandwidth`]); the others as measured.
    pub halves_at_bandwidth: usize,
    /// Jobs whose halves agree as measured, the machine's moves left in.
    pub halves_agree_raw: usize,
    /// How decode followed the bandwidth within the jobs, which took
    /// their halves to one bandwidth (none: they were compared as measured).
    pub elasticity: Option<crate::trust::Elasticity>,
    /// The split-half tolerance ([`SPLIT_HALF_TOLERANCE`]).
    pub split_half_tolerance: f64,
}

/// Two halves of a point's measurement agreeing within this fraction count
/// as repeatable (issue 41: 5% for at least 90% of the points).
pub const SPLIT_HALF_TOLERANCE: f64 = 0.05;

/// The [`Repeatability`] of `spreads` and `halves` (the same jobs'
/// [`super::session::Measured`] figures) against `tolerance`; `None` with no
/// job measured twice.
pub fn repeatability(
    spreads: &[f64],
    halves: &[super::session::Half],
    elasticity: Option<crate::trust::Elasticity>,
    tolerance: f64,
) -> Option<Repeatability> {
    (!spreads.is_empty()).then(|| Repeatability {
        jobs: spreads.len(),
        tolerance,
        wider: spreads.iter().filter(|s| **s > tolerance).count(),
        median_spread: crate::stats::median(spreads),
        worst_spread: spreads.iter().copied().fold(0.0, f64::max),
        halves_agree: halves.iter().filter(|h| h.judged() <= SPLIT_HALF_TOLERANCE).count(),
        halves_at_bandwidth: halves.iter().filter(|h| h.at_bandwidth.is_some()).count(),
        halves_agree_raw: halves.iter().filter(|h| h.raw <= SPLIT_HALF_TOLERANCE).count(),
        elasticity,
        split_half_tolerance: SPLIT_HALF_TOLERANCE,
    })
}
