//! Parsers of other engines' output, on output recorded from real runs.

use pocketbench::arch::preset;
use pocketbench::external::llama_bench;

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
