//! Writing a configuration as a GGUF file with seeded random weights, tensor
//! by tensor, so that building a 1.3B model never holds more than one chunk
//! of f32 weights in memory.
//!
//! Layout per the GGUF specification (ggml `docs/gguf.md`, version 3): magic
//! `GGUF`, version, tensor count, metadata count, metadata key/values, tensor
//! infos (name, dims innermost first, ggml type, offset), padding to
//! `general.alignment` (32), then each tensor's bytes, each padded to 32.
//! Metadata follows llama.cpp's architecture keys: `qwen3` for a shape with
//! QK-norm (Qwen3), `llama` for one without (SmolLM2, MobileLLM, Llama 3.2),
//! with a minimal
//! byte-level BPE tokenizer (the 256 GPT-2 byte tokens, filler tokens and an
//! end-of-text token) so llama.cpp and MNN's converters accept the file.
//!
//! Three parts: [`layout`] (how a shape's tensors are stored: types, groups,
//! sizes), [`weights`] (their seeded values, quantized chunk by chunk),
//! [`write`] (the file: header, metadata, tensor data) and [`read`] (a
//! file's header and tensor bytes, for the native engine).

mod layout;
mod read;
mod weights;
mod write;

pub use layout::{ggml_dtype, tensor_bytes, tensor_plan, type_name, Storage, TensorPlan};
pub use read::{GgufFile, TensorInfo};
pub use weights::{f32_values, generate, generate_chunked, quantize_grouped};
pub use write::{architecture, metadata, write_model, write_model_with_std, Meta, SHAPE_KEY};

use std::path::PathBuf;

/// Standard deviation of the random matrices (the usual transformer init).
pub const INIT_STD: f32 = 0.02;
/// RMSNorm epsilon written into the file.
pub const RMS_EPS: f32 = 1e-6;
/// RoPE base (Qwen3).
pub const ROPE_THETA: f32 = 1_000_000.0;
/// Alignment of the tensor data and of each tensor (`general.alignment`).
const ALIGN: u64 = 32;

/// Building a model file failed.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    /// The shape cannot be stored in the format.
    #[error("{0}")]
    Unsupported(String),
    /// candle refused a tensor.
    #[error("quantizing {tensor}: {source}")]
    Candle {
        /// Tensor name.
        tensor: String,
        /// The error.
        source: candle_core::Error,
    },
    /// The file is not a GGUF this probe reads (a bad header, a missing
    /// tensor or metadata key).
    #[error("{}: {message}", path.display())]
    Read {
        /// File.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}
