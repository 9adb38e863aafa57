//! Writing the store: the sweep and its devices, runs, predicted and
//! measured records, failures, and the frontier flags.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};

use super::{insert_sql, rows, sqlite, DeviceRow, RunRow, Store, StoreError, SweepRow, BATCH};
use crate::outcome::{FailedMeasurement, Outcome};
use crate::record::{Provenance, Record};

const CONFIGURATION_SQL: &str = "INSERT OR IGNORE INTO configurations (id, params_total, name, hidden, layers, heads, \
     kv_heads, head_dim, ffn, vocab, tied, qk_norm, quant, context) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, \
     ?12, ?13, ?14)";

fn insert_configuration(
    st: &mut rusqlite::Statement<'_>,
    s: &crate::arch::Shape,
    params_total: u64,
) -> rusqlite::Result<usize> {
    st.execute(params![
        s.id(),
        params_total as i64,
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
}

impl Store {
    /// Add a configuration outside the sweep's space (a measurement
    /// imported from elsewhere); one already there is left as it is.
    pub fn add_configuration(&mut self, shape: &crate::arch::Shape, params_total: u64) -> Result<(), StoreError> {
        let mut st = self.conn.prepare(CONFIGURATION_SQL).map_err(|e| sqlite(&self.path, e))?;
        insert_configuration(&mut st, shape, params_total).map(drop).map_err(|e| sqlite(&self.path, e))
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
                     budget_memory_mb, budget_energy_j, leave_one_out, published, intervals) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
                    h.budget_energy_j,
                    h.leave_one_out,
                    h.published,
                    h.intervals
                ])
                .map_err(e)?;
            }
            let mut st = tx.prepare(CONFIGURATION_SQL).map_err(e)?;
            for (s, params_total) in shapes {
                insert_configuration(&mut st, s, *params_total).map_err(e)?;
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
        self.insert_predicted_iter(records.iter(), calibration)
    }

    /// [`Store::insert_predicted`] of records as they come, [`BATCH`] per
    /// transaction.
    pub fn insert_predicted_iter<'r>(
        &mut self,
        records: impl Iterator<Item = &'r Record>,
        calibration: &dyn Fn(&str) -> (String, String),
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let run = self.run_id();
        let e = |x| sqlite(&path, x);
        let sql = insert_sql().replacen("INSERT OR REPLACE", "INSERT", 1);
        let mut records = records.peekable();
        let mut cal_ids: HashMap<String, i64> = HashMap::new();
        while records.peek().is_some() {
            let tx = self.conn.transaction().map_err(e)?;
            {
                let mut st = tx.prepare_cached(&sql).map_err(e)?;
                for rec in records.by_ref().take(BATCH) {
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

    /// Before writing a sweep's predictions in bulk: a rollback journal
    /// instead of the write-ahead log. Appending pages, it journals only
    /// the few existing pages a batch changes, where the log writes every
    /// page twice (once to the log, once at the checkpoint); it is as safe
    /// against a kill or a power cut. [`Store::end_bulk`] returns to the log.
    pub fn begin_bulk(&mut self) -> Result<(), StoreError> {
        self.conn.pragma_update(None, "journal_mode", "DELETE").map_err(|e| self.err(e))
    }

    /// After the bulk writes: the write-ahead log again (readers beside
    /// the sweep, one transaction per measurement).
    pub fn end_bulk(&mut self) -> Result<(), StoreError> {
        self.conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| self.err(e))
    }

    /// Mark `records` (predictions, written without the mark) as on their
    /// device's frontier.
    pub fn mark_frontier<'r>(&mut self, records: impl Iterator<Item = &'r Record>) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |x| sqlite(&path, x);
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut st = tx
                .prepare("UPDATE results SET on_frontier = 1 WHERE device = ?1 AND config_id = ?2 AND provenance = ?3")
                .map_err(e)?;
            for r in records {
                st.execute(params![r.device, r.config_id, rows::name_of(&r.provenance)]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
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
                     decode_tok_s, energy_j, energy_s, tokens_hash, contended, retaken, itl_p99_ms) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
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
                    r.energy.as_ref().map(|x| x.seconds),
                    r.tokens_hash,
                    r.window.as_ref().map(|w| w.contended),
                    r.retaken,
                    crate::trust::Latency::of(std::iter::once(r)).map(|l| l.p99_ms)
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

    /// Store each record's frontier flag as `outcome` has it.
    pub fn write_frontier(&mut self, outcome: &Outcome) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |x| sqlite(&path, x);
        let tx = self.conn.transaction().map_err(e)?;
        // Only the rows marked now are written (a full scan reads, not writes).
        tx.execute("UPDATE results SET on_frontier = 0 WHERE on_frontier = 1", []).map_err(e)?;
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
