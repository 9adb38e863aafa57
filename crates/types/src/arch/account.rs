//! Derived figures of a shape: parameters, deployment bytes, bytes read per
//! decoded token, KV-cache bytes and FLOPs.
//!
//! Storage model: every matrix (attention, FFN, embedding, untied output) is
//! stored in the shape's quantization; vectors (RMSNorm weights) stay f32, as
//! in ggml files. The deployment package adds a tokenizer and graph/config:
//! `23.5 B x vocab + 0.93 MB`, an estimate (E) fitted to the two published INT4
//! package sizes (MNN-Pocket-0.3B 173 MB at V = 65,536; Qwen3-0.6B 340 MB at
//! V = 151,936; `shared/reference/published.md`): the residuals after weights
//! are 2.47 MB and 4.50 MB, which a line through both points splits into
//! 23.46 B per vocabulary entry and 0.93 MB fixed.

use serde::Serialize;

use super::Shape;

/// KV-cache element width assumed when no engine says otherwise (f16).
pub const KV_BITS_DEFAULT: u32 = 16;
/// Tokenizer bytes per vocabulary entry (E, see module docs).
pub const TOKENIZER_BYTES_PER_ENTRY: f64 = 23.5;
/// Graph, config and other fixed package bytes (E, see module docs).
pub const PACKAGE_FIXED_BYTES: f64 = 930_000.0;

/// The figures derived from a [`Shape`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Accounting {
    /// Parameters of one transformer block.
    pub params_per_layer: u64,
    /// Everything but the embedding and output matrices.
    pub params_non_embedding: u64,
    /// Embedding (and untied output) parameters.
    pub params_embedding: u64,
    /// All parameters.
    pub params_total: u64,
    /// Parameters stored in the quantized format (matrices).
    pub params_quantized: u64,
    /// Parameters stored as f32 (norm weights).
    pub params_f32: u64,
    /// Bytes of all weights as stored.
    pub weight_bytes: u64,
    /// Deployment package: weights + tokenizer + graph/config (E).
    pub package_bytes: u64,
    /// Weight bytes read to decode one token: all layers, the full output
    /// projection (read every token, tied or not), one embedding row, norms.
    pub weight_bytes_per_token: u64,
    /// KV-cache bytes added per context position at [`KV_BITS_DEFAULT`].
    pub kv_bytes_per_token: u64,
    /// Matrix parameters touched per token by the layers (the matmul work).
    pub layer_matmul_params: u64,
    /// Output projection parameters (V x d).
    pub output_params: u64,
}

impl Accounting {
    /// Compute the figures (integer arithmetic, exact).
    pub fn of(s: &Shape) -> Self {
        let (d, l, h, k, dh, f, v) = (
            s.hidden as u64,
            s.layers as u64,
            s.heads as u64,
            s.kv_heads as u64,
            s.head_dim as u64,
            s.ffn as u64,
            s.vocab as u64,
        );
        let attn = d * h * dh + 2 * d * k * dh + h * dh * d;
        let ffn = 3 * d * f;
        let norms = 2 * d + if s.qk_norm { 2 * dh } else { 0 };
        let params_per_layer = attn + ffn + norms;
        let params_non_embedding = l * params_per_layer + d;
        let emb = v * d;
        let params_embedding = emb * if s.tied { 1 } else { 2 };
        let layer_matmul_params = l * (attn + ffn);
        let params_quantized = layer_matmul_params + params_embedding;
        let params_f32 = l * norms + d;
        let q = s.quant;
        let weight_bytes = q.bytes_for(params_quantized) + 4 * params_f32;
        let package_bytes = weight_bytes + (TOKENIZER_BYTES_PER_ENTRY * v as f64 + PACKAGE_FIXED_BYTES).round() as u64;
        let weight_bytes_per_token =
            q.bytes_for(layer_matmul_params) + q.bytes_for(emb) + q.bytes_for(d) + 4 * params_f32;
        Accounting {
            params_per_layer,
            params_non_embedding,
            params_embedding,
            params_total: params_non_embedding + params_embedding,
            params_quantized,
            params_f32,
            weight_bytes,
            package_bytes,
            weight_bytes_per_token,
            kv_bytes_per_token: kv_bytes_per_position(s, KV_BITS_DEFAULT),
            layer_matmul_params,
            output_params: emb,
        }
    }
}

/// KV-cache bytes per context position: 2 (K and V) x L x k x dh x bytes/element.
pub fn kv_bytes_per_position(s: &Shape, kv_bits: u32) -> u64 {
    2 * s.layers as u64 * s.kv_heads as u64 * s.head_dim as u64 * kv_bits as u64 / 8
}

/// FLOPs (multiply-add = 2) to decode one token at context length `ctx`:
/// 2 x (layer matrices + output projection) + attention 4 x L x h x dh x ctx
/// (scores QK^T and the weighted sum of V).
pub fn decode_flops(s: &Shape, a: &Accounting, ctx: f64) -> f64 {
    2.0 * (a.layer_matmul_params + a.output_params) as f64 + attention_flops_per_position(s) * ctx
}

/// FLOPs to prefill `p` prompt tokens with causal attention, logits for the
/// last position only (as engines compute them):
/// 2 x p x layer matrices + 2 x V x d + 4 x L x h x dh x p(p+1)/2.
pub fn prefill_flops(s: &Shape, a: &Accounting, p: f64) -> f64 {
    2.0 * p * a.layer_matmul_params as f64
        + 2.0 * a.output_params as f64
        + attention_flops_per_position(s) * p * (p + 1.0) / 2.0
}

/// Attention FLOPs per query token per context position: 4 x L x h x dh.
pub fn attention_flops_per_position(s: &Shape) -> f64 {
    4.0 * s.layers as f64 * s.heads as f64 * s.head_dim as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{preset, PRESETS};

    /// Expected values from `presets.md` (non-embedding, total), in millions.
    const EXPECTED: &[(&str, f64, f64)] = &[
        ("qwen3-0.6b", 440.5, 596.0),
        ("qwen3-1.7b", 1409.4, 1720.6),
        ("mobilellm-125m", 106.2, 124.6),
        ("mobilellm-350m", 314.6, 345.4),
        ("mnn-pocket-0.3b", 244.1, 302.8),
    ];

    #[test]
    fn presets_match_reference_within_0_1_percent() {
        for (name, non_emb, total) in EXPECTED {
            let a = preset(name).unwrap().shape.accounting();
            let rel = |got: u64, want: f64| (got as f64 / 1e6 - want).abs() / want;
            assert!(rel(a.params_non_embedding, *non_emb) < 1e-3, "{name}: {}", a.params_non_embedding);
            assert!(rel(a.params_total, *total) < 1e-3, "{name}: {}", a.params_total);
        }
    }

    #[test]
    fn pocket_layer_count_is_exact() {
        // published.md: 8,718,208 per layer.
        let a = preset("mnn-pocket-0.3b").unwrap().shape.accounting();
        assert_eq!(a.params_per_layer, 8_718_208);
    }

    #[test]
    fn every_preset_is_valid() {
        for p in PRESETS {
            p.shape.validate().unwrap();
        }
    }

    #[test]
    fn package_sizes_match_published_within_3_percent() {
        for (name, mb) in [("mnn-pocket-0.3b", 173.0), ("qwen3-0.6b", 340.0)] {
            let a = preset(name).unwrap().shape.accounting();
            let got = a.package_bytes as f64 / 1e6;
            assert!((got / mb - 1.0).abs() < 0.03, "{name}: {got} MB");
        }
    }

    #[test]
    fn output_projection_is_read_every_token_even_when_tied() {
        let s = preset("mnn-pocket-0.3b").unwrap().shape;
        let a = s.accounting();
        // 244.06M layer matrices + 58.72M output, at 4.5 bits, plus one row and norms.
        assert!(a.weight_bytes_per_token > s.quant.bytes_for(a.layer_matmul_params + a.output_params));
        assert_eq!(a.kv_bytes_per_token, 2 * 28 * 2 * 64 * 2);
    }

    #[test]
    fn flops_grow_with_context() {
        let s = preset("qwen3-0.6b").unwrap().shape;
        let a = s.accounting();
        assert!(decode_flops(&s, &a, 1024.0) > decode_flops(&s, &a, 0.0));
        let p = prefill_flops(&s, &a, 1024.0);
        // About 2 x 1024 x 440M layer matrices, plus attention.
        assert!(p > 2.0 * 1024.0 * 440e6 * 0.99 && p < 2.0 * 1024.0 * 440e6 * 1.2, "{p}");
    }
}
