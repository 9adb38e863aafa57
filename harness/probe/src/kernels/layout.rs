//! The interleaved 4-bit layouts the eight-row kernels read, as the const
//! parameter `L` of every such kernel, and the repacking of ggml's Q4_K
//! super-blocks into the third of them.
//!
//! A group of eight rows is a run of block columns of 32 weights each. A
//! column holds the eight rows' scales, then four 32-byte runs of nibbles
//! where run `m` holds bytes `4m..4m+4` of each row's 16 nibble bytes (byte
//! `k` holds weights `k` and `k + 16`), row after row:
//! - [`Q40`]: eight f16 `d` (16 bytes), 128 nibble bytes; `w = d * (q - 8)`.
//! - [`Q41`]: eight f16 `d`, eight f16 `m` (32 bytes), 128 bytes; `w = d * q + m`.
//! - [`Q4K`]: each super-block of eight columns starts with the eight rows'
//!   f16 `d` and f16 `-dmin` (32 bytes); each column then holds the rows'
//!   6-bit sub-block scales and minimums as bytes (8 + 8), 128 bytes;
//!   `w = d * sc * q + (-dmin) * m`. 148 bytes a row per 256 weights, 4.625
//!   bits a weight against ggml's 4.5 (which packs the 6-bit factors into 12
//!   bytes; unpacking them per row costs the kernel more than 2.8% of reads).

use super::buf::WeightBuf;
use super::qmatrix::GROUP;

/// Q4_0 columns.
pub(super) const Q40: u8 = 0;
/// Q4_1 columns.
pub(super) const Q41: u8 = 1;
/// Q4_K super-blocks.
pub(super) const Q4K: u8 = 2;

/// Bytes of one Q4_K super-block of a group: 32 header bytes, eight columns.
pub(super) const SB: usize = 32 + 8 * 144;

/// Bytes of one block column of a group (without a super-block header).
pub(super) const fn col_bytes(l: u8) -> usize {
    if l == Q41 {
        160
    } else {
        144
    }
}

/// Where the nibble runs start in a column.
pub(super) const fn nibbles_at(l: u8) -> usize {
    if l == Q41 {
        32
    } else {
        16
    }
}

/// Offset of block column `b` in a group.
#[inline(always)]
pub(super) const fn col_at(l: u8, b: usize) -> usize {
    if l == Q4K {
        (b / 8) * SB + 32 + (b % 8) * 144
    } else {
        b * col_bytes(l)
    }
}

/// Offset of the super-block header (f16 `d` × 8, f16 `-dmin` × 8) of
/// block column `b` (Q4_K only).
#[inline(always)]
pub(super) const fn header_at(b: usize) -> usize {
    (b / 8) * SB
}

/// Bytes of a group of `nb` block columns (for Q4_K a multiple of 8).
pub(super) const fn group_bytes(l: u8, nb: usize) -> usize {
    if l == Q4K {
        nb / 8 * SB
    } else {
        nb * col_bytes(l)
    }
}

/// Sub-block `j`'s 6-bit scale and minimum of a Q4_K super-block (ggml's
/// `get_scale_min_k4`).
pub(super) fn q4_k_scale_min(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// The 16 nibble bytes of sub-block `j` of a Q4_K super-block's quants
/// (`qs`, 128 bytes) in Q4_1's order: byte `k` holds weights `k` and `k + 16`
/// of the sub-block (ggml keeps them as the low or high halves of one 32-byte
/// run).
fn q4_k_nibbles(j: usize, qs: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let (run, shift) = (&qs[32 * (j / 2)..32 * (j / 2) + 32], 4 * (j % 2));
    (0..16).map(move |k| ((run[k] >> shift) & 0x0f) | (((run[k + 16] >> shift) & 0x0f) << 4))
}

fn half(b: &[u8], at: usize) -> f32 {
    super::f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Row-major Q4_K super-blocks rewritten as row-major Q4_1 blocks, eight per
/// super-block: sub-block `j`'s scale `d * sc_j` and minimum `-dmin * m_j`
/// become the block's f16 `d` and `m`, its nibbles kept exactly. The products
/// are rounded to f16 (a relative error of at most 2^-11). Only the
/// `rows % 8` tail rows of a Q4_K matrix are kept this way.
pub fn q4_k_as_q4_1(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 144 * 8 * 20);
    for sb in data.chunks_exact(144) {
        let (d, dmin, scales, qs) = (half(sb, 0), half(sb, 2), &sb[4..16], &sb[16..]);
        for j in 0..8 {
            let (sc, m) = q4_k_scale_min(j, scales);
            out.extend_from_slice(&half::f16::from_f32(d * sc as f32).to_bits().to_le_bytes());
            out.extend_from_slice(&half::f16::from_f32(-(dmin * m as f32)).to_bits().to_le_bytes());
            out.extend(q4_k_nibbles(j, qs));
        }
    }
    out
}

/// Row-major Q4_K (`rows` rows of `cols / 256` super-blocks) in the [`Q4K`]
/// layout, written into `alloc(len)`: whole groups of eight rows interleaved, then the `rows % 8` tail
/// rows as row-major Q4_1 ([`q4_k_as_q4_1`]). Every value is kept exactly:
/// `d` and `dmin` as the file's f16 (`-dmin` by its sign bit), the 6-bit
/// factors as bytes, the nibbles as they were.
pub(super) fn repack_q4_k(
    rows: usize,
    cols: usize,
    data: &[u8],
    alloc: &mut dyn FnMut(usize) -> WeightBuf,
) -> WeightBuf {
    let (nsb, groups) = (cols / 256, rows / GROUP);
    let rb = nsb * 144;
    let tail = q4_k_as_q4_1(&data[groups * GROUP * rb..]);
    let mut out = alloc(groups * nsb * SB + tail.len());
    let mut at = 0;
    for g in 0..groups {
        let sb = |lane: usize, s: usize| &data[(g * GROUP + lane) * rb + s * 144..][..144];
        for s in 0..nsb {
            for lane in 0..GROUP {
                let b = sb(lane, s);
                out[at + 2 * lane..at + 2 * lane + 2].copy_from_slice(&b[0..2]);
                out[at + 16 + 2 * lane..at + 18 + 2 * lane].copy_from_slice(&[b[2], b[3] ^ 0x80]);
            }
            at += 32;
            for j in 0..8 {
                for lane in 0..GROUP {
                    let b = sb(lane, s);
                    let (sc, m) = q4_k_scale_min(j, &b[4..16]);
                    out[at + lane] = sc;
                    out[at + 8 + lane] = m;
                    for (k, q) in q4_k_nibbles(j, &b[16..]).enumerate() {
                        out[at + 16 + 32 * (k / 4) + 4 * lane + k % 4] = q;
                    }
                }
                at += 144;
            }
        }
    }
    out[at..].copy_from_slice(&tail);
    out
}

/// Lane `lane`'s scale and minimum in block column `b` of a [`Q4K`] group:
/// `d * sc` and `-dmin * m`.
pub(super) fn q4_k_factors(group: &[u8], b: usize, lane: usize) -> (f32, f32) {
    let (h, c) = (header_at(b), col_at(Q4K, b));
    (half(group, h + 2 * lane) * group[c + lane] as f32, half(group, h + 16 + 2 * lane) * group[c + 8 + lane] as f32)
}

/// Lane `lane` of block column `b` of a [`Q4K`] group as a plain Q4_1-style
/// block: (scale, minimum, the 16 nibble bytes in Q4_1's order).
pub(super) fn q4_k_lane(group: &[u8], b: usize, lane: usize) -> (f32, f32, [u8; 16]) {
    let c = col_at(Q4K, b);
    let (d, m) = q4_k_factors(group, b, lane);
    let q = std::array::from_fn(|k| group[c + 16 + 32 * (k / 4) + 4 * lane + k % 4]);
    (d, m, q)
}
