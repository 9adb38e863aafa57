//! A [`Record`] as a row of the `results` table and back, exactly: every
//! field is a column (verdicts included), the method texts of predictions
//! live once per calibration, and a measurement's raw samples and statistics
//! are kept whole as JSON beside its `samples` rows.

use std::collections::HashMap;

use rusqlite::Row;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::arch::Shape;
use crate::budget::{Certainty, Status, Verdict, Verdicts};
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
    "ttft_ms_low",
    "ttft_ms_high",
    "energy_j_per_run_low",
    "energy_j_per_run_high",
    "prefill_energy_share",
    "energy_certainty",
    "avg_power_w",
    "energy_gross_j_per_run",
    "itl_p50_ms",
    "itl_p90_ms",
    "itl_p99_ms",
    "itl_max_ms",
    "tokens_hash",
    "output_agrees",
    "contended",
    "decode_tok_s_low",
    "decode_tok_s_high",
    "prefill_tok_s_low",
    "prefill_tok_s_high",
    "peak_mem_increase_mb_low",
    "peak_mem_increase_mb_high",
    "low_confidence",
    "decode_certainty",
    "memory_certainty",
];

/// A unit-like enum's serde name ("pass", "measured").
pub(super) fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => other.map(|v| v.to_string()).unwrap_or_default(),
    }
}

pub(super) fn conversion(message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, message.into())
}

fn status(v: &Verdict) -> &'static str {
    match v.status {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::NotApplicable => "not-applicable",
    }
}

fn provenance(p: Provenance) -> &'static str {
    match p {
        Provenance::Predicted => "predicted",
        Provenance::Measured => "measured",
    }
}

/// Write `rec` with a prepared insert of [`RESULT_COLUMNS`]. `methods` are
/// written only for measurements (predictions read their calibration's).
/// Borrowed parameters: a 100,000-record sweep writes without a copy per row.
pub(super) fn insert_record(
    st: &mut rusqlite::CachedStatement<'_>,
    rec: &Record,
    run_id: Option<i64>,
    calibration_id: i64,
    job_key: &str,
) -> rusqlite::Result<usize> {
    let measured = rec.provenance == Provenance::Measured;
    let methods = measured.then(|| serde_json::to_string(&rec.methods).unwrap_or_default());
    let measurement = rec.measurement.as_ref().map(|m| serde_json::to_string(m.as_ref()).unwrap_or_default());
    let (d, m, e) = (&rec.budgets.decode, &rec.budgets.memory, &rec.budgets.energy);
    let meas = rec.measurement.as_deref();
    let itl = meas.and_then(|m| m.itl);
    let output = meas.and_then(|m| m.output.as_ref());
    st.execute(rusqlite::params![
        run_id,
        rec.config_id,
        rec.device,
        rec.engine,
        rec.prompt_tokens,
        rec.gen_tokens,
        provenance(rec.provenance),
        job_key,
        rec.produced_by,
        calibration_id,
        methods,
        rec.params_total as i64,
        rec.params_non_embedding as i64,
        rec.package_bytes as i64,
        rec.weight_bytes_per_token as i64,
        rec.kv_bytes_per_token as i64,
        rec.decode_tok_s,
        rec.prefill_tok_s,
        rec.ttft_ms,
        rec.peak_mem_increase_mb,
        rec.package_mb,
        rec.energy_j_per_run,
        rec.battery_fraction_per_run,
        rec.capability,
        rec.capability_source,
        status(d),
        d.value,
        d.limit,
        d.margin,
        status(m),
        m.value,
        m.limit,
        m.margin,
        status(e),
        e.value,
        e.limit,
        e.margin,
        rec.feasible,
        rec.on_frontier,
        measurement,
        rec.ttft_ms_low,
        rec.ttft_ms_high,
        rec.energy_j_per_run_low,
        rec.energy_j_per_run_high,
        rec.prefill_energy_share,
        e.certainty.map(Certainty::as_str),
        rec.avg_power_w,
        rec.energy_gross_j_per_run,
        itl.map(|l| l.p50_ms),
        itl.map(|l| l.p90_ms),
        itl.map(|l| l.p99_ms),
        itl.map(|l| l.max_ms),
        output.map(|o| o.tokens_hash.as_str()),
        output.map(|o| o.agree),
        meas.map(|m| m.contended),
        rec.bounds.decode_tok_s_low,
        rec.bounds.decode_tok_s_high,
        rec.bounds.prefill_tok_s_low,
        rec.bounds.prefill_tok_s_high,
        rec.bounds.peak_mem_increase_mb_low,
        rec.bounds.peak_mem_increase_mb_high,
        rec.bounds.low_confidence,
        d.certainty.map(Certainty::as_str),
        m.certainty.map(Certainty::as_str),
    ])
}

/// What a calibration row gives every record that points at it.
#[derive(Debug, Clone)]
pub(super) struct CalibrationRow {
    pub label: String,
    pub methods: crate::provenance::Methods,
}

/// The `SELECT` list that [`record_from_row`] reads, joined with `configurations c`.
pub(super) fn select_list() -> String {
    let shape = "c.hidden, c.layers, c.heads, c.kv_heads, c.head_dim, c.ffn, c.vocab, c.tied, c.qk_norm, c.quant, c.context, c.name";
    let cols: Vec<String> = RESULT_COLUMNS.iter().map(|c| format!("r.{c}")).collect();
    format!("{}, {shape}", cols.join(", "))
}

fn status_of(s: &str) -> rusqlite::Result<Status> {
    match s {
        "pass" => Ok(Status::Pass),
        "fail" => Ok(Status::Fail),
        "not-applicable" => Ok(Status::NotApplicable),
        other => Err(conversion(format!("unknown verdict `{other}`"))),
    }
}

fn certainty_of(s: Option<&str>) -> rusqlite::Result<Option<Certainty>> {
    match s {
        None => Ok(None),
        Some("sure") => Ok(Some(Certainty::Sure)),
        Some("uncertain") => Ok(Some(Certainty::Uncertain)),
        Some(other) => Err(conversion(format!("unknown certainty `{other}`"))),
    }
}

fn provenance_of(s: &str) -> rusqlite::Result<Provenance> {
    match s {
        "predicted" => Ok(Provenance::Predicted),
        "measured" => Ok(Provenance::Measured),
        other => Err(conversion(format!("unknown provenance `{other}`"))),
    }
}

fn verdict(row: &Row, at: usize) -> rusqlite::Result<Verdict> {
    Ok(Verdict {
        status: status_of(row.get_ref(at)?.as_str()?)?,
        value: row.get(at + 1)?,
        limit: row.get(at + 2)?,
        margin: row.get(at + 3)?,
        certainty: None,
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
    let methods = match json_col::<crate::provenance::Methods>(row, 10)? {
        Some(m) => m,
        None => cal.methods.clone(),
    };
    let u = |i: usize| -> rusqlite::Result<u64> { Ok(row.get::<_, i64>(i)? as u64) };
    Ok(Record {
        config_id: row.get(1)?,
        config_name: row.get(n + 11)?,
        device: row.get(2)?,
        engine: row.get(3)?,
        provenance: provenance_of(row.get_ref(6)?.as_str()?)?,
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
        budgets: Verdicts {
            decode: Verdict {
                certainty: certainty_of(row.get_ref("decode_certainty")?.as_str_or_null()?)?,
                ..verdict(row, 25)?
            },
            memory: Verdict {
                certainty: certainty_of(row.get_ref("memory_certainty")?.as_str_or_null()?)?,
                ..verdict(row, 29)?
            },
            energy: Verdict { certainty: certainty_of(row.get_ref(45)?.as_str_or_null()?)?, ..verdict(row, 33)? },
        },
        feasible: row.get(37)?,
        on_frontier: row.get(38)?,
        measurement: json_col(row, 39)?,
        ttft_ms_low: row.get(40)?,
        ttft_ms_high: row.get(41)?,
        energy_j_per_run_low: row.get(42)?,
        energy_j_per_run_high: row.get(43)?,
        prefill_energy_share: row.get(44)?,
        avg_power_w: row.get(46)?,
        energy_gross_j_per_run: row.get(47)?,
        bounds: crate::record::PredictedBounds {
            decode_tok_s_low: row.get("decode_tok_s_low")?,
            decode_tok_s_high: row.get("decode_tok_s_high")?,
            prefill_tok_s_low: row.get("prefill_tok_s_low")?,
            prefill_tok_s_high: row.get("prefill_tok_s_high")?,
            peak_mem_increase_mb_low: row.get("peak_mem_increase_mb_low")?,
            peak_mem_increase_mb_high: row.get("peak_mem_increase_mb_high")?,
            low_confidence: row.get("low_confidence")?,
        },
    })
}
