//! Grouped-query attention kernels on x86-64 over the f16 KV cache, at two
//! widths from one template: 256-bit (AVX2, FMA, F16C) and 512-bit
//! (AVX-512 F). The query heads of one KV head share each key and value
//! row: the row is converted from f16 once for all of them, where one head
//! at a time converted it once per head (seven times for MNN-Pocket's 14/2
//! heads). Prefill attention is f32 multiply-adds bound by the vector width,
//! so where the CPU runs 512-bit FMAs at the rate of 256-bit ones (Zen 5)
//! the wide kernels do the same work in half the instructions; the start-up
//! timing ([`super::select`]) keeps the 256-bit ones where they are not faster.
//!
//! Every function's `# Safety`: the CPU has the features of its module
//! (`w256`: AVX2, FMA and F16C; `w512`: AVX-512 F besides), `dh` is a
//! multiple of the lanes, `q` and `out` hold `H * dh` values, `scores`
//! (`w`) at least `H * len`, and `offset + p * stride + dh <= data.len()`
//! for every `p < len`.

macro_rules! gqa_kernels {
    ($module:ident, $features:literal, $lanes:expr, $v:ty,
     zero: $zero:expr, splat: $splat:ident, load: $load:ident, store: $store:ident, fma: $fma:ident,
     half: |$p:ident| $half:expr, reduce: $reduce:path,
     fold: |$x:ident| $fold:expr, sums: $sums:path) => {
        pub(super) mod $module {
            #[allow(unused_imports)]
            use std::arch::x86_64::*;

            /// `out[h * len + p] = scale * q_h · k[p]` for the `H` heads of
            /// `q`, `R` key rows at a time: `H * R` independent sums, enough
            /// (eight) to keep both FMA pipes busy through their latency
            /// where the registers allow (one or two heads take four rows
            /// on 256-bit vectors: 3.7 against 5.5 µs for two heads of 128
            /// over 512 positions; three or four heads take two).
            ///
            /// # Safety
            /// As the module's header says.
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)] // the key rows' geometry
            pub(in super::super) unsafe fn scores<const H: usize, const R: usize>(
                q: &[f32],
                dh: usize,
                data: &[u16],
                stride: usize,
                offset: usize,
                scale: f32,
                len: usize,
                out: &mut [f32],
            ) {
                // SAFETY: the features as the caller guarantees; the caller's bounds keep every key row, query and output index below inside its slice.
                unsafe {
                    let qp = q.as_ptr();
                    // Blocks of `rows` key rows: each query vector is loaded
                    // once for all of them, and their sums reduced through
                    // one shuffle tree, where a row at a time reduced each
                    // score on its own (8 uops a score, against the 8 FMAs
                    // of a 128-wide head on 512-bit vectors).
                    let mut p0 = 0;
                    while p0 + R <= len {
                        let base: [*const u16; R] =
                            std::array::from_fn(|i| data.as_ptr().add((p0 + i) * stride + offset));
                        let mut acc: [[$v; R]; H] = [[$zero; R]; H];
                        let mut j = 0;
                        while j + $lanes <= dh {
                            let k: [$v; R] = std::array::from_fn(|i| {
                                let $p = base[i].add(j);
                                $half
                            });
                            for (h, a) in acc.iter_mut().enumerate() {
                                let qv = $load(qp.add(h * dh + j));
                                for (a, k) in a.iter_mut().zip(k) {
                                    *a = $fma(qv, k, *a);
                                }
                            }
                            j += $lanes;
                        }
                        for (h, a) in acc.into_iter().enumerate() {
                            let s = $sums(a.map(|$x| $fold));
                            for (i, s) in s.into_iter().enumerate() {
                                *out.get_unchecked_mut(h * len + p0 + i) = s * scale;
                            }
                        }
                        p0 += R;
                    }
                    for p in p0..len {
                        let base = data.as_ptr().add(p * stride + offset);
                        let mut acc: [$v; H] = [$zero; H];
                        let mut j = 0;
                        while j + $lanes <= dh {
                            let $p = base.add(j);
                            let k = $half;
                            for (h, a) in acc.iter_mut().enumerate() {
                                *a = $fma($load(qp.add(h * dh + j)), k, *a);
                            }
                            j += $lanes;
                        }
                        for (h, a) in acc.into_iter().enumerate() {
                            *out.get_unchecked_mut(h * len + p) = $reduce(a) * scale;
                        }
                    }
                }
            }

            /// `out[h * dh..][..dh] = Σ_p w[h * len + p] · v[p]` for `H`
            /// heads, in one pass over the value rows, four at a time.
            ///
            /// # Safety
            /// As the module's header says (`dh` is `out.len() / H`).
            #[target_feature(enable = $features)]
            pub(in super::super) unsafe fn weighted_sum<const H: usize>(
                w: &[f32],
                len: usize,
                data: &[u16],
                stride: usize,
                offset: usize,
                out: &mut [f32],
            ) {
                out.fill(0.0);
                let mut p = 0;
                while p + 4 <= len {
                    // SAFETY: as this function's caller guarantees, for rows p..p + 4.
                    unsafe { sum_rows::<H, 4>(w, len, data, stride, offset, out, p) };
                    p += 4;
                }
                while p < len {
                    // SAFETY: as this function's caller guarantees, for row p.
                    unsafe { sum_rows::<H, 1>(w, len, data, stride, offset, out, p) };
                    p += 1;
                }
            }

            /// Adds rows `p..p + B`, weighted, into each head's sum in
            /// `out`. Each row is read once, whole, in order: the sums of a
            /// 128-wide head do not fit in registers beside the rows, so
            /// they are loaded and stored (L1 hits) once per `B` rows. The
            /// kernel before kept a quarter of the sums in registers over
            /// all positions, which read the rows in four strided passes:
            /// over Qwen3-0.6B's values at 1088 positions, 8.2 GB/s from
            /// memory against 20 GB/s now (Zen 4 VM, one thread).
            ///
            /// # Safety
            /// As [`weighted_sum`], with `p + B <= len`.
            #[target_feature(enable = $features)]
            #[inline]
            unsafe fn sum_rows<const H: usize, const B: usize>(
                w: &[f32],
                len: usize,
                data: &[u16],
                stride: usize,
                offset: usize,
                out: &mut [f32],
                p: usize,
            ) {
                // SAFETY: the features as the caller guarantees; the caller's bounds keep every value row, weight and output index below inside its slice.
                unsafe {
                    let dh = out.len() / H;
                    let s: [[$v; B]; H] =
                        std::array::from_fn(|h| std::array::from_fn(|i| $splat(*w.get_unchecked(h * len + p + i))));
                    let base: [*const u16; B] = std::array::from_fn(|i| data.as_ptr().add((p + i) * stride + offset));
                    let op = out.as_mut_ptr();
                    let mut j = 0;
                    while j + $lanes <= dh {
                        let v: [$v; B] = std::array::from_fn(|i| {
                            let $p = base[i].add(j);
                            $half
                        });
                        for (h, s) in s.iter().enumerate() {
                            let o = op.add(h * dh + j);
                            let mut a = $load(o);
                            for (s, v) in s.iter().zip(v) {
                                a = $fma(*s, v, a);
                            }
                            $store(o, a);
                        }
                        j += $lanes;
                    }
                }
            }
        }
    };
}

gqa_kernels!(w256, "avx2,fma,f16c", 8, __m256,
    zero: _mm256_setzero_ps(), splat: _mm256_set1_ps, load: _mm256_loadu_ps, store: _mm256_storeu_ps,
    fma: _mm256_fmadd_ps, half: |p| _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i)),
    reduce: super::super::x86::hsum,
    fold: |x| x, sums: super::super::x86::hsums);

gqa_kernels!(w512, "avx512f,avx2,fma,f16c", 16, __m512,
    zero: _mm512_setzero_ps(), splat: _mm512_set1_ps, load: _mm512_loadu_ps, store: _mm512_storeu_ps,
    fma: _mm512_fmadd_ps, half: |p| _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i)),
    reduce: _mm512_reduce_add_ps,
    fold: |x| _mm256_add_ps(_mm512_castps512_ps256(x), _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x)))),
    sums: super::super::x86::hsums);
