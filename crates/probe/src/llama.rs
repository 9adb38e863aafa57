//! The `llama.cpp` engine (cargo feature `llama`): llama.cpp's own C++ through
//! the `llama-cpp-2` crate, loading the same GGUF the candle engine runs, so
//! a team measures what it will ship.

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::engine::EngineError;
use super::{Engine, ProbeSpec};

fn err(e: impl std::fmt::Display) -> EngineError {
    EngineError(format!("llama.cpp: {e}"))
}

struct Llama<'a> {
    ctx: LlamaContext<'a>,
    batch: LlamaBatch<'a>,
}

impl Engine for Llama<'_> {
    fn reset(&mut self) -> Result<(), EngineError> {
        self.ctx.clear_kv_cache();
        Ok(())
    }

    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, EngineError> {
        self.batch.clear();
        let last = tokens.len().saturating_sub(1);
        for (i, t) in tokens.iter().enumerate() {
            let pos = i32::try_from(offset + i).map_err(err)?;
            self.batch.add(LlamaToken(*t as i32), pos, &[0], i == last).map_err(err)?;
        }
        self.ctx.decode(&mut self.batch).map_err(err)?;
        let logits = self.ctx.get_logits_ith(self.batch.n_tokens() - 1);
        Ok(crate::kernels::argmax(logits) as u32)
    }
}

/// Load the model, build a context for the workload, and hand the engine,
/// the first load time and a timed-reload function to `f`.
pub fn with_engine<R>(
    spec: &ProbeSpec,
    f: impl FnOnce(&mut dyn Engine, f64, &mut dyn FnMut() -> Result<f64, EngineError>) -> R,
) -> Result<R, EngineError> {
    let mut backend = LlamaBackend::init().map_err(err)?;
    backend.void_logs();
    let params = LlamaModelParams::default();
    let t = Instant::now();
    let model = LlamaModel::load_from_file(&backend, &spec.model, &params).map_err(err)?;
    let w = spec.workload;
    let threads = i32::try_from(spec.threads).map_err(err)?;
    let cparams = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(w.context))
        .with_n_batch(w.prompt.max(1))
        .with_n_ubatch(w.prompt.clamp(1, crate::kind::LLAMA_UBATCH))
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let ctx = model.new_context(&backend, cparams).map_err(err)?;
    let first = t.elapsed().as_secs_f64();
    let mut engine = Llama { ctx, batch: LlamaBatch::new(w.prompt.max(1) as usize, 1) };
    let mut reload = || {
        let t = Instant::now();
        drop(LlamaModel::load_from_file(&backend, &spec.model, &params).map_err(err)?);
        Ok(t.elapsed().as_secs_f64())
    };
    Ok(f(&mut engine, first, &mut reload))
}
