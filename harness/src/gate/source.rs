//! Reading one side of a gate: a results store (`pocketbench.db`, or the
//! `OUT` folder holding it), an exported `results.json` or `results.jsonl`,
//! or the JSON `pocketbench run --json` prints.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::{Provenance, Record};
use crate::sweep::FailedMeasurement;

/// Why a side cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Nothing at the path, or a folder with no results in it.
    #[error("{}: {message}", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
        /// What was looked for.
        message: String,
    },
    /// The file is not a pocketbench results file.
    #[error("{}: not pocketbench results: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why (with the line for JSON Lines).
        message: String,
    },
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Reading failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl SourceError {
    /// Whether the user named something unusable (exit 2) rather than the
    /// harness failing to read it (exit 3).
    pub fn is_usage(&self) -> bool {
        match self {
            SourceError::Missing { .. } | SourceError::Parse { .. } => true,
            SourceError::Store(e) => e.is_usage(),
            SourceError::Io { .. } => false,
        }
    }
}

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

    /// Take the commit and start time from the runs that built the input.
    fn with_runs(mut self, runs: &[crate::store::RunRow]) -> Loaded {
        self.described.commit = runs.iter().rev().find_map(|r| r.git_commit.clone());
        self.described.started_at = runs.first().map(|r| r.started_at.clone());
        self
    }
}

/// Read a side from `path`.
pub fn load(path: &Path) -> Result<Loaded, SourceError> {
    let shown = path.display().to_string();
    if path.is_dir() {
        let db = path.join(crate::store::FILE_NAME);
        if db.is_file() {
            return from_store(&db, &shown);
        }
        let json = path.join("results.json");
        if json.is_file() {
            return from_json(&json, &shown);
        }
        return Err(SourceError::Missing {
            path: path.to_path_buf(),
            message: format!("a folder with neither {} nor results.json in it", crate::store::FILE_NAME),
        });
    }
    if !path.exists() {
        return Err(SourceError::Missing { path: path.to_path_buf(), message: "no such file or folder".into() });
    }
    let mut head = [0u8; 16];
    let is_sqlite = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .map(|n| n == 16 && &head == b"SQLite format 3\0")
        .map_err(|source| SourceError::Io { path: path.to_path_buf(), source })?;
    if is_sqlite {
        return from_store(path, &shown);
    }
    if path.extension().is_some_and(|e| e == "jsonl") {
        return from_jsonl(path, &shown);
    }
    from_json(path, &shown)
}

fn from_store(db: &Path, shown: &str) -> Result<Loaded, SourceError> {
    of_store(&crate::store::Store::open_read_only(db)?, shown)
}

/// A side from a store already open (`shown` names it in the outputs).
pub fn of_store(store: &crate::store::Store, shown: &str) -> Result<Loaded, SourceError> {
    let records = store.records(Provenance::Measured)?;
    let failures = store.failures()?;
    Ok(Loaded::new(shown, "store", records, failures).with_runs(&store.runs()?))
}

fn read(path: &Path) -> Result<String, SourceError> {
    std::fs::read_to_string(path).map_err(|source| SourceError::Io { path: path.to_path_buf(), source })
}

fn from_jsonl(path: &Path, shown: &str) -> Result<Loaded, SourceError> {
    let text = read(path)?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Record = serde_json::from_str(line)
            .map_err(|e| SourceError::Parse { path: path.to_path_buf(), message: format!("line {}: {e}", i + 1) })?;
        records.push(r);
    }
    Ok(Loaded::new(shown, "results.jsonl", records, Vec::new()))
}

/// `results.json` (a sweep report) or one record (`run --json`).
fn from_json(path: &Path, shown: &str) -> Result<Loaded, SourceError> {
    let text = read(path)?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| SourceError::Parse { path: path.to_path_buf(), message: e.to_string() })?;
    let parse = |e: serde_json::Error, what: &str| SourceError::Parse {
        path: path.to_path_buf(),
        message: format!("read as {what}: {e}"),
    };
    if value.get("results").is_some() {
        let report: crate::report::SweepReport = serde_json::from_value(value).map_err(|e| parse(e, "results.json"))?;
        return Ok(
            Loaded::new(shown, "results.json", report.outcome.results, report.outcome.failures).with_runs(&report.runs)
        );
    }
    if value.get("config_id").is_some() {
        let record: Record = serde_json::from_value(value).map_err(|e| parse(e, "a `run --json` record"))?;
        return Ok(Loaded::new(shown, "run --json", vec![record], Vec::new()));
    }
    Err(SourceError::Parse {
        path: path.to_path_buf(),
        message: "neither a results.json (no `results`) nor a `run --json` record (no `config_id`)".into(),
    })
}
