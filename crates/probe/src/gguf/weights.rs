//! The seeded random values of a model's tensors, generated and quantized
//! chunk by chunk, so building a 1.3B model never holds more than one chunk
//! of f32 weights in memory.

use std::path::PathBuf;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use super::{GgufError, TensorPlan, INIT_STD};

/// Elements generated and quantized at a time.
pub(super) const CHUNK_ELEMS: usize = 1 << 22;

/// The random stream of one tensor: seeded by the model seed and the tensor's name.
fn stream(t: &TensorPlan, seed: u64, std: f32) -> (StdRng, Normal<f32>) {
    let rng = StdRng::seed_from_u64(seed ^ pocketbench_types::fnv1a(t.name.as_bytes()));
    (rng, Normal::new(0.0f32, std).expect("a positive standard deviation"))
}

/// A whole tensor's f32 values at once, the same values [`generate`] streams
/// (for tests and small shapes: this holds the whole tensor in memory).
pub fn f32_values(t: &TensorPlan, seed: u64) -> Vec<f32> {
    if t.is_norm() {
        return vec![1.0; t.elems()];
    }
    let (mut rng, normal) = stream(t, seed, INIT_STD);
    (0..t.elems()).map(|_| normal.sample(&mut rng)).collect()
}

/// Seeded random values of one tensor, generated and quantized chunk by
/// chunk (whole rows, so block boundaries are respected); `sink` receives
/// the stored bytes in order.
pub fn generate(t: &TensorPlan, seed: u64, sink: impl FnMut(&[u8]) -> std::io::Result<()>) -> Result<(), GgufError> {
    generate_with(t, seed, CHUNK_ELEMS, INIT_STD, sink)
}

/// [`generate`] with a chosen chunk size (elements), so tests can check that
/// chunking does not change a byte.
pub fn generate_chunked(
    t: &TensorPlan,
    seed: u64,
    chunk_elems: usize,
    sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), GgufError> {
    generate_with(t, seed, chunk_elems, INIT_STD, sink)
}

pub(super) fn generate_with(
    t: &TensorPlan,
    seed: u64,
    chunk_elems: usize,
    std: f32,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), GgufError> {
    let cerr = |source| GgufError::Candle { tensor: t.name.clone(), source };
    let ioerr = |source| GgufError::Io { path: PathBuf::from(&t.name), source };
    if t.is_norm() {
        let ones: Vec<u8> = std::iter::repeat_n(1.0f32.to_le_bytes(), t.elems()).flatten().collect();
        return sink(&ones).map_err(ioerr);
    }
    let (rows, cols) = (t.dims[0], t.dims[1]);
    let (mut rng, normal) = stream(t, seed, std);
    let rows_per_chunk = (chunk_elems / cols).max(1);
    let mut r = 0;
    while r < rows {
        let n = rows_per_chunk.min(rows - r);
        let data: Vec<f32> = (0..n * cols).map(|_| normal.sample(&mut rng)).collect();
        if t.group != t.dtype.block_size() {
            sink(&quantize_grouped(&data, t.dtype, t.group)).map_err(ioerr)?;
        } else {
            let tensor = Tensor::from_vec(data, (n, cols), &Device::Cpu).map_err(cerr)?;
            let q = QTensor::quantize(&tensor, t.dtype).map_err(cerr)?;
            sink(&q.data().map_err(cerr)?).map_err(ioerr)?;
        }
        r += n;
    }
    Ok(())
}

/// Quantize `x` (whole groups) to Q4_0, Q4_1 or Q8_0 blocks of 32 whose
/// scale (and minimum) are computed over each group of `group` values and
/// repeated in each of its blocks. The formulas are ggml's reference
/// quantizers (`quantize_row_q4_0_ref`, `_q4_1_ref`, `_q8_0_ref`) with the
/// statistics taken over the group; at `group` = 32 they give ggml's bytes.
pub fn quantize_grouped(x: &[f32], dtype: GgmlDType, group: usize) -> Vec<u8> {
    let f16 = |v: f32| half::f16::from_f32(v).to_bits().to_le_bytes();
    let mut out = Vec::with_capacity(x.len() / 32 * dtype.type_size());
    for g in x.chunks(group) {
        match dtype {
            GgmlDType::Q4_1 => {
                let (min, max) = g.iter().fold((f32::MAX, f32::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
                let d = (max - min) / 15.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                for blk in g.chunks(32) {
                    out.extend(f16(d));
                    out.extend(f16(min));
                    let q = |v: f32| (((v - min) * id + 0.5) as u8).min(15);
                    out.extend((0..16).map(|j| q(blk[j]) | (q(blk[j + 16]) << 4)));
                }
            }
            GgmlDType::Q4_0 => {
                // The value of largest magnitude, sign kept, maps to -8.
                let max = g.iter().fold(0f32, |m, v| if v.abs() > m.abs() { *v } else { m });
                let d = max / -8.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                for blk in g.chunks(32) {
                    out.extend(f16(d));
                    let q = |v: f32| ((v * id + 8.5) as i8 as u8).min(15);
                    out.extend((0..16).map(|j| q(blk[j]) | (q(blk[j + 16]) << 4)));
                }
            }
            GgmlDType::Q8_0 => {
                let amax = g.iter().fold(0f32, |m, v| m.max(v.abs()));
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                for blk in g.chunks(32) {
                    out.extend(f16(d));
                    out.extend(blk.iter().map(|v| (v * id).round() as i8 as u8));
                }
            }
            other => unreachable!("{other:?} is never grouped (Storage::of)"),
        }
    }
    out
}
