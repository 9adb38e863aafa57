//! A sweep's measurements held against their own predictions, per device:
//! how far the predictions were off (the residuals), whether that makes the
//! device's other predictions suspect, and which budget every measured
//! configuration fails although its prediction passed it. A pure function
//! of the records, so every export computes it alike.

use serde::{Deserialize, Serialize};

use crate::budget::Status;
use crate::record::{Provenance, Record};

/// Decode predictions off by more than this (median over the measured
/// configurations) make the device's other predictions suspect. It is the
/// leave-one-out decode goal the project holds its fits to: a fit within it
/// carries to the unmeasured configurations, one beyond it does not.
pub const DECODE_TOLERANCE: f64 = 0.15;

/// A device's measurements against their predictions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Configurations measured on the device.
    pub measured: usize,
    /// The decode prediction's error against the measurement, predicted /
    /// measured - 1: the median, lowest and highest over them.
    pub decode_error: [f64; 3],
    /// The same for peak memory.
    pub memory_error: [f64; 3],
    /// The tolerance `suspect` is judged against ([`DECODE_TOLERANCE`]).
    pub tolerance: f64,
    /// The median decode error is beyond the tolerance: the device's
    /// predicted figures (and verdicts) do not hold here.
    pub suspect: bool,
    /// Budgets (`decode`, `memory`, `energy`) every measured configuration
    /// fails although its prediction passed them.
    pub contradicted: Vec<String>,
}

impl Agreement {
    /// One line for people: the residuals, and what they mean.
    pub fn describe(&self) -> String {
        let pct = |[m, lo, hi]: [f64; 3]| {
            if self.measured > 1 {
                format!("{:+.0}% (median; {:+.0}% to {:+.0}%)", m * 100.0, lo * 100.0, hi * 100.0)
            } else {
                format!("{:+.0}%", m * 100.0)
            }
        };
        let verdict = if self.suspect {
            format!("beyond ±{:.0}%: this device's predictions are suspect", self.tolerance * 100.0)
        } else {
            format!("within ±{:.0}%", self.tolerance * 100.0)
        };
        format!(
            "{} measured: decode predicted {}, peak memory {}; {verdict}",
            self.measured,
            pct(self.decode_error),
            pct(self.memory_error)
        )
    }

    /// Whether the device's predicted figures are to be marked as suspect:
    /// its measurements are beyond the tolerance, or contradict a verdict.
    pub fn doubts_predictions(&self) -> bool {
        self.suspect || !self.contradicted.is_empty()
    }

    /// The contradiction, said first on a card, where there is one.
    pub fn contradiction(&self) -> Option<String> {
        (!self.contradicted.is_empty()).then(|| {
            format!(
                "every measured configuration ({}) fails the {} budget its prediction passed: the predicted verdicts here do not hold",
                self.measured,
                self.contradicted.join(" and ")
            )
        })
    }
}

fn spread(mut v: Vec<f64>) -> [f64; 3] {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    [median, v[0], v[n - 1]]
}

/// A device's budget limits, as its summary states them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Decode, tok/s (at least).
    pub decode_tok_s: f64,
    /// Peak memory increase, MB (at most).
    pub memory_mb: f64,
    /// Energy, J a run (at most), where the device has a battery.
    pub energy_j: Option<f64>,
}

/// How `device`'s measured records (among `records`) agree with their
/// predictions, judged against its `limits`; `None` when nothing was
/// measured on it.
pub fn of(device: &str, limits: Limits, records: &[Record]) -> Option<Agreement> {
    let measured: Vec<(&Record, &crate::record::Predicted)> = records
        .iter()
        .filter(|r| r.device == device && r.provenance == Provenance::Measured)
        .filter_map(|r| r.measurement.as_ref().map(|m| (r, &m.predicted)))
        .filter(|(r, _)| r.decode_tok_s > 0.0 && r.peak_mem_increase_mb > 0.0)
        .collect();
    if measured.is_empty() {
        return None;
    }
    let err = |p: f64, m: f64| p / m - 1.0;
    let decode_error = spread(measured.iter().map(|(r, p)| err(p.decode_tok_s, r.decode_tok_s)).collect());
    let memory_error =
        spread(measured.iter().map(|(r, p)| err(p.peak_mem_increase_mb, r.peak_mem_increase_mb)).collect());
    let passed = |p: &crate::record::Predicted, budget: &str| match budget {
        "decode" => p.decode_tok_s >= limits.decode_tok_s,
        "memory" => p.peak_mem_increase_mb <= limits.memory_mb,
        _ => limits.energy_j.is_some_and(|e| p.energy_j_per_run <= e),
    };
    let failed = |r: &Record, budget: &str| {
        let v = match budget {
            "decode" => &r.budgets.decode,
            "memory" => &r.budgets.memory,
            _ => &r.budgets.energy,
        };
        // An energy that was not measured is the prediction: no contradiction.
        let measured_energy = budget != "energy" || r.provenance_label() == "measured";
        v.status == Status::Fail && measured_energy
    };
    let contradicted = ["decode", "memory", "energy"]
        .into_iter()
        .filter(|b| measured.iter().all(|(r, p)| failed(r, b) && passed(p, b)))
        .map(str::to_string)
        .collect();
    Some(Agreement {
        measured: measured.len(),
        decode_error,
        memory_error,
        tolerance: DECODE_TOLERANCE,
        suspect: decode_error[0].abs() > DECODE_TOLERANCE,
        contradicted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured record at `decode` tok/s, predicted at `predicted`,
    /// judged against a decode budget of 200 tok/s.
    fn measured(decode: f64, predicted: f64) -> Record {
        let mut r = crate::testing::measured_record(2, 16, 8, &[decode, decode, decode]);
        r.budgets.decode.status = if decode >= 200.0 { Status::Pass } else { Status::Fail };
        let m = r.measurement.as_mut().unwrap();
        m.predicted.decode_tok_s = predicted;
        m.predicted.peak_mem_increase_mb = r.peak_mem_increase_mb;
        r
    }

    fn summary(budget: f64) -> Limits {
        Limits { decode_tok_s: budget, memory_mb: 1e6, energy_j: None }
    }

    #[test]
    fn residuals_within_the_tolerance_leave_the_predictions_standing() {
        let recs = [measured(100.0, 110.0), measured(100.0, 95.0), measured(100.0, 104.0)];
        let a = of("host", summary(200.0), &recs).unwrap();
        assert_eq!(a.measured, 3);
        assert!((a.decode_error[0] - 0.04).abs() < 1e-9 && (a.decode_error[1] + 0.05).abs() < 1e-9);
        // They fail the budget, but so did their predictions: no contradiction.
        assert!(!a.suspect && a.contradicted.is_empty(), "{a:?}");
        assert!(a.describe().contains("within ±15%"), "{}", a.describe());
    }

    #[test]
    fn measurements_far_below_their_predictions_make_the_device_suspect_and_contradict_its_verdicts() {
        // The busy-machine case: predicted ~205 tok/s, measured ~65, budget 200.
        let recs = [measured(63.0, 204.0), measured(68.0, 210.0), measured(65.0, 206.0)];
        let a = of("host", summary(200.0), &recs).unwrap();
        assert!(a.suspect && a.decode_error[0] > 2.0, "{a:?}");
        assert_eq!(a.contradicted, ["decode"]);
        assert!(a.contradiction().unwrap().contains("fails the decode budget its prediction passed"));
        // One measurement passing its budget: no longer every one fails.
        let recs = [measured(63.0, 204.0), measured(230.0, 210.0)];
        assert!(of("host", summary(200.0), &recs).unwrap().contradicted.is_empty());
        // Nothing measured: nothing to hold.
        assert!(of("host", summary(200.0), &[]).is_none());
    }
}
