//! The probe: the process that runs on a device. It loads a configuration's
//! model file, runs the workload (prefill, then decode one token at a time
//! with a KV cache) after a warm-up, for N repetitions, and reports what it
//! really did, each figure with how it was obtained.
//!
//! On the host the probe runs as a child process of the sweep (see
//! [`crate::runner`]), so one configuration's peak memory never leaks into the
//! next; the model file is built beforehand ([`gguf`]), so the peak reflects
//! loading and running the model as an app would, not generating weights.

pub mod engine;
pub mod gguf;
mod host;

pub use host::{BuildInfo, HostFacts};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::arch::Shape;
use crate::meter::{EnergyReading, MemoryStatus};
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
    /// Threads (informational here: the runner sets `RAYON_NUM_THREADS`).
    pub threads: u32,
    /// Seed of the prompt tokens.
    pub seed: u64,
}

/// One repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rep {
    /// Seconds to load the model file.
    pub load_s: f64,
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
    /// The machine.
    pub host: HostFacts,
    /// The binary.
    pub build: BuildInfo,
    /// How each figure was obtained.
    pub methods: BTreeMap<String, String>,
}

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

fn prompt(spec: &ProbeSpec, n: u32) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    (0..n).map(|_| rng.random_range(0..spec.shape.vocab)).collect()
}

/// Run the workload once on a loaded model; returns (prefill, ttft, decode) seconds.
fn run_once(m: &mut engine::CandleModel, tokens: &[u32], gen: u32) -> Result<(f64, f64, f64), ProbeError> {
    m.reset();
    let t0 = Instant::now();
    let mut next = m.step(tokens, 0)?;
    let prefill = t0.elapsed().as_secs_f64();
    let ttft = prefill; // the first token is the argmax of the prefill's logits
    let t1 = Instant::now();
    for i in 0..gen as usize {
        next = m.step(&[next], tokens.len() + i)?;
    }
    Ok((prefill, ttft, t1.elapsed().as_secs_f64()))
}

/// Run the probe in this process. `energy` is started and stopped around
/// each repetition's prefill + decode.
pub fn run(
    spec: &ProbeSpec,
    mut energy: Option<Box<dyn crate::meter::EnergyMeter>>,
    energy_not_measured: Option<String>,
) -> Result<ProbeResult, ProbeError> {
    spec.validate()?;
    let tokens = prompt(spec, spec.workload.prompt);
    let baseline = MemoryStatus::current().map_or(0, |m| m.vm_rss);

    // Load once, as an app does, then warm up with one short run so
    // first-touch page faults and lazy initialisation are not timed.
    let t = Instant::now();
    let mut m = engine::CandleModel::load(&spec.model)?;
    let first_load_s = t.elapsed().as_secs_f64();
    let warm_tokens = &tokens[..tokens.len().min(16)];
    run_once(&mut m, warm_tokens, spec.workload.gen.min(4))?;
    let mut reps = Vec::with_capacity(spec.reps as usize);
    for _ in 0..spec.reps {
        if let Some(meter) = energy.as_mut() {
            meter.start().map_err(|e| ProbeError::Spec(e.to_string()))?;
        }
        let (prefill_s, ttft_s, decode_s) = run_once(&mut m, &tokens, spec.workload.gen)?;
        let reading = match energy.as_mut() {
            Some(meter) => Some(meter.stop().map_err(|e| ProbeError::Spec(e.to_string()))?),
            None => None,
        };
        reps.push(Rep {
            load_s: first_load_s,
            prefill_s,
            ttft_s,
            decode_s,
            prefill_tok_s: spec.workload.prompt as f64 / prefill_s,
            decode_tok_s: spec.workload.gen as f64 / decode_s,
            energy: reading,
        });
    }
    // The peak is read before any reload: reloading in one process would
    // measure the allocator's reuse of freed memory, not the model.
    let peak = MemoryStatus::current().map_or(0, |m| m.vm_hwm);
    drop(m);
    // Load time of the other repetitions: reload and time (page cache warm,
    // as for an app that was started before).
    for rep in reps.iter_mut().skip(1) {
        let t = Instant::now();
        let m = engine::CandleModel::load(&spec.model)?;
        rep.load_s = t.elapsed().as_secs_f64();
        drop(m);
    }
    let energy_method = match (&energy, &energy_not_measured) {
        (Some(m), _) => m.name(),
        (None, Some(why)) => format!("not measured: {why}"),
        (None, None) => "not measured".into(),
    };
    let methods = [
        ("load_s", "timer (std::time::Instant) around reading the GGUF and building the model; repetitions after the first reload after the peak was read"),
        ("prefill_s", "timer around one forward pass over the whole prompt"),
        ("ttft_s", "timer from the start of prefill to the greedy first token"),
        ("decode_s", "timer around `gen` single-token forward passes with the KV cache, argmax included"),
        (
            "peak_increase_bytes",
            "VmHWM at the end minus VmRSS before the first load (/proc/self/status), fresh process",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain(std::iter::once(("energy".to_string(), energy_method)))
    .collect();
    Ok(ProbeResult {
        config_id: spec.shape.id(),
        engine: engine::NAME.into(),
        engine_version: format!("candle-core {}", engine::CANDLE_VERSION),
        workload: spec.workload,
        threads: spec.threads,
        warmup: 1,
        reps,
        baseline_rss_bytes: baseline,
        peak_hwm_bytes: peak,
        peak_increase_bytes: peak.saturating_sub(baseline),
        model_file_bytes: std::fs::metadata(&spec.model).map_or(0, |m| m.len()),
        energy_not_measured: if energy.is_none() { energy_not_measured.or(Some("no meter".into())) } else { None },
        host: HostFacts::collect(),
        build: BuildInfo::current(),
        methods,
    })
}

/// Where built model files are cached: `$POCKETBENCH_CACHE`, else
/// `$XDG_CACHE_HOME/pocketbench`, else `~/.cache/pocketbench`, else a temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("POCKETBENCH_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("pocketbench");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/pocketbench");
    }
    std::env::temp_dir().join("pocketbench")
}

/// The cached model file of a shape (built when missing), seeded by its id.
pub fn model_file(shape: &Shape, cache: &Path) -> Result<PathBuf, gguf::GgufError> {
    let path = cache.join("gguf").join(format!("{}.gguf", shape.id()));
    if !path.exists() {
        gguf::write_model(shape, seed_of(shape), &path)?;
    }
    Ok(path)
}

/// The weight seed of a shape: derived from its id, so the same shape always
/// has the same weights on every machine.
pub fn seed_of(shape: &Shape) -> u64 {
    crate::fnv1a(shape.canonical().as_bytes())
}
