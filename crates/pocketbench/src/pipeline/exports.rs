//! The commands that end in a sweep's exports without sweeping: `report`
//! (render again from the store, optionally gated against a baseline),
//! `merge` (shard stores into one) and `import-xctest` (a farm's XCTest run
//! stored as measured records). Each reports what it wrote as events.

use std::path::{Path, PathBuf};

use crate::device::Device;
use crate::error::Context as _;
use crate::event::{Event, Reporter};
use crate::report::{self, SweepReport};
use crate::store::{self, Store};
use crate::Error;

/// Render every export of `data` into the folder of `db`, reporting each file.
fn render(db: &Path, data: &SweepReport, reporter: &mut dyn Reporter) -> Result<(), Error> {
    let dir = db.parent().map(Path::to_path_buf).unwrap_or_default();
    for path in report::write_all(&dir, data, &report::standard())? {
        reporter.report(&Event::Wrote { path });
    }
    Ok(())
}

/// A baseline to gate a sweep's measurements against in its report.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// A store, OUT folder, results.json or .jsonl.
    pub path: PathBuf,
    /// The gate's settings.
    pub settings: crate::gate::Settings,
}

/// `report`: every export of the sweep in `out` rendered again from its
/// store, predicting and measuring nothing; with a baseline, the gate's
/// comparison added to report.html and results.json.
pub fn report(out: &Path, baseline: Option<&Baseline>, reporter: &mut dyn Reporter) -> Result<(), Error> {
    let db = store::file_in(out);
    let store = Store::open_read_only(&db)?;
    let mut data = SweepReport::from_store(&store)?;
    if let Some(b) = baseline {
        let base = report::source::load(&b.path).context("reading the baseline")?;
        let this = report::source::of_store(&store, &db.display().to_string()).context("reading this sweep's store")?;
        let v = crate::gate::evaluate(&base, &this, &b.settings);
        reporter.report(&Event::Compared {
            baseline: b.path.clone(),
            outcome: v.outcome.name().to_string(),
            comparisons: v.counts.comparisons,
        });
        data.comparison = Some(Box::new(v));
    }
    render(&db, &data, reporter)
}

/// `merge`: the stores of a sharded sweep into one at `out`, then every export.
pub fn merge(out: &Path, inputs: &[PathBuf], reporter: &mut dyn Reporter) -> Result<(), Error> {
    let inputs: Vec<PathBuf> = inputs.iter().map(|p| store::file_in(p)).collect();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let db = store::file_in(out);
    let (store, outcome) = crate::sweep::merge(&db, &refs)?;
    render(&db, &SweepReport::with_outcome(&store, outcome)?, reporter)
}

/// What `import-xctest` is asked to do.
#[derive(Debug, Clone)]
pub struct Import {
    /// The folder `xcresulttool export attachments` wrote.
    pub attachments: PathBuf,
    /// `xcresulttool get test-results metrics` output, to check against.
    pub metrics: Option<PathBuf>,
    /// A sweep's output folder (or its store) whose sweep has the device.
    pub out: PathBuf,
    /// Check and report what would be stored; write nothing.
    pub dry_run: bool,
    /// The command line, kept with the run in the store.
    pub command_line: String,
}

/// `import-xctest`: read and check the export, report each run, then
/// (unless a dry run) store them and render the sweep's exports again.
pub fn import_xctest(request: &Import, device: &Device, reporter: &mut dyn Reporter) -> Result<(), Error> {
    let imported = crate::xctest::read_export(&request.attachments, request.metrics.as_deref(), device)?;
    let db = store::file_in(&request.out);
    if !db.is_file() {
        return Err(Error::usage(format!(
            "no store at {}: sweep on `{}` into that folder first (`--predict-only` is enough)",
            db.display(),
            device.id()
        )));
    }
    for i in &imported {
        let r = &i.record;
        reporter.report(&Event::Imported {
            device: r.device.clone(),
            test: i.test.clone(),
            config: r.config_name.clone(),
            decode_tok_s: r.decode_tok_s,
            prefill_tok_s: r.prefill_tok_s,
            peak_mem_mb: r.peak_mem_increase_mb,
            reps: r.measurement.as_ref().map_or(0, |m| m.probe.reps.len()),
            dry_run: request.dry_run,
        });
    }
    if request.dry_run {
        return Ok(());
    }
    let mut store = Store::open(&db)?;
    crate::xctest::store(&mut store, device, &imported, &request.command_line)?;
    render(&db, &SweepReport::from_store(&store)?, reporter)
}
