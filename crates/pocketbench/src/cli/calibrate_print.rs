//! How `calibrate` shows its results on stdout: a fit, a check, the
//! residuals table, the machine's repeatability and drift.

use pocketbench::calibrate::host::{Calibrated, Checked};
use pocketbench::calibrate::{Calibration, DriftSummary};
use pocketbench::device::Device;

/// Print a fit: its parameters, every residual, and the held-out errors.
pub fn print_fit(device: &Device, cal: &Calibration, note: &str, verbose: bool) -> pocketbench::Result<()> {
    outln!("{} ({}): fitted to {} point(s), {note}", device.id(), device.origin(), device.points().len());
    for (k, v) in &cal.fitted {
        let bound = if cal.at_bound.contains(k) { "  (at the bound of its range)" } else { "" };
        outln!("  {k:<22} {v}{bound}");
    }
    print_residuals(&cal.residuals)?;
    for w in &cal.warnings {
        outln!("  warning: {w}");
    }
    if verbose {
        for d in &cal.compute_details {
            outln!("    {d}");
        }
    }
    let held: Vec<_> = cal.residuals.iter().filter(|r| r.holdout).cloned().collect();
    for metric in ["decode", "prefill", "peak-memory"] {
        // No tolerance is reported here: only the mean and worst errors.
        if let Some(a) = pocketbench::calibrate::accuracy(&held, metric, 0.0) {
            outln!(
                "  held-out {metric}: {} point(s), mean |error| {:.1}%, worst {:.1}%",
                a.points,
                a.mean_abs_error * 100.0,
                a.worst_abs_error * 100.0
            );
        }
    }
    Ok(())
}

/// Print how far the same job's decode rounds lay apart on this machine,
/// beside the tolerance the errors are counted against.
pub fn print_repeatability(r: &pocketbench::calibrate::Repeatability) -> pocketbench::Result<()> {
    outln!(
        "  this machine's repeatability: a job's decode rounds lay a median {:.1}% apart (worst {:.1}%); {} of {} job(s) spread wider than {:.0}%; split-half (its odd rounds against its even ones) within {:.0}% for {} of {}{}",
        r.median_spread * 100.0,
        r.worst_spread * 100.0,
        r.wider,
        r.jobs,
        r.tolerance * 100.0,
        r.split_half_tolerance * 100.0,
        r.halves_agree,
        r.jobs,
        match r.halves_at_bandwidth {
            0 => String::new(),
            n => format!(
                " ({n} compared at one bandwidth, decode taken as following bandwidth^{:.2} (r = {:.2}, fitted within the jobs); as measured {} of {})",
                r.elasticity.map_or(f64::NAN, |e| e.e),
                r.elasticity.map_or(f64::NAN, |e| e.r),
                r.halves_agree_raw,
                r.jobs
            ),
        }
    );
    Ok(())
}

/// Print residuals as a table, one row per figure, held-out ones marked.
pub fn print_residuals(residuals: &[pocketbench::calibrate::Residual]) -> pocketbench::Result<()> {
    let label = |r: &pocketbench::calibrate::Residual| {
        if r.holdout {
            format!("{} [held out]", r.model)
        } else {
            r.model.clone()
        }
    };
    let w = residuals.iter().map(|r| label(r).len()).max().unwrap_or(0).max(44);
    outln!(
        "  {:<w$} {:<8} {:>11} {:>11} {:>11} {:>8}",
        "point",
        "workload",
        "metric",
        "reference",
        "predicted",
        "error"
    );
    for r in residuals {
        outln!(
            "  {:<w$} {:<8} {:>11} {:>11} {:>11} {:>+7.2}%",
            label(r),
            r.workload,
            r.metric,
            format!("{:.1} {}", r.measured, r.unit),
            format!("{:.1} {}", r.predicted, r.unit),
            r.rel_error * 100.0
        );
    }
    Ok(())
}

/// Print a calibration of this machine: the fit, the repeatability, the time.
pub fn calibrated(c: &Calibrated, id: &str, verbose: bool) -> pocketbench::Result<()> {
    let note = match &c.written {
        Some(p) => format!("written to {}", p.display()),
        None => "not written (--dry-run)".into(),
    };
    print_fit(&c.device, &c.calibration, &note, verbose)?;
    if let Some(r) = &c.repeatability {
        print_repeatability(r)?;
    }
    outln!("  this calibration: {}", c.noise.line());
    if let Some(a) = &c.again {
        outln!("  {}", a.line());
    }
    let (shortened, rounds) = c.shortened;
    let kept = match shortened {
        0 => String::new(),
        n => format!(
            " ({n} of {rounds} job rounds shortened to one repetition at the least, none retaken, to keep within the design's time budget; `--rounds` or `--max-time` measure every round whole)"
        ),
    };
    outln!("  took {:.0} s{kept}; predict with `pocketbench predict --device {id}`", c.seconds);
    Ok(())
}

/// Print a check of this machine's profile: every residual, the accuracy
/// per metric, the repeatability and drift, the time.
pub fn checked(c: &Checked) -> pocketbench::Result<()> {
    let (label, id, residuals) = (&c.calibration, &c.device, &c.residuals);
    outln!("{label}: predicted as `predict --device {id}` does, against {} measured figure(s)", residuals.len());
    print_residuals(residuals)?;
    for s in &c.accuracy {
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
    if let Some(r) = &c.repeatability {
        print_repeatability(r)?;
    }
    if let Some(d) = &c.drift {
        print_drift(d)?;
    }
    outln!("  took {:.0} s; nothing was written", c.seconds);
    Ok(())
}

/// Print how far the machine moved since its calibration, and the decode
/// accuracy had it not.
fn print_drift(d: &DriftSummary) -> pocketbench::Result<()> {
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

/// Print a leave-one-out check: every fitted point's figures against a fit
/// of the others, and the verdict against the goals.
pub fn leave_one_out(loo: &pocketbench::calibrate::loo::LeaveOneOut, fitted: usize) -> pocketbench::Result<()> {
    outln!("{}: leave-one-out over {fitted} fitted point(s), each predicted by a fit of the others", loo.device);
    outln!(
        "  {:>5}  {:<36} {:<9} {:<16} {:>10} {:>10} {:>8}",
        "point",
        "model",
        "workload",
        "metric",
        "measured",
        "predicted",
        "error"
    );
    for r in &loo.rows {
        let (predicted, error) = match (r.predicted, r.rel_error) {
            (Some(p), Some(e)) => (format!("{p:.1}"), format!("{:+.1}%", e * 100.0)),
            _ => ("-".into(), "-".into()),
        };
        outln!(
            "  {:>5}  {:<36} {:<9} {:<16} {:>10} {:>10} {:>8}{}",
            r.point,
            r.model,
            r.workload,
            format!("{} ({})", r.metric, r.unit),
            format!("{:.1}", r.measured),
            predicted,
            error,
            r.why_not.as_ref().map_or(String::new(), |w| format!("  {w}"))
        );
    }
    outln!("  verdict: {}", loo.verdict);
    Ok(())
}

/// After a leave-one-out check: the held-out points against the fit, the
/// published points counted, and the device's other engine classes.
pub fn beside_leave_one_out(device: &pocketbench::device::Device) -> pocketbench::Result<()> {
    use pocketbench::calibrate::{classes, published, residuals};
    let held: Vec<_> = residuals(device, device.model()).into_iter().filter(|r| r.holdout).collect();
    for r in &held {
        outln!(
            "  held out [{}] {}, workload {}: {} {:.1} {}, predicted {:.1} ({:+.1}%)",
            r.point,
            r.model,
            r.workload,
            r.metric,
            r.measured,
            r.unit,
            r.predicted,
            r.rel_error * 100.0
        );
    }
    if let Some(w) = device.warnings() {
        for line in w.to_string().lines() {
            outln!("  warning: {line}");
        }
    }
    outln!("  published: {}", published::coverage(device).describe());
    let covered = pocketbench::interval::coverage(device);
    let inside = covered.iter().filter(|c| c.inside).count();
    outln!(
        "  intervals: {inside} of {} figure(s) the fit did not use lie inside their 90% interval{}",
        covered.len(),
        if covered.is_empty() {
            String::new()
        } else {
            format!(" ({:.0}%; goal 90%)", 100.0 * inside as f64 / covered.len() as f64)
        }
    );
    for c in covered.iter().filter(|c| !c.inside) {
        outln!(
            "    outside: [{}] {} {} {:.1}, 90% interval {:.1}-{:.1} ({})",
            c.point,
            c.model,
            c.metric,
            c.value,
            c.interval[0],
            c.interval[1],
            c.how
        );
    }
    for c in classes::classes(device) {
        outln!("  class {}", c.describe(&device.class_label()));
    }
    Ok(())
}
