//! Reading the store back: the sweep, its devices and runs, records,
//! failures and the outcome every report is rendered from.

use std::collections::HashMap;

use rusqlite::OptionalExtension;

use super::{rows, DeviceRow, Identity, RunRow, Store, StoreError, SweepRow};
use crate::outcome::{id_number, DeviceSummary, FailedMeasurement, Point};
use crate::record::{Provenance, Record};

impl Store {
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
                 budget_energy_j, leave_one_out, published, intervals FROM devices ORDER BY position",
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
                        leave_one_out: r.get(8)?,
                        published: r.get(9)?,
                        intervals: r.get(10)?,
                        ..DeviceSummary::default()
                    },
                    profile_digest: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
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
        self.query_rows_from("results r", cond, p)
    }

    /// [`Store::query_rows`] reading `results` as `from` (an index hint).
    fn query_rows_from(
        &self,
        from: &str,
        cond: &str,
        p: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<(Record, String)>, StoreError> {
        let cals = self.calibrations()?;
        let position: HashMap<String, usize> =
            self.devices()?.into_iter().enumerate().map(|(i, d)| (d.header.device, i)).collect();
        // CROSS JOIN keeps `results` the outer loop (SQLite's planner would
        // otherwise scan every configuration to find a few results).
        let sql = format!(
            "SELECT {}, r.job_key FROM {from} CROSS JOIN configurations c ON c.id = r.config_id WHERE {cond} ORDER BY r.id",
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

    /// Every stored result's [`Point`] (with `measured`, the measurements'
    /// too), by device, oldest first, each with whether it is measured: what
    /// the frontiers are computed from without reading the records. One pass
    /// over the table in row order, where a query per device would read
    /// every page once per device.
    pub fn points(&self, measured: bool) -> Result<HashMap<String, Vec<(bool, Point)>>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT device, config_id, provenance, feasible, capability, decode_tok_s, peak_mem_increase_mb, \
                 energy_j_per_run, params_total FROM results WHERE +provenance = 'predicted' OR (?1 AND +provenance = 'measured') \
                 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = st.query([measured]).map_err(|e| self.err(e))?;
        let mut out: HashMap<String, Vec<(bool, Point)>> = HashMap::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let device = r.get_ref(0).and_then(|v| v.as_str().map_err(Into::into)).map_err(|e| self.err(e))?;
            let point = Point {
                id: id_number(r.get_ref(1).and_then(|v| v.as_str().map_err(Into::into)).map_err(|e| self.err(e))?),
                feasible: r.get(3).map_err(|e| self.err(e))?,
                capability: r.get(4).map_err(|e| self.err(e))?,
                decode_tok_s: r.get(5).map_err(|e| self.err(e))?,
                peak_mem_mb: r.get(6).map_err(|e| self.err(e))?,
                energy_j: r.get(7).map_err(|e| self.err(e))?,
                params_total: r.get::<_, i64>(8).map_err(|e| self.err(e))? as u64,
            };
            let measured =
                r.get_ref(2).and_then(|v| v.as_str().map_err(Into::into)).map_err(|e| self.err(e))? == "measured";
            match out.get_mut(device) {
                Some(v) => v.push((measured, point)),
                None => {
                    out.insert(device.to_string(), vec![(measured, point)]);
                }
            }
        }
        Ok(out)
    }

    /// The records of `device` of the configurations `ids` (predictions,
    /// and with `measured` the measurements too), in plan order, oldest
    /// first within a configuration.
    pub fn records_of(&self, device: &str, ids: &[String], measured: bool) -> Result<Vec<Record>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        let provenance =
            if measured { "r.provenance IN ('predicted', 'measured')" } else { "r.provenance = 'predicted'" };
        for batch in ids.chunks(500) {
            let marks = vec!["?"; batch.len()].join(", ");
            let cond = format!("r.device = ? AND {provenance} AND r.config_id IN ({marks})");
            let mut p: Vec<&dyn rusqlite::ToSql> = vec![&device];
            p.extend(batch.iter().map(|s| s as &dyn rusqlite::ToSql));
            // The index led by the configuration (the unique one SQLite makes).
            let from = "results r INDEXED BY sqlite_autoindex_results_1";
            out.extend(self.query_rows_from(from, &cond, &p)?.into_iter().map(|(r, _)| r));
        }
        // Plan order (parameters, then id) over every batch; stable, so the
        // oldest stays first within a configuration.
        out.sort_by(|a, b| a.params_total.cmp(&b.params_total).then_with(|| a.config_id.cmp(&b.config_id)));
        Ok(out)
    }

    /// Every stored record of a provenance, device-major in plan order.
    pub fn records(&self, provenance: Provenance) -> Result<Vec<Record>, StoreError> {
        self.query_records("r.provenance = ?1", &[&rows::name_of(&provenance)])
    }

    /// Every row an outcome is made of ([`crate::outcome::Outcome::from_rows`]):
    /// the devices, the objectives, the predictions, and with `measured`
    /// the measurements (oldest first) and failures. Rows only: the
    /// frontier and summaries are the outcome module's to compute.
    pub fn rows(&self, measured: bool) -> Result<Rows, StoreError> {
        let sweep = self.sweep()?.ok_or_else(|| StoreError::Corrupt {
            path: self.path.clone(),
            message: "no sweep recorded in it".into(),
        })?;
        Ok(Rows {
            devices: self.devices()?.into_iter().map(|d| d.header).collect(),
            objectives: sweep.objectives,
            predicted: self.records(Provenance::Predicted)?,
            measured: if measured { self.records(Provenance::Measured)? } else { Vec::new() },
            failures: if measured { self.failures()? } else { Vec::new() },
        })
    }
}

/// What a store holds of a sweep's results, as rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Each device's identity and budgets (no counts), in plan order.
    pub devices: Vec<DeviceSummary>,
    /// The frontier's objectives.
    pub objectives: Vec<crate::pareto::Objective>,
    /// Predicted records, device-major in plan order.
    pub predicted: Vec<Record>,
    /// Measured records, oldest first.
    pub measured: Vec<Record>,
    /// Failed measurements.
    pub failures: Vec<FailedMeasurement>,
}
