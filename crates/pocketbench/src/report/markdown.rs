//! `summary.md`: per device, the budgets, best and largest feasible
//! configurations and the frontier table.

use std::fmt::Write;

use super::{Exporter, ReportError, SweepReport};
use crate::outcome::DeviceSummary;
use crate::record::{Provenance, Record};
use crate::units::ParamCount;

/// Frontier rows shown per device; the rest are in `frontier.csv`.
pub const MAX_ROWS: usize = 20;

/// Writes the Markdown summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct SummaryMarkdown;

fn provenance_note(report: &SweepReport) -> String {
    let measured = report.outcome.results.iter().filter(|r| r.provenance == Provenance::Measured).count();
    let predicted = report.outcome.results.len() - measured;
    let proxy = report.outcome.results.iter().any(|r| r.capability_source.starts_with("proxy"));
    let mut s = format!(
        "**Provenance:** {predicted} record(s) predicted by the calibrated physical model `roofline-v1` (each device's calibration is named below), {measured} measured."
    );
    if proxy {
        s.push_str(" Capability is a **proxy** (Chinchilla loss on non-embedding parameters with a depth rule), not a benchmark score, unless a scores file replaced it.");
    }
    s
}

fn line(r: &Record) -> String {
    format!(
        "`{}` {}: {} params, capability {:.1}, {} tok/s decode, time to first token {}, {:.0} MB peak, {} ({})",
        r.config_id,
        r.config_name,
        ParamCount(r.params_total as f64),
        r.capability,
        super::decode_text(r),
        super::ttft_text(r),
        r.peak_mem_increase_mb,
        super::energy_text(r),
        r.provenance_label()
    )
}

impl Exporter for SummaryMarkdown {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }
    fn render(&self, report: &SweepReport) -> Result<String, ReportError> {
        let mut s = String::new();
        let _ = writeln!(s, "# Sweep `{}`\n", report.sweep);
        if let Some(d) = &report.description {
            let _ = writeln!(s, "{d}\n");
        }
        let objectives: Vec<String> = report.objectives.iter().map(|o| o.to_string()).collect();
        let configs = report.outcome.devices.first().map_or(0, |d| d.configs);
        let _ = writeln!(
            s,
            "Sweep file `{}`; {} configurations x {} devices; workload {} prompt + {} generated tokens per run; frontier objectives: {}.\n",
            report.sweep_file,
            configs,
            report.outcome.devices.len(),
            report.prompt_tokens,
            report.gen_tokens,
            objectives.join(", ")
        );
        if !report.skipped.is_empty() {
            let skipped: Vec<String> = report.skipped.iter().map(|(r, n)| format!("{n} {r}")).collect();
            let _ = writeln!(s, "Dropped while expanding: {}.\n", skipped.join("; "));
        }
        let _ = writeln!(s, "{}\n", provenance_note(report));
        failures(&mut s, report);
        for d in &report.outcome.devices {
            device(&mut s, report, d);
        }
        Ok(s)
    }
}

fn failures(s: &mut String, report: &SweepReport) {
    if report.outcome.failures.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Failed measurements\n");
    let _ = writeln!(s, "| device | config | id | attempts | reason |");
    let _ = writeln!(s, "|---|---|---|---:|---|");
    for f in &report.outcome.failures {
        let _ =
            writeln!(s, "| {} | {} | `{}` | {} | {} |", f.device, f.config_name, f.config_id, f.attempts, f.failure);
    }
    s.push('\n');
}

/// One device's section: budgets, counts, best and largest, the frontier table.
fn device(s: &mut String, report: &SweepReport, d: &DeviceSummary) {
    let _ = writeln!(s, "## {} (`{}`, {})\n", d.name, d.device, d.engine);
    let _ = writeln!(s, "Calibration: {}.\n", d.calibration);
    let energy = d
        .budget_energy_j
        .map_or("energy not budgeted (no battery)".to_string(), |e| format!("energy <= {e:.2} J per run"));
    let _ = writeln!(
        s,
        "Budgets: decode >= {:.0} tok/s, peak memory increase <= {:.0} MB, {}.\n",
        d.budget_decode_tok_s, d.budget_memory_mb, energy
    );
    let _ = writeln!(
        s,
        "Feasible: {} of {}; on the frontier: {}; hypervolume {:.4}.\n",
        d.feasible, d.configs, d.frontier, d.hypervolume
    );
    // Measurements first: a verdict they contradict never heads the section.
    if let Some(c) = d.agreement.as_ref().and_then(|a| a.contradiction()) {
        let _ = writeln!(s, "**Measured: {c}.**\n");
    }
    measured_table(s, report, d);
    let suspect = d.agreement.as_ref().is_some_and(crate::agreement::Agreement::doubts_predictions);
    let find = |id: &Option<String>| {
        id.as_ref().and_then(|id| report.outcome.results.iter().find(|r| r.device == d.device && &r.config_id == id))
    };
    let flag = |r: &Record| {
        if suspect && r.provenance == crate::record::Provenance::Predicted {
            " (suspect: see the measurements above)"
        } else {
            ""
        }
    };
    match (find(&d.best_feasible), find(&d.largest_feasible)) {
        (Some(best), Some(largest)) => {
            let _ = writeln!(s, "- Best feasible: {}{}", line(best), flag(best));
            let _ = writeln!(s, "- Largest feasible: {}{}\n", line(largest), flag(largest));
        }
        _ => {
            let _ = writeln!(s, "No configuration meets every budget.\n");
        }
    }
    let mut rows: Vec<&Record> =
        report.outcome.results.iter().filter(|r| r.device == d.device && r.on_frontier).collect();
    rows.sort_by(|a, b| b.capability.total_cmp(&a.capability).then(b.decode_tok_s.total_cmp(&a.decode_tok_s)));
    if rows.is_empty() {
        return;
    }
    frontier_table(s, &rows);
}

/// The device's measured configurations against their predictions, and
/// what the residuals say.
fn measured_table(s: &mut String, report: &SweepReport, d: &DeviceSummary) {
    let Some(a) = &d.agreement else { return };
    let _ = writeln!(s, "Measured against predicted: {}.\n", a.describe());
    let _ =
        writeln!(s, "| measured config | decode predicted | measured | error | peak MB predicted | measured | error |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    let err = |p: f64, m: f64| if m > 0.0 { format!("{:+.1}%", (p / m - 1.0) * 100.0) } else { "n/a".into() };
    for r in report.outcome.results.iter().filter(|r| r.device == d.device) {
        let Some(m) = &r.measurement else { continue };
        let p = &m.predicted;
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {} | {:.0} | {:.0} | {} |",
            r.config_name,
            p.decode_tok_s,
            r.decode_tok_s,
            err(p.decode_tok_s, r.decode_tok_s),
            p.peak_mem_increase_mb,
            r.peak_mem_increase_mb,
            err(p.peak_mem_increase_mb, r.peak_mem_increase_mb)
        );
    }
    s.push('\n');
}

fn frontier_table(s: &mut String, rows: &[&Record]) {
    let _ = writeln!(
        s,
        "| config | id | params | capability | decode tok/s | time to first token | peak MB | energy | figures |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---|");
    for r in rows.iter().take(MAX_ROWS) {
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {:.1} | {} | {} | {:.0} | {} | {} |",
            r.config_name,
            r.config_id,
            ParamCount(r.params_total as f64),
            r.capability,
            super::decode_text(r),
            super::ttft_text(r),
            r.peak_mem_increase_mb,
            super::energy_text(r),
            r.provenance_label()
        );
    }
    if rows.len() > MAX_ROWS {
        let _ = writeln!(s, "\n{} more frontier configurations in `frontier.csv`.", rows.len() - MAX_ROWS);
    }
    s.push('\n');
}
