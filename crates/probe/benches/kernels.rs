//! The native engine's kernels on their own: a matrix-vector product over a
//! matrix larger than any cache (~256 MB of weights) for every storage type,
//! on 1 and 2 threads, reported as bytes of weights streamed per second
//! (compare with the host's read bandwidth, `pocketbench host-info`: decode
//! cannot beat it), and each variant of the interleaved 4-bit kernel on a
//! cache-resident matrix (the instructions, not the memory): one token
//! (decode) and a 128-token prompt chunk (the prefill tiles), Q4_0, Q4_1, Q4_K and
//! the group-64 forms of Q4_0 and Q4_1;
//! and grouped-query attention over 512 cached positions (in L2), and over a
//! whole model's KV cache streamed from memory as decode reads it.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pocketbench_probe::kernels::{
    attend, f32_to_f16, isa, matmul, quantize_q8, x8_choice, BlockQ8, HalfBuf, KvRows, Pool, QMatrix, WeightType,
    BLOCK, WEIGHT_TYPES,
};

const COLS: usize = 3_584;
/// Weight bytes per streamed matrix.
const BYTES: usize = 256 << 20;

/// Pseudo-random bytes with every block's f16 scales (and minimums) near
/// 0.01, so any bytes are valid blocks and the values stay finite. The
/// scales differ from block to block but repeat within each group of
/// `group` weights: at 32 the matrix keeps one scale a block, at 64 (an
/// `int4 group=64` file) the engine keeps one for two blocks.
fn matrix(kind: WeightType, rows: usize, cols: usize, group: usize) -> QMatrix {
    let bb = kind.block_bytes();
    let mut data: Vec<u8> =
        (0..rows * cols / kind.block_elems() * bb).map(|i| ((i * 2_654_435_761usize) >> 7) as u8).collect();
    let head = match kind {
        WeightType::Q4_0 | WeightType::Q8_0 => 2,
        WeightType::Q4_1 | WeightType::Q4K => 4,
        WeightType::F16 | WeightType::F32 => 0,
    };
    let per = (group / kind.block_elems()).max(1);
    for (i, blk) in data.chunks_exact_mut(bb).enumerate() {
        let scale = half::f16::from_f32(0.01 * (1.0 + ((i / per) % 7) as f32 / 64.0)).to_bits().to_le_bytes();
        for s in blk[..head].chunks_exact_mut(2) {
            s.copy_from_slice(&scale);
        }
    }
    if kind == WeightType::F32 {
        for v in data.chunks_exact_mut(4) {
            v.copy_from_slice(&0.01f32.to_le_bytes());
        }
    }
    let m = QMatrix::new(kind, rows, cols, data).expect("matrix");
    assert_eq!(m.shared_scales(), if head > 0 && kind != WeightType::Q4K { per } else { 1 }, "scales shared");
    m
}

/// The formats benched: every storage type, then Q4_0 and Q4_1 as an
/// `int4 group=64` file stores them (scales kept once for two blocks).
fn formats() -> Vec<(WeightType, usize, String)> {
    let mut f: Vec<_> = WEIGHT_TYPES.into_iter().map(|k| (k, BLOCK, k.name().to_string())).collect();
    f.extend([WeightType::Q4_0, WeightType::Q4_1].map(|k| (k, 64, format!("{}-group64", k.name()))));
    f
}

fn activations(cols: usize) -> (Vec<f32>, Vec<BlockQ8>) {
    let x: Vec<f32> = (0..cols).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let mut xq = vec![BlockQ8::default(); cols / BLOCK];
    quantize_q8(&x, &mut xq);
    (x, xq)
}

fn streamed(c: &mut Criterion) {
    let (x, xq) = activations(COLS);
    for (kind, group, name) in formats() {
        let rows = (BYTES / (COLS / kind.block_elems() * kind.block_bytes())) / 8 * 8;
        let w = matrix(kind, rows, COLS, group);
        let mut out = vec![0f32; rows];
        let mut g = c.benchmark_group(format!("{name}-matvec-{}", isa().name()));
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
    // 256 x 2048: 295 KB of Q4_0, cache-resident. Each variant runs in a
    // process of its own choice only through POCKETBENCH_KERNELS, so these
    // groups time the variants this process chose, named in the group.
    let choice = x8_choice();
    let four_bit =
        |(k, ..): &(WeightType, usize, String)| matches!(k, WeightType::Q4_0 | WeightType::Q4_1 | WeightType::Q4K);
    for (kind, group, name) in formats().into_iter().filter(four_bit) {
        let w = matrix(kind, 256, 2048, group);
        for tokens in [1, 128] {
            let (x, xq) = activations(2048 * tokens);
            let mut out = vec![0f32; 256 * tokens];
            let pool = Pool::new(1);
            let variant = if tokens == 1 { choice.variant } else { choice.tile };
            let mut g = c.benchmark_group(format!("{name}-cached-{}", variant.name()));
            g.throughput(Throughput::Elements((256 * 2048 * tokens) as u64));
            g.bench_function(format!("256x2048 {tokens} token(s) 1 thread"), |b| {
                b.iter(|| matmul(&pool, [&w], [&mut out[..]], &x, &xq, tokens))
            });
            g.finish();
        }
    }
}

fn attention(c: &mut Criterion) {
    // One KV head's query heads (2: Qwen3-0.6B; 7: MNN-Pocket) over 512
    // positions of an f16 cache, L2-resident.
    const LEN: usize = 512;
    let width = if x8_choice().attention_512 { 512 } else { 256 };
    let mut g = c.benchmark_group(format!("attention-{width}-bit"));
    for (dh, group) in [(128, 2), (64, 7)] {
        let cache: Vec<u16> = (0..LEN * dh).map(|i| f32_to_f16(((i % 29) as f32 - 14.0) / 14.0)).collect();
        let rows = KvRows { data: &cache, stride: dh, offset: 0 };
        let q: Vec<f32> = (0..group * dh).map(|i| ((i % 11) as f32 - 5.0) / 50.0).collect();
        let (mut scores, mut row, mut out) = (vec![0f32; group * LEN], vec![0f32; dh], vec![0f32; group * dh]);
        g.throughput(Throughput::Elements((2 * group * dh * LEN) as u64));
        g.bench_function(format!("{group} heads of {dh}, {LEN} positions"), |b| {
            b.iter(|| attend(&q, rows, rows, LEN, 0.1, &mut scores, &mut row, &mut out))
        });
    }
    g.finish();
}

/// One decode token's attention over a whole model's KV cache, streamed
/// from memory as at decode: Qwen3-0.6B's 28 layers x 8 KV heads of 128
/// (two query heads each) at 1088 cached positions, the study's mean decode
/// context; 125 MB of f16 keys and values, far past the L3, in memory
/// advised for huge pages as the engine keeps it. Compare with one thread's
/// read bandwidth (`pocketbench host-info`).
fn attention_streamed(c: &mut Criterion) {
    const LEN: usize = 1088;
    let (layers, kv_heads, group, dh) = (28, 8, 2, 128);
    // Keys, then values, of every KV head, head-major as the engine keeps them.
    let per_layer = 2 * kv_heads * LEN * dh;
    let width = if x8_choice().attention_512 { 512 } else { 256 };
    let mut g = c.benchmark_group(format!("attention-{width}-bit-streamed"));
    g.throughput(Throughput::Bytes((layers * per_layer * 2) as u64));
    g.sample_size(20);
    let mut cache = HalfBuf::zeroed(layers * per_layer);
    for (i, h) in cache.iter_mut().enumerate() {
        *h = f32_to_f16(((i % 29) as f32 - 14.0) / 14.0);
    }
    let q: Vec<f32> = (0..group * dh).map(|i| ((i % 11) as f32 - 5.0) / 50.0).collect();
    let (mut scores, mut row, mut out) = (vec![0f32; group * LEN], vec![0f32; dh], vec![0f32; group * dh]);
    g.bench_function("Qwen3-0.6B, one token at 1088 positions", |b| {
        b.iter(|| {
            for l in 0..layers {
                let layer = &cache[l * per_layer..(l + 1) * per_layer];
                let (k, v) = layer.split_at(per_layer / 2);
                for h in 0..kv_heads {
                    let rows = |data| KvRows { data, stride: dh, offset: h * LEN * dh };
                    attend(&q, rows(k), rows(v), LEN, 0.1, &mut scores, &mut row, &mut out);
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, streamed, variants, attention, attention_streamed);
criterion_main!(benches);
