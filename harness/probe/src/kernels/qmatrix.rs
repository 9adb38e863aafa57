//! Weight matrices in ggml's storage types, as read from GGUF, and the row
//! kernel each type multiplies with.
//!
//! Block layouts follow `ggml-common.h`: Q4_0 (f16 `d`, 16 bytes of nibbles;
//! `w = d * (q - 8)`), Q4_1 (f16 `d`, f16 `m`, 16 bytes; `w = d * q + m`),
//! Q8_0 (f16 `d`, 32 signed bytes), Q4_K (super-blocks of 256: f16 `d`, f16
//! `dmin`, 12 bytes of 6-bit sub-block scales and mins, 128 bytes of
//! nibbles; `w = d * sc * q - dmin * m` per sub-block of 32), F16 and F32.

use super::{f16_to_f32, BlockQ8, BLOCK};

/// Storage type of a [`QMatrix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightType {
    /// ggml Q4_0 (18 bytes per 32 weights).
    Q4_0,
    /// ggml Q4_1 (20 bytes per 32 weights).
    Q4_1,
    /// ggml Q8_0 (34 bytes per 32 weights).
    Q8_0,
    /// ggml Q4_K (144 bytes per 256 weights).
    Q4K,
    /// IEEE half (2 bytes per weight).
    F16,
    /// IEEE single (4 bytes per weight).
    F32,
}

/// Every storage type, for tests and benches.
pub const WEIGHT_TYPES: [WeightType; 6] =
    [WeightType::Q4_0, WeightType::Q4_1, WeightType::Q8_0, WeightType::Q4K, WeightType::F16, WeightType::F32];

impl WeightType {
    /// Weights per block.
    pub fn block_elems(self) -> usize {
        match self {
            WeightType::Q4K => 256,
            _ => BLOCK,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            WeightType::Q4_0 => 18,
            WeightType::Q4_1 => 20,
            WeightType::Q8_0 => 34,
            WeightType::Q4K => 144,
            WeightType::F16 => 2 * BLOCK,
            WeightType::F32 => 4 * BLOCK,
        }
    }

    /// ggml's name for the type (as `pocketbench` spells quantizations).
    pub fn name(self) -> &'static str {
        match self {
            WeightType::Q4_0 => "q4_0",
            WeightType::Q4_1 => "q4_1",
            WeightType::Q8_0 => "q8_0",
            WeightType::Q4K => "q4_k",
            WeightType::F16 => "f16",
            WeightType::F32 => "f32",
        }
    }

    /// Bytes per row and block ahead of the nibbles in the interleaved
    /// layout (`d`, or `d` and `m`); `None` for types kept row-major.
    fn header(self) -> Option<usize> {
        match self {
            WeightType::Q4_0 => Some(2),
            WeightType::Q4_1 => Some(4),
            _ => None,
        }
    }

    /// Whether rows multiply f32 activations (float weights) rather than
    /// Q8-quantized ones.
    pub fn float(self) -> bool {
        matches!(self, WeightType::F16 | WeightType::F32)
    }

    pub(super) fn row_kernel(self) -> RowKernel {
        match self {
            WeightType::Q4_0 => RowKernel::Q8(super::dot_q4_0),
            WeightType::Q4_1 => RowKernel::Q8(super::dot_q4_1),
            WeightType::Q8_0 => RowKernel::Q8(super::dot_q8_0),
            WeightType::Q4K => unreachable!("QMatrix::new stores Q4_K as Q4_1"),
            WeightType::F16 => RowKernel::F(super::dot_f16),
            WeightType::F32 => RowKernel::F(super::dot_f32_bytes),
        }
    }
}

/// A row kernel: a weight row (raw bytes) times one token's activations.
#[derive(Clone, Copy)]
pub(super) enum RowKernel {
    /// Quantized weights times Q8 activation blocks.
    Q8(fn(&[u8], &[BlockQ8]) -> f32),
    /// Float weights times f32 activations.
    F(fn(&[u8], &[f32]) -> f32),
}

/// Rows interleaved per group of a Q4_0 or Q4_1 matrix.
pub const GROUP: usize = 8;

/// A weight matrix in ggml's blocks.
///
/// Q8_0 and float matrices keep ggml's row-major layout. Q4_0 and Q4_1
/// matrices (and Q4_K ones, rewritten as Q4_1 first) are repacked at load,
/// in place, into groups of [`GROUP`] rows (a
/// tail of `rows % 8` rows stays row-major): for each block column, the
/// eight f16 scales (16 bytes; for Q4_1 then the eight f16 minimums), then
/// four 32-byte runs where run `m` holds bytes `4m..4m+4` of each row's 16
/// nibble bytes, row after row. One 32-byte load then feeds all eight rows
/// (see `dot_q4_0x8`). The size is unchanged: 8 × 18 = 16 + 128, and
/// 8 × 20 = 32 + 128.
#[derive(Debug, Clone)]
pub struct QMatrix {
    /// Storage type.
    pub kind: WeightType,
    /// Output features.
    pub rows: usize,
    /// Input features (a multiple of the type's block).
    pub cols: usize,
    /// The blocks.
    pub data: Vec<u8>,
}

impl QMatrix {
    /// Take row-major ggml blocks (as stored in GGUF); checks the size and
    /// repacks Q4_0 and Q4_1 in place. Q4_K is first rewritten as Q4_1
    /// blocks ([`q4_k_as_q4_1`]) and repacked as Q4_1: the matrix then says
    /// `Q4_1`, and takes the interleaved kernels.
    pub fn new(kind: WeightType, rows: usize, cols: usize, mut data: Vec<u8>) -> Result<QMatrix, String> {
        let per = kind.block_elems();
        if !cols.is_multiple_of(per) {
            return Err(format!("{cols} columns is not a multiple of {per}, the block of {}", kind.name()));
        }
        let want = rows
            .checked_mul(cols / per)
            .and_then(|b| b.checked_mul(kind.block_bytes()))
            .ok_or_else(|| format!("{rows}x{cols} {} is larger than memory can hold", kind.name()))?;
        if data.len() != want {
            return Err(format!("{rows}x{cols} {} needs {want} bytes, got {}", kind.name(), data.len()));
        }
        let kind = if kind == WeightType::Q4K {
            data = q4_k_as_q4_1(&data);
            WeightType::Q4_1
        } else {
            kind
        };
        let m = QMatrix { kind, rows, cols, data: Vec::new() };
        if let Some(h) = kind.header() {
            let (rb, bb) = (m.row_bytes(), kind.block_bytes());
            let mut plain = vec![0u8; GROUP * rb];
            for g in 0..m.groups() {
                let region = &mut data[g * GROUP * rb..(g + 1) * GROUP * rb];
                plain.copy_from_slice(region);
                for b in 0..cols / BLOCK {
                    let dst = &mut region[b * GROUP * bb..(b + 1) * GROUP * bb];
                    for lane in 0..GROUP {
                        let src = &plain[lane * rb + b * bb..lane * rb + (b + 1) * bb];
                        for k in 0..h / 2 {
                            dst[16 * k + 2 * lane..16 * k + 2 * lane + 2].copy_from_slice(&src[2 * k..2 * k + 2]);
                        }
                        for run in 0..4 {
                            let at = GROUP * h + 32 * run + 4 * lane;
                            dst[at..at + 4].copy_from_slice(&src[h + 4 * run..h + 4 + 4 * run]);
                        }
                    }
                }
            }
        }
        Ok(QMatrix { data, ..m })
    }

    pub(super) fn row_bytes(&self) -> usize {
        self.cols / self.kind.block_elems() * self.kind.block_bytes()
    }

    /// Interleaved groups (Q4_0 and Q4_1 only).
    pub(super) fn groups(&self) -> usize {
        match self.kind.header() {
            Some(_) => self.rows / GROUP,
            None => 0,
        }
    }

    /// Units of parallel work: groups, then single tail rows.
    pub(super) fn items(&self) -> usize {
        self.groups() + self.rows - self.groups() * GROUP
    }

    pub(super) fn group(&self, g: usize) -> &[u8] {
        self.group_run(g, 1)
    }

    /// Groups `g..g + k`, back to back.
    pub(super) fn group_run(&self, g: usize, k: usize) -> &[u8] {
        let n = GROUP * self.row_bytes();
        &self.data[g * n..(g + k) * n]
    }

    /// A row-major row (outside the interleaved groups).
    pub(super) fn plain_row(&self, r: usize) -> &[u8] {
        assert!(r >= self.groups() * GROUP, "row {r} is interleaved");
        let n = self.row_bytes();
        &self.data[r * n..(r + 1) * n]
    }

    /// Row `r` as f32 (an embedding lookup).
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        assert_eq!(out.len(), self.cols, "dequantize_row: length mismatch");
        let (per, bb) = (self.kind.block_elems(), self.kind.block_bytes());
        if r >= self.groups() * GROUP {
            for (blk, o) in self.plain_row(r).chunks_exact(bb).zip(out.chunks_exact_mut(per)) {
                dequantize_block(self.kind, blk, o);
            }
            return;
        }
        // Gather the lane's bytes back into a plain block, then decode it.
        let (lane, h) = (r % GROUP, self.kind.header().unwrap_or(0));
        let mut plain = [0u8; 20];
        for (blk, o) in self.group(r / GROUP).chunks_exact(GROUP * bb).zip(out.chunks_exact_mut(per)) {
            for k in 0..h / 2 {
                plain[2 * k..2 * k + 2].copy_from_slice(&blk[16 * k + 2 * lane..16 * k + 2 * lane + 2]);
            }
            for run in 0..4 {
                let at = GROUP * h + 32 * run + 4 * lane;
                plain[h + 4 * run..h + 4 + 4 * run].copy_from_slice(&blk[at..at + 4]);
            }
            dequantize_block(self.kind, &plain[..bb], o);
        }
    }
}

fn half(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
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

/// Row-major Q4_K super-blocks rewritten as row-major Q4_1 blocks, eight per
/// super-block: sub-block `j`'s scale `d * sc_j` and minimum `-dmin * m_j`
/// become the block's f16 `d` and `m`, and its 32 nibbles (the low or high
/// halves of one 32-byte run of the super-block) Q4_1's order (byte `k`
/// holds weights `k` and `k + 16`).
///
/// The nibbles are kept exactly; the two products are rounded to f16, a
/// relative error of at most 2^-11 of each sub-block's scale and minimum
/// (ggml keeps `d`, `dmin` in f16 and the 6-bit factors apart). The matrix
/// grows from 4.5 to 5.0 bits per weight: the price of running Q4_K through
/// the eight-row Q4_1 kernels (prefill tiles, VNNI and sdot variants) rather
/// than row-major ones.
pub fn q4_k_as_q4_1(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 144 * 8 * 20);
    for sb in data.chunks_exact(144) {
        let (d, dmin, scales, qs) = (half(sb, 0), half(sb, 2), &sb[4..16], &sb[16..]);
        for j in 0..8 {
            let (sc, m) = q4_k_scale_min(j, scales);
            out.extend_from_slice(&half::f16::from_f32(d * sc as f32).to_bits().to_le_bytes());
            out.extend_from_slice(&half::f16::from_f32(-(dmin * m as f32)).to_bits().to_le_bytes());
            let (run, shift) = (&qs[32 * (j / 2)..32 * (j / 2) + 32], 4 * (j % 2));
            out.extend((0..16).map(|k| ((run[k] >> shift) & 0x0f) | (((run[k + 16] >> shift) & 0x0f) << 4)));
        }
    }
    out
}

/// One row-major block to f32 (`out` is the type's block long).
fn dequantize_block(kind: WeightType, blk: &[u8], o: &mut [f32]) {
    match kind {
        WeightType::Q4_0 => {
            let d = half(blk, 0);
            for (j, q) in blk[2..].iter().enumerate() {
                o[j] = ((q & 0x0f) as i32 - 8) as f32 * d;
                o[j + BLOCK / 2] = ((q >> 4) as i32 - 8) as f32 * d;
            }
        }
        WeightType::Q4_1 => {
            let (d, m) = (half(blk, 0), half(blk, 2));
            for (j, q) in blk[4..].iter().enumerate() {
                o[j] = (q & 0x0f) as f32 * d + m;
                o[j + BLOCK / 2] = (q >> 4) as f32 * d + m;
            }
        }
        WeightType::Q8_0 => {
            let d = half(blk, 0);
            for (v, q) in o.iter_mut().zip(&blk[2..]) {
                *v = *q as i8 as f32 * d;
            }
        }
        WeightType::Q4K => unreachable!("QMatrix::new stores Q4_K as Q4_1"),
        WeightType::F16 => {
            for (v, b) in o.iter_mut().zip(blk.chunks_exact(2)) {
                *v = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
            }
        }
        WeightType::F32 => {
            for (v, b) in o.iter_mut().zip(blk.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
    }
}
