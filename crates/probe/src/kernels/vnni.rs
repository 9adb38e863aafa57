//! The 512-bit interleaved 4-bit kernel with the x86 VNNI dot-product
//! instruction `vpdpbusd` (unsigned bytes × signed bytes, four products
//! summed into each i32 lane, accumulated in one instruction). It reads the
//! layout of [`super::QMatrix`] unchanged. The 256-bit AVX2 and AVX-VNNI
//! matrix-vector kernels are the tile kernels of [`super::tile`] at one
//! token. Which of them runs is measured at start-up ([`super::x8_variant`]).
//!
//! Callers must have checked the CPU features each `# Safety` section names
//! and that the group holds `x.len()` block columns of layout `L`
//! (`layout::group_bytes(L, x.len())` bytes).

use std::arch::x86_64::*;

use super::layout;
use super::tile::scales8;
use super::BlockQ8;

// Software prefetch, where `PF` turns it on, asks for the bytes `ahead` of
// the column being read; the distances tried are [`super::select::PREFETCH_AHEAD`].

/// Defines the closure `$name(nibbles, y) -> __m512i`: one block column's
/// integer dot products, lanes 0-7 the eight rows' sums over runs 0 and 2,
/// lanes 8-15 over runs 1 and 3 (see [`dot_q4x8_avx512vnni`]). Expanded
/// inside each kernel, so it runs with the kernel's target features.
macro_rules! column_dot {
    ($name:ident) => {
        let lo = _mm512_set1_epi8(0x0f);
        // Word indices of the activations for (low nibbles of runs 0,1),
        // (runs 2,3), (high nibbles of runs 0,1) and (runs 2,3).
        let spread =
            |a: i32| _mm512_setr_epi32(a, a, a, a, a, a, a, a, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1);
        let (i_l01, i_l23, i_h01, i_h23) = (spread(0), spread(2), spread(4), spread(6));
        let $name = |q: *const u8, y: &BlockQ8| {
            let yw = _mm512_castsi256_si512(_mm256_loadu_si256(y.qs.as_ptr() as *const __m256i));
            let pk01 = _mm512_loadu_si512(q as *const __m512i);
            let pk23 = _mm512_loadu_si512(q.add(64) as *const __m512i);
            let mut s = _mm512_setzero_si512();
            s = _mm512_dpbusd_epi32(s, _mm512_and_si512(pk01, lo), _mm512_permutexvar_epi32(i_l01, yw));
            s = _mm512_dpbusd_epi32(s, _mm512_and_si512(pk23, lo), _mm512_permutexvar_epi32(i_l23, yw));
            let h01 = _mm512_and_si512(_mm512_srli_epi16(pk01, 4), lo);
            let h23 = _mm512_and_si512(_mm512_srli_epi16(pk23, 4), lo);
            s = _mm512_dpbusd_epi32(s, h01, _mm512_permutexvar_epi32(i_h01, yw));
            _mm512_dpbusd_epi32(s, h23, _mm512_permutexvar_epi32(i_h23, yw))
        };
    };
}

/// The eight rows' sums from a vector holding two partial sums of each
/// (lanes 0-7 and 8-15).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn halves(acc: __m512) -> __m256 {
    let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
    _mm256_add_ps(_mm512_castps512_ps256(acc), hi)
}

/// AVX-512 VNNI: a 64-byte load holds two runs (lanes 0-7 the eight rows'
/// bytes of run `m`, lanes 8-15 those of run `m + 1`), so two loads and four
/// `vpdpbusd` cover a block column. The activation words each half needs
/// are spread by one `vpermd` per pair of runs. Both halves hold partial sums
/// of the same eight rows and share their scales: the Q4_0 offset is split
/// as `4 * sum(y)` per half, Q4_1's minimum term is summed on eight lanes
/// apart, and the halves are added once at the end.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VNNI, AVX2, FMA and F16C, and the
/// group must hold `x.len()` block columns.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub(super) unsafe fn dot_q4x8_avx512vnni<const L: u8, const PF: bool>(
    group: &[u8],
    x: &[BlockQ8],
    out: &mut [f32; 8],
    ahead: usize,
) {
    // SAFETY: the features as the caller guarantees, and the group holds `x.len()` block columns; every pointer offset below stays inside it.
    unsafe {
        let (bb, at) = (layout::col_bytes(L), layout::nibbles_at(L));
        if L == layout::Q4K {
            return dot_q4kx8::<PF>(group, x, out, ahead);
        }
        if layout::shared(L) > 1 {
            return dot_shared::<L, PF>(group, x, out, ahead);
        }
        column_dot!(column_dot);
        // Two accumulators, even and odd block columns, and Q4_1's minimum
        // term in two of its own (eight lanes, whole rows): Q4_1's two FMAs
        // a block column on one chain made it wait on FMA latency (4.92
        // against 4.61 us now for a cached 256 x 2048 matrix on the Zen 5
        // VM; Q4_0 the same within noise).
        let (mut a0, mut a1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let (mut m0, mut m1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let p = group.as_ptr();
        let step = |b: usize, y: &BlockQ8, a: &mut __m512, m: &mut __m256| {
            // SAFETY (caller): block column b of the group lies inside `group`.
            let blk = p.add(layout::col_at(L, b));
            if PF {
                // A hint, never a load: an address past the group is dropped.
                // The column `ahead` bytes on (one to three cache lines).
                let ahead = blk.wrapping_add(ahead);
                for k in 0..bb.div_ceil(64) {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64 * k) as *const i8);
                }
            }
            let (dx, mx) = scales8!(L, p, b, blk);
            let dx = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(dx)));
            let s = column_dot(blk.add(at), y);
            let dxy = _mm512_mul_ps(dx, _mm512_set1_ps(y.d));
            if layout::has_min(L) {
                *a = _mm512_fmadd_ps(dxy, _mm512_cvtepi32_ps(s), *a);
                *m = _mm256_fmadd_ps(mx, _mm256_set1_ps(y.d * y.sum as f32), *m);
            } else {
                let s = _mm512_sub_epi32(s, _mm512_set1_epi32(4 * y.sum));
                *a = _mm512_fmadd_ps(dxy, _mm512_cvtepi32_ps(s), *a);
            }
        };
        let pairs = x.len() / 2;
        for i in 0..pairs {
            step(2 * i, &x[2 * i], &mut a0, &mut m0);
            step(2 * i + 1, &x[2 * i + 1], &mut a1, &mut m1);
        }
        if x.len() % 2 == 1 {
            step(x.len() - 1, &x[x.len() - 1], &mut a0, &mut m0);
        }
        let sum = _mm256_add_ps(halves(_mm512_add_ps(a0, a1)), _mm256_add_ps(m0, m1));
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
    }
}

/// [`dot_q4x8_avx512vnni`] for Q4_K, a super-block (eight block columns) at
/// a time: its `d` and `-dmin` are read and widened once, each column's
/// integer sums are multiplied by the rows' 6-bit scales as integers
/// (`vpmulld`), and the scaled sums and the minimum terms are gathered per
/// super-block and multiplied by `d` and `-dmin` once at its end, so a column
/// costs about what a Q4_0 one does plus its minimum term.
///
/// # Safety
/// As [`dot_q4x8_avx512vnni`]; `x.len()` a multiple of 8.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
unsafe fn dot_q4kx8<const PF: bool>(group: &[u8], x: &[BlockQ8], out: &mut [f32; 8], ahead: usize) {
    // SAFETY: the features as the caller guarantees, and the group holds `x.len() / 8` super-blocks; every pointer offset below stays inside it.
    unsafe {
        column_dot!(column_dot);
        let (mut acc, mut mins) = (_mm512_setzero_ps(), _mm256_setzero_ps());
        let p = group.as_ptr();
        for (sb, ys) in x.chunks_exact(8).enumerate() {
            let h = p.add(sb * layout::SB);
            if PF {
                // A hint, never a load: an address past the group is dropped.
                // The super-block (18.5 cache lines) `ahead` bytes on.
                let ahead = h.wrapping_add(ahead.max(layout::SB));
                for k in 0..layout::SB.div_ceil(64) {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64 * k) as *const i8);
                }
            }
            let d = _mm256_cvtph_ps(_mm_loadu_si128(h as *const __m128i));
            let d = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(d)));
            let dmin = _mm256_cvtph_ps(_mm_loadu_si128(h.add(16) as *const __m128i));
            // Even and odd columns on separate chains.
            let (mut t0, mut t1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            let (mut u0, mut u1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            let step = |j: usize, t: &mut __m512, u: &mut __m256| {
                let (blk, y) = (h.add(32 + 144 * j), &ys[j]);
                let sc = _mm512_cvtepu8_epi32(_mm_set1_epi64x((blk as *const i64).read_unaligned()));
                let s = _mm512_mullo_epi32(column_dot(blk.add(16), y), sc);
                *t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(y.d), *t);
                let m = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(blk.add(8) as *const __m128i)));
                *u = _mm256_fmadd_ps(m, _mm256_set1_ps(y.d * y.sum as f32), *u);
            };
            // The bound through `black_box` keeps LLVM from unrolling the
            // eight columns: unrolled, they spilled vectors to the stack (37
            // stack accesses a super-block) and streamed 12% fewer weights a
            // second (Zen 5 VM, one thread), below Q4_1; rolled, Q4_0's rate.
            for j in (0..std::hint::black_box(8)).step_by(2) {
                step(j, &mut t0, &mut u0);
                step(j + 1, &mut t1, &mut u1);
            }
            acc = _mm512_fmadd_ps(d, _mm512_add_ps(t0, t1), acc);
            mins = _mm256_fmadd_ps(dmin, _mm256_add_ps(u0, u1), mins);
        }
        _mm256_storeu_ps(out.as_mut_ptr(), _mm256_add_ps(halves(acc), mins));
    }
}

/// [`dot_q4x8_avx512vnni`] for a layout whose `k` columns share their
/// scales ([`layout::grouped`]), `k` columns at a time: each column's integer
/// sums are scaled by its activations' `d` alone, and the eight rows' shared
/// `d` multiplies their sum once (and the shared minimum once, times the
/// summed `d * sum(y)` of the `k` activation blocks), where a column of its
/// own scales takes a multiply and, for Q4_1, a second FMA of its own.
///
/// # Safety
/// As [`dot_q4x8_avx512vnni`]; `x.len()` a multiple of `k`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
unsafe fn dot_shared<const L: u8, const PF: bool>(group: &[u8], x: &[BlockQ8], out: &mut [f32; 8], ahead: usize) {
    // SAFETY: the features as the caller guarantees, and the group holds `x.len() / k` runs of `k` columns; every pointer offset below stays inside it.
    unsafe {
        column_dot!(column_dot);
        let (k, at) = (layout::shared(L), layout::nibbles_at(L));
        let run = layout::col_bytes(L) * k;
        let p = group.as_ptr();
        let step = |r: usize, a: &mut __m512, m: &mut __m256| {
            let b0 = r * k;
            if PF {
                // A hint, never a load: an address past the group is dropped.
                let ahead = p.add(layout::scales_at(L, b0)).wrapping_add(ahead.max(run));
                for c in 0..run.div_ceil(64) {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64 * c) as *const i8);
                }
            }
            let (mut t, mut ysum) = (_mm512_setzero_ps(), 0f32);
            for (j, y) in x[b0..b0 + k].iter().enumerate() {
                let mut s = column_dot(p.add(layout::col_at(L, b0 + j) + at), y);
                if !layout::has_min(L) {
                    s = _mm512_sub_epi32(s, _mm512_set1_epi32(4 * y.sum));
                }
                t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(y.d), t);
                ysum += y.d * y.sum as f32;
            }
            let (dx, mx) = scales8!(L, p, b0, p);
            let dx = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(dx)));
            *a = _mm512_fmadd_ps(dx, t, *a);
            if layout::has_min(L) {
                *m = _mm256_fmadd_ps(mx, _mm256_set1_ps(ysum), *m);
            }
        };
        // Even and odd runs on separate chains, named: an array indexed by
        // `r % 2` would live in memory (see x86.rs).
        let (mut a0, mut a1, mut m0, mut m1) =
            (_mm512_setzero_ps(), _mm512_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
        let runs = x.len() / k;
        for r in 0..runs / 2 {
            step(2 * r, &mut a0, &mut m0);
            step(2 * r + 1, &mut a1, &mut m1);
        }
        if runs % 2 == 1 {
            step(runs - 1, &mut a0, &mut m0);
        }
        let sum = _mm256_add_ps(halves(_mm512_add_ps(a0, a1)), _mm256_add_ps(m0, m1));
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
    }
}
