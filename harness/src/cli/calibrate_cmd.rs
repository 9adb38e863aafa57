//! `pocketbench calibrate`.

use anyhow::Context;
use clap::Args;
use pocketbench::calibrate::{calibrate, write_back};
use pocketbench::device::{Device, Devices, Origin};

use super::exit::Usage;
use super::Code;

/// Arguments of `calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Device id.
    #[arg(long, value_name = "D", required_unless_present = "all")]
    pub device: Option<String>,
    /// Every device with calibration points.
    #[arg(long, conflicts_with = "device")]
    pub all: bool,
    /// Report the fit without writing it into the profile.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the calibration as JSON.
    #[arg(long)]
    pub json: bool,
    /// First append measured records (from `run --json` or a sweep's
    /// measurements/ folder) to the profile as calibration points.
    #[arg(long, value_name = "RECORD.json", num_args = 1.., requires = "device")]
    pub add: Vec<std::path::PathBuf>,
    /// With --add: hold the added points out of the fit, to check it against them.
    #[arg(long, requires = "add")]
    pub holdout: bool,
}

/// Run `calibrate`.
pub fn run(a: &CalibrateArgs, devices: &Devices) -> anyhow::Result<Code> {
    if !a.add.is_empty() {
        let id = a.device.as_deref().unwrap_or_default();
        let device = devices.get(id)?;
        // Every file is read and checked first; then the points are added
        // together, so a bad third file leaves the profile as it was.
        let (mut points, mut added) = (Vec::with_capacity(a.add.len()), Vec::new());
        for f in &a.add {
            let text = std::fs::read_to_string(f).map_err(|e| Usage(format!("{}: {e}", f.display())))?;
            let rec: pocketbench::record::Record =
                serde_json::from_str(&text).map_err(|e| Usage(format!("{}: not a result record: {e}", f.display())))?;
            if rec.device != id {
                return Err(Usage(format!("{}: measured on `{}`, not `{id}`", f.display(), rec.device)).into());
            }
            let point = pocketbench::calibrate::point_from_record(&rec, a.holdout)
                .ok_or_else(|| Usage(format!("{}: a predicted record, not a measurement", f.display())))?;
            points.push(point);
            added.push(format!("{} ({}+{}) from {}", rec.config_name, rec.prompt_tokens, rec.gen_tokens, f.display()));
        }
        // With --dry-run the points are added to the profile in memory only.
        let (path, text) = pocketbench::calibrate::with_points(device, &points).map_err(pocketbench::Error::from)?;
        let device = pocketbench::device::parse(Origin::File(path.clone()), &text)?;
        if !a.dry_run {
            pocketbench::calibrate::write_atomic(&path, text.as_bytes())
                .with_context(|| format!("adding calibration points to {}", path.display()))?;
        }
        for what in added {
            eprintln!("{} {what}", if a.dry_run { "would add" } else { "added" });
        }
        return fit_and_report(a, &[&device]);
    }
    let targets: Vec<_> = match &a.device {
        Some(id) => vec![devices.get(id)?],
        None => devices.all().iter().filter(|d| !d.points.is_empty()).collect(),
    };
    fit_and_report(a, &targets)
}

fn fit_and_report(a: &CalibrateArgs, targets: &[&Device]) -> anyhow::Result<Code> {
    let mut all = Vec::new();
    for &device in targets {
        if device.points.is_empty() {
            return Err(Usage(format!(
                "device `{}` has no calibration points: its parameters are documented priors",
                device.id()
            ))
            .into());
        }
        let cal = calibrate(device).map_err(pocketbench::Error::from)?;
        let written = !a.dry_run && matches!(device.origin, Origin::File(_));
        if !a.dry_run {
            write_back(device, &cal).map_err(pocketbench::Error::from)?;
        }
        if !a.json {
            outln!(
                "{} ({}): fitted to {} point(s){}",
                device.id(),
                device.origin,
                device.points.len(),
                if written { ", written" } else { ", not written (--dry-run)" }
            );
            for (k, v) in &cal.fitted {
                let bound = if cal.at_bound.contains(k) { "  (at the bound of its range)" } else { "" };
                outln!("  {k:<22} {v}{bound}");
            }
            outln!(
                "  {:<44} {:<8} {:>11} {:>11} {:>11} {:>8}",
                "point",
                "workload",
                "metric",
                "reference",
                "predicted",
                "error"
            );
            for r in &cal.residuals {
                let model = if r.holdout { format!("{} [held out]", r.model) } else { r.model.clone() };
                outln!(
                    "  {:<44} {:<8} {:>11} {:>11} {:>11} {:>+7.2}%",
                    model,
                    r.workload,
                    r.metric,
                    format!("{:.1} {}", r.measured, r.unit),
                    format!("{:.1} {}", r.predicted, r.unit),
                    r.rel_error * 100.0
                );
            }
            for metric in ["decode", "peak-memory"] {
                let held: Vec<f64> = cal
                    .residuals
                    .iter()
                    .filter(|r| r.holdout && r.metric == metric)
                    .map(|r| r.rel_error.abs())
                    .collect();
                if !held.is_empty() {
                    let worst = held.iter().copied().fold(0.0, f64::max);
                    let mean = held.iter().sum::<f64>() / held.len() as f64;
                    outln!(
                        "  held-out {metric}: {} point(s), mean |error| {:.1}%, worst {:.1}%",
                        held.len(),
                        mean * 100.0,
                        worst * 100.0
                    );
                }
            }
        }
        all.push(cal);
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(Code::Ok)
}
