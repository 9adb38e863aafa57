//! `pocketbench calibrate`.

use clap::Args;
use pocketbench::calibrate::design::Design;
use pocketbench::calibrate::host;
use pocketbench::calibrate::points::{self, AddOptions};
use pocketbench::device::{Device, Devices};

use super::calibrate_print::{self as print, print_fit};
use pocketbench::event::{Event, Reporter};

use super::render::EventArgs;
use super::Code;

/// Arguments of `calibrate`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("measuring").args(["measure", "check"])))]
#[command(group(clap::ArgGroup::new("adding").args(["add", "import"])))]
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
    /// First import the outputs of other tools as calibration points:
    /// llama-bench `-o json`, `-o jsonl` or `-o csv`, MNN llm_bench's
    /// markdown table or `-j` JSON, or pocketbench results. Each row becomes
    /// a point labelled imported (file, row, engine class). Every row is
    /// read, mapped to a shape and checked against the device before
    /// anything is written. See the book's "Importing your own numbers".
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "device", conflicts_with = "add")]
    pub import: Vec<std::path::PathBuf>,
    /// With --import: read every file as this format instead of recognising
    /// it (llama-bench-json, llama-bench-jsonl, llama-bench-csv,
    /// mnn-markdown, mnn-json, pocketbench).
    #[arg(long, value_name = "FORMAT", requires = "import")]
    pub format: Option<pocketbench::calibrate::import::Format>,
    /// With --import: the rows measured this preset (when their output does
    /// not name a GGUF readable here that says its shape).
    #[arg(long, value_name = "NAME", requires = "import")]
    pub preset: Option<String>,
    /// With --import: the rows measured this shape, KEY=VALUE pairs
    /// (`hidden=896,layers=28,heads=14,kv-heads=2,head-dim=64,ffn=4864,vocab=151936,quant=q4_0`;
    /// with --preset, overrides of it).
    #[arg(long, value_name = "SPEC", requires = "import")]
    pub shape: Option<pocketbench::arch::ShapeSpec>,
    /// With --add or --import: hold the added points out of the fit, to check it against them.
    #[arg(long, requires = "adding")]
    pub holdout: bool,
    /// With --add or --import: add points measured on another machine
    /// (another fingerprint, another CPU) to a local profile.
    #[arg(long, requires = "adding")]
    pub force: bool,
    /// Measure this machine and fit its profile in one command: bandwidth,
    /// then a built-in design of shapes and workloads in round-robin
    /// rounds, part of it held out to check the fit. Writes this machine's
    /// own profile (see `devices`).
    #[arg(long, requires = "device", conflicts_with_all = ["add", "import"])]
    pub measure: bool,
    /// With --measure: the smaller built-in design (the 15 fitted shapes at
    /// two workloads, 3 held out, two rounds; within 3 minutes on 2 cores,
    /// against under 10 for the full one: where the machine runs slow, the
    /// jobs past its budget are shortened to keep to it, and the result says
    /// how many).
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
    /// 3, check 3). A point is the median of every round's repetitions and
    /// its split-half noise how far its odd rounds lie from its even ones,
    /// so on a host whose speed drifts more rounds give a surer point and a
    /// fairer judgement of it, at the cost of time; a check compares best
    /// with a calibration measured in as many rounds.
    #[arg(long, value_name = "N", requires = "measuring", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: Option<u32>,
    /// With --measure or --check: repeat each job in each round until the 95% interval of its median
    /// decode speed is within ± this fraction of it (default 0.02), or a cap below is reached.
    #[arg(long, value_name = "F", requires = "measuring")]
    pub precision: Option<f64>,
    /// With --measure or --check: at most this many repetitions of a job in a round (default 3).
    #[arg(long, value_name = "N", requires = "measuring", value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub max_reps: Option<u32>,
    /// With --measure or --check: stop starting repetitions of a job in a round after this many
    /// seconds of them (default 0.3). Where a calibration judges itself noisy because its halves
    /// disagree, more seconds here (and more --rounds) are what a sounder one costs.
    #[arg(long, value_name = "S", requires = "measuring", value_parser = seconds)]
    pub max_time: Option<f64>,
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
    /// since its calibration instead. A device this machine cannot measure
    /// (a phone) is checked by leave-one-out instead: each of its points
    /// predicted by a fit of the others. Nothing is fitted or written.
    #[arg(long, value_name = "FILE", num_args = 0..=1, requires = "device", conflicts_with_all = ["add", "import", "dry_run"])]
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
        // A precision asked for is measured whole, whatever it costs.
        let design = if job_precision(a) == host::JOB_PRECISION { design } else { design.unhurried() };
        let o = host::Options {
            threads: a.threads,
            quick: a.quick,
            buffer_mib: a.buffer_mib,
            fresh: a.fresh,
            dry_run: a.dry_run,
            job: job_precision(a),
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
        let device = devices.get(id)?;
        if !device.is_local() {
            // A device this machine cannot measure is checked against its
            // own points: each left out of a refit in turn.
            if file.is_some() {
                return Err(pocketbench::Error::usage(format!(
                    "`calibrate --check FILE` measures the file's design on this machine; `{id}` is not this \
                     machine: `calibrate --device {id} --check` checks its points by leave-one-out"
                )));
            }
            let loo = pocketbench::calibrate::loo::leave_one_out(device)?;
            if a.json {
                outln!("{}", super::pretty(&loo)?);
            } else {
                let fitted = device.points().iter().filter(|p| !p.holdout).count();
                print::leave_one_out(&loo, fitted)?;
                print::beside_leave_one_out(device)?;
            }
            return Ok(Code::Ok);
        }
        let design = match file {
            Some(f) => Design::check_file(f)?,
            None => Design::check_built_in(),
        }
        .with_rounds(a.rounds);
        let done = host::check_host(devices, id, &design, a.threads, job_precision(a), a.fresh, &mut reporter)?;
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
    if !a.import.is_empty() {
        return import(a, devices, id);
    }
    fit_and_report(a, &points::targets(devices, a.device.as_deref())?)
}

/// The precision each job is measured to in each round: the flags', else
/// [`host::JOB_PRECISION`]'s.
fn job_precision(a: &CalibrateArgs) -> pocketbench::probe::timing::AutoReps {
    let d = host::JOB_PRECISION;
    pocketbench::probe::timing::AutoReps {
        precision: a.precision.unwrap_or(d.precision),
        max_reps: a.max_reps.unwrap_or(d.max_reps),
        max_seconds: a.max_time.unwrap_or(d.max_seconds),
    }
}

/// `--max-time`: seconds, at least 0 and finite.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=3600.0).contains(&f) => Ok(f),
        _ => Err(format!("expected seconds from 0 to 3600, got `{s}`")),
    }
}

/// `calibrate --add`: the library checks every record, adds the points
/// together and fits before anything is written.
fn add(a: &CalibrateArgs, devices: &Devices, id: &str) -> pocketbench::Result<Code> {
    let o = AddOptions { holdout: a.holdout, force: a.force, dry_run: a.dry_run };
    let done = points::add_records(devices, id, &a.add, &o)?;
    let mut reporter = a.events.reporter();
    for what in done.added {
        reporter.report(&Event::PointAdded {
            device: id.to_string(),
            profile: done.device.origin().to_string(),
            what,
            held_out: a.holdout,
            dry_run: a.dry_run,
        });
    }
    drop(reporter);
    fit_and_report(a, &[&done.device])
}

/// `calibrate --import`: the library reads, maps and checks every row and
/// fits before anything is written.
fn import(a: &CalibrateArgs, devices: &Devices, id: &str) -> pocketbench::Result<Code> {
    use pocketbench::calibrate::import;
    let model = match (&a.preset, &a.shape) {
        (None, None) => None,
        (preset, shape) => {
            let mut spec = shape.clone().unwrap_or_default();
            spec.preset = preset.clone().or(spec.preset);
            Some(spec)
        }
    };
    let o = import::Options { format: a.format, model, holdout: a.holdout, force: a.force, dry_run: a.dry_run };
    let done = import::import(devices, id, &a.import, &o)?;
    let mut reporter = a.events.reporter();
    for p in &done.points {
        reporter.report(&Event::PointAdded {
            device: id.to_string(),
            profile: done.device.origin().to_string(),
            what: p.describe(),
            held_out: a.holdout,
            dry_run: a.dry_run,
        });
    }
    drop(reporter);
    fit_and_report(a, &[&done.device])
}

fn fit_and_report(a: &CalibrateArgs, targets: &[&Device]) -> pocketbench::Result<Code> {
    let fitted = points::fit_devices(targets, a.dry_run)?;
    if a.json {
        let all: Vec<_> = fitted.iter().map(|f| &f.calibration).collect();
        outln!("{}", super::pretty(&all)?);
        return Ok(Code::Ok);
    }
    for (device, f) in targets.iter().zip(&fitted) {
        let note = if f.written { "written" } else { "not written (--dry-run)" };
        print_fit(device, &f.calibration, note, a.verbose)?;
    }
    Ok(Code::Ok)
}
