//! `pocketbench calibrate`.

use clap::Args;
use pocketbench::calibrate::design::Design;
use pocketbench::calibrate::{calibrate, host, write_back};
use pocketbench::device::{Device, Devices, Origin};
use pocketbench::error::Context;

use super::calibrate_print::{self as print, print_fit};
use pocketbench::event::{Event, Reporter};

use super::render::EventArgs;
use super::Code;

/// Arguments of `calibrate`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("measuring").args(["measure", "check"])))]
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
    /// With --add: add points measured on another machine (another
    /// fingerprint) to a local profile.
    #[arg(long, requires = "add")]
    pub force: bool,
    /// Measure this machine and fit its profile in one command: bandwidth,
    /// then a built-in design of shapes and workloads in round-robin
    /// rounds, part of it held out to check the fit. Writes this machine's
    /// own profile (see `devices`).
    #[arg(long, requires = "device", conflicts_with = "add")]
    pub measure: bool,
    /// With --measure: the smaller built-in design (the 15 fitted shapes at
    /// two workloads, 3 held out, two rounds; about 2 minutes on 2 cores,
    /// against under 10 for the full one).
    #[arg(long, requires = "measure")]
    pub quick: bool,
    /// With --measure: a design file of your own (TOML: `rounds`, and
    /// `[[point]]` tables with `model`, `workloads` and `holdout`).
    #[arg(long, value_name = "FILE", requires = "measure", conflicts_with = "quick")]
    pub design: Option<std::path::PathBuf>,
    /// With --measure: threads to calibrate at (default: the profile's
    /// `engine.threads`, else every core); written into the profile. With
    /// --check: threads to measure at.
    #[arg(long, value_name = "N", requires = "measuring")]
    pub threads: Option<u32>,
    /// With --measure or --check: measure every job this many times, in
    /// round-robin rounds, instead of the design's own count (quick 2, full
    /// 3, check 3). A point is its fastest round, so on a host whose speed
    /// drifts more rounds find its undisturbed speed more surely, at the
    /// cost of time; a check compares best with a calibration measured in
    /// as many rounds.
    #[arg(long, value_name = "N", requires = "measuring", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: Option<u32>,
    /// With --measure or --check: forget the measurements an unfinished
    /// run of it cached, and measure everything again.
    #[arg(long, requires = "measuring")]
    pub fresh: bool,
    /// Check this machine's profile as it stands against shapes it was not
    /// fitted to: measure them (the built-in six at tg128 and 1024+128, or
    /// the points of a design FILE, every one held out), predict each from
    /// the profile, print every error and how many lie within 10% (decode)
    /// and 15% (peak memory). Jobs the profile was fitted to (the built-in
    /// check has two shapes of them) are reported as the machine's drift
    /// since its calibration instead. Nothing is fitted or written.
    #[arg(long, value_name = "FILE", num_args = 0..=1, requires = "device", conflicts_with_all = ["add", "dry_run"])]
    pub check: Option<Option<std::path::PathBuf>>,
    /// List every finding a warning line counts (each prefill point above the compute fact).
    #[arg(long, short)]
    pub verbose: bool,
    /// With --measure: the bandwidth buffer in MiB (default 1024; 256 with --quick).
    #[arg(long, value_name = "MIB", requires = "measure")]
    pub buffer_mib: Option<usize>,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `calibrate`.
pub fn run(a: &CalibrateArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let id = a.device.as_deref().unwrap_or_default();
    let mut reporter = a.events.reporter();
    if a.measure {
        let design = match &a.design {
            Some(f) => Design::from_file(f)?,
            None => Design::built_in(a.quick),
        }
        .with_rounds(a.rounds);
        let o = host::Options {
            threads: a.threads,
            quick: a.quick,
            buffer_mib: a.buffer_mib,
            fresh: a.fresh,
            dry_run: a.dry_run,
        };
        let done = host::calibrate_host(devices, id, &design, &o, &mut reporter)?;
        drop(reporter);
        if a.json {
            outln!("{}", super::pretty(&[&done.calibration])?);
        } else {
            print::calibrated(&done, id, a.verbose)?;
        }
        return Ok(Code::Ok);
    }
    if let Some(file) = &a.check {
        let design = match file {
            Some(f) => Design::check_file(f)?,
            None => Design::check_built_in(),
        }
        .with_rounds(a.rounds);
        let done = host::check_host(devices, id, &design, a.threads, a.fresh, &mut reporter)?;
        drop(reporter);
        if a.json {
            outln!("{}", super::pretty(&done)?);
        } else {
            print::checked(&done)?;
        }
        return Ok(Code::Ok);
    }
    if !a.add.is_empty() {
        return add(a, devices, id);
    }
    let targets: Vec<_> = match &a.device {
        Some(id) => vec![devices.get(id)?],
        None => devices.all().iter().filter(|d| !d.points().is_empty()).collect(),
    };
    fit_and_report(a, &targets)
}

/// `calibrate --add`: every record read and checked first, then the
/// points added together and fitted before anything is written.
fn add(a: &CalibrateArgs, devices: &Devices, id: &str) -> pocketbench::Result<Code> {
    let device = devices.get(id)?;
    // Every file is read and checked first; then the points are added
    // together, so a bad third file leaves the profile as it was.
    let (mut points, mut added) = (Vec::with_capacity(a.add.len()), Vec::new());
    for f in &a.add {
        let text =
            std::fs::read_to_string(f).map_err(|e| pocketbench::Error::usage(format!("{}: {e}", f.display())))?;
        let rec: pocketbench::record::Record = serde_json::from_str(&text)
            .map_err(|e| pocketbench::Error::usage(format!("{}: not a result record: {e}", f.display())))?;
        if rec.device != id {
            return Err(pocketbench::Error::usage(format!(
                "{}: measured on `{}`, not `{id}`",
                f.display(),
                rec.device
            )));
        }
        let point = pocketbench::calibrate::point_from_record(&rec, a.holdout).ok_or_else(|| {
            pocketbench::Error::usage(format!("{}: a predicted record, not a measurement", f.display()))
        })?;
        if let (true, false, Some(here)) = (device.is_local(), a.force, devices.here()) {
            if point.machine.as_deref() != Some(here.fingerprint.as_str()) {
                return Err(pocketbench::Error::usage(format!(
                    "{}: measured on another machine ({}, fingerprint {}), not this one ({}, fingerprint {}); a calibration of `{id}` describes this machine: pass --force to add it anyway",
                    f.display(),
                    point.cpu.as_deref().unwrap_or("unrecorded"),
                    point.machine.as_deref().unwrap_or("unrecorded"),
                    here.describe(),
                    here.fingerprint
                )));
            }
        }
        points.push(point);
        added.push(format!("{} ({}+{}) from {}", rec.config_name, rec.prompt_tokens, rec.gen_tokens, f.display()));
    }
    // The points are added in memory and fitted first: a fit that fails
    // writes nothing; with --dry-run nothing is written either way.
    let (device, target) = pocketbench::calibrate::with_points_added(devices, device, &points)
        .with_context(|| format!("adding calibration points to the profile of `{id}`"))?;
    calibrate(&device).context("the points were not added (nothing was written)")?;
    if !a.dry_run {
        pocketbench::calibrate::write_profile(&target.path, target.text.as_bytes())?;
    }
    let mut reporter = a.events.reporter();
    for what in added {
        reporter.report(&Event::PointAdded {
            device: id.to_string(),
            profile: device.origin().to_string(),
            what,
            held_out: a.holdout,
            dry_run: a.dry_run,
        });
    }
    drop(reporter);
    fit_and_report(a, &[&device])
}

fn fit_and_report(a: &CalibrateArgs, targets: &[&Device]) -> pocketbench::Result<Code> {
    let mut all = Vec::new();
    for &device in targets {
        if device.points().is_empty() {
            return Err(pocketbench::Error::usage(format!(
                "device `{}` has no calibration points: its parameters are documented priors",
                device.id()
            )));
        }
        let cal = calibrate(device)?;
        let written = !a.dry_run && matches!(device.origin(), Origin::File(_));
        if !a.dry_run {
            write_back(device, &cal)?;
        }
        if !a.json {
            print_fit(device, &cal, if written { "written" } else { "not written (--dry-run)" }, a.verbose)?;
        }
        all.push(cal);
    }
    if a.json {
        outln!("{}", super::pretty(&all)?);
    }
    Ok(Code::Ok)
}
