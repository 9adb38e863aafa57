//! The flags of `pocketbench gate --measure`, turned into the library's
//! request (`pocketbench::pipeline::gate_measure`), which measures baseline
//! and candidate alternately on one device and saves every repetition as
//! it lands.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use pocketbench::pipeline::gate_measure::{Configs, Request, Side};
use pocketbench::probe::EngineKind;

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
    /// --measure: repetitions a side, or `auto`: alternate until the decode samples could catch the
    /// gate's minimum effect on speed with 80% power (at least --min-reps and the gate's --min-samples a
    /// side), or --max-reps or --max-time (--precision is not used here) [default: auto].
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

impl MeasureSides {
    /// The library's request from these flags. A shape given here wins over
    /// `--sweep FILE`; with neither there is nothing to measure.
    pub fn request(&self, sweep: Option<&Path>) -> pocketbench::Result<Request> {
        let shape_given = self.shape.preset.is_some() || self.shape.hidden.is_some() || self.shape.layers.is_some();
        let configs = match (shape_given, sweep) {
            (true, _) => Configs::One(self.shape.spec()),
            (false, Some(file)) => Configs::Sweep(file.to_path_buf()),
            (false, None) => {
                return Err(pocketbench::Error::usage(
                    "--measure needs a configuration (--preset or shape flags) or --sweep FILE (every configuration of its plan)",
                ))
            }
        };
        let (reps, auto) = self.auto.resolve(self.reps.unwrap_or(Reps::Auto));
        let side = |threads, engine, probe: &Option<PathBuf>, model: &Option<PathBuf>| Side {
            threads,
            engine,
            probe: probe.clone(),
            engine_model: model.clone(),
        };
        Ok(Request {
            device: self.device.clone(),
            configs,
            workload: self.workload.spec(),
            reps,
            auto,
            threads: self.threads,
            sides: [
                side(self.baseline_threads, self.baseline_engine, &self.baseline_probe, &self.baseline_engine_model),
                side(
                    self.candidate_threads,
                    self.candidate_engine,
                    &self.candidate_probe,
                    &self.candidate_engine_model,
                ),
            ],
            cool_to: self.cool_to,
            cool_timeout: self.cool_timeout,
            timeout: Duration::from_secs(self.timeout),
            out: self.out.clone(),
        })
    }
}
