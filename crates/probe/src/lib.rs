//! pocketbench-probe: the process that runs on a device. It loads a
//! configuration's model file, runs the workload (prefill, then decode one
//! token at a time with a KV cache) after a warm-up, for N repetitions, and
//! reports what it really did, each figure with how it was obtained.
//!
//! This crate is everything a device needs and nothing it does not: the
//! timing loop ([`run`]), the engines ([`native`], [`engine`], the external
//! tools), the kernels ([`kernels`]), the meters ([`meter`]), the spec and
//! result it reads and writes ([`ProbeSpec`], [`ProbeResult`], versioned by
//! [`SCHEMA`]) and the process's entry ([`entry`]). It depends on no CLI,
//! TOML, plotting or database crate, so it builds as a small static
//! executable for a phone (`cargo build -p pocketbench-probe --release
//! --target aarch64-unknown-linux-musl`); the harness (`pocketbench`)
//! depends on it, never the other way round. The vocabulary both share
//! (shapes, quantization, workloads, units, ids) is `pocketbench-types`.
//!
//! On the host the probe runs as a child process of the sweep (the harness's
//! runner), so one configuration's peak memory never leaks into the next; the
//! model file is built beforehand ([`gguf`]), so the peak reflects loading
//! and running the model as an app would, not generating weights.
#![deny(missing_docs)]

pub mod drift;
pub mod energy;
pub mod engine;
pub mod entry;
pub mod external;
pub mod gguf;
mod host;
pub mod hostinfo;
pub mod kernels;
mod kind;
#[cfg(feature = "llama")]
pub mod llama;
pub mod meter;
pub mod native;
pub mod soak;
mod spec;
pub mod thermal;
pub mod timing;
mod tools;
pub mod window;

pub use host::{BuildInfo, HostFacts};
pub use kind::{Engine, EngineKind, UnknownEngine, Unrunnable};
pub use spec::{
    ProbeBandwidth, ProbeError, ProbeResult, ProbeSpec, Rep, SchemaError, MAX_REPS, PROBE_BANDWIDTH_BYTES, SCHEMA,
};
pub use timing::decode_loop;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use timing::measure;

use candle_core::quantized::GgmlDType;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use pocketbench_types::arch::Shape;
use pocketbench_types::meter::{Meter, Meters};

fn prompt(spec: &ProbeSpec, n: u32) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    (0..n).map(|_| rng.random_range(0..spec.shape.vocab)).collect()
}

#[cfg(feature = "candle-transformers")]
fn measure_candle_transformers(spec: &ProbeSpec, energy: &mut energy::Session) -> Result<timing::Measured, ProbeError> {
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
    meter: Option<Box<dyn crate::meter::EnergyMeter>>,
    energy_not_measured: Option<String>,
) -> Result<ProbeResult, ProbeError> {
    spec.validate()?;
    if !spec.engine.available() {
        return Err(ProbeError::Spec(spec.engine.unavailable_because()));
    }
    match spec.engine {
        EngineKind::LlamaBench => return tools::llama_bench(spec, energy_not_measured),
        EngineKind::MnnLlmBench => return tools::mnn_llm_bench(spec, energy_not_measured),
        _ => {}
    }
    let baseline = crate::meter::usage().map_or(0, |u| u.current);
    let engine = spec.engine;
    kernels::set_pinning(spec.pin);
    let mut energy = energy::Session::new(meter, energy_not_measured);
    let (got, held) = measure_engine(spec, &mut energy)?;
    let timing::Measured { mut reps, peak, sampling, mut covariates, soak } = got;
    if let Some((bytes, _)) = held {
        // The engine's own count of the weights it holds, not the file's.
        covariates.huge_page_share = covariates.anon_huge_bytes.map(|a| (a as f64 / bytes.max(1) as f64).min(1.0));
    }
    // After the peak was read (inside `measure`), so the buffer is not counted.
    let read_bandwidth = spec.bandwidth_pass.then(|| ProbeBandwidth::measure(spec.threads));
    // Read before `finish`: a meter lost mid-way is already gone, and says why.
    let energy_method = energy.method();
    let energy_meter = energy.meter();
    let (figures, energy_not_measured) = energy.finish(&mut reps);
    let memory_meter = if cfg!(target_vendor = "apple") { Meter::PhysFootprint } else { Meter::VmHwm };
    let meters = Meters { memory: memory_meter, energy: energy_meter.filter(|_| energy_not_measured.is_none()) };
    let methods = methods(spec, &reps, energy_method, figures.describe(), held);
    Ok(ProbeResult {
        schema: SCHEMA,
        config_id: spec.shape.id(),
        engine: engine.name().into(),
        // After the load, which chose the kernel variants on the engine's threads.
        engine_version: engine.version(),
        workload: spec.workload,
        threads: spec.threads,
        warmup: 1,
        reps,
        baseline_rss_bytes: baseline,
        peak_hwm_bytes: peak,
        peak_increase_bytes: peak.saturating_sub(baseline),
        model_file_bytes: std::fs::metadata(&spec.model).map_or(0, |m| m.len()),
        energy_not_measured,
        energy: figures,
        read_bandwidth,
        host: HostFacts::collect(),
        // What an app may still allocate before its limit (iOS).
        device_props: meter::footprint::available()
            .map(|b| ("os_proc_available_memory_bytes".to_string(), b.to_string()))
            .into_iter()
            .collect(),
        build: BuildInfo::current(),
        covariates: Some(covariates),
        sampling: Some(sampling),
        methods,
        meters: Some(meters),
        soak,
    })
}

/// The repetitions and peak memory of `spec` through its in-process engine,
/// and for the native engine the bytes of matrices it held and how many
/// share scales.
fn measure_engine(
    spec: &ProbeSpec,
    energy: &mut energy::Session,
) -> Result<(timing::Measured, Option<(usize, usize)>), ProbeError> {
    Ok(match spec.engine {
        EngineKind::Native => {
            // No fallback: a file the native kernels do not run is refused,
            // never measured on a slower engine under this one's name.
            let context = spec.workload.context as usize;
            let load = || {
                native::NativeModel::load(&spec.model, spec.threads as usize, context)
                    .map_err(native::LoadError::into_engine)
            };
            let t = Instant::now();
            let mut m = load()?;
            let first = t.elapsed().as_secs_f64();
            let held = m.weight_bytes();
            let mut reload = || {
                let t = Instant::now();
                drop(load()?);
                Ok(t.elapsed().as_secs_f64())
            };
            (measure(spec, &mut m, first, &mut reload, energy)?, Some(held))
        }
        #[cfg(feature = "candle-transformers")]
        EngineKind::CandleTransformers => (measure_candle_transformers(spec, energy)?, None),
        #[cfg(not(feature = "candle-transformers"))]
        EngineKind::CandleTransformers => unreachable!("checked by available()"),
        #[cfg(feature = "llama")]
        EngineKind::LlamaCpp => {
            (llama::with_engine(spec, |m, first, reload| measure(spec, m, first, reload, energy))??, None)
        }
        #[cfg(not(feature = "llama"))]
        EngineKind::LlamaCpp => unreachable!("checked by available()"),
        EngineKind::LlamaBench | EngineKind::MnnLlmBench => unreachable!("run as external tools"),
    })
}

/// How a soak was run and read.
fn soak_method(s: &soak::SoakSpec) -> String {
    format!(
        "the workload back to back for {} window(s) of {} s (timer); per window: decode tokens over the timer of \
         their steps, the hottest thermal zone (else hwmon sensor) at its end, the mean scaling_cur_freq of its \
         threads' CPUs, /proc/stat and /proc/pressure/cpu; throttled when the last decoding window is more than \
         {:.0}% below the first",
        s.windows(),
        s.window_s,
        s.throttle_drop * 100.0
    )
}

/// How the thermal readings were taken, where there were any.
fn thermal_method(spec: &ProbeSpec, reps: &[Rep]) -> Option<String> {
    // Of the repetitions the figures summarize: a retaken one (contended or
    // drifted) is kept in the result but counts toward no figure.
    let hot = reps.iter().filter(|r| !r.retaken && r.thermal.as_ref().is_some_and(|t| t.hot)).count();
    reps.iter().find_map(|r| r.thermal.as_ref()).map(|t| match spec.cooling {
        Some(c) => format!(
            "hottest of the thermal zones at the start and end of each repetition ({}); cooled to {} C (at most {} s) \
             before each{}",
            t.source,
            c.cool_to_c,
            c.timeout_s,
            if hot > 0 { format!("; {hot} repetition(s) started hot after the timeout") } else { String::new() }
        ),
        None => format!(
            "hottest of the thermal zones at the start and end of each repetition ({}); no cooling asked",
            t.source
        ),
    })
}

/// How each figure of the result was taken, and what ran: the kernels, the
/// weights' storage and memory, caveats.
fn methods(
    spec: &ProbeSpec,
    reps: &[Rep],
    energy_method: String,
    net: Option<String>,
    held: Option<(usize, usize)>,
) -> BTreeMap<String, String> {
    let native = spec.engine == EngineKind::Native;
    let q4k = gguf::ggml_dtype(spec.shape.quant).ok() == Some(GgmlDType::Q4K);
    [
        ("load_s", "timer (std::time::Instant) around loading the GGUF; repetitions after the first time reloads made after the peak was read"),
        ("prefill_s", "timer around one forward pass over the whole prompt"),
        (
            "read_bandwidth",
            "sum over a fresh 256 MiB buffer (advised MADV_HUGEPAGE, as the weights) by the probe's threads right after the repetitions, best of 3 passes (timer)",
        ),
        ("ttft_s", "timer from the start of prefill to the greedy first token"),
        ("decode_s", "timer around `gen` single-token forward passes with the KV cache, argmax included"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain(std::iter::once(("peak_increase_bytes".to_string(), peak_method())))
    .chain(std::iter::once(("energy".to_string(), energy_method)))
    .chain(
        [
            (
                "itl_us",
                "timer (std::time::Instant) read after every decode step: each step's microseconds, the \
                 inter-token latencies",
            ),
            (
                "tokens_hash",
                "FNV-1a over the generated token ids (greedy, seeded prompt and weights), the prefill's first \
                 included",
            ),
            (
                "window",
                "over each repetition: /proc/stat (steal, busy minus this process's /proc/self/task/*/schedstat \
                 = other processes), /proc/pressure/cpu, the threads' involuntary switches, migrations and \
                 last CPU, cpufreq where readable",
            ),
            ("covariates", "AnonHugePages of /proc/self/smaps_rollup after the warm-up; sched_getaffinity"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .chain(timing::injected_rep().map(|r| {
        (
            "fault".to_string(),
            format!("{} set: repetition {r}'s first decode token was replaced (a test)", timing::INJECT_WRONG_TOKEN),
        )
    }))
    .chain(net.map(|n| ("energy_j_per_run".to_string(), n)))
    .chain(thermal_method(spec, reps).map(|t| ("thermal".to_string(), t)))
    .chain(spec.soak.map(|s| ("soak".to_string(), soak_method(&s))))
    .chain(native.then(|| ("kernels".to_string(), crate::kernels::x8_choice().describe())))
    .chain(native.then(|| {
        (
            "weights_memory".to_string(),
            format!(
                "matrices of 2 MiB and more in anonymous mappings advised MADV_HUGEPAGE before they are read \
                 (Linux); transparent huge pages on this machine: {}",
                crate::kernels::transparent_huge_pages().unwrap_or_else(|| "not reported".into())
            ),
        )
    }))
    .chain((native && q4k).then(|| {
        (
            "caveat".to_string(),
            "q4_k is repacked at load eight rows at a time with its 6-bit sub-block scales and minimums as \
             bytes: 4.625 bits per weight in memory against the file's 4.5, so its weights take about 2.8% \
             more memory and bandwidth than ggml's packing (docs: Engines, Storage types)"
                .to_string(),
        )
    }))
    .chain(gguf::Storage::of(spec.shape.quant).ok().map(|st| ("weights".to_string(), st.describe(spec.shape.quant))))
    .chain(held.map(|held| ("weights_in_memory".to_string(), held_in_memory(spec, held))))
    .collect()
}

/// The native engine's matrices in memory against the file's size.
fn held_in_memory(spec: &ProbeSpec, (bytes, shared): (usize, usize)) -> String {
    let file = std::fs::metadata(&spec.model).map_or(String::new(), |m| format!(" (the file: {} bytes)", m.len()));
    let how = if shared > 0 {
        format!(
            "; {shared} 4-bit matrices keep each group's scale{} once for the blocks the file repeats it in",
            if gguf::ggml_dtype(spec.shape.quant).ok() == Some(GgmlDType::Q4_1) { " and minimum" } else { "" }
        )
    } else {
        String::new()
    };
    format!("{bytes} bytes of matrices held by the native engine{file}{how}")
}

/// How peak memory was read: the platform's meter, after the load, the
/// warm-up and every repetition, less its reading before the load.
fn peak_method() -> String {
    if cfg!(target_vendor = "apple") {
        format!(
            "{} after load, warm-up and every repetition, minus phys_footprint before the load",
            meter::MEMORY_METER
        )
    } else {
        "VmHWM after load, warm-up and every repetition minus VmRSS before the load (/proc/self/status), fresh process"
            .into()
    }
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

/// Write the spec's model file where it is absent: the same seeded GGUF the
/// harness builds for the shape ([`seed_of`]), so a probe in an app (iOS)
/// or in a runner's stand-in needs the spec alone. Returns whether it wrote.
pub fn ensure_model(spec: &ProbeSpec) -> Result<bool, gguf::GgufError> {
    if spec.model.exists() || spec.engine.needs_engine_model() {
        return Ok(false);
    }
    gguf::write_model(&spec.shape, seed_of(&spec.shape), &spec.model)?;
    Ok(true)
}

/// The weight seed of a shape: derived from its id, so the same shape always
/// has the same weights on every machine.
pub fn seed_of(shape: &Shape) -> u64 {
    pocketbench_types::fnv1a(shape.canonical().as_bytes())
}
