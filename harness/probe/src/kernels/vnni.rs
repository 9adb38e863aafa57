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
/// as `4 * sum(y)` per half, Q4_1's minimum term as half per half (exact: a
/// power of two), and the halves are added once at the end.
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
        let mut acc = _mm512_setzero_ps();
        let p = group.as_ptr();
        for (b, y) in x.iter().enumerate() {
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
                let mx = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(mx)));
                acc = _mm512_fmadd_ps(dxy, _mm512_cvtepi32_ps(s), acc);
                acc = _mm512_fmadd_ps(mx, _mm512_set1_ps(0.5 * y.d * y.sum as f32), acc);
            } else {
                let s = _mm512_sub_epi32(s, _mm512_set1_epi32(4 * y.sum));
                acc = _mm512_fmadd_ps(dxy, _mm512_cvtepi32_ps(s), acc);
            }
        }
        let lo8 = _mm512_castps512_ps256(acc);
        let hi8 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
        _mm256_storeu_ps(out.as_mut_ptr(), _mm256_add_ps(lo8, hi8));
    }
}
