//! The llama.cpp engine (cargo feature `llama`): it loads the GGUF pocketbench
//! writes and measures it through the same probe and runner.
#![cfg(feature = "llama")]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use pocketbench::probe::EngineKind;
use pocketbench::runner::{HostRunner, Job, Runner};
use pocketbench::workload::Workload;

#[test]
fn llama_cpp_runs_the_exported_model() {
    let d = tempfile::tempdir().unwrap();
    let shape = common::tiny();
    let mut runner = HostRunner::new("host", PathBuf::from(env!("CARGO_BIN_EXE_pocketbench")), d.path().join("cache"));
    runner.available_bytes = 1 << 30;
    let job = Job {
        shape,
        workload: Workload::new(16, 8, None).unwrap(),
        reps: 2,
        threads: 1,
        timeout: Duration::from_secs(120),
        predicted_peak_bytes: 1e6,
        force: false,
        engine: EngineKind::LlamaCpp,
        engine_model: None,
        cooling: None,
        auto: None,
        pin: false,
        bandwidth_pass: true,
        timed_reloads: true,
        soak: None,
        contention: None,
    };
    let p = runner.measure(&job).unwrap();
    assert_eq!(p.engine, "llama.cpp");
    assert!(p.engine_version.starts_with("llama-cpp-2 "));
    assert_eq!(p.reps.len(), 2);
    assert!(p.reps.iter().all(|r| r.decode_tok_s > 0.0 && r.prefill_tok_s > 0.0));
    assert!(p.peak_increase_bytes > 0);
}

/// The same GGUF through the native engine and llama.cpp: greedy decoding of
/// one prompt gives the same first tokens, for at least
/// [`pocketbench::trust::ENGINES_AGREE`] of them (their kernels round
/// differently; see `common_prefix`).
#[test]
fn the_native_engine_and_llama_cpp_agree_on_the_first_tokens() {
    let d = tempfile::tempdir().unwrap();
    let mut runner = HostRunner::new("host", PathBuf::from(env!("CARGO_BIN_EXE_pocketbench")), d.path().join("cache"));
    runner.available_bytes = 1 << 30;
    let job = |engine| Job {
        shape: common::tiny(),
        workload: Workload::new(16, 32, None).unwrap(),
        reps: 1,
        threads: 1,
        timeout: Duration::from_secs(120),
        predicted_peak_bytes: 1e6,
        force: false,
        engine,
        engine_model: None,
        cooling: None,
        auto: None,
        pin: false,
        bandwidth_pass: false,
        timed_reloads: false,
        soak: None,
        contention: None,
    };
    let native = runner.measure(&job(EngineKind::Native)).unwrap();
    let llama = runner.measure(&job(EngineKind::LlamaCpp)).unwrap();
    let (common, n, m) = pocketbench::trust::common_prefix(&native, &llama).expect("both keep their tokens");
    assert_eq!((n, m), (33, 33), "the prefill's token and 32 decoded");
    assert!(common >= pocketbench::trust::ENGINES_AGREE, "common prefix {common} of {n}");
}
