//! `results.json`: the sweep's data, every record with its provenance.

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
