//! `pocketbench import-xctest`: a farm's run of the app's XCTest into a
//! sweep's store, then the sweep's exports rendered again.

use std::path::PathBuf;

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::pipeline::exports::Import;

use super::render::EventArgs;
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
    let request = Import {
        attachments: a.attachments.clone(),
        metrics: a.metrics.clone(),
        out: a.out.clone(),
        dry_run: a.dry_run,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    pocketbench::pipeline::exports::import_xctest(&request, device, &mut a.events.reporter())?;
    Ok(Code::Ok)
}
