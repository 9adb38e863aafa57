//! The built-in engine's fast path: a Qwen3 or Llama decoder written for decode speed
//! on a CPU. Weights stay in their GGUF blocks (Q4_0, Q4_1, Q8_0, Q4_K, F16
//! or F32, the embedding included, dequantized a row per looked-up token); matrix products run on
//! [`crate::kernels`] over a persistent thread pool; every buffer, the KV
//! cache included, is allocated once at load, so a decode step allocates
//! nothing. The prompt runs in chunks of [`CHUNK`] tokens through the same
//! code, which turns its matrix-vector products into matrix-matrix ones.

mod load;

use std::path::Path;
use std::sync::Mutex;

use crate::kernels::{
    self, attend, f32_to_f16, for_each_chunk, matmul, quantize_q8, BlockQ8, HalfBuf, KvRows, Pool, QMatrix, BLOCK,
};

use load::Weights;
pub use load::{weight_type, Arch, Config, LoadError, NATIVE_TYPES};

use super::engine::EngineError;

/// Prompt tokens per forward pass.
pub const CHUNK: usize = 128;

/// Bytes of the layers' matrices the start-up prefetch timing streams
/// (then the output projection): twice the 32 MiB last-level cache of the
/// x86 hosts seen here, so the pass meets memory as decode does, in some
/// 1.5 ms a pass at 40 GB/s.
const PREFETCH_STREAM: usize = 64 << 20;

/// Activations of one chunk.
struct Scratch {
    x: Vec<f32>,
    xn: Vec<f32>,
    xq: Vec<BlockQ8>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    att: Vec<f32>,
    attq: Vec<BlockQ8>,
    o: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    hq: Vec<BlockQ8>,
    logits: Vec<f32>,
}

impl Scratch {
    fn new(c: &Config) -> Scratch {
        let (d, qd, kd, f) = (c.hidden, c.heads * c.head_dim, c.kv_heads * c.head_dim, c.ffn);
        let z = |n: usize| vec![0f32; CHUNK * n];
        let zq = |n: usize| vec![BlockQ8::default(); CHUNK * n / BLOCK];
        Scratch {
            x: z(d),
            xn: z(d),
            xq: zq(d),
            q: z(qd),
            k: z(kd),
            v: z(kd),
            att: z(qd),
            attq: zq(qd),
            o: z(d),
            gate: z(f),
            up: z(f),
            hq: zq(f),
            logits: vec![0f32; c.vocab],
        }
    }
}

/// A loaded model with its KV cache and thread pool.
pub struct NativeModel {
    w: Weights,
    pool: Pool,
    /// Per layer, keys then values as f16 (as llama.cpp keeps them),
    /// `kv_heads × context × head_dim` each: head-major, so attention
    /// streams one KV head's rows contiguously (position-major cost
    /// Qwen3-0.6B, 8 KV heads of 128, a third of its 1024-token decode
    /// speed). One buffer for all layers, advised for huge pages.
    kv: HalfBuf,
    context: usize,
    /// `context × head_dim / 2` cosines, then as many sines.
    rope: (Vec<f32>, Vec<f32>),
    s: Scratch,
    /// Attention scratch per thread: the scores of one KV head's query
    /// heads, one f32 row.
    scratch: Vec<Mutex<(Vec<f32>, Vec<f32>)>>,
}

impl NativeModel {
    /// Load `path` for at most `context` positions on `threads` threads.
    pub fn load(path: &Path, threads: usize, context: usize) -> Result<NativeModel, LoadError> {
        let w = load::read(path)?;
        let c = w.cfg;
        for (what, n) in [("hidden", c.hidden), ("heads x head-dim", c.heads * c.head_dim), ("ffn", c.ffn)] {
            if n % BLOCK != 0 {
                return Err(LoadError::Unsupported(format!("{what} = {n} is not a multiple of {BLOCK}")));
            }
        }
        let kvw = c.kv_heads * c.head_dim;
        let kv = HalfBuf::zeroed(c.layers * 2 * context * kvw);
        let half = c.head_dim / 2;
        let (mut cos, mut sin) = (Vec::with_capacity(context * half), Vec::with_capacity(context * half));
        for p in 0..context {
            for i in 0..half {
                let inv = 1.0 / (c.theta as f64).powf((2 * i) as f64 / c.head_dim as f64);
                let a = (p as f64 * inv) as f32;
                cos.push(a.cos());
                sin.push(a.sin());
            }
        }
        // Choose the 4-bit kernel variants now, timed on the engine's threads
        // (a start-up measurement of some tens of milliseconds), so no timed
        // forward pass pays for it.
        // Software prefetch is timed streaming the layers' matrices in
        // decode's order, up to PREFETCH_STREAM bytes (past the last-level
        // cache, so memory is timed as decode meets it), then the output
        // projection (or the tied embedding) decode ends on.
        let mut stream: Vec<&QMatrix> = Vec::new();
        let mut bytes = 0usize;
        for m in w.layers.iter().flat_map(load::Layer::matrices) {
            if bytes >= PREFETCH_STREAM {
                break;
            }
            bytes += std::mem::size_of_val(m.data.words());
            stream.push(m);
        }
        stream.push(w.output.as_ref().unwrap_or(&w.embed));
        kernels::choose_kernels(threads.max(1), &stream);
        let pool = Pool::new(threads.max(1));
        let group = c.heads / c.kv_heads.max(1);
        let scratch =
            (0..pool.threads()).map(|_| Mutex::new((vec![0f32; group * context], vec![0f32; c.head_dim]))).collect();
        Ok(NativeModel { s: Scratch::new(&c), w, pool, kv, context, rope: (cos, sin), scratch })
    }

    /// Bytes of the weight matrices as the engine holds them (after
    /// repacking: Q4_K a little larger than the file, a group-G file's
    /// repeated scales kept once), and how many of the 4-bit matrices keep
    /// each scale for several columns.
    pub fn weight_bytes(&self) -> (usize, usize) {
        let all = self.matrices();
        (all.iter().map(|m| m.data.len()).sum(), all.iter().filter(|m| m.shared_scales() > 1).count())
    }

    /// Every weight matrix, in the order a decode step reads them (the
    /// embedding, a row of which is looked up, then the layers, then the
    /// output projection; a tied one is the embedding, read whole).
    fn matrices(&self) -> Vec<&QMatrix> {
        let w = &self.w;
        let layers = w.layers.iter().flat_map(load::Layer::matrices);
        [&w.embed].into_iter().chain(layers).chain(w.output.as_ref()).collect()
    }

    /// The file's hyper-parameters.
    pub fn config(&self) -> Config {
        self.w.cfg
    }

    /// Logits of the last token of the last [`NativeModel::forward`].
    pub fn logits(&self) -> &[f32] {
        &self.s.logits
    }

    /// Run `tokens` at positions `offset..`; leaves the last token's logits
    /// in [`NativeModel::logits`].
    pub fn forward(&mut self, tokens: &[u32], offset: usize) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError("no tokens".into()));
        }
        if offset + tokens.len() > self.context {
            return Err(EngineError(format!(
                "positions up to {} exceed the context of {}",
                offset + tokens.len(),
                self.context
            )));
        }
        if let Some(t) = tokens.iter().find(|t| **t as usize >= self.w.cfg.vocab) {
            return Err(EngineError(format!("token {t} is outside the vocabulary of {}", self.w.cfg.vocab)));
        }
        for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
            self.chunk(chunk, offset + i * CHUNK);
        }
        let c = self.w.cfg;
        let b = (tokens.len() - 1) % CHUNK;
        let s = &mut self.s;
        rms_norm(&s.x[b * c.hidden..(b + 1) * c.hidden], &self.w.out_norm, c.eps, &mut s.xn[..c.hidden]);
        quantize_q8(&s.xn[..c.hidden], &mut s.xq[..c.hidden / BLOCK]);
        let out = self.w.output.as_ref().unwrap_or(&self.w.embed);
        matmul(&self.pool, [out], [&mut s.logits[..]], &s.xn[..c.hidden], &s.xq[..c.hidden / BLOCK], 1);
        Ok(())
    }

    fn chunk(&mut self, tokens: &[u32], pos0: usize) {
        let c = self.w.cfg;
        let n = tokens.len();
        let (d, dh, qd, kd, f) = (c.hidden, c.head_dim, c.heads * c.head_dim, c.kv_heads * c.head_dim, c.ffn);
        let s = &mut self.s;
        for (b, t) in tokens.iter().enumerate() {
            self.w.embed.dequantize_row(*t as usize, &mut s.x[b * d..(b + 1) * d]);
        }
        let kv_layer = 2 * self.context * kd;
        for (layer, kv) in self.w.layers.iter().zip(self.kv.chunks_exact_mut(kv_layer)) {
            let (kc, vc) = kv.split_at_mut(kv_layer / 2);
            // Attention block.
            rms_norm(&s.x[..n * d], &layer.attn_norm, c.eps, &mut s.xn[..n * d]);
            quantize_q8(&s.xn[..n * d], &mut s.xq[..n * d / BLOCK]);
            matmul(
                &self.pool,
                [&layer.wq, &layer.wk, &layer.wv],
                [&mut s.q[..n * qd], &mut s.k[..n * kd], &mut s.v[..n * kd]],
                &s.xn[..n * d],
                &s.xq[..n * d / BLOCK],
                n,
            );
            for b in 0..n {
                let (q, k, v) =
                    (&mut s.q[b * qd..(b + 1) * qd], &mut s.k[b * kd..(b + 1) * kd], &s.v[b * kd..(b + 1) * kd]);
                position(&c, layer, &self.rope, pos0 + b, (q, k, v), (kc, vc), self.context);
            }
            let (q, kc, vc, scratch, ctx) = (&s.q, &*kc, &*vc, &self.scratch, self.context);
            let group = c.heads / c.kv_heads;
            let scale = 1.0 / (dh as f32).sqrt();
            // One work item per (token, KV head): its `group` query heads.
            for_each_chunk(&self.pool, &mut s.att[..n * qd], group * dh, &|t, i, out| {
                let (b, g) = (i / c.kv_heads, i % c.kv_heads);
                let mut guard = scratch[t].lock().unwrap_or_else(|e| e.into_inner());
                let (scores, row) = &mut *guard;
                let k = KvRows { data: kc, stride: dh, offset: g * ctx * dh };
                let v = KvRows { data: vc, stride: dh, offset: g * ctx * dh };
                let qg = &q[i * group * dh..(i + 1) * group * dh];
                attend(qg, k, v, pos0 + b + 1, scale, scores, row, out);
            });
            quantize_q8(&s.att[..n * qd], &mut s.attq[..n * qd / BLOCK]);
            matmul(&self.pool, [&layer.wo], [&mut s.o[..n * d]], &s.att[..n * qd], &s.attq[..n * qd / BLOCK], n);
            add(&mut s.x[..n * d], &s.o[..n * d]);
            // Feed-forward block.
            rms_norm(&s.x[..n * d], &layer.ffn_norm, c.eps, &mut s.xn[..n * d]);
            quantize_q8(&s.xn[..n * d], &mut s.xq[..n * d / BLOCK]);
            matmul(
                &self.pool,
                [&layer.gate, &layer.up],
                [&mut s.gate[..n * f], &mut s.up[..n * f]],
                &s.xn[..n * d],
                &s.xq[..n * d / BLOCK],
                n,
            );
            kernels::silu_mul(&mut s.gate[..n * f], &s.up[..n * f]);
            quantize_q8(&s.gate[..n * f], &mut s.hq[..n * f / BLOCK]);
            matmul(&self.pool, [&layer.down], [&mut s.o[..n * d]], &s.gate[..n * f], &s.hq[..n * f / BLOCK], n);
            add(&mut s.x[..n * d], &s.o[..n * d]);
        }
    }
}

/// One token's queries and keys normalized (Qwen3) and rotated to `pos`,
/// and its keys and values written into the layer's f16 cache at `pos`.
fn position(
    c: &load::Config,
    layer: &load::Layer,
    table: &(Vec<f32>, Vec<f32>),
    pos: usize,
    (q, k, v): (&mut [f32], &mut [f32], &[f32]),
    (kc, vc): (&mut [u16], &mut [u16]),
    context: usize,
) {
    let dh = c.head_dim;
    let rotate = match c.arch {
        load::Arch::Qwen3 => rope,
        load::Arch::Llama => rope_pairs,
    };
    for h in q.chunks_exact_mut(dh) {
        if let Some((qn, _)) = &layer.qk_norm {
            rms_norm_in_place(h, qn, c.eps);
        }
        rotate(h, table, pos, dh);
    }
    for h in k.chunks_exact_mut(dh) {
        if let Some((_, kn)) = &layer.qk_norm {
            rms_norm_in_place(h, kn, c.eps);
        }
        rotate(h, table, pos, dh);
    }
    for g in 0..c.kv_heads {
        let at = (g * context + pos) * dh;
        let (kh, vh) = (&k[g * dh..][..dh], &v[g * dh..][..dh]);
        for (dst, src) in kc[at..at + dh].iter_mut().zip(kh) {
            *dst = f32_to_f16(*src);
        }
        for (dst, src) in vc[at..at + dh].iter_mut().zip(vh) {
            *dst = f32_to_f16(*src);
        }
    }
}

/// RMSNorm of each `w.len()`-wide row of `x` into `out`.
fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    for (xr, or) in x.chunks_exact(w.len()).zip(out.chunks_exact_mut(w.len())) {
        let r = rms_scale(xr, eps);
        for ((o, xi), wi) in or.iter_mut().zip(xr).zip(w) {
            *o = xi * r * wi;
        }
    }
}

fn rms_norm_in_place(x: &mut [f32], w: &[f32], eps: f32) {
    let r = rms_scale(x, eps);
    for (xi, wi) in x.iter_mut().zip(w) {
        *xi *= r * wi;
    }
}

fn rms_scale(x: &[f32], eps: f32) -> f32 {
    1.0 / (kernels::dot_f32(x, x) / x.len() as f32 + eps).sqrt()
}

/// Rotate the two halves of a head (GPT-NeoX style, as llama.cpp's and
/// candle's Qwen3).
fn rope(x: &mut [f32], table: &(Vec<f32>, Vec<f32>), pos: usize, dh: usize) {
    let half = dh / 2;
    let (cos, sin) = (&table.0[pos * half..(pos + 1) * half], &table.1[pos * half..(pos + 1) * half]);
    for i in 0..half {
        let (a, b) = (x[i], x[i + half]);
        x[i] = a * cos[i] - b * sin[i];
        x[i + half] = a * sin[i] + b * cos[i];
    }
}

/// Rotate adjacent pairs of a head (llama.cpp's "normal" RoPE for `llama`,
/// candle's `rope_i`): pair `i` is `(x[2i], x[2i+1])` at frequency `i`.
fn rope_pairs(x: &mut [f32], table: &(Vec<f32>, Vec<f32>), pos: usize, dh: usize) {
    let half = dh / 2;
    let (cos, sin) = (&table.0[pos * half..(pos + 1) * half], &table.1[pos * half..(pos + 1) * half]);
    for i in 0..half {
        let (a, b) = (x[2 * i], x[2 * i + 1]);
        x[2 * i] = a * cos[i] - b * sin[i];
        x[2 * i + 1] = a * sin[i] + b * cos[i];
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

impl super::Engine for NativeModel {
    fn reset(&mut self) -> Result<(), EngineError> {
        // Positions are overwritten before they are read; nothing to clear.
        Ok(())
    }

    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, EngineError> {
        self.forward(tokens, offset)?;
        Ok(kernels::argmax(&self.s.logits) as u32)
    }

    fn weights(&self) -> Vec<&[u64]> {
        self.matrices().into_iter().map(|m| m.data.words()).collect()
    }
}
