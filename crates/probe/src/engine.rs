//! The reference engine: candle-transformers' quantized Qwen3 or Llama
//! (by the file's `general.architecture`) on the CPU, loading the GGUF that
//! [`super::gguf`] wrote (cargo feature `candle-transformers`, on by default;
//! the static phone build leaves it out). Also the engine error type.

#[cfg(feature = "candle-transformers")]
use std::fs::File;
#[cfg(feature = "candle-transformers")]
use std::path::Path;

#[cfg(feature = "candle-transformers")]
use candle_core::quantized::gguf_file;
#[cfg(feature = "candle-transformers")]
use candle_core::{Device, Tensor};
#[cfg(feature = "candle-transformers")]
use candle_transformers::models::{quantized_llama, quantized_qwen3};

#[cfg(feature = "candle-transformers")]
/// A loaded model ready to run.
pub enum CandleModel {
    /// `qwen3` files.
    Qwen3(quantized_qwen3::ModelWeights),
    /// `llama` files.
    Llama(quantized_llama::ModelWeights),
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

#[cfg(feature = "candle-transformers")]
impl CandleModel {
    /// Load a GGUF file.
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let mut f = File::open(path).map_err(|e| EngineError(format!("{}: {e}", path.display())))?;
        let content = gguf_file::Content::read(&mut f)?;
        let arch = content.metadata.get("general.architecture").and_then(|v| v.to_string().ok()).cloned();
        match arch.as_deref() {
            Some("qwen3") => {
                Ok(CandleModel::Qwen3(quantized_qwen3::ModelWeights::from_gguf(content, &mut f, &Device::Cpu)?))
            }
            Some("llama") => {
                Ok(CandleModel::Llama(quantized_llama::ModelWeights::from_gguf(content, &mut f, &Device::Cpu)?))
            }
            other => Err(EngineError(format!(
                "{}: architecture {other:?}; candle-transformers runs qwen3 and llama here",
                path.display()
            ))),
        }
    }
}

#[cfg(feature = "candle-transformers")]
impl CandleModel {
    /// The last token's logits after running `tokens` at `offset`.
    pub fn logits(&mut self, tokens: &[u32], offset: usize) -> Result<Tensor, EngineError> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = match self {
            CandleModel::Qwen3(m) => m.forward(&input, offset)?,
            CandleModel::Llama(m) => m.forward(&input, offset)?,
        };
        Ok(logits.squeeze(0)?)
    }
}

#[cfg(feature = "candle-transformers")]
impl super::Engine for CandleModel {
    fn reset(&mut self) -> Result<(), EngineError> {
        match self {
            CandleModel::Qwen3(m) => m.clear_kv_cache(),
            CandleModel::Llama(m) => m.clear_kv_cache(),
        }
        Ok(())
    }

    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, EngineError> {
        let logits = self.logits(tokens, offset)?;
        Ok(logits.argmax(0)?.to_scalar::<u32>()?)
    }
}
