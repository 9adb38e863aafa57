//! Every storage type against candle-core's ggml quantizers and
//! dequantizers (an implementation independent of ours): the repacked
//! matrix decodes to candle's values, and the product through the pool
//! equals the product of the decoded weights with the decoded activations.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::{Rng, SeedableRng};

use super::select::PREFETCH_AHEAD;
use super::*;

fn ggml(kind: WeightType) -> GgmlDType {
    match kind {
        WeightType::Q4_0 => GgmlDType::Q4_0,
        WeightType::Q4_1 => GgmlDType::Q4_1,
        WeightType::Q8_0 => GgmlDType::Q8_0,
        WeightType::Q4K => GgmlDType::Q4K,
        WeightType::F16 => GgmlDType::F16,
        WeightType::F32 => GgmlDType::F32,
    }
}

/// A random `rows × cols` matrix quantized by candle: (ggml bytes, candle's
/// dequantized values).
fn quantized(kind: WeightType, rows: usize, cols: usize, seed: u64) -> (Vec<u8>, Vec<f32>) {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    // An offset per row keeps Q4_1's and Q4_K's minimums away from zero.
    let v: Vec<f32> = (0..rows * cols).map(|i| r.random_range(-1.0f32..1.0) + 0.3 * ((i / cols) % 3) as f32).collect();
    let t = Tensor::from_vec(v, (rows, cols), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&t, ggml(kind)).unwrap();
    let back = q.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    (q.data().unwrap().into_owned(), back)
}

fn close(a: f32, b: f32, scale: f32) -> bool {
    (a - b).abs() <= 2e-4 * scale.max(1.0)
}

/// A random `rows × cols` matrix as an `int4 group=G` file stores it (Q4_0
/// or Q4_1 blocks, each group's scale repeated: the writer's own
/// [`crate::gguf::quantize_grouped`]): (bytes, candle's dequantized values
/// of those bytes).
fn grouped(kind: WeightType, group: usize, rows: usize, cols: usize, seed: u64) -> (Vec<u8>, Vec<f32>) {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let v: Vec<f32> = (0..rows * cols).map(|i| r.random_range(-1.0f32..1.0) + 0.3 * ((i / cols) % 3) as f32).collect();
    let bytes = crate::gguf::quantize_grouped(&v, ggml(kind), group);
    let q = candle_core::quantized::ggml_file::qtensor_from_ggml(ggml(kind), &bytes, vec![rows, cols], &Device::Cpu)
        .unwrap();
    let back = q.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    (bytes, back)
}

/// One matrix in every interleaved layout that `cols` allows: Q4_0, Q4_1
/// and Q4_K blocks, then Q4_0 and Q4_1 with groups of 64 and 128 (scales
/// shared by two and four columns), named, with the values they hold.
fn every_layout(rows: usize, cols: usize, seed: u64) -> Vec<(String, QMatrix, Vec<f32>)> {
    let mut out = Vec::new();
    for kind in [WeightType::Q4_0, WeightType::Q4_1, WeightType::Q4K] {
        if cols.is_multiple_of(kind.block_elems()) {
            let (bytes, want) = quantized(kind, rows, cols, seed);
            out.push((kind.name().to_string(), QMatrix::new(kind, rows, cols, bytes).unwrap(), want));
        }
        for group in [64, 128] {
            if kind != WeightType::Q4K && cols.is_multiple_of(group) {
                let (bytes, want) = grouped(kind, group, rows, cols, seed);
                let m = QMatrix::new(kind, rows, cols, bytes).unwrap();
                assert_eq!(m.shared_scales(), group / BLOCK, "{} group={group}", kind.name());
                out.push((format!("{} group={group}", kind.name()), m, want));
            }
        }
    }
    out
}

#[test]
fn every_type_decodes_to_candles_values_after_repacking() {
    // 21 rows: two interleaved groups of eight and a row-major tail of five.
    for kind in WEIGHT_TYPES {
        let (rows, cols) = (21, 512);
        let (bytes, want) = quantized(kind, rows, cols, 3);
        let m = QMatrix::new(kind, rows, cols, bytes).unwrap();
        let mut got = vec![0f32; cols];
        for r in 0..rows {
            m.dequantize_row(r, &mut got);
            // Q4_K's groups keep every factor exactly; its tail rows, kept
            // as Q4_1, round each sub-block's scale and minimum to f16:
            // 2^-11 of each, times at most 15 nibble steps.
            let tol = if kind == WeightType::Q4K && r >= 16 { 2e-3 } else { 1e-6 };
            for (c, (g, w)) in got.iter().zip(&want[r * cols..(r + 1) * cols]).enumerate() {
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{} row {r} col {c}: {g} vs {w}", kind.name());
            }
        }
    }
}

#[test]
fn a_grouped_file_keeps_each_scale_once_and_decodes_to_candles_values() {
    // 21 rows: two interleaved groups and a row-major tail of five, which
    // keeps the file's blocks.
    let (rows, cols) = (21, 512);
    for (name, m, want) in every_layout(rows, cols, 3) {
        if m.kind != WeightType::Q4K {
            // A group of eight rows: per `k` blocks the scales once
            // (f16 `d`, and Q4_1's `m`), then 128 nibble bytes per block.
            let (nb, k) = (cols / BLOCK, m.shared_scales());
            let (bb, scales) = if m.kind == WeightType::Q4_1 { (20, 32) } else { (18, 16) };
            let group = nb / k * (scales + 128 * k);
            assert_eq!(m.data.len(), rows / 8 * group + rows % 8 * nb * bb, "{name}");
        }
        let mut got = vec![0f32; cols];
        for r in 0..rows {
            m.dequantize_row(r, &mut got);
            let tol = if m.kind == WeightType::Q4K && r >= 16 { 2e-3 } else { 1e-6 };
            for (c, (g, w)) in got.iter().zip(&want[r * cols..(r + 1) * cols]).enumerate() {
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{name} row {r} col {c}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn a_file_whose_scales_do_not_repeat_keeps_them_per_block() {
    // Group 64 in the first row of each group of eight but not in one row:
    // every row of the groups must repeat its scales to share them.
    let (rows, cols) = (16, 256);
    let (mut bytes, _) = grouped(WeightType::Q4_0, 64, rows, cols, 8);
    let at = 11 * (cols / BLOCK) * 18 + 18; // row 11, block 1's scale
    bytes[at] ^= 1;
    let m = QMatrix::new(WeightType::Q4_0, rows, cols, bytes).unwrap();
    assert_eq!(m.shared_scales(), 1);
    assert_eq!(m.data.len(), rows * cols / BLOCK * 18);
}

#[test]
fn every_type_multiplies_like_its_decoded_weights() {
    let mut r = rand::rngs::StdRng::seed_from_u64(9);
    // 29 rows: three groups of eight (a sixteen-row tile and an odd group
    // through the eight-row one) and a row-major tail of five.
    let (rows, cols) = (29, 512);
    let mut matrices: Vec<(String, QMatrix)> = WEIGHT_TYPES
        .into_iter()
        .map(|kind| {
            (kind.name().to_string(), QMatrix::new(kind, rows, cols, quantized(kind, rows, cols, 5).0).unwrap())
        })
        .collect();
    matrices.extend(
        every_layout(rows, cols, 5).into_iter().filter(|(_, m, _)| m.shared_scales() > 1).map(|(n, m, _)| (n, m)),
    );
    for (name, m) in &matrices {
        let kind = m.kind;
        for tokens in [1, 3, 8, 13] {
            // 1: decode, the claimed groups as one run; 3: below any tile; 8 and 13: whole tiles of 4 or 8, then a tail.
            // Its own decoded weights (which the test above ties to candle's).
            let mut w = vec![0f32; rows * cols];
            for (row, out) in w.chunks_exact_mut(cols).enumerate() {
                m.dequantize_row(row, out);
            }
            let x: Vec<f32> = (0..tokens * cols).map(|_| r.random_range(-2.0f32..2.0)).collect();
            let mut xq = vec![BlockQ8::default(); tokens * cols / BLOCK];
            quantize_q8(&x, &mut xq);
            // Quantized weights read the Q8 activations; float weights the f32 ones.
            let xd: Vec<f32> = if kind.float() {
                x.clone()
            } else {
                xq.iter().flat_map(|b| b.qs.iter().map(move |q| *q as f32 * b.d)).collect()
            };
            for threads in [1, 2] {
                let pool = Pool::new(threads);
                let mut out = vec![0f32; rows * tokens];
                matmul(&pool, [m], [&mut out[..]], &x, &xq, tokens);
                for b in 0..tokens {
                    for row in 0..rows {
                        let wr = &w[row * cols..(row + 1) * cols];
                        let want: f32 = wr.iter().zip(&xd[b * cols..(b + 1) * cols]).map(|(a, c)| a * c).sum();
                        let got = out[b * rows + row];
                        assert!(
                            close(got, want, want.abs()),
                            "{name} t={threads} token {b} row {row}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_new_simd_kernels_match_the_portable_ones() {
    let mut r = rand::rngs::StdRng::seed_from_u64(2);
    for nb in [8, 16, 40] {
        let cols = nb * BLOCK;
        let x: Vec<f32> = (0..cols).map(|_| r.random_range(-2.0f32..2.0)).collect();
        let mut xq = vec![BlockQ8::default(); nb];
        quantize_q8(&x, &mut xq);
        let (h, _) = quantized(WeightType::F16, 1, cols, nb as u64);
        let (a, b) = (dot_f16(&h, &x), scalar::dot_f16(&h, &x));
        assert!(close(a, b, b.abs()), "f16 nb={nb}: {a} vs {b}");
        let (f, _) = quantized(WeightType::F32, 1, cols, nb as u64);
        let (a, b) = (dot_f32_bytes(&f, &x), scalar::dot_f32_bytes(&f, &x));
        assert!(close(a, b, b.abs()), "f32 nb={nb}: {a} vs {b}");
        for kind in [WeightType::Q4_1, WeightType::Q4K] {
            let (g, _) = quantized(kind, 8, cols, nb as u64);
            let m = QMatrix::new(kind, 8, cols, g).unwrap();
            let (mut a, mut b) = ([0f32; 8], [0f32; 8]);
            let l = m.layout().unwrap();
            dot_q4x8(l, m.group(0), &xq, &mut a);
            portable_x8(l, m.group(0), &xq, &mut b);
            for (p, q) in a.iter().zip(&b) {
                assert!(close(*p, *q, q.abs()), "{} x8 nb={nb}: {a:?} vs {b:?}", kind.name());
            }
        }
    }
}

#[test]
fn q4_k_needs_whole_super_blocks() {
    let e = QMatrix::new(WeightType::Q4K, 2, 96, vec![0; 2 * 144]).unwrap_err();
    assert!(e.0.contains("not a multiple of 256"), "{e}");
}

#[test]
fn every_supported_variant_of_the_interleaved_kernels_matches_the_portable_one() {
    let mut r = rand::rngs::StdRng::seed_from_u64(4);
    for nb in [1, 2, 5, 8, 24, 64] {
        let cols = nb * BLOCK;
        let x: Vec<f32> = (0..cols).map(|_| r.random_range(-2.0f32..2.0)).collect();
        let mut xq = vec![BlockQ8::default(); nb];
        quantize_q8(&x, &mut xq);
        for (name, m, _) in every_layout(8, cols, nb as u64 + 17) {
            let l = m.layout().unwrap();
            let mut want = [0f32; 8];
            portable_x8(l, m.group(0), &xq, &mut want);
            for v in X8_VARIANTS.into_iter().filter(|v| v.supported()) {
                for pf in PREFETCH_AHEAD {
                    let mut got = [0f32; 8];
                    // SAFETY: the variant is supported and the group holds nb block columns of its layout.
                    unsafe { x8_dyn(v, l, pf, m.group(0), &xq, &mut got) };
                    for (a, b) in got.iter().zip(&want) {
                        assert!(
                            close(*a, *b, b.abs()),
                            "{} {name} prefetch={pf} nb={nb}: {got:?} vs {want:?}",
                            v.name()
                        );
                    }
                }
            }
        }
    }
}

/// The portable kernel of layout `l`: the reference of the SIMD ones.
fn portable_x8(l: u8, group: &[u8], x: &[BlockQ8], out: &mut [f32; 8]) {
    use scalar::dot_q4x8;
    with_layout!(l, dot_q4x8(group, x, out))
}

#[test]
fn every_tile_kernel_matches_the_portable_kernel_token_by_token() {
    let mut r = rand::rngs::StdRng::seed_from_u64(6);
    for v in X8_VARIANTS.into_iter().filter(|v| v.supported() && tile_tokens_of(*v) > 1) {
        let (tt, k) = (tile_tokens_of(v), tile_groups_of(v));
        for nb in [1, 3, 4, 16, 28] {
            let cols = nb * BLOCK;
            let x: Vec<f32> = (0..tt * cols).map(|_| r.random_range(-2.0f32..2.0)).collect();
            let mut xq = vec![BlockQ8::default(); tt * nb];
            quantize_q8(&x, &mut xq);
            for (name, m, _) in every_layout(8 * k, cols, nb as u64 + 3) {
                let l = m.layout().unwrap();
                let mut got = vec![[0f32; 8]; k * tt];
                // SAFETY: supported, a tile kernel exists, and the lengths match.
                unsafe { tile_with(v, l, m.group_run(0, k), &xq, nb, &mut got) };
                for (i, row) in got.iter().enumerate() {
                    let (group, t) = (i / tt, i % tt);
                    let mut want = [0f32; 8];
                    portable_x8(l, m.group(group), &xq[t * nb..(t + 1) * nb], &mut want);
                    for (a, b) in row.iter().zip(&want) {
                        assert!(
                            close(*a, *b, b.abs()),
                            "{} {name} nb={nb} group {group} token {t}: {row:?} vs {want:?}",
                            v.name()
                        );
                    }
                }
            }
        }
    }
}

/// The `sdot` variant is offered exactly where the CPU has the dot-product
/// extension; `.ci/run` runs these tests under `qemu-aarch64 -cpu max` with
/// `POCKETBENCH_EXPECT_DOTPROD=1`, so the comparison above covers it there
/// rather than skipping it unseen.
#[cfg(target_arch = "aarch64")]
#[test]
fn the_dotprod_variant_is_offered_where_the_cpu_has_sdot() {
    let has = std::arch::is_aarch64_feature_detected!("dotprod");
    assert_eq!(X8::NeonDot.supported(), has && isa() == Isa::Neon);
    if std::env::var_os("POCKETBENCH_EXPECT_DOTPROD").is_some() {
        assert!(X8::NeonDot.supported(), "this CPU (or emulator) has no dot-product extension");
    }
}
