//! Calibrating and checking this machine: `calibrate --device host
//! --measure` (bandwidth first, as `host-info` measures it, then the
//! design's jobs in round-robin rounds through the device's runner, then the
//! fit; the profile is written only when the fit holds, into this machine's
//! own profile folder or `--devices-dir`), and `calibrate --check` (the
//! profile as it stands against shapes it was not fitted to; nothing is
//! written). Progress goes to the caller's reporter; the results come back
//! as data for the caller to show.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::design::Design;
use super::noise::Evidence;
use super::session::{self, Measured};
use super::{accuracy, calibrate, check, fitted_text, repeatability, summarize_drift, with_points, write_profile};
use super::{Accuracy, Calibration, CalibrationError, DriftSummary, Noise, Repeatability, Residual};
use crate::device::{home, Device, Devices, FreeParam, Origin};
use crate::event::{Event, Reporter};
use crate::hostinfo;
use crate::probe::HostFacts;
use crate::runner::JobSettings;
use crate::Error;

/// Decode predictions within this fraction of the measurement count as accurate.
pub const DECODE_TOLERANCE: f64 = 0.10;
/// Peak-memory predictions likewise.
pub const MEMORY_TOLERANCE: f64 = 0.15;

/// How to calibrate this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Threads to calibrate at (default: the profile's, else every core);
    /// written into the profile.
    pub threads: Option<u32>,
    /// The smaller built-in design and bandwidth measurement.
    pub quick: bool,
    /// The bandwidth buffer, MiB (default 1024; 256 when quick).
    pub buffer_mib: Option<usize>,
    /// Forget an unfinished run's cached measurements.
    pub fresh: bool,
    /// Fit and report, but do not write the profile.
    pub dry_run: bool,
    /// How precisely each job is measured in each round (default
    /// [`JOB_PRECISION`]): a slower, surer calibration asks for more.
    pub job: crate::probe::timing::AutoReps,
}

/// A finished calibration of this machine.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The profile as fitted (its points the design's).
    pub device: Device,
    /// The fit.
    pub calibration: Calibration,
    /// Where it was written (`None` with `dry_run`).
    pub written: Option<PathBuf>,
    /// How far each job's decode rounds lay apart.
    pub repeatability: Option<Repeatability>,
    /// Whether the machine was quiet enough for the fit (written into the
    /// profile as `[model.noise]`).
    pub noise: Noise,
    /// How far the held-out predictions moved from the calibration of this
    /// machine it replaced (absent where there was none).
    pub again: Option<super::again::Again>,
    /// Seconds it took.
    pub seconds: f64,
    /// Rounds shortened to keep within the design's time budget, and the
    /// rounds in all.
    pub shortened: (u32, u32),
}

/// A finished check of this machine's profile.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// Device id.
    pub device: String,
    /// The calibration checked.
    pub calibration: String,
    /// The design's name.
    pub design: String,
    /// Every residual.
    pub residuals: Vec<Residual>,
    /// Per metric, how many lie within its tolerance.
    pub accuracy: Vec<Accuracy>,
    /// How far each job's own decode rounds lay apart (absent with one round).
    pub repeatability: Option<Repeatability>,
    /// Jobs the profile was fitted to, measured again (absent without any).
    pub drift: Option<DriftSummary>,
    /// Seconds it took.
    #[serde(skip)]
    pub seconds: f64,
}

/// Device `id`, which a calibration FLAG measures here, and this machine;
/// a device reached over a transport is a usage error saying what to do
/// instead.
pub fn this_machine<'a>(
    devices: &'a Devices,
    id: &str,
    flag: &str,
    instead: &str,
) -> Result<(&'a Device, HostFacts), Error> {
    let device = devices.get(id)?;
    if !device.is_local() {
        return Err(Error::usage(format!(
            "`calibrate {flag}` measures this machine; `{id}` is reached over {:?}: {instead}",
            device.profile().transport
        )));
    }
    Ok((device, devices.here().cloned().unwrap_or_else(HostFacts::collect)))
}

/// The precision a calibration measures each job to in each round: the
/// 95% interval of its median decode within ±2% (issue 41, item 1), or the
/// repetition or time cap, whichever comes first.
pub const JOB_PRECISION: crate::probe::timing::AutoReps =
    crate::probe::timing::AutoReps { precision: 0.02, max_reps: 3, max_seconds: 0.3 };
/// The fewest repetitions a job's round keeps (the interval needs two).
pub const JOB_MIN_REPS: u32 = 2;
/// Contended or drifted repetitions a job's round retakes at most: ten
/// retakes of every job took a quick calibration past 7 minutes on the
/// Zen 4 VM.
pub const JOB_RETAKES: u32 = 1;
/// The bandwidth move within a repetition past which a calibration retakes
/// it: a point is fitted against the mean of its repetitions' passes, so a
/// move a sweep's figure cannot take (10%) costs a calibration point little,
/// and on the Zen 4 VM a third of the 1.2-s long-prompt repetitions moved
/// that much.
pub const JOB_MAX_DRIFT: f64 = 0.25;

/// The contention rule of a calibration's jobs.
pub fn job_rule() -> crate::probe::window::Contention {
    crate::probe::window::Contention { retakes: JOB_RETAKES, max_drift: JOB_MAX_DRIFT, ..Default::default() }
}

/// Job settings of a calibration or a check: each job in each round
/// repeated to `job` ([`JOB_PRECISION`] by default; at least
/// [`JOB_MIN_REPS`]), at `threads` (default: the profile's).
pub fn job_settings(threads: Option<u32>, job: crate::probe::timing::AutoReps) -> Result<JobSettings, Error> {
    let settings = JobSettings {
        reps: JOB_MIN_REPS,
        threads,
        timeout: Duration::from_secs(600),
        force: false,
        engine: None,
        engine_model: None,
        auto: Some(job),
        pin: false,
    };
    settings.validate()?;
    Ok(settings)
}

/// The cache of `id`'s unfinished calibration (or check, whose id is
/// suffixed) on this machine; `fresh` forgets what it holds.
pub fn cache_file(here: &HostFacts, id: &str, fresh: bool) -> Result<PathBuf, Error> {
    let data = home::data_dir().unwrap_or_else(crate::probe::cache_dir);
    let cache = session::cache_file(&data, &here.fingerprint, id);
    if fresh && cache.exists() {
        std::fs::remove_file(&cache).map_err(|e| Error::io(&cache, e))?;
    }
    Ok(cache)
}

/// Measure `design` on `device` through its runner in round-robin rounds,
/// every finished job cached; a warning event for each job that never
/// measured.
pub fn measure_design(
    device: &Device,
    design: &Design,
    settings: &JobSettings,
    cache: &Path,
    reporter: &mut dyn Reporter,
) -> Result<Measured, Error> {
    let runner = crate::runner::for_device(device)?;
    let measured = session::measure(runner.as_ref(), device, design, settings, cache, reporter)?;
    for (config, w, why) in &measured.missing {
        reporter.report(&Event::warning(format!("{config} at {w} has no measurement in any round: {why}")));
    }
    Ok(measured)
}

/// The source text of a bandwidth fact measured here.
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

/// `text` (a profile) with its bandwidth fact set to `bw`.
pub fn with_bandwidth(
    text: &str,
    path: &Path,
    facts: &HostFacts,
    bw: &hostinfo::Bandwidth,
    buffer_mib: usize,
    passes: usize,
) -> Result<String, Error> {
    let mut doc = document(text, path)?;
    set_bandwidth(&mut doc, facts, bw, buffer_mib, passes);
    Ok(doc.to_string())
}

fn document(text: &str, path: &Path) -> Result<toml_edit::DocumentMut, Error> {
    text.parse().map_err(|e: toml_edit::TomlError| Error::ProfileWrite {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn set_bandwidth(
    doc: &mut toml_edit::DocumentMut,
    facts: &HostFacts,
    bw: &hostinfo::Bandwidth,
    buffer_mib: usize,
    passes: usize,
) {
    doc["facts"]["bandwidth"]["value"] = toml_edit::value(format!("{:.1} GB/s", bw.read_all / 1e9));
    doc["facts"]["bandwidth"]["source"] = toml_edit::value(bandwidth_source(facts, bw, buffer_mib, passes));
}

/// The profile a calibration of `device` replaces, as a document: its text
/// without its old points, at `threads`, naming the engine build measured,
/// and fitting the terms a host's caches and attention need.
fn fresh_profile(
    text: &str,
    path: &Path,
    device: &Device,
    threads: Option<u32>,
) -> Result<toml_edit::DocumentMut, Error> {
    let mut doc = document(text, path)?;
    doc.remove("calibration");
    if let Some(t) = threads {
        doc["engine"]["threads"] = toml_edit::value(i64::from(t));
    }
    // The prompt chunk of the engine measured, not the one the profile it
    // was made from assumed (the repository's host profile was measured
    // when the native engine ran prefill in chunks of 32; it now runs 128).
    let probe = device.profile().engine.probe;
    if let Some(c) = probe.prefill_chunk() {
        doc["engine"]["prefill-chunk"] = toml_edit::value(i64::from(c));
    }
    // The engine's name: the build measured, not the one the profile it
    // was made from described.
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
    Ok(doc)
}

/// Calibrate device `id` (this machine) with `design`: bandwidth, the
/// design's jobs, the fit; the profile is written only when the fit holds.
pub fn calibrate_host(
    devices: &Devices,
    id: &str,
    design: &Design,
    o: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Calibrated, Error> {
    let started = Instant::now();
    let (device, here) =
        this_machine(devices, id, "--measure", "calibrate it with `--add` and records measured on it")?;
    let settings = job_settings(o.threads, o.job)?;
    let buffer_mib = o.buffer_mib.unwrap_or(if o.quick { 256 } else { 1024 });
    if buffer_mib < 64 {
        return Err(Error::usage("--buffer-mib must be at least 64"));
    }
    // This machine's own profile (made from the loaded one when it has none).
    let target = devices.writable(device)?;
    let mut doc = fresh_profile(&target.text, &target.path, device, o.threads)?;
    let base = device.reparse(Origin::File(target.path.clone()), &doc.to_string())?;
    // Every job is checked before anything is measured.
    for p in &design.points {
        for w in &p.workloads {
            settings.job(&base, p.shape, *w)?;
        }
    }
    // Writable before the minutes of measuring, not after them.
    let dir = target.path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::ProfileWrite {
        path: dir.display().to_string(),
        message: format!("this machine's profile folder {} cannot be made: {e}", dir.display()),
    })?;
    let threads = crate::runner::threads_for(&base, o.threads);
    reporter.report(&planned(&format!("calibrating `{id}`"), id, &here, design, threads));
    let passes = if o.quick { 3 } else { hostinfo::PASSES };
    let bw = hostinfo::measure(buffer_mib << 20, passes);
    reporter.report(&Event::Bandwidth {
        read_gb_s: bw.read_all / 1e9,
        threads: bw.threads,
        read_1_gb_s: bw.read_1 / 1e9,
        passes,
        buffer_mib,
    });
    set_bandwidth(&mut doc, &here, &bw, buffer_mib, passes);
    let base = device.reparse(Origin::File(target.path.clone()), &doc.to_string())?;

    let cache = cache_file(&here, id, o.fresh)?;
    let measured = measure_design(&base, design, &settings, &cache, reporter)?;
    if measured.points.iter().filter(|p| !p.holdout).count() == 0 {
        return Err(CalibrationError::NothingMeasured(format!(
            "every measurement of the design failed; nothing was written (the cache {} keeps nothing to reuse)",
            cache.display()
        ))
        .into());
    }
    let moments = moment_bandwidths(&measured.points);
    let moment_fact = MomentFact::of(&moments);
    if let Some(fact) = &moment_fact {
        fact.set(&mut doc, &here, &bw, threads);
    }
    let text = with_points(&doc.to_string(), &measured.points)?;
    let fitted = devices.reread(&target.path, &text)?;
    let calibration = calibrate(&fitted).map_err(|e| {
        Error::usage(format!(
            "{e}: the measurements do not fit; nothing was written (they stay cached in {}: rerun to reuse them, or --fresh)",
            cache.display()
        ))
    })?;
    let repeatability =
        repeatability(&measured.decode_spreads, &measured.decode_halves, measured.elasticity, DECODE_TOLERANCE);
    let held: Vec<Residual> = calibration.residuals.iter().filter(|r| r.holdout).cloned().collect();
    let held_out: Vec<Accuracy> = [("decode", DECODE_TOLERANCE), ("peak-memory", MEMORY_TOLERANCE)]
        .into_iter()
        .filter_map(|(metric, tolerance)| accuracy(&held, metric, tolerance))
        .collect();
    let noise = Noise::judge(&Evidence {
        repeatability: repeatability.as_ref(),
        held_out: &held_out,
        bandwidth: moment_fact.map(|f| f.range),
        contended: measured.contended,
        points: measured.points.len(),
    });
    // Against the calibration of this machine it replaces, if any.
    let again = matches!(device.state(), crate::device::CalibrationState::Calibrated { .. }).then(|| {
        let new = crate::device::DeviceModel {
            params: calibration.params,
            compute: calibration.compute_fact.as_ref().map_or(fitted.model().compute, |c| c.flops),
            ..*fitted.model()
        };
        let held: Vec<_> = design
            .points
            .iter()
            .filter(|p| p.holdout)
            .flat_map(|p| p.workloads.iter().map(move |w| (p.shape, *w)))
            .collect();
        super::again::compare(device.model(), &new, &held)
    });
    let written = if o.dry_run {
        None
    } else {
        let out = fitted_text(&text, &fitted, &calibration)?;
        let mut out = document(&out, &target.path)?;
        noise.set(&mut out);
        let out = out.to_string();
        write_profile(&target.path, out.as_bytes())?;
        // The cache belongs to an unfinished calibration: this one is done.
        let _ = std::fs::remove_file(&cache);
        Some(target.path.clone())
    };
    Ok(Calibrated {
        device: fitted,
        calibration,
        written,
        repeatability,
        noise,
        again: again.flatten(),
        seconds: started.elapsed().as_secs_f64(),
        shortened: (measured.shortened, design.rounds * design.jobs_per_round() as u32),
    })
}

/// The same-moment bandwidths of the fitted points that carry one, B/s.
pub fn moment_bandwidths(points: &[crate::device::PointToml]) -> Vec<f64> {
    points.iter().filter(|p| !p.holdout).filter_map(|p| p.bandwidth.map(|b| b.0)).collect()
}

/// The fewest points with a same-moment bandwidth that make the profile's
/// bandwidth fact; with fewer, `host-info`'s read at the start stays it.
pub const MIN_MOMENT_POINTS: usize = 3;

/// The bandwidth fact a calibration sets from its own points: the median
/// of their same-moment bandwidths (the very passes their decode is fitted
/// against, so the fact and the fit speak of one memory), and the lowest
/// and highest as its range, which predictions carry as their interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MomentFact {
    /// Median, B/s.
    pub median: f64,
    /// Lowest and highest, B/s.
    pub range: [f64; 2],
    /// Points it is made from.
    pub points: usize,
}

impl MomentFact {
    /// From the points' bandwidths; `None` with fewer than
    /// [`MIN_MOMENT_POINTS`].
    pub fn of(moments: &[f64]) -> Option<MomentFact> {
        (moments.len() >= MIN_MOMENT_POINTS).then(|| MomentFact {
            median: crate::stats::median(moments),
            range: crate::trust::range(moments).expect("not empty"),
            points: moments.len(),
        })
    }

    fn set(&self, doc: &mut toml_edit::DocumentMut, facts: &HostFacts, start: &hostinfo::Bandwidth, threads: u32) {
        use crate::units::Bandwidth;
        let b = &mut doc["facts"]["bandwidth"];
        b["value"] = toml_edit::value(Bandwidth(self.median).to_string());
        let mut range = toml_edit::Array::new();
        range.push(Bandwidth(self.range[0]).to_string());
        range.push(Bandwidth(self.range[1]).to_string());
        b["range"] = toml_edit::value(range);
        b["source"] = toml_edit::value(format!(
            "measured {} on {} (fingerprint {}): the median same-moment bandwidth of the calibration's {} points whose weights are read (each the median of the passes {threads} threads made over the engine's own weights right before and after every repetition); range: the lowest and highest point, which predictions carry as their interval. `host-info`'s read at the start: {:.1} GB/s",
            hostinfo::today(),
            facts.describe(),
            facts.fingerprint,
            self.points,
            start.read_all / 1e9
        ));
    }
}

fn planned(what: &str, id: &str, here: &HostFacts, design: &Design, threads: u32) -> Event {
    Event::CalibrationPlanned {
        device: id.into(),
        what: what.into(),
        machine: here.describe(),
        fingerprint: here.fingerprint.clone(),
        design: design.name.clone(),
        shapes: design.points.len(),
        held_out: design.points.iter().filter(|p| p.holdout).count(),
        jobs_per_round: design.jobs_per_round(),
        rounds: design.rounds,
        threads,
    }
}

/// Check device `id`'s profile (this machine's) against `design`: measure
/// it, predict each figure from the profile as `predict` would, count the
/// errors within [`DECODE_TOLERANCE`] and [`MEMORY_TOLERANCE`]. Nothing is
/// fitted or written.
pub fn check_host(
    devices: &Devices,
    id: &str,
    design: &Design,
    threads: Option<u32>,
    job: crate::probe::timing::AutoReps,
    fresh: bool,
    reporter: &mut dyn Reporter,
) -> Result<Checked, Error> {
    let started = Instant::now();
    let (device, here) =
        this_machine(devices, id, "--check", "check it with `run` on it and `calibrate --add --holdout`")?;
    // `measure_design` builds (so checks) every job before it measures one.
    let settings = job_settings(threads, job)?;
    let label = device.calibration_label();
    reporter.report(&planned(
        &format!("checking {label}"),
        id,
        &here,
        design,
        crate::runner::threads_for(device, threads),
    ));
    let cache = cache_file(&here, &format!("{id}-check"), fresh)?;
    let measured = measure_design(device, design, &settings, &cache, reporter)?;
    if measured.points.is_empty() {
        return Err(CalibrationError::NothingMeasured(
            "every measurement of the check failed; there is nothing to compare".into(),
        )
        .into());
    }
    let checked = check(device, &measured.points)?;
    let residuals = checked.residuals;
    // The check is done: its cache must not leak into the next one.
    let _ = std::fs::remove_file(&cache);
    // Prefill has no figure of its own; it is counted at decode's.
    let accuracy: Vec<Accuracy> =
        [("decode", DECODE_TOLERANCE), ("prefill", DECODE_TOLERANCE), ("peak-memory", MEMORY_TOLERANCE)]
            .into_iter()
            .filter_map(|(metric, tolerance)| accuracy(&residuals, metric, tolerance))
            .collect();
    let repeatability =
        repeatability(&measured.decode_spreads, &measured.decode_halves, measured.elasticity, DECODE_TOLERANCE);
    let drift = summarize_drift(checked.drifts, &residuals, DECODE_TOLERANCE);
    Ok(Checked {
        device: id.into(),
        calibration: label,
        design: design.name.clone(),
        residuals,
        accuracy,
        repeatability,
        drift,
        seconds: started.elapsed().as_secs_f64(),
    })
}
