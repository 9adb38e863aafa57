//! The gate's verdict as data: what `gate --json` writes and every other
//! output is rendered from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Described, Key, Metric, Settings};
use crate::budget;

/// The verdict of one configuration x device x metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// No significant change beyond the minimum effect.
    Pass,
    /// Significantly worse, beyond the minimum effect.
    Regression,
    /// Significantly better, beyond the minimum effect.
    Improvement,
    /// Too few samples to tell.
    Inconclusive,
    /// A side is invalid (device errors, no repetitions): not compared.
    Invalid,
    /// The device does not measure this metric (energy on a host with no
    /// meter, prefill of a one-token prompt): not compared.
    NotMeasured,
}

impl Status {
    /// Its name in `--json` and JUnit (`not-measured`).
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Regression => "regression",
            Status::Improvement => "improvement",
            Status::Inconclusive => "inconclusive",
            Status::Invalid => "invalid",
            Status::NotMeasured => "not-measured",
        }
    }
}

/// One side's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideFigures {
    /// The engine as the records name it, version and kernels included.
    pub engine: String,
    /// Samples.
    pub n: usize,
    /// Median; null without samples.
    pub median: Option<f64>,
}

/// The candidate's budget for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BudgetCheck {
    /// Pass, fail or not applicable.
    pub status: budget::Status,
    /// The value judged.
    pub value: f64,
    /// The limit.
    pub limit: Option<f64>,
    /// Relative headroom.
    pub margin: Option<f64>,
    /// Whether the judged value was measured (else predicted: energy on a
    /// device with no meter).
    pub measured: bool,
}

/// One configuration x device x metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What was matched.
    #[serde(flatten)]
    pub key: Key,
    /// Shape name.
    pub config_name: String,
    /// The metric's record field name.
    pub metric: Metric,
    /// Its unit.
    pub unit: String,
    /// The verdict.
    pub status: Status,
    /// One line saying why.
    pub reason: String,
    /// Baseline figures.
    pub baseline: SideFigures,
    /// Candidate figures.
    pub candidate: SideFigures,
    /// median(candidate) / median(baseline).
    pub ratio: Option<f64>,
    /// Lower end of the ratio's bootstrap interval.
    pub ratio_lo: Option<f64>,
    /// Upper end.
    pub ratio_hi: Option<f64>,
    /// One-sided Mann-Whitney p of a regression, before correction.
    pub p_regression: Option<f64>,
    /// Holm-corrected.
    pub p_regression_holm: Option<f64>,
    /// One-sided p of an improvement, before correction.
    pub p_improvement: Option<f64>,
    /// Holm-corrected.
    pub p_improvement_holm: Option<f64>,
    /// How it was decided: "mann-whitney exact", "mann-whitney normal",
    /// "single reading against the minimum effect".
    pub method: String,
    /// The minimum effect, relative (0.03), for this metric.
    pub min_effect: f64,
    /// The candidate's budget for this metric (none for prefill).
    pub budget: Option<BudgetCheck>,
    /// The smallest relative change this comparison could have caught with
    /// 80% power, from the noise its samples showed; a comparison that
    /// could not see `min_effect` is inconclusive (underpowered), not a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// The relative standard error of the two sides' difference
    /// ([`super::stats::relative_se`]), where both have samples enough.
    #[serde(skip)]
    pub se: Option<f64>,
}

impl Comparison {
    /// A comparison of `metric` not judged yet: status pass, no statistics.
    pub fn pending(key: Key, config_name: String, metric: Metric, sides: [SideFigures; 2], min_effect: f64) -> Self {
        let [baseline, candidate] = sides;
        Comparison {
            key,
            config_name,
            metric,
            unit: metric.unit().into(),
            status: Status::Pass,
            reason: String::new(),
            baseline,
            candidate,
            ratio: None,
            ratio_lo: None,
            ratio_hi: None,
            p_regression: None,
            p_regression_holm: None,
            p_improvement: None,
            p_improvement_holm: None,
            method: String::new(),
            min_effect,
            budget: None,
            detectable: None,
            se: None,
        }
    }

    /// Why a comparison stands as it does: the failure line of a failing one,
    /// else its reason.
    pub fn why(&self) -> String {
        if self.fails() {
            self.failure_line()
        } else {
            self.reason.clone()
        }
    }

    /// The one-line reason a failing comparison fails.
    pub fn failure_line(&self) -> String {
        let mut parts = Vec::new();
        if self.status == Status::Regression {
            parts.push(self.reason.clone());
        }
        if let Some(b) = self.budget.filter(|_| self.budget_failed()) {
            parts.push(format!(
                "budget broken: {} {:.1} {} against a limit of {} ({}{})",
                self.metric.name(),
                b.value,
                self.unit,
                b.limit.map_or_else(|| "none".into(), |l| format!("{l:.1}")),
                b.margin.map_or_else(String::new, |m| format!("{:+.1}% margin", m * 100.0)),
                if b.measured { "" } else { ", a predicted figure" },
            ));
        }
        parts.join("; ")
    }

    /// Whether this comparison fails the gate: a regression or a broken budget.
    pub fn fails(&self) -> bool {
        self.status == Status::Regression || self.budget_failed()
    }

    /// Whether the candidate broke the budget.
    pub fn budget_failed(&self) -> bool {
        self.budget.is_some_and(|b| b.status == budget::Status::Fail)
    }

    /// Where it stands in a listing: failures first, then improvements, then
    /// the undecided (inconclusive, invalid), the passes, and what was not
    /// measured last.
    pub fn rank(&self) -> u8 {
        match (self.fails(), self.status) {
            (true, _) => 0,
            (_, Status::Improvement) => 1,
            (_, Status::Inconclusive | Status::Invalid) => 2,
            (_, Status::NotMeasured) => 4,
            _ => 3,
        }
    }
}

/// The gate's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Nothing regressed, every budget held, every comparison conclusive.
    Pass,
    /// Nothing failed, but some comparisons were inconclusive or invalid.
    Inconclusive,
    /// A regression or a broken budget.
    Fail,
}

impl Outcome {
    /// Its name in `--json` and JUnit.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Fail => "fail",
        }
    }
}

/// A result present on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmatched {
    /// What it is.
    #[serde(flatten)]
    pub key: Key,
    /// Shape name.
    pub config_name: String,
}

/// Counts by status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Comparisons in all.
    pub comparisons: usize,
    /// By status (kebab-case names).
    pub by_status: BTreeMap<String, usize>,
    /// Comparisons whose candidate broke a budget.
    pub budget_failures: usize,
}

/// The full verdict (`gate --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `pocketbench <version>`.
    pub tool: String,
    /// Pass, inconclusive or fail.
    pub outcome: Outcome,
    /// Settings used.
    pub settings: Settings,
    /// Where the baseline came from.
    pub baseline: Described,
    /// Where the candidate came from.
    pub candidate: Described,
    /// Counts.
    pub counts: Counts,
    /// Every comparison, in key and metric order.
    pub comparisons: Vec<Comparison>,
    /// Measured on the baseline side only.
    pub only_in_baseline: Vec<Unmatched>,
    /// Measured on the candidate side only.
    pub only_in_candidate: Vec<Unmatched>,
    /// Where the two sides' protocols differ (compared only with
    /// `--allow-protocol-mismatch`; the engine's build is not a difference).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol_differences: Vec<crate::protocol::Difference>,
}
