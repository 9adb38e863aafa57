//! Exporters: pure functions from stored sweep data ([`SweepReport`]) to
//! files. `results.json` is the data itself; `frontier.csv` and `summary.md`
//! are rendered from it, so `pocketbench report` can re-render them later
//! without predicting or measuring again.

mod csv_frontier;
pub mod gate;
pub mod html;
mod json;
mod markdown;
pub mod soak;
pub mod source;

pub use csv_frontier::FrontierCsv;
pub use html::ReportHtml;
pub use json::{ResultsJson, ResultsJsonl};
pub use markdown::SummaryMarkdown;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::pareto::Objective;
use crate::record::Record;
use crate::sweep::{Outcome, Plan};

/// A record's decode for tables: the value, and for a prediction its 90%
/// interval and "low confidence" where few points stand behind it
/// ("355 (200-631, low confidence)").
pub(crate) fn decode_text(r: &Record) -> String {
    let b = &r.bounds;
    let mut notes: Vec<String> = spread(b.decode_tok_s_low, b.decode_tok_s_high, 0).into_iter().collect();
    if b.low_confidence == Some(true) {
        notes.push("low confidence".into());
    }
    match notes.is_empty() {
        true => format!("{:.0}", r.decode_tok_s),
        false => format!("{:.0} ({})", r.decode_tok_s, notes.join(", ")),
    }
}

/// A record's energy per run for tables: the value, its range where the
/// profile's priors give one ("0.81 J/run (0.41-2.43)"), the share spent in
/// prefill, and "uncertain" where the range crosses the budget.
pub(crate) fn energy_text(r: &Record) -> String {
    let mut s = format!("{:.2} J/run", r.energy_j_per_run);
    let mut notes = Vec::new();
    notes.extend(spread(r.energy_j_per_run_low, r.energy_j_per_run_high, 2));
    if let Some(share) = r.prefill_energy_share {
        notes.push(format!("{:.0}% in prefill", share * 100.0));
    }
    if r.budgets.energy.certainty == Some(crate::budget::Certainty::Uncertain) {
        notes.push("verdict uncertain".into());
    }
    if !notes.is_empty() {
        s.push_str(&format!(" ({})", notes.join("; ")));
    }
    s
}

/// A record's time to first token for tables: "75 ms", or "136 ms
/// (110-271)" with the range its priors allow.
pub(crate) fn ttft_text(r: &Record) -> String {
    match spread(r.ttft_ms_low, r.ttft_ms_high, 0) {
        Some(range) => format!("{:.0} ms ({range})", r.ttft_ms),
        None => format!("{:.0} ms", r.ttft_ms),
    }
}

/// "LO-HI" at `decimals` for a range that is still a range once rounded;
/// `None` for a point (or no range at all).
pub fn spread(lo: Option<f64>, hi: Option<f64>, decimals: usize) -> Option<String> {
    let (lo, hi) = (format!("{:.decimals$}", lo?), format!("{:.decimals$}", hi?));
    (lo != hi).then(|| format!("{lo}-{hi}"))
}

/// Version of the `results.json` layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything a report is rendered from; serialised as `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Layout version.
    pub schema_version: u32,
    /// `pocketbench <version>`.
    pub tool: String,
    /// Sweep name.
    pub sweep: String,
    /// Sweep file.
    pub sweep_file: String,
    /// Sweep description.
    pub description: Option<String>,
    /// Prompt tokens per run.
    pub prompt_tokens: u32,
    /// Generated tokens per run.
    pub gen_tokens: u32,
    /// Frontier objectives.
    pub objectives: Vec<Objective>,
    /// Configurations dropped while expanding, by reason.
    pub skipped: Vec<(String, usize)>,
    /// Per-device summaries and all records.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The invocations that built the store (absent for a report made
    /// without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<crate::store::RunRow>,
    /// The gate's verdict against a baseline, when the report was rendered
    /// with one (`pocketbench report OUT --baseline B`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Box<crate::gate::Verdict>>,
}

impl SweepReport {
    /// Assemble from a plan and its outcome.
    pub fn new(plan: &Plan, mut outcome: Outcome) -> Self {
        outcome.hold_measurements();
        SweepReport {
            schema_version: SCHEMA_VERSION,
            tool: format!("pocketbench {}", env!("CARGO_PKG_VERSION")),
            sweep: plan.name.clone(),
            sweep_file: plan.file.display().to_string(),
            description: plan.description.clone(),
            prompt_tokens: plan.workload.prompt,
            gen_tokens: plan.workload.gen,
            objectives: plan.objectives.clone(),
            skipped: plan.skipped.clone(),
            outcome,
            runs: Vec::new(),
            comparison: None,
        }
    }
}

impl SweepReport {
    /// Everything the store holds, as a report: the pure function every
    /// export is rendered from (`pocketbench report OUT`).
    pub fn from_store(store: &crate::store::Store) -> Result<Self, crate::store::StoreError> {
        Self::with_outcome(store, crate::sweep::outcome(store, true)?)
    }

    /// [`SweepReport::from_store`] with the store's outcome already read
    /// (a sweep has it in hand when it finishes).
    pub fn with_outcome(store: &crate::store::Store, mut outcome: Outcome) -> Result<Self, crate::store::StoreError> {
        outcome.hold_measurements();
        let sweep = store.sweep()?.ok_or_else(|| crate::store::StoreError::Corrupt {
            path: store.path().to_path_buf(),
            message: "no sweep recorded in it".into(),
        })?;
        Ok(SweepReport {
            schema_version: SCHEMA_VERSION,
            tool: format!("pocketbench {}", env!("CARGO_PKG_VERSION")),
            sweep: sweep.identity.name,
            sweep_file: sweep.identity.file,
            description: sweep.description,
            prompt_tokens: sweep.prompt_tokens,
            gen_tokens: sweep.gen_tokens,
            objectives: sweep.objectives,
            skipped: sweep.skipped,
            outcome,
            runs: store.runs()?,
            comparison: None,
        })
    }
}

/// An output format.
pub trait Exporter: Sync {
    /// File name inside the output directory.
    fn file_name(&self) -> &'static str;
    /// Render the report.
    fn render(&self, report: &SweepReport) -> Result<String, ReportError>;
    /// Render the report into `out`: by default its [`Exporter::render`]
    /// text; a format whose file grows with the sweep (the JSON of every
    /// record) streams instead, so it is never held in memory whole.
    fn write(&self, report: &SweepReport, out: &mut dyn std::io::Write) -> Result<(), std::io::Error> {
        let text = self.render(report).map_err(std::io::Error::other)?;
        out.write_all(text.as_bytes())
    }
}

/// Rendering or writing a report failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Serialisation failed.
    #[error("cannot render {what}: {message}")]
    Render {
        /// Which output.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// Writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A results file could not be read back.
    #[error("{}: not a pocketbench results file: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// The standard set: report.html, results.json, results.jsonl, frontier.csv,
/// summary.md (the costliest first, so parallel rendering ends together).
pub fn standard() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(ReportHtml),
        Box::new(ResultsJson),
        Box::new(ResultsJsonl),
        Box::new(FrontierCsv),
        Box::new(SummaryMarkdown),
    ]
}

/// Render every exporter and write its file into `dir` (created if needed),
/// the exporters spread over the machine's cores. Each file is written to a
/// temporary name and renamed, so an interrupted run never leaves a
/// half-written report.
pub fn write_all(
    dir: &Path,
    report: &SweepReport,
    exporters: &[Box<dyn Exporter>],
) -> Result<Vec<PathBuf>, crate::Error> {
    Ok(write_files(dir, report, exporters)?)
}

fn write_files(dir: &Path, report: &SweepReport, exporters: &[Box<dyn Exporter>]) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Io { path: dir.to_path_buf(), source })?;
    let one = |e: &dyn Exporter| -> Result<PathBuf, ReportError> {
        let path = dir.join(e.file_name());
        write_through(&path, |w| e.write(report, w)).map_err(|source| match source.downcast::<ReportError>() {
            Ok(e) => e,
            Err(source) => ReportError::Io { path: path.clone(), source },
        })?;
        Ok(path)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, exporters.len().max(1));
    // Each thread takes the next exporter not yet taken, in the given order
    // (the costliest first in `standard`).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<PathBuf, ReportError>>> = (0..exporters.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(e) = exporters.get(i) else { return done };
                        done.push((i, one(e.as_ref())));
                    }
                })
            })
            .collect();
        for h in handles {
            for (i, r) in h.join().unwrap_or_default() {
                results[i] = Some(r);
            }
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(ReportError::Render { what: "report", message: "an exporter thread panicked".into() })
            })
        })
        .collect()
}

/// Write `path` through `f` into a temporary file beside it, renamed into
/// place once whole, so an interrupted run never leaves a half-written
/// export; a failure removes the temporary file.
fn write_through(
    path: &Path,
    f: impl FnOnce(&mut dyn std::io::Write) -> Result<(), std::io::Error>,
) -> Result<(), std::io::Error> {
    let tmp = crate::probe::entry::temporary_sibling(path, "tmp~");
    let written = std::fs::File::create(&tmp).and_then(|file| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        f(&mut w)?;
        std::io::Write::flush(&mut w)?;
        std::fs::rename(&tmp, path)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Read a `results.json` back.
pub fn load(path: &Path) -> Result<SweepReport, crate::Error> {
    Ok(read_report(path)?)
}

fn read_report(path: &Path) -> Result<SweepReport, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|e| ReportError::Parse { path: path.to_path_buf(), message: e.to_string() })
}
