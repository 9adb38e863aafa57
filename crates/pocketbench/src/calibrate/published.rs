//! What a device's published points cover (issue 44, item 1): how many,
//! over how many model sizes in the sweep's range, how many give prefill
//! and decode both, against the goal of six points over three sizes. The
//! profile says where fewer exist; this counts them, so the statement
//! cannot go stale.

use serde::Serialize;

use crate::device::{CalPoint, Device};

/// At least this many published points per target (issue 44).
pub const GOAL_POINTS: usize = 6;
/// Covering at least this many model sizes.
pub const GOAL_SIZES: usize = 3;
/// Sizes counted: between 0.1B and 2B parameters.
pub const SIZE_RANGE: [f64; 2] = [0.1e9, 2.0e9];

/// A device's published points, counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Published points, every engine class, fitted or held out.
    pub points: usize,
    /// Of them, with prefill and decode both.
    pub with_prefill_and_decode: usize,
    /// Distinct model sizes (parameter counts) between 0.1B and 2B among
    /// the points with prefill and decode.
    pub sizes: usize,
    /// Of them, on this device's own chip (not the nearest one).
    pub own_chip: usize,
    /// The goal of six points over three sizes is met.
    pub goal_met: bool,
}

impl Coverage {
    /// One line for `devices show` and `calibrate --check`.
    pub fn describe(&self) -> String {
        format!(
            "{} published point(s), {} with prefill and decode over {} model size(s) in 0.1-2B, {} on this chip: {}",
            self.points,
            self.with_prefill_and_decode,
            self.sizes,
            self.own_chip,
            if self.goal_met {
                "meets the goal of 6 over 3 sizes".to_string()
            } else {
                format!("below the goal of {GOAL_POINTS} over {GOAL_SIZES} sizes (no more were found published)")
            }
        )
    }
}

/// Count `device`'s published points.
pub fn coverage(device: &Device) -> Coverage {
    let all: Vec<&CalPoint> = device.points().iter().chain(device.class_points()).filter(|p| p.published()).collect();
    let both: Vec<&CalPoint> =
        all.iter().copied().filter(|p| p.prefill_tok_s.is_some() && p.decode_tok_s.is_some()).collect();
    let mut sizes: Vec<u64> = both
        .iter()
        .map(|p| p.shape.accounting().params_total)
        .filter(|n| (SIZE_RANGE[0]..=SIZE_RANGE[1]).contains(&(*n as f64)))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let own_chip = all
        .iter()
        .filter(|p| p.ran_on.as_ref().is_none_or(|r| r.relation == crate::device::ChipRelation::SameChip))
        .count();
    Coverage {
        points: all.len(),
        with_prefill_and_decode: both.len(),
        sizes: sizes.len(),
        own_chip,
        goal_met: both.len() >= GOAL_POINTS && sizes.len() >= GOAL_SIZES,
    }
}
