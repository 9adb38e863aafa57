//! A [`Record`] as a row of the `results` table and back, exactly: every
//! field is a column (verdicts included), the method texts of predictions
//! live once per calibration, and a measurement's raw samples and statistics
//! are kept whole as JSON beside its `samples` rows.

use std::collections::{BTreeMap, HashMap};

use rusqlite::types::Value;
use rusqlite::Row;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::arch::Shape;
use crate::budget::{Verdict, Verdicts};
use crate::record::{Provenance, Record};

/// The `results` columns a record is written to, in order.
pub(super) const RESULT_COLUMNS: &[&str] = &[
    "run_id",
    "config_id",
    "device",
    "engine",
    "prompt_tokens",
    "gen_tokens",
    "provenance",
    "job_key",
    "produced_by",
    "calibration_id",
    "methods",
    "params_total",
    "params_non_embedding",
    "package_bytes",
    "weight_bytes_per_token",
    "kv_bytes_per_token",
    "decode_tok_s",
    "prefill_tok_s",
    "ttft_ms",
    "peak_mem_increase_mb",
    "package_mb",
    "energy_j_per_run",
    "battery_fraction_per_run",
    "capability",
    "capability_source",
    "decode_status",
    "decode_value",
    "decode_limit",
    "decode_margin",
    "memory_status",
    "memory_value",
    "memory_limit",
    "memory_margin",
    "energy_status",
    "energy_value",
    "energy_limit",
    "energy_margin",
    "feasible",
    "on_frontier",
    "measurement",
];

/// A unit-like enum's serde name ("pass", "measured").
pub(super) fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => other.map(|v| v.to_string()).unwrap_or_default(),
    }
}

/// The enum named `s`.
pub(super) fn from_name<T: DeserializeOwned>(s: &str) -> rusqlite::Result<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|e| conversion(format!("`{s}`: {e}")))
}

pub(super) fn conversion(message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, message.into())
}

fn verdict_values(v: &Verdict) -> [Value; 4] {
    [Value::Text(name_of(&v.status)), Value::Real(v.value), opt(v.limit), opt(v.margin)]
}

fn opt(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::Real)
}

/// The values of [`RESULT_COLUMNS`] for `rec`. `methods` are written only
/// for measurements (predictions read their calibration's).
pub(super) fn result_values(rec: &Record, run_id: Option<i64>, calibration_id: i64, job_key: &str) -> Vec<Value> {
    let measured = rec.provenance == Provenance::Measured;
    let json = |v: &dyn erased::Json| Value::Text(v.json());
    let mut v = vec![
        run_id.map_or(Value::Null, Value::Integer),
        Value::Text(rec.config_id.clone()),
        Value::Text(rec.device.clone()),
        Value::Text(rec.engine.clone()),
        Value::Integer(rec.prompt_tokens.into()),
        Value::Integer(rec.gen_tokens.into()),
        Value::Text(name_of(&rec.provenance)),
        Value::Text(job_key.to_string()),
        Value::Text(rec.produced_by.clone()),
        Value::Integer(calibration_id),
        if measured { json(&rec.methods) } else { Value::Null },
        Value::Integer(rec.params_total as i64),
        Value::Integer(rec.params_non_embedding as i64),
        Value::Integer(rec.package_bytes as i64),
        Value::Integer(rec.weight_bytes_per_token as i64),
        Value::Integer(rec.kv_bytes_per_token as i64),
        Value::Real(rec.decode_tok_s),
        Value::Real(rec.prefill_tok_s),
        Value::Real(rec.ttft_ms),
        Value::Real(rec.peak_mem_increase_mb),
        Value::Real(rec.package_mb),
        Value::Real(rec.energy_j_per_run),
        opt(rec.battery_fraction_per_run),
        Value::Real(rec.capability),
        Value::Text(rec.capability_source.clone()),
    ];
    for verdict in [&rec.budgets.decode, &rec.budgets.memory, &rec.budgets.energy] {
        v.extend(verdict_values(verdict));
    }
    v.push(Value::Integer(rec.feasible.into()));
    v.push(Value::Integer(rec.on_frontier.into()));
    v.push(rec.measurement.as_ref().map_or(Value::Null, |m| json(m.as_ref())));
    v
}

/// Serialisation to JSON text without naming each type.
mod erased {
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}

/// What a calibration row gives every record that points at it.
#[derive(Debug, Clone)]
pub(super) struct CalibrationRow {
    pub label: String,
    pub methods: BTreeMap<String, String>,
}

/// The `SELECT` list that [`record_from_row`] reads, joined with `configurations c`.
pub(super) fn select_list() -> String {
    let shape = "c.hidden, c.layers, c.heads, c.kv_heads, c.head_dim, c.ffn, c.vocab, c.tied, c.qk_norm, c.quant, c.context, c.name";
    let cols: Vec<String> = RESULT_COLUMNS.iter().map(|c| format!("r.{c}")).collect();
    format!("{}, {shape}", cols.join(", "))
}

fn verdict(row: &Row, at: usize) -> rusqlite::Result<Verdict> {
    Ok(Verdict {
        status: from_name(&row.get::<_, String>(at)?)?,
        value: row.get(at + 1)?,
        limit: row.get(at + 2)?,
        margin: row.get(at + 3)?,
    })
}

fn json_col<T: DeserializeOwned>(row: &Row, at: usize) -> rusqlite::Result<Option<T>> {
    match row.get::<_, Option<String>>(at)? {
        None => Ok(None),
        Some(t) => serde_json::from_str(&t).map(Some).map_err(|e| conversion(format!("stored JSON: {e}"))),
    }
}

/// Rebuild a record from a row of [`select_list`].
pub(super) fn record_from_row(row: &Row, calibrations: &HashMap<i64, CalibrationRow>) -> rusqlite::Result<Record> {
    let n = RESULT_COLUMNS.len();
    let shape = Shape {
        hidden: row.get(n)?,
        layers: row.get(n + 1)?,
        heads: row.get(n + 2)?,
        kv_heads: row.get(n + 3)?,
        head_dim: row.get(n + 4)?,
        ffn: row.get(n + 5)?,
        vocab: row.get(n + 6)?,
        tied: row.get(n + 7)?,
        qk_norm: row.get(n + 8)?,
        quant: row.get::<_, String>(n + 9)?.parse().map_err(|e: crate::arch::QuantError| conversion(e.to_string()))?,
        context: row.get(n + 10)?,
    };
    let cal_id: i64 = row.get(9)?;
    let cal = calibrations.get(&cal_id).ok_or_else(|| conversion(format!("no calibration {cal_id}")))?;
    let methods = match json_col::<BTreeMap<String, String>>(row, 10)? {
        Some(m) => m,
        None => cal.methods.clone(),
    };
    let u = |i: usize| -> rusqlite::Result<u64> { Ok(row.get::<_, i64>(i)? as u64) };
    Ok(Record {
        config_id: row.get(1)?,
        config_name: row.get(n + 11)?,
        device: row.get(2)?,
        engine: row.get(3)?,
        provenance: from_name(&row.get::<_, String>(6)?)?,
        produced_by: row.get(8)?,
        calibration: cal.label.clone(),
        methods,
        shape,
        params_total: u(11)?,
        params_non_embedding: u(12)?,
        package_bytes: u(13)?,
        weight_bytes_per_token: u(14)?,
        kv_bytes_per_token: u(15)?,
        prompt_tokens: row.get(4)?,
        gen_tokens: row.get(5)?,
        decode_tok_s: row.get(16)?,
        prefill_tok_s: row.get(17)?,
        ttft_ms: row.get(18)?,
        peak_mem_increase_mb: row.get(19)?,
        package_mb: row.get(20)?,
        energy_j_per_run: row.get(21)?,
        battery_fraction_per_run: row.get(22)?,
        capability: row.get(23)?,
        capability_source: row.get(24)?,
        budgets: Verdicts { decode: verdict(row, 25)?, memory: verdict(row, 29)?, energy: verdict(row, 33)? },
        feasible: row.get(37)?,
        on_frontier: row.get(38)?,
        measurement: json_col(row, 39)?,
    })
}
