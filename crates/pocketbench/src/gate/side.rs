//! One side of a comparison, as data: its records and failures and what
//! they were read from. Reading sides from files is the report module's
//! ([`crate::report::source`]); the gate only judges them.

use serde::{Deserialize, Serialize};

use crate::outcome::FailedMeasurement;
use crate::record::{Provenance, Record};

/// What a side was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Described {
    /// The path given.
    pub path: String,
    /// `store`, `results.json`, `results.jsonl` or `run --json`.
    pub kind: String,
    /// Records read.
    pub records: usize,
    /// Of them, measured (the rest are predictions, which are not gated).
    pub measured: usize,
    /// Failed measurements read.
    pub failures: usize,
    /// The git commit of the pocketbench that measured them (a store's or
    /// results.json's latest run that names one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// When its first run started (UTC), where the input says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
}

/// One side, read.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where from.
    pub described: Described,
    /// Every record.
    pub records: Vec<Record>,
    /// Measurements that failed.
    pub failures: Vec<FailedMeasurement>,
}

impl Loaded {
    /// A side from records in memory (`kind` says what they are).
    pub fn new(path: &str, kind: &str, records: Vec<Record>, failures: Vec<FailedMeasurement>) -> Loaded {
        let measured = records.iter().filter(|r| r.provenance == Provenance::Measured).count();
        Loaded {
            described: Described {
                path: path.into(),
                kind: kind.into(),
                records: records.len(),
                measured,
                failures: failures.len(),
                commit: None,
                started_at: None,
            },
            records,
            failures,
        }
    }

    /// The git commit that measured the side, and when its first run
    /// started (UTC), where the input says.
    pub fn with_origin(mut self, commit: Option<String>, started_at: Option<String>) -> Loaded {
        self.described.commit = commit;
        self.described.started_at = started_at;
        self
    }
}

impl From<crate::schedule::abab::Saved> for Loaded {
    /// A side `gate --measure` measured and saved.
    fn from(saved: crate::schedule::abab::Saved) -> Loaded {
        Loaded::new(&saved.path.display().to_string(), "gate --measure", saved.records, saved.failures)
    }
}
