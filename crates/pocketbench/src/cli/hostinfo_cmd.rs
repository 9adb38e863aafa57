//! `pocketbench host-info`: measure this host's memory bandwidth and record
//! it in the host profile as its roofline.

use clap::Args;
use pocketbench::calibrate::points;
use pocketbench::device::Devices;
use pocketbench::event::{Event, Reporter};
use pocketbench::hostinfo;

use super::render::EventArgs;
use super::Code;

/// Arguments of `host-info`.
#[derive(Debug, Args)]
pub struct HostInfoArgs {
    /// The local device profile to update.
    #[arg(long, default_value = "host", value_name = "D")]
    pub device: String,
    /// Buffer size in MiB (far larger than the last-level cache).
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub buffer_mib: usize,
    /// Passes per figure (the best is kept).
    #[arg(long, default_value_t = hostinfo::PASSES, value_name = "N")]
    pub passes: usize,
    /// Measure and print only; do not write the profile.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `host-info`.
pub fn run(a: &HostInfoArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let done = points::host_info(devices, &a.device, a.buffer_mib, a.passes, a.dry_run)?;
    let (facts, bw) = (&done.facts, &done.bandwidth);
    let gb = |v: f64| v / 1e9;
    if a.json {
        outln!("{}", super::pretty(&serde_json::json!({ "host": facts, "bandwidth_bytes_per_s": bw }))?);
    } else {
        outln!("{}", facts.describe());
        outln!("  fingerprint {} (features: {})", facts.fingerprint, facts.features.join(" "));
        outln!("  read   {:>6.1} GB/s with 1 thread, {:>6.1} GB/s with {}", gb(bw.read_1), gb(bw.read_all), bw.threads);
        outln!(
            "  copy   {:>6.1} GB/s with 1 thread, {:>6.1} GB/s with {} (read + write bytes)",
            gb(bw.copy_1),
            gb(bw.copy_all),
            bw.threads
        );
        outln!("  measured: best of {} passes over a {} MiB buffer", a.passes, a.buffer_mib);
    }
    if let Some(path) = done.written {
        a.events.reporter().report(&Event::Wrote { path });
    }
    Ok(Code::Ok)
}
