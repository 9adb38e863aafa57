//! The results store: one SQLite file per sweep output folder
//! (`OUT/pocketbench.db`), the single source of truth every export is
//! rendered from.
//!
//! # Layout
//! SQLite (bundled, so no system library), WAL journal, `synchronous=FULL`:
//! a committed transaction survives the process being killed and the
//! machine losing power. Every measured result is committed in its own
//! transaction the moment it lands; predictions are written in batches. The
//! schema version is `PRAGMA user_version` ([`schema::VERSION`]); opening an
//! older file migrates it forward, a newer one is refused.
//!
//! | table | one row per | holds |
//! |---|---|---|
//! | `sweep` | store (exactly one) | name, sweep file and its FNV-1a hash, the options that change results, harness version, shard, workload, objectives, whether prediction finished |
//! | `runs` | invocation | command line, harness version and git commit, host fingerprint, start and end (UTC), status (`running`, `finished`, `failed`) |
//! | `devices` | device of the sweep | plan position, name, engine, profile digest, calibration label, budgets |
//! | `calibrations` | device x profile digest x label | the parameters each prediction used (JSON), and the predictions' method texts |
//! | `configurations` | configuration | id, parameter count (plan order is parameters, then id), name, every shape field |
//! | `results` | configuration x device x engine x workload x provenance (x job key for measurements) | every metric of the record, its three verdicts (status, value, limit, margin), feasible, on_frontier, methods (measurements), the measurement's statistics and probe result (JSON) |
//! | `samples` | repetition of a measured result | load, prefill, first-token and decode seconds, speeds, energy |
//! | `failures` | configuration x device x job key | kind, reason, attempts, the failure (JSON) |
//!
//! A measurement's job key is a digest of what ran it (engine, repetitions,
//! threads, the runner's build); a predicted result's is empty.
//!
//! Records read back are equal to the records written, field for field
//! (tested), and a report is a pure function of them: the frontier and the
//! device summaries are recomputed from the stored records and devices.

pub mod schema;

mod merge;
mod read;
mod rows;
mod write;

pub use merge::merge;
pub use read::Rows;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};

use crate::outcome::DeviceSummary;

/// The store's file name inside an output folder.
pub const FILE_NAME: &str = "pocketbench.db";

/// The store of an output folder, or the path itself when it names a
/// `.db` file (every command takes either).
pub fn file_in(out: &Path) -> PathBuf {
    if out.extension().is_some_and(|e| e == "db") {
        out.to_path_buf()
    } else {
        out.join(FILE_NAME)
    }
}

/// Predicted records written per transaction.
pub const BATCH: usize = 20_000;

/// Why the store cannot be used. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (I/O, a full disk, a locked file).
    #[error("{}: {message}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's message.
        message: String,
    },
    /// The file is not a pocketbench store, or is damaged.
    #[error("{}: not a usable pocketbench store: {message}", path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The output path cannot hold a store (a file where a folder must be,
    /// a merge target that already exists).
    #[error("{}: {message}", path.display())]
    Output {
        /// The path.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// Written by a newer pocketbench.
    #[error("{}: store schema version {found} is newer than this pocketbench understands ({supported}); upgrade pocketbench", path.display())]
    Newer {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// This build's.
        supported: i64,
    },
    /// The store holds another sweep than the one being run.
    #[error("{}: holds a different sweep: {what}; pass --fresh to start over (the old store is kept as {FILE_NAME}.prev)", path.display())]
    Mismatch {
        /// The database file.
        path: PathBuf,
        /// Which part differs, old and new.
        what: String,
    },
    /// No store where one was expected.
    #[error("{}: no pocketbench store here (run `pocketbench sweep` with --out first)", path.display())]
    Missing {
        /// The path looked at.
        path: PathBuf,
    },
}

impl StoreError {
    /// Whether the user's input is at fault (exit 2) rather than the harness (exit 3).
    pub fn is_usage(&self) -> bool {
        !matches!(self, StoreError::Sqlite { .. })
    }
}

/// What a store's sweep is: compared field by field when a sweep resumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// Sweep name.
    pub name: String,
    /// Sweep file as given.
    pub file: String,
    /// FNV-1a of the sweep file's bytes.
    pub file_hash: String,
    /// Options that change results (devices, workload, objectives, cap, scores), as JSON.
    pub options: String,
    /// `pocketbench <version> (<commit>)`.
    pub harness: String,
    /// `I/N`, for a shard.
    pub shard: Option<String>,
}

impl Identity {
    /// The identity of a sweep run by this harness: its name, the file as
    /// given, the FNV-1a of the file's bytes, the result-changing options
    /// (JSON) and the shard.
    pub fn new(name: &str, file: &str, bytes: &[u8], options: String, shard: Option<String>) -> Self {
        Identity {
            name: name.into(),
            file: file.into(),
            file_hash: format!("{:016x}", crate::fnv1a(bytes)),
            options,
            harness: crate::harness_version(),
            shard,
        }
    }
}

/// What the store says about the sweep beyond its identity.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// Identity.
    pub identity: Identity,
    /// Description.
    pub description: Option<String>,
    /// Workload prompt tokens.
    pub prompt_tokens: u32,
    /// Workload generated tokens.
    pub gen_tokens: u32,
    /// Frontier objectives.
    pub objectives: Vec<crate::pareto::Objective>,
    /// Configurations dropped while expanding.
    pub skipped: Vec<(String, usize)>,
    /// Configurations in the plan (this shard's).
    pub configs: usize,
    /// Whether every prediction is stored.
    pub predicted_complete: bool,
}

/// A device as stored: its summary header and profile digest.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceRow {
    /// Identity and budgets (counts zero).
    pub header: DeviceSummary,
    /// Digest of the whole profile.
    pub profile_digest: String,
}

/// An open store.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    run_id: Option<i64>,
}

impl Store {
    /// Open `path`, creating it (and its folder) when missing and migrating
    /// an older schema forward.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if dir.is_file() {
                return Err(StoreError::Output {
                    path: path.to_path_buf(),
                    message: format!("{} is a file, not a folder", dir.display()),
                });
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Sqlite { path: path.to_path_buf(), message: e.to_string() })?;
        }
        let conn = Connection::open(path).map_err(|e| sqlite(path, e))?;
        Store::init(conn, path, true)
    }

    /// Open an existing store without changing it (reports, merges, gates).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing { path: path.to_path_buf() });
        }
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| sqlite(path, e))?;
        Store::init(conn, path, false)
    }

    fn init(conn: Connection, path: &Path, write: bool) -> Result<Store, StoreError> {
        let corrupt = |e: rusqlite::Error| StoreError::Corrupt { path: path.to_path_buf(), message: e.to_string() };
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(corrupt)?;
        if version > schema::VERSION {
            return Err(StoreError::Newer { path: path.to_path_buf(), found: version, supported: schema::VERSION });
        }
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(corrupt)?;
        if check != "ok" {
            return Err(StoreError::Corrupt { path: path.to_path_buf(), message: format!("integrity check: {check}") });
        }
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))
            .map_err(corrupt)?;
        if version == 0 && tables > 0 {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                message: "an SQLite database of something else (no pocketbench schema version)".into(),
            });
        }
        if write {
            conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| sqlite(path, e))?;
            conn.pragma_update(None, "synchronous", "FULL").map_err(|e| sqlite(path, e))?;
            conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| sqlite(path, e))?;
            // 64 MiB of page cache: a 100,000-record batch keeps its index pages in memory.
            conn.pragma_update(None, "cache_size", -65_536).map_err(|e| sqlite(path, e))?;
            conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(|e| sqlite(path, e))?;
            for (v, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
                let tx = conn.unchecked_transaction().map_err(|e| sqlite(path, e))?;
                tx.execute_batch(sql).map_err(|e| sqlite(path, e))?;
                tx.pragma_update(None, "user_version", v as i64 + 1).map_err(|e| sqlite(path, e))?;
                tx.commit().map_err(|e| sqlite(path, e))?;
            }
        } else if version < schema::VERSION {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                message: format!(
                    "schema version {version}, older than {}: open it once with `pocketbench sweep` to migrate",
                    schema::VERSION
                ),
            });
        }
        Ok(Store { conn, path: path.to_path_buf(), run_id: None })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        sqlite(&self.path, e)
    }

    /// `PRAGMA integrity_check`: "ok" for a sound file.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(|e| self.err(e))
    }

    /// The invocation later writes belong to (none before [`Store::start_run`]).
    fn run_id(&self) -> Option<i64> {
        self.run_id
    }
}

/// One invocation, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The command line.
    pub command_line: String,
    /// `pocketbench <version> (<commit>)`.
    pub harness_version: String,
    /// The git commit it was built from, when known.
    pub git_commit: Option<String>,
    /// The host fingerprint (JSON).
    pub host: String,
    /// UTC start.
    pub started_at: String,
    /// UTC end.
    pub ended_at: Option<String>,
    /// `running` (or killed), `finished`, `failed`.
    pub status: String,
}

fn insert_sql() -> String {
    let cols = rows::RESULT_COLUMNS;
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    format!("INSERT OR REPLACE INTO results ({}) VALUES ({})", cols.join(", "), marks.join(", "))
}

fn sqlite(path: &Path, e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            StoreError::Corrupt { path: path.to_path_buf(), message: e.to_string() }
        }
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DatabaseCorrupt => {
            StoreError::Corrupt { path: path.to_path_buf(), message: e.to_string() }
        }
        other => StoreError::Sqlite { path: path.to_path_buf(), message: other.to_string() },
    }
}

#[cfg(test)]
mod tests;
