//! One decode step per preset and engine (candle, candle-transformers, and
//! llama.cpp with `--features llama`), at a context of 128-192 tokens
//! (prefilled outside the timed region); and the probe's own overhead. Builds the model files into the
//! cache first (`~/.cache/pocketbench`, or `$POCKETBENCH_CACHE`).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pocketbench_probe::engine::{CandleModel, EngineError};
use pocketbench_probe::kernels::argmax;
use pocketbench_probe::native::NativeModel;
use pocketbench_probe::{cache_dir, decode_loop, model_file, Engine};
use pocketbench_types::arch::preset;

const CONTEXT: usize = 128;
const WINDOW: usize = 64;

fn prompt() -> Vec<u32> {
    (0..CONTEXT as u32).map(|i| (i * 7919) % 30_000).collect()
}

fn step(c: &mut Criterion, name: &str, engine: &str, m: &mut dyn Engine) {
    let tokens = prompt();
    let mut g = c.benchmark_group("decode-step");
    g.throughput(Throughput::Elements(1));
    g.sample_size(20);
    g.bench_function(format!("{name} {engine} at context {CONTEXT}"), |b| {
        // Only decode steps are timed. The context cycles through
        // CONTEXT..CONTEXT+WINDOW: every WINDOW steps the cache is reset and
        // the prompt prefilled again, outside the timed region.
        let (mut pos, mut next) = (usize::MAX, 0u32);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if pos >= CONTEXT + WINDOW {
                    m.reset().expect("reset");
                    next = m.step(&tokens, 0).expect("prefill");
                    pos = CONTEXT;
                }
                let t = Instant::now();
                next = black_box(m.step(&[next], pos).expect("decode step"));
                total += t.elapsed();
                pos += 1;
            }
            total
        })
    });
    g.finish();
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn bench(c: &mut Criterion) {
    for name in ["mnn-pocket-0.3b", "qwen3-0.6b"] {
        let shape = preset(name).expect("preset").shape;
        let path = model_file(&shape, &cache_dir()).expect("model file");
        let mut m = NativeModel::load(&path, threads(), CONTEXT + WINDOW).expect("native load");
        step(c, name, "candle", &mut m);
        drop(m);
        let mut m = CandleModel::load(&path).expect("candle-transformers load");
        step(c, name, "candle-transformers", &mut m);
        drop(m);
        #[cfg(feature = "llama")]
        {
            let spec = pocketbench_probe::ProbeSpec {
                schema: pocketbench_probe::SCHEMA,
                shape,
                model: path.clone(),
                workload: pocketbench_types::workload::Workload::new(CONTEXT as u32, 8, None).expect("workload"),
                reps: 1,
                threads: threads() as u32,
                seed: 0,
                engine: pocketbench_probe::EngineKind::LlamaCpp,
                timeout_s: None,
                cooling: None,
                contention: None,
                auto: None,
                pin: false,
                bandwidth_pass: true,
                timed_reloads: true,
                soak: None,
            };
            pocketbench_probe::llama::with_engine(&spec, |m, _, _| step(c, name, "llama.cpp", m)).expect("llama.cpp");
        }
    }
}

/// An engine that does nothing: what remains is the probe's own loop.
struct Null;

impl Engine for Null {
    fn reset(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    fn step(&mut self, tokens: &[u32], _offset: usize) -> Result<u32, EngineError> {
        Ok(black_box(tokens[0]))
    }
}

/// The probe's timing loop around an engine that does nothing, per token,
/// and the greedy argmax every engine step includes (Qwen3's 151,936
/// logits): divide by a decode step above for the harness's share.
fn overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("harness-overhead");
    g.throughput(Throughput::Elements(1));
    g.bench_function("probe decode loop per token, null engine", |b| {
        b.iter_custom(|iters| {
            let mut next = 0;
            let mut trace = pocketbench_probe::timing::Trace::default();
            trace.steps_us.reserve(iters as usize);
            trace.tokens.reserve(iters as usize);
            Duration::from_secs_f64(
                decode_loop(&mut Null, &mut next, 0, iters as u32, &mut trace).expect("null engine"),
            )
        })
    });
    // The maximum last: the worst case for the search of its position.
    let mut logits: Vec<f32> = (0..151_936u32).map(|i| ((i * 7919) % 1000) as f32).collect();
    logits[151_935] = 1000.0;
    g.bench_function("argmax over 151936 logits", |b| b.iter(|| argmax(black_box(&logits))));
    g.finish();
}

criterion_group!(benches, overhead, bench);
criterion_main!(benches);
