//! Keeping a calibration within its time budget (`--quick`: 3 minutes on
//! 2 cores, issue 41 item 5). The first round measures every job as
//! designed and learns what each costs; from then on, a job whose turn
//! comes when the time spent and what the rest would cost as designed
//! exceed the budget is measured shortened: one repetition at the least,
//! none retaken. A shortened round is counted and said on its point.

use std::collections::HashMap;
use std::time::Duration;

use crate::runner::Job;
use crate::schedule::Policy;

/// The pace of one calibration.
#[derive(Debug, Clone, Default)]
pub struct Pace {
    budget: Option<f64>,
    /// Seconds each job (by cache key) took when last measured as designed.
    cost: HashMap<String, f64>,
    /// Rounds shortened, by job.
    pub shortened: HashMap<String, u32>,
}

impl Pace {
    /// A pace for `budget` (none: never shortened).
    pub fn new(budget: Option<Duration>) -> Pace {
        Pace { budget: budget.map(|b| b.as_secs_f64()), ..Pace::default() }
    }

    /// Whether the next job must be shortened, `elapsed` seconds in, with
    /// `rest` (its own key first) still to measure: it was measured whole
    /// before, and what they cost as designed, where known, would take the
    /// calibration past its budget.
    pub fn behind<'a>(&self, elapsed: f64, rest: impl IntoIterator<Item = &'a String>) -> bool {
        let Some(budget) = self.budget else { return false };
        let mut rest = rest.into_iter().peekable();
        if !rest.peek().is_some_and(|k| self.cost.contains_key(*k)) {
            return false;
        }
        let rest: f64 = rest.filter_map(|k| self.cost.get(k)).sum();
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
        // Nothing learnt yet: never behind.
        assert!(!pace.behind(9.0, &keys));
        pace.took("a", 2.0, false);
        pace.took("b", 3.0, false);
        // A job never measured whole is measured whole, however late.
        assert!(!pace.behind(99.0, &keys[2..]));
        // 4 s in, a and b still to measure (5 s): on time; 6 s in, behind.
        assert!(!pace.behind(4.0, &keys[..2]));
        assert!(pace.behind(6.0, &keys[..2]));
        // A shortened round is counted and teaches no cost.
        pace.took("a", 0.5, true);
        assert!(pace.behind(6.0, &keys[..2]));
        assert_eq!((pace.total_shortened(), pace.shortened.get("a")), (1, Some(&1)));
        // No budget: never behind.
        assert!(!Pace::new(None).behind(1e9, &keys));
    }
}
