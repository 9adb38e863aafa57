//! `frontier.csv`: the frontier of every device, one row per configuration.

use super::{Exporter, ReportError, SweepReport};

/// Writes frontier rows, device by device, highest capability first.
#[derive(Debug, Default, Clone, Copy)]
pub struct FrontierCsv;

const HEADER: &[&str] = &[
    "device",
    "config_id",
    "config_name",
    "provenance",
    "params_total",
    "params_non_embedding",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "tied",
    "quant",
    "capability",
    "decode_tok_s",
    "prefill_tok_s",
    "ttft_ms",
    "peak_mem_increase_mb",
    "package_mb",
    "energy_j_per_run",
    "battery_fraction_per_run",
    "feasible",
    "ttft_ms_low",
    "ttft_ms_high",
    "energy_j_per_run_low",
    "energy_j_per_run_high",
    "prefill_energy_share",
    "energy_certainty",
    "decode_tok_s_low",
    "decode_tok_s_high",
    "prefill_tok_s_low",
    "prefill_tok_s_high",
    "peak_mem_increase_mb_low",
    "peak_mem_increase_mb_high",
    "low_confidence",
];

impl Exporter for FrontierCsv {
    fn file_name(&self) -> &'static str {
        "frontier.csv"
    }
    fn render(&self, report: &SweepReport) -> Result<String, ReportError> {
        let err = |e: csv::Error| ReportError::Render { what: "frontier.csv", message: e.to_string() };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER).map_err(err)?;
        for d in &report.outcome.devices {
            let mut rows: Vec<_> =
                report.outcome.results.iter().filter(|r| r.device == d.device && r.on_frontier).collect();
            rows.sort_by(|a, b| b.capability.total_cmp(&a.capability).then(b.decode_tok_s.total_cmp(&a.decode_tok_s)));
            for r in rows {
                let f = |v: f64, p: usize| format!("{v:.p$}");
                let o = |v: Option<f64>, p: usize| v.map_or(String::new(), |v| f(v, p));
                w.write_record([
                    r.device.clone(),
                    r.config_id.clone(),
                    r.config_name.clone(),
                    format!("{:?}", r.provenance).to_lowercase(),
                    r.params_total.to_string(),
                    r.params_non_embedding.to_string(),
                    r.shape.layers.to_string(),
                    r.shape.hidden.to_string(),
                    r.shape.heads.to_string(),
                    r.shape.kv_heads.to_string(),
                    r.shape.head_dim.to_string(),
                    r.shape.ffn.to_string(),
                    r.shape.vocab.to_string(),
                    r.shape.tied.to_string(),
                    r.shape.quant.to_string(),
                    f(r.capability, 3),
                    f(r.decode_tok_s, 2),
                    f(r.prefill_tok_s, 2),
                    f(r.ttft_ms, 2),
                    f(r.peak_mem_increase_mb, 2),
                    f(r.package_mb, 2),
                    f(r.energy_j_per_run, 4),
                    r.battery_fraction_per_run.map_or(String::new(), |b| format!("{b:.3e}")),
                    r.feasible.to_string(),
                    o(r.ttft_ms_low, 2),
                    o(r.ttft_ms_high, 2),
                    o(r.energy_j_per_run_low, 4),
                    o(r.energy_j_per_run_high, 4),
                    o(r.prefill_energy_share, 4),
                    r.budgets.energy.certainty.map_or(String::new(), |c| c.as_str().to_string()),
                    o(r.bounds.decode_tok_s_low, 2),
                    o(r.bounds.decode_tok_s_high, 2),
                    o(r.bounds.prefill_tok_s_low, 2),
                    o(r.bounds.prefill_tok_s_high, 2),
                    o(r.bounds.peak_mem_increase_mb_low, 2),
                    o(r.bounds.peak_mem_increase_mb_high, 2),
                    r.bounds.low_confidence.map_or(String::new(), |b| b.to_string()),
                ])
                .map_err(err)?;
            }
        }
        let bytes = w.into_inner().map_err(|e| ReportError::Render { what: "frontier.csv", message: e.to_string() })?;
        String::from_utf8(bytes).map_err(|e| ReportError::Render { what: "frontier.csv", message: e.to_string() })
    }
}
