//! The result record: one configuration on one device, with the provenance of
//! every number. Sweeps store these as data; reports are rendered from them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::arch::{Accounting, Shape};
use crate::budget::{judge, Verdicts};
use crate::capability::Capability;
use crate::device::Device;
use crate::predict::{predict, PREDICTOR};
use crate::workload::Workload;

/// How a record's metrics were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// From the calibrated physical model.
    Predicted,
    /// Run on the device.
    Measured,
}

/// One configuration x device result. Field names are a contract (CI gates and
/// scripts read them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Stable configuration id ([`Shape::id`]).
    pub config_id: String,
    /// Human name of the shape.
    pub config_name: String,
    /// Device id.
    pub device: String,
    /// Engine label.
    pub engine: String,
    /// Predicted or measured.
    pub provenance: Provenance,
    /// Which model (`roofline-v1`) or measurement tool produced the numbers.
    pub produced_by: String,
    /// The calibration behind a prediction.
    pub calibration: String,
    /// How each metric was obtained.
    pub methods: BTreeMap<String, String>,
    /// The shape: hidden, layers, heads, kv_heads, head_dim, ffn, vocab,
    /// tied, qk_norm, quant, context (flattened into the record).
    #[serde(flatten)]
    pub shape: Shape,
    /// All parameters.
    pub params_total: u64,
    /// Non-embedding parameters.
    pub params_non_embedding: u64,
    /// Deployment package bytes.
    pub package_bytes: u64,
    /// Weight bytes read per decoded token.
    pub weight_bytes_per_token: u64,
    /// KV bytes per context position at the engine's KV width.
    pub kv_bytes_per_token: u64,
    /// Prompt tokens of the workload.
    pub prompt_tokens: u32,
    /// Generated tokens of the workload.
    pub gen_tokens: u32,
    /// Decode tok/s.
    pub decode_tok_s: f64,
    /// Prefill tok/s.
    pub prefill_tok_s: f64,
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// Peak memory increase, MB (10^6 B).
    pub peak_mem_increase_mb: f64,
    /// Package, MB.
    pub package_mb: f64,
    /// Energy per run, J.
    pub energy_j_per_run: f64,
    /// Share of the battery per run; null without a battery.
    pub battery_fraction_per_run: Option<f64>,
    /// Capability (higher is better).
    pub capability: f64,
    /// Proxy or measured, and how.
    pub capability_source: String,
    /// Per-budget verdicts.
    pub budgets: Verdicts,
    /// Every applicable budget passes.
    pub feasible: bool,
    /// On the device's Pareto frontier of feasible configurations (sweeps only).
    pub on_frontier: bool,
}

/// Build a predicted record.
pub fn predicted(shape: &Shape, acct: &Accounting, device: &Device, w: &Workload, cap: &Capability) -> Record {
    let p = predict(shape, acct, &device.model, w);
    let budgets = judge(p.decode_tok_s, p.peak_mem_bytes, p.energy_j, &device.budgets);
    let how = format!("predicted by {PREDICTOR}");
    let methods = [
        ("decode_tok_s", format!("{how}: bytes per token / (efficiency x bandwidth) + fixed costs")),
        ("prefill_tok_s", format!("{how}: roofline of prefill FLOPs and weight bytes")),
        ("ttft_ms", format!("{how}: prefill time")),
        ("peak_mem_increase_mb", format!("{how}: weights + KV cache + scratch + engine overhead")),
        ("package_mb", "arithmetic: quantized weights + tokenizer/graph estimate".to_string()),
        ("energy_j_per_run", format!("{how}: active power x run time (estimate, not measured)")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Record {
        config_id: shape.id(),
        config_name: shape.to_string(),
        device: device.id().to_string(),
        engine: device.profile.engine.name.clone(),
        provenance: Provenance::Predicted,
        produced_by: PREDICTOR.to_string(),
        calibration: device.calibration_label(),
        methods,
        shape: *shape,
        params_total: acct.params_total,
        params_non_embedding: acct.params_non_embedding,
        package_bytes: acct.package_bytes,
        weight_bytes_per_token: acct.weight_bytes_per_token,
        kv_bytes_per_token: crate::arch::account::kv_bytes_per_position(shape, device.model.kv_bits),
        prompt_tokens: w.prompt,
        gen_tokens: w.gen,
        decode_tok_s: p.decode_tok_s,
        prefill_tok_s: p.prefill_tok_s,
        ttft_ms: p.ttft_ms,
        peak_mem_increase_mb: p.peak_mem_bytes / 1e6,
        package_mb: p.package_bytes / 1e6,
        energy_j_per_run: p.energy_j,
        battery_fraction_per_run: p.battery_fraction,
        capability: cap.score,
        capability_source: cap.source.clone(),
        feasible: budgets.feasible(),
        budgets,
        on_frontier: false,
    }
}
