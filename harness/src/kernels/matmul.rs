//! Quantized matrices and the parallel matrix × activations product.

use std::ops::Range;

use super::{dot_q4_0, dot_q8_0, BlockQ8, DotFn, Pool, BLOCK};

/// Storage type of a [`QMatrix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightType {
    /// ggml Q4_0 (18 bytes per 32 weights).
    Q4_0,
    /// ggml Q8_0 (34 bytes per 32 weights).
    Q8_0,
}

impl WeightType {
    /// Bytes per block of 32 weights.
    pub fn block_bytes(self) -> usize {
        match self {
            WeightType::Q4_0 => 18,
            WeightType::Q8_0 => 34,
        }
    }

    fn dot(self) -> DotFn {
        match self {
            WeightType::Q4_0 => dot_q4_0,
            WeightType::Q8_0 => dot_q8_0,
        }
    }
}

/// Rows interleaved per group of a Q4_0 matrix.
pub const GROUP: usize = 8;

/// A quantized matrix in ggml's blocks.
///
/// Q8_0 matrices keep ggml's row-major layout. Q4_0 matrices are repacked at
/// load, in place, into groups of [`GROUP`] rows (a tail of `rows % 8` rows
/// stays row-major): for each block column, the eight f16 scales (16 bytes),
/// then four 32-byte runs where run `m` holds bytes `4m..4m+4` of each row's
/// 16 nibble bytes, row after row. One 32-byte load then feeds all eight
/// rows (see `dot_q4_0x8`). The size is unchanged: 8 × 18 = 16 + 128.
#[derive(Debug, Clone)]
pub struct QMatrix {
    /// Storage type.
    pub kind: WeightType,
    /// Output features.
    pub rows: usize,
    /// Input features (a multiple of 32).
    pub cols: usize,
    /// `rows * cols / 32` blocks.
    pub data: Vec<u8>,
}

impl QMatrix {
    /// Take row-major ggml blocks (as stored in GGUF); checks the size and
    /// repacks Q4_0 in place.
    pub fn new(kind: WeightType, rows: usize, cols: usize, mut data: Vec<u8>) -> Result<QMatrix, String> {
        if !cols.is_multiple_of(BLOCK) {
            return Err(format!("{cols} columns is not a multiple of {BLOCK}"));
        }
        let want = rows
            .checked_mul(cols / BLOCK)
            .and_then(|b| b.checked_mul(kind.block_bytes()))
            .ok_or_else(|| format!("{rows}x{cols} {kind:?} is larger than memory can hold"))?;
        if data.len() != want {
            return Err(format!("{rows}x{cols} {kind:?} needs {want} bytes, got {}", data.len()));
        }
        let m = QMatrix { kind, rows, cols, data: Vec::new() };
        let rb = m.row_bytes();
        let mut plain = vec![0u8; GROUP * rb];
        for g in 0..m.groups() {
            let region = &mut data[g * GROUP * rb..(g + 1) * GROUP * rb];
            plain.copy_from_slice(region);
            for b in 0..cols / BLOCK {
                let dst = &mut region[b * 144..(b + 1) * 144];
                for lane in 0..GROUP {
                    let src = &plain[lane * rb + b * 18..lane * rb + (b + 1) * 18];
                    dst[2 * lane..2 * lane + 2].copy_from_slice(&src[..2]);
                    for run in 0..4 {
                        let at = 16 + 32 * run + 4 * lane;
                        dst[at..at + 4].copy_from_slice(&src[2 + 4 * run..6 + 4 * run]);
                    }
                }
            }
        }
        Ok(QMatrix { data, ..m })
    }

    fn row_bytes(&self) -> usize {
        self.cols / BLOCK * self.kind.block_bytes()
    }

    /// Interleaved groups (Q4_0 only).
    fn groups(&self) -> usize {
        match self.kind {
            WeightType::Q4_0 => self.rows / GROUP,
            WeightType::Q8_0 => 0,
        }
    }

    /// Units of parallel work: groups, then single tail rows.
    fn items(&self) -> usize {
        self.groups() + self.rows - self.groups() * GROUP
    }

    fn group(&self, g: usize) -> &[u8] {
        let n = GROUP * self.row_bytes();
        &self.data[g * n..(g + 1) * n]
    }

    /// A row-major row (outside the interleaved groups).
    fn plain_row(&self, r: usize) -> &[u8] {
        assert!(r >= self.groups() * GROUP, "row {r} is interleaved");
        let n = self.row_bytes();
        &self.data[r * n..(r + 1) * n]
    }

    /// Row `r` as f32 (an embedding lookup).
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        assert_eq!(out.len(), self.cols, "dequantize_row: length mismatch");
        let half = |b: &[u8], at: usize| super::f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]));
        if r < self.groups() * GROUP {
            let lane = r % GROUP;
            for (blk, o) in self.group(r / GROUP).chunks_exact(144).zip(out.chunks_exact_mut(BLOCK)) {
                let d = half(blk, 2 * lane);
                for run in 0..4 {
                    for j in 0..4 {
                        let q = blk[16 + 32 * run + 4 * lane + j];
                        o[4 * run + j] = ((q & 0x0f) as i32 - 8) as f32 * d;
                        o[16 + 4 * run + j] = ((q >> 4) as i32 - 8) as f32 * d;
                    }
                }
            }
            return;
        }
        let bb = self.kind.block_bytes();
        for (blk, o) in self.plain_row(r).chunks_exact(bb).zip(out.chunks_exact_mut(BLOCK)) {
            let d = half(blk, 0);
            match self.kind {
                WeightType::Q4_0 => {
                    for j in 0..BLOCK / 2 {
                        o[j] = ((blk[2 + j] & 0x0f) as i32 - 8) as f32 * d;
                        o[j + BLOCK / 2] = ((blk[2 + j] >> 4) as i32 - 8) as f32 * d;
                    }
                }
                WeightType::Q8_0 => {
                    for (v, q) in o.iter_mut().zip(&blk[2..]) {
                        *v = *q as i8 as f32 * d;
                    }
                }
            }
        }
    }
}

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
/// every row `r` and each of the `tokens` activation vectors in `x` (each
/// `w.cols / 32` blocks). All matrices share the column count. Rows are
/// split across the pool's threads, so several small matrices (Q, K, V)
/// make one parallel region.
pub fn matmul<const N: usize>(pool: &Pool, ws: [&QMatrix; N], outs: [&mut [f32]; N], x: &[BlockQ8], tokens: usize) {
    let nb = x.len() / tokens.max(1);
    for (w, out) in ws.iter().zip(outs.iter()) {
        assert_eq!(w.cols / BLOCK, nb, "matmul: columns do not match the activations");
        assert_eq!(out.len(), w.rows * tokens, "matmul: output size");
    }
    let outs = outs.map(|o| Out(o.as_mut_ptr(), o.len()));
    let n = pool.threads();
    pool.run(&|t| {
        for (w, out) in ws.iter().zip(&outs) {
            let (groups, dot) = (w.groups(), w.kind.dot());
            let mut lanes = [0f32; GROUP];
            for item in span(w.items(), t, n) {
                if item < groups {
                    let g = w.group(item);
                    for (b, xb) in x.chunks_exact(nb).enumerate() {
                        super::dot_q4_0x8(g, xb, &mut lanes);
                        for (lane, v) in lanes.iter().enumerate() {
                            out.set(b * w.rows + item * GROUP + lane, *v);
                        }
                    }
                } else {
                    let r = groups * GROUP + item - groups;
                    let row = w.plain_row(r);
                    for (b, xb) in x.chunks_exact(nb).enumerate() {
                        out.set(b * w.rows + r, dot(row, xb));
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
