//! The engines a probe can measure through, and the trait it drives them by.

use serde::{Deserialize, Serialize};

use super::engine;

/// An inference engine as the probe drives it: greedy steps over a KV cache.
pub trait Engine {
    /// Forget the KV cache (a new conversation).
    fn reset(&mut self) -> Result<(), engine::EngineError>;
    /// Run `tokens` at position `offset`; return the greedy next token.
    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, engine::EngineError>;
    /// The memory a decode step streams, as the engine holds it: every
    /// weight matrix, for the same-moment bandwidth passes of
    /// [`crate::drift`]. Empty where the engine keeps its weights out of
    /// reach (candle-transformers' tensors, llama.cpp's buffers): those
    /// repetitions carry no drift reading, and say so.
    fn weights(&self) -> Vec<&[u64]> {
        Vec::new()
    }
}

/// Which engine the probe measures through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineKind {
    /// The built-in pure-Rust engine (always built): pocketbench's Qwen3
    /// and Llama decoder with run-time-dispatched kernels for every storage
    /// type it accepts ([`EngineKind::runs`]); a file of another type is
    /// refused, never run on a slower engine. Named `candle` before it
    /// outgrew candle (which now only parses the file's header): results,
    /// stores and profiles that say `candle` read as this engine.
    #[default]
    #[serde(rename = "native", alias = "candle")]
    Native,
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
    /// MNN's `llm_bench` run as a command, its `-j` JSON parsed
    /// (`$POCKETBENCH_MNN_LLM_BENCH` or `llm_bench` on `PATH`). It reads an
    /// MNN export of the configuration, not pocketbench's GGUF.
    #[serde(rename = "mnn-llm-bench")]
    MnnLlmBench,
}

/// The largest micro-batch the llama.cpp probe asks for (`n_ubatch`): a
/// longer prompt runs in chunks of it.
pub const LLAMA_UBATCH: u32 = 512;

impl EngineKind {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Native => "native",
            EngineKind::CandleTransformers => "candle-transformers",
            EngineKind::LlamaCpp => "llama.cpp",
            EngineKind::LlamaBench => "llama-bench",
            EngineKind::MnnLlmBench => "mnn-llm-bench",
        }
    }

    /// The engine class: the inference code whose speed a calibration
    /// describes, whichever way it was driven. llama.cpp through the crate
    /// and through `llama-bench` are one class (`llama.cpp`); MNN's
    /// `llm_bench` is `mnn`; the native engine and candle-transformers are
    /// each their own. A measurement imported from a tool's output belongs
    /// only to a device of its class.
    pub fn class(self) -> &'static str {
        match self {
            EngineKind::Native => "native",
            EngineKind::CandleTransformers => "candle-transformers",
            EngineKind::LlamaCpp | EngineKind::LlamaBench => "llama.cpp",
            EngineKind::MnnLlmBench => "mnn",
        }
    }

    /// Whether the engine runs inside the probe's process (every step timed
    /// there), not as an external tool that reports its own figures.
    pub fn in_process(self) -> bool {
        !matches!(self, EngineKind::LlamaBench | EngineKind::MnnLlmBench)
    }

    /// The prompt chunk the engine runs prefill in, where pocketbench sets
    /// it: the native engine's [`crate::native::CHUNK`], and llama.cpp's
    /// micro-batch ([`LLAMA_UBATCH`]). `None` where the engine
    /// decides (candle-transformers takes the whole prompt; the external
    /// benches their own settings).
    pub fn prefill_chunk(self) -> Option<u32> {
        match self {
            EngineKind::Native => Some(crate::native::CHUNK as u32),
            EngineKind::LlamaCpp => Some(LLAMA_UBATCH),
            _ => None,
        }
    }

    /// Whether the engine holds only one query group's f32 attention score
    /// rows per thread during prefill (the native engine), rather than a
    /// chunk's whole score matrix.
    pub fn scores_per_thread(self) -> bool {
        matches!(self, EngineKind::Native)
    }

    /// Name and version as built into this binary.
    pub fn version(self) -> String {
        match self {
            // Every start-up choice that changes the numbers (not only the
            // speed) is named: two processes that chose differently are two
            // builds, whose tokens may differ (the attention's width changes
            // the order of its sums, and a near-tie of random weights then
            // falls the other way).
            EngineKind::Native => format!(
                "pocketbench native Qwen3/Llama, {} kernels (4-bit: {}, prefill tiles: {}{}), candle-core {} GGUF reader",
                crate::kernels::isa().name(),
                crate::kernels::x8_variant().name(),
                crate::kernels::x8_choice().tile.name(),
                if crate::kernels::x8_choice().attention_512 { ", 512-bit attention" } else { "" },
                env!("PB_CANDLE_VERSION")
            ),
            EngineKind::CandleTransformers => {
                format!("candle-transformers {} quantized_qwen3/quantized_llama", env!("PB_CANDLE_VERSION"))
            }
            EngineKind::LlamaCpp => {
                format!("llama-cpp-2 {} (llama.cpp vendored by llama-cpp-sys-2)", env!("PB_LLAMA_VERSION"))
            }
            EngineKind::LlamaBench => "llama-bench (external; its build is recorded with each result)".into(),
            EngineKind::MnnLlmBench => "MNN llm_bench (external; its settings are recorded with each result)".into(),
        }
    }

    /// The build whose speed a calibration describes: for the native engine
    /// the digest of its source and the opt-level, for the others their
    /// version. A host calibration measured through another build is stale.
    pub fn build(self) -> String {
        self.build_of(&super::BuildInfo::current())
    }

    /// [`EngineKind::build`] of the binary described by `b` (a probe's).
    pub fn build_of(self, b: &super::BuildInfo) -> String {
        match self {
            EngineKind::Native => {
                format!("pocketbench native engine source {}, opt-level {}", b.engine_source, b.opt_level)
            }
            EngineKind::CandleTransformers => format!("candle-transformers {}", env!("PB_CANDLE_VERSION")),
            EngineKind::LlamaCpp => format!("llama-cpp-2 {}", env!("PB_LLAMA_VERSION")),
            EngineKind::LlamaBench | EngineKind::MnnLlmBench => self.version(),
        }
    }

    /// Whether this binary can run it.
    pub fn available(self) -> bool {
        match self {
            EngineKind::Native => true,
            EngineKind::CandleTransformers => cfg!(feature = "candle-transformers"),
            EngineKind::LlamaCpp => cfg!(feature = "llama"),
            EngineKind::LlamaBench => crate::external::llama_bench::locate().is_some(),
            EngineKind::MnnLlmBench => crate::external::mnn_llm_bench::locate().is_some(),
        }
    }

    /// Why this binary cannot run it, and what to do (for an unavailable engine).
    pub fn unavailable_because(self) -> String {
        match self {
            EngineKind::LlamaBench => {
                "llama-bench not found: set POCKETBENCH_LLAMA_BENCH to its path or put it on PATH".into()
            }
            EngineKind::MnnLlmBench => {
                "MNN's llm_bench not found: set POCKETBENCH_MNN_LLM_BENCH to its path or put it on PATH".into()
            }
            EngineKind::CandleTransformers => "this probe was built without the candle-transformers engine \
                (the static phone build leaves it out): rebuild with the default features"
                .into(),
            e => format!(
                "this pocketbench was built without the {} engine: rebuild with `cargo build --release --features llama` (needs cmake and libclang)",
                e.name()
            ),
        }
    }

    /// Whether it measures `shape` at its full speed, or why not. The native
    /// engine refuses a storage type it has no kernels for rather than run it
    /// on candle-transformers at a tenth of the speed under its own name.
    pub fn runs(self, shape: &pocketbench_types::arch::Shape) -> Result<(), Unrunnable> {
        if self != EngineKind::Native {
            return Ok(());
        }
        let st = super::gguf::Storage::of(shape.quant).map_err(|e| Unrunnable(e.to_string()))?;
        match super::native::weight_type(st.dtype) {
            Some(_) => Ok(()),
            None => Err(Unrunnable(format!(
                "the native engine has no {} kernels (it runs {}, and the int4/int8 group forms stored as them); \
                 measure {} with --engine llama-bench or --engine llama.cpp, or predict it only",
                shape.quant,
                super::native::NATIVE_TYPES,
                shape.quant
            ))),
        }
    }

    /// Whether it runs as a separate command whose output is parsed (its
    /// peak memory is then the whole process's VmHWM).
    pub fn is_external(self) -> bool {
        matches!(self, EngineKind::LlamaBench | EngineKind::MnnLlmBench)
    }

    /// Whether it reads a model of its own format (`--engine-model`) instead
    /// of the GGUF pocketbench builds.
    pub fn needs_engine_model(self) -> bool {
        self == EngineKind::MnnLlmBench
    }
}

impl EngineKind {
    /// The engine a result's `engine` names, by its current name or an old
    /// one (`candle`), for matching results across versions; `None` for a
    /// name no engine has.
    pub fn of_result(name: &str) -> Option<EngineKind> {
        name.parse().ok()
    }

    /// Whether `name` is an engine's deprecated name (`candle`, now `native`).
    pub fn is_deprecated_name(name: &str) -> bool {
        name == "candle"
    }
}

/// Why an engine cannot measure a shape at its full speed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unrunnable(pub String);

/// A name no engine has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine `{0}` (native, candle-transformers, llama.cpp, llama-bench, mnn-llm-bench)")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for EngineKind {
    type Err = UnknownEngine;
    fn from_str(s: &str) -> Result<Self, UnknownEngine> {
        match s {
            "native" | "candle" => Ok(EngineKind::Native),
            "candle-transformers" => Ok(EngineKind::CandleTransformers),
            "llama.cpp" | "llama" | "llamacpp" => Ok(EngineKind::LlamaCpp),
            "llama-bench" => Ok(EngineKind::LlamaBench),
            "mnn-llm-bench" => Ok(EngineKind::MnnLlmBench),
            other => Err(UnknownEngine(other.to_string())),
        }
    }
}
