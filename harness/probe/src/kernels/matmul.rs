//! The parallel matrix × activations product.

use std::ops::Range;

use super::qmatrix::{RowKernel, GROUP};
use super::{BlockQ8, Pool, QMatrix, WeightType, BLOCK};

/// The share of `0..total` that thread `t` of `n` takes: contiguous and
/// balanced to within one item.
pub fn span(total: usize, t: usize, n: usize) -> Range<usize> {
    let (q, r) = (total / n, total % n);
    let start = t * q + t.min(r);
    start..start + q + usize::from(t < r)
}

/// A shared output buffer that threads write at disjoint indices.
struct Out(*mut f32, usize);
// SAFETY: threads write disjoint indices (each owns a row span), and the
// buffer outlives the `Pool::run` call that uses it.
unsafe impl Sync for Out {}

impl Out {
    fn ptr(&self) -> *mut f32 {
        self.0
    }

    fn set(&self, i: usize, v: f32) {
        assert!(i < self.1, "output index out of range");
        // SAFETY: in bounds (checked), and no other thread writes index `i`.
        unsafe { self.0.add(i).write(v) }
    }
}

/// For each `(w, out)` pair: `out[b * w.rows + r] = w.row(r) · x[b]` for
/// every row `r` and each of the `tokens` activation vectors. The
/// activations come twice: as f32 (`x`, `tokens × cols` values, which float
/// weights read) and as Q8 blocks (`xq`, which quantized weights read). All
/// matrices share the column count. Rows are split across the pool's
/// threads, so several small matrices (Q, K, V) make one parallel region.
pub fn matmul<const N: usize>(
    pool: &Pool,
    ws: [&QMatrix; N],
    outs: [&mut [f32]; N],
    x: &[f32],
    xq: &[BlockQ8],
    tokens: usize,
) {
    let tokens = tokens.max(1);
    let (cols, nb) = (x.len() / tokens, xq.len() / tokens);
    for (w, out) in ws.iter().zip(outs.iter()) {
        assert_eq!(w.cols, cols, "matmul: columns do not match the activations");
        assert_eq!(w.cols / BLOCK, nb, "matmul: columns do not match the quantized activations");
        assert_eq!(out.len(), w.rows * tokens, "matmul: output size");
    }
    let outs = outs.map(|o| Out(o.as_mut_ptr(), o.len()));
    let n = pool.threads();
    // Prompt chunks run whole tiles of tokens through the prefill kernel,
    // the remaining tokens (and decode's one) through the per-token one.
    let tile = super::tile_tokens();
    let tiled = if tile > 1 { tokens / tile * tile } else { 0 };
    pool.run(&|t| {
        for (w, out) in ws.iter().zip(&outs) {
            let (groups, kernel) = (w.groups(), w.kind.row_kernel());
            let min = w.kind == WeightType::Q4_1;
            let x8: fn(&[u8], &[BlockQ8], &mut [f32; GROUP]) = if min { super::dot_q4_1x8 } else { super::dot_q4_0x8 };
            let mut lanes = [0f32; GROUP];
            let mut tiles = [[0f32; GROUP]; 8];
            for item in span(w.items(), t, n) {
                if item < groups {
                    let g = w.group(item);
                    for t0 in (0..tiled).step_by(tile.max(1)) {
                        super::dot_q4x8_tile(min, g, &xq[t0 * nb..(t0 + tile) * nb], nb, &mut tiles[..tile]);
                        for (j, lanes) in tiles[..tile].iter().enumerate() {
                            for (lane, v) in lanes.iter().enumerate() {
                                out.set((t0 + j) * w.rows + item * GROUP + lane, *v);
                            }
                        }
                    }
                    for (b, xb) in xq.chunks_exact(nb).enumerate().skip(tiled) {
                        x8(g, xb, &mut lanes);
                        for (lane, v) in lanes.iter().enumerate() {
                            out.set(b * w.rows + item * GROUP + lane, *v);
                        }
                    }
                    continue;
                }
                let r = groups * GROUP + item - groups;
                let row = w.plain_row(r);
                match kernel {
                    RowKernel::Q8(dot) => {
                        for (b, xb) in xq.chunks_exact(nb).enumerate() {
                            out.set(b * w.rows + r, dot(row, xb));
                        }
                    }
                    RowKernel::F(dot) => {
                        for (b, xb) in x.chunks_exact(cols).enumerate() {
                            out.set(b * w.rows + r, dot(row, xb));
                        }
                    }
                }
            }
        }
    });
}

/// Split `data` into chunks of `len` values and call `f(thread, index,
/// chunk)` for every chunk, the chunks shared out over the pool's threads
/// in contiguous spans (attention heads, for instance).
pub fn for_each_chunk(pool: &Pool, data: &mut [f32], len: usize, f: &(dyn Fn(usize, usize, &mut [f32]) + Sync)) {
    assert!(len > 0 && data.len().is_multiple_of(len), "for_each_chunk: {} values in chunks of {len}", data.len());
    let count = data.len() / len;
    let base = Out(data.as_mut_ptr(), data.len());
    let n = pool.threads();
    pool.run(&|t| {
        for i in span(count, t, n) {
            // SAFETY: chunk `i` lies inside `data` (i < count), and the spans
            // of different threads are disjoint, so no two `&mut` alias; `data`
            // stays borrowed until `run` returns.
            let chunk = unsafe { std::slice::from_raw_parts_mut(base.ptr().add(i * len), len) };
            f(t, i, chunk);
        }
    });
}

/// Index of the largest value (the first of equals); 0 for an empty slice.
/// Greedy sampling runs this over the whole vocabulary every token, so the
/// maximum is found with SIMD first and then its first position.
pub fn argmax(xs: &[f32]) -> usize {
    match super::isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 detected by `isa()`.
        super::Isa::Avx2 => unsafe { super::x86::position(xs, super::x86::max(xs)) }.unwrap_or(0),
        _ => {
            let max = xs.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b));
            xs.iter().position(|v| *v == max).unwrap_or(0)
        }
    }
}
