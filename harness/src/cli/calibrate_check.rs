//! `pocketbench calibrate --device host --check [FILE]`: a profile as it
//! stands, checked against shapes it was not fitted to. The shapes are
//! measured as `calibrate --measure` measures (round-robin rounds, one
//! repetition each, cached so a killed check resumes), then predicted from
//! the profile exactly as `predict` would; every error is printed, and how
//! many lie within the figures: 10% of measured decode and 15% of
//! measured peak memory. Jobs the profile was fitted to, measured again
//! (the built-in check has four), say how far the machine itself has
//! moved since. Nothing is fitted or written.

use std::path::Path;
use std::time::Instant;

use pocketbench::calibrate::design::Design;
use pocketbench::calibrate::{
    accuracy, check, repeatability, summarize_drift, Accuracy, DriftSummary, Repeatability, Residual,
};
use pocketbench::device::Devices;

use super::calibrate_cmd::{print_repeatability, print_residuals, CalibrateArgs};
use super::calibrate_measure::{cache_file, measure_design, settings, this_machine};
use super::exit::{Harness, Usage};
use super::Code;

/// Decode predictions within this fraction of the measurement count as accurate.
pub const DECODE_TOLERANCE: f64 = 0.10;
/// Peak-memory predictions likewise.
pub const MEMORY_TOLERANCE: f64 = 0.15;

#[derive(serde::Serialize)]
struct CheckJson<'a> {
    device: &'a str,
    calibration: String,
    design: &'a str,
    residuals: &'a [Residual],
    accuracy: Vec<Accuracy>,
    /// How far each job's own decode rounds lay apart (absent with one round).
    repeatability: Option<Repeatability>,
    /// Jobs the profile was fitted to, measured again (absent without any).
    drift: Option<DriftSummary>,
}

/// Run `calibrate --check`.
pub fn run(a: &CalibrateArgs, devices: &Devices, file: Option<&Path>) -> anyhow::Result<Code> {
    let started = Instant::now();
    let id = a.device.as_deref().unwrap_or_default();
    let (device, here) =
        this_machine(devices, id, "--check", "check it with `run` on it and `calibrate --add --holdout`")?;
    let design = match file {
        Some(f) => Design::check_file(f).map_err(|e| Usage(e.to_string()))?,
        None => Design::check_built_in(),
    }
    .with_rounds(a.rounds);
    // `measure_design` builds (so checks) every job before it measures one.
    let settings = settings(a.threads)?;
    let label = device.calibration_label();
    eprintln!(
        "checking {label} on {} (fingerprint {}): {} design, {} shapes, {} jobs x {} rounds, {} threads",
        here.describe(),
        here.fingerprint,
        design.name,
        design.points.len(),
        design.jobs_per_round(),
        design.rounds,
        pocketbench::runner::threads_for(device, a.threads)
    );
    let cache = cache_file(&here, &format!("{id}-check"), a.fresh)?;
    let measured = measure_design(device, &design, &settings, &cache)?;
    if measured.points.is_empty() {
        return Err(Harness("every measurement of the check failed; there is nothing to compare".into()).into());
    }
    let checked = check(device, &measured.points)?;
    let residuals = checked.residuals;
    // The check is done: its cache must not leak into the next one.
    let _ = std::fs::remove_file(&cache);
    // Prefill has no figure of its own in the issue; it is counted at decode's.
    let summary: Vec<Accuracy> =
        [("decode", DECODE_TOLERANCE), ("prefill", DECODE_TOLERANCE), ("peak-memory", MEMORY_TOLERANCE)]
            .into_iter()
            .filter_map(|(metric, tolerance)| accuracy(&residuals, metric, tolerance))
            .collect();
    let repeat = repeatability(&measured.decode_spreads, &measured.decode_halves, DECODE_TOLERANCE);
    let drift = summarize_drift(checked.drifts, &residuals, DECODE_TOLERANCE);
    if a.json {
        let out = CheckJson {
            device: id,
            calibration: label,
            design: &design.name,
            residuals: &residuals,
            accuracy: summary,
            repeatability: repeat,
            drift,
        };
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Code::Ok);
    }
    outln!("{label}: predicted as `predict --device {id}` does, against {} measured figure(s)", residuals.len());
    print_residuals(&residuals)?;
    for s in &summary {
        outln!(
            "  {}: {} point(s), {} within {:.0}%, mean |error| {:.1}%, worst {:.1}%",
            s.metric,
            s.points,
            s.within,
            s.tolerance * 100.0,
            s.mean_abs_error * 100.0,
            s.worst_abs_error * 100.0
        );
    }
    if let Some(r) = &repeat {
        print_repeatability(r)?;
    }
    if let Some(d) = &drift {
        print_drift(d)?;
    }
    outln!("  took {:.0} s; nothing was written", started.elapsed().as_secs_f64());
    Ok(Code::Ok)
}

/// Print how far the machine moved since its calibration, and the decode
/// accuracy had it not.
fn print_drift(d: &DriftSummary) -> std::io::Result<()> {
    let lo = d.jobs.iter().map(|j| j.change).fold(f64::INFINITY, f64::min);
    let hi = d.jobs.iter().map(|j| j.change).fold(f64::NEG_INFINITY, f64::max);
    outln!(
        "  this machine since its calibration: {} job(s) the profile was fitted to, measured again, decode now against then: median {:+.1}% ({:+.1}% to {:+.1}%)",
        d.jobs.len(),
        d.median_change * 100.0,
        lo * 100.0,
        hi * 100.0
    );
    for j in &d.jobs {
        outln!(
            "    {} at {}: {:.1} tok/s then, {:.1} now ({:+.1}%)",
            j.model,
            j.workload,
            j.then,
            j.now,
            j.change * 100.0
        );
    }
    if let Some(a) = &d.adjusted_decode {
        outln!(
            "  decode with each prediction moved by that median (a diagnostic, not the accuracy): {} of {} within {:.0}%, mean |error| {:.1}%, worst {:.1}%",
            a.within,
            a.points,
            a.tolerance * 100.0,
            a.mean_abs_error * 100.0,
            a.worst_abs_error * 100.0
        );
    }
    Ok(())
}
