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
//!   softmax per score dominated it.) They may add `G·kv·c̄·ck` as well, a
//!   cost `ck` per byte of KV cache read (`model.kv-cost`): the converting
//!   and multiplying of every cached key and value, done once for the
//!   query heads sharing it, which the memory traffic does not hide. Without
//!   it, one-thread fits on the Zen 4 VM predicted Qwen3-0.6B (125 MB of KV
//!   a token at 1024 + 128) 33% too fast. Both attention terms are split
//!   by KV head over the engine's threads where it splits so.
//! * **Prefill** is a roofline per chunk: the engine runs the prompt in
//!   chunks of `n` tokens (`engine.prefill-chunk`; default the whole prompt
//!   at once), and chunk `j`, after `s` tokens already in the cache, takes
//!   `t_j = max(F_j/(ec·C), (W + kv·(s+n))/(eb·BW)) + L·cl + c0`: its FLOPs
//!   `F_j = 2·n·M + A·(n·s + n(n+1)/2)` (`M` the layer matmul parameters,
//!   `A = 4·L·h·dh` the attention FLOPs per query per cached position, the
//!   causal term that grows with the prompt; the output projection only for
//!   the last position) against one read of the weights and the cache. A long
//!   prompt is compute-bound, a short one (or small chunks) memory-bound.
//!   Engines whose prefill attention runs below their matmuls' rate add
//!   `Fa_j·pa` to the compute branch (`Fa_j` the chunk's attention FLOPs,
//!   `pa` = `model.prefill-attention-cost`): with one efficiency for both,
//!   fits on the Zen 4 VM predicted narrow shapes' 1024-token prefill (a
//!   quarter of it attention) 25-76% too fast and held-out shapes up to 36%;
//!   with `pa`, within 10.5%.
//!   Time to first token = `t_prefill` (the first token is the argmax of the
//!   prefill's last logits).
//! * **Peak memory increase** = resident weights + KV cache for the workload's
//!   context + activation scratch + engine overhead. Scratch for a prefill
//!   chunk of `n` tokens at `a` bytes per activation: `a·n·(2d + (h+2k)·dh +
//!   2f) + a·h·n·P` (residual stream, q/k/v, SwiGLU gate and up, attention
//!   scores) + `4·V` (f32 logits); engines that keep only one query group's
//!   f32 score rows per thread (`engine.attention-scratch = "per-thread"`,
//!   the native engine) hold `4·T·(h/k)·context` for the scores instead of
//!   `a·h·n·P`, which at its 128-token chunk would charge Qwen3-0.6B 8 MB
//!   it never allocates; + `e·V·d` for engines that hold more of the
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

use crate::arch::account::{attention_flops_per_position, decode_flops, kv_bytes_per_position};
use crate::arch::{Accounting, Shape};
use crate::device::{DeviceModel, FreeParam};
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
    /// The lowest and highest time to first token, ms, and energy per run, J,
    /// that the ranges of the device's prior parameters allow (equal to the
    /// point where no parameter has a range).
    pub ttft_ms_range: [f64; 2],
    /// See [`Prediction::ttft_ms_range`].
    pub energy_j_range: [f64; 2],
    /// The decode tok/s at the lowest and highest bandwidth the machine
    /// showed (the bandwidth fact's range; the point where it has none).
    pub decode_tok_s_range: [f64; 2],
    /// The share of the run's energy spent in prefill (= its share of the
    /// busy time: energy is active power x time).
    pub prefill_energy_share: f64,
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
    /// KV cache bytes attention reads per step at the mean context, on the
    /// critical path (multiplies the KV cost).
    pub kv_bytes: f64,
    /// The share of the working set served from the caches
    /// ([`crate::device::ModelParams::cache_share`]).
    pub cache_share: f64,
}

/// Decode-time terms: `t_step = transfer_s / eb + attention_scores·ca +
/// kv_bytes·ck + layers·cl + c0`.
pub fn decode_terms(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> DecodeTerms {
    let bytes = decode_bytes_per_token(shape, acct, dev, w);
    DecodeTerms {
        cache_share: dev.params.cache_share(bytes),
        transfer_s: bytes / dev.bandwidth,
        layers: shape.layers as f64,
        attention_scores: attention_scores(shape, w, dev),
        kv_bytes: attention_kv_bytes(shape, w, dev),
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

/// KV cache bytes decode attention reads per step at the mean context, on
/// the critical path of its split over threads.
fn attention_kv_bytes(shape: &Shape, w: &Workload, dev: &DeviceModel) -> f64 {
    kv_read_per_step(shape, w, dev) * attention_imbalance(shape.kv_heads, dev.attention_threads)
}

/// KV cache bytes one decode step reads at the mean context.
fn kv_read_per_step(shape: &Shape, w: &Workload, dev: &DeviceModel) -> f64 {
    kv_bytes_per_position(shape, dev.kv_bits) as f64 * w.mean_decode_context()
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
    acct.weight_bytes_per_token as f64 + kv_read_per_step(shape, w, dev)
}

/// Memory terms that do not depend on fitted parameters: weights + KV + scratch
/// (the engine overhead and the embedding extra are added by [`predict`]).
pub fn memory_without_overhead(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> f64 {
    let kv = kv_bytes_per_position(shape, dev.kv_bits) as f64 * w.context as f64;
    let a = dev.act_bits as f64 / 8.0;
    let n = dev.prefill_chunk.map_or(w.prompt, |c| c.min(w.prompt)) as f64;
    let (d, h, k, dh, f) =
        (shape.hidden as f64, shape.heads as f64, shape.kv_heads as f64, shape.head_dim as f64, shape.ffn as f64);
    let scores = match dev.score_row_threads {
        // Each thread's query group of f32 rows over the whole context.
        Some(t) => 4.0 * t as f64 * (h / k.max(1.0)).ceil() * w.context as f64,
        None => a * h * n * w.prompt as f64,
    };
    let scratch = a * n * (2.0 * d + (h + 2.0 * k) * dh + 2.0 * f) + scores + 4.0 * shape.vocab as f64;
    acct.weight_bytes as f64 + kv + scratch
}

/// A prefill's time, split the way calibration needs it: the chunks whose
/// compute branch binds (their FLOPs), and the rest of the time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrefillTime {
    /// Seconds in all.
    pub total_s: f64,
    /// FLOPs of the chunks that are compute-bound.
    pub compute_bound_flops: f64,
    /// Of them, attention's (scores and values over the cached positions).
    pub compute_bound_attention_flops: f64,
    /// Seconds of the chunks that are memory-bound (transfer only).
    pub memory_bound_s: f64,
    /// Fixed cost: chunks x (L·cl + c0).
    pub fixed_s: f64,
    /// Chunks.
    pub chunks: u32,
}

/// The chunked prefill roofline ([module docs](self)) for `prompt` tokens.
pub fn prefill_time(shape: &Shape, acct: &Accounting, dev: &DeviceModel, prompt: u32) -> PrefillTime {
    let p = &dev.params;
    let step_fixed = shape.layers as f64 * p.layer_cost + p.token_cost;
    let chunk = dev.prefill_chunk.filter(|c| *c > 0).map_or(prompt, |c| c.min(prompt)).max(1);
    let kv = kv_bytes_per_position(shape, dev.kv_bits) as f64;
    let per_position = attention_flops_per_position(shape);
    let weights = acct.weight_bytes_per_token as f64;
    let (mut out, mut start) = (
        PrefillTime {
            total_s: 0.0,
            compute_bound_flops: 0.0,
            compute_bound_attention_flops: 0.0,
            memory_bound_s: 0.0,
            fixed_s: 0.0,
            chunks: 0,
        },
        0u32,
    );
    while start < prompt {
        let n = chunk.min(prompt - start);
        let (nf, sf) = (n as f64, start as f64);
        let last = start + n == prompt;
        let attention = per_position * (nf * sf + nf * (nf + 1.0) / 2.0);
        let flops = 2.0 * nf * acct.layer_matmul_params as f64
            + if last { 2.0 * acct.output_params as f64 } else { 0.0 }
            + attention;
        let bytes = weights + kv * (sf + nf);
        let compute_s = flops / (p.compute_efficiency * dev.compute) + attention * p.prefill_attention_cost;
        let transfer_s = bytes / (p.efficiency_for(bytes) * dev.bandwidth);
        if compute_s >= transfer_s {
            out.compute_bound_flops += flops;
            out.compute_bound_attention_flops += attention;
        } else {
            out.memory_bound_s += transfer_s;
        }
        out.total_s += compute_s.max(transfer_s) + step_fixed;
        out.fixed_s += step_fixed;
        out.chunks += 1;
        start += n;
    }
    out
}

/// Predict one configuration on one device: the point from the device's
/// parameters, and the range of time to first token and energy over every
/// corner of the parameters that carry a `range` (each at its low or high
/// end). A fitted active power is rescaled at each corner so that the
/// energy point it was fitted to keeps its energy, as refitting would.
pub fn predict(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> Prediction {
    let mut p = point(shape, acct, dev, w);
    if let Some([lo, hi]) = dev.bandwidth_range {
        let at = |bandwidth| point(shape, acct, &DeviceModel { bandwidth, ..*dev }, w).decode_tok_s;
        p.decode_tok_s_range = [at(lo).min(p.decode_tok_s), at(hi).max(p.decode_tok_s)];
    }
    let ranged: Vec<(FreeParam, [f64; 2])> =
        FreeParam::ALL.iter().zip(&dev.ranges).filter_map(|(q, r)| r.map(|r| (*q, r))).collect();
    if ranged.is_empty() {
        return p;
    }
    let anchor_s = |m: &DeviceModel| {
        dev.power_anchor.map(|(s, w)| {
            let q = point(&s, &s.accounting(), m, &w);
            q.prefill_s + q.decode_s
        })
    };
    let base = anchor_s(dev);
    let power_ranged = ranged.iter().any(|(q, _)| *q == FreeParam::ActivePower);
    for corner in 0..1u32 << ranged.len() {
        let mut m = *dev;
        for (i, (q, [lo, hi])) in ranged.iter().enumerate() {
            m.params.set(*q, if corner >> i & 1 == 0 { *lo } else { *hi });
        }
        if let (Some(b), Some(c), false) = (base, anchor_s(&m), power_ranged) {
            m.params.active_power *= b / c;
        }
        let q = point(shape, acct, &m, w);
        p.ttft_ms_range = [p.ttft_ms_range[0].min(q.ttft_ms), p.ttft_ms_range[1].max(q.ttft_ms)];
        p.energy_j_range = [p.energy_j_range[0].min(q.energy_j), p.energy_j_range[1].max(q.energy_j)];
    }
    p
}

/// The prediction at the device's parameters, no ranges.
fn point(shape: &Shape, acct: &Accounting, dev: &DeviceModel, w: &Workload) -> Prediction {
    let p = &dev.params;
    let step_fixed = shape.layers as f64 * p.layer_cost + p.token_cost;
    let bytes_per_token = decode_bytes_per_token(shape, acct, dev, w);
    // A working set within the fitted cache size streams at the caches' rate.
    let eff_bw = p.efficiency_for(bytes_per_token) * dev.bandwidth;
    // Attention work grows with the context; engines whose attention kernel
    // hides behind memory traffic leave it unmodelled (cost 0). The terms
    // are the ones calibration fits.
    let t = decode_terms(shape, acct, dev, w);
    let attention_s = t.attention_scores * p.attention_cost + t.kv_bytes * p.kv_cost;
    let decode_s = w.gen as f64 * (bytes_per_token / eff_bw + attention_s + step_fixed);

    let prompt = w.prompt as f64;
    let prefill_s = prefill_time(shape, acct, dev, w.prompt).total_s;

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
        ttft_ms_range: [prefill_s * 1e3; 2],
        energy_j_range: [energy_j; 2],
        decode_tok_s_range: [w.gen as f64 / decode_s; 2],
        prefill_energy_share: prefill_s / (prefill_s + decode_s),
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
            score_row_threads: None,
            ranges: [None; FreeParam::ALL.len()],
            power_anchor: None,
            bandwidth_range: None,
            params: ModelParams {
                bandwidth_efficiency: 0.5,
                layer_cost: 10e-6,
                token_cost: 0.0,
                compute_efficiency: 0.25,
                engine_overhead: 20e6,
                embedding_extra: 0.0,
                attention_cost: 0.0,
                kv_cost: 0.0,
                prefill_attention_cost: 0.0,
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
    fn per_thread_score_rows_replace_the_chunks_score_matrix() {
        // Qwen3-0.6B: 16 query heads over 8 KV heads, 1024+128, chunk 128.
        let s = preset("qwen3-0.6b").unwrap().shape;
        let (a, w) = (s.accounting(), Workload::reference());
        let mut d = dev();
        d.act_bits = 32;
        d.prefill_chunk = Some(128);
        let chunk = memory_without_overhead(&s, &a, &d, &w);
        d.score_row_threads = Some(2);
        let rows = memory_without_overhead(&s, &a, &d, &w);
        let matrix = 4.0 * 16.0 * 128.0 * 1024.0;
        let per_thread = 4.0 * 2.0 * 2.0 * 1152.0;
        assert!((chunk - rows - (matrix - per_thread)).abs() < 1e-6, "{chunk} {rows}");
    }

    #[test]
    fn prefill_chunks_add_up_to_the_prompt() {
        let s = preset("mnn-pocket-0.3b").unwrap().shape;
        let a = s.accounting();
        let mut d = dev();
        d.bandwidth = 1e18; // every chunk compute-bound
        d.prefill_chunk = Some(32);
        let t = prefill_time(&s, &a, &d, 1000);
        assert_eq!(t.chunks, 32); // 31 x 32 + 8
        let flops = crate::arch::account::prefill_flops(&s, &a, 1000.0);
        assert!((t.compute_bound_flops / flops - 1.0).abs() < 1e-12, "{} {flops}", t.compute_bound_flops);
        assert_eq!(t.memory_bound_s, 0.0);
        // Each chunk is a forward pass: it pays the per-layer cost once.
        assert!((t.fixed_s - 32.0 * 28.0 * 10e-6).abs() < 1e-12);
        // The whole prompt at once pays it once.
        d.prefill_chunk = None;
        assert!((prefill_time(&s, &a, &d, 1000).fixed_s - 28.0 * 10e-6).abs() < 1e-12);
    }

    #[test]
    fn a_short_prompt_is_memory_bound_and_a_long_one_compute_bound() {
        let s = preset("mnn-pocket-0.3b").unwrap().shape;
        let a = s.accounting();
        // 100 GB/s at 50%, 2 TFLOPS at 25%: the ridge is at ~10 FLOP/byte.
        let short = prefill_time(&s, &a, &dev(), 1);
        assert_eq!(short.compute_bound_flops, 0.0);
        let weights = a.weight_bytes_per_token as f64 / 50e9;
        assert!(short.memory_bound_s >= weights && short.memory_bound_s < 1.01 * weights);
        let long = prefill_time(&s, &a, &dev(), 1024);
        assert_eq!(long.memory_bound_s, 0.0);
        assert!(long.compute_bound_flops > 0.0);
        // In a prediction: time to first token = the prefill time.
        let w = Workload::new(1024, 8, None).unwrap();
        let p = predict(&s, &a, &dev(), &w);
        assert!((p.ttft_ms - long.total_s * 1e3).abs() < 1e-9);
        assert_eq!(p.ttft_ms_range, [p.ttft_ms; 2]);
    }

    #[test]
    fn a_range_on_a_prior_spreads_ttft_and_energy() {
        let s = preset("mnn-pocket-0.3b").unwrap().shape;
        let a = s.accounting();
        let w = Workload::reference();
        let mut d = dev();
        let at = |ec: f64| {
            let mut m = dev();
            m.params.compute_efficiency = ec;
            predict(&s, &a, &m, &w)
        };
        d.ranges[3] = Some([0.1, 0.5]); // compute-efficiency
        assert_eq!(FreeParam::ALL[3], FreeParam::ComputeEfficiency);
        let p = predict(&s, &a, &d, &w);
        assert!((p.ttft_ms_range[0] - at(0.5).ttft_ms).abs() < 1e-9);
        assert!((p.ttft_ms_range[1] - at(0.1).ttft_ms).abs() < 1e-9);
        assert!((p.energy_j_range[1] - at(0.1).energy_j).abs() < 1e-12);
        // A fitted power anchored to this very run keeps its energy.
        d.power_anchor = Some((s, w));
        let q = predict(&s, &a, &d, &w);
        assert!((q.energy_j_range[0] - q.energy_j).abs() < 1e-12 && (q.energy_j_range[1] - q.energy_j).abs() < 1e-12);
        assert_eq!(q.ttft_ms_range, p.ttft_ms_range);
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

    #[test]
    fn the_machines_bandwidth_range_is_the_decode_interval() {
        let shape = preset("mnn-pocket-0.3b").unwrap().shape;
        let w = Workload::new(1024, 128, None).unwrap();
        let d = dev();
        let p = predict(&shape, &shape.accounting(), &d, &w);
        assert_eq!(p.decode_tok_s_range, [p.decode_tok_s; 2]);
        let mut ranged = d;
        ranged.bandwidth_range = Some([50e9, 150e9]);
        let q = predict(&shape, &shape.accounting(), &ranged, &w);
        // A mutable copy, not struct-update syntax in the closure: the
        // latter trips a rustc 1.95 ICE (broken MIR) on the const-sized
        // `ranges` array.
        let at = |b: f64| {
            let mut m = d;
            m.bandwidth = b;
            predict(&shape, &shape.accounting(), &m, &w).decode_tok_s
        };
        assert_eq!(q.decode_tok_s, p.decode_tok_s);
        assert!(
            (q.decode_tok_s_range[0] - at(50e9)).abs() < 1e-9 && (q.decode_tok_s_range[1] - at(150e9)).abs() < 1e-9
        );
        assert!(q.decode_tok_s_range[0] < q.decode_tok_s && q.decode_tok_s < q.decode_tok_s_range[1]);
    }
}
