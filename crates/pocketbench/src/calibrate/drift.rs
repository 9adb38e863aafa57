//! How far the machine itself has moved since it was calibrated: a check
//! measures again some jobs the profile was fitted to (the built-in check
//! takes two of the designs' fitted shapes at both workloads), and their
//! decode now against then is the machine's drift, not the model's error.
//!
//! On the Zen 4 VM the same shape at the same workload, the fastest of five
//! rounds each time, decoded at 173 tok/s in a calibration and 142 in the
//! check two minutes later: a check that cannot tell that from a wrong
//! prediction blames the model for the machine.

use serde::Serialize;

use super::residuals::{Accuracy, Residual};
use crate::device::{CalPoint, Device};

/// A job of a check that the profile holds a fitted point of, measured
/// again: the same shape (its context aside), workload, machine, threads
/// and engine build.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// The configuration.
    pub model: String,
    /// Its workload, e.g. "1024+128".
    pub workload: String,
    /// Decode tok/s of the profile's point (when calibrated).
    pub then: f64,
    /// Decode tok/s measured by the check.
    pub now: f64,
    /// now / then - 1.
    pub change: f64,
}

/// The drifts of a check and what its decode accuracy would be had the
/// machine not moved: each prediction scaled by the median change. A
/// diagnostic beside the accuracy, never instead of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftSummary {
    /// Every re-measured job.
    pub jobs: Vec<Drift>,
    /// Their median change (now / then - 1).
    pub median_change: f64,
    /// The check's decode residuals with each prediction times
    /// (1 + median change); `None` without decode residuals.
    pub adjusted_decode: Option<Accuracy>,
}

/// The decode tok/s of the profile's fitted point of the same job as
/// `new`, when the profile has one measured on the same machine, at the
/// same threads, through the same engine build.
fn fitted_twin(device: &Device, first: usize, new: &CalPoint) -> Option<f64> {
    let bare = |p: &CalPoint| crate::arch::Shape { context: 0, ..p.shape };
    device.points().iter().take(first).filter(|old| !old.holdout).find_map(|old| {
        let same = old.machine.is_some()
            && bare(old) == bare(new)
            && (old.workload.prompt, old.workload.gen) == (new.workload.prompt, new.workload.gen)
            && (&old.machine, old.threads, &old.engine_build) == (&new.machine, new.threads, &new.engine_build);
        old.decode_tok_s.filter(|_| same)
    })
}

/// Split `with`'s points after `first` (a check's measurements added to
/// the profile) into drifts, for those the profile was fitted to, and the
/// indices of the rest, which the check compares with predictions.
pub(super) fn split(device: &Device, with: &Device, first: usize) -> (Vec<Drift>, Vec<usize>) {
    let (mut drifts, mut checked) = (Vec::new(), Vec::new());
    for new in with.points().iter().skip(first) {
        match (fitted_twin(device, first, new), new.decode_tok_s) {
            (Some(then), Some(now)) => {
                drifts.push(Drift {
                    model: new.label.clone(),
                    workload: format!("{}+{}", new.workload.prompt, new.workload.gen),
                    then,
                    now,
                    change: now / then - 1.0,
                });
            }
            _ => checked.push(new.index),
        }
    }
    (drifts, checked)
}

/// The summary of `drifts` against the check's `residuals`; `None` when
/// the check measured no job again.
pub fn summarize(drifts: Vec<Drift>, residuals: &[Residual], tolerance: f64) -> Option<DriftSummary> {
    if drifts.is_empty() {
        return None;
    }
    let median_change = crate::stats::median(&drifts.iter().map(|d| d.change).collect::<Vec<_>>());
    let adjusted: Vec<Residual> = residuals
        .iter()
        .filter(|r| r.metric == "decode")
        .map(|r| {
            let predicted = r.predicted * (1.0 + median_change);
            Residual { predicted, rel_error: predicted / r.measured - 1.0, ..r.clone() }
        })
        .collect();
    Some(DriftSummary {
        jobs: drifts,
        median_change,
        adjusted_decode: super::residuals::accuracy(&adjusted, "decode", tolerance),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn residual(measured: f64, predicted: f64) -> Residual {
        Residual {
            point: 0,
            model: "m".into(),
            workload: "1+128".into(),
            metric: "decode",
            unit: "tok/s",
            measured,
            predicted,
            rel_error: predicted / measured - 1.0,
            source: String::new(),
            holdout: true,
        }
    }

    fn drift(then: f64, now: f64) -> Drift {
        Drift { model: "a".into(), workload: "1+128".into(), then, now, change: now / then - 1.0 }
    }

    #[test]
    fn the_adjusted_accuracy_scales_predictions_by_the_median_change() {
        // The machine runs 20% slower than when calibrated; predictions made
        // then are 25% too fast now, and right once scaled.
        let drifts = vec![drift(100.0, 80.0), drift(200.0, 160.0), drift(50.0, 45.0)];
        let residuals = [residual(80.0, 100.0), residual(160.0, 200.0)];
        let s = summarize(drifts, &residuals, 0.10).unwrap();
        assert!((s.median_change + 0.2).abs() < 1e-12);
        let a = s.adjusted_decode.unwrap();
        assert_eq!((a.points, a.within), (2, 2));
        assert!(a.worst_abs_error < 1e-12);
        assert!(summarize(Vec::new(), &residuals, 0.10).is_none());
    }
}
