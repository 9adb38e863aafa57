//! Keeping a calibration within its time budget (`--quick`: 3 minutes on
//! 2 cores, issue 41 item 5). Each job's cost is what it took when last
//! measured as designed, and until then what the profile predicts its
//! repetitions take, scaled by how the jobs measured so far compared with
//! their own predictions (a slow stretch of the machine, a prior from
//! another machine). A job whose turn comes when the time spent and what
//! the rest would cost exceed the budget is measured shortened: one
//! repetition at the least, none retaken. A shortened round is counted
//! and said on its point.

use std::collections::HashMap;
use std::time::Duration;

use crate::runner::Job;
use crate::schedule::Policy;

/// What a probe costs beyond its repetitions (start, model build, warm-up,
/// passes): about half a second for the quick design's shapes on the Zen 4
/// VM. Only a first guess; measured costs replace it.
const PROBE_OVERHEAD_S: f64 = 0.5;

/// The pace of one calibration.
#[derive(Debug, Clone, Default)]
pub struct Pace {
    budget: Option<f64>,
    /// Seconds each job (by cache key) took when last measured as designed.
    cost: HashMap<String, f64>,
    /// Seconds each job is predicted to take as designed.
    predicted: HashMap<String, f64>,
    /// Rounds shortened, by job.
    pub shortened: HashMap<String, u32>,
}

impl Pace {
    /// A pace for `budget` (none: never shortened).
    pub fn new(budget: Option<Duration>) -> Pace {
        Pace { budget: budget.map(|b| b.as_secs_f64()), ..Pace::default() }
    }

    /// `key` is predicted to take `seconds` as designed.
    pub fn predict(&mut self, key: &str, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.predicted.insert(key.to_string(), seconds);
        }
    }

    /// How much longer than predicted the jobs measured as designed took
    /// (1 before any).
    fn scale(&self) -> f64 {
        let (took, said) = self
            .cost
            .iter()
            .filter_map(|(k, c)| self.predicted.get(k).map(|p| (*c, *p)))
            .fold((0.0, 0.0), |(a, b), (c, p)| (a + c, b + p));
        if said > 0.0 {
            took / said
        } else {
            1.0
        }
    }

    /// Whether the next job must be shortened, `elapsed` seconds in, with
    /// `rest` (its own key first) still to measure: what they would cost
    /// as designed takes the calibration past its budget.
    pub fn behind<'a>(&self, elapsed: f64, rest: impl IntoIterator<Item = &'a String>) -> bool {
        let Some(budget) = self.budget else { return false };
        let scale = self.scale();
        let rest: f64 = rest
            .into_iter()
            .filter_map(|k| self.cost.get(k).copied().or_else(|| self.predicted.get(k).map(|p| p * scale)))
            .sum();
        elapsed + rest > budget
    }

    /// `key` took `seconds`, shortened or as designed.
    pub fn took(&mut self, key: &str, seconds: f64, shortened: bool) {
        if shortened {
            *self.shortened.entry(key.to_string()).or_default() += 1;
        } else {
            self.cost.insert(key.to_string(), seconds);
        }
    }

    /// Rounds shortened in all.
    pub fn total_shortened(&self) -> u32 {
        self.shortened.values().sum()
    }
}

/// The seconds `job` is predicted to take as designed on a device whose
/// prediction for it is `p`: its fewest repetitions, or up to its time cap
/// and repetition cap where repetitions are short, and a probe's overhead.
pub fn predicted_seconds(job: &Job, p: &crate::predict::Prediction) -> f64 {
    let rep = p.prefill_s + p.decode_s;
    let reps = f64::from(job.reps.max(1));
    let timed = match job.auto {
        Some(a) => (reps * rep).max((a.max_seconds + rep).min(f64::from(a.max_reps) * rep)),
        None => reps * rep,
    };
    timed + PROBE_OVERHEAD_S
}

/// `job` shortened: one repetition at the least (its time cap still
/// stops it; the point's other rounds give it more).
pub fn shortened(job: &Job) -> Job {
    Job { reps: 1, ..job.clone() }
}

/// `policy` for shortened jobs: no repetition retaken.
pub fn hurried(policy: Policy) -> Policy {
    Policy { contention: policy.contention.map(|c| crate::probe::window::Contention { retakes: 0, ..c }), ..policy }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_shortened_only_when_the_rest_as_designed_would_overrun_the_budget() {
        let keys: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let mut pace = Pace::new(Some(Duration::from_secs(10)));
        // Nothing known: nothing to project.
        assert!(!pace.behind(9.0, &keys));
        for k in &keys {
            pace.predict(k, 1.0);
        }
        // Predicted 3 s in all: on time 6 s in, behind 8 s in.
        assert!(!pace.behind(6.0, &keys));
        assert!(pace.behind(8.0, &keys));
        // a and b took twice their predictions: c is expected to, too.
        pace.took("a", 2.0, false);
        pace.took("b", 2.0, false);
        assert!(!pace.behind(7.0, &keys[2..]));
        assert!(pace.behind(8.5, &keys[2..]));
        // Measured costs stand for themselves: a and b still to measure
        // (4 s), 6.5 s in: on time; 6.5 s and c too: behind.
        assert!(!pace.behind(5.5, &keys[..2]));
        assert!(pace.behind(6.5, &keys[..2]) && pace.behind(6.5, &keys));
        // A shortened round is counted and teaches no cost.
        pace.took("a", 0.5, true);
        assert!(pace.behind(6.5, &keys[..2]));
        assert_eq!((pace.total_shortened(), pace.shortened.get("a")), (1, Some(&1)));
        // No budget: never behind.
        assert!(!Pace::new(None).behind(1e9, &keys));
    }
}
