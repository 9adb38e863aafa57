//! The probe's external engines: a command a team already runs, its output
//! parsed into the same [`ProbeResult`] the built-in engines produce.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{BuildInfo, EngineKind, HostFacts, ProbeError, ProbeResult, ProbeSpec, Rep, SCHEMA};
use crate::external::{llama_bench, mnn_llm_bench};

/// What an external run adds to the parts every external result shares.
struct Parts {
    engine: EngineKind,
    engine_version: String,
    threads: u32,
    reps: Vec<Rep>,
    peak_hwm_bytes: u64,
    model_file_bytes: u64,
    methods: [(&'static str, String); 4],
}

fn result(spec: &ProbeSpec, p: Parts, energy_not_measured: Option<String>) -> ProbeResult {
    let tool = p.engine.name();
    let methods: BTreeMap<String, String> = p
        .methods
        .into_iter()
        .chain([
            (
                "peak_increase_bytes",
                format!("largest VmHWM of the {tool} processes, polled every 5 ms: the whole process, not an increase over a baseline"),
            ),
            ("energy", format!("not measured: {tool} runs as a separate process")),
        ])
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    ProbeResult {
        schema: SCHEMA,
        energy: Default::default(),
        config_id: spec.shape.id(),
        engine: tool.into(),
        engine_version: p.engine_version,
        workload: spec.workload,
        threads: p.threads,
        warmup: 1,
        reps: p.reps,
        baseline_rss_bytes: 0,
        peak_hwm_bytes: p.peak_hwm_bytes,
        peak_increase_bytes: p.peak_hwm_bytes,
        model_file_bytes: p.model_file_bytes,
        energy_not_measured: Some(energy_not_measured.unwrap_or_else(|| format!("{tool} runs as a separate process"))),
        read_bandwidth: Some(super::ProbeBandwidth::measure(spec.threads)),
        host: HostFacts::collect(),
        device_props: BTreeMap::new(),
        build: BuildInfo::current(),
        covariates: None,
        sampling: None,
        methods,
        // The tool's process's VmHWM, polled; no energy.
        meters: Some(pocketbench_types::meter::Meters { memory: pocketbench_types::meter::Meter::VmHwm, energy: None }),
        soak: None,
    }
}

/// A repetition from a tool's prompt and decode speeds: times are the
/// workload's tokens over them, and the first token is taken to come with
/// the prompt (neither tool reports it apart).
fn rep(spec: &ProbeSpec, prefill_tok_s: f64, decode_tok_s: f64, load_s: Option<f64>) -> Rep {
    let w = spec.workload;
    Rep {
        load_s,
        prefill_s: w.prompt as f64 / prefill_tok_s,
        ttft_s: w.prompt as f64 / prefill_tok_s,
        decode_s: w.gen as f64 / decode_tok_s,
        prefill_tok_s,
        decode_tok_s,
        energy: None,
        thermal: None,
        ..Default::default()
    }
}

/// The share of the runner's timeout one of `processes` external processes
/// may take: each gives up before the runner's timeout, so the failure says
/// which tool hung. (Orphans are not the reason: the host runner kills the
/// probe's whole process group, the tools included.)
fn per_process_timeout(spec: &ProbeSpec, processes: u32) -> Duration {
    Duration::from_secs_f64(spec.timeout_s.unwrap_or(1800.0) * 0.9 / processes.max(1) as f64)
}

/// Run `llama-bench` for the spec's workload.
pub(super) fn llama_bench(spec: &ProbeSpec, energy_not_measured: Option<String>) -> Result<ProbeResult, ProbeError> {
    let bin = llama_bench::locate().ok_or_else(|| ProbeError::Spec(EngineKind::LlamaBench.unavailable_because()))?;
    let w = spec.workload;
    let inv = llama_bench::Invocation {
        bin: &bin,
        model: &spec.model,
        prompt: w.prompt,
        gen: w.gen,
        threads: spec.threads,
        reps: spec.reps,
        timeout: per_process_timeout(spec, 2),
    };
    let out = llama_bench::run(&inv).map_err(|e| ProbeError::Spec(e.to_string()))?;
    let reps =
        out.prefill.samples_ts.iter().zip(&out.decode.samples_ts).map(|(pp, tg)| rep(spec, *pp, *tg, None)).collect();
    let d = &out.decode;
    let args = llama_bench::args(&inv).map(|a| a.join(" "));
    let parts = Parts {
        engine: EngineKind::LlamaBench,
        engine_version: format!(
            "llama-bench build {} ({}), backends {}, run as `{} {}` and `{} {}`",
            d.build_number,
            d.build_commit,
            d.backends,
            bin.display(),
            args[0],
            bin.display(),
            args[1]
        ),
        threads: d.n_threads,
        reps,
        peak_hwm_bytes: out.peak_hwm_bytes,
        model_file_bytes: std::fs::metadata(&spec.model).map_or(0, |m| m.len()),
        methods: [
            ("load_s", "not reported by llama-bench".to_string()),
            ("prefill_s", format!("llama-bench pp{} (its own timer), one sample per repetition", w.prompt)),
            ("ttft_s", "taken equal to the prefill time (llama-bench does not sample a first token)".into()),
            ("decode_s", format!("llama-bench tg{}@d{} (its own timer), one sample per repetition", w.gen, w.prompt)),
        ],
    };
    Ok(result(spec, parts, energy_not_measured))
}

/// Run MNN's `llm_bench` on the MNN export `spec.model` names (its
/// `config.json`), one process per repetition.
pub(super) fn mnn_llm_bench(spec: &ProbeSpec, energy_not_measured: Option<String>) -> Result<ProbeResult, ProbeError> {
    let bin = mnn_llm_bench::locate().ok_or_else(|| ProbeError::Spec(EngineKind::MnnLlmBench.unavailable_because()))?;
    let info =
        mnn_llm_bench::ModelInfo::check(&spec.model, &spec.shape).map_err(|e| ProbeError::Spec(e.to_string()))?;
    let dir = tempfile::tempdir().map_err(|e| ProbeError::Spec(format!("no scratch directory for llm_bench: {e}")))?;
    let w = spec.workload;
    let inv = mnn_llm_bench::Invocation {
        bin: &bin,
        config: &spec.model,
        prompt: w.prompt,
        gen: w.gen,
        threads: spec.threads,
        reps: spec.reps,
        timeout: per_process_timeout(spec, spec.reps),
        out_dir: dir.path(),
    };
    let out = mnn_llm_bench::run(&inv).map_err(|e| ProbeError::Spec(e.to_string()))?;
    let reps = out
        .tests
        .iter()
        .filter_map(|t| Some((t.speeds()?, t.loading_time)))
        .map(|((pp, tg), load_s)| rep(spec, pp, tg, load_s))
        .collect();
    let r = &out.report;
    let parts = Parts {
        engine: EngineKind::MnnLlmBench,
        engine_version: format!(
            "MNN llm_bench, backend {}, precision {}, memory {}, flash attention {}, KV quantization {}, model `{}` ({}), run as `{} {}` once per repetition",
            r.backend,
            r.precision,
            r.memory,
            r.flash_attention,
            r.quant_kv,
            r.model,
            info.model_type,
            bin.display(),
            mnn_llm_bench::args(&inv, 0).join(" ")
        ),
        threads: r.threads,
        reps,
        peak_hwm_bytes: out.peak_hwm_bytes,
        model_file_bytes: info.file_bytes,
        methods: [
            ("load_s", "llm_bench -load true: mean of its three model loads in that repetition's process (its own timer)".to_string()),
            (
                "prefill_s",
                format!("llm_bench -pg {},{} prefill speed (MNN's own timer), one process per repetition after llm_bench's own warm-up run", w.prompt, w.gen),
            ),
            ("ttft_s", "taken equal to the prefill time (llm_bench does not report a first token apart)".into()),
            (
                "decode_s",
                format!("llm_bench -pg {},{} decode speed over the prompt's KV cache (MNN's own timer), one process per repetition", w.prompt, w.gen),
            ),
        ],
    };
    Ok(result(spec, parts, energy_not_measured))
}
