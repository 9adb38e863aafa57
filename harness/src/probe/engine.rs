//! The built-in `candle` engine: candle-transformers' quantized Qwen3 on the
//! CPU, loading the GGUF that [`super::gguf`] wrote.

use std::fs::File;
use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen3::ModelWeights;

/// Engine name recorded in results.
pub const NAME: &str = "candle";
/// candle-core version this binary was built with (read from Cargo.lock by build.rs).
pub const CANDLE_VERSION: &str = env!("PB_CANDLE_VERSION");

/// A loaded model ready to run.
pub struct CandleModel {
    model: ModelWeights,
}

/// Engine failure.
#[derive(Debug, thiserror::Error)]
#[error("candle engine: {0}")]
pub struct EngineError(pub String);

impl From<candle_core::Error> for EngineError {
    fn from(e: candle_core::Error) -> Self {
        EngineError(e.to_string())
    }
}

impl CandleModel {
    /// Load a GGUF file.
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let mut f = File::open(path).map_err(|e| EngineError(format!("{}: {e}", path.display())))?;
        let content = gguf_file::Content::read(&mut f)?;
        let model = ModelWeights::from_gguf(content, &mut f, &Device::Cpu)?;
        Ok(CandleModel { model })
    }

    /// Forget the KV cache (a new conversation).
    pub fn reset(&mut self) {
        self.model.clear_kv_cache();
    }

    /// Run `tokens` at position `offset` and return the greedy next token.
    pub fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, EngineError> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = self.model.forward(&input, offset)?;
        Ok(logits.squeeze(0)?.argmax(0)?.to_scalar::<u32>()?)
    }

    /// Logits of the last position, for checks.
    pub fn logits(&mut self, tokens: &[u32], offset: usize) -> Result<Vec<f32>, EngineError> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        Ok(self.model.forward(&input, offset)?.squeeze(0)?.to_vec1::<f32>()?)
    }
}
