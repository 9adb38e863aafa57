//! Decode and prefill attention over an f16 KV cache, one KV head's query
//! heads (grouped-query attention) in turn while that head's rows sit in L2.
//! On AVX2 the key and value rows are converted inside the dot products and
//! the weighted sums, each row read once, in order; a first version that
//! converted each row to f32 and called `axpy` per query head spent 36% of
//! a 1024-token run in attention.

#[cfg(target_arch = "x86_64")]
use super::x86;
#[cfg(target_arch = "x86_64")]
use super::Isa;
use super::{axpy, dot_f32, f16_to_f32_slice, isa, softmax};

/// One KV head's rows of a layer's cache: row `p` starts at `offset + p * stride`.
#[derive(Debug, Clone, Copy)]
pub struct KvRows<'a> {
    /// The whole cache of one layer (keys or values), f16 bits.
    pub data: &'a [u16],
    /// Values between consecutive positions (`head_dim` in the native
    /// engine's head-major cache).
    pub stride: usize,
    /// Where position 0 of this KV head starts.
    pub offset: usize,
}

impl KvRows<'_> {
    /// Whether rows `0..len`, `dh` values each, lie inside `data`. Checked
    /// arithmetic: with a huge `stride` the plain expression wraps around
    /// and a check on it passes.
    fn covers(&self, len: usize, dh: usize) -> bool {
        len.checked_sub(1)
            .and_then(|last| last.checked_mul(self.stride))
            .and_then(|x| x.checked_add(self.offset))
            .and_then(|x| x.checked_add(dh))
            .is_some_and(|end| end <= self.data.len())
    }

    fn row(&self, pos: usize, dh: usize) -> &[u16] {
        let at = pos * self.stride + self.offset;
        &self.data[at..at + dh]
    }
}

/// Attention of `q` (the query heads of one KV head, `group * dh` values)
/// over positions `0..len`: `out` (`group * dh`) gets each head's softmax-
/// weighted sum of value rows. `scores` holds at least `group * len` values
/// and `row` at least `dh` (scratch for the portable path).
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
pub fn attend(
    q: &[f32],
    k: KvRows<'_>,
    v: KvRows<'_>,
    len: usize,
    scale: f32,
    scores: &mut [f32],
    row: &mut [f32],
    out: &mut [f32],
) {
    let dh = row.len();
    let group = q.len() / dh.max(1);
    assert!(
        dh > 0 && q.len().is_multiple_of(dh) && out.len() == q.len() && scores.len() >= group * len && len > 0,
        "attend: sizes"
    );
    for kv in [&k, &v] {
        assert!(kv.covers(len, dh), "attend: rows beyond the cache");
    }
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2/FMA/F16C detected by `isa()`; `covers` checked that
        // every row `offset + p * stride + dh` with `p < len` lies inside
        // `data`, and the sizes above give each head `dh` query and output
        // values and `len` scores, which is what the kernels require;
        // `attention_512` is set only where AVX-512 F was detected (`select`).
        Isa::Avx2 if dh.is_multiple_of(8) => unsafe {
            grouped(super::x8_choice().attention_512, q, k, v, len, scale, scores, out, dh)
        },
        _ => {
            let scores = &mut scores[..len];
            for (qh, oh) in q.chunks_exact(dh).zip(out.chunks_exact_mut(dh)) {
                for (p, s) in scores.iter_mut().enumerate() {
                    f16_to_f32_slice(k.row(p, dh), row);
                    *s = dot_f32(qh, row) * scale;
                }
                softmax(scores);
                oh.fill(0.0);
                for (p, s) in scores.iter().enumerate() {
                    f16_to_f32_slice(v.row(p, dh), row);
                    axpy(*s, row, oh);
                }
            }
        }
    }
}

/// The SIMD path of [`attend`]: up to four heads share each key row's
/// conversion and two (four on 512-bit vectors) each value row's; `wide`
/// takes the 512-bit kernels where `dh` is a multiple of 16.
///
/// # Safety
/// AVX2, FMA and F16C (and AVX-512 F when `wide`); `dh` a multiple of 8,
/// `q` and `out` `group * dh` values, `scores` at least `group * len`, and
/// every row `offset + p * stride + dh` with `p < len` inside `k.data` and `v.data`.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)] // `attend`'s arguments, checked there
pub(super) unsafe fn grouped(
    wide: bool,
    q: &[f32],
    k: KvRows<'_>,
    v: KvRows<'_>,
    len: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
    dh: usize,
) {
    use super::gqa::{w256, w512};
    let wide = wide && dh.is_multiple_of(16);
    let group = q.len() / dh;
    let (data, stride, offset) = (k.data, k.stride, k.offset);
    // SAFETY: the caller's guarantees are each kernel's, head by head.
    unsafe {
        let mut h = 0;
        while h < group {
            let n = (group - h).min(4);
            let (qh, sh) = (&q[h * dh..(h + n) * dh], &mut scores[h * len..(h + n) * len]);
            match (wide, n) {
                (true, 4) => w512::scores::<4, 4>(qh, dh, data, stride, offset, scale, len, sh),
                (true, 3) => w512::scores::<3, 4>(qh, dh, data, stride, offset, scale, len, sh),
                (true, 2) => w512::scores::<2, 4>(qh, dh, data, stride, offset, scale, len, sh),
                (true, _) => w512::scores::<1, 4>(qh, dh, data, stride, offset, scale, len, sh),
                (false, 4) => w256::scores::<4, 2>(qh, dh, data, stride, offset, scale, len, sh),
                (false, 3) => w256::scores::<3, 2>(qh, dh, data, stride, offset, scale, len, sh),
                (false, 2) => w256::scores::<2, 4>(qh, dh, data, stride, offset, scale, len, sh),
                (false, _) => w256::scores::<1, 4>(qh, dh, data, stride, offset, scale, len, sh),
            }
            h += n;
        }
        for sh in scores[..group * len].chunks_exact_mut(len) {
            x86::softmax(sh);
        }
        let (data, stride, offset) = (v.data, v.stride, v.offset);
        let mut h = 0;
        while h < group {
            let n = (group - h).min(if wide { 4 } else { 2 });
            let (sh, oh) = (&scores[h * len..(h + n) * len], &mut out[h * dh..(h + n) * dh]);
            match (wide, n) {
                (true, 4) => w512::weighted_sum::<4>(sh, len, data, stride, offset, oh),
                (true, 3) => w512::weighted_sum::<3>(sh, len, data, stride, offset, oh),
                (true, 2) => w512::weighted_sum::<2>(sh, len, data, stride, offset, oh),
                (true, _) => w512::weighted_sum::<1>(sh, len, data, stride, offset, oh),
                (false, 2) => w256::weighted_sum::<2>(sh, len, data, stride, offset, oh),
                (false, _) => w256::weighted_sum::<1>(sh, len, data, stride, offset, oh),
            }
            h += n;
        }
    }
}
