//! `pocketbench import-xctest`: a farm's run of the app's XCTest into a
//! sweep's store, then the sweep's exports rendered again.

use std::path::{Path, PathBuf};

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::report::{self, SweepReport};
use pocketbench::store::Store;

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
    for i in &imported {
        let r = &i.record;
        eprintln!(
            "{} {}: {} on {}: decode {:.1} tok/s, prefill {:.1} tok/s, peak memory +{:.1} MB ({} repetitions)",
            if a.dry_run { "would store" } else { "storing" },
            i.test,
            r.config_name,
            r.device,
            r.decode_tok_s,
            r.prefill_tok_s,
            r.peak_mem_increase_mb,
            r.measurement.as_ref().map_or(0, |m| m.probe.reps.len())
        );
    }
    if a.dry_run {
        return Ok(Code::Ok);
    }
    let mut store = Store::open(&db)?;
    let line = std::env::args().collect::<Vec<_>>().join(" ");
    pocketbench::xctest::store(&mut store, device, &imported, &line)?;
    let data = SweepReport::from_store(&store)?;
    let dir = db.parent().map(Path::to_path_buf).unwrap_or_default();
    for p in report::write_all(&dir, &data, &report::standard())? {
        eprintln!("wrote {}", p.display());
    }
    Ok(Code::Ok)
}
