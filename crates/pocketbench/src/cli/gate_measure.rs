//! `pocketbench gate --measure`: measure baseline and candidate alternately
//! on one device, save every repetition as it lands, then gate them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::event::Reporter;
use pocketbench::gate::Loaded;
use pocketbench::probe::EngineKind;
use pocketbench::runner::JobSettings;
use pocketbench::schedule::abab::{self, Arm};
use pocketbench::schedule::Cooling;
use pocketbench::sweep::{Plan, PlanOptions};

use super::reps_args::{AutoArgs, Reps};
use super::{ShapeArgs, WorkloadArgs};

/// What `gate --measure` measures and how each side differs.
#[derive(Debug, Args)]
pub struct MeasureSides {
    /// Measure both sides here, alternating them one repetition at a time (ABAB), then gate.
    #[arg(long)]
    pub measure: bool,
    /// --measure: the device.
    #[arg(long, value_name = "D", default_value = "host", requires = "measure")]
    pub device: String,
    /// --measure: the configuration (or --sweep FILE: every configuration of its plan).
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// --measure: the workload (default: the sweep's, else the device's reference workload).
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// --measure: repetitions a side, or `auto`: alternate until both sides' median decode speed is as
    /// precise as --precision asks (at least --min-reps and the gate's --min-samples a side)
    /// [default: auto].
    #[arg(long, value_name = "N|auto", requires = "measure", value_parser = super::reps_args::reps_arg)]
    pub reps: Option<Reps>,
    /// --measure: the limits of --reps auto.
    #[command(flatten)]
    pub auto: AutoArgs,
    /// --measure: threads of both sides (default: the device's).
    #[arg(long, value_name = "T", requires = "measure")]
    pub threads: Option<u32>,
    /// --measure: the baseline's threads.
    #[arg(long, value_name = "T", requires = "measure")]
    pub baseline_threads: Option<u32>,
    /// --measure: the candidate's threads.
    #[arg(long, value_name = "T", requires = "measure")]
    pub candidate_threads: Option<u32>,
    /// --measure: the baseline's engine (default: the device profile's).
    #[arg(long, value_name = "E", requires = "measure", value_parser = super::engine_arg)]
    pub baseline_engine: Option<EngineKind>,
    /// --measure: the candidate's engine.
    #[arg(long, value_name = "E", requires = "measure", value_parser = super::engine_arg)]
    pub candidate_engine: Option<EngineKind>,
    /// --measure: the pocketbench binary that probes the baseline (default: this one).
    #[arg(long, value_name = "PATH", requires = "measure")]
    pub baseline_probe: Option<PathBuf>,
    /// --measure: the pocketbench binary that probes the candidate.
    #[arg(long, value_name = "PATH", requires = "measure")]
    pub candidate_probe: Option<PathBuf>,
    /// --measure: the baseline's model in its engine's own format (mnn-llm-bench).
    #[arg(long, value_name = "PATH", requires = "measure")]
    pub baseline_engine_model: Option<PathBuf>,
    /// --measure: the candidate's.
    #[arg(long, value_name = "PATH", requires = "measure")]
    pub candidate_engine_model: Option<PathBuf>,
    /// --measure: start a repetition only at or below this temperature, C, where the device reads one
    /// [default: the profile's `thermal.cool-to-c`, else 37].
    #[arg(long, value_name = "C", requires = "measure")]
    pub cool_to: Option<f64>,
    /// --measure: seconds to wait for it before not counting the repetition
    /// [default: the profile's `thermal.cool-timeout-s`, else 180].
    #[arg(long, value_name = "S", requires = "measure")]
    pub cool_timeout: Option<u64>,
    /// --measure: seconds before a probe is killed.
    #[arg(long, default_value_t = 1800, value_name = "S", requires = "measure")]
    pub timeout: u64,
    /// --measure: where the repetitions are saved (baseline.jsonl, candidate.jsonl) as they land.
    #[arg(long, value_name = "DIR", default_value = "reports/gate", requires = "measure")]
    pub out: PathBuf,
}

/// Measure both sides; return them as the gate's two inputs.
pub fn run(
    m: &MeasureSides,
    sweep: Option<&Path>,
    devices: &Devices,
    min_samples: usize,
    reporter: &mut dyn Reporter,
) -> pocketbench::Result<(Loaded, Loaded)> {
    let device = devices.get(&m.device)?;
    let shape_given = m.shape.preset.is_some() || m.shape.hidden.is_some() || m.shape.layers.is_some();
    let (shapes, w) = match (shape_given, sweep) {
        (true, _) => (vec![m.shape.resolve()?], m.workload.on_device(device)?),
        (false, Some(file)) => {
            let opts = PlanOptions { workload: m.workload.spec(), ..PlanOptions::default() };
            let plan = Plan::from_file(file, &opts)?;
            (plan.shapes.iter().map(|(s, _)| *s).collect(), plan.workload)
        }
        (false, None) => {
            return Err(pocketbench::Error::usage(
                "--measure needs a configuration (--preset or shape flags) or --sweep FILE (every configuration of its plan)",
            ))
        }
    };
    let settings = |threads: Option<u32>, engine: Option<EngineKind>, model: &Option<PathBuf>| JobSettings {
        reps: 1,
        threads: threads.or(m.threads),
        timeout: Duration::from_secs(m.timeout.max(1)),
        force: false,
        engine,
        engine_model: model.clone(),
        auto: None,
        pin: false,
    };
    let runner = |p: &Option<PathBuf>| pocketbench::runner::for_device_with(device, p.as_deref());
    let (ra, rb) = (runner(&m.baseline_probe)?, runner(&m.candidate_probe)?);
    let a = Arm {
        name: "baseline",
        runner: ra.as_ref(),
        settings: settings(m.baseline_threads, m.baseline_engine, &m.baseline_engine_model),
    };
    let b = Arm {
        name: "candidate",
        runner: rb.as_ref(),
        settings: settings(m.candidate_threads, m.candidate_engine, &m.candidate_engine_model),
    };
    let (mut reps, auto) = m.auto.resolve(m.reps.unwrap_or(Reps::Auto));
    if auto.is_some() {
        // Fewer than the gate's minimum a side would be inconclusive.
        reps = reps.max(min_samples as u32);
    }
    if !(1..=pocketbench::probe::MAX_REPS).contains(&reps) {
        return Err(pocketbench::Error::usage(format!(
            "--reps must be between 1 and {}, got {reps}",
            pocketbench::probe::MAX_REPS
        )));
    }
    if let Some(a) = auto {
        if !(a.precision > 0.0 && a.precision < 1.0) || a.max_reps < reps || a.max_reps > pocketbench::probe::MAX_REPS {
            return Err(pocketbench::Error::usage(format!(
                "--reps auto needs --precision above 0 and below 1 and --max-reps from {reps} (the minimum a side) to {}, got {} and {}",
                pocketbench::probe::MAX_REPS,
                a.precision,
                a.max_reps
            )));
        }
    }
    let thermal = device.profile().thermal.unwrap_or_default();
    let (cool_to, cool_timeout) =
        (m.cool_to.unwrap_or(thermal.cool_to_c), m.cool_timeout.unwrap_or(thermal.cool_timeout_s));
    if !cool_to.is_finite() {
        return Err(pocketbench::Error::usage(format!("--cool-to must be a temperature in C, got {cool_to}")));
    }
    let cooling = Cooling { target_c: cool_to, timeout: Duration::from_secs(cool_timeout), ..Cooling::default() };
    let plan = abab::Plan { device, shapes: &shapes, workload: w, reps, auto, cooling };
    abab::measure_into(&plan, [&a, &b], &m.out, reporter)
}
