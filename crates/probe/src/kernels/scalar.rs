//! Portable kernels: the reference the SIMD kernels are tested against, and
//! the path on CPUs without them.

use super::{f16_to_f32, layout, BlockQ8, BLOCK};

pub(super) fn dot_q4_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    let mut acc = 0f32;
    for (blk, y) in row.chunks_exact(18).zip(x) {
        let d = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
        let (ylo, yhi) = y.qs.split_at(BLOCK / 2);
        let mut sum = 0i32;
        for ((q, a), b) in blk[2..].iter().zip(ylo).zip(yhi) {
            sum += ((q & 0x0f) as i32 - 8) * *a as i32 + ((q >> 4) as i32 - 8) * *b as i32;
        }
        acc += sum as f32 * d * y.d;
    }
    acc
}

/// Eight interleaved 4-bit rows in layout `L` (see [`super::layout`]).
pub(super) fn dot_q4x8<const L: u8>(group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    let at = layout::nibbles_at(L);
    *out = [0.0; 8];
    for (b, y) in x.iter().enumerate() {
        let blk = &group[layout::col_at(L, b)..];
        for (lane, o) in out.iter_mut().enumerate() {
            let (d, m) = if L == layout::Q4K {
                layout::q4_k_factors(group, b, lane)
            } else {
                let s = &group[layout::scales_at(L, b)..];
                (half(s, 2 * lane), if layout::has_min(L) { half(s, 16 + 2 * lane) } else { 0.0 })
            };
            let mut sum = if layout::has_min(L) { 0 } else { -8 * y.sum };
            for run in 0..4 {
                for j in 0..4 {
                    let q = blk[at + 32 * run + 4 * lane + j];
                    sum +=
                        (q & 0x0f) as i32 * y.qs[4 * run + j] as i32 + (q >> 4) as i32 * y.qs[16 + 4 * run + j] as i32;
                }
            }
            *o += sum as f32 * d * y.d;
            if layout::has_min(L) {
                *o += m * y.d * y.sum as f32;
            }
        }
    }
}

pub(super) fn dot_q4_1(row: &[u8], x: &[BlockQ8]) -> f32 {
    let mut acc = 0f32;
    for (blk, y) in row.chunks_exact(20).zip(x) {
        let (d, m) = (half(blk, 0), half(blk, 2));
        let (ylo, yhi) = y.qs.split_at(BLOCK / 2);
        let mut sum = 0i32;
        for ((q, a), b) in blk[4..].iter().zip(ylo).zip(yhi) {
            sum += (q & 0x0f) as i32 * *a as i32 + (q >> 4) as i32 * *b as i32;
        }
        acc += sum as f32 * d * y.d + m * y.d * y.sum as f32;
    }
    acc
}

pub(super) fn dot_f16(row: &[u8], x: &[f32]) -> f32 {
    dot_with(row.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))), x)
}

pub(super) fn dot_f32_bytes(row: &[u8], x: &[f32]) -> f32 {
    dot_with(row.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])), x)
}

/// `w · x` with eight partial sums (no allocation: decode allocates nothing).
fn dot_with(w: impl Iterator<Item = f32>, x: &[f32]) -> f32 {
    let mut s = [0f32; 8];
    for (i, (a, b)) in w.zip(x).enumerate() {
        s[i % 8] += a * b;
    }
    s.iter().sum()
}

fn half(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

pub(super) fn dot_q8_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    let mut acc = 0f32;
    for (blk, y) in row.chunks_exact(34).zip(x) {
        let d = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
        let sum: i32 = blk[2..].iter().zip(&y.qs).map(|(a, b)| *a as i8 as i32 * *b as i32).sum();
        acc += sum as f32 * d * y.d;
    }
    acc
}

pub(super) fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    // Eight partial sums let the compiler vectorize without reassociating.
    let mut s = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            s[i] += x[i] * y[i];
        }
    }
    s.iter().sum::<f32>() + ra.iter().zip(rb).map(|(x, y)| x * y).sum::<f32>()
}

pub(super) fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

pub(super) fn f16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f16_to_f32(*s);
    }
}

pub(super) fn softmax(xs: &mut [f32]) {
    let max = xs.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
    let mut sum = 0.0;
    for v in xs.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in xs.iter_mut() {
        *v /= sum;
    }
}

pub(super) fn stream_sum(xs: &[u64]) -> u64 {
    // Eight independent accumulators let the compiler vectorise the loop.
    let mut acc = [0u64; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for block in chunks {
        for i in 0..8 {
            acc[i] = acc[i].wrapping_add(block[i]);
        }
    }
    acc.iter().chain(rest).fold(0, |a, b| a.wrapping_add(*b))
}

pub(super) fn silu_mul(g: &mut [f32], u: &[f32]) {
    for (a, b) in g.iter_mut().zip(u) {
        *a = *a / (1.0 + (-*a).exp()) * b;
    }
}

pub(super) fn quantize_q8(x: &[f32], out: &mut [BlockQ8]) {
    for (xs, b) in x.chunks_exact(BLOCK).zip(out.iter_mut()) {
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        b.d = d;
        for (q, v) in b.qs.iter_mut().zip(xs) {
            *q = (v * id).round_ties_even() as i8;
        }
        b.sum = b.qs.iter().map(|q| *q as i32).sum();
    }
}
