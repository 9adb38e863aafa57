//! The native engine's kernels on their own: a matrix-vector product over a
//! matrix larger than any cache (~256 MB of weights) for every storage type,
//! on 1 and 2 threads, reported as bytes of weights streamed per second
//! (compare with the host's read bandwidth, `pocketbench host-info`: decode
//! cannot beat it), and each variant of the interleaved 4-bit kernel on a
//! cache-resident matrix (the instructions, not the memory).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pocketbench_probe::kernels::{isa, matmul, quantize_q8, BlockQ8, Pool, QMatrix, WeightType, BLOCK, WEIGHT_TYPES};

const COLS: usize = 3_584;
/// Weight bytes per streamed matrix.
const BYTES: usize = 256 << 20;

/// Pseudo-random bytes with every block's f16 scales (and minimums) set to
/// 0.01, so any bytes are valid blocks and the values stay finite.
fn matrix(kind: WeightType, rows: usize, cols: usize) -> QMatrix {
    let bb = kind.block_bytes();
    let mut data: Vec<u8> =
        (0..rows * cols / kind.block_elems() * bb).map(|i| ((i * 2_654_435_761usize) >> 7) as u8).collect();
    let scale = half::f16::from_f32(0.01).to_bits().to_le_bytes();
    let head = match kind {
        WeightType::Q4_0 | WeightType::Q8_0 => 2,
        WeightType::Q4_1 | WeightType::Q4K => 4,
        WeightType::F16 | WeightType::F32 => 0,
    };
    for blk in data.chunks_exact_mut(bb) {
        for s in blk[..head].chunks_exact_mut(2) {
            s.copy_from_slice(&scale);
        }
    }
    if kind == WeightType::F32 {
        for v in data.chunks_exact_mut(4) {
            v.copy_from_slice(&0.01f32.to_le_bytes());
        }
    }
    QMatrix::new(kind, rows, cols, data).expect("matrix")
}

fn activations(cols: usize) -> (Vec<f32>, Vec<BlockQ8>) {
    let x: Vec<f32> = (0..cols).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let mut xq = vec![BlockQ8::default(); cols / BLOCK];
    quantize_q8(&x, &mut xq);
    (x, xq)
}

fn streamed(c: &mut Criterion) {
    let (x, xq) = activations(COLS);
    for kind in WEIGHT_TYPES {
        let rows = (BYTES / (COLS / kind.block_elems() * kind.block_bytes())) / 8 * 8;
        let w = matrix(kind, rows, COLS);
        let mut out = vec![0f32; rows];
        let mut g = c.benchmark_group(format!("{}-matvec-{}", kind.name(), isa().name()));
        g.throughput(Throughput::Bytes(w.data.len() as u64));
        g.sample_size(20);
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            g.bench_function(format!("{rows}x{COLS} {threads} thread(s)"), |b| {
                b.iter(|| matmul(&pool, [&w], [&mut out[..]], &x, &xq, 1))
            });
        }
        g.finish();
    }
}

fn variants(c: &mut Criterion) {
    // 256 x 2048 Q4_0: 295 KB, cache-resident. Each variant runs in a
    // process of its own choice only through POCKETBENCH_KERNELS, so this
    // group times the variant this process chose, named in the group.
    let (x, xq) = activations(2048);
    let w = matrix(WeightType::Q4_0, 256, 2048);
    let mut out = vec![0f32; 256];
    let pool = Pool::new(1);
    let mut g = c.benchmark_group(format!("q4_0-cached-{}", pocketbench_probe::kernels::x8_variant().name()));
    g.throughput(Throughput::Elements((256 * 2048) as u64));
    g.bench_function("256x2048 1 thread", |b| b.iter(|| matmul(&pool, [&w], [&mut out[..]], &x, &xq, 1)));
    g.finish();
}

criterion_group!(benches, streamed, variants);
criterion_main!(benches);
