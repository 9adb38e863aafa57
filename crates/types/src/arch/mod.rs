//! Model architecture: the shape of a dense decoder, its validation, and the
//! figures derived from it (parameters, bytes, FLOPs).
//!
//! The accounting follows `shared/reference/presets.md` (Qwen3/Llama-style,
//! SwiGLU, RMSNorm, no linear biases):
//!
//! * per layer = d·h·dh (q) + 2·d·k·dh (k, v) + h·dh·d (o) + 3·d·f (gate, up,
//!   down) + 2·d (two RMSNorms) [+ 2·dh for QK-norm]
//! * non-embedding = L · per_layer + d (final norm)
//! * total = non-embedding + V·d · (1 if tied else 2)

pub mod account;
pub mod presets;
mod quant;

pub use account::{Accounting, KV_BITS_DEFAULT};
pub use presets::{preset, Preset, PRESETS};
pub use quant::{Quant, QuantError};

use std::fmt;

use serde::{Deserialize, Serialize};

/// Default maximum context a configuration is built for.
pub const DEFAULT_CONTEXT: u32 = 4096;

/// The shape of a dense decoder-only transformer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape {
    /// Model (residual) width d.
    pub hidden: u32,
    /// Number of transformer blocks L.
    pub layers: u32,
    /// Query heads h.
    pub heads: u32,
    /// Key/value heads k (grouped-query attention when k < h).
    pub kv_heads: u32,
    /// Width of one head dh.
    pub head_dim: u32,
    /// SwiGLU inner width f.
    pub ffn: u32,
    /// Vocabulary size V.
    pub vocab: u32,
    /// Whether the output projection shares the input embedding.
    pub tied: bool,
    /// Whether each layer normalises q and k per head (Qwen3).
    pub qk_norm: bool,
    /// Weight storage format.
    pub quant: Quant,
    /// Maximum context length the configuration is built for.
    pub context: u32,
}

/// Why a shape cannot be a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// A dimension is zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A dimension is beyond anything this tool models.
    #[error("{name} = {value} is absurd (at most {max})")]
    TooLarge {
        /// Which field.
        name: &'static str,
        /// Its value.
        value: u64,
        /// The bound.
        max: u64,
    },
    /// GQA needs heads to divide evenly into KV groups.
    #[error("heads ({heads}) must be a multiple of kv-heads ({kv_heads}) for grouped-query attention")]
    HeadsNotDivisible {
        /// Query heads.
        heads: u32,
        /// KV heads.
        kv_heads: u32,
    },
    /// RoPE rotates pairs of dimensions.
    #[error("head-dim ({0}) must be even for rotary position embeddings")]
    OddHeadDim(u32),
    /// The attention width is far from the model width.
    #[error("heads x head-dim = {attn} is far from hidden = {hidden} (allowed between hidden/4 and 4 x hidden)")]
    AttentionWidth {
        /// h · dh.
        attn: u64,
        /// d.
        hidden: u32,
    },
}

impl Shape {
    /// Check every invariant; the first violation is returned.
    pub fn validate(&self) -> Result<(), ShapeError> {
        let dims: [(&'static str, u32, u32); 8] = [
            ("hidden", self.hidden, 65_536),
            ("layers", self.layers, 1_024),
            ("heads", self.heads, 1_024),
            ("kv-heads", self.kv_heads, 1_024),
            ("head-dim", self.head_dim, 1_024),
            ("ffn", self.ffn, 262_144),
            ("vocab", self.vocab, 4_000_000),
            ("context", self.context, 4_194_304),
        ];
        for (name, v, max) in dims {
            if v == 0 {
                return Err(ShapeError::Zero(name));
            }
            if v > max {
                return Err(ShapeError::TooLarge { name, value: v as u64, max: max as u64 });
            }
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(ShapeError::HeadsNotDivisible { heads: self.heads, kv_heads: self.kv_heads });
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(ShapeError::OddHeadDim(self.head_dim));
        }
        let attn = self.heads as u64 * self.head_dim as u64;
        let d = self.hidden as u64;
        if attn * 4 < d || attn > 4 * d {
            return Err(ShapeError::AttentionWidth { attn, hidden: self.hidden });
        }
        Ok(())
    }

    /// Parameter and byte accounting for this shape.
    pub fn accounting(&self) -> Accounting {
        Accounting::of(self)
    }

    /// A stable identifier: the top 48 bits of FNV-1a of the canonical name,
    /// 12 hex digits (see [`crate::fnv1a`]).
    pub fn id(&self) -> String {
        format!("{:012x}", crate::fnv1a(self.canonical().as_bytes()) >> 16)
    }

    /// Every field in a fixed order: the input to [`Shape::id`].
    pub fn canonical(&self) -> String {
        format!(
            "d{}-L{}-h{}-k{}-hd{}-f{}-v{}-{}-{}-{}-ctx{}",
            self.hidden,
            self.layers,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.ffn,
            self.vocab,
            if self.tied { "tied" } else { "untied" },
            if self.qk_norm { "qkn" } else { "noqkn" },
            self.quant,
            self.context
        )
    }
}

impl Shape {
    /// The shape [`Shape::canonical`] wrote, or `None` when `text` is not
    /// one (a GGUF that pocketbench exported records it as
    /// `pocketbench.shape`).
    pub fn from_canonical(text: &str) -> Option<Shape> {
        let parts: Vec<&str> = text.trim().split('-').collect();
        let [d, l, h, k, hd, f, v, tied, qkn, quant, ctx] = parts.as_slice() else {
            return None;
        };
        let num = |s: &str, prefix: &str| s.strip_prefix(prefix)?.parse::<u32>().ok();
        Some(Shape {
            hidden: num(d, "d")?,
            layers: num(l, "L")?,
            heads: num(h, "h")?,
            kv_heads: num(k, "k")?,
            head_dim: num(hd, "hd")?,
            ffn: num(f, "f")?,
            vocab: num(v, "v")?,
            tied: match *tied {
                "tied" => true,
                "untied" => false,
                _ => return None,
            },
            qk_norm: match *qkn {
                "qkn" => true,
                "noqkn" => false,
                _ => return None,
            },
            quant: quant.parse().ok()?,
            context: num(ctx, "ctx")?,
        })
    }
}

impl fmt::Display for Shape {
    /// A short human name: `L28-d896-h14/2-f2560-v65536-q4_0`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "L{}-d{}-h{}/{}-f{}-v{}{}-{}",
            self.layers,
            self.hidden,
            self.heads,
            self.kv_heads,
            self.ffn,
            self.vocab,
            if self.tied { "" } else { "-untied" },
            self.quant
        )
    }
}

/// A shape written partially: a preset plus overrides, or every field.
/// Used by TOML calibration points and by the command-line shape flags.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ShapeSpec {
    /// Start from this named preset.
    pub preset: Option<String>,
    /// Override: hidden size.
    pub hidden: Option<u32>,
    /// Override: layers.
    pub layers: Option<u32>,
    /// Override: query heads.
    pub heads: Option<u32>,
    /// Override: KV heads.
    pub kv_heads: Option<u32>,
    /// Override: head dim.
    pub head_dim: Option<u32>,
    /// Override: FFN size.
    pub ffn: Option<u32>,
    /// Override: vocabulary.
    pub vocab: Option<u32>,
    /// Override: tied embeddings.
    pub tied: Option<bool>,
    /// Override: QK-norm.
    pub qk_norm: Option<bool>,
    /// Override: quantization.
    pub quant: Option<Quant>,
    /// Override: context.
    pub context: Option<u32>,
}

/// A [`ShapeSpec`] could not be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// Unknown preset name.
    #[error("unknown preset `{0}` (known: {known})", known = PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))]
    UnknownPreset(String),
    /// Without a preset, these fields are required.
    #[error("without a preset the shape needs {0}")]
    Missing(String),
    /// The resolved shape is impossible.
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

impl std::str::FromStr for ShapeSpec {
    type Err = String;

    /// `KEY=VALUE` pairs separated by commas, the keys of a profile's
    /// `model = {...}` (`preset`, `hidden`, `layers`, `heads`, `kv-heads`,
    /// `head-dim`, `ffn`, `vocab`, `tied`, `qk-norm`, `quant`, `context`):
    /// `preset=qwen3-0.6b,layers=20` or `hidden=256,layers=4,ffn=768,vocab=2048,quant=q8_0`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut spec = ShapeSpec::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| format!("`{pair}` is not KEY=VALUE"))?;
            let (key, value) = (key.trim(), value.trim());
            let num = || value.parse::<u32>().map(Some).map_err(|_| format!("{key}: `{value}` is not a whole number"));
            let flag = || value.parse::<bool>().map(Some).map_err(|_| format!("{key}: `{value}` is not true or false"));
            match key {
                "preset" => spec.preset = Some(value.to_string()),
                "hidden" => spec.hidden = num()?,
                "layers" => spec.layers = num()?,
                "heads" => spec.heads = num()?,
                "kv-heads" => spec.kv_heads = num()?,
                "head-dim" => spec.head_dim = num()?,
                "ffn" => spec.ffn = num()?,
                "vocab" => spec.vocab = num()?,
                "context" => spec.context = num()?,
                "tied" => spec.tied = flag()?,
                "qk-norm" => spec.qk_norm = flag()?,
                "quant" => spec.quant = Some(value.parse().map_err(|e: QuantError| e.to_string())?),
                other => {
                    return Err(format!(
                        "unknown key `{other}`: expected preset, hidden, layers, heads, kv-heads, head-dim, ffn, vocab, tied, qk-norm, quant or context"
                    ))
                }
            }
        }
        Ok(spec)
    }
}

impl ShapeSpec {
    /// Resolve to a validated shape. Without a preset, hidden, layers, ffn and
    /// vocab are required; heads default to hidden/head-dim (head-dim 64),
    /// kv-heads to heads, quantization to q4_0, tied and qk-norm to true.
    pub fn resolve(&self) -> Result<Shape, SpecError> {
        let base = match &self.preset {
            Some(name) => Some(preset(name).ok_or_else(|| SpecError::UnknownPreset(name.clone()))?.shape),
            None => None,
        };
        let shape = match base {
            Some(b) => Shape {
                hidden: self.hidden.unwrap_or(b.hidden),
                layers: self.layers.unwrap_or(b.layers),
                heads: self.heads.unwrap_or(b.heads),
                kv_heads: self.kv_heads.unwrap_or(b.kv_heads),
                head_dim: self.head_dim.unwrap_or(b.head_dim),
                ffn: self.ffn.unwrap_or(b.ffn),
                vocab: self.vocab.unwrap_or(b.vocab),
                tied: self.tied.unwrap_or(b.tied),
                qk_norm: self.qk_norm.unwrap_or(b.qk_norm),
                quant: self.quant.unwrap_or(b.quant),
                context: self.context.unwrap_or(b.context),
            },
            None => {
                let missing: Vec<&str> = [
                    ("--hidden", self.hidden.is_none()),
                    ("--layers", self.layers.is_none()),
                    ("--ffn", self.ffn.is_none()),
                    ("--vocab", self.vocab.is_none()),
                ]
                .iter()
                .filter(|(_, m)| *m)
                .map(|(n, _)| *n)
                .collect();
                if !missing.is_empty() {
                    return Err(SpecError::Missing(missing.join(", ")));
                }
                let hidden = self.hidden.unwrap_or_default();
                let head_dim = self.head_dim.unwrap_or(64);
                let heads = self.heads.unwrap_or(hidden.checked_div(head_dim).unwrap_or(0));
                Shape {
                    hidden,
                    layers: self.layers.unwrap_or_default(),
                    heads,
                    kv_heads: self.kv_heads.unwrap_or(heads),
                    head_dim,
                    ffn: self.ffn.unwrap_or_default(),
                    vocab: self.vocab.unwrap_or_default(),
                    tied: self.tied.unwrap_or(true),
                    qk_norm: self.qk_norm.unwrap_or(true),
                    quant: self.quant.unwrap_or(Quant::Q4_0),
                    context: self.context.unwrap_or(DEFAULT_CONTEXT),
                }
            }
        };
        shape.validate()?;
        Ok(shape)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_canonical_name_reads_back() {
        for p in super::PRESETS {
            let mut s = p.shape;
            for quant in ["q4_0", "int4 group=64 zero", "f16"] {
                s.quant = quant.parse().unwrap();
                s.tied = !s.tied;
                assert_eq!(super::Shape::from_canonical(&s.canonical()), Some(s), "{}", s.canonical());
            }
        }
        let spec: super::ShapeSpec = "preset=qwen3-0.6b, layers=20,quant=q8_0,tied=false".parse().unwrap();
        assert_eq!((spec.layers, spec.tied, spec.preset.as_deref()), (Some(20), Some(false), Some("qwen3-0.6b")));
        for (bad, says) in
            [("layers", "not KEY=VALUE"), ("layers=x", "not a whole number"), ("depth=3", "unknown key `depth`")]
        {
            let e = bad.parse::<super::ShapeSpec>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        for bad in
            ["", "d1-L2", "d1-L2-h2-k1-hd2-f4-v8-tied-qkn-q9_9-ctx16", "x1-L2-h2-k1-hd2-f4-v8-tied-qkn-q4_0-ctx16"]
        {
            assert_eq!(super::Shape::from_canonical(bad), None, "{bad}");
        }
    }

    use super::*;

    fn pocket() -> Shape {
        preset("mnn-pocket-0.3b").unwrap().shape
    }

    #[test]
    fn impossible_shapes_say_why() {
        let mut s = pocket();
        s.kv_heads = 3;
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "heads (14) must be a multiple of kv-heads (3) for grouped-query attention"
        );
        let mut s = pocket();
        s.layers = 0;
        assert_eq!(s.validate().unwrap_err().to_string(), "layers must be at least 1");
        let mut s = pocket();
        s.heads = 2;
        s.kv_heads = 2;
        assert!(matches!(s.validate(), Err(ShapeError::AttentionWidth { .. })));
        let mut s = pocket();
        s.hidden = 1_000_000;
        assert!(matches!(s.validate(), Err(ShapeError::TooLarge { name: "hidden", .. })));
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = pocket();
        assert_eq!(a.id(), a.id());
        assert_eq!(a.id().len(), 12);
        let mut b = a;
        b.layers = 36;
        assert_ne!(a.id(), b.id());
        // Pinned: ids are a contract with stored results and score files.
        assert_eq!(a.canonical(), "d896-L28-h14-k2-hd64-f2560-v65536-tied-qkn-q4_0-ctx4096");
        assert_eq!(a.id(), "8102fc24a214");
    }

    #[test]
    fn spec_overrides_a_preset() {
        let spec = ShapeSpec { preset: Some("mnn-pocket-0.3b".into()), layers: Some(36), ..Default::default() };
        assert_eq!(spec.resolve().unwrap().layers, 36);
        let spec = ShapeSpec { preset: Some("nope".into()), ..Default::default() };
        assert!(spec.resolve().unwrap_err().to_string().starts_with("unknown preset `nope`"));
        let spec = ShapeSpec { hidden: Some(512), ..Default::default() };
        assert_eq!(
            spec.resolve().unwrap_err().to_string(),
            "without a preset the shape needs --layers, --ffn, --vocab"
        );
    }
}
