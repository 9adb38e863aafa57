//! NEON kernels (AArch64: every Android and iOS phone the study targets).
//! The block products follow llama.cpp's `ggml_vec_dot_q4_0_q8_0` without the
//! dot-product extension: widening `smull`/`smlal` of signed bytes into i16,
//! pairwise-added into i32. NEON is part of the AArch64 baseline.
//!
//! The interleaved 4-bit kernel (decode's hot loop, Q4_0 and Q4_1) also has
//! a `sdot` variant ([`dot_q4x8_dotprod`], `neon-dotprod`): the phones have
//! the dot-product extension (Armv8.2 `FEAT_DotProd`; every Snapdragon 8 and
//! Apple A-series core since 2017-18), whose Rust intrinsics are not stable,
//! so it is one `asm!` instruction. It runs only where
//! `is_aarch64_feature_detected!("dotprod")` says so, and the start-up timing
//! ([`super::select`]) keeps it only when it is the fastest variant.
//!
//! The block products, activation quantization and f16 conversion have NEON
//! code here; the f32 helpers (dot, axpy, softmax, SwiGLU) are the portable
//! ones, which the compiler vectorizes for NEON, and attention runs its
//! portable path over them.
//! These kernels are tested against the portable ones under qemu-aarch64;
//! their speed has not been measured on ARM hardware.
//!
//! Callers must have checked that `row.len() == x.len() * block_bytes`.

use std::arch::aarch64::*;

use super::{layout, scalar, BlockQ8, BLOCK};

/// Eight IEEE halves (as u16 lanes) to f32 in integer and f32 arithmetic
/// (the half-precision vector type is not stable Rust): the magnitude bits
/// moved into place and scaled by 2^112, which also normalizes subnormals;
/// halves with an all-ones exponent come out at 2^16 or more (the largest
/// finite half is 65504) and get the f32 all-ones exponent, keeping
/// infinities and NaNs; then the sign.
#[inline]
#[target_feature(enable = "neon")]
fn halves_to_f32(h: uint16x8_t) -> (float32x4_t, float32x4_t) {
    let one = |w: uint32x4_t| {
        let mag = vshlq_n_u32::<13>(vandq_u32(w, vdupq_n_u32(0x7fff)));
        let f = vmulq_f32(vreinterpretq_f32_u32(mag), vdupq_n_f32(f32::from_bits(0x7780_0000)));
        let inf_nan = vandq_u32(vcgeq_f32(f, vdupq_n_f32(65536.0)), vdupq_n_u32(0x7f80_0000));
        let sign = vshlq_n_u32::<16>(vandq_u32(w, vdupq_n_u32(0x8000)));
        vreinterpretq_f32_u32(vorrq_u32(vorrq_u32(vreinterpretq_u32_f32(f), inf_nan), sign))
    };
    (one(vmovl_u16(vget_low_u16(h))), one(vmovl_high_u16(h)))
}

/// The 16 signed-byte products of `a` and `b`, pairwise added into 4 i32 lanes.
#[inline]
#[target_feature(enable = "neon")]
fn mul_sum_i8(a: int8x16_t, b: int8x16_t) -> int32x4_t {
    // Each i16 lane holds two products: |8 × 127| × 2 for Q4_0 and
    // |128 × 127| × 2 = 32512 for Q8_0 (activations stop at ±127), inside i16.
    let p = vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b);
    vpaddlq_s16(p)
}

/// # Safety
/// The CPU must have NEON, and `row.len() == x.len() * 18`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_q4_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    // SAFETY: NEON as the caller guarantees, and `row.len() == x.len() * 18`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let lo = vdupq_n_u8(0x0f);
        let eight = vdupq_n_s8(8);
        let mut acc = vdupq_n_f32(0.0);
        let p = row.as_ptr();
        for (i, y) in x.iter().enumerate() {
            // SAFETY (caller): block i lies inside `row`.
            let b = p.add(i * 18);
            let d = super::f16_to_f32(u16::from_le_bytes([*b, *b.add(1)])) * y.d;
            let packed = vld1q_u8(b.add(2));
            let ql = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, lo)), eight);
            let qh = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8::<4>(packed)), eight);
            let yl = vld1q_s8(y.qs.as_ptr());
            let yh = vld1q_s8(y.qs.as_ptr().add(16));
            let s = vaddq_s32(mul_sum_i8(ql, yl), mul_sum_i8(qh, yh));
            acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), d);
        }
        vaddvq_f32(acc)
    }
}

/// Eight interleaved Q4_0 rows in layout `L` ([`super::layout`]: Q4_0, its
/// scales per column or shared by columns): each 16-byte load holds 4 bytes
/// of four rows, multiplied with 4 activation bytes broadcast. Nibbles stay
/// unsigned (0..15) and `8 * sum(y)` is subtracted once per block. An i16
/// lane gathers 8 products of at most 15 × 127 per block: 15240, inside i16.
///
/// # Safety
/// The CPU must have NEON, `L` must be a Q4_0 layout, and the group must
/// hold `x.len()` block columns (`layout::group_bytes(L, x.len())` bytes).
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_q4_0x8<const L: u8>(group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    // SAFETY: NEON as the caller guarantees, and the group holds `x.len()` block columns of layout `L`; every pointer offset below stays inside it.
    unsafe {
        let lo = vdupq_n_u8(0x0f);
        let (mut acc0, mut acc1) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
        let p = group.as_ptr();
        for (b, y) in x.iter().enumerate() {
            // SAFETY (caller): block column b of the group lies inside `group`.
            let blk = p.add(layout::col_at(L, b));
            let (d0, d1) = halves_to_f32(vld1q_u16(p.add(layout::scales_at(L, b)) as *const u16));
            let yq = y.qs.as_ptr() as *const i32;
            // Rows 0-1, 2-3, 4-5, 6-7: four lanes of each row per accumulator.
            let mut s = [vdupq_n_s16(0); 4];
            for m in 0..4 {
                let yl = vreinterpretq_s8_s32(vld1q_dup_s32(yq.add(m)));
                let yh = vreinterpretq_s8_s32(vld1q_dup_s32(yq.add(4 + m)));
                for half in 0..2 {
                    let pk = vld1q_u8(blk.add(layout::nibbles_at(L) + 32 * m + 16 * half));
                    let l = vreinterpretq_s8_u8(vandq_u8(pk, lo));
                    let h = vreinterpretq_s8_u8(vshrq_n_u8::<4>(pk));
                    let a = &mut s[2 * half];
                    *a = vaddq_s16(*a, vmull_s8(vget_low_s8(l), vget_low_s8(yl)));
                    *a = vaddq_s16(*a, vmull_s8(vget_low_s8(h), vget_low_s8(yh)));
                    let c = &mut s[2 * half + 1];
                    *c = vaddq_s16(*c, vmull_high_s8(l, yl));
                    *c = vaddq_s16(*c, vmull_high_s8(h, yh));
                }
            }
            let bias = vdupq_n_s32(8 * y.sum);
            let r03 = vsubq_s32(vpaddq_s32(vpaddlq_s16(s[0]), vpaddlq_s16(s[1])), bias);
            let r47 = vsubq_s32(vpaddq_s32(vpaddlq_s16(s[2]), vpaddlq_s16(s[3])), bias);
            acc0 = vfmaq_f32(acc0, vmulq_n_f32(d0, y.d), vcvtq_f32_s32(r03));
            acc1 = vfmaq_f32(acc1, vmulq_n_f32(d1, y.d), vcvtq_f32_s32(r47));
        }
        vst1q_f32(out.as_mut_ptr(), acc0);
        vst1q_f32(out.as_mut_ptr().add(4), acc1);
    }
}

/// # Safety
/// The CPU must have NEON, and `row.len() == x.len() * 34`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_q8_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    // SAFETY: NEON as the caller guarantees, and `row.len() == x.len() * 34`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        const BB: usize = 2 + BLOCK;
        let mut acc = vdupq_n_f32(0.0);
        let p = row.as_ptr();
        for (i, y) in x.iter().enumerate() {
            // SAFETY (caller): block i lies inside `row`.
            let b = p.add(i * BB);
            let d = super::f16_to_f32(u16::from_le_bytes([*b, *b.add(1)])) * y.d;
            let q0 = vld1q_s8(b.add(2) as *const i8);
            let q1 = vld1q_s8(b.add(18) as *const i8);
            let s = vaddq_s32(mul_sum_i8(q0, vld1q_s8(y.qs.as_ptr())), mul_sum_i8(q1, vld1q_s8(y.qs.as_ptr().add(16))));
            acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), d);
        }
        vaddvq_f32(acc)
    }
}

/// # Safety
/// The CPU must have NEON, and `x.len() == out.len() * 32`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn quantize_q8(x: &[f32], out: &mut [BlockQ8]) {
    // SAFETY: NEON as the caller guarantees, and `x.len() == out.len() * 32`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        for (xs, b) in x.chunks_exact(BLOCK).zip(out.iter_mut()) {
            let v: [float32x4_t; 8] = std::array::from_fn(|i| vld1q_f32(xs.as_ptr().add(4 * i)));
            let amax = v.iter().fold(vdupq_n_f32(0.0), |m, x| vmaxq_f32(m, vabsq_f32(*x)));
            let d = vmaxvq_f32(amax) / 127.0;
            let id = if d > 0.0 { 1.0 / d } else { 0.0 };
            b.d = d;
            // `fcvtns`: round to nearest, ties to even, as the portable kernel.
            let q: [int32x4_t; 8] = std::array::from_fn(|i| vcvtnq_s32_f32(vmulq_n_f32(v[i], id)));
            let sum = q.iter().fold(vdupq_n_s32(0), |s, x| vaddq_s32(s, *x));
            b.sum = vaddvq_s32(sum);
            for (pair, dst) in q.chunks_exact(2).zip(b.qs.chunks_exact_mut(8)) {
                let n = vmovn_s16(vcombine_s16(vmovn_s32(pair[0]), vmovn_s32(pair[1])));
                vst1_s8(dst.as_mut_ptr(), n);
            }
        }
    }
}

/// Halves to f32 eight at a time (attention's key and value rows).
///
/// # Safety
/// The CPU must have NEON, and `src.len() == dst.len()`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn f16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    // SAFETY: NEON as the caller guarantees, and `src.len() == dst.len()`; every pointer offset below stays inside the slices this bounds.
    unsafe {
        let (s8, d8) = (src.chunks_exact(8), dst.chunks_exact_mut(8));
        let (sr, dr) = (s8.remainder(), d8.into_remainder());
        scalar::f16_to_f32_slice(sr, dr);
        for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
            let (lo, hi) = halves_to_f32(vld1q_u16(s.as_ptr()));
            vst1q_f32(d.as_mut_ptr(), lo);
            vst1q_f32(d.as_mut_ptr().add(4), hi);
        }
    }
}

/// `sdot`: each i32 lane of `acc` plus the four products of the matching
/// four signed bytes of `a` and `b` (the Armv8.2 dot-product extension,
/// `FEAT_DotProd`). Stable Rust has no intrinsic for it, so it is one
/// instruction of inline assembly.
#[inline]
#[target_feature(enable = "neon,dotprod")]
fn sdot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: `sdot` reads and writes only the three vector registers named;
    // this function's `dotprod` target feature means it only runs where the
    // instruction exists.
    unsafe {
        std::arch::asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// Eight interleaved 4-bit rows in layout `L` ([`super::layout`]: Q4_0,
/// Q4_1 or Q4_K) with `sdot`: the layout of [`dot_q4_0x8`] is four bytes of
/// four rows per 16-byte load, and `sdot` against four activation bytes
/// broadcast adds exactly those four products into each row's lane, so one
/// instruction replaces the widening multiplies and pairwise adds of the
/// baseline kernel. Nibbles stay unsigned; Q4_0 subtracts `8 * sum(y)` once
/// per block, Q4_1 and Q4_K add `m * d_y * sum(y)` (Q4_K's scales and
/// minimums are byte factors of the super-block's `d` and `-dmin`).
///
/// # Safety
/// The CPU must have NEON and the dot-product extension, and the group
/// must hold `x.len()` block columns (`layout::group_bytes(L, x.len())` bytes).
#[target_feature(enable = "neon,dotprod")]
pub(super) unsafe fn dot_q4x8_dotprod<const L: u8>(group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    // SAFETY: NEON and dotprod as the caller guarantees, and the group holds
    // `x.len()` block columns of layout `L`; every offset below stays inside.
    unsafe {
        let at = layout::nibbles_at(L);
        let lo = vdupq_n_u8(0x0f);
        let (mut acc0, mut acc1) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
        let p = group.as_ptr();
        let bytes = |q: *const u8| {
            let w = vmovl_u8(vld1_u8(q));
            (vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))), vcvtq_f32_u32(vmovl_high_u16(w)))
        };
        for (b, y) in x.iter().enumerate() {
            let blk = p.add(layout::col_at(L, b));
            let ((d0, d1), (m0, m1)) = if L == layout::Q4K {
                let h = p.add(layout::header_at(b));
                let ((hd0, hd1), (hm0, hm1)) =
                    (halves_to_f32(vld1q_u16(h as *const u16)), halves_to_f32(vld1q_u16(h.add(16) as *const u16)));
                let ((s0, s1), (n0, n1)) = (bytes(blk), bytes(blk.add(8)));
                ((vmulq_f32(hd0, s0), vmulq_f32(hd1, s1)), (vmulq_f32(hm0, n0), vmulq_f32(hm1, n1)))
            } else if layout::has_min(L) {
                let s = p.add(layout::scales_at(L, b));
                (halves_to_f32(vld1q_u16(s as *const u16)), halves_to_f32(vld1q_u16(s.add(16) as *const u16)))
            } else {
                let s = p.add(layout::scales_at(L, b));
                (halves_to_f32(vld1q_u16(s as *const u16)), (vdupq_n_f32(0.0), vdupq_n_f32(0.0)))
            };
            let yq = y.qs.as_ptr() as *const i32;
            let (mut s03, mut s47) = (vdupq_n_s32(0), vdupq_n_s32(0));
            for m in 0..4 {
                let yl = vreinterpretq_s8_s32(vld1q_dup_s32(yq.add(m)));
                let yh = vreinterpretq_s8_s32(vld1q_dup_s32(yq.add(4 + m)));
                let p03 = vld1q_u8(blk.add(at + 32 * m));
                let p47 = vld1q_u8(blk.add(at + 32 * m + 16));
                s03 = sdot(s03, vreinterpretq_s8_u8(vandq_u8(p03, lo)), yl);
                s03 = sdot(s03, vreinterpretq_s8_u8(vshrq_n_u8::<4>(p03)), yh);
                s47 = sdot(s47, vreinterpretq_s8_u8(vandq_u8(p47, lo)), yl);
                s47 = sdot(s47, vreinterpretq_s8_u8(vshrq_n_u8::<4>(p47)), yh);
            }
            if !layout::has_min(L) {
                let bias = vdupq_n_s32(8 * y.sum);
                (s03, s47) = (vsubq_s32(s03, bias), vsubq_s32(s47, bias));
            }
            acc0 = vfmaq_f32(acc0, vmulq_n_f32(d0, y.d), vcvtq_f32_s32(s03));
            acc1 = vfmaq_f32(acc1, vmulq_n_f32(d1, y.d), vcvtq_f32_s32(s47));
            if layout::has_min(L) {
                let ys = y.d * y.sum as f32;
                acc0 = vfmaq_n_f32(acc0, m0, ys);
                acc1 = vfmaq_n_f32(acc1, m1, ys);
            }
        }
        vst1q_f32(out.as_mut_ptr(), acc0);
        vst1q_f32(out.as_mut_ptr().add(4), acc1);
    }
}
