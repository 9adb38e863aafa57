//! One place that turns measurement settings into a validated [`Job`]:
//! `run` and `sweep --measure` both build their jobs here, so a setting,
//! engine or shape that cannot be measured is refused the same way, and
//! before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use super::Job;
use crate::arch::Shape;
use crate::device::Device;
use crate::probe::thermal::Cooling;
use crate::probe::timing::AutoReps;
use crate::probe::{EngineKind, MAX_REPS};
use crate::workload::Workload;

/// Measurement settings as the user gave them.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSettings {
    /// Measured repetitions per configuration.
    pub reps: u32,
    /// Threads; `None`: the device profile's, else every core.
    pub threads: Option<u32>,
    /// Give up after this long.
    pub timeout: Duration,
    /// Run configurations predicted not to fit in available memory.
    pub force: bool,
    /// Engine; `None`: the device profile's `engine.probe`.
    pub engine: Option<EngineKind>,
    /// A model in the engine's own format (mnn-llm-bench's MNN export).
    pub engine_model: Option<PathBuf>,
    /// Repeat until the median is as precise as asked (`reps` is then the
    /// minimum); `None`: exactly `reps`.
    pub auto: Option<AutoReps>,
    /// Pin the engine's threads one to a CPU.
    pub pin: bool,
}

/// Why a measurement cannot be made as asked. Every variant is the user's
/// input (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Repetitions out of range.
    #[error("--reps must be between 1 and {MAX_REPS}, got {0}")]
    Reps(u32),
    /// Threads out of range.
    #[error("--threads must be between 1 and 1024, got {0}")]
    Threads(u32),
    /// A precision that no interval can reach or that means nothing.
    #[error("--precision must be above 0 and below 1 (0.02 for ±2%), got {0}")]
    Precision(f64),
    /// The repetition cap of `--reps auto` below its minimum.
    #[error(
        "--max-reps must be at least {min} (the minimum, and 2 for an interval) and at most {MAX_REPS}, got {max}"
    )]
    MaxReps {
        /// The least it may be.
        min: u32,
        /// What was given.
        max: u32,
    },
    /// The engine is not in this binary or not on this machine.
    #[error("{0}")]
    EngineUnavailable(String),
    /// The workload needs more positions than the shape is built for.
    #[error("{config}: the workload needs {needs} positions; the configuration is built for {built} (--context)")]
    Context {
        /// Configuration name.
        config: String,
        /// Positions the workload needs.
        needs: u32,
        /// The shape's context.
        built: u32,
    },
    /// The probe cannot build this shape as a model file.
    #[error("{config}: {reason}")]
    Unbuildable {
        /// Configuration name.
        config: String,
        /// Why.
        reason: String,
    },
    /// The engine needs a model of its own format and none (or a wrong one) was given.
    #[error("{0}")]
    EngineModel(String),
}

impl JobSettings {
    /// Check the settings alone (no device, no shape).
    pub fn validate(&self) -> Result<(), JobError> {
        if self.reps == 0 || self.reps > MAX_REPS {
            return Err(JobError::Reps(self.reps));
        }
        if let Some(t) = self.threads.filter(|t| *t == 0 || *t > 1024) {
            return Err(JobError::Threads(t));
        }
        if let Some(a) = self.auto {
            if !(a.precision > 0.0 && a.precision < 1.0) {
                return Err(JobError::Precision(a.precision));
            }
            if a.max_reps < self.reps.max(2) || a.max_reps > MAX_REPS {
                return Err(JobError::MaxReps { min: self.reps.max(2), max: a.max_reps });
            }
        }
        if let Some(e) = self.engine {
            available(e)?;
        }
        Ok(())
    }

    /// The engine to measure `device` through: the settings', else the profile's.
    pub fn engine_for(&self, device: &Device) -> Result<EngineKind, JobError> {
        let e = self.engine.unwrap_or(device.profile().engine.probe);
        available(e)?;
        Ok(e)
    }

    /// A validated job for `shape` at `w` on `device`.
    pub fn job(&self, device: &Device, shape: Shape, w: Workload) -> Result<Job, JobError> {
        self.validate()?;
        self.job_for_shape(device, shape, w)
    }

    /// The job, checking what depends on the device and the shape but not
    /// the settings alone (for checking many shapes after one
    /// [`JobSettings::validate`]).
    pub fn job_for_shape(&self, device: &Device, shape: Shape, w: Workload) -> Result<Job, JobError> {
        if w.context > shape.context {
            return Err(JobError::Context { config: shape.to_string(), needs: w.context, built: shape.context });
        }
        crate::probe::gguf::tensor_plan(&shape)
            .map_err(|e| JobError::Unbuildable { config: shape.to_string(), reason: e.to_string() })?;
        let engine = self.engine_for(device)?;
        engine.runs(&shape).map_err(|e| JobError::Unbuildable { config: shape.to_string(), reason: e.0 })?;
        let engine_model = match (engine.needs_engine_model(), &self.engine_model) {
            (true, Some(p)) => {
                crate::external::mnn_llm_bench::ModelInfo::check(p, &shape)
                    .map_err(|e| JobError::EngineModel(e.to_string()))?;
                Some(p.clone())
            }
            (true, None) => {
                return Err(JobError::EngineModel(format!(
                    "the {} engine reads a model of its own format: pass --engine-model (the config.json of an MNN export of this configuration)",
                    engine.name()
                )))
            }
            (false, Some(_)) => {
                return Err(JobError::EngineModel(format!(
                    "--engine-model is read only by engines with a model format of their own (mnn-llm-bench), not by {}",
                    engine.name()
                )))
            }
            (false, None) => None,
        };
        let predicted = crate::predict::predict(&shape, &shape.accounting(), device.model(), &w);
        Ok(Job {
            shape,
            workload: w,
            reps: self.reps,
            threads: super::threads_for(device, self.threads),
            timeout: self.timeout,
            predicted_peak_bytes: predicted.peak_mem_bytes,
            force: self.force,
            engine,
            engine_model,
            auto: self.auto,
            pin: self.pin,
            bandwidth_pass: true,
            timed_reloads: true,
            contention: None,
            soak: None,
            cooling: device
                .profile()
                .thermal
                .map(|t| Cooling { cool_to_c: t.cool_to_c, timeout_s: t.cool_timeout_s as f64 }),
        })
    }
}

fn available(e: EngineKind) -> Result<(), JobError> {
    if e.available() {
        Ok(())
    } else {
        Err(JobError::EngineUnavailable(e.unavailable_because()))
    }
}
