//! Weight matrices in ggml's storage types, as read from GGUF, and the row
//! kernel each type multiplies with.
//!
//! Block layouts follow `ggml-common.h`: Q4_0 (f16 `d`, 16 bytes of nibbles;
//! `w = d * (q - 8)`), Q4_1 (f16 `d`, f16 `m`, 16 bytes; `w = d * q + m`),
//! Q8_0 (f16 `d`, 32 signed bytes), Q4_K (super-blocks of 256: f16 `d`, f16
//! `dmin`, 12 bytes of 6-bit sub-block scales and mins, 128 bytes of
//! nibbles; `w = d * sc * q - dmin * m` per sub-block of 32), F16 and F32.

use super::buf::WeightBuf;
use super::layout::{self, GROUP};
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

    /// The base interleaved layout of the type's whole groups of eight rows
    /// ([`super::layout`]; a matrix may share Q4_0's or Q4_1's scales among
    /// columns, [`QMatrix::layout`]); `None` for types kept row-major.
    pub(super) fn layout(self) -> Option<u8> {
        match self {
            WeightType::Q4_0 => Some(layout::Q40),
            WeightType::Q4_1 => Some(layout::Q41),
            WeightType::Q4K => Some(layout::Q4K),
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
            // The tail rows of a Q4_K matrix are kept as Q4_1 (`layout::repack_q4_k`).
            WeightType::Q4K => RowKernel::Q8(super::dot_q4_1),
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

/// Why bytes are not a matrix of the shape and type given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MatrixError(pub String);

/// A weight matrix in ggml's blocks.
///
/// Q8_0 and float matrices keep ggml's row-major layout. Q4_0, Q4_1 and
/// Q4_K matrices are repacked at load into groups of [`GROUP`] rows in the
/// layouts of [`super::layout`] (a tail of `rows % 8` rows stays row-major,
/// Q4_K's as Q4_1), so one 32-byte load of nibbles feeds all eight rows (see
/// `dot_q4_0x8`). Q4_0 and Q4_1 are repacked in place and keep their size
/// (8 × 18 = 16 + 128, 8 × 20 = 32 + 128), or shrink where two or four
/// blocks of every row repeat one scale (an `int4 group=64` or `group=128`
/// file: the scales are kept once, [`layout::shared_scales`]); Q4_K grows
/// from 144 to 148 bytes a row per 256 weights.
#[derive(Debug, Clone)]
pub struct QMatrix {
    /// Storage type.
    pub kind: WeightType,
    /// Output features.
    pub rows: usize,
    /// Input features (a multiple of the type's block).
    pub cols: usize,
    /// The blocks.
    pub data: WeightBuf,
    /// The layout of the interleaved groups, if any.
    layout: Option<u8>,
}

impl QMatrix {
    /// Take row-major ggml blocks (as stored in GGUF); checks the size and
    /// repacks Q4_0 and Q4_1 in place, Q4_K into a new buffer
    /// ([`layout::repack_q4_k`]).
    pub fn new(kind: WeightType, rows: usize, cols: usize, data: impl Into<WeightBuf>) -> Result<QMatrix, MatrixError> {
        QMatrix::new_in(kind, rows, cols, data, &mut WeightBuf::zeroed)
    }

    /// [`QMatrix::new`], a repacked Q4_K matrix written into `alloc(len)`
    /// (an [`super::Arena`]'s next bytes, say). A Q4_0 or Q4_1 matrix whose
    /// scales are shared ends up shorter than `data` was: `data` is truncated
    /// ([`super::Arena::reclaim`] gives an arena's bytes back).
    pub fn new_in(
        kind: WeightType,
        rows: usize,
        cols: usize,
        data: impl Into<WeightBuf>,
        alloc: &mut dyn FnMut(usize) -> WeightBuf,
    ) -> Result<QMatrix, MatrixError> {
        QMatrix::build(kind, rows, cols, data.into(), alloc).map_err(MatrixError)
    }

    fn build(
        kind: WeightType,
        rows: usize,
        cols: usize,
        data: WeightBuf,
        alloc: &mut dyn FnMut(usize) -> WeightBuf,
    ) -> Result<QMatrix, String> {
        let mut data = data;
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
        let m = QMatrix { kind, rows, cols, data: WeightBuf::from(Vec::new()), layout: kind.layout() };
        if kind == WeightType::Q4K {
            return Ok(QMatrix { data: layout::repack_q4_k(rows, cols, &data, alloc), ..m });
        }
        if let Some(base) = kind.layout() {
            let nb = cols / BLOCK;
            let l = layout::grouped(base, layout::shared_scales(base, rows, nb, &data));
            let used = layout::repack_q4(l, rows, nb, &mut data);
            data.truncate(used);
            return Ok(QMatrix { data, layout: Some(l), ..m });
        }
        Ok(QMatrix { data, ..m })
    }

    /// The layout of the interleaved groups, if any.
    pub(super) fn layout(&self) -> Option<u8> {
        self.layout
    }

    /// Block columns sharing one set of scales (1, or 2 or 4 for a Q4_0 or
    /// Q4_1 matrix stored with its group's scales repeated).
    pub fn shared_scales(&self) -> usize {
        self.layout.map_or(1, layout::shared)
    }

    /// Bytes of a row-major row in the file's type.
    pub(super) fn row_bytes(&self) -> usize {
        self.cols / self.kind.block_elems() * self.kind.block_bytes()
    }

    /// Bytes of one tail row as stored (Q4_K's are Q4_1).
    fn tail_row_bytes(&self) -> usize {
        match self.kind {
            WeightType::Q4K => self.cols / BLOCK * 20,
            _ => self.row_bytes(),
        }
    }

    /// Bytes of one interleaved group.
    fn group_bytes(&self) -> usize {
        self.layout().map_or(0, |l| layout::group_bytes(l, self.cols / BLOCK))
    }

    /// Interleaved groups (Q4_0, Q4_1 and Q4_K only).
    pub(super) fn groups(&self) -> usize {
        match self.layout() {
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
        let n = self.group_bytes();
        &self.data[g * n..(g + k) * n]
    }

    /// A row-major row (outside the interleaved groups).
    pub(super) fn plain_row(&self, r: usize) -> &[u8] {
        let g = self.groups();
        assert!(r >= g * GROUP, "row {r} is interleaved");
        let (start, n) = (g * self.group_bytes(), self.tail_row_bytes());
        &self.data[start + (r - g * GROUP) * n..start + (r - g * GROUP + 1) * n]
    }

    /// Row `r` as f32 (an embedding lookup).
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        assert_eq!(out.len(), self.cols, "dequantize_row: length mismatch");
        if r >= self.groups() * GROUP {
            let kind = if self.kind == WeightType::Q4K { WeightType::Q4_1 } else { self.kind };
            let (per, bb) = (kind.block_elems(), kind.block_bytes());
            for (blk, o) in self.plain_row(r).chunks_exact(bb).zip(out.chunks_exact_mut(per)) {
                dequantize_block(kind, blk, o);
            }
            return;
        }
        let (l, group, lane) = (self.layout.expect("a group has a layout"), self.group(r / GROUP), r % GROUP);
        for (b, o) in out.chunks_exact_mut(BLOCK).enumerate() {
            let (d, m, q) = layout::lane(l, group, b, lane);
            for (j, q) in q.iter().enumerate() {
                o[j] = (q & 0x0f) as f32 * d + m;
                o[j + BLOCK / 2] = (q >> 4) as f32 * d + m;
            }
        }
    }
}

fn half(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
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
        WeightType::Q4K => unreachable!("Q4_K rows are dequantized from their layout or as Q4_1"),
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
