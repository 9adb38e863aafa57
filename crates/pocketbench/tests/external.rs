//! Parsers of other engines' output, on output recorded from real runs.

use pocketbench::arch::preset;
use pocketbench::external::llama_bench;
use pocketbench::runner::{HostRunner, Job, Runner};

mod common;

/// Measure 64 prompt + 16 generated tokens, 3 repetitions on 2 threads,
/// through `engine` with the real probe binary, its tool found through the
/// variable `tool` given to the probe alone (a `set_var` here would race
/// with sibling tests that spawn processes).
#[cfg(unix)]
fn measure_64_16(
    engine: pocketbench::probe::EngineKind,
    shape: pocketbench::arch::Shape,
    engine_model: Option<std::path::PathBuf>,
    dir: &std::path::Path,
    tool: (&str, &std::path::Path),
) -> pocketbench::probe::ProbeResult {
    let mut r = HostRunner::new("host", env!("CARGO_BIN_EXE_pocketbench").into(), dir.join("cache"));
    r.available_bytes = 1 << 30;
    r.probe_env.push((tool.0.into(), tool.1.into()));
    let job = Job {
        shape,
        workload: pocketbench::workload::Workload::new(64, 16, None).unwrap(),
        reps: 3,
        threads: 2,
        timeout: std::time::Duration::from_secs(120),
        predicted_peak_bytes: 1e6,
        force: false,
        engine,
        engine_model,
        cooling: None,
        auto: None,
        pin: false,
        bandwidth_pass: true,
        timed_reloads: true,
        soak: None,
        contention: None,
    };
    r.measure(&job).unwrap()
}

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

// The shims are POSIX shell scripts made executable with Unix permissions.
#[cfg(unix)]
mod as_engine {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use pocketbench::external::llama_bench::{self, Invocation, RunError};
    use pocketbench::probe::EngineKind;

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
        let tool = ("POCKETBENCH_LLAMA_BENCH", bin.as_path());
        let p = crate::measure_64_16(EngineKind::LlamaBench, common::tiny(), None, d.path(), tool);
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
        assert!(matches!(e, RunError::Timeout { .. }), "{e}");
        let bin = shim(d.path(), "echo 'main: error'");
        assert!(matches!(llama_bench::run(&invocation(&bin, &model, long)), Err(RunError::Parse { .. })));
        let bin = shim(d.path(), "cat pp.json");
        let e = llama_bench::run(&invocation(&bin, &model, long)).unwrap_err();
        assert_eq!(e.to_string(), "llama-bench output has no tg16@d64 test");
        let bin = shim(d.path(), REPLAY);
        let out = llama_bench::run(&invocation(&bin, &model, long)).unwrap();
        assert_eq!((out.prefill.name(), out.decode.name()), ("pp64".to_string(), "tg16@d64".to_string()));
    }
}

/// MNN's llm_bench, built from alibaba/MNN at 4d40bdb (2026-08-20) with
/// `-DMNN_BUILD_LLM=ON -DMNN_AVX512=ON`, Release, on the development host (AMD
/// EPYC, 2 threads), run on an MNN export (`llmexport.py --quant_bit 4
/// --quant_block 32 --sym`) of a random-weight Qwen3 at the mnn-pocket-0.3b
/// shape. Recorded output of `llm_bench -m …/config.json -a cpu -t 2 -pg 64,16
/// -rep 1 -load true -j …`: its default pp512 and tg128 tests ran too.
const MNN_DEFAULTS: &str = include_str!("fixtures/mnn-llm-bench/pocket-t2-defaults-and-pg64-16.json");
/// The command line the probe runs (`-p 0 -n 0 -pg 64,16 -rep 1`), three times.
const MNN_REPS: [&str; 3] = [
    include_str!("fixtures/mnn-llm-bench/pocket-t2-pg64-16-rep0.json"),
    include_str!("fixtures/mnn-llm-bench/pocket-t2-pg64-16-rep1.json"),
    include_str!("fixtures/mnn-llm-bench/pocket-t2-pg64-16-rep2.json"),
];
/// The export's own `config.json` and `llm_config.json`.
const MNN_CONFIG: &str = include_str!("fixtures/mnn-llm-bench/config.json");
const MNN_LLM_CONFIG: &str = include_str!("fixtures/mnn-llm-bench/llm_config.json");

#[cfg(unix)]
mod mnn {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use pocketbench::arch::preset;
    use pocketbench::external::mnn_llm_bench::{self, Invocation, Kind, ModelError, ModelInfo, RunError};
    use pocketbench::probe::EngineKind;

    use super::{MNN_CONFIG, MNN_DEFAULTS, MNN_LLM_CONFIG, MNN_REPS};

    #[test]
    fn llm_bench_json_parses_every_kind_of_test() {
        let r = mnn_llm_bench::parse(MNN_DEFAULTS).unwrap();
        assert_eq!((r.backend.as_str(), r.threads, r.precision, r.memory), ("CPU", 2, 2, 2));
        let names: Vec<String> = r.results.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["pp512", "tg128", "pp64+tg16"]);
        let kinds: Vec<Kind> = r.results.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, [Kind::Prefill, Kind::Decode, Kind::PrefillAndDecode]);
        assert!(r.results[0].tps.unwrap() > 100.0 && r.results[0].speeds().is_none());
        let (pp, tg) = r.results[2].speeds().unwrap();
        assert!(pp > tg && tg > 100.0, "{pp} {tg}");
        assert!(r.results.iter().all(|t| t.loading_time.unwrap() > 0.0));
        assert!(mnn_llm_bench::parse("[{\"avg_ts\": 1}]").is_err());
    }

    /// An export directory: the recorded configs and stand-in model files.
    fn export(dir: &Path) -> PathBuf {
        std::fs::write(dir.join("config.json"), MNN_CONFIG).unwrap();
        std::fs::write(dir.join("llm_config.json"), MNN_LLM_CONFIG).unwrap();
        std::fs::write(dir.join("llm.mnn"), [0u8; 100]).unwrap();
        std::fs::write(dir.join("llm.mnn.weight"), [0u8; 1000]).unwrap();
        dir.join("config.json")
    }

    #[test]
    fn an_export_is_checked_against_the_configuration() {
        let d = tempfile::tempdir().unwrap();
        let config = export(d.path());
        let pocket = preset("mnn-pocket-0.3b").unwrap().shape;
        let info = ModelInfo::check(&config, &pocket).unwrap();
        assert_eq!((info.model_type.as_str(), info.hidden, info.layers, info.file_bytes), ("qwen3", 896, 28, 1100));
        let e = ModelInfo::check(&config, &crate::common::tiny()).unwrap_err();
        assert!(matches!(e, ModelError::Mismatch { .. }), "{e}");
        assert!(e.to_string().ends_with("has hidden size 896, but the configuration has 128"), "{e}");
        let mut deeper = pocket;
        deeper.layers = 36;
        assert!(ModelInfo::check(&config, &deeper).unwrap_err().to_string().contains("layers 28"));
        std::fs::remove_file(d.path().join("llm.mnn.weight")).unwrap();
        let e = ModelInfo::check(&config, &pocket).unwrap_err();
        assert!(e.to_string().contains("llm.mnn.weight"), "{e}");
        std::fs::write(d.path().join("llm_config.json"), "{\"hidden_size\": 896}").unwrap();
        let e = ModelInfo::check(&config, &pocket).unwrap_err();
        assert!(e.to_string().contains("llm_config.json") && e.to_string().contains("layer_nums"), "{e}");
    }

    /// A stand-in llm_bench: logs its arguments, then runs `body` with `$j`
    /// the `-j` path and `$n` the call's number (1, 2, …); `rep0.json`… beside
    /// it hold the recorded outputs.
    fn shim(dir: &Path, body: &str) -> PathBuf {
        for (i, r) in MNN_REPS.iter().enumerate() {
            std::fs::write(dir.join(format!("rep{i}.json")), r).unwrap();
        }
        std::fs::write(dir.join("defaults.json"), super::MNN_DEFAULTS).unwrap();
        let p = dir.join("llm_bench");
        let d = dir.display();
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"$*\" >> {d}/args.log\nn=$(wc -l < {d}/args.log)\nj=; prev=\n\
                 for a in \"$@\"; do [ \"$prev\" = -j ] && j=$a; prev=$a; done\ncd {d}\n{body}\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    const REPLAY: &str = r#"cp "rep$(((n - 1) % 3)).json" "$j"; echo '| model | test |'"#;

    #[test]
    fn the_probe_runs_llm_bench_once_per_repetition() {
        let d = tempfile::tempdir().unwrap();
        let bin = shim(d.path(), REPLAY);
        std::fs::create_dir(d.path().join("export")).unwrap();
        let config = export(&d.path().join("export"));
        let pocket = preset("mnn-pocket-0.3b").unwrap().shape;
        let tool = ("POCKETBENCH_MNN_LLM_BENCH", bin.as_path());
        let p = crate::measure_64_16(EngineKind::MnnLlmBench, pocket, Some(config.clone()), d.path(), tool);
        assert_eq!(p.engine, "mnn-llm-bench");
        assert!(p.engine_version.contains("backend CPU, precision 2, memory 2"), "{}", p.engine_version);
        let tg: Vec<f64> = p.reps.iter().map(|x| x.decode_tok_s).collect();
        assert_eq!(tg, [169.47895812810493, 169.8333510243074, 166.6979225271405]);
        assert!((p.reps[0].prefill_s - 64.0 / 753.5883758993018).abs() < 1e-12);
        assert!((p.reps[2].decode_s - 16.0 / 166.6979225271405).abs() < 1e-12);
        assert_eq!(p.reps[0].load_s, Some(0.265253));
        assert_eq!((p.threads, p.model_file_bytes), (2, 1100));
        assert!(p.methods["decode_s"].contains("-pg 64,16"));
        assert!(p.energy_not_measured.is_some());
        let log = std::fs::read_to_string(d.path().join("args.log")).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 3);
        for (i, l) in lines.iter().enumerate() {
            let expected = format!("-m {} -a cpu -t 2 -p 0 -n 0 -pg 64,16 -rep 1 -load true -j ", config.display());
            assert!(l.starts_with(&expected) && l.ends_with(&format!("llm_bench-{i}.json")), "{l}");
        }
    }

    #[test]
    fn llm_bench_failures_say_what_happened() {
        let d = tempfile::tempdir().unwrap();
        let config = d.path().join("config.json");
        let run = |bin: &Path, timeout, gen| {
            let inv =
                Invocation { bin, config: &config, prompt: 64, gen, threads: 2, reps: 2, timeout, out_dir: d.path() };
            mnn_llm_bench::run(&inv)
        };
        let inv = |bin: &Path, timeout| run(bin, timeout, 16);
        let long = Duration::from_secs(30);
        let bin = shim(d.path(), "echo 'Invalid model config path' >&2; exit 255");
        let e = inv(&bin, long).unwrap_err();
        assert!(matches!(e, RunError::Failed { .. }) && e.to_string().contains("Invalid model config path"), "{e}");
        let bin = shim(d.path(), "sleep 10");
        assert!(matches!(inv(&bin, Duration::from_millis(300)), Err(RunError::Timeout { .. })));
        let bin = shim(d.path(), "echo '| model | test |'");
        let e = inv(&bin, long).unwrap_err();
        assert!(e.to_string().contains("no -j output") && e.to_string().contains("| model | test |"), "{e}");
        let bin = shim(d.path(), r#"echo '{"results": 1}' > "$j""#);
        assert!(inv(&bin, long).unwrap_err().to_string().contains("not llm_bench JSON output"));
        // The recorded defaults run has pp512, tg128 and pp64+tg16, not pp64+tg32.
        let bin = shim(d.path(), r#"cp defaults.json "$j""#);
        assert_eq!(run(&bin, long, 32).unwrap_err().to_string(), "llm_bench output has no pp64+tg32 test");
        let bin = shim(d.path(), REPLAY);
        let out = inv(&bin, long).unwrap();
        assert_eq!(out.tests.len(), 2);
        assert_eq!(out.report.model, "mnn-pocket");
    }
}
