//! AVX2 + FMA + F16C kernels (x86-64). The Q4_0 × Q8 block product follows
//! llama.cpp's `ggml_vec_dot_q4_0_q8_0`: unpack nibbles to bytes, subtract 8,
//! and multiply signed bytes with `maddubs` after moving the sign of one
//! operand onto the other. Two independent accumulators hide FMA latency.
//!
//! Callers must have checked that the CPU supports AVX2, FMA and F16C and
//! that `row.len() == x.len() * block_bytes`.

use std::arch::x86_64::*;

use super::{BlockQ8, BLOCK};

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// The horizontal sums of four vectors through one shuffle tree (three
/// `hadd`s and one add), where four [`hsum`]s take four adds and four
/// shuffles each.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn hsums4(a: [__m256; 4]) -> [f32; 4] {
    let h = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    let s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    let mut out = [0f32; 4];
    // SAFETY: `out` holds four f32.
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), s) };
    out
}

/// The horizontal sums of `R` vectors, four (then two, then one) through
/// one shuffle tree.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn hsums<const R: usize>(a: [__m256; R]) -> [f32; R] {
    let mut out = [0f32; R];
    let mut i = 0;
    while i + 4 <= R {
        out[i..i + 4].copy_from_slice(&hsums4([a[i], a[i + 1], a[i + 2], a[i + 3]]));
        i += 4;
    }
    if i + 2 <= R {
        out[i..i + 2].copy_from_slice(&hsums2([a[i], a[i + 1]]));
        i += 2;
    }
    if i < R {
        out[i] = hsum(a[i]);
    }
    out
}

/// The horizontal sums of two vectors through one shuffle tree.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn hsums2(a: [__m256; 2]) -> [f32; 2] {
    let h = _mm256_hadd_ps(a[0], a[1]);
    let s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    let s = _mm_hadd_ps(s, s);
    [_mm_cvtss_f32(s), _mm_cvtss_f32(_mm_movehdup_ps(s))]
}

/// The signed-byte dot product of 32 pairs as 8 i32 lanes converted to f32.
macro_rules! mul_sum_i8 {
    ($qx:expr, $qy:expr, $ones:expr) => {{
        let ax = _mm256_sign_epi8($qx, $qx);
        let sy = _mm256_sign_epi8($qy, $qx);
        _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), $ones))
    }};
}

/// f16 bits at `p` to f32 through F16C.
macro_rules! half_at {
    ($p:expr) => {{
        let bits = ($p as *const u16).read_unaligned();
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
    }};
}

/// One Q4_0 block times one activation block, accumulated into `$acc`.
macro_rules! q4_0_block {
    ($p:expr, $y:expr, $acc:ident, $lo:ident, $eight:ident, $ones:ident) => {{
        let b = $p;
        let d = _mm256_set1_ps(half_at!(b) * $y.d);
        let packed = _mm_loadu_si128(b.add(2) as *const __m128i);
        let bytes = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
        let qx = _mm256_sub_epi8(_mm256_and_si256(bytes, $lo), $eight);
        let qy = _mm256_loadu_si256($y.qs.as_ptr() as *const __m256i);
        $acc = _mm256_fmadd_ps(d, mul_sum_i8!(qx, qy, $ones), $acc);
    }};
}

/// One Q8_0 block times one activation block, accumulated into `$acc`.
macro_rules! q8_0_block {
    ($p:expr, $y:expr, $acc:ident, $ones:ident) => {{
        let b = $p;
        let d = _mm256_set1_ps(half_at!(b) * $y.d);
        let qx = _mm256_loadu_si256(b.add(2) as *const __m256i);
        let qy = _mm256_loadu_si256($y.qs.as_ptr() as *const __m256i);
        $acc = _mm256_fmadd_ps(d, mul_sum_i8!(qx, qy, $ones), $acc);
    }};
}

// Two blocks per iteration into two named accumulators: indexing an array of
// accumulators by `i & 1` made the compiler keep them in memory, and the
// store-to-load dependency took a third of the kernel's time.

/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `row.len() == x.len() * 18`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_q4_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `row.len() == x.len() * 18`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let lo = _mm256_set1_epi8(0x0f);
        let eight = _mm256_set1_epi8(8);
        let ones = _mm256_set1_epi16(1);
        let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let p = row.as_ptr();
        let pairs = x.len() / 2;
        // SAFETY (caller): every block index below is < x.len(), inside `row`.
        for i in 0..pairs {
            q4_0_block!(p.add(2 * i * 18), x.get_unchecked(2 * i), acc0, lo, eight, ones);
            q4_0_block!(p.add((2 * i + 1) * 18), x.get_unchecked(2 * i + 1), acc1, lo, eight, ones);
        }
        if x.len() % 2 == 1 {
            let i = x.len() - 1;
            q4_0_block!(p.add(i * 18), x.get_unchecked(i), acc0, lo, eight, ones);
        }
        hsum(_mm256_add_ps(acc0, acc1))
    }
}

/// An f16 weight row times f32 activations: eight halves per F16C convert.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `row.len() == 2 * x.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_f16(row: &[u8], x: &[f32]) -> f32 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `row.len() == 2 * x.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let (n, p, q) = (x.len(), row.as_ptr(), x.as_ptr());
        let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 16 <= n {
            let w0 = _mm256_cvtph_ps(_mm_loadu_si128(p.add(2 * i) as *const __m128i));
            let w1 = _mm256_cvtph_ps(_mm_loadu_si128(p.add(2 * i + 16) as *const __m128i));
            acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(q.add(i)), acc0);
            acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(q.add(i + 8)), acc1);
            i += 16;
        }
        let mut s = hsum(_mm256_add_ps(acc0, acc1));
        while i < n {
            s += half_at!(p.add(2 * i)) * x[i];
            i += 1;
        }
        s
    }
}

/// An f32 weight row (bytes, unaligned) times f32 activations.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `row.len() == 4 * x.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_f32_bytes(row: &[u8], x: &[f32]) -> f32 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `row.len() == 4 * x.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let (n, p, q) = (x.len(), row.as_ptr() as *const f32, x.as_ptr());
        let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 16 <= n {
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(i)), _mm256_loadu_ps(q.add(i)), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(i + 8)), _mm256_loadu_ps(q.add(i + 8)), acc1);
            i += 16;
        }
        let mut s = hsum(_mm256_add_ps(acc0, acc1));
        while i < n {
            s += p.add(i).read_unaligned() * x[i];
            i += 1;
        }
        s
    }
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `row.len() == x.len() * 34`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_q8_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `row.len() == x.len() * 34`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        const BB: usize = 2 + BLOCK;
        let ones = _mm256_set1_epi16(1);
        let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let p = row.as_ptr();
        let pairs = x.len() / 2;
        // SAFETY (caller): every block index below is < x.len(), inside `row`.
        for i in 0..pairs {
            q8_0_block!(p.add(2 * i * BB), x.get_unchecked(2 * i), acc0, ones);
            q8_0_block!(p.add((2 * i + 1) * BB), x.get_unchecked(2 * i + 1), acc1, ones);
        }
        if x.len() % 2 == 1 {
            let i = x.len() - 1;
            q8_0_block!(p.add(i * BB), x.get_unchecked(i), acc0, ones);
        }
        hsum(_mm256_add_ps(acc0, acc1))
    }
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `a.len() == b.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `a.len() == b.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let n = a.len();
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (k, acc) in acc.iter_mut().enumerate() {
                let va = _mm256_loadu_ps(a.as_ptr().add(i + 8 * k));
                let vb = _mm256_loadu_ps(b.as_ptr().add(i + 8 * k));
                *acc = _mm256_fmadd_ps(va, vb, *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(a.as_ptr().add(i)), _mm256_loadu_ps(b.as_ptr().add(i)), acc[0]);
            i += 8;
        }
        let mut s = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
        while i < n {
            s += a[i] * b[i];
            i += 1;
        }
        s
    }
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `x.len() == y.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `x.len() == y.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let n = x.len();
        let va = _mm256_set1_ps(a);
        let mut i = 0;
        while i + 8 <= n {
            let py = y.as_mut_ptr().add(i);
            _mm256_storeu_ps(py, _mm256_fmadd_ps(va, _mm256_loadu_ps(x.as_ptr().add(i)), _mm256_loadu_ps(py)));
            i += 8;
        }
        while i < n {
            y[i] += a * x[i];
            i += 1;
        }
    }
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `src.len() == dst.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `src.len() == dst.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let n = src.len();
        let mut i = 0;
        while i + 8 <= n {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            i += 8;
        }
        for (d, s) in dst[i..n].iter_mut().zip(&src[i..n]) {
            *d = super::f16_to_f32(*s);
        }
    }
}

/// e^x for eight lanes (Cephes' expf: x = n ln 2 + r, a degree-5 polynomial
/// in r, 2^n built in the exponent bits); relative error about 1e-7 on
/// [-87, 88]. Inputs below -87 give 0 through the clamp's tiny result.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn exp8(x: __m256) -> __m256 {
    let x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.376_26)), _mm256_set1_ps(-87.336_55));
    let fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)), _MM_FROUND_TO_NEAREST_INT);
    let r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693_359_4), x);
    let r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.121_944_4e-4), r);
    let mut y = _mm256_set1_ps(1.987_569_1e-4);
    for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5] {
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(c));
    }
    let y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0));
    let pow2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    _mm256_mul_ps(y, _mm256_castsi256_ps(pow2))
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn softmax(xs: &mut [f32]) {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees; every load and store below is inside its slice.
    unsafe {
        let n = xs.len();
        // The maximum in four lanes of eight: a scalar fold is one
        // dependent `maxss` an element, a serial chain over every score.
        let mut m = [_mm256_set1_ps(f32::NEG_INFINITY); 4];
        let mut i = 0;
        while i + 32 <= n {
            let p = xs.as_ptr().add(i);
            for (k, m) in m.iter_mut().enumerate() {
                *m = _mm256_max_ps(*m, _mm256_loadu_ps(p.add(8 * k)));
            }
            i += 32;
        }
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
        let max = xs[i..].iter().chain(&lanes).fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        let vmax = _mm256_set1_ps(max);
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= n {
            let p = xs.as_mut_ptr().add(i);
            let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(p), vmax));
            _mm256_storeu_ps(p, e);
            acc = _mm256_add_ps(acc, e);
            i += 8;
        }
        let mut sum = hsum(acc);
        for v in &mut xs[i..] {
            *v = (*v - max).exp();
            sum += *v;
        }
        let inv = _mm256_set1_ps(1.0 / sum);
        let mut i = 0;
        while i + 8 <= n {
            let p = xs.as_mut_ptr().add(i);
            _mm256_storeu_ps(p, _mm256_mul_ps(_mm256_loadu_ps(p), inv));
            i += 8;
        }
        for v in &mut xs[i..] {
            *v /= sum;
        }
    }
}

/// Wrapping sum of `xs` as four 64-bit lanes, 128 bytes per iteration: a
/// read that the memory system, not the core, limits.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn stream_sum(xs: &[u64]) -> u64 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees; every load and store below is inside its slice.
    unsafe {
        let mut acc = [_mm256_setzero_si256(); 4];
        let chunks = xs.chunks_exact(16);
        let rest = chunks.remainder();
        for c in chunks {
            let p = c.as_ptr() as *const __m256i;
            for (k, a) in acc.iter_mut().enumerate() {
                *a = _mm256_add_epi64(*a, _mm256_loadu_si256(p.add(k)));
            }
        }
        let v = _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
        let mut lanes = [0u64; 4];
        _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, v);
        lanes.iter().chain(rest).fold(0, |a, b| a.wrapping_add(*b))
    }
}

/// Largest value of `xs` (NaN-free input; `-inf` for an empty slice).
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn max(xs: &[f32]) -> f32 {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees; every load and store below is inside its slice.
    unsafe {
        let mut m = [_mm256_set1_ps(f32::NEG_INFINITY); 4];
        let chunks = xs.chunks_exact(32);
        let rest = chunks.remainder();
        for c in chunks {
            for (k, mk) in m.iter_mut().enumerate() {
                *mk = _mm256_max_ps(*mk, _mm256_loadu_ps(c.as_ptr().add(8 * k)));
            }
        }
        let v = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        lanes.iter().chain(rest).fold(f32::NEG_INFINITY, |a, b| a.max(*b))
    }
}

/// Index of the first element equal to `v`.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn position(xs: &[f32], v: f32) -> Option<usize> {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees; every load and store below is inside its slice.
    unsafe {
        let vv = _mm256_set1_ps(v);
        let mut i = 0;
        while i + 8 <= xs.len() {
            let mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(xs.as_ptr().add(i)), vv, _CMP_EQ_OQ));
            if mask != 0 {
                return Some(i + mask.trailing_zeros() as usize);
            }
            i += 8;
        }
        xs[i..].iter().position(|x| *x == v).map(|p| i + p)
    }
}

/// Quantize 32-value blocks to [`BlockQ8`] (as llama.cpp's AVX2
/// `quantize_row_q8_0`: round to nearest even, packed with saturation).
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `x.len() == out.len() * 32`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn quantize_q8(x: &[f32], out: &mut [BlockQ8]) {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `x.len() == out.len() * 32`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let sign = _mm256_set1_ps(-0.0);
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (xs, b) in x.chunks_exact(BLOCK).zip(out.iter_mut()) {
            let p = xs.as_ptr();
            let v =
                [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)), _mm256_loadu_ps(p.add(16)), _mm256_loadu_ps(p.add(24))];
            let a = v.map(|vi| _mm256_andnot_ps(sign, vi));
            let m = _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
            let m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            let m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            let amax = _mm_cvtss_f32(_mm_max_ss(m2, _mm_movehdup_ps(m2)));
            let d = amax / 127.0;
            let id = _mm256_set1_ps(if d > 0.0 { 1.0 / d } else { 0.0 });
            let q = v.map(|vi| _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(vi, id), _MM_FROUND_TO_NEAREST_INT)));
            let sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            let s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
            let s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
            let s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1));
            let packed = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256(b.qs.as_mut_ptr() as *mut __m256i, _mm256_permutevar8x32_epi32(packed, order));
            b.d = d;
            b.sum = _mm_cvtsi128_si32(s1);
        }
    }
}

/// `g = silu(g) * u` (SwiGLU), eight lanes at a time.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C, and `g.len() == u.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn silu_mul(g: &mut [f32], u: &[f32]) {
    // SAFETY: AVX2, FMA and F16C as the caller guarantees, and `g.len() == u.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let n = g.len();
        let one = _mm256_set1_ps(1.0);
        let mut i = 0;
        while i + 8 <= n {
            let pg = g.as_mut_ptr().add(i);
            let x = _mm256_loadu_ps(pg);
            let e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
            let y = _mm256_div_ps(_mm256_mul_ps(x, _mm256_loadu_ps(u.as_ptr().add(i))), _mm256_add_ps(one, e));
            _mm256_storeu_ps(pg, y);
            i += 8;
        }
        super::scalar::silu_mul(&mut g[i..], &u[i..n]);
    }
}
