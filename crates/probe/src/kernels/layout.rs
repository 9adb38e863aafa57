//! The interleaved 4-bit layouts the eight-row kernels read, as the const
//! parameter `L` of every such kernel, and the repacking of ggml's blocks
//! into them.
//!
//! A group of eight rows is a run of block columns of 32 weights each. A
//! column holds four 32-byte runs of nibbles where run `m` holds bytes
//! `4m..4m+4` of each row's 16 nibble bytes (byte `k` holds weights `k` and
//! `k + 16`), row after row; `col_at(L, b) + nibbles_at(L)` is where column
//! `b`'s start. The eight rows' scales sit before them:
//! - [`Q40`]: eight f16 `d` (16 bytes), 128 nibble bytes; `w = d * (q - 8)`.
//! - [`Q41`]: eight f16 `d`, eight f16 `m` (32 bytes), 128 bytes; `w = d * q + m`.
//! - [`Q4K`]: each super-block of eight columns starts with the eight rows'
//!   f16 `d` and f16 `-dmin` (32 bytes); each column then holds the rows'
//!   6-bit sub-block scales and minimums as bytes (8 + 8), 128 bytes;
//!   `w = d * sc * q + (-dmin) * m`. 148 bytes a row per 256 weights, 4.625
//!   bits a weight against ggml's 4.5 (which packs the 6-bit factors into 12
//!   bytes; unpacking them per row costs the kernel more than 2.8% of reads).
//! - [`grouped`] Q4_0 or Q4_1 with `k` = 2 or 4 columns sharing one set of
//!   scales (the `int4 group=64` and `group=128` forms, which the file
//!   stores as Q4_0 or Q4_1 blocks with each group's scale repeated): the
//!   scales once, then the `k` columns' nibbles, 16 + 256 bytes a group of
//!   eight rows per 64 weights for Q4_0 (4.25 bits a weight against the
//!   file's 4.5), 32 + 256 for Q4_1 (4.5 against 5.0). A column's scales are
//!   at [`scales_at`]; for `k` = 1 that is the column's start.
//!
//! `L` packs the base format in its two low bits and `log2 k` above them.

use super::buf::WeightBuf;

/// Rows interleaved per group of a Q4_0, Q4_1 or Q4_K matrix.
pub const GROUP: usize = 8;

/// Q4_0 columns.
pub(super) const Q40: u8 = 0;
/// Q4_1 columns.
pub(super) const Q41: u8 = 1;
/// Q4_K super-blocks.
pub(super) const Q4K: u8 = 2;

/// Q4_0 (`base` [`Q40`]) or Q4_1 ([`Q41`]) with `k` (1, 2 or 4) block
/// columns sharing one set of scales.
pub(super) const fn grouped(base: u8, k: usize) -> u8 {
    base | ((k.trailing_zeros() as u8) << 2)
}

/// Every layout (the ones `with_layout!` dispatches): the three formats,
/// then Q4_0 and Q4_1 with scales shared by two and by four columns.
#[cfg(test)]
pub(super) const LAYOUTS: [u8; 7] = [Q40, Q41, Q4K, grouped(Q40, 2), grouped(Q41, 2), grouped(Q40, 4), grouped(Q41, 4)];

/// The format: [`Q40`], [`Q41`] or [`Q4K`].
pub(super) const fn base(l: u8) -> u8 {
    l & 3
}

/// Block columns sharing one set of scales (1 but for [`grouped`] layouts).
pub(super) const fn shared(l: u8) -> usize {
    1 << (l >> 2)
}

/// Whether weights carry a minimum (`w = d * q + m`: Q4_1 and Q4_K), rather
/// than Q4_0's fixed offset of 8.
pub(super) const fn has_min(l: u8) -> bool {
    base(l) != Q40
}

/// Bytes of one Q4_K super-block of a group: 32 header bytes, eight columns.
pub(super) const SB: usize = 32 + 8 * 144;

/// Bytes of one row's scales in a Q4_0 or Q4_1 block: f16 `d`, and for
/// Q4_1 f16 `m`. The ggml block is these and 16 nibble bytes.
const fn block_scales(base: u8) -> usize {
    if base == Q41 {
        4
    } else {
        2
    }
}

/// Bytes of the eight rows' scales of a Q4_0 or Q4_1 column (or group of
/// columns).
const fn scale_bytes(l: u8) -> usize {
    GROUP * block_scales(base(l))
}

/// Bytes of one set of shared scales and its columns (Q4_0 and Q4_1).
const fn run_bytes(l: u8) -> usize {
    scale_bytes(l) + 128 * shared(l)
}

/// Bytes a block column takes on average (a prefetch hint's stride).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the AVX-512 kernel's prefetch
pub(super) const fn col_bytes(l: u8) -> usize {
    if l == Q4K {
        SB / 8
    } else {
        run_bytes(l) / shared(l)
    }
}

/// Where the nibble runs start, counted from [`col_at`].
pub(super) const fn nibbles_at(l: u8) -> usize {
    if l == Q4K {
        16
    } else {
        scale_bytes(l)
    }
}

/// Offset of block column `b` in a group: its nibbles start
/// [`nibbles_at`] later. For Q4_0 and Q4_1 with `k` = 1 and for Q4_K the
/// column's own bytes start here; a grouped column's scales are elsewhere
/// ([`scales_at`]).
#[inline(always)]
pub(super) const fn col_at(l: u8, b: usize) -> usize {
    if l == Q4K {
        (b / 8) * SB + 32 + (b % 8) * 144
    } else {
        let k = shared(l);
        (b / k) * run_bytes(l) + (b % k) * 128
    }
}

/// Offset of the eight f16 `d` (then, for Q4_1, the eight f16 `m`) that
/// block column `b` of a Q4_0 or Q4_1 layout uses.
#[inline(always)]
pub(super) const fn scales_at(l: u8, b: usize) -> usize {
    (b / shared(l)) * run_bytes(l)
}

/// Offset of the super-block header (f16 `d` × 8, f16 `-dmin` × 8) of
/// block column `b` (Q4_K only).
#[inline(always)]
pub(super) const fn header_at(b: usize) -> usize {
    (b / 8) * SB
}

/// Bytes of a group of `nb` block columns (for Q4_K a multiple of 8, for
/// a grouped layout of its `k`).
pub(super) const fn group_bytes(l: u8, nb: usize) -> usize {
    if l == Q4K {
        nb / 8 * SB
    } else {
        nb / shared(l) * run_bytes(l)
    }
}

/// Whether `nb` block columns make whole groups of layout `l`.
pub(super) const fn fits(l: u8, nb: usize) -> bool {
    let per = if l == Q4K { 8 } else { shared(l) };
    nb.is_multiple_of(per)
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

/// Lane `lane` of block column `b` of a group in layout `l` as a plain
/// block: its scale `d`, the offset `m` each weight adds (`w = d * q + m`;
/// Q4_0's is `-8 d`, exact in f32) and its 16 nibble bytes in ggml's order.
pub(super) fn lane(l: u8, group: &[u8], b: usize, lane: usize) -> (f32, f32, [u8; 16]) {
    let (d, m) = if l == Q4K {
        q4_k_factors(group, b, lane)
    } else {
        let s = scales_at(l, b);
        let d = half(group, s + 2 * lane);
        (d, if has_min(l) { half(group, s + 16 + 2 * lane) } else { -8.0 * d })
    };
    let n = col_at(l, b) + nibbles_at(l);
    (d, m, std::array::from_fn(|k| group[n + 32 * (k / 4) + 4 * lane + k % 4]))
}

/// How many block columns (4, 2 or 1) can share one set of scales in a
/// row-major Q4_0 or Q4_1 matrix (`base`, `rows` rows of `nb` blocks)
/// without changing a weight: the largest `k` dividing `nb` such that every
/// run of `k` blocks of every row of the whole groups of eight repeats one
/// scale (and minimum) bit for bit, as the `int4 group=G` files do for `G`
/// = 32 `k`. Any file may be laid out so: the test is on its bytes, not on
/// what wrote it.
pub(super) fn shared_scales(base: u8, rows: usize, nb: usize, data: &[u8]) -> usize {
    let h = block_scales(base);
    let bb = 16 + h;
    let rows = rows / GROUP * GROUP;
    let repeats = |k: usize| {
        (0..rows).all(|r| {
            data[r * nb * bb..(r + 1) * nb * bb]
                .chunks_exact(k * bb)
                .all(|run| run.chunks_exact(bb).all(|blk| blk[..h] == run[..h]))
        })
    };
    [4, 2].into_iter().find(|&k| rows > 0 && nb.is_multiple_of(k) && repeats(k)).unwrap_or(1)
}

/// Row-major Q4_0 or Q4_1 (`rows` rows of `nb` blocks) rewritten in place
/// in layout `l` of that format, whose [`shared`] columns' scales
/// [`shared_scales`] found repeated: whole groups of eight rows interleaved,
/// then the `rows % 8` tail rows as they were. Returns how many bytes at
/// the front of `data` it now takes. Group `g` is written at or before where
/// it was read from (a group never grows) and after the groups before it,
/// so one group's copy is all the room it needs.
pub(super) fn repack_q4(l: u8, rows: usize, nb: usize, data: &mut [u8]) -> usize {
    let h = block_scales(base(l));
    let bb = 16 + h;
    let (rb, gb, groups) = (nb * bb, group_bytes(l, nb), rows / GROUP);
    let mut plain = vec![0u8; GROUP * rb];
    for g in 0..groups {
        plain.copy_from_slice(&data[g * GROUP * rb..(g + 1) * GROUP * rb]);
        let out = &mut data[g * gb..(g + 1) * gb];
        for (lane, row) in plain.chunks_exact(rb).enumerate() {
            for (b, src) in row.chunks_exact(bb).enumerate() {
                if b % shared(l) == 0 {
                    let s = scales_at(l, b) + 2 * lane;
                    out[s..s + 2].copy_from_slice(&src[0..2]);
                    if has_min(l) {
                        out[s + 16..s + 18].copy_from_slice(&src[2..4]);
                    }
                }
                let n = col_at(l, b) + nibbles_at(l) + 4 * lane;
                for run in 0..4 {
                    out[n + 32 * run..n + 32 * run + 4].copy_from_slice(&src[h + 4 * run..h + 4 * run + 4]);
                }
            }
        }
    }
    let tail = groups * GROUP * rb..rows * rb;
    data.copy_within(tail.clone(), groups * gb);
    groups * gb + tail.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_covers_each_byte_of_a_group_once() {
        for l in LAYOUTS {
            let nb = 16;
            let mut seen = vec![0u8; group_bytes(l, nb)];
            let mut mark = |at: usize, n: usize| seen[at..at + n].iter_mut().for_each(|s| *s += 1);
            for b in 0..nb {
                mark(col_at(l, b) + nibbles_at(l), 128);
                if l == Q4K {
                    mark(col_at(l, b), 16); // the 6-bit factors as bytes
                    if b % 8 == 0 {
                        mark(header_at(b), 32);
                    }
                } else if b % shared(l) == 0 {
                    mark(scales_at(l, b), if has_min(l) { 32 } else { 16 });
                }
            }
            assert!(seen.iter().all(|s| *s == 1), "layout {l}: {seen:?}");
            assert_eq!(col_bytes(l) * nb, seen.len(), "layout {l}");
        }
    }

    #[test]
    fn grouped_layouts_name_their_format_and_sharing() {
        for (l, b, k) in [(grouped(Q40, 1), Q40, 1), (grouped(Q41, 2), Q41, 2), (grouped(Q40, 4), Q40, 4)] {
            assert_eq!((base(l), shared(l)), (b, k));
        }
        assert_eq!(grouped(Q41, 1), Q41);
        assert!(fits(grouped(Q40, 4), 8) && !fits(grouped(Q40, 4), 6) && !fits(Q4K, 4));
    }
}
