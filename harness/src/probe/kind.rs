//! The engines a probe can measure through, and the trait it drives them by.

use serde::{Deserialize, Serialize};

use super::engine;

/// An inference engine as the probe drives it: greedy steps over a KV cache.
pub trait Engine {
    /// Forget the KV cache (a new conversation).
    fn reset(&mut self) -> Result<(), engine::EngineError>;
    /// Run `tokens` at position `offset`; return the greedy next token.
    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, engine::EngineError>;
}

/// Which engine the probe measures through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineKind {
    /// The built-in pure-Rust engine (always built): pocketbench's Qwen3
    /// decoder on candle-core's GGUF reader with run-time-dispatched 4/8-bit
    /// kernels; files with other tensor types run on candle-transformers.
    #[default]
    #[serde(rename = "candle")]
    Candle,
    /// candle-transformers' stock quantized Qwen3 (always built): the
    /// reference the built-in engine is checked and compared against.
    #[serde(rename = "candle-transformers")]
    CandleTransformers,
    /// llama.cpp through the `llama-cpp-2` crate (cargo feature `llama`).
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    /// llama.cpp's own `llama-bench` run as a command, its JSON parsed
    /// (`$POCKETBENCH_LLAMA_BENCH` or `llama-bench` on `PATH`).
    #[serde(rename = "llama-bench")]
    LlamaBench,
}

impl EngineKind {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Candle => "candle",
            EngineKind::CandleTransformers => "candle-transformers",
            EngineKind::LlamaCpp => "llama.cpp",
            EngineKind::LlamaBench => "llama-bench",
        }
    }

    /// Name and version as built into this binary.
    pub fn version(self) -> String {
        match self {
            EngineKind::Candle => format!(
                "pocketbench native Qwen3, {} kernels, candle-core {} GGUF reader",
                crate::kernels::isa().name(),
                env!("PB_CANDLE_VERSION")
            ),
            EngineKind::CandleTransformers => {
                format!("candle-transformers {} quantized_qwen3", env!("PB_CANDLE_VERSION"))
            }
            EngineKind::LlamaCpp => {
                format!("llama-cpp-2 {} (llama.cpp vendored by llama-cpp-sys-2)", env!("PB_LLAMA_VERSION"))
            }
            EngineKind::LlamaBench => "llama-bench (external; its build is recorded with each result)".into(),
        }
    }

    /// Whether this binary can run it.
    pub fn available(self) -> bool {
        match self {
            EngineKind::Candle | EngineKind::CandleTransformers => true,
            EngineKind::LlamaCpp => cfg!(feature = "llama"),
            EngineKind::LlamaBench => crate::external::llama_bench::locate().is_some(),
        }
    }
}

impl std::str::FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "candle" => Ok(EngineKind::Candle),
            "candle-transformers" => Ok(EngineKind::CandleTransformers),
            "llama.cpp" | "llama" | "llamacpp" => Ok(EngineKind::LlamaCpp),
            "llama-bench" => Ok(EngineKind::LlamaBench),
            other => Err(format!("unknown engine `{other}` (candle, candle-transformers, llama.cpp, llama-bench)")),
        }
    }
}
