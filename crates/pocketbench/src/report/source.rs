//! Reading one side of a gate: a results store (`pocketbench.db`, or the
//! `OUT` folder holding it), an exported `results.json` or `results.jsonl`,
//! or the JSON `pocketbench run --json` prints.

use std::path::{Path, PathBuf};

use crate::gate::Loaded;
use crate::record::{Provenance, Record};

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

/// Read a side from `path`.
pub fn load(path: &Path) -> Result<Loaded, crate::Error> {
    Ok(load_side(path)?)
}

fn load_side(path: &Path) -> Result<Loaded, SourceError> {
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
    side_of_store(&crate::store::Store::open_read_only(db)?, shown)
}

/// A side from a store already open (`shown` names it in the outputs).
pub fn of_store(store: &crate::store::Store, shown: &str) -> Result<Loaded, crate::Error> {
    Ok(side_of_store(store, shown)?)
}

fn side_of_store(store: &crate::store::Store, shown: &str) -> Result<Loaded, SourceError> {
    let records = store.records(Provenance::Measured)?;
    let failures = store.failures()?;
    Ok(with_runs(Loaded::new(shown, "store", records, failures), &store.runs()?))
}

/// A side with the commit and start time of the runs that built its input.
fn with_runs(side: Loaded, runs: &[crate::store::RunRow]) -> Loaded {
    let commit = runs.iter().rev().find_map(|r| r.git_commit.clone());
    side.with_origin(commit, runs.first().map(|r| r.started_at.clone()))
}

fn read(path: &Path) -> Result<String, SourceError> {
    std::fs::read_to_string(path).map_err(|source| match source.kind() {
        // Bytes that are neither a SQLite store nor text: the user named
        // the wrong file, not a harness failure.
        std::io::ErrorKind::InvalidData => {
            SourceError::Parse { path: path.to_path_buf(), message: "neither a SQLite store nor UTF-8 JSON".into() }
        }
        _ => SourceError::Io { path: path.to_path_buf(), source },
    })
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
        return Ok(with_runs(
            Loaded::new(shown, "results.json", report.outcome.results, report.outcome.failures),
            &report.runs,
        ));
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
