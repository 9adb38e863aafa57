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
mod rows;

pub use merge::merge;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::record::{Provenance, Record};
use crate::sweep::{DeviceSummary, FailedMeasurement, Outcome};

/// The store's file name inside an output folder.
pub const FILE_NAME: &str = "pocketbench.db";

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

    /// The stored sweep, if any.
    pub fn sweep(&self) -> Result<Option<SweepRow>, StoreError> {
        self.conn
            .query_row(
                "SELECT name, file, file_hash, options, harness, shard, description, prompt_tokens, gen_tokens, \
                 objectives, skipped, configs, predicted_complete FROM sweep WHERE id = 1",
                [],
                |r| {
                    let json = |i: usize| -> rusqlite::Result<String> { r.get(i) };
                    Ok(SweepRow {
                        identity: Identity {
                            name: r.get(0)?,
                            file: r.get(1)?,
                            file_hash: r.get(2)?,
                            options: r.get(3)?,
                            harness: r.get(4)?,
                            shard: r.get(5)?,
                        },
                        description: r.get(6)?,
                        prompt_tokens: r.get(7)?,
                        gen_tokens: r.get(8)?,
                        objectives: serde_json::from_str(&json(9)?).map_err(|e| rows::conversion(e.to_string()))?,
                        skipped: serde_json::from_str(&json(10)?).map_err(|e| rows::conversion(e.to_string()))?,
                        configs: r.get::<_, i64>(11)? as usize,
                        predicted_complete: r.get(12)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The stored devices, in plan order.
    pub fn devices(&self) -> Result<Vec<DeviceRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, name, engine, profile_digest, calibration, budget_decode_tok_s, budget_memory_mb, \
                 budget_energy_j FROM devices ORDER BY position",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok(DeviceRow {
                    header: DeviceSummary {
                        device: r.get(0)?,
                        name: r.get(1)?,
                        engine: r.get(2)?,
                        calibration: r.get(4)?,
                        budget_decode_tok_s: r.get(5)?,
                        budget_memory_mb: r.get(6)?,
                        budget_energy_j: r.get(7)?,
                        ..DeviceSummary::default()
                    },
                    profile_digest: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Write the sweep, its devices and its configurations (a new store).
    pub fn create_sweep(
        &mut self,
        sweep: &SweepRow,
        devices: &[DeviceRow],
        shapes: &[(crate::arch::Shape, u64)],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |x| sqlite(&path, x);
        let tx = self.conn.transaction().map_err(e)?;
        let id = &sweep.identity;
        tx.execute(
            "INSERT INTO sweep (id, name, file, file_hash, options, harness, shard, description, prompt_tokens, \
             gen_tokens, objectives, skipped, configs, predicted_complete) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 0)",
            params![
                id.name,
                id.file,
                id.file_hash,
                id.options,
                id.harness,
                id.shard,
                sweep.description,
                sweep.prompt_tokens,
                sweep.gen_tokens,
                serde_json::to_string(&sweep.objectives).unwrap_or_default(),
                serde_json::to_string(&sweep.skipped).unwrap_or_default(),
                sweep.configs as i64,
            ],
        )
        .map_err(e)?;
        {
            let mut st = tx
                .prepare(
                    "INSERT INTO devices (id, position, name, engine, profile_digest, calibration, budget_decode_tok_s, \
                     budget_memory_mb, budget_energy_j) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(e)?;
            for (i, d) in devices.iter().enumerate() {
                let h = &d.header;
                st.execute(params![
                    h.device,
                    i as i64,
                    h.name,
                    h.engine,
                    d.profile_digest,
                    h.calibration,
                    h.budget_decode_tok_s,
                    h.budget_memory_mb,
                    h.budget_energy_j
                ])
                .map_err(e)?;
            }
            let mut st = tx
                .prepare(
                    "INSERT INTO configurations (id, params_total, name, hidden, layers, heads, kv_heads, head_dim, ffn, \
                     vocab, tied, qk_norm, quant, context) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .map_err(e)?;
            for (s, params_total) in shapes {
                st.execute(params![
                    s.id(),
                    *params_total as i64,
                    s.to_string(),
                    s.hidden,
                    s.layers,
                    s.heads,
                    s.kv_heads,
                    s.head_dim,
                    s.ffn,
                    s.vocab,
                    s.tied,
                    s.qk_norm,
                    rows::name_of(&s.quant),
                    s.context
                ])
                .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// Record the start of an invocation; later writes belong to it.
    pub fn start_run(&mut self, command_line: &str, git_commit: Option<&str>, host: &str) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO runs (command_line, harness_version, git_commit, host, started_at, status) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running')",
                params![command_line, crate::harness_version(), git_commit, host, crate::hostinfo::now_utc()],
            )
            .map_err(|e| self.err(e))?;
        let id = self.conn.last_insert_rowid();
        self.run_id = Some(id);
        Ok(id)
    }

    /// Record the end of this invocation.
    pub fn finish_run(&mut self, status: &str) -> Result<(), StoreError> {
        let Some(id) = self.run_id else { return Ok(()) };
        self.conn
            .execute(
                "UPDATE runs SET ended_at = ?1, status = ?2 WHERE id = ?3",
                params![crate::hostinfo::now_utc(), status, id],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every run, oldest first: (command line, harness, commit, host, start, end, status).
    pub fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT command_line, harness_version, git_commit, host, started_at, ended_at, status FROM runs ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok(RunRow {
                    command_line: r.get(0)?,
                    harness_version: r.get(1)?,
                    git_commit: r.get(2)?,
                    host: r.get(3)?,
                    started_at: r.get(4)?,
                    ended_at: r.get(5)?,
                    status: r.get(6)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The invocation later writes belong to (none before [`Store::start_run`]).
    fn run_id(&self) -> Option<i64> {
        self.run_id
    }

    /// The calibration row for a device's predictions, created when new.
    fn calibration_id(
        tx: &rusqlite::Transaction,
        device: &str,
        digest: &str,
        rec: &Record,
        params: &str,
    ) -> rusqlite::Result<i64> {
        let found: Option<i64> = tx
            .query_row(
                "SELECT id FROM calibrations WHERE device = ?1 AND profile_digest = ?2 AND label = ?3",
                params![device, digest, rec.calibration],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = found {
            return Ok(id);
        }
        let methods = if rec.provenance == Provenance::Predicted {
            serde_json::to_string(&rec.methods).unwrap_or_default()
        } else {
            "{}".into()
        };
        tx.execute(
            "INSERT INTO calibrations (device, profile_digest, label, params, methods) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![device, digest, rec.calibration, params, methods],
        )?;
        Ok(tx.last_insert_rowid())
    }

    /// Write predicted records, [`BATCH`] per transaction. `calibration`
    /// gives each device's profile digest and parameters (JSON). Predictions
    /// are cheap to redo, so a run killed while writing them leaves a store
    /// whose sweep is not `predicted_complete`, and the next run writes them
    /// again: [`Store::clear_predicted`] first.
    pub fn insert_predicted(
        &mut self,
        records: &[Record],
        calibration: &dyn Fn(&str) -> (String, String),
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let run = self.run_id();
        let e = |x| sqlite(&path, x);
        let sql = insert_sql().replacen("INSERT OR REPLACE", "INSERT", 1);
        for chunk in records.chunks(BATCH) {
            let tx = self.conn.transaction().map_err(e)?;
            {
                let mut st = tx.prepare_cached(&sql).map_err(e)?;
                let mut cal_ids: HashMap<String, i64> = HashMap::new();
                for rec in chunk {
                    let cal = match cal_ids.get(&rec.device) {
                        Some(id) => *id,
                        None => {
                            let (digest, params) = calibration(&rec.device);
                            let id = Store::calibration_id(&tx, &rec.device, &digest, rec, &params).map_err(e)?;
                            cal_ids.insert(rec.device.clone(), id);
                            id
                        }
                    };
                    rows::insert_record(&mut st, rec, run, cal, "").map_err(e)?;
                }
            }
            tx.commit().map_err(e)?;
        }
        Ok(())
    }

    /// Remove every stored prediction (before predicting again after an
    /// interrupted run; measurements and failures stay).
    pub fn clear_predicted(&mut self) -> Result<(), StoreError> {
        self.conn.execute("DELETE FROM results WHERE provenance = 'predicted'", []).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Mark prediction finished (after the last batch).
    pub fn set_predicted_complete(&mut self) -> Result<(), StoreError> {
        self.conn.execute("UPDATE sweep SET predicted_complete = 1 WHERE id = 1", []).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Write one measured record and its samples in one transaction, and
    /// clear a failure recorded for the same job.
    pub fn insert_measured(
        &mut self,
        rec: &Record,
        job_key: &str,
        calibration: (String, String),
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let run = self.run_id();
        let e = |x| sqlite(&path, x);
        let tx = self.conn.transaction().map_err(e)?;
        let cal = Store::calibration_id(&tx, &rec.device, &calibration.0, rec, &calibration.1).map_err(e)?;
        rows::insert_record(&mut tx.prepare_cached(&insert_sql()).map_err(e)?, rec, run, cal, job_key).map_err(e)?;
        let id = tx.last_insert_rowid();
        if let Some(m) = &rec.measurement {
            let mut st = tx
                .prepare(
                    "INSERT INTO samples (result_id, rep, load_s, prefill_s, ttft_s, decode_s, prefill_tok_s, \
                     decode_tok_s, energy_j, energy_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(e)?;
            for (i, r) in m.probe.reps.iter().enumerate() {
                st.execute(params![
                    id,
                    i as i64,
                    r.load_s,
                    r.prefill_s,
                    r.ttft_s,
                    r.decode_s,
                    r.prefill_tok_s,
                    r.decode_tok_s,
                    r.energy.as_ref().map(|x| x.joules),
                    r.energy.as_ref().map(|x| x.seconds)
                ])
                .map_err(e)?;
            }
        }
        tx.execute(
            "DELETE FROM failures WHERE config_id = ?1 AND device = ?2 AND job_key = ?3",
            params![rec.config_id, rec.device, job_key],
        )
        .map_err(e)?;
        tx.commit().map_err(e)
    }

    /// Record (or replace) a failed measurement.
    pub fn insert_failure(&mut self, f: &FailedMeasurement, job_key: &str) -> Result<(), StoreError> {
        let failure = serde_json::to_value(&f.failure).unwrap_or_default();
        let kind = failure["kind"].as_str().unwrap_or_default().to_string();
        self.conn
            .execute(
                "INSERT OR REPLACE INTO failures (run_id, config_id, name, device, job_key, kind, reason, attempts, failure) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    self.run_id(),
                    f.config_id,
                    f.config_name,
                    f.device,
                    job_key,
                    kind,
                    f.failure.to_string(),
                    f.attempts,
                    failure.to_string()
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The stored measurement of this job, if any.
    pub fn measured(&self, device: &str, config_id: &str, job_key: &str) -> Result<Option<Record>, StoreError> {
        let recs = self.query_records(
            "r.provenance = 'measured' AND r.device = ?1 AND r.config_id = ?2 AND r.job_key = ?3",
            &[&device, &config_id, &job_key],
        )?;
        Ok(recs.into_iter().next())
    }

    /// The stored failure of this job, if any.
    pub fn failure(
        &self,
        device: &str,
        config_id: &str,
        job_key: &str,
    ) -> Result<Option<FailedMeasurement>, StoreError> {
        Ok(self
            .failures_where("device = ?1 AND config_id = ?2 AND job_key = ?3", &[&device, &config_id, &job_key])?
            .into_iter()
            .next())
    }

    /// Every stored failure.
    pub fn failures(&self) -> Result<Vec<FailedMeasurement>, StoreError> {
        self.failures_where("1", &[])
    }

    fn failures_where(&self, cond: &str, p: &[&dyn rusqlite::ToSql]) -> Result<Vec<FailedMeasurement>, StoreError> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT config_id, name, device, attempts, failure FROM failures WHERE {cond} ORDER BY id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(p, |r| {
                let failure: String = r.get(4)?;
                Ok(FailedMeasurement {
                    config_id: r.get(0)?,
                    config_name: r.get(1)?,
                    device: r.get(2)?,
                    attempts: r.get(3)?,
                    failure: serde_json::from_str(&failure).map_err(|e| rows::conversion(e.to_string()))?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The stored configurations with their parameter counts, in plan order.
    pub fn configurations(&self) -> Result<Vec<(crate::arch::Shape, u64)>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT hidden, layers, heads, kv_heads, head_dim, ffn, vocab, tied, qk_norm, quant, context, \
                 params_total FROM configurations ORDER BY params_total, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    crate::arch::Shape {
                        hidden: r.get(0)?,
                        layers: r.get(1)?,
                        heads: r.get(2)?,
                        kv_heads: r.get(3)?,
                        head_dim: r.get(4)?,
                        ffn: r.get(5)?,
                        vocab: r.get(6)?,
                        tied: r.get(7)?,
                        qk_norm: r.get(8)?,
                        quant: r
                            .get::<_, String>(9)?
                            .parse()
                            .map_err(|e: crate::arch::QuantError| rows::conversion(e.to_string()))?,
                        context: r.get(10)?,
                    },
                    r.get::<_, i64>(11)? as u64,
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Each device's profile digest and parameters, as its predictions stored them.
    pub fn calibration_params(&self) -> Result<HashMap<String, (String, String)>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT device, profile_digest, params FROM calibrations ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get::<_, String>(1)?, r.get::<_, String>(2)?))))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Every measured record with its job key, in plan order, oldest first.
    pub fn measured_with_keys(&self) -> Result<Vec<(Record, String)>, StoreError> {
        self.query_rows("r.provenance = ?1", &[&"measured"])
    }

    /// Every failure with its job key.
    pub fn failures_with_keys(&self) -> Result<Vec<(FailedMeasurement, String)>, StoreError> {
        let keys: Vec<String> = {
            let mut st = self.conn.prepare("SELECT job_key FROM failures ORDER BY id").map_err(|e| self.err(e))?;
            let rows = st.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?
        };
        Ok(self.failures()?.into_iter().zip(keys).collect())
    }

    /// Copy `runs` rows into this store (a merge keeps every shard's history).
    pub fn copy_runs(&mut self, runs: &[RunRow]) -> Result<(), StoreError> {
        for r in runs {
            self.conn
                .execute(
                    "INSERT INTO runs (command_line, harness_version, git_commit, host, started_at, ended_at, status) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        r.command_line,
                        r.harness_version,
                        r.git_commit,
                        r.host,
                        r.started_at,
                        r.ended_at,
                        r.status
                    ],
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Number of stored results of a provenance.
    pub fn count(&self, provenance: Provenance) -> Result<usize, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM results WHERE provenance = ?1", [rows::name_of(&provenance)], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
            .map_err(|e| self.err(e))
    }

    fn calibrations(&self) -> Result<HashMap<i64, rows::CalibrationRow>, StoreError> {
        let mut st = self.conn.prepare("SELECT id, label, methods FROM calibrations").map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                let methods: String = r.get(2)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    rows::CalibrationRow {
                        label: r.get(1)?,
                        methods: serde_json::from_str(&methods).map_err(|e| rows::conversion(e.to_string()))?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Records matching `cond` with their job keys, device by device in
    /// plan order (parameters, then id), oldest first within a pair. Sorted
    /// here rather than by SQL: an ORDER BY over a join of 100,000 wide rows
    /// cost SQLite half a second.
    fn query_rows(&self, cond: &str, p: &[&dyn rusqlite::ToSql]) -> Result<Vec<(Record, String)>, StoreError> {
        let cals = self.calibrations()?;
        let position: HashMap<String, usize> =
            self.devices()?.into_iter().enumerate().map(|(i, d)| (d.header.device, i)).collect();
        let sql = format!(
            "SELECT {}, r.job_key FROM results r JOIN configurations c ON c.id = r.config_id WHERE {cond} ORDER BY r.id",
            rows::select_list()
        );
        let mut st = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let key_at = rows::RESULT_COLUMNS.len() + 12;
        let rows = st
            .query_map(p, |r| Ok((rows::record_from_row(r, &cals)?, r.get::<_, String>(key_at)?)))
            .map_err(|e| self.err(e))?;
        let mut out: Vec<(Record, String)> = rows
            .collect::<Result<_, _>>()
            .map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: e.to_string() })?;
        out.sort_by(|(a, _), (b, _)| {
            let pos = |r: &Record| position.get(&r.device).copied().unwrap_or(usize::MAX);
            pos(a).cmp(&pos(b)).then(a.params_total.cmp(&b.params_total)).then_with(|| a.config_id.cmp(&b.config_id))
        });
        Ok(out)
    }

    fn query_records(&self, cond: &str, p: &[&dyn rusqlite::ToSql]) -> Result<Vec<Record>, StoreError> {
        Ok(self.query_rows(cond, p)?.into_iter().map(|(r, _)| r).collect())
    }

    /// Every stored record of a provenance, device-major in plan order.
    pub fn records(&self, provenance: Provenance) -> Result<Vec<Record>, StoreError> {
        self.query_records("r.provenance = ?1", &[&rows::name_of(&provenance)])
    }

    /// The sweep's outcome as its reports show it: per configuration and
    /// device the newest measurement, else the prediction; each device's
    /// frontier and summary recomputed from those records; every failure.
    pub fn outcome(&self) -> Result<Outcome, StoreError> {
        self.outcome_of(true)
    }

    /// [`Store::outcome`], or with `measured = false` the predictions alone
    /// (what measurement candidates are chosen from).
    pub fn outcome_of(&self, measured: bool) -> Result<Outcome, StoreError> {
        let sweep = self.sweep()?.ok_or_else(|| StoreError::Corrupt {
            path: self.path.clone(),
            message: "no sweep recorded in it".into(),
        })?;
        let devices = self.devices()?;
        let index: HashMap<&str, usize> =
            devices.iter().enumerate().map(|(i, d)| (d.header.device.as_str(), i)).collect();
        let mut per_device: Vec<Vec<Record>> = vec![Vec::new(); devices.len()];
        let mut at: Vec<HashMap<String, usize>> = vec![HashMap::new(); devices.len()];
        // Predictions first, then measurements oldest to newest: a later
        // measurement of the same pair replaces an earlier one.
        let measurements = if measured { self.records(Provenance::Measured)? } else { Vec::new() };
        for r in self.records(Provenance::Predicted)?.into_iter().chain(measurements) {
            let Some(&d) = index.get(r.device.as_str()) else { continue };
            match at[d].get(&r.config_id) {
                Some(&i) => per_device[d][i] = r,
                None => {
                    at[d].insert(r.config_id.clone(), per_device[d].len());
                    per_device[d].push(r);
                }
            }
        }
        let headers: Vec<DeviceSummary> = devices.into_iter().map(|d| d.header).collect();
        let (summaries, per_device) = crate::sweep::frontiers(per_device, &headers, &sweep.objectives);
        let failures = if measured { self.failures()? } else { Vec::new() };
        Ok(Outcome { devices: summaries, results: per_device.into_iter().flatten().collect(), failures })
    }

    /// Store each record's frontier flag as `outcome` has it.
    pub fn write_frontier(&mut self, outcome: &Outcome) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |x| sqlite(&path, x);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute("UPDATE results SET on_frontier = 0", []).map_err(e)?;
        {
            let mut st = tx
                .prepare("UPDATE results SET on_frontier = 1 WHERE device = ?1 AND config_id = ?2 AND provenance = ?3")
                .map_err(e)?;
            for r in outcome.results.iter().filter(|r| r.on_frontier) {
                st.execute(params![r.device, r.config_id, rows::name_of(&r.provenance)]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
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
