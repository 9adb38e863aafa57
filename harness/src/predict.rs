//! The physical predictor ("roofline-v1"): decode, prefill, peak memory and
//! energy of one configuration on one device, from arithmetic only.
//!
//! Equations (SI units; `BW` peak bandwidth, `C` peak compute, `eb`, `ec`
//! bandwidth and compute efficiency, `cl` per-layer and `c0` per-step fixed
//! cost, `L` layers, `P` prompt and `G` generated tokens):
//!
//! * **Decode** is memory-bound at batch 1 (`shared/reference/devices.md`).
//!   Step i reads the weights `W` (all layers, the whole output projection, one
//!   embedding row) and the KV cache at context `P + i`, `kv` bytes per
//!   position: `t_i = (W + kv·(P+i)) / (eb·BW) + L·cl + c0`. Summed over the G
//!   steps: `t_decode = G·(W + kv·c̄)/(eb·BW) + G·(L·cl + c0)` with
//!   `c̄ = P + (G-1)/2`; decode tok/s = `G / t_decode`. Engines whose decode
//!   attention costs more than its memory traffic (CPU engines) add
//!   `G·L·h·c̄·(dh/64)·ca`, a cost `ca` per attention score of 64 dimensions
//!   (layer x query head x cached position x head_dim/64). The native
//!   engine's score and value loops are head_dim long; scaling by it took
//!   the held-out Qwen3-0.6B (head_dim 128) from +11.3% to -0.3% on this
//!   host. (candle-transformers' cost did not grow with head_dim: a scalar
//!   softmax per score dominated it.)
//! * **Prefill** is a roofline: `t_prefill = max(F/(ec·C), (W + kv·P)/(eb·BW))
//!   + L·cl + c0`, `F` the prefill FLOPs (causal attention, last-position
//!   logits). Time to first token = `t_prefill`.
//! * **Peak memory increase** = resident weights + KV cache for the workload's
//!   context + activation scratch + engine overhead. Scratch for a prefill
//!   chunk of `n` tokens at `a` bytes per activation: `a·n·(2d + (h+2k)·dh +
//!   2f) + a·h·n·P` (residual stream, q/k/v, SwiGLU gate and up, attention
//!   scores) + `4·V` (f32 logits), + `e·V·d` for engines that hold more of the
//!   embedding than its quantized table (candle keeps an f32 copy: e ≈ 4-5
//!   bytes per embedding parameter; shipping engines e = 0), + `x·W_mm`
//!   for engines that keep a second copy of the matmul weights, output
//!   projection included (llama.cpp's
//!   CPU repack beside the mapped file).
//! * **Energy** per run = `P_active · (t_prefill + t_decode)`: average device
//!   power times busy time. Chosen over energy-per-byte because one published
//!   energy figure exists (OnePlus 13), which determines exactly one
//!   parameter; time already carries the bytes moved, since decode is
//!   memory-bound.

use serde::Serialize;

use crate::arch::account::{decode_flops, kv_bytes_per_position, prefill_flops};
use crate::arch::{Accounting, Shape};
use crate::device::DeviceModel;
use crate::workload::Workload;

/// The predictor's name, recorded in every prediction.
pub const PREDICTOR: &str = "roofline-v1";

/// Predicted figures for one configuration on one device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// Generated tokens per second of decode time.
    pub decode_tok_s: f64,
    /// Prompt tokens per second of prefill time.
    pub prefill_tok_s: f64,
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// Prefill seconds.
    pub prefill_s: f64,
    /// Decode seconds for all generated tokens.
    pub decode_s: f64,
    /// Peak memory increase, bytes.
    pub peak_mem_bytes: f64,
    /// Deployment package, bytes.
    pub package_bytes: f64,
    /// Joules per run.
    pub energy_j: f64,
    /// Share of the battery one run uses; `None` without a battery.
    pub battery_fraction: Option<f64>,
    /// Bytes read per decoded token at the mean decode context.
    pub bytes_per_token: f64,
    /// Decode FLOPs per token at the mean decode context.
    pub decode_flops_per_token: f64,
}

/// Terms of the decode time that are linear in the parameters; calibration
/// fits against these.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeTerms {
    /// Bytes per step at the mean context / peak bandwidth (seconds at 100% efficiency).
    pub transfer_s: f64,
    /// Layers (multiplies the per-layer cost).
    pub layers: f64,
    /// Attention scores per step at the mean context: L x h x c̄.
    pub attention_scores: f64,
    /// The share of the working set served from the caches
    /// ([`crate::device::ModelParams::cache_share`]).
    pub cache_share: f64,
}

/// Decode-time terms: `t_step = transfer_s / eb + attention_scores·ca + layers·cl + c0`.
pub fn decode_terms(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> DecodeTerms {
    let bytes = decode_bytes_per_token(shape, acct, dev, w);
    DecodeTerms {
        cache_share: dev.params.cache_share(bytes),
        transfer_s: bytes / dev.bandwidth,
        layers: shape.layers as f64,
        attention_scores: attention_scores(shape, w, dev),
    }
}

/// Bytes of every matrix a matmul reads, the output projection included
/// (what llama.cpp's CPU backend repacks; a tied embedding is repacked as
/// the output matrix), as stored.
pub fn matmul_weight_bytes(shape: &Shape, acct: &Accounting) -> f64 {
    shape.quant.bytes_for(acct.layer_matmul_params + acct.output_params) as f64
}

/// Attention work per decode step at the mean context, in scores of 64
/// dimensions: layer x query head x cached position x head_dim / 64.
fn attention_scores(shape: &Shape, w: &Workload, dev: &DeviceModel) -> f64 {
    let scores = shape.layers as f64 * shape.heads as f64 * w.mean_decode_context() * shape.head_dim as f64 / 64.0;
    scores * attention_imbalance(shape.kv_heads, dev.attention_threads)
}

/// The critical path of decode attention split by KV head over `threads`,
/// relative to a perfect split: `threads x ceil(kv / threads) / kv` (1 KV
/// head on 2 threads: 2, 3 on 2: 4/3, 4 on 2: 1).
pub fn attention_imbalance(kv_heads: u32, threads: Option<u32>) -> f64 {
    match threads {
        Some(t) if t > 1 && kv_heads > 0 => (t * kv_heads.div_ceil(t)) as f64 / kv_heads as f64,
        _ => 1.0,
    }
}

fn decode_bytes_per_token(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> f64 {
    let kv = kv_bytes_per_position(shape, dev.kv_bits) as f64;
    acct.weight_bytes_per_token as f64 + kv * w.mean_decode_context()
}

/// Memory terms that do not depend on fitted parameters: weights + KV + scratch
/// (the engine overhead and the embedding extra are added by [`predict`]).
pub fn memory_without_overhead(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> f64 {
    let kv = kv_bytes_per_position(shape, dev.kv_bits) as f64 * w.context as f64;
    let a = dev.act_bits as f64 / 8.0;
    let n = dev.prefill_chunk.map_or(w.prompt, |c| c.min(w.prompt)) as f64;
    let (d, h, k, dh, f) =
        (shape.hidden as f64, shape.heads as f64, shape.kv_heads as f64, shape.head_dim as f64, shape.ffn as f64);
    let scratch =
        a * n * (2.0 * d + (h + 2.0 * k) * dh + 2.0 * f) + a * h * n * w.prompt as f64 + 4.0 * shape.vocab as f64;
    acct.weight_bytes as f64 + kv + scratch
}

/// Predict one configuration on one device.
pub fn predict(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> Prediction {
    let p = &dev.params;
    let step_fixed = shape.layers as f64 * p.layer_cost + p.token_cost;
    let bytes_per_token = decode_bytes_per_token(shape, acct, dev, w);
    // A working set within the fitted cache size streams at the caches' rate.
    let eff_bw = p.efficiency_for(bytes_per_token) * dev.bandwidth;
    // Attention work grows with the context; engines whose attention kernel
    // hides behind memory traffic leave it unmodelled (cost 0).
    let attention_s = attention_scores(shape, w, dev) * p.attention_cost;
    let decode_s = w.gen as f64 * (bytes_per_token / eff_bw + attention_s + step_fixed);

    let prompt = w.prompt as f64;
    let compute_s = prefill_flops(shape, acct, prompt) / (p.compute_efficiency * dev.compute);
    let kv = kv_bytes_per_position(shape, dev.kv_bits) as f64;
    let transfer_s = (acct.weight_bytes_per_token as f64 + kv * prompt) / eff_bw;
    let prefill_s = compute_s.max(transfer_s) + step_fixed;

    let peak_mem_bytes = memory_without_overhead(shape, acct, dev, w)
        + p.engine_overhead
        + p.embedding_extra * acct.output_params as f64
        + p.weight_extra * matmul_weight_bytes(shape, acct);
    let energy_j = p.active_power * (prefill_s + decode_s);
    Prediction {
        decode_tok_s: w.gen as f64 / decode_s,
        prefill_tok_s: prompt / prefill_s,
        ttft_ms: prefill_s * 1e3,
        prefill_s,
        decode_s,
        peak_mem_bytes,
        package_bytes: acct.package_bytes as f64,
        energy_j,
        battery_fraction: dev.battery_j.map(|b| energy_j / b),
        bytes_per_token,
        decode_flops_per_token: decode_flops(shape, acct, w.mean_decode_context()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::preset;
    use crate::device::ModelParams;

    fn dev() -> DeviceModel {
        DeviceModel {
            bandwidth: 100e9,
            compute: 2e12,
            battery_j: Some(83_600.0),
            kv_bits: 16,
            act_bits: 16,
            prefill_chunk: None,
            attention_threads: None,
            params: ModelParams {
                bandwidth_efficiency: 0.5,
                layer_cost: 10e-6,
                token_cost: 0.0,
                compute_efficiency: 0.25,
                engine_overhead: 20e6,
                embedding_extra: 0.0,
                attention_cost: 0.0,
                weight_extra: 0.0,
                cache_size: 0.0,
                cache_efficiency: 0.0,
                active_power: 2.0,
            },
        }
    }

    #[test]
    fn attention_split_by_kv_head_waits_for_the_busiest_thread() {
        assert_eq!(attention_imbalance(2, Some(2)), 1.0);
        assert_eq!(attention_imbalance(1, Some(2)), 2.0);
        assert!((attention_imbalance(3, Some(2)) - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(attention_imbalance(8, Some(2)), 1.0);
        assert_eq!(attention_imbalance(1, Some(1)), 1.0);
        assert_eq!(attention_imbalance(1, None), 1.0);
        // In a prediction: one KV head on two threads doubles the attention time.
        let mut d = dev();
        d.params.attention_cost = 10e-9;
        let s = Shape { kv_heads: 1, ..preset("mnn-pocket-0.3b").unwrap().shape };
        let w = Workload::reference();
        let plain = predict(&s, &s.accounting(), &d, &w).decode_s;
        d.attention_threads = Some(2);
        let split = predict(&s, &s.accounting(), &d, &w).decode_s;
        let attention = w.gen as f64 * attention_scores(&s, &w, &dev()) * 10e-9;
        assert!((split - plain - attention).abs() < 1e-9 * split, "{split} {plain} {attention}");
    }

    #[test]
    fn decode_is_bandwidth_bound() {
        let s = preset("mnn-pocket-0.3b").unwrap().shape;
        let a = s.accounting();
        let w = Workload::reference();
        let p = predict(&s, &a, &dev(), &w);
        // 186.1 MB per token at 50 GB/s = 3.72 ms, + 28 x 10 us = 4.0 ms.
        let expect = 1.0 / (p.bytes_per_token / 50e9 + 28.0 * 10e-6);
        assert!((p.decode_tok_s - expect).abs() < 1e-9 * expect);
        assert!((p.bytes_per_token / 1e6 - 186.1).abs() < 0.2, "{}", p.bytes_per_token);
        assert!((p.energy_j - 2.0 * (p.prefill_s + p.decode_s)).abs() < 1e-12);
        assert_eq!(p.battery_fraction, Some(p.energy_j / 83_600.0));
    }

    #[test]
    fn deeper_at_equal_bytes_is_slower() {
        let s = preset("mnn-pocket-0.3b").unwrap().shape;
        let mut deep = s;
        deep.layers = 36;
        deep.ffn = 1856;
        let w = Workload::reference();
        let a = predict(&s, &s.accounting(), &dev(), &w);
        let b = predict(&deep, &deep.accounting(), &dev(), &w);
        assert!(b.decode_tok_s < a.decode_tok_s);
    }

    #[test]
    fn longer_context_costs_memory_and_speed() {
        let s = preset("qwen3-0.6b").unwrap().shape;
        let a = s.accounting();
        let short = predict(&s, &a, &dev(), &Workload::new(128, 128, None).unwrap());
        let long = predict(&s, &a, &dev(), &Workload::new(4096, 128, None).unwrap());
        assert!(long.decode_tok_s < short.decode_tok_s);
        assert!(long.peak_mem_bytes > short.peak_mem_bytes);
        assert!(long.ttft_ms > short.ttft_ms);
    }
}
