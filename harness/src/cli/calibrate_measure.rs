//! `pocketbench calibrate --device host --measure`: the whole calibration of
//! this machine in one command. Bandwidth first (as `host-info`), then the
//! design's jobs in round-robin rounds through the device's runner, then
//! the fit; the profile is written only when the fit holds, into this
//! machine's own profile folder (or `--devices-dir`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use pocketbench::calibrate::design::Design;
use pocketbench::calibrate::session::{self, Progress};
use pocketbench::calibrate::{calibrate, fitted_text, with_points, write_profile};
use pocketbench::device::{home, Origin};
use pocketbench::device::{Device, Devices, FreeParam};
use pocketbench::hostinfo;
use pocketbench::runner::JobSettings;

use super::calibrate_cmd::{print_fit, CalibrateArgs};
use super::exit::{Harness, Usage};
use super::Code;

/// Run `calibrate --measure`.
pub fn run(a: &CalibrateArgs, devices: &Devices) -> anyhow::Result<Code> {
    let started = Instant::now();
    let id = a.device.as_deref().unwrap_or_default();
    let (device, here) =
        this_machine(devices, id, "--measure", "calibrate it with `--add` and records measured on it")?;
    let design = match &a.design {
        Some(f) => Design::from_file(f).map_err(|e| Usage(e.to_string()))?,
        None => Design::built_in(a.quick),
    }
    .with_rounds(a.rounds);
    let settings = settings(a.threads)?;
    let buffer_mib = a.buffer_mib.unwrap_or(if a.quick { 256 } else { 1024 });
    if buffer_mib < 64 {
        return Err(Usage("--buffer-mib must be at least 64".into()).into());
    }

    // The profile this calibration replaces: this machine's own (made from
    // the loaded one when it has none), without its old points.
    let target = devices.writable(device)?;
    let mut doc: toml_edit::DocumentMut =
        target.text.parse().map_err(|e: toml_edit::TomlError| Harness(format!("{}: {e}", target.path.display())))?;
    doc.remove("calibration");
    if let Some(t) = a.threads {
        doc["engine"]["threads"] = toml_edit::value(i64::from(t));
    }
    // The prompt chunk of the engine measured, not the one the profile it
    // was made from assumed (the repository's host profile was measured
    // when the native engine ran prefill in chunks of 32; it now runs 128).
    let probe = device.profile.engine.probe;
    if let Some(c) = probe.prefill_chunk() {
        doc["engine"]["prefill-chunk"] = toml_edit::value(i64::from(c));
    }
    // The engine's name: the build measured, not the one the profile it
    // was made from described (the repository's still names "AVX2 kernels").
    doc["engine"]["name"] = toml_edit::value(format!("{} ({})", probe.name(), probe.build()));
    if probe.scores_per_thread() {
        doc["engine"]["attention-scratch"] = toml_edit::value("per-thread");
    }
    // A host's caches hold the smaller shapes whole: fit the cache term too;
    // a CPU's attention reads the KV cache slower than its bandwidth, and
    // its prefill attention runs slower than its matmuls.
    if let Some(fit) = doc["model"]["fit"].as_array_mut() {
        for p in [FreeParam::CacheSize, FreeParam::CacheEfficiency, FreeParam::KvCost, FreeParam::PrefillAttentionCost]
        {
            if !fit.iter().any(|v| v.as_str() == Some(p.key())) {
                fit.push(p.key());
            }
        }
    }
    let base = pocketbench::device::parse(Origin::File(target.path.clone()), &doc.to_string())?;
    // Every job is checked before anything is measured.
    for p in &design.points {
        for w in &p.workloads {
            settings.job(&base, p.shape, *w).map_err(pocketbench::Error::from)?;
        }
    }
    // Writable before the minutes of measuring, not after them.
    let dir = target.path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| pocketbench::Error::io(dir, e))
        .with_context(|| format!("this machine's profile folder {} cannot be made", dir.display()))?;

    eprintln!(
        "calibrating `{id}` on {} (fingerprint {}): {} design, {} shapes ({} held out), {} jobs x {} rounds, {} threads",
        here.describe(),
        here.fingerprint,
        design.name,
        design.points.len(),
        design.points.iter().filter(|p| p.holdout).count(),
        design.jobs_per_round(),
        design.rounds,
        pocketbench::runner::threads_for(&base, a.threads)
    );
    let passes = if a.quick { 3 } else { hostinfo::PASSES };
    let bw = hostinfo::measure(buffer_mib << 20, passes);
    eprintln!(
        "bandwidth: read {:.1} GB/s with {} threads ({:.1} with 1), best of {passes} passes over {buffer_mib} MiB",
        bw.read_all / 1e9,
        bw.threads,
        bw.read_1 / 1e9,
    );
    doc["facts"]["bandwidth"]["value"] = toml_edit::value(format!("{:.1} GB/s", bw.read_all / 1e9));
    doc["facts"]["bandwidth"]["source"] =
        toml_edit::value(super::hostinfo_cmd::bandwidth_source(&here, &bw, buffer_mib, passes));
    let base = pocketbench::device::parse(Origin::File(target.path.clone()), &doc.to_string())?;

    let cache = cache_file(&here, id, a.fresh)?;
    let measured = measure_design(&base, &design, &settings, &cache)?;
    if measured.points.iter().filter(|p| !p.holdout).count() == 0 {
        return Err(Harness(format!(
            "every measurement of the design failed; nothing was written (the cache {} keeps nothing to reuse)",
            cache.display()
        ))
        .into());
    }

    let text = with_points(&doc.to_string(), &measured.points).map_err(|e| Harness(e.to_string()))?;
    let fitted = devices.reread(&target.path, &text)?;
    let cal = calibrate(&fitted).map_err(pocketbench::Error::from).with_context(|| {
        format!(
            "the measurements do not fit; nothing was written (they stay cached in {}: rerun to reuse them, or --fresh)",
            cache.display()
        )
    })?;
    let note = if a.dry_run {
        "not written (--dry-run)".to_string()
    } else {
        let out = fitted_text(&text, &fitted, &cal).map_err(Harness)?;
        write_profile(&target.path, out.as_bytes()).map_err(pocketbench::Error::from)?;
        // The cache belongs to an unfinished calibration: this one is done.
        let _ = std::fs::remove_file(&cache);
        format!("written to {}", target.path.display())
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&[&cal])?);
    } else {
        print_fit(&fitted, &cal, &note)?;
        let tolerance = super::calibrate_check::DECODE_TOLERANCE;
        if let Some(r) =
            pocketbench::calibrate::repeatability(&measured.decode_spreads, &measured.decode_halves, tolerance)
        {
            super::calibrate_cmd::print_repeatability(&r)?;
        }
        outln!("  took {:.0} s; predict with `pocketbench predict --device {id}`", started.elapsed().as_secs_f64());
    }
    Ok(Code::Ok)
}

/// Device `id`, which `calibrate FLAG` measures here, and this machine; a
/// device reached over a transport is a usage error saying what to do
/// instead.
pub(super) fn this_machine<'a>(
    devices: &'a Devices,
    id: &str,
    flag: &str,
    instead: &str,
) -> anyhow::Result<(&'a Device, pocketbench::probe::HostFacts)> {
    let device = devices.get(id)?;
    if !device.is_local() {
        return Err(Usage(format!(
            "`calibrate {flag}` measures this machine; `{id}` is reached over {:?}: {instead}",
            device.profile.transport
        ))
        .into());
    }
    Ok((device, devices.here().cloned().unwrap_or_else(pocketbench::probe::HostFacts::collect)))
}

/// Job settings of a calibration or a check: one repetition per job per
/// round, at `threads` (default: the profile's).
pub(super) fn settings(threads: Option<u32>) -> anyhow::Result<JobSettings> {
    let settings = JobSettings {
        reps: 1,
        threads,
        timeout: Duration::from_secs(600),
        force: false,
        engine: None,
        engine_model: None,
    };
    settings.validate().map_err(pocketbench::Error::from)?;
    Ok(settings)
}

/// The cache of `device`'s unfinished calibration (or check, whose device
/// id is suffixed) on this machine; `fresh` forgets what it holds.
pub(super) fn cache_file(here: &pocketbench::probe::HostFacts, id: &str, fresh: bool) -> anyhow::Result<PathBuf> {
    let data = home::data_dir().unwrap_or_else(pocketbench::probe::cache_dir);
    let cache = session::cache_file(&data, &here.fingerprint, id);
    if fresh && cache.exists() {
        std::fs::remove_file(&cache).map_err(|e| pocketbench::Error::io(&cache, e))?;
    }
    Ok(cache)
}

/// Measure `design` on `device` in round-robin rounds, progress on stderr,
/// every finished job cached; warn of the jobs that never measured.
pub(super) fn measure_design(
    device: &Device,
    design: &Design,
    settings: &JobSettings,
    cache: &Path,
) -> anyhow::Result<session::Measured> {
    let runner = super::run_cmd::runner_for(device)?;
    let measured = session::measure(runner.as_ref(), device, design, settings, cache, &mut render)?;
    for (config, w, why) in &measured.missing {
        eprintln!("warning: {config} at {w} has no measurement in any round: {why}");
    }
    Ok(measured)
}

/// Render one progress event on stderr.
fn render(p: Progress) {
    match p {
        Progress::Start { jobs, cached } if cached > 0 => {
            eprintln!("{jobs} measurements, {cached} of them kept from the unfinished calibration before")
        }
        Progress::Start { jobs, .. } => eprintln!("{jobs} measurements"),
        Progress::Measured { done, jobs, round, config, workload, decode_tok_s, cached } => eprintln!(
            "[{done:>3}/{jobs}] round {round}: {config} at {workload}: {decode_tok_s:.1} tok/s decode{}",
            if cached { " (kept)" } else { "" }
        ),
        Progress::Retry { config, workload, reason } => {
            eprintln!("warning: {config} at {workload} failed ({reason}); trying once more")
        }
        Progress::Failed { config, workload, round, reason } => {
            eprintln!("warning: {config} at {workload} failed twice in round {round} ({reason}); going on without it")
        }
    }
}
