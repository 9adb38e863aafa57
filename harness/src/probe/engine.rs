//! The built-in `candle` engine: candle-transformers' quantized Qwen3 on the
//! CPU, loading the GGUF that [`super::gguf`] wrote. Also the engine error type.

use std::fs::File;
use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen3::ModelWeights;

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
}

impl super::Engine for CandleModel {
    fn reset(&mut self) -> Result<(), EngineError> {
        self.model.clear_kv_cache();
        Ok(())
    }

    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, EngineError> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = self.model.forward(&input, offset)?;
        Ok(logits.squeeze(0)?.argmax(0)?.to_scalar::<u32>()?)
    }
}
