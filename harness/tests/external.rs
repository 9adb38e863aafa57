//! Parsers of other engines' output, on output recorded from real runs.

use pocketbench::arch::preset;
use pocketbench::external::llama_bench;

mod common;

/// Recorded on the development host (AMD EPYC, 2 threads) from llama-bench built
/// from llama-cpp-python 0.3.36's vendored llama.cpp (commit 0c1e570,
/// GGML_NATIVE=OFF), on the GGUF `pocketbench export-gguf --preset mnn-pocket-0.3b`
/// writes: `llama-bench -m … -t 2 -p 256 -n 64 -r 5 -o json`.
const POCKET: &str = include_str!("fixtures/llama-bench/pocket-t2-p256-n64.json");

#[test]
fn llama_bench_json_parses_into_samples() {
    let tests = llama_bench::parse(POCKET).unwrap();
    assert_eq!(tests.len(), 2);
    let (pp, tg) = (&tests[0], &tests[1]);
    assert_eq!((pp.name(), tg.name()), ("pp256".to_string(), "tg64".to_string()));
    assert_eq!(pp.n_threads, 2);
    assert_eq!(pp.build_commit, "0c1e570");
    let s = pp.sample().unwrap();
    assert_eq!(s.values().len(), 5);
    assert!((s.summary().mean - pp.avg_ts).abs() < 0.01 * pp.avg_ts);
    assert!(tg.sample().unwrap().median() > 100.0);
}

#[test]
fn llama_cpp_counts_parameters_and_bytes_as_pocketbench_does() {
    let pp = &llama_bench::parse(POCKET).unwrap()[0];
    let a = preset("mnn-pocket-0.3b").unwrap().shape.accounting();
    assert_eq!(pp.model_n_params, a.params_total);
    assert_eq!(pp.model_size, a.weight_bytes);
}

#[test]
fn not_llama_bench_output_is_an_error() {
    assert!(llama_bench::parse("{\"a\": 1}").is_err());
    let mut tests = llama_bench::parse(POCKET).unwrap();
    tests[0].samples_ts.truncate(1);
    assert!(tests[0].sample().unwrap_err().to_string().contains("pp256"));
}

/// Recorded the same way from llama-bench built from the llama.cpp that
/// llama-cpp-sys-2 0.1.161 vendors (Release, GGML_NATIVE=OFF, OpenMP; no git
/// checkout, hence build_commit "unknown"): `-p 64 -n 0 -d 0 -t 2 -r 3` and
/// `-p 0 -n 16 -d 64 -t 2 -r 3`, the two command lines the probe runs.
const PP64: &str = include_str!("fixtures/llama-bench/pocket-t2-pp64.json");
const TG16_D64: &str = include_str!("fixtures/llama-bench/pocket-t2-tg16-d64.json");

mod as_engine {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use pocketbench::external::llama_bench::{self, Invocation, RunError};
    use pocketbench::probe::EngineKind;
    use pocketbench::runner::{HostRunner, Job, Runner};
    use pocketbench::workload::Workload;

    use super::{PP64, TG16_D64};
    use crate::common;

    /// A stand-in llama-bench: logs its arguments, then runs `body`; `pp.json`
    /// and `tg.json` beside it hold the recorded outputs.
    fn shim(dir: &Path, body: &str) -> PathBuf {
        std::fs::write(dir.join("pp.json"), PP64).unwrap();
        std::fs::write(dir.join("tg.json"), TG16_D64).unwrap();
        let p = dir.join("llama-bench");
        let d = dir.display();
        std::fs::write(&p, format!("#!/bin/sh\necho \"$*\" >> {d}/args.log\ncd {d}\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    const REPLAY: &str = r#"case "$*" in *"-n 0 "*) cat pp.json ;; *) cat tg.json ;; esac"#;

    fn invocation<'a>(bin: &'a Path, model: &'a Path, timeout: Duration) -> Invocation<'a> {
        Invocation { bin, model, prompt: 64, gen: 16, threads: 2, reps: 3, timeout }
    }

    #[test]
    fn the_probe_runs_llama_bench_and_keeps_its_samples() {
        let d = tempfile::tempdir().unwrap();
        let bin = shim(d.path(), REPLAY);
        // Only this test sets it, and every probe it starts inherits it.
        std::env::set_var("POCKETBENCH_LLAMA_BENCH", &bin);
        let r = HostRunner {
            device: "host".into(),
            exe: PathBuf::from(env!("CARGO_BIN_EXE_pocketbench")),
            cache: d.path().join("cache"),
            available_bytes: 1 << 30,
        };
        let job = Job {
            shape: common::tiny(),
            workload: Workload::new(64, 16, None).unwrap(),
            reps: 3,
            threads: 2,
            timeout: Duration::from_secs(120),
            predicted_peak_bytes: 1e6,
            force: false,
            engine: EngineKind::LlamaBench,
        };
        let p = r.measure(&job).unwrap();
        assert_eq!(p.engine, "llama-bench");
        assert!(p.engine_version.contains("build 0 (unknown)"), "{}", p.engine_version);
        let tg: Vec<f64> = p.reps.iter().map(|x| x.decode_tok_s).collect();
        assert_eq!(tg, [173.241, 181.592, 175.893]);
        assert!((p.reps[0].prefill_s - 64.0 / 469.112).abs() < 1e-9);
        assert!((p.reps[0].decode_s - 16.0 / 173.241).abs() < 1e-9);
        assert!(p.reps.iter().all(|x| x.load_s.is_none()));
        assert!(p.methods["decode_s"].contains("tg16@d64"));
        let log = std::fs::read_to_string(d.path().join("args.log")).unwrap();
        let model = p.engine_version.split("-m ").nth(1).unwrap().split(' ').next().unwrap().to_string();
        assert_eq!(
            log,
            format!("-p 64 -n 0 -d 0 -m {model} -t 2 -r 3 -o json\n-p 0 -n 16 -d 64 -m {model} -t 2 -r 3 -o json\n")
        );
    }

    #[test]
    fn llama_bench_failures_say_what_happened() {
        let d = tempfile::tempdir().unwrap();
        let model = d.path().join("m.gguf");
        let long = Duration::from_secs(30);
        let bin = shim(d.path(), "echo 'error: failed to load model' >&2; exit 1");
        let e = llama_bench::run(&invocation(&bin, &model, long)).unwrap_err();
        assert!(matches!(e, RunError::Failed { .. }) && e.to_string().contains("failed to load model"), "{e}");
        let bin = shim(d.path(), "sleep 10");
        let e = llama_bench::run(&invocation(&bin, &model, Duration::from_millis(300))).unwrap_err();
        assert!(matches!(e, RunError::Timeout(_)), "{e}");
        let bin = shim(d.path(), "echo 'main: error'");
        assert!(matches!(llama_bench::run(&invocation(&bin, &model, long)), Err(RunError::Parse(_))));
        let bin = shim(d.path(), "cat pp.json");
        let e = llama_bench::run(&invocation(&bin, &model, long)).unwrap_err();
        assert_eq!(e.to_string(), "llama-bench output has no tg16@d64 test");
        let bin = shim(d.path(), REPLAY);
        let out = llama_bench::run(&invocation(&bin, &model, long)).unwrap();
        assert_eq!((out.prefill.name(), out.decode.name()), ("pp64".to_string(), "tg16@d64".to_string()));
    }
}
