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
mod external;
pub mod gguf;
mod host;
#[cfg(feature = "llama")]
pub mod llama;
pub mod native;

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

fn prompt(spec: &ProbeSpec, n: u32) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    (0..n).map(|_| rng.random_range(0..spec.shape.vocab)).collect()
}

/// An inference engine as the probe drives it: greedy steps over a KV cache.
pub trait Engine {
    /// Forget the KV cache (a new conversation).
    fn reset(&mut self) -> Result<(), engine::EngineError>;
    /// Run `tokens` at position `offset`; return the greedy next token.
    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, engine::EngineError>;
}

/// Which engine the probe measures through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineKind {
    /// The built-in pure-Rust engine (always built): pocketbench's Qwen3
    /// decoder on candle-core's GGUF reader with run-time-dispatched 4/8-bit
    /// kernels; files with other tensor types run on candle-transformers.
    #[default]
    #[serde(rename = "candle")]
    Candle,
    /// candle-transformers' stock quantized Qwen3 (always built): the
    /// reference the built-in engine is checked and compared against.
    #[serde(rename = "candle-transformers")]
    CandleTransformers,
    /// llama.cpp through the `llama-cpp-2` crate (cargo feature `llama`).
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    /// llama.cpp's own `llama-bench` run as a command, its JSON parsed
    /// (`$POCKETBENCH_LLAMA_BENCH` or `llama-bench` on `PATH`).
    #[serde(rename = "llama-bench")]
    LlamaBench,
}

impl EngineKind {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Candle => "candle",
            EngineKind::CandleTransformers => "candle-transformers",
            EngineKind::LlamaCpp => "llama.cpp",
            EngineKind::LlamaBench => "llama-bench",
        }
    }

    /// Name and version as built into this binary.
    pub fn version(self) -> String {
        match self {
            EngineKind::Candle => format!(
                "pocketbench native Qwen3, {} kernels, candle-core {} GGUF reader",
                crate::kernels::isa().name(),
                env!("PB_CANDLE_VERSION")
            ),
            EngineKind::CandleTransformers => {
                format!("candle-transformers {} quantized_qwen3", env!("PB_CANDLE_VERSION"))
            }
            EngineKind::LlamaCpp => {
                format!("llama-cpp-2 {} (llama.cpp vendored by llama-cpp-sys-2)", env!("PB_LLAMA_VERSION"))
            }
            EngineKind::LlamaBench => "llama-bench (external; its build is recorded with each result)".into(),
        }
    }

    /// Whether this binary can run it.
    pub fn available(self) -> bool {
        match self {
            EngineKind::Candle | EngineKind::CandleTransformers => true,
            EngineKind::LlamaCpp => cfg!(feature = "llama"),
            EngineKind::LlamaBench => crate::external::llama_bench::locate().is_some(),
        }
    }
}

impl std::str::FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "candle" => Ok(EngineKind::Candle),
            "candle-transformers" => Ok(EngineKind::CandleTransformers),
            "llama.cpp" | "llama" | "llamacpp" => Ok(EngineKind::LlamaCpp),
            "llama-bench" => Ok(EngineKind::LlamaBench),
            other => Err(format!("unknown engine `{other}` (candle, candle-transformers, llama.cpp, llama-bench)")),
        }
    }
}

/// Run the workload once; returns (prefill, ttft, decode) seconds.
fn run_once(m: &mut dyn Engine, tokens: &[u32], gen: u32) -> Result<(f64, f64, f64), ProbeError> {
    m.reset()?;
    let t0 = Instant::now();
    let mut next = m.step(tokens, 0)?;
    let prefill = t0.elapsed().as_secs_f64();
    let ttft = prefill; // the first token is the argmax of the prefill's logits
    let decode = decode_loop(m, &mut next, tokens.len(), gen)?;
    Ok((prefill, ttft, decode))
}

/// The timed decode loop: `gen` greedy steps from position `offset`, each
/// fed the previous token; returns seconds. Two clock reads per run and one
/// virtual call per token are all it adds to the engine's own work (the
/// `decode` benchmark times it around an engine that does nothing).
pub fn decode_loop(m: &mut dyn Engine, next: &mut u32, offset: usize, gen: u32) -> Result<f64, ProbeError> {
    let t = Instant::now();
    for i in 0..gen as usize {
        *next = m.step(&[*next], offset + i)?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// The engine-independent part of a probe: warm-up, timed repetitions with
/// energy around each, the peak read before any reload, then the timed
/// reloads that give the later repetitions their load time.
fn measure(
    spec: &ProbeSpec,
    m: &mut dyn Engine,
    first_load_s: f64,
    reload: &mut dyn FnMut() -> Result<f64, engine::EngineError>,
    energy: &mut Option<Box<dyn crate::meter::EnergyMeter>>,
) -> Result<(Vec<Rep>, u64), ProbeError> {
    let tokens = prompt(spec, spec.workload.prompt);
    // Warm up with one short run so first-touch page faults and lazy
    // initialisation are not timed.
    run_once(m, &tokens[..tokens.len().min(16)], spec.workload.gen.min(4))?;
    let mut reps = Vec::with_capacity(spec.reps as usize);
    for _ in 0..spec.reps {
        if let Some(meter) = energy.as_mut() {
            meter.start().map_err(|e| ProbeError::Spec(e.to_string()))?;
        }
        let (prefill_s, ttft_s, decode_s) = run_once(m, &tokens, spec.workload.gen)?;
        let reading = match energy.as_mut() {
            Some(meter) => Some(meter.stop().map_err(|e| ProbeError::Spec(e.to_string()))?),
            None => None,
        };
        reps.push(Rep {
            load_s: Some(first_load_s),
            prefill_s,
            ttft_s,
            decode_s,
            prefill_tok_s: spec.workload.prompt as f64 / prefill_s,
            decode_tok_s: spec.workload.gen as f64 / decode_s,
            energy: reading,
        });
    }
    // The peak is read before any reload: a second model in the process, or
    // the allocator's reuse of a freed one, is not what an app pays.
    let peak = MemoryStatus::current().map_or(0, |m| m.vm_hwm);
    for rep in reps.iter_mut().skip(1) {
        rep.load_s = Some(reload()?);
    }
    Ok((reps, peak))
}

fn measure_candle_transformers(
    spec: &ProbeSpec,
    energy: &mut Option<Box<dyn crate::meter::EnergyMeter>>,
) -> Result<(Vec<Rep>, u64), ProbeError> {
    let t = Instant::now();
    let mut m = engine::CandleModel::load(&spec.model)?;
    let first = t.elapsed().as_secs_f64();
    let mut reload = || {
        let t = Instant::now();
        drop(engine::CandleModel::load(&spec.model)?);
        Ok(t.elapsed().as_secs_f64())
    };
    measure(spec, &mut m, first, &mut reload, energy)
}

/// Run the probe in this process. `energy` is started and stopped around
/// each repetition's prefill + decode.
pub fn run(
    spec: &ProbeSpec,
    mut energy: Option<Box<dyn crate::meter::EnergyMeter>>,
    energy_not_measured: Option<String>,
) -> Result<ProbeResult, ProbeError> {
    spec.validate()?;
    if !spec.engine.available() {
        return Err(ProbeError::Spec(match spec.engine {
            EngineKind::LlamaBench => {
                "llama-bench not found: set POCKETBENCH_LLAMA_BENCH to its path or put it on PATH".into()
            }
            e => format!("this binary was built without the {} engine (rebuild with `--features llama`)", e.name()),
        }));
    }
    if spec.engine == EngineKind::LlamaBench {
        return external::run(spec, energy_not_measured);
    }
    let baseline = MemoryStatus::current().map_or(0, |m| m.vm_rss);
    let mut engine = spec.engine;
    let mut version = spec.engine.version();
    let (reps, peak) = match spec.engine {
        EngineKind::Candle => {
            let context = spec.workload.context as usize;
            let load = || native::NativeModel::load(&spec.model, spec.threads as usize, context);
            let t = Instant::now();
            match load() {
                Ok(mut m) => {
                    let first = t.elapsed().as_secs_f64();
                    let mut reload = || {
                        let t = Instant::now();
                        drop(load().map_err(native::LoadError::into_engine)?);
                        Ok(t.elapsed().as_secs_f64())
                    };
                    measure(spec, &mut m, first, &mut reload, &mut energy)?
                }
                Err(native::LoadError::Unsupported(why)) => {
                    engine = EngineKind::CandleTransformers;
                    version = format!("{} (the native path does not run this file: {why})", engine.version());
                    measure_candle_transformers(spec, &mut energy)?
                }
                Err(native::LoadError::Engine(e)) => return Err(e.into()),
            }
        }
        EngineKind::CandleTransformers => measure_candle_transformers(spec, &mut energy)?,
        #[cfg(feature = "llama")]
        EngineKind::LlamaCpp => {
            llama::with_engine(spec, |m, first, reload| measure(spec, m, first, reload, &mut energy))??
        }
        #[cfg(not(feature = "llama"))]
        EngineKind::LlamaCpp => unreachable!("checked by available()"),
        EngineKind::LlamaBench => unreachable!("handled above"),
    };
    // After the peak was read (inside `measure`), so the buffer is not counted.
    let read_bandwidth = ProbeBandwidth::measure(spec.threads);
    let energy_method = match (&energy, &energy_not_measured) {
        (Some(m), _) => m.name(),
        (None, Some(why)) => format!("not measured: {why}"),
        (None, None) => "not measured".into(),
    };
    let methods = [
        ("load_s", "timer (std::time::Instant) around loading the GGUF; repetitions after the first time reloads made after the peak was read"),
        ("prefill_s", "timer around one forward pass over the whole prompt"),
        (
            "read_bandwidth",
            "sum over a fresh 256 MiB buffer by the probe's threads right after the repetitions, best of 3 passes (timer)",
        ),
        ("ttft_s", "timer from the start of prefill to the greedy first token"),
        ("decode_s", "timer around `gen` single-token forward passes with the KV cache, argmax included"),
        (
            "peak_increase_bytes",
            "VmHWM after load, warm-up and every repetition minus VmRSS before the load (/proc/self/status), fresh process",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain(std::iter::once(("energy".to_string(), energy_method)))
    .collect();
    Ok(ProbeResult {
        config_id: spec.shape.id(),
        engine: engine.name().into(),
        engine_version: version,
        workload: spec.workload,
        threads: spec.threads,
        warmup: 1,
        reps,
        baseline_rss_bytes: baseline,
        peak_hwm_bytes: peak,
        peak_increase_bytes: peak.saturating_sub(baseline),
        model_file_bytes: std::fs::metadata(&spec.model).map_or(0, |m| m.len()),
        energy_not_measured: if energy.is_none() { energy_not_measured.or(Some("no meter".into())) } else { None },
        read_bandwidth: Some(read_bandwidth),
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
