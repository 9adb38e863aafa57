//! Named architecture presets, copied from each model's `config.json` as
//! listed in `shared/reference/presets.md`.

use super::{Quant, Shape};

/// A named, sourced shape.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Name used on the command line.
    pub name: &'static str,
    /// The shape (quantization q4_0 unless stated; context 4096).
    pub shape: Shape,
    /// Where the numbers come from.
    pub source: &'static str,
}

/// A tied q4_0 shape at the default context: the presets' form, and the
/// calibration design's.
#[allow(clippy::too_many_arguments)]
pub const fn s(
    hidden: u32,
    layers: u32,
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    vocab: u32,
    qk_norm: bool,
) -> Shape {
    Shape {
        hidden,
        layers,
        heads,
        kv_heads,
        head_dim,
        ffn,
        vocab,
        tied: true,
        qk_norm,
        quant: Quant::Q4_0,
        context: super::DEFAULT_CONTEXT,
    }
}

/// Every preset of `presets.md`, in its order.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "qwen3-0.6b",
        shape: s(1024, 28, 16, 8, 128, 3072, 151_936, true),
        source: "Qwen/Qwen3-0.6B config.json",
    },
    Preset {
        name: "qwen3-1.7b",
        shape: s(2048, 28, 16, 8, 128, 6144, 151_936, true),
        source: "Qwen/Qwen3-1.7B config.json",
    },
    Preset {
        name: "llama-3.2-1b",
        shape: s(2048, 16, 32, 8, 64, 8192, 128_256, false),
        source: "meta-llama/Llama-3.2-1B config.json",
    },
    Preset {
        name: "smollm2-135m",
        shape: s(576, 30, 9, 3, 64, 1536, 49_152, false),
        source: "HuggingFaceTB/SmolLM2-135M config.json",
    },
    Preset {
        name: "smollm2-360m",
        shape: s(960, 32, 15, 5, 64, 2560, 49_152, false),
        source: "HuggingFaceTB/SmolLM2-360M config.json",
    },
    Preset {
        name: "mobilellm-125m",
        shape: s(576, 30, 9, 3, 64, 1536, 32_000, false),
        source: "facebookresearch/MobileLLM configs/125M (shared embedding per the paper)",
    },
    Preset {
        name: "mobilellm-350m",
        shape: s(960, 32, 15, 5, 64, 2560, 32_000, false),
        source: "facebookresearch/MobileLLM configs/350M (shared embedding per the paper)",
    },
    Preset {
        name: "mnn-pocket-0.3b",
        shape: s(896, 28, 14, 2, 64, 2560, 65_536, true),
        source: "MNN-Pocket-0.3B GGUF metadata",
    },
];

/// Look a preset up by name.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}
