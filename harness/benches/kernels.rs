//! The native engine's kernels on their own: one Q4_0 matrix-vector product
//! over a matrix larger than any cache (264 MB), on 1 and 2 threads, reported
//! as bytes of weights streamed per second. Compare with the host's read
//! bandwidth (`pocketbench host-info`): decode cannot beat it.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pocketbench::kernels::{isa, matmul, quantize_q8, BlockQ8, Pool, QMatrix, WeightType, BLOCK};

const ROWS: usize = 131_072;
const COLS: usize = 3_584;

fn bench(c: &mut Criterion) {
    let nb = COLS / BLOCK;
    // Any bytes are valid Q4_0 blocks; scales set to 0.01 keep values finite.
    let mut data: Vec<u8> = (0..ROWS * nb * 18).map(|i| ((i * 2_654_435_761usize) >> 7) as u8).collect();
    for blk in data.chunks_exact_mut(18) {
        blk[..2].copy_from_slice(&half::f16::from_f32(0.01).to_bits().to_le_bytes());
    }
    let w = QMatrix::new(WeightType::Q4_0, ROWS, COLS, data).expect("matrix");
    let x: Vec<f32> = (0..COLS).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let mut xq = vec![BlockQ8::default(); nb];
    quantize_q8(&x, &mut xq);
    let mut out = vec![0f32; ROWS];
    let mut g = c.benchmark_group(format!("q4_0-matvec-{}", isa().name()));
    g.throughput(Throughput::Bytes(w.data.len() as u64));
    g.sample_size(30);
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        g.bench_function(format!("{ROWS}x{COLS} {threads} thread(s)"), |b| {
            b.iter(|| matmul(&pool, [&w], [&mut out[..]], &x, &xq, 1))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
