//! The prefill kernels: eight interleaved 4-bit rows times a tile of `T`
//! tokens. Each 32-byte run of weights is loaded and unpacked into nibbles
//! once and multiplied with every token of the tile, where the matrix-vector
//! kernel unpacks it again for each token; the per-token work left is the
//! activation broadcast and the dot-product instruction. Per token the
//! kernel keeps one i32 (or i16) partial sum and one f32 accumulator, so a
//! tile of `T` needs `2T + 6` vector registers: `T` = 4 fits the sixteen of
//! AVX2, `T` = 8 the thirty-two that AVX-512 gives 256-bit EVEX code.
//!
//! The variants: AVX2 (`maddubs` into i16, at most 8 × 2 × 15 × 128 =
//! 30720 per block, then `madd`), AVX-VNNI (VEX `vpdpbusd`) and AVX-512 VNNI
//! (EVEX `vpdpbusd` on 256-bit vectors). At one token the AVX2 and AVX-VNNI
//! kernels are also the matrix-vector (decode) kernels: one 32-byte load
//! holds 4 bytes of every row, so one `maddubs` (or `vpdpbusd`) with 4
//! activation bytes broadcast advances all eight rows, the eight scales are
//! one `vcvtph2ps`, and no horizontal sum is needed. Nibbles stay unsigned
//! (0..15): Q4_0 subtracts `8 * sum(y)` once per block, Q4_1 adds
//! `m * dy * sum(y)` with its eight minimums (`w = d * q + m`).
//!
//! Every kernel takes the layout `L` of [`super::layout`] as a const
//! parameter: Q4_0, Q4_1, or Q4_K, whose scales and minimums are 6-bit
//! factors of a per-super-block `d` and `-dmin` (two byte loads widened and
//! two multiplies more a block column than Q4_1's f16 pairs).
//!
//! Callers must have checked the CPU features each `# Safety` section names,
//! that `x` holds `T` tokens of `nb` blocks and that the group holds `nb`
//! block columns (`layout::group_bytes(L, nb)` bytes).

use std::arch::x86_64::*;

use super::layout;
use super::BlockQ8;

/// The eight rows' scales and minimums of block column `$b` (at `$blk`, in
/// the group at `$p`) as two vectors of f32, in layout `$l`: Q4_0's minimums
/// are zero, Q4_K's scales `d * sc` and minimums `-dmin * m`; Q4_0's and
/// Q4_1's are read where [`super::layout::scales_at`] says (shared by
/// columns in a grouped layout). Expanded inside each kernel, so it runs
/// with the kernel's target features.
macro_rules! scales8 {
    ($l:expr, $p:expr, $b:expr, $blk:expr) => {{
        let half8 = |q: *const u8| _mm256_cvtph_ps(_mm_loadu_si128(q as *const __m128i));
        if $l == super::layout::Q4K {
            let bytes8 = |q: *const u8| _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(q as *const __m128i)));
            let h = $p.add(super::layout::header_at($b));
            (_mm256_mul_ps(half8(h), bytes8($blk)), _mm256_mul_ps(half8(h.add(16)), bytes8($blk.add(8))))
        } else if super::layout::has_min($l) {
            let s = $p.add(super::layout::scales_at($l, $b));
            (half8(s), half8(s.add(16)))
        } else {
            (half8($p.add(super::layout::scales_at($l, $b))), _mm256_setzero_ps())
        }
    }};
}
pub(super) use scales8;

/// Tokens per tile of the AVX2 and AVX-VNNI kernels.
pub(super) const T256: usize = 4;
/// Tokens of the matrix-vector kernels.
pub(super) const T1: usize = 1;
/// Tokens per tile of the AVX-512 VNNI kernel.
pub(super) const T512: usize = 8;

macro_rules! tile_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, $t:expr, $zero:expr, |$s:ident, $w:ident, $y:ident| $dot:expr, |$f:ident| $finish:expr) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name<const L: u8>(group: &[u8], x: &[BlockQ8], nb: usize, out: &mut [[f32; 8]]) {
            // SAFETY: the features as the caller guarantees; `x` holds T tokens of `nb` blocks and the group `nb` block columns, so every offset below is inside them.
            unsafe {
                const T: usize = $t;
                let at = layout::nibbles_at(L);
                let lo = _mm256_set1_epi8(0x0f);
                let mut acc = [_mm256_setzero_ps(); T];
                let p = group.as_ptr();
                for b in 0..nb {
                    // SAFETY (caller): block column b lies inside `group`.
                    let blk = p.add(layout::col_at(L, b));
                    let mut part = [$zero; T];
                    for m in 0..4 {
                        let pk = _mm256_loadu_si256(blk.add(at + 32 * m) as *const __m256i);
                        let l = _mm256_and_si256(pk, lo);
                        let h = _mm256_and_si256(_mm256_srli_epi16(pk, 4), lo);
                        for (t, s) in part.iter_mut().enumerate() {
                            let yq = x.get_unchecked(t * nb + b).qs.as_ptr() as *const i32;
                            let ($s, $w, $y) = (*s, l, _mm256_set1_epi32(yq.add(m).read_unaligned()));
                            let s1 = $dot;
                            let ($s, $w, $y) = (s1, h, _mm256_set1_epi32(yq.add(4 + m).read_unaligned()));
                            *s = $dot;
                        }
                    }
                    let (dx, mx) = scales8!(L, p, b, blk);
                    for (t, (a, s)) in acc.iter_mut().zip(part).enumerate() {
                        let y = x.get_unchecked(t * nb + b);
                        let $f = s;
                        let s32: __m256i = $finish;
                        let dxy = _mm256_mul_ps(dx, _mm256_set1_ps(y.d));
                        if layout::has_min(L) {
                            *a = _mm256_fmadd_ps(dxy, _mm256_cvtepi32_ps(s32), *a);
                            *a = _mm256_fmadd_ps(mx, _mm256_set1_ps(y.d * y.sum as f32), *a);
                        } else {
                            let s32 = _mm256_sub_epi32(s32, _mm256_set1_epi32(8 * y.sum));
                            *a = _mm256_fmadd_ps(dxy, _mm256_cvtepi32_ps(s32), *a);
                        }
                    }
                }
                for (o, a) in out.iter_mut().zip(acc) {
                    _mm256_storeu_ps(o.as_mut_ptr(), a);
                }
            }
        }
    };
}

tile_kernel!(
    /// AVX2: `maddubs` into i16 partial sums, widened once per block.
    ///
    /// # Safety
    /// AVX2, FMA and F16C; lengths as in the module's header, `T` = [`T256`].
    tile_avx2, "avx2,fma,f16c", T256, _mm256_setzero_si256(),
    |s, w, y| _mm256_add_epi16(s, _mm256_maddubs_epi16(w, y)),
    |s| _mm256_madd_epi16(s, _mm256_set1_epi16(1))
);

tile_kernel!(
    /// AVX-VNNI: VEX `vpdpbusd` straight into i32.
    ///
    /// # Safety
    /// AVX2, FMA, F16C and AVX-VNNI; lengths as in the module's header, `T` = [`T256`].
    tile_avxvnni, "avx2,fma,f16c,avxvnni", T256, _mm256_setzero_si256(),
    |s, w, y| _mm256_dpbusd_avx_epi32(s, w, y),
    |s| s
);

tile_kernel!(
    /// AVX-512 VNNI: EVEX `vpdpbusd` on 256-bit vectors, whose 32 registers
    /// hold a tile of eight tokens.
    ///
    /// # Safety
    /// AVX-512 F, BW, VL and VNNI, AVX2, FMA and F16C; lengths as in the
    /// module's header, `T` = [`T512`].
    tile_avx512vnni, "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c", T512, _mm256_setzero_si256(),
    |s, w, y| _mm256_dpbusd_epi32(s, w, y),
    |s| s
);

tile_kernel!(
    /// The AVX2 matrix-vector kernel: [`tile_avx2`] at one token.
    ///
    /// # Safety
    /// AVX2, FMA and F16C; lengths as in the module's header, `T` = 1.
    row8_avx2, "avx2,fma,f16c", T1, _mm256_setzero_si256(),
    |s, w, y| _mm256_add_epi16(s, _mm256_maddubs_epi16(w, y)),
    |s| _mm256_madd_epi16(s, _mm256_set1_epi16(1))
);

tile_kernel!(
    /// The AVX-VNNI matrix-vector kernel: [`tile_avxvnni`] at one token.
    ///
    /// # Safety
    /// AVX2, FMA, F16C and AVX-VNNI; lengths as in the module's header, `T` = 1.
    row8_avxvnni, "avx2,fma,f16c,avxvnni", T1, _mm256_setzero_si256(),
    |s, w, y| _mm256_dpbusd_avx_epi32(s, w, y),
    |s| s
);

/// Tokens per tile of the sixteen-row AVX-512 kernel.
pub(super) const T16: usize = 8;

/// AVX-512 VNNI on full 512-bit vectors: two adjacent groups (sixteen rows)
/// times a tile of [`T16`] tokens. Each 64-byte vector joins the same
/// 32-byte run of both groups (lanes 0-7 the first group's rows, 8-15 the
/// second's), so one broadcast activation word and one `vpdpbusd` advance
/// sixteen rows where [`tile_avx512vnni`] advances eight: half the
/// per-token instructions, where the CPU runs 512-bit `vpdpbusd` at the
/// rate of 256-bit ones (full-width AVX-512 units, as AMD's Zen 5 has). On
/// a CPU that splits or down-clocks 512-bit work the start-up timing keeps
/// the eight-row kernel. `groups` holds the two groups back to back; `out`
/// the first group's [`T16`] tokens, then the second's.
///
/// # Safety
/// AVX-512 F, BW and VNNI, AVX2, FMA and F16C; `groups` two groups of `nb`
/// block columns each, `x` [`T16`] tokens of `nb` blocks, `out` `2 * T16` long.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub(super) unsafe fn tile16_avx512vnni<const L: u8>(groups: &[u8], x: &[BlockQ8], nb: usize, out: &mut [[f32; 8]]) {
    // SAFETY: the features as the caller guarantees; `groups` holds two groups of `nb` block columns and `x` T16 tokens of `nb` blocks, so every offset below is inside them.
    unsafe {
        const T: usize = T16;
        let at = layout::nibbles_at(L);
        let lo = _mm512_set1_epi8(0x0f);
        let join = |a: *const u8, b: *const u8| {
            _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256(a as *const __m256i)),
                _mm256_loadu_si256(b as *const __m256i),
                1,
            )
        };
        let both = |a: __m256, b: __m256| {
            _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(a)), _mm256_castps_pd(b), 1))
        };
        let mut acc = [_mm512_setzero_ps(); T];
        let (pa, pb) = (groups.as_ptr(), groups.as_ptr().add(layout::group_bytes(L, nb)));
        for b in 0..nb {
            let (ba, bk) = (pa.add(layout::col_at(L, b)), pb.add(layout::col_at(L, b)));
            let mut part = [_mm512_setzero_si512(); T];
            for m in 0..4 {
                let pk = join(ba.add(at + 32 * m), bk.add(at + 32 * m));
                let l = _mm512_and_si512(pk, lo);
                let h = _mm512_and_si512(_mm512_srli_epi16(pk, 4), lo);
                for (t, s) in part.iter_mut().enumerate() {
                    let yq = x.get_unchecked(t * nb + b).qs.as_ptr() as *const i32;
                    *s = _mm512_dpbusd_epi32(*s, l, _mm512_set1_epi32(yq.add(m).read_unaligned()));
                    *s = _mm512_dpbusd_epi32(*s, h, _mm512_set1_epi32(yq.add(4 + m).read_unaligned()));
                }
            }
            let ((da, ma), (dk, mk)) = (scales8!(L, pa, b, ba), scales8!(L, pb, b, bk));
            let (dx, mx) = (both(da, dk), both(ma, mk));
            for (t, (a, s)) in acc.iter_mut().zip(part).enumerate() {
                let y = x.get_unchecked(t * nb + b);
                let dxy = _mm512_mul_ps(dx, _mm512_set1_ps(y.d));
                if layout::has_min(L) {
                    *a = _mm512_fmadd_ps(dxy, _mm512_cvtepi32_ps(s), *a);
                    *a = _mm512_fmadd_ps(mx, _mm512_set1_ps(y.d * y.sum as f32), *a);
                } else {
                    let s = _mm512_sub_epi32(s, _mm512_set1_epi32(8 * y.sum));
                    *a = _mm512_fmadd_ps(dxy, _mm512_cvtepi32_ps(s), *a);
                }
            }
        }
        for (t, a) in acc.into_iter().enumerate() {
            _mm256_storeu_ps(out[t].as_mut_ptr(), _mm512_castps512_ps256(a));
            _mm256_storeu_ps(out[T + t].as_mut_ptr(), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
        }
    }
}
