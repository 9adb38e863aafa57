use rand::{Rng, SeedableRng};

use super::*;

fn rng() -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(7)
}

fn random_blocks(n: usize, bytes: usize, r: &mut impl Rng) -> Vec<u8> {
    let mut v = vec![0u8; n * bytes];
    for blk in v.chunks_exact_mut(bytes) {
        let d = half::f16::from_f32(r.random_range(0.001f32..0.05)).to_bits().to_le_bytes();
        blk[..2].copy_from_slice(&d);
        for b in &mut blk[2..] {
            *b = r.random();
        }
    }
    v
}

fn activations(n: usize, r: &mut impl Rng) -> (Vec<f32>, Vec<BlockQ8>) {
    let x: Vec<f32> = (0..n * BLOCK).map(|_| r.random_range(-2.0f32..2.0)).collect();
    let mut q = vec![BlockQ8::default(); n];
    quantize_q8(&x, &mut q);
    (x, q)
}

#[test]
fn quantize_q8_round_trips_within_half_a_step() {
    let (x, q) = activations(4, &mut rng());
    for (xs, b) in x.chunks_exact(BLOCK).zip(&q) {
        assert_eq!(b.sum, b.qs.iter().map(|q| *q as i32).sum::<i32>());
        for (v, qi) in xs.iter().zip(&b.qs) {
            assert!((v - *qi as f32 * b.d).abs() <= b.d * 0.5 + 1e-6);
        }
    }
    let mut zero = [BlockQ8::default()];
    quantize_q8(&[0.0; BLOCK], &mut zero);
    assert_eq!(zero[0].d, 0.0);
}

#[test]
fn dispatched_kernels_match_the_portable_ones() {
    let mut r = rng();
    for nb in [1, 2, 3, 28, 96] {
        let (_, x) = activations(nb, &mut r);
        let w4 = random_blocks(nb, 18, &mut r);
        let w8 = random_blocks(nb, 34, &mut r);
        let (a, b) = (dot_q4_0(&w4, &x), scalar::dot_q4_0(&w4, &x));
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "q4_0 nb={nb}: {a} vs {b}");
        let (a, b) = (dot_q8_0(&w8, &x), scalar::dot_q8_0(&w8, &x));
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "q8_0 nb={nb}: {a} vs {b}");
    }
    for n in [0, 1, 7, 8, 33, 64, 130] {
        let a: Vec<f32> = (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let b: Vec<f32> = (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let (x, y) = (dot_f32(&a, &b), scalar::dot_f32(&a, &b));
        assert!((x - y).abs() <= 1e-4, "dot_f32 n={n}: {x} vs {y}");
        let (mut y1, mut y2) = (b.clone(), b.clone());
        axpy(0.5, &a, &mut y1);
        scalar::axpy(0.5, &a, &mut y2);
        for (p, q) in y1.iter().zip(&y2) {
            assert!((p - q).abs() <= 1e-6);
        }
    }
}

/// Row `r` of row-major ggml blocks, dequantized the obvious way.
fn plain_row_f32(data: &[u8], r: usize, nb: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(nb * BLOCK);
    for blk in data[r * nb * 18..(r + 1) * nb * 18].chunks_exact(18) {
        let d = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
        let lo = blk[2..].iter().map(|q| ((q & 0x0f) as i32 - 8) as f32 * d);
        let hi: Vec<f32> = blk[2..].iter().map(|q| ((q >> 4) as i32 - 8) as f32 * d).collect();
        out.extend(lo);
        out.extend(hi);
    }
    out
}

#[test]
fn q4_0_matrices_repack_without_changing_a_value() {
    let mut r = rng();
    let (rows, nb) = (8 * 3 + 5, 3);
    let plain = random_blocks(rows * nb, 18, &mut r);
    let m = QMatrix::new(WeightType::Q4_0, rows, nb * BLOCK, plain.clone()).unwrap();
    assert_eq!(m.data.len(), plain.len());
    let mut got = vec![0f32; nb * BLOCK];
    for row in 0..rows {
        m.dequantize_row(row, &mut got);
        assert_eq!(got, plain_row_f32(&plain, row, nb), "row {row}");
    }
}

#[test]
fn q4_0_dot_equals_the_dequantized_dot_of_the_quantized_activations() {
    let mut r = rng();
    let (_, x) = activations(3, &mut r);
    let plain = random_blocks(3, 18, &mut r);
    let w = plain_row_f32(&plain, 0, 3);
    let xf: Vec<f32> = x.iter().flat_map(|b| b.qs.iter().map(move |q| *q as f32 * b.d)).collect();
    let want: f32 = w.iter().zip(&xf).map(|(a, b)| a * b).sum();
    let got = dot_q4_0(&plain, &x);
    assert!((got - want).abs() <= 1e-3 * want.abs().max(1.0), "{got} vs {want}");
}

#[test]
fn matmul_splits_rows_and_tokens_across_threads() {
    let mut r = rng();
    // 37 rows: four interleaved groups of eight and a row-major tail of five.
    // One token takes decode's path (a thread's groups as one kernel run).
    let (rows, nb) = (37, 4);
    let plain4 = random_blocks(rows * nb, 18, &mut r);
    let plain8 = random_blocks(5 * nb, 34, &mut r);
    let m = QMatrix::new(WeightType::Q4_0, rows, nb * BLOCK, plain4.clone()).unwrap();
    let m2 = QMatrix::new(WeightType::Q8_0, 5, nb * BLOCK, plain8.clone()).unwrap();
    for (tokens, threads) in [1, 3].into_iter().flat_map(|k| [(k, 1), (k, 2), (k, 3)]) {
        let (xf, x) = activations(nb * tokens, &mut r);
        let pool = Pool::new(threads);
        let (mut out, mut out2) = (vec![0f32; rows * tokens], vec![0f32; 5 * tokens]);
        matmul(&pool, [&m, &m2], [&mut out, &mut out2], &xf, &x, tokens);
        for b in 0..tokens {
            let xb = &x[b * nb..(b + 1) * nb];
            for row in 0..rows {
                let want = scalar::dot_q4_0(&plain4[row * nb * 18..(row + 1) * nb * 18], xb);
                let got = out[b * rows + row];
                assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "row {row}: {got} vs {want}");
            }
            for row in 0..5 {
                assert_eq!(out2[b * 5 + row], dot_q8_0(&plain8[row * nb * 34..(row + 1) * nb * 34], xb));
            }
        }
    }
}

#[test]
fn interleaved_kernel_matches_the_portable_one() {
    let mut r = rng();
    for nb in [1, 2, 28] {
        let (_, x) = activations(nb, &mut r);
        let m = QMatrix::new(WeightType::Q4_0, 8, nb * BLOCK, random_blocks(8 * nb, 18, &mut r)).unwrap();
        let (mut a, mut b) = ([0f32; 8], [0f32; 8]);
        dot_q4x8(layout::Q40, &m.data, &x, &mut a);
        scalar::dot_q4x8::<{ layout::Q40 }>(&m.data, &x, &mut b);
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-4 * q.abs().max(1.0), "nb={nb}: {a:?} vs {b:?}");
        }
    }
}

#[test]
fn shares_are_claimed_once_and_a_thread_that_never_runs_leaves_nothing_undone() {
    use std::sync::atomic::{AtomicU32, Ordering};
    for (total, n, chunk) in [(0, 2, 1), (1, 2, 1), (7, 2, 3), (100, 3, 4), (1000, 4, 13)] {
        // Every item exactly once, the threads running at once.
        let seen: Vec<AtomicU32> = (0..total).map(|_| AtomicU32::new(0)).collect();
        let shares = Shares::new(total, n, chunk);
        std::thread::scope(|s| {
            for t in 0..n {
                let (shares, seen) = (&shares, &seen);
                s.spawn(move || shares.each(t, |i| _ = seen[i].fetch_add(1, Ordering::Relaxed)));
            }
        });
        assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1), "{total} over {n} by {chunk}");
        // Thread 0 alone (the others descheduled for the whole region) does it all.
        let shares = Shares::new(total, n, chunk);
        let mut mine = Vec::new();
        shares.each(0, |i| mine.push(i));
        mine.sort_unstable();
        assert_eq!(mine, (0..total).collect::<Vec<_>>());
        // Its own span comes first.
        let shares = Shares::new(total, n, chunk);
        let mut order = Vec::new();
        shares.each(1 % n, |i| order.push(i));
        let own = span(total, 1 % n, n);
        assert_eq!(&order[..own.len()], &own.collect::<Vec<_>>()[..]);
    }
}

#[test]
fn span_covers_everything_once() {
    for total in [0, 1, 5, 896, 1001] {
        for n in 1..5 {
            let spans: Vec<_> = (0..n).map(|t| span(total, t, n)).collect();
            assert_eq!(spans[0].start, 0);
            assert_eq!(spans[n - 1].end, total);
            for w in spans.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert!(w[0].len().abs_diff(w[1].len()) <= 1);
            }
        }
    }
}

/// Run `f` on its own thread and fail (instead of hanging the suite) when it
/// has not finished after `secs`: a lost wakeup in the pool would block forever.
fn within(secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        // A panic in `f` drops the sender: report that panic, not a timeout.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => std::panic::resume_unwind(h.join().unwrap_err()),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("still running after {secs} s: a lost wakeup?"),
    }
}

#[test]
fn pool_runs_every_index_once_per_call_many_times() {
    within(60, || {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let pool = Pool::new(2);
        let hits: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..20_000 {
            pool.run(&|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
        }
        for h in &hits {
            assert_eq!(h.load(Ordering::Relaxed), 20_000);
        }
        // After the workers have gone to sleep, a call still wakes them.
        std::thread::sleep(std::time::Duration::from_millis(50));
        pool.run(&|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 20_001));
    });
}

#[test]
fn a_shared_region_does_not_wait_for_a_late_worker_and_no_region_runs_twice() {
    within(120, || {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let pool = Pool::new(2);
        // Workers join 20 ms late: a shared region is done by the caller's
        // share alone, without waiting for them.
        pool.delay_joins(20_000);
        let (items, calls) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let start = std::time::Instant::now();
        for _ in 0..50 {
            let shares = Shares::new(64, 2, 4);
            pool.share(&|t| {
                calls.fetch_add(1, Ordering::Relaxed);
                shares.each(t, |_| _ = items.fetch_add(1, Ordering::Relaxed));
            });
        }
        let took = start.elapsed();
        assert_eq!(items.load(Ordering::Relaxed), 64 * 50, "every item of every region, once");
        assert!(took < std::time::Duration::from_millis(500), "50 regions waited for the late worker: {took:?}");
        assert!(calls.load(Ordering::Relaxed) < 100, "the late worker joined regions already closed");
        // `run` still waits for every index, late or not, once each.
        let hits: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..20 {
            pool.share(&|_| {});
            pool.run(&|i| _ = hits[i].fetch_add(1, Ordering::Relaxed));
        }
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 20), "{hits:?}");
        // On time, mixed regions many times over: still exact.
        pool.delay_joins(0);
        let (items, hits) = (AtomicUsize::new(0), AtomicUsize::new(0));
        for _ in 0..20_000 {
            let shares = Shares::new(16, 2, 1);
            pool.share(&|t| shares.each(t, |_| _ = items.fetch_add(1, Ordering::Relaxed)));
            pool.run(&|_| _ = hits.fetch_add(1, Ordering::Relaxed));
        }
        assert_eq!((items.into_inner(), hits.into_inner()), (16 * 20_000, 2 * 20_000));
    });
}

#[test]
#[should_panic(expected = "still running after 1 s")]
fn within_fails_a_call_that_never_returns() {
    within(1, || std::thread::sleep(std::time::Duration::from_secs(3600)));
}

#[test]
#[should_panic(expected = "attend: rows beyond the cache")]
fn attention_rejects_a_stride_whose_row_offsets_wrap_around() {
    // (len - 1) * stride = 2 * 2^63 wraps to 0 in release builds, so an
    // unchecked guard would pass and the kernel would read far outside `data`.
    let data = vec![0u16; 64];
    let huge = KvRows { data: &data, stride: 1 << 63, offset: 0 };
    let ok = KvRows { data: &data, stride: 8, offset: 0 };
    let (q, mut out, mut row, mut scores) = (vec![1.0f32; 8], vec![0.0f32; 8], vec![0.0f32; 8], vec![0.0f32; 3]);
    attend(&q, huge, ok, 3, 1.0, &mut scores, &mut row, &mut out);
}

#[test]
#[should_panic(expected = "attend: rows beyond the cache")]
fn attention_rejects_an_offset_past_the_end() {
    let data = vec![0u16; 64];
    let ok = KvRows { data: &data, stride: 8, offset: 0 };
    let far = KvRows { data: &data, stride: 8, offset: usize::MAX - 4 };
    let (q, mut out, mut row, mut scores) = (vec![1.0f32; 8], vec![0.0f32; 8], vec![0.0f32; 8], vec![0.0f32; 3]);
    attend(&q, ok, far, 3, 1.0, &mut scores, &mut row, &mut out);
}

#[test]
fn a_matrix_too_large_for_memory_is_an_error_not_a_wrapped_size() {
    // 2^60 rows x 64 columns: the byte count wraps a u64; unchecked it would
    // be compared (and might match) as a small number.
    let e = QMatrix::new(WeightType::Q8_0, 1 << 60, 64, Vec::new()).unwrap_err();
    assert!(e.0.contains("larger than memory"), "{e}");
}

#[test]
fn a_worker_panic_reaches_the_caller_and_the_pool_survives() {
    let pool = Pool::new(2);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.run(&|i| assert_ne!(i, 1, "boom"))));
    assert!(r.is_err());
    let n = std::sync::atomic::AtomicUsize::new(0);
    pool.run(&|_| {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(n.into_inner(), 2);
}

#[test]
fn argmax_takes_the_first_of_equals() {
    assert_eq!(argmax(&[1.0, 3.0, 3.0, -1.0]), 1);
    assert_eq!(argmax(&[]), 0);
    let mut xs: Vec<f32> = (0..1000).map(|i| -(i as f32)).collect();
    assert_eq!(argmax(&xs), 0);
    xs[997] = 5.0;
    xs[998] = 5.0;
    assert_eq!(argmax(&xs), 997);
    assert_eq!(argmax(&[f32::NEG_INFINITY; 3]), 0);
}

#[test]
fn softmax_and_half_conversion_match_the_portable_ones() {
    let mut r = rng();
    for n in [1, 7, 8, 9, 64, 1029] {
        let x: Vec<f32> = (0..n).map(|_| r.random_range(-30.0f32..30.0)).collect();
        let (mut a, mut b) = (x.clone(), x.clone());
        softmax(&mut a);
        scalar::softmax(&mut b);
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-6 + 1e-5 * q.abs(), "n={n}: {p} vs {q}");
        }
        assert!((a.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let h: Vec<u16> = x.iter().map(|v| f32_to_f16(*v)).collect();
        let (mut c, mut d) = (vec![0f32; n], vec![0f32; n]);
        f16_to_f32_slice(&h, &mut c);
        scalar::f16_to_f32_slice(&h, &mut d);
        assert_eq!(c, d);
        assert!(c.iter().zip(&x).all(|(p, q)| (p - q).abs() <= 0.02));
    }
    // Very negative inputs underflow to zero, not to garbage.
    let mut t = [0.0, -200.0, -1000.0, 0.0, -90.0, -87.0, -50.0, -10.0];
    softmax(&mut t);
    assert!((t[0] - 0.5).abs() < 1e-4 && t[1] < 1e-30 && t[2] < 1e-30);
}

#[test]
fn every_half_converts_like_the_portable_kernel() {
    // Zeros, subnormals, normals, infinities and NaNs of both signs.
    let h: Vec<u16> = (0..=u16::MAX).collect();
    let (mut c, mut d) = (vec![0f32; h.len()], vec![0f32; h.len()]);
    f16_to_f32_slice(&h, &mut c);
    scalar::f16_to_f32_slice(&h, &mut d);
    for ((bits, p), q) in h.iter().zip(&c).zip(&d) {
        assert!(p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()), "{bits:#06x}: {p} vs {q}");
    }
}

#[test]
fn the_simd_kernels_are_the_ones_under_test() {
    if std::env::var("POCKETBENCH_KERNELS").is_ok() {
        return;
    }
    #[cfg(target_arch = "aarch64")]
    assert_eq!(isa(), Isa::Neon);
    #[cfg(target_arch = "x86_64")]
    assert_eq!(
        isa() == Isa::Avx2,
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
    );
}

#[test]
fn grouped_attention_equals_one_head_at_a_time() {
    let mut r = rng();
    // Head widths through the 64-wide register path, the 8-wide loop and a tail.
    // Groups of 1-7 heads: the four- and two-head kernels and their remainders.
    // Lengths of many positions too: the key kernel's blocks of rows and a remainder.
    for (dh, group, kvh, len) in [
        (16, 3, 2, 37),
        (128, 2, 2, 9),
        (72, 1, 3, 5),
        (68, 2, 1, 1),
        (64, 7, 2, 19),
        (40, 5, 1, 3),
        (128, 4, 1, 2),
        (128, 2, 8, 77),
        (64, 3, 1, 64),
    ] {
        let stride = kvh * dh;
        let kc: Vec<u16> = (0..len * stride).map(|_| f32_to_f16(r.random_range(-1.0f32..1.0))).collect();
        let vc: Vec<u16> = (0..len * stride).map(|_| f32_to_f16(r.random_range(-1.0f32..1.0))).collect();
        let q: Vec<f32> = (0..group * dh).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let g = kvh - 1;
        let (mut scores, mut row, mut out) = (vec![0f32; group * len], vec![0f32; dh], vec![0f32; group * dh]);
        let rows = |data| KvRows { data, stride, offset: g * dh };
        attend(&q, rows(&kc), rows(&vc), len, 0.25, &mut scores, &mut row, &mut out);
        // Both widths of the SIMD kernels, whichever the start-up timing chose.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut outs = vec![("attend", out)];
        #[cfg(target_arch = "x86_64")]
        if isa() == Isa::Avx2 && dh % 8 == 0 {
            for (name, wide) in [("256-bit", false), ("512-bit", true)] {
                if wide && !is_x86_feature_detected!("avx512f") {
                    continue;
                }
                let mut out = vec![0f32; group * dh];
                // SAFETY: AVX2 (`isa`) and, when wide, AVX-512 F detected; the
                // sizes are attend's, which checked them above.
                unsafe { attention::grouped(wide, &q, rows(&kc), rows(&vc), len, 0.25, &mut scores, &mut out, dh) };
                outs.push((name, out));
            }
        }
        for (name, out) in &outs {
            for h in 0..group {
                let qh = &q[h * dh..(h + 1) * dh];
                let at = |c: &[u16], p: usize, j: usize| f16_to_f32(c[p * stride + g * dh + j]);
                let s: Vec<f32> =
                    (0..len).map(|p| (0..dh).map(|j| qh[j] * at(&kc, p, j)).sum::<f32>() * 0.25).collect();
                let m = s.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b));
                let e: Vec<f32> = s.iter().map(|v| (v - m).exp()).collect();
                let z: f32 = e.iter().sum();
                for j in 0..dh {
                    let want: f32 = (0..len).map(|p| e[p] / z * at(&vc, p, j)).sum();
                    assert!((out[h * dh + j] - want).abs() < 1e-4, "{name}: dh {dh} head {h} dim {j}");
                }
            }
        }
    }
}

#[test]
fn stream_sum_wraps_like_the_portable_one() {
    let xs: Vec<u64> = (0..1003u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let want = xs.iter().fold(0u64, |a, b| a.wrapping_add(*b));
    assert_eq!(stream_sum(&xs), want);
    assert_eq!(scalar::stream_sum(&xs), want);
    assert_eq!(stream_sum(&[]), 0);
}

#[test]
fn simd_quantize_and_swiglu_match_the_portable_ones() {
    let mut r = rng();
    let x: Vec<f32> = (0..5 * BLOCK).map(|i| if i < BLOCK { 0.0 } else { r.random_range(-3.0f32..3.0) }).collect();
    let (mut a, mut b) = (vec![BlockQ8::default(); 5], vec![BlockQ8::default(); 5]);
    quantize_q8(&x, &mut a);
    scalar::quantize_q8(&x, &mut b);
    assert_eq!(a, b);
    let u: Vec<f32> = (0..37).map(|_| r.random_range(-3.0f32..3.0)).collect();
    let g0: Vec<f32> = (0..37).map(|_| r.random_range(-20.0f32..20.0)).collect();
    let (mut g1, mut g2) = (g0.clone(), g0.clone());
    silu_mul(&mut g1, &u);
    scalar::silu_mul(&mut g2, &u);
    for (p, q) in g1.iter().zip(&g2) {
        assert!((p - q).abs() <= 1e-5 * q.abs().max(1.0), "{p} vs {q}");
    }
}
