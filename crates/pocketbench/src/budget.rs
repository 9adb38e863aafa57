//! Budget verdicts: each metric against its limit, with the margin.

use serde::{Deserialize, Serialize};

use crate::device::Budgets;

/// Outcome of one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Within the limit.
    Pass,
    /// Over the limit.
    Fail,
    /// The device has no such limit (no battery, for energy).
    NotApplicable,
}

/// One metric against one limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Pass, fail or not applicable.
    pub status: Status,
    /// The value judged.
    pub value: f64,
    /// The limit; absent when not applicable.
    pub limit: Option<f64>,
    /// Relative headroom: positive passes, negative fails (0.1 = 10% to spare).
    pub margin: Option<f64>,
    /// For a predicted value with a range (energy): whether the whole range
    /// falls on the side of the limit the value does. Absent for measured
    /// values and for values without a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certainty: Option<Certainty>,
}

/// How sure a verdict on a predicted value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Certainty {
    /// The whole predicted range passes, or the whole range fails.
    Sure,
    /// The limit lies inside the predicted range: the verdict is the point
    /// prediction's, and the range's other end would reverse it.
    Uncertain,
}

impl Certainty {
    /// The word used in tables and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Certainty::Sure => "sure",
            Certainty::Uncertain => "uncertain",
        }
    }
}

impl Verdict {
    /// This "at most" verdict with the certainty that the range `[lo, hi]`
    /// of its value allows (no change where it has no limit).
    pub fn with_range(mut self, [lo, hi]: [f64; 2]) -> Verdict {
        if let Some(limit) = self.limit {
            let sure = (hi <= limit) == (lo <= limit);
            self.certainty = Some(if sure { Certainty::Sure } else { Certainty::Uncertain });
        }
        self
    }
}

/// The three budgets of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Verdicts {
    /// Decode tok/s must be at least the limit.
    pub decode: Verdict,
    /// Peak memory increase (MB) must be at most the limit.
    pub memory: Verdict,
    /// Energy per run (J) must be at most the limit.
    pub energy: Verdict,
}

impl Verdicts {
    /// Every applicable budget passes.
    pub fn feasible(&self) -> bool {
        [self.decode, self.memory, self.energy].iter().all(|v| v.status != Status::Fail)
    }

    /// Names of failing budgets.
    pub fn failing(&self) -> Vec<&'static str> {
        [("decode", self.decode), ("memory", self.memory), ("energy", self.energy)]
            .iter()
            .filter(|(_, v)| v.status == Status::Fail)
            .map(|(n, _)| *n)
            .collect()
    }
}

/// `value` must be at least `limit`.
pub fn at_least(value: f64, limit: f64) -> Verdict {
    let margin = value / limit - 1.0;
    Verdict {
        status: if value >= limit { Status::Pass } else { Status::Fail },
        value,
        limit: Some(limit),
        margin: Some(margin),
        certainty: None,
    }
}

/// `value` must be at most `limit` (none: not applicable).
pub fn at_most(value: f64, limit: Option<f64>) -> Verdict {
    match limit {
        None => Verdict { status: Status::NotApplicable, value, limit: None, margin: None, certainty: None },
        Some(limit) => Verdict {
            status: if value <= limit { Status::Pass } else { Status::Fail },
            value,
            limit: Some(limit),
            margin: Some(1.0 - value / limit),
            certainty: None,
        },
    }
}

/// Judge decode tok/s, peak memory (bytes) and energy (J). Values and limits
/// are reported in tok/s, MB and J.
pub fn judge(decode_tok_s: f64, peak_mem_bytes: f64, energy_j: f64, b: &Budgets) -> Verdicts {
    Verdicts {
        decode: at_least(decode_tok_s, b.decode_tok_s),
        memory: at_most(peak_mem_bytes / 1e6, Some(b.memory_bytes / 1e6)),
        energy: at_most(energy_j, b.energy_j),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_and_statuses() {
        let b = Budgets { decode_tok_s: 200.0, memory_bytes: 300e6, energy_j: Some(8.4) };
        let v = judge(250.0, 330e6, 2.7, &b);
        assert_eq!(v.decode.status, Status::Pass);
        assert!((v.decode.margin.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(v.memory.status, Status::Fail);
        assert!((v.memory.margin.unwrap() + 0.1).abs() < 1e-12);
        assert_eq!(v.failing(), vec!["memory"]);
        assert!(!v.feasible());
        let none = Budgets { energy_j: None, ..b };
        let v = judge(250.0, 200e6, 99.0, &none);
        assert_eq!(v.energy.status, Status::NotApplicable);
        assert!(v.feasible());
    }

    #[test]
    fn a_range_across_the_limit_is_uncertain() {
        let v = at_most(5.0, Some(8.4));
        assert_eq!(v.with_range([4.0, 7.0]).certainty, Some(Certainty::Sure));
        assert_eq!(v.with_range([4.0, 9.0]).certainty, Some(Certainty::Uncertain));
        let over = at_most(9.0, Some(8.4));
        assert_eq!(over.with_range([8.5, 12.0]).certainty, Some(Certainty::Sure));
        assert_eq!(over.with_range([8.0, 12.0]).certainty, Some(Certainty::Uncertain));
        assert_eq!(at_most(9.0, None).with_range([1.0, 20.0]).certainty, None);
    }
}
