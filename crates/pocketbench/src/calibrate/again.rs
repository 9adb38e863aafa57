//! A calibration against the one it replaces: how far the held-out shapes'
//! predicted decode moved (issue 41: two calibrations in a row should
//! predict a held-out shape within 5% of each other). Each profile predicts
//! at its own bandwidth fact, as `predict` would; and both at the new fact,
//! which takes the machine's bandwidth out and leaves the fit's own
//! repeatability.

use serde::Serialize;

use crate::arch::Shape;
use crate::device::DeviceModel;
use crate::predict::predict;
use crate::workload::Workload;

/// How far predictions moved between two calibrations of one machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Again {
    /// Held-out (shape, workload) pairs compared.
    pub predictions: usize,
    /// Median |new / old - 1| of predicted decode, each at its own fact.
    pub median_moved: f64,
    /// Largest such move.
    pub worst_moved: f64,
    /// Median move with both at the new calibration's bandwidth.
    pub median_moved_same_bandwidth: f64,
    /// Largest such move.
    pub worst_moved_same_bandwidth: f64,
    /// The replaced profile's bandwidth fact, B/s.
    pub previous_bandwidth: f64,
    /// The new one's, B/s.
    pub bandwidth: f64,
}

/// The share two calibrations in a row should agree within.
pub const AGAIN_TOLERANCE: f64 = 0.05;

/// Compare `old` and `new` (two fits of one machine) on `held`; `None`
/// without anything to compare.
pub fn compare(old: &DeviceModel, new: &DeviceModel, held: &[(Shape, Workload)]) -> Option<Again> {
    if held.is_empty() {
        return None;
    }
    let moved = |a: &DeviceModel, b: &DeviceModel| -> Vec<f64> {
        held.iter()
            .map(|(s, w)| {
                let acct = s.accounting();
                (predict(s, &acct, b, w).decode_tok_s / predict(s, &acct, a, w).decode_tok_s - 1.0).abs()
            })
            .collect()
    };
    let own = moved(old, new);
    let same = moved(&DeviceModel { bandwidth: new.bandwidth, ..*old }, new);
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    Some(Again {
        predictions: held.len(),
        median_moved: crate::stats::median(&own),
        worst_moved: worst(&own),
        median_moved_same_bandwidth: crate::stats::median(&same),
        worst_moved_same_bandwidth: worst(&same),
        previous_bandwidth: old.bandwidth,
        bandwidth: new.bandwidth,
    })
}

impl Again {
    /// One line for the terminal.
    pub fn line(&self) -> String {
        format!(
            "against the calibration it replaces: held-out decode predictions moved a median {:.1}% (worst {:.1}%) with each at its own bandwidth fact ({:.1} -> {:.1} GB/s), {:.1}% (worst {:.1}%) at the same bandwidth; {} the {:.0}% two calibrations in a row should keep to",
            self.median_moved * 100.0,
            self.worst_moved * 100.0,
            self.previous_bandwidth / 1e9,
            self.bandwidth / 1e9,
            self.median_moved_same_bandwidth * 100.0,
            self.worst_moved_same_bandwidth * 100.0,
            if self.worst_moved <= AGAIN_TOLERANCE { "within" } else { "outside" },
            AGAIN_TOLERANCE * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_fit_at_another_bandwidth_moves_only_with_the_bandwidth() {
        let d = crate::device::Devices::built_in().unwrap();
        let old = *d.get("host").unwrap().model();
        let new = DeviceModel { bandwidth: old.bandwidth * 1.2, ..old };
        let s = crate::arch::presets::preset("mnn-pocket-0.3b").unwrap().shape;
        let w = Workload::new(1024, 128, None).unwrap();
        let a = compare(&old, &new, &[(s, w)]).unwrap();
        assert!(a.median_moved > 0.05, "{a:?}");
        assert!(a.worst_moved_same_bandwidth < 1e-12, "{a:?}");
        assert!(a.line().contains("; outside the 5% two calibrations"), "{}", a.line());
        assert_eq!(compare(&old, &old, &[(s, w)]).unwrap().worst_moved, 0.0);
        assert_eq!(compare(&old, &new, &[]), None);
    }
}
