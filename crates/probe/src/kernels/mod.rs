//! Compute kernels of the built-in engine: 4- and 8-bit block dot products,
//! f32 helpers and a persistent thread pool.
//!
//! Weights stay in ggml's block layouts as read from the GGUF file (Q4_0: an
//! f16 scale and 16 bytes of nibbles per 32 weights; Q8_0: an f16 scale and
//! 32 signed bytes). Activations are quantized to [`BlockQ8`] (an f32 scale
//! and 32 signed bytes), as llama.cpp does, so a dot product is integer
//! multiply-adds and one float multiply per block.
//!
//! Which instructions run is chosen once at run time ([`isa`]): AVX2 + FMA +
//! F16C on x86-64 when the CPU has them, NEON on AArch64 (part of its
//! baseline), otherwise portable Rust. Run-time
//! selection keeps one binary fast on any x86-64 machine without
//! `-C target-cpu=native`, the reason candle-core's own AVX kernels (selected
//! at compile time by `cfg(target_feature)`) never run in a default build.
//!
//! This module is the one place the crate uses `unsafe`: SIMD intrinsics need
//! it, and the pool hands borrowed closures to its workers. Every `unsafe`
//! block states why it is sound, every `unsafe fn` has a `# Safety` section,
//! and `unsafe_op_in_unsafe_fn` is denied so that no operation is unsafe
//! without a block of its own. Bounds that guard unsafe reads are computed
//! with checked arithmetic: a wrapped product would pass a check and read
//! outside the buffer.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod attention;
mod buf;
#[cfg(target_arch = "x86_64")]
mod gqa;
mod history;
mod layout;
mod matmul;
#[cfg(target_arch = "aarch64")]
mod neon;
mod pool;
mod qmatrix;
mod scalar;
mod select;
#[cfg(target_arch = "x86_64")]
mod tile;
#[cfg(target_arch = "x86_64")]
mod vnni;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::sync::OnceLock;

pub use attention::{attend, KvRows};
pub use buf::{transparent_huge_pages, Arena, HalfBuf, WeightBuf};
pub use layout::GROUP;
pub use matmul::{argmax, for_each_chunk, matmul, span, Shares};
pub use pool::{allowed_cpus, pinning, set_pinning, Pool};
pub use qmatrix::{MatrixError, QMatrix, WeightType, WEIGHT_TYPES};
pub use select::{choose_kernels, x8_choice, x8_variant, Choice, X8, X8_VARIANTS};

/// Call the AVX2 kernel `x86::f` or the NEON kernel `neon::f` when [`isa`]
/// chose that instruction set, else `scalar::f`. `dispatch!(x86 f(..))`
/// is for kernels with no NEON code of their own: AArch64 runs the portable
/// one (which the compiler vectorizes for NEON).
macro_rules! dispatch {
    ($f:ident($($a:expr),*)) => {
        match isa() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `isa()` returns Avx2 only after detecting AVX2, FMA and
            // F16C, and every caller checks the lengths its kernel's `# Safety`
            // section requires before dispatching.
            Isa::Avx2 => unsafe { x86::$f($($a),*) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: NEON is part of the AArch64 baseline, and every caller
            // checks the lengths its kernel's `# Safety` section requires.
            Isa::Neon => unsafe { neon::$f($($a),*) },
            _ => scalar::$f($($a),*),
        }
    };
    (x86 $f:ident($($a:expr),*)) => {
        match isa() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Isa::Avx2 => unsafe { x86::$f($($a),*) },
            _ => scalar::$f($($a),*),
        }
    };
}

/// Weights per quantization block (ggml's QK4_0 = QK8_0 = 32).
pub const BLOCK: usize = 32;

/// An activation block: 32 values as `d * qs[i]`, with the sum of `qs`
/// (Q4_0 kernels multiply unsigned nibbles and subtract `8 * sum` once).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub struct BlockQ8 {
    /// Scale.
    pub d: f32,
    /// Sum of `qs`.
    pub sum: i32,
    /// Quantized values.
    pub qs: [i8; BLOCK],
}

/// The instruction set the kernels use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// x86-64 AVX2 with FMA and F16C.
    Avx2,
    /// AArch64 NEON (Advanced SIMD), without the dot-product extension.
    Neon,
    /// Portable Rust (the compiler's own vectorization).
    Portable,
}

impl Isa {
    /// Short name recorded with results.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx2 => "avx2",
            Isa::Neon => "neon",
            Isa::Portable => "portable",
        }
    }
}

/// The instruction set chosen for this process (detected once).
/// `POCKETBENCH_KERNELS=portable` forces the portable kernels, for tests and
/// for measuring what the SIMD path gains.
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        if std::env::var("POCKETBENCH_KERNELS").is_ok_and(|v| v == "portable") {
            return Isa::Portable;
        }
        detect()
    })
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Isa {
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c") {
        Isa::Avx2
    } else {
        Isa::Portable
    }
}

#[cfg(target_arch = "aarch64")]
fn detect() -> Isa {
    Isa::Neon
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect() -> Isa {
    Isa::Portable
}

/// Quantize `x` (a multiple of 32 long) into `out` (`x.len() / 32` blocks).
pub fn quantize_q8(x: &[f32], out: &mut [BlockQ8]) {
    assert_eq!(x.len(), out.len() * BLOCK, "quantize_q8: length mismatch");
    dispatch!(quantize_q8(x, out))
}

/// `g = silu(g) * u`, the SwiGLU of the feed-forward block.
pub fn silu_mul(g: &mut [f32], u: &[f32]) {
    assert_eq!(g.len(), u.len(), "silu_mul: length mismatch");
    dispatch!(x86 silu_mul(g, u))
}

/// Dot product of a Q4_0 row (`x.len()` blocks of 18 bytes) with `x`.
pub fn dot_q4_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    assert_eq!(row.len(), x.len() * 18, "dot_q4_0: length mismatch");
    dispatch!(dot_q4_0(row, x))
}

/// Dot products of eight 4-bit rows stored interleaved in layout `l` (the
/// matrix's [`QMatrix::layout`]; Q4_K `x` whole super-blocks of 256
/// weights) with `x`, written to `out`, by the variant and prefetch distance
/// [`choose_kernels`] chose.
pub(crate) fn dot_q4x8(l: u8, group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    dot_q4x8_run(l, group, x, out);
}

/// [`dot_q4x8`] over groups back to back (`run`), group `i`'s eight rows
/// into `out[8 i..8 i + 8]`: decode's loop over a thread's claimed groups,
/// with the choice read and the lengths checked once.
pub(crate) fn dot_q4x8_run(l: u8, run: &[u8], x: &[BlockQ8], out: &mut [f32]) {
    let n = group_len(l, x.len());
    assert!(
        out.len().is_multiple_of(8) && n.is_some_and(|n| run.len() == out.len() / 8 * n),
        "dot_q4x8: length mismatch"
    );
    let (n, c) = (n.unwrap_or(0), x8_choice());
    for (i, out) in out.as_chunks_mut::<8>().0.iter_mut().enumerate() {
        // SAFETY: the chosen variant is supported (`select::choose`); lengths checked above.
        unsafe { x8_dyn(c.variant, l, c.prefetch, &run[i * n..(i + 1) * n], x, out) }
    }
}

/// Tokens per tile of the chosen prefill kernel (1 where there is none:
/// the matrix-vector kernel runs once per token).
pub fn tile_tokens() -> usize {
    tile_tokens_of(x8_choice().tile)
}

fn tile_tokens_of(v: X8) -> usize {
    match v {
        #[cfg(target_arch = "x86_64")]
        X8::Avx2 | X8::AvxVnni => tile::T256,
        #[cfg(target_arch = "x86_64")]
        X8::Avx512Vnni => tile::T512,
        #[cfg(target_arch = "x86_64")]
        X8::Avx512Vnni16 => tile::T16,
        _ => 1,
    }
}

/// Groups of eight rows one call of the chosen prefill kernel takes.
pub fn tile_groups() -> usize {
    tile_groups_of(x8_choice().tile)
}

fn tile_groups_of(v: X8) -> usize {
    if v == X8::Avx512Vnni16 {
        2
    } else {
        1
    }
}

/// `$f::<L>(args)` for the layout `L` equal to `$l` (one of
/// [`layout::LAYOUTS`]; anything else is a bug).
macro_rules! with_layout {
    ($l:expr, $f:ident($($arg:expr),*)) => {{
        use layout::{grouped, Q40, Q41, Q4K};
        const Q40G2: u8 = grouped(Q40, 2);
        const Q41G2: u8 = grouped(Q41, 2);
        const Q40G4: u8 = grouped(Q40, 4);
        const Q41G4: u8 = grouped(Q41, 4);
        match $l {
            Q40 => $f::<Q40>($($arg),*),
            Q41 => $f::<Q41>($($arg),*),
            Q4K => $f::<Q4K>($($arg),*),
            Q40G2 => $f::<Q40G2>($($arg),*),
            Q41G2 => $f::<Q41G2>($($arg),*),
            Q40G4 => $f::<Q40G4>($($arg),*),
            Q41G4 => $f::<Q41G4>($($arg),*),
            l => unreachable!("no layout {l}"),
        }
    }};
}
/// Bytes of a group of `nb` block columns in layout `l`, or `None` where
/// the product overflows (or `nb` is not whole super-blocks of Q4_K, or
/// whole runs of columns sharing scales).
fn group_len(l: u8, nb: usize) -> Option<usize> {
    if !layout::fits(l, nb) {
        return None;
    }
    // A super-block's bytes bound every layout's bytes a column.
    nb.checked_mul(layout::SB).map(|_| layout::group_bytes(l, nb))
}

/// Groups of eight interleaved rows in layout `l` (the matrix's
/// [`QMatrix::layout`]; one, or [`tile_groups`] back to back) times
/// [`tile_tokens`] tokens of `nb` blocks each (`x`, token after token):
/// `out[g * tokens + t][lane]`.
pub fn dot_q4x8_tile(l: u8, groups: &[u8], x: &[BlockQ8], nb: usize, out: &mut [[f32; 8]]) {
    let t = tile_tokens();
    assert!(t > 1 && Some(x.len()) == nb.checked_mul(t), "dot_q4x8_tile: {t} tokens");
    let one = group_len(l, nb).expect("dot_q4x8_tile: group size");
    let v = x8_choice().tile;
    // One group of a two-group variant (a matrix's odd last one) takes the
    // eight-row kernel of the same tile size.
    let v = match (groups.len() == one, v) {
        (true, X8::Avx512Vnni16) => X8::Avx512Vnni,
        _ => v,
    };
    let k = tile_groups_of(v);
    assert!(
        Some(groups.len()) == one.checked_mul(k) && out.len() == k * t,
        "dot_q4x8_tile: {k} group(s) of {t} tokens"
    );
    // SAFETY: the variant is supported (the chosen one, or the eight-row
    // AVX-512 one beside the sixteen-row one); its tile size, group count
    // and the lengths are checked above.
    unsafe { tile_with(v, l, groups, x, nb, out) }
}

/// The prefill kernel of variant `v`.
///
/// # Safety
/// `v` must be [`X8::supported`] with `tile_tokens_of(v) > 1`, `x` that many
/// tokens of `nb` blocks, `group` `tile_groups_of(v)` groups of `nb` block
/// columns and `out` `tile_groups_of(v)` times the tokens.
#[allow(unused_variables)] // off x86-64 there is no tile kernel
unsafe fn tile_with(v: X8, l: u8, group: &[u8], x: &[BlockQ8], nb: usize, out: &mut [[f32; 8]]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as the caller guarantees.
    unsafe {
        with_layout!(l, tile_of(v, group, x, nb, out))
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("no tile kernels off x86-64")
}

/// [`tile_with`] for layout `L`.
///
/// # Safety
/// As [`tile_with`].
#[cfg(target_arch = "x86_64")]
unsafe fn tile_of<const L: u8>(v: X8, group: &[u8], x: &[BlockQ8], nb: usize, out: &mut [[f32; 8]]) {
    // SAFETY: as the caller guarantees.
    unsafe {
        match v {
            X8::Avx2 => tile::tile_avx2::<L>(group, x, nb, out),
            X8::AvxVnni => tile::tile_avxvnni::<L>(group, x, nb, out),
            X8::Avx512Vnni => tile::tile_avx512vnni::<L>(group, x, nb, out),
            X8::Avx512Vnni16 => tile::tile16_avx512vnni::<L>(group, x, nb, out),
            _ => unreachable!("only the x86 variants have tile kernels"),
        }
    }
}

/// [`x8_with`] with the layout chosen at run time.
///
/// # Safety
/// As [`x8_with`].
unsafe fn x8_dyn(v: X8, l: u8, ahead: usize, group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    // SAFETY: as the caller guarantees.
    unsafe { with_layout!(l, x8_with(v, ahead, group, x, out)) }
}

/// The interleaved 4-bit kernel of variant `v` for layout `L`
/// ([`layout`]); software prefetch `ahead` bytes on (0: none), where the
/// variant has it.
///
/// # Safety
/// `v` must be [`X8::supported`], and `group` must hold `x.len()` block
/// columns of layout `L` (`layout::group_bytes(L, x.len())` bytes; for Q4_K,
/// `x.len()` a multiple of 8).
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))] // only the AVX-512 kernel prefetches
unsafe fn x8_with<const L: u8>(v: X8, ahead: usize, group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    match v {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2, FMA and F16C detected (`supported`); lengths as the caller guarantees.
        X8::Avx2 => unsafe { tile::row8_avx2::<L>(group, x, x.len(), std::slice::from_mut(out)) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-VNNI detected besides AVX2 (`supported`); lengths as the caller guarantees.
        X8::AvxVnni => unsafe { tile::row8_avxvnni::<L>(group, x, x.len(), std::slice::from_mut(out)) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 F, BW and VNNI detected besides AVX2 (`supported`); lengths as the caller guarantees.
        X8::Avx512Vnni | X8::Avx512Vnni16 => unsafe {
            if ahead == 0 {
                vnni::dot_q4x8_avx512vnni::<L, false>(group, x, out, 0)
            } else {
                vnni::dot_q4x8_avx512vnni::<L, true>(group, x, out, ahead)
            }
        },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is part of the AArch64 baseline; lengths as the caller guarantees.
        X8::Neon if !layout::has_min(L) => unsafe { neon::dot_q4_0x8::<L>(group, x, out) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: the dot-product extension detected (`supported`); lengths as the caller guarantees.
        X8::NeonDot => unsafe { neon::dot_q4x8_dotprod::<L>(group, x, out) },
        _ => scalar::dot_q4x8::<L>(group, x, out),
    }
}

/// Dot product of a Q4_1 row (`x.len()` blocks of 20 bytes) with `x`. Only
/// the `rows % 8` tail rows of a matrix take this path, so it has no SIMD
/// variant.
pub fn dot_q4_1(row: &[u8], x: &[BlockQ8]) -> f32 {
    assert_eq!(row.len(), x.len() * 20, "dot_q4_1: length mismatch");
    scalar::dot_q4_1(row, x)
}

/// Dot product of a Q8_0 row (`x.len()` blocks of 34 bytes) with `x`.
pub fn dot_q8_0(row: &[u8], x: &[BlockQ8]) -> f32 {
    assert_eq!(row.len(), x.len() * 34, "dot_q8_0: length mismatch");
    dispatch!(dot_q8_0(row, x))
}

/// Dot product of an f16 row (`x.len()` little-endian halves) with f32 `x`.
pub fn dot_f16(row: &[u8], x: &[f32]) -> f32 {
    assert_eq!(Some(row.len()), x.len().checked_mul(2), "dot_f16: length mismatch");
    dispatch!(x86 dot_f16(row, x))
}

/// Dot product of an f32 row stored as bytes (`x.len()` little-endian
/// floats, not necessarily aligned) with `x`.
pub fn dot_f32_bytes(row: &[u8], x: &[f32]) -> f32 {
    assert_eq!(Some(row.len()), x.len().checked_mul(4), "dot_f32_bytes: length mismatch");
    dispatch!(x86 dot_f32_bytes(row, x))
}

/// Dot product of two f32 slices of equal length.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot_f32: length mismatch");
    dispatch!(x86 dot_f32(a, b))
}

/// `y += a * x`.
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "axpy: length mismatch");
    dispatch!(x86 axpy(a, x, y))
}

/// Halves (as bits) to f32; `dst` as long as `src`.
pub fn f16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "f16_to_f32_slice: length mismatch");
    dispatch!(f16_to_f32_slice(src, dst))
}

/// Wrapping sum of `xs`: the memory-bandwidth probe's read kernel.
pub fn stream_sum(xs: &[u64]) -> u64 {
    dispatch!(x86 stream_sum(xs))
}

/// In-place softmax (max-subtracted).
pub fn softmax(xs: &mut [f32]) {
    dispatch!(x86 softmax(xs))
}

/// f32 to IEEE half bits (round to nearest even).
pub fn f32_to_f16(v: f32) -> u16 {
    half::f16::from_f32(v).to_bits()
}

/// An IEEE half (as stored in ggml blocks) to f32.
pub fn f16_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

#[cfg(test)]
mod format_tests;
#[cfg(test)]
mod tests;
