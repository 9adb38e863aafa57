//! `results.json` (the sweep's data, every record with its provenance) and
//! `results.jsonl` (the records alone, one per line).

use super::{Exporter, ReportError, SweepReport};

/// Records up to which `results.json` is pretty-printed; larger sweeps write
/// it compact (the same data), which halves the time a 100,000-record
/// export takes. `jq .` pretty-prints either.
pub const PRETTY_UP_TO: usize = 10_000;

/// Writes the report data as JSON.
#[derive(Debug, Default, Clone, Copy)]
pub struct ResultsJson;

impl Exporter for ResultsJson {
    fn file_name(&self) -> &'static str {
        "results.json"
    }
    fn write(&self, report: &SweepReport, out: &mut dyn std::io::Write) -> Result<(), std::io::Error> {
        if report.outcome.results.len() <= PRETTY_UP_TO {
            serde_json::to_writer_pretty(&mut *out, report)?;
        } else {
            serde_json::to_writer(&mut *out, report)?;
        }
        out.write_all(b"\n")
    }
    fn render(&self, report: &SweepReport) -> Result<String, ReportError> {
        let json = if report.outcome.results.len() <= PRETTY_UP_TO {
            serde_json::to_string_pretty(report)
        } else {
            serde_json::to_string(report)
        };
        let mut s = json.map_err(|e| ReportError::Render { what: "results.json", message: e.to_string() })?;
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
    fn write(&self, report: &SweepReport, out: &mut dyn std::io::Write) -> Result<(), std::io::Error> {
        for r in &report.outcome.results {
            serde_json::to_writer(&mut *out, r)?;
            out.write_all(b"\n")?;
        }
        Ok(())
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
