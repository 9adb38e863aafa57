//! `gate --measure` from its settings to the gate's two sides: the
//! configurations (one shape, or every one of a sweep file's plan), each
//! side's job settings and runner, the repetitions and the cooling, all
//! checked before anything runs; then both sides measured alternately
//! ([`crate::schedule::abab`]) and saved as they land.

use std::path::PathBuf;
use std::time::Duration;

use crate::arch::{Shape, ShapeSpec};
use crate::device::Devices;
use crate::event::Reporter;
use crate::gate::Loaded;
use crate::probe::timing::AutoReps;
use crate::probe::EngineKind;
use crate::runner::JobSettings;
use crate::schedule::abab::{self, Arm};
use crate::schedule::Cooling;
use crate::sweep::{Plan, PlanOptions};
use crate::workload::WorkloadSpec;
use crate::Error;

/// What one side changes.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// Threads (default: the request's, else the device's).
    pub threads: Option<u32>,
    /// Engine (default: the device profile's).
    pub engine: Option<EngineKind>,
    /// The pocketbench binary that probes it (default: this one).
    pub probe: Option<PathBuf>,
    /// Its model in the engine's own format (mnn-llm-bench).
    pub engine_model: Option<PathBuf>,
}

/// The configurations to measure.
#[derive(Debug, Clone)]
pub enum Configs {
    /// One shape.
    One(ShapeSpec),
    /// Every configuration of a sweep file's plan, at its workload.
    Sweep(PathBuf),
}

/// What `gate --measure` is asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The device.
    pub device: String,
    /// What to measure.
    pub configs: Configs,
    /// Overrides of the workload (the sweep's, else the device's reference).
    pub workload: WorkloadSpec,
    /// Repetitions a side (the minimum, with `auto`).
    pub reps: u32,
    /// Repeat until precise, within limits; `None`: exactly `reps`.
    pub auto: Option<AutoReps>,
    /// Threads of both sides.
    pub threads: Option<u32>,
    /// The baseline and the candidate.
    pub sides: [Side; 2],
    /// Start a repetition at or below this, C (default: the profile's).
    pub cool_to: Option<f64>,
    /// Wait this long for it, s (default: the profile's).
    pub cool_timeout: Option<u64>,
    /// Kill a probe after this long.
    pub timeout: Duration,
    /// Where the repetitions are saved as they land.
    pub out: PathBuf,
}

/// Measure both sides; return them as the gate's two inputs. The `gate`'s
/// settings say what `auto` alternates until: never fewer than their
/// minimum samples a side, and until the decode samples could catch the
/// minimum effect on speed at their significance level, or a cap.
pub fn measure(
    request: &Request,
    devices: &Devices,
    gate: &crate::gate::Settings,
    reporter: &mut dyn Reporter,
) -> Result<(Loaded, Loaded), Error> {
    let device = devices.get(&request.device)?;
    let (shapes, workload): (Vec<Shape>, _) = match &request.configs {
        Configs::One(spec) => {
            let w = device.profile().reference_workload.overridden_by(&request.workload).resolve()?;
            (vec![spec.resolve()?], w)
        }
        Configs::Sweep(file) => {
            let opts = PlanOptions { workload: request.workload, ..PlanOptions::default() };
            let plan = Plan::from_file(file, &opts)?;
            (plan.shapes.iter().map(|(s, _)| *s).collect(), plan.workload)
        }
    };
    let settings = |side: &Side| JobSettings {
        reps: 1,
        threads: side.threads.or(request.threads),
        timeout: request.timeout.max(Duration::from_secs(1)),
        force: false,
        engine: side.engine,
        engine_model: side.engine_model.clone(),
        auto: None,
        pin: false,
    };
    let [base, cand] = &request.sides;
    let (ra, rb) = (
        crate::runner::for_device_with(device, base.probe.as_deref())?,
        crate::runner::for_device_with(device, cand.probe.as_deref())?,
    );
    let a = Arm { name: "baseline", runner: ra.as_ref(), settings: settings(base) };
    let b = Arm { name: "candidate", runner: rb.as_ref(), settings: settings(cand) };
    let (reps, auto) = repetitions(request, gate.min_samples)?;
    let detect = auto.map(|_| abab::Detect { effect: gate.min_effect_speed, alpha: gate.alpha });
    let thermal = device.profile().thermal.unwrap_or_default();
    let cool_to = request.cool_to.unwrap_or(thermal.cool_to_c);
    let cool_timeout = request.cool_timeout.unwrap_or(thermal.cool_timeout_s);
    if !cool_to.is_finite() {
        return Err(Error::usage(format!("--cool-to must be a temperature in C, got {cool_to}")));
    }
    let cooling = Cooling { target_c: cool_to, timeout: Duration::from_secs(cool_timeout), ..Cooling::default() };
    let plan = abab::Plan { device, shapes: &shapes, workload, reps, auto, detect, cooling };
    let [baseline, candidate] = abab::measure_into(&plan, [&a, &b], &request.out, reporter)?;
    Ok((baseline.into(), candidate.into()))
}

/// The repetitions a side, checked: with `auto`, never fewer than the
/// gate's minimum (fewer would be inconclusive).
fn repetitions(request: &Request, min_samples: usize) -> Result<(u32, Option<AutoReps>), Error> {
    let max = crate::probe::MAX_REPS;
    let reps = match request.auto {
        Some(_) => request.reps.max(min_samples as u32),
        None => request.reps,
    };
    if !(1..=max).contains(&reps) {
        return Err(Error::usage(format!("--reps must be between 1 and {max}, got {reps}")));
    }
    if let Some(a) = request.auto {
        if !(a.precision > 0.0 && a.precision < 1.0) || a.max_reps < reps || a.max_reps > max {
            return Err(Error::usage(format!(
                "--reps auto needs --precision above 0 and below 1 and --max-reps from {reps} (the minimum a side) to {max}, got {} and {}",
                a.precision, a.max_reps
            )));
        }
    }
    Ok((reps, request.auto))
}
