//! The 512-bit interleaved 4-bit kernel with the x86 VNNI dot-product
//! instruction `vpdpbusd` (unsigned bytes × signed bytes, four products
//! summed into each i32 lane, accumulated in one instruction). It reads the
//! layout of [`super::QMatrix`] unchanged. The 256-bit AVX2 and AVX-VNNI
//! matrix-vector kernels are the tile kernels of [`super::tile`] at one
//! token. Which of them runs is measured at start-up ([`super::x8_variant`]).
//!
//! Callers must have checked the CPU features each `# Safety` section names
//! and that `group.len() == x.len() * 8 * (20 if MIN else 18)`.

use std::arch::x86_64::*;

use super::BlockQ8;

/// Block columns ahead that the decode kernel asks the cache for when
/// `PF` (software prefetch) is on. Whether it is on is measured at start-up
/// on the model's own largest matrix ([`super::select`]): on the Zen 5 VM it
/// gained about 10% at two threads and lost about 8% at one.
const PREFETCH: usize = 8;

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
pub(super) unsafe fn dot_q4x8_avx512vnni<const MIN: bool, const PF: bool>(
    group: &[u8],
    x: &[BlockQ8],
    out: &mut [f32; 8],
) {
    // SAFETY: the features as the caller guarantees, and the group holds `x.len()` block columns; every pointer offset below stays inside it.
    unsafe {
        let (bb, at) = if MIN { (160, 32) } else { (144, 16) };
        let lo = _mm512_set1_epi8(0x0f);
        // Word indices of the activations for (low nibbles of runs 0,1),
        // (runs 2,3), (high nibbles of runs 0,1) and (runs 2,3).
        let spread =
            |a: i32| _mm512_setr_epi32(a, a, a, a, a, a, a, a, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1);
        let (i_l01, i_l23, i_h01, i_h23) = (spread(0), spread(2), spread(4), spread(6));
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
            let blk = p.add(b * bb);
            if PF {
                // A hint, never a load: an address past the group is dropped.
                let ahead = blk.wrapping_add(PREFETCH * bb);
                _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(128) as *const i8);
            }
            let dx = _mm256_cvtph_ps(_mm_loadu_si128(blk as *const __m128i));
            let dx = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(dx)));
            let yw = _mm512_castsi256_si512(_mm256_loadu_si256(y.qs.as_ptr() as *const __m256i));
            let pk01 = _mm512_loadu_si512(blk.add(at) as *const __m512i);
            let pk23 = _mm512_loadu_si512(blk.add(at + 64) as *const __m512i);
            let mut s = _mm512_setzero_si512();
            s = _mm512_dpbusd_epi32(s, _mm512_and_si512(pk01, lo), _mm512_permutexvar_epi32(i_l01, yw));
            s = _mm512_dpbusd_epi32(s, _mm512_and_si512(pk23, lo), _mm512_permutexvar_epi32(i_l23, yw));
            let h01 = _mm512_and_si512(_mm512_srli_epi16(pk01, 4), lo);
            let h23 = _mm512_and_si512(_mm512_srli_epi16(pk23, 4), lo);
            s = _mm512_dpbusd_epi32(s, h01, _mm512_permutexvar_epi32(i_h01, yw));
            s = _mm512_dpbusd_epi32(s, h23, _mm512_permutexvar_epi32(i_h23, yw));
            let dxy = _mm512_mul_ps(dx, _mm512_set1_ps(y.d));
            if MIN {
                let mx = _mm256_cvtph_ps(_mm_loadu_si128(blk.add(16) as *const __m128i));
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
        let acc = _mm512_add_ps(a0, a1);
        let lo8 = _mm512_castps512_ps256(acc);
        let hi8 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
        let sum = _mm256_add_ps(_mm256_add_ps(lo8, hi8), _mm256_add_ps(m0, m1));
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
    }
}
