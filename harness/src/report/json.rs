//! `results.json` (the sweep's data, every record with its provenance) and
//! `results.jsonl` (the records alone, one per line).

use super::{Exporter, ReportError, SweepReport};

/// Writes the report data as pretty JSON.
#[derive(Debug, Default, Clone, Copy)]
pub struct ResultsJson;

impl Exporter for ResultsJson {
    fn file_name(&self) -> &'static str {
        "results.json"
    }
    fn render(&self, report: &SweepReport) -> Result<String, ReportError> {
        let mut s = serde_json::to_string_pretty(report)
            .map_err(|e| ReportError::Render { what: "results.json", message: e.to_string() })?;
        s.push('\n');
        Ok(s)
    }
}

/// One record per line (JSON Lines): what a script streams or greps, and
/// what `pocketbench gate` reads without loading a whole report.
#[derive(Debug, Default, Clone, Copy)]
pub struct ResultsJsonl;

impl Exporter for ResultsJsonl {
    fn file_name(&self) -> &'static str {
        "results.jsonl"
    }
    fn render(&self, report: &SweepReport) -> Result<String, ReportError> {
        let mut s = String::new();
        for r in &report.outcome.results {
            s.push_str(
                &serde_json::to_string(r)
                    .map_err(|e| ReportError::Render { what: "results.jsonl", message: e.to_string() })?,
            );
            s.push('\n');
        }
        Ok(s)
    }
}
