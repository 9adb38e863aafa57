//! `calibrate --import`: the outputs people already have, from their phones
//! and machines, as calibration points. llama-bench (`-o json`, `-o jsonl`,
//! `-o csv`), MNN's `llm_bench` (its markdown table, `-j` JSON) and
//! pocketbench's own results. Each row becomes a point that says it was
//! imported, from which file and row, and which engine class measured it.
//!
//! Everything is read, mapped to a shape and checked against the target
//! device before anything is written: a bad row anywhere leaves the profile
//! as it was.

mod checks;
mod llama_bench;
mod mnn;
mod rows;

use std::fmt;
use std::path::{Path, PathBuf};

pub use rows::{At, ImportError, ModelRef, Row, Speeds, Spread};

use crate::arch::{Shape, ShapeSpec};
use crate::device::{Device, Devices, ImportedFrom, PointToml};
use crate::error::Context as _;
use crate::record::Record;
use crate::Error;

/// The outputs `--import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `llama-bench -o json`.
    LlamaBenchJson,
    /// `llama-bench -o jsonl`.
    LlamaBenchJsonl,
    /// `llama-bench -o csv`.
    LlamaBenchCsv,
    /// MNN `llm_bench`'s markdown table.
    MnnMarkdown,
    /// MNN `llm_bench -j`.
    MnnJson,
    /// pocketbench's own result JSON (`run --json`, a sweep's records).
    Pocketbench,
}

impl Format {
    /// Every format, in `--format`'s order.
    pub const ALL: [Format; 6] = [
        Format::LlamaBenchJson,
        Format::LlamaBenchJsonl,
        Format::LlamaBenchCsv,
        Format::MnnMarkdown,
        Format::MnnJson,
        Format::Pocketbench,
    ];

    /// Its `--format` name.
    pub fn name(self) -> &'static str {
        match self {
            Format::LlamaBenchJson => "llama-bench-json",
            Format::LlamaBenchJsonl => "llama-bench-jsonl",
            Format::LlamaBenchCsv => "llama-bench-csv",
            Format::MnnMarkdown => "mnn-markdown",
            Format::MnnJson => "mnn-json",
            Format::Pocketbench => "pocketbench",
        }
    }

    /// The tool and option that write it.
    pub fn describe(self) -> &'static str {
        match self {
            Format::LlamaBenchJson => "llama-bench -o json",
            Format::LlamaBenchJsonl => "llama-bench -o jsonl",
            Format::LlamaBenchCsv => "llama-bench -o csv",
            Format::MnnMarkdown => "MNN llm_bench table",
            Format::MnnJson => "MNN llm_bench -j",
            Format::Pocketbench => "pocketbench result",
        }
    }

    /// The engine class its rows were measured by (`None`: the record says).
    pub fn engine_class(self) -> Option<&'static str> {
        match self {
            Format::LlamaBenchJson | Format::LlamaBenchJsonl | Format::LlamaBenchCsv => Some("llama.cpp"),
            Format::MnnMarkdown | Format::MnnJson => Some("mnn"),
            Format::Pocketbench => None,
        }
    }

    /// What `text` is, from its first lines, or why it is none of these.
    pub fn detect(text: &str) -> Result<Format, String> {
        let t = text.trim_start();
        let first = t.lines().next().unwrap_or_default();
        let table = |needle: &str| {
            t.lines().any(|l| {
                let l = l.trim();
                l.starts_with('|') && l.split('|').any(|c| c.trim() == needle)
            })
        };
        Ok(if t.starts_with('[') && t.contains("\"avg_ts\"") {
            Format::LlamaBenchJson
        } else if t.starts_with('{') && first.contains("\"avg_ts\"") {
            Format::LlamaBenchJsonl
        } else if t.starts_with('{') && t.contains("\"results\"") && t.contains("\"backend\"") {
            Format::MnnJson
        } else if (t.starts_with('{') || t.starts_with('[')) && t.contains("\"config_name\"") {
            Format::Pocketbench
        } else if !t.starts_with(['{', '[']) && first.split(',').any(|f| f.trim_matches('"') == "avg_ts") {
            Format::LlamaBenchCsv
        } else if table("modelSize") {
            Format::MnnMarkdown
        } else if table("t/s") && table("params") {
            return Err("llama-bench's markdown table (its default output) leaves out the build, the CPU, the model file and the repetitions: run it again with `-o json`, `-o jsonl` or `-o csv`".into());
        } else {
            return Err(format!(
                "not an output pocketbench imports: expected {} (or pass --format)",
                Format::ALL.map(Format::describe).join(", ")
            ));
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            format!("unknown format `{s}`: expected one of {}", Format::ALL.map(Format::name).join(", "))
        })
    }
}

/// How `calibrate --import` takes its files.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Read every file as this, instead of recognising it.
    pub format: Option<Format>,
    /// Map every row to this shape (`--preset`, `--shape`), instead of
    /// reading it from the row's model file.
    pub model: Option<ShapeSpec>,
    /// Hold the points out of the fit.
    pub holdout: bool,
    /// Take rows measured on another machine into a local device.
    pub force: bool,
    /// Read, map, check and fit; write nothing.
    pub dry_run: bool,
}

/// One imported row, as it became a point.
#[derive(Debug, Clone)]
pub struct ImportedPoint {
    /// The file, row and line.
    pub at: At,
    /// The format it was read as.
    pub format: Format,
    /// The tool's name of the test (`pp512`, `tg128@d512`).
    pub test: String,
    /// Its figures in words.
    pub figures: String,
    /// The shape it was mapped to.
    pub shape: Shape,
    /// How: from the GGUF's metadata, or given by hand.
    pub mapped_by: String,
    /// The point written.
    pub point: PointToml,
}

impl ImportedPoint {
    /// One line: "FILE row 2 (line 47), pp512: prefill 1234.56 ± 7.89 tok/s → SHAPE".
    pub fn describe(&self) -> String {
        let line = self.at.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        format!(
            "{} row {}{line}, {}: {} -> {} ({})",
            self.at.file.display(),
            self.at.row,
            self.test,
            self.figures,
            self.shape,
            self.mapped_by
        )
    }
}

/// The profile after an import.
#[derive(Debug)]
pub struct Imported {
    /// The device as its profile now reads (or would, with `dry_run`).
    pub device: Device,
    /// Every point, in file and row order.
    pub points: Vec<ImportedPoint>,
}

fn read(file: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(file).map_err(|e| ImportError::file(file, format!("cannot read: {e}")))
}

/// `calibrate --device ID --import FILE...`: every file read, every row
/// mapped and checked, then the points added together and fitted before
/// anything is written.
pub fn import(devices: &Devices, id: &str, files: &[PathBuf], o: &Options) -> Result<Imported, Error> {
    let device = devices.get(id)?;
    let mut points = Vec::new();
    for file in files {
        let text = read(file)?;
        let format = match o.format {
            Some(f) => f,
            None => Format::detect(&text).map_err(|m| ImportError::file(file, m).at_line(1))?,
        };
        let rows = match format {
            Format::LlamaBenchJson | Format::LlamaBenchJsonl | Format::LlamaBenchCsv => {
                llama_bench::rows(file, &text, format)?
            }
            Format::MnnMarkdown => mnn::markdown_rows(file, &text)?,
            Format::MnnJson => mnn::json_rows(file, &text)?,
            Format::Pocketbench => {
                points.extend(records(devices, device, file, &text, o)?);
                continue;
            }
        };
        for row in rows {
            points.push(checks::point(devices, device, &row, format, o)?);
        }
    }
    let toml: Vec<PointToml> = points.iter().map(|p| p.point.clone()).collect();
    let device = super::points::add_points(devices, device, &toml, o.dry_run)
        .with_context(|| format!("importing calibration points into the profile of `{id}`"))?;
    Ok(Imported { device, points })
}

/// pocketbench's own results: one record, an array of them, or one a line.
fn records(
    devices: &Devices,
    device: &Device,
    file: &Path,
    text: &str,
    o: &Options,
) -> Result<Vec<ImportedPoint>, Error> {
    let not =
        |e: serde_json::Error| ImportError::file(file, format!("not a pocketbench result: {e}")).at_line(e.line());
    let all: Vec<(usize, Record)> = match text.trim_start().as_bytes().first() {
        Some(b'[') => serde_json::from_str::<Vec<Record>>(text).map_err(not)?.into_iter().map(|r| (0, r)).collect(),
        _ if text.trim().lines().count() > 1 && text.trim().lines().all(|l| l.trim().starts_with('{')) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l)
                    .map(|r| (i + 1, r))
                    .map_err(|e| ImportError::file(file, format!("not a pocketbench result: {e}")).at_line(i + 1))
            })
            .collect::<Result<_, _>>()?,
        _ => vec![(1, serde_json::from_str(text).map_err(not)?)],
    };
    all.into_iter()
        .enumerate()
        .map(|(i, (line, rec))| {
            let at = At { file: file.to_path_buf(), row: i + 1, line: (line > 0).then_some(line) };
            let add = super::points::AddOptions { holdout: o.holdout, force: o.force, dry_run: o.dry_run };
            let mut point = super::points::point_of_record(devices, device, &rec, &at.to_string(), &add)?;
            point.imported = Some(ImportedFrom {
                format: Format::Pocketbench.describe().into(),
                file: file.display().to_string(),
                row: at.row,
                line: at.line,
                // The engine the probe ran (the record's `engine` is a label).
                engine: rec.measurement.as_ref().map_or(rec.engine.clone(), |m| {
                    m.probe
                        .engine
                        .parse::<crate::probe::EngineKind>()
                        .map_or(m.probe.engine.clone(), |e| e.class().into())
                }),
            });
            Ok(ImportedPoint {
                test: format!("{}+{}", rec.prompt_tokens, rec.gen_tokens),
                figures: format!(
                    "decode {:.2} tok/s, prefill {:.2} tok/s, peak {:.1} MB",
                    rec.decode_tok_s, rec.prefill_tok_s, rec.peak_mem_increase_mb
                ),
                shape: rec.shape,
                mapped_by: "the record's own shape".into(),
                format: Format::Pocketbench,
                point,
                at,
            })
        })
        .collect()
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ": row {}", self.row)
    }
}

#[cfg(test)]
mod tests;
