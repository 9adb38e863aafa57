//! What a probe is asked to run and what it reports: the JSON passed between
//! the runner and the probe process, and stored with every measurement.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{engine, BuildInfo, EngineKind, HostFacts};
use crate::arch::Shape;
use crate::meter::EnergyReading;
use crate::workload::Workload;

/// Largest repetition count accepted.
pub const MAX_REPS: u32 = 1000;

/// What the probe is asked to run (written as JSON by the runner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// The configuration.
    pub shape: Shape,
    /// Its GGUF file.
    pub model: PathBuf,
    /// The run.
    pub workload: Workload,
    /// Measured repetitions.
    pub reps: u32,
    /// Threads: the native engine's pool and llama.cpp's thread count (the
    /// runner also sets `RAYON_NUM_THREADS` for candle-transformers).
    pub threads: u32,
    /// Seed of the prompt tokens.
    pub seed: u64,
    /// The engine to measure through.
    #[serde(default)]
    pub engine: EngineKind,
    /// The runner's timeout, seconds: external engines give up a little
    /// before it, so no orphan outlives a killed probe.
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

/// One repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rep {
    /// Seconds to load the model file (absent when the engine does not say:
    /// llama-bench).
    #[serde(default)]
    pub load_s: Option<f64>,
    /// Seconds of prefill (the whole prompt in one forward pass).
    pub prefill_s: f64,
    /// Seconds from the start of prefill to the first generated token.
    pub ttft_s: f64,
    /// Seconds for the `gen` decode steps.
    pub decode_s: f64,
    /// Prompt tokens / prefill seconds.
    pub prefill_tok_s: f64,
    /// Generated tokens / decode seconds.
    pub decode_tok_s: f64,
    /// Energy of prefill + decode, when a meter is available.
    pub energy: Option<EnergyReading>,
}

/// Everything the probe measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Configuration id.
    pub config_id: String,
    /// Engine name.
    pub engine: String,
    /// Engine version.
    pub engine_version: String,
    /// The workload run.
    pub workload: Workload,
    /// Threads used.
    pub threads: u32,
    /// Warm-up runs before measuring.
    pub warmup: u32,
    /// One entry per repetition.
    pub reps: Vec<Rep>,
    /// VmRSS just before the first load, bytes.
    pub baseline_rss_bytes: u64,
    /// VmHWM at the end, bytes.
    pub peak_hwm_bytes: u64,
    /// peak − baseline: the reference study's "peak memory increase".
    pub peak_increase_bytes: u64,
    /// Size of the model file run (stat), bytes.
    pub model_file_bytes: u64,
    /// Why energy was not measured, when it was not.
    pub energy_not_measured: Option<String>,
    /// Read bandwidth measured in the probe process right after the
    /// repetitions (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bandwidth: Option<ProbeBandwidth>,
    /// The machine.
    pub host: HostFacts,
    /// The binary.
    pub build: BuildInfo,
    /// How each figure was obtained.
    pub methods: BTreeMap<String, String>,
}

/// A memory read bandwidth measured by the probe itself: the roofline of
/// the same moment, on a shared host whose bandwidth drifts over the day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeBandwidth {
    /// Bytes per second (best pass).
    pub bytes_per_s: f64,
    /// Threads reading (the probe's).
    pub threads: u32,
    /// Buffer size, bytes.
    pub buffer_bytes: u64,
    /// Passes (the best is kept).
    pub passes: u32,
}

impl ProbeBandwidth {
    /// Measure now with `threads` threads.
    pub fn measure(threads: u32) -> ProbeBandwidth {
        ProbeBandwidth {
            bytes_per_s: crate::hostinfo::read_bandwidth(PROBE_BANDWIDTH_BYTES, threads as usize, 3),
            threads,
            buffer_bytes: PROBE_BANDWIDTH_BYTES as u64,
            passes: 3,
        }
    }
}

/// Buffer of the probe's bandwidth pass: 256 MiB, 8x the host's L3.
pub const PROBE_BANDWIDTH_BYTES: usize = 256 << 20;

/// The probe failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The spec is impossible.
    #[error("invalid probe spec: {0}")]
    Spec(String),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
}

impl ProbeSpec {
    /// Check what can be checked before anything is loaded.
    pub fn validate(&self) -> Result<(), ProbeError> {
        self.shape.validate().map_err(|e| ProbeError::Spec(e.to_string()))?;
        if self.reps == 0 || self.reps > MAX_REPS {
            return Err(ProbeError::Spec(format!("reps must be between 1 and {MAX_REPS}, got {}", self.reps)));
        }
        if self.workload.prompt == 0 || self.workload.gen == 0 {
            return Err(ProbeError::Spec("prompt and gen must be at least 1".into()));
        }
        if self.workload.context > self.shape.context {
            return Err(ProbeError::Spec(format!(
                "the workload needs {} positions but the configuration is built for {}",
                self.workload.context, self.shape.context
            )));
        }
        Ok(())
    }
}
