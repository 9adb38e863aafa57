//! `pocketbench import-xctest`: a farm's run of the app's XCTest into a
//! sweep's store, then the sweep's exports rendered again.

use std::path::{Path, PathBuf};

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::report::{self, SweepReport};
use pocketbench::store::Store;

use pocketbench::event::{Event, Reporter};

use super::render::EventArgs;
use super::sweep_cmd::store_file;
use super::Code;

/// Arguments of `import-xctest`.
#[derive(Debug, Args)]
pub struct ImportXctestArgs {
    /// The folder `xcrun xcresulttool export attachments --path X.xcresult --output-path DIR` wrote (its
    /// manifest.json and files): the spec and every iteration's result the app's XCTest kept.
    #[arg(long, value_name = "DIR")]
    pub attachments: PathBuf,
    /// The same bundle's `xcrun xcresulttool get test-results metrics --path X.xcresult` output: checked
    /// against the attachments, and XCTest's clock and memory kept as notes.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// The device the test ran on: a profile in the store's sweep (`ios-any`, or a named iPhone or iPad).
    #[arg(long, value_name = "D")]
    pub device: String,
    /// A sweep's output folder (or its pocketbench.db) whose sweep has the device.
    #[arg(long, value_name = "OUT")]
    pub out: PathBuf,
    /// Check and print what would be stored; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `import-xctest`.
pub fn run(a: &ImportXctestArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let device = devices.get(&a.device)?;
    let imported = pocketbench::xctest::read_export(&a.attachments, a.metrics.as_deref(), device)?;
    let db = store_file(&a.out);
    if !db.is_file() {
        return Err(pocketbench::Error::usage(format!(
            "no store at {}: sweep on `{}` into that folder first (`--predict-only` is enough)",
            db.display(),
            a.device
        )));
    }
    let mut reporter = a.events.reporter();
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
            dry_run: a.dry_run,
        });
    }
    if a.dry_run {
        return Ok(Code::Ok);
    }
    let mut store = Store::open(&db)?;
    let line = std::env::args().collect::<Vec<_>>().join(" ");
    pocketbench::xctest::store(&mut store, device, &imported, &line)?;
    let data = SweepReport::from_store(&store)?;
    let dir = db.parent().map(Path::to_path_buf).unwrap_or_default();
    for path in report::write_all(&dir, &data, &report::standard())? {
        reporter.report(&Event::Wrote { path });
    }
    Ok(Code::Ok)
}
