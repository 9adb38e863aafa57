//! The probe's external engines: a command a team already runs, its output
//! parsed into the same [`ProbeResult`] the built-in engines produce.

use std::time::Duration;

use super::{BuildInfo, HostFacts, ProbeError, ProbeResult, ProbeSpec, Rep};
use crate::external::llama_bench::{self, Invocation};

/// Run `llama-bench` for the spec's workload.
pub(super) fn run(spec: &ProbeSpec, energy_not_measured: Option<String>) -> Result<ProbeResult, ProbeError> {
    let bin = llama_bench::locate().ok_or_else(|| ProbeError::Spec("llama-bench not found".into()))?;
    // Two llama-bench processes share the runner's timeout, each giving up
    // before the runner would kill this probe and orphan it.
    let timeout = Duration::from_secs_f64(spec.timeout_s.unwrap_or(1800.0) * 0.45);
    let w = spec.workload;
    let inv = Invocation {
        bin: &bin,
        model: &spec.model,
        prompt: w.prompt,
        gen: w.gen,
        threads: spec.threads,
        reps: spec.reps,
        timeout,
    };
    let out = llama_bench::run(&inv).map_err(|e| ProbeError::Spec(e.to_string()))?;
    let reps = out
        .prefill
        .samples_ts
        .iter()
        .zip(&out.decode.samples_ts)
        .map(|(pp, tg)| Rep {
            load_s: None,
            prefill_s: w.prompt as f64 / pp,
            ttft_s: w.prompt as f64 / pp,
            decode_s: w.gen as f64 / tg,
            prefill_tok_s: *pp,
            decode_tok_s: *tg,
            energy: None,
        })
        .collect();
    let d = &out.decode;
    let methods = [
        ("load_s", "not reported by llama-bench".to_string()),
        ("prefill_s", format!("llama-bench pp{} (its own timer), one sample per repetition", w.prompt)),
        ("ttft_s", "taken equal to the prefill time (llama-bench does not sample a first token)".into()),
        ("decode_s", format!("llama-bench tg{}@d{} (its own timer), one sample per repetition", w.gen, w.prompt)),
        (
            "peak_increase_bytes",
            "largest VmHWM of the llama-bench processes, polled every 5 ms: the whole process, not an increase over a baseline".into(),
        ),
        ("energy", "not measured: llama-bench runs as a separate process".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let args = llama_bench::args(&inv).map(|a| a.join(" "));
    Ok(ProbeResult {
        config_id: spec.shape.id(),
        engine: super::EngineKind::LlamaBench.name().into(),
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
        workload: w,
        threads: d.n_threads,
        warmup: 1,
        reps,
        baseline_rss_bytes: 0,
        peak_hwm_bytes: out.peak_hwm_bytes,
        peak_increase_bytes: out.peak_hwm_bytes,
        model_file_bytes: std::fs::metadata(&spec.model).map_or(0, |m| m.len()),
        energy_not_measured: Some(
            energy_not_measured.unwrap_or_else(|| "llama-bench runs as a separate process".into()),
        ),
        read_bandwidth: Some(super::ProbeBandwidth::measure(spec.threads)),
        host: HostFacts::collect(),
        build: BuildInfo::current(),
        methods,
    })
}
