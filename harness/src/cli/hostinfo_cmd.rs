//! `pocketbench host-info`: measure this host's memory bandwidth and record
//! it in the host profile as its roofline.

use clap::Args;
use pocketbench::calibrate::write_profile;
use pocketbench::device::{Devices, Transport};
use pocketbench::hostinfo;
use pocketbench::probe::HostFacts;

use super::exit::{Harness, Usage};
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
}

/// The source text of a bandwidth fact measured by `host-info`.
pub fn bandwidth_source(facts: &HostFacts, bw: &hostinfo::Bandwidth, buffer_mib: usize, passes: usize) -> String {
    format!(
        "measured {} by `pocketbench host-info` on {} (fingerprint {}): read (sum) over a {buffer_mib} MiB buffer advised for huge pages, {} threads, best of {passes} passes; 1 thread {:.1} GB/s; copy {:.1} GB/s",
        hostinfo::today(),
        facts.describe(),
        facts.fingerprint,
        bw.threads,
        bw.read_1 / 1e9,
        bw.copy_all / 1e9
    )
}

/// Run `host-info`.
pub fn run(a: &HostInfoArgs, devices: &Devices) -> anyhow::Result<Code> {
    let device = devices.get(&a.device)?;
    if device.profile.transport != Transport::Local {
        return Err(Usage(format!("device `{}` is not this host (transport is not `local`)", a.device)).into());
    }
    if a.buffer_mib < 64 || a.passes == 0 {
        return Err(Usage("--buffer-mib must be at least 64 and --passes at least 1".into()).into());
    }
    let facts = HostFacts::collect();
    let bw = hostinfo::measure(a.buffer_mib << 20, a.passes);
    let gb = |v: f64| v / 1e9;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&serde_json::json!({ "host": facts, "bandwidth_bytes_per_s": bw }))?);
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
    if a.dry_run {
        return Ok(Code::Ok);
    }
    // This machine's own profile (made from the loaded one when it has none).
    let target = devices.writable(device)?;
    let mut doc: toml_edit::DocumentMut =
        target.text.parse().map_err(|e: toml_edit::TomlError| Harness(e.to_string()))?;
    doc["facts"]["bandwidth"]["value"] = toml_edit::value(format!("{:.1} GB/s", gb(bw.read_all)));
    doc["facts"]["bandwidth"]["source"] = toml_edit::value(bandwidth_source(&facts, &bw, a.buffer_mib, a.passes));
    write_profile(&target.path, doc.to_string().as_bytes()).map_err(pocketbench::Error::from)?;
    eprintln!("wrote the bandwidth fact into {}", target.path.display());
    Ok(Code::Ok)
}
