//! Which variant of the interleaved 4-bit kernel (the decode and prefill hot
//! loop) runs: measured once per process, its rounds pooled with those of
//! earlier processes on this machine ([`History`]), not fixed by a
//! preference. An
//! AVX-512 kernel can lose to AVX2 on one x86 machine (narrower 512-bit
//! units, a lower clock under AVX-512) and win on another, so every variant
//! the CPU supports is timed on the same small matrix, alternating, and one
//! moves the choice off its default only where it is clearly faster
//! ([`settle`]). `POCKETBENCH_KERNELS` names one instead (tests, and
//! measuring what a variant gains); `POCKETBENCH_PREFETCH` fixes the
//! prefetch distance.
//!
//! Why a default and a margin rather than the fastest: on a shared VM the
//! timings move with the machine, and near-equal candidates came out in a
//! different order in every fresh process. Eight processes of one job then
//! ran four different kernel sets, and the set is part of the engine: at
//! one bandwidth, decode with prefetch off ran 2-9% faster than with it on
//! in four of four forced pairs (MNN-Pocket 1+128, 2 threads, Zen 4 VM,
//! 2026-12-07), while the start-up timing had picked it on in five of
//! eight processes. A choice that flips on noise makes processes disagree
//! by more than the choice gains.

use std::sync::OnceLock;
use std::time::Instant;

use super::history::History;
use super::{isa, span, BlockQ8, Isa, QMatrix, BLOCK};

/// The software prefetch distances tried: bytes ahead of the column being
/// read that the AVX-512 decode kernel asks the cache for, none (0), near
/// (eight Q4_0 block columns) or far (sixty-four). Which one is measured at start-up
/// streaming the model's own matrices in decode's order ([`choose_kernels`]). On the Zen 5 VM,
/// one thread decoded Qwen3-0.6B 28% faster with the far one than with none
/// (one core alone keeps too few misses in flight to stream memory; 9 KiB
/// ahead covers its latency), and the near one gained nothing; at two
/// threads, which together approach the read bandwidth, neither helped.
pub(super) const PREFETCH_AHEAD: [usize; 3] = [0, 1152, 9216];

/// A variant of the interleaved 4-bit kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum X8 {
    /// Portable Rust.
    Portable,
    /// AArch64 NEON.
    Neon,
    /// AArch64 NEON with the dot-product extension (`sdot`).
    NeonDot,
    /// x86-64 AVX2 (`maddubs`).
    Avx2,
    /// x86-64 AVX-VNNI (256-bit `vpdpbusd`).
    AvxVnni,
    /// x86-64 AVX-512 VNNI (512-bit `vpdpbusd`).
    Avx512Vnni,
    /// x86-64 AVX-512 VNNI prefill tiles of sixteen rows (two groups) on
    /// full 512-bit vectors; its matrix-vector kernel is [`X8::Avx512Vnni`]'s.
    Avx512Vnni16,
}

impl X8 {
    /// Name recorded with results and accepted by `POCKETBENCH_KERNELS`.
    pub fn name(self) -> &'static str {
        match self {
            X8::Portable => "portable",
            X8::Neon => "neon",
            X8::NeonDot => "neon-dotprod",
            X8::Avx2 => "avx2",
            X8::AvxVnni => "avx-vnni",
            X8::Avx512Vnni => "avx512-vnni",
            X8::Avx512Vnni16 => "avx512-vnni-16row",
        }
    }

    /// Whether this CPU (and [`isa`]'s choice) can run it.
    pub fn supported(self) -> bool {
        match (self, isa()) {
            (X8::Portable, _) => true,
            (X8::Neon, Isa::Neon) => true,
            #[cfg(target_arch = "aarch64")]
            (X8::NeonDot, Isa::Neon) => std::arch::is_aarch64_feature_detected!("dotprod"),
            #[cfg(target_arch = "x86_64")]
            (X8::Avx2, Isa::Avx2) => true,
            #[cfg(target_arch = "x86_64")]
            (X8::AvxVnni, Isa::Avx2) => std::arch::is_x86_feature_detected!("avxvnni"),
            #[cfg(target_arch = "x86_64")]
            (X8::Avx512Vnni | X8::Avx512Vnni16, Isa::Avx2) => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            _ => false,
        }
    }

    /// A prefill tile variant only: its matrix-vector kernel is another
    /// variant's, so it is not timed as one.
    pub fn tile_only(self) -> bool {
        self == X8::Avx512Vnni16
    }
}

/// Every variant, in order of preference when timings tie.
pub const X8_VARIANTS: [X8; 7] =
    [X8::Portable, X8::Neon, X8::NeonDot, X8::Avx2, X8::AvxVnni, X8::Avx512Vnni, X8::Avx512Vnni16];

/// The variants chosen, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The matrix-vector variant (decode, and a prompt's last tokens).
    pub variant: X8,
    /// The tile variant (prefill); [`X8::Portable`] where none has one.
    pub tile: X8,
    /// Threads the timings ran on at once (the engine's).
    pub threads: usize,
    /// Nanoseconds per block column of eight rows for each matrix-vector
    /// variant timed (empty when the choice was not measured).
    pub timings: Vec<(X8, f64)>,
    /// The same per token for each tile variant timed.
    pub tile_timings: Vec<(X8, f64)>,
    /// Attention on 512-bit vectors (AVX-512 F) rather than the
    /// instruction set's own width.
    pub attention_512: bool,
    /// Microseconds of one grouped-query attention call at 256 and at 512
    /// bits (empty when not measured).
    pub attention_timings: Vec<(u32, f64)>,
    /// Software prefetch in the matrix-vector kernel (where it has one):
    /// bytes ahead of the column being read, 0 for none.
    pub prefetch: usize,
    /// Milliseconds of one pass of the matrix-vector kernel over the
    /// model's first matrices in decode's order for each prefetch distance
    /// tried (the median of the rounds), 0 first
    /// (empty when not measured: no such matrix given, or a variant
    /// without prefetch).
    pub prefetch_timings: Vec<(usize, f64)>,
    /// Why these: measured, forced by the environment, or the only ones.
    pub how: String,
    /// For each choice timed among two or more candidates, how many rounds
    /// of earlier processes on this machine were pooled with this one's
    /// ([`History`]).
    pub pooled: Vec<(String, usize)>,
}

impl Choice {
    /// One line for results: the variants, then the start-up timings.
    pub fn describe(&self) -> String {
        let list = |ts: &[(X8, f64)]| {
            ts.iter().map(|(v, ns)| format!("{} {ns:.2} ns", v.name())).collect::<Vec<_>>().join(", ")
        };
        let prefetch = match (self.prefetch_timings.is_empty(), self.prefetch) {
            (true, _) => String::new(),
            (false, 0) => ", prefetch off".to_string(),
            (false, b) => format!(", prefetch {b} B ahead"),
        };
        let mut s = format!(
            "{} matrix-vector{prefetch}, {} prefill tiles, {}-bit attention ({}",
            self.variant.name(),
            self.tile.name(),
            if self.attention_512 { 512 } else { 256 },
            self.how
        );
        if !self.timings.is_empty() {
            s += &format!(
                " on {} thread(s): per 8x32 block {}; per token and block {}",
                self.threads,
                list(&self.timings),
                list(&self.tile_timings)
            );
        }
        if !self.attention_timings.is_empty() {
            let ts: Vec<String> = self.attention_timings.iter().map(|(b, us)| format!("{b}-bit {us:.1} us")).collect();
            s += &format!("; attention call {}", ts.join(", "));
        }
        if !self.pooled.is_empty() {
            let ns: Vec<String> = self.pooled.iter().map(|(what, n)| format!("{what} {n}")).collect();
            s += &format!("; earlier processes' rounds pooled: {}", ns.join(", "));
        }
        if !self.prefetch_timings.is_empty() {
            let ts: Vec<String> = self
                .prefetch_timings
                .iter()
                .map(|(ahead, ms)| match ahead {
                    0 => format!("none {ms:.2} ms"),
                    b => format!("{b} B {ms:.2} ms"),
                })
                .collect();
            s += &format!("; a pass over decode's first matrices by prefetch: {}", ts.join(", "));
        }
        s + ")"
    }
}

/// The variants for this process, chosen at the first call: timed on
/// `threads` threads at once (the engine's; shared cores and caches change
/// which variant wins), and software prefetch timed streaming `stream` (the
/// model's own matrices in the order decode reads them, from memory as
/// decode reads them) where given. Later calls return the first choice.
pub fn choose_kernels(threads: usize, stream: &[&QMatrix]) -> &'static Choice {
    static CHOICE: OnceLock<Choice> = OnceLock::new();
    CHOICE.get_or_init(|| {
        let mut c = choose(std::env::var("POCKETBENCH_KERNELS").ok().as_deref(), threads.max(1));
        if !stream.is_empty() && c.how.starts_with(MEASURED) {
            let rounds = time_prefetch(c.variant, stream, c.threads);
            let dims: Vec<String> = stream.iter().map(|m| format!("{}x{}", m.rows, m.cols)).collect();
            let what = format!("prefetch over {:016x}", pocketbench_types::fnv1a(dims.join(",").as_bytes()));
            let timed = rounds.len() > 1;
            let (rounds, earlier) = pooled(&what, rounds, c.threads, |b| b.to_string());
            (c.prefetch, c.prefetch_timings) = settle(&rounds).unwrap_or((0, Vec::new()));
            if timed {
                c.pooled.push(("prefetch".into(), earlier));
            }
            // Timed all the same, so the record still shows what each
            // distance read at start-up.
            if let Some(ahead) = std::env::var("POCKETBENCH_PREFETCH").ok().and_then(|v| v.parse().ok()) {
                c.prefetch = ahead;
                c.how = format!("{MEASURED}, prefetch from POCKETBENCH_PREFETCH");
            }
        }
        c
    })
}

/// The variants for this process (timed on one thread unless
/// [`choose_kernels`] ran first).
pub fn x8_choice() -> &'static Choice {
    choose_kernels(1, &[])
}

/// How a measured choice is described.
const MEASURED: &str = "timed at start-up and pooled with earlier processes' rounds on this machine, the default \
                        unless another was 3% faster and the faster in more rounds than chance would give (sign test)";

/// The matrix-vector variant that runs.
pub fn x8_variant() -> X8 {
    x8_choice().variant
}

fn choose(forced: Option<&str>, threads: usize) -> Choice {
    let usable: Vec<X8> = X8_VARIANTS.into_iter().filter(|v| v.supported() && *v != X8::Portable).collect();
    let tiles: Vec<X8> = usable.iter().copied().filter(|v| super::tile_tokens_of(*v) > 1).collect();
    let supported: Vec<X8> = usable.into_iter().filter(|v| !v.tile_only()).collect();
    let fixed = |variant: X8, how: &str| Choice {
        variant,
        tile: if super::tile_tokens_of(variant) > 1 { variant } else { X8::Portable },
        threads,
        timings: Vec::new(),
        tile_timings: Vec::new(),
        attention_512: false,
        attention_timings: Vec::new(),
        prefetch: 0,
        prefetch_timings: Vec::new(),
        how: how.into(),
        pooled: Vec::new(),
    };
    if let Some(v) = forced.and_then(|name| X8_VARIANTS.into_iter().find(|v| v.name() == name && v.supported())) {
        return fixed(v, "POCKETBENCH_KERNELS");
    }
    match supported[..] {
        [] => fixed(X8::Portable, "no SIMD variant on this CPU"),
        [only] => fixed(only, "the only variant this CPU runs"),
        _ => {
            // The most capable variant is the default (the last supported,
            // X8_VARIANTS' order); the others are timed against it.
            let most_capable_first = |v: &[X8]| -> Vec<X8> { v.iter().rev().copied().collect() };
            let name = |v: &X8| v.name().to_string();
            let (vs, v_earlier) =
                pooled("matrix-vector", time(&most_capable_first(&supported), threads, 1), threads, name);
            let (ts, t_earlier) = pooled("tiles", time(&most_capable_first(&tiles), threads, 0), threads, name);
            let (ws, w_earlier) = pooled("attention", time_attention(threads), threads, |b| b.to_string());
            let (variant, timings) = settle(&vs).expect("two or more variants timed");
            let (tile, tile_timings) = settle(&ts).unwrap_or((X8::Portable, Vec::new()));
            let (width, attention_timings) = settle(&ws).unwrap_or((256, Vec::new()));
            let pooled = [
                ("matrix-vector", v_earlier, vs.len()),
                ("tiles", t_earlier, ts.len()),
                ("attention", w_earlier, ws.len()),
            ]
            .into_iter()
            .filter(|(_, _, candidates)| *candidates > 1)
            .map(|(what, n, _)| (what.to_string(), n))
            .collect();
            Choice {
                variant,
                tile,
                threads,
                timings,
                tile_timings,
                attention_512: width == 512,
                attention_timings,
                prefetch: 0,
                prefetch_timings: Vec::new(),
                how: MEASURED.into(),
                pooled,
            }
        }
    }
}

/// Milliseconds of one pass of variant `v`'s matrix-vector kernel over
/// `stream`, matrix after matrix as decode reads them, at each prefetch
/// distance of [`PREFETCH_AHEAD`] (0, none, first: the default): every
/// thread its own span of each matrix at once (as decode shares a matrix),
/// the slowest counted, in [`ROUNDS`] rounds taken alternately. A stream
/// of many layers' matrices, not the largest alone: decode's matrices are
/// small (a few MB each) and prefetching runs past each one's end, which
/// one large matrix never shows. The matrices are the model's own, so the
/// pass reads memory as decode does and allocates nothing of their size (a
/// buffer of its own would raise the peak memory the probe reports). Empty
/// for a variant without a prefetching kernel or where no matrix has
/// interleaved groups enough for every thread.
fn time_prefetch(v: X8, stream: &[&QMatrix], threads: usize) -> Vec<(usize, Vec<f64>)> {
    let stream: Vec<&QMatrix> = stream.iter().copied().filter(|m| m.groups() >= threads).collect();
    if !(v == X8::Avx512Vnni && v.supported()) || stream.is_empty() {
        return Vec::new();
    }
    // One activation per distinct width (hidden, or FFN for the down
    // projection).
    let mut xs: Vec<(usize, Vec<BlockQ8>)> = Vec::new();
    for m in &stream {
        if !xs.iter().any(|(cols, _)| *cols == m.cols) {
            let xf: Vec<f32> = (0..m.cols).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
            let mut x = vec![BlockQ8::default(); m.cols / BLOCK];
            super::quantize_q8(&xf, &mut x);
            xs.push((m.cols, x));
        }
    }
    // Each matrix with its activation, found before the clock starts.
    let work: Vec<(&QMatrix, &[BlockQ8])> = stream
        .iter()
        .map(|m| (*m, &xs.iter().find(|(cols, _)| *cols == m.cols).expect("an activation for every width").1[..]))
        .collect();
    let run = |t: usize, pf: usize| -> f64 {
        let mut out = [0f32; 8];
        let start = Instant::now();
        for &(m, x) in &work {
            let l = m.layout().unwrap_or(super::layout::Q40);
            for g in span(m.groups(), t, threads) {
                // SAFETY: `v` is supported (the measured choice); group `g`
                // of `m` holds `m.cols / BLOCK` block columns of its layout
                // `l`, and `x` as many.
                unsafe { super::x8_dyn(v, l, pf, m.group(g), x, &mut out) }
                std::hint::black_box(&out);
            }
        }
        start.elapsed().as_secs_f64() * 1e3
    };
    rounds(&PREFETCH_AHEAD, |pf| slowest(threads, |t| run(t, pf)))
}

/// `run(t)` on `threads` threads at once (this one is thread 0), the
/// slowest's time: what a step that waits for all of them would take. A
/// thread that panicked counts as infinitely slow.
fn slowest(threads: usize, run: impl Fn(usize) -> f64 + Sync) -> f64 {
    std::thread::scope(|s| {
        let run = &run;
        let others: Vec<_> = (1..threads).map(|t| s.spawn(move || run(t))).collect();
        let mine = run(0);
        others.into_iter().map(|h| h.join().unwrap_or(f64::INFINITY)).fold(mine, f64::max)
    })
}

/// Rounds of start-up timing: every candidate once a round, in turns, so a
/// move of the machine falls on all of them alike.
pub(super) const ROUNDS: usize = 11;

/// An alternative replaces the default only when its median time over the
/// rounds, each round's time over the default's in the same round, is
/// this much below 1: within it, candidates are taken as equal.
pub const CLEAR_MARGIN: f64 = 0.03;

/// An alternative must also be the faster in more of the paired rounds
/// than equal candidates would be with this chance (a one-sided sign test:
/// 9 of 11 rounds, 35 of 55). The margin alone let noise of 5-10% a round
/// (the Zen 4 VM) flip one process in three or four to another prefetch
/// distance or attention width.
pub const SIGN_TEST_ALPHA: f64 = 0.035;

/// The fewest wins of `n` paired rounds that equal candidates reach with a
/// chance of at most [`SIGN_TEST_ALPHA`] (`n + 1`: none suffices).
pub fn min_wins(n: usize) -> usize {
    // P(X >= k) for X ~ Binomial(n, 1/2), summed down from k = n.
    let total = 2f64.powi(n as i32);
    let mut c = 1.0; // C(n, n - j)
    let mut tail = 0.0;
    for j in 0..=n {
        let k = n - j;
        tail += c / total;
        if tail > SIGN_TEST_ALPHA {
            return k + 1;
        }
        c = c * (n - j) as f64 / (j + 1) as f64;
    }
    0
}

/// This choice's rounds pooled with those earlier processes on this
/// machine kept ([`History`]), and how many earlier rounds that is.
fn pooled<T: Copy>(
    what: &str,
    timed: Vec<(T, Vec<f64>)>,
    threads: usize,
    name: impl Fn(&T) -> String,
) -> (Vec<(T, Vec<f64>)>, usize) {
    if timed.len() < 2 {
        return (timed, 0);
    }
    let names: Vec<String> = timed.iter().map(|(c, _)| name(c)).collect();
    History::here(what, &names, threads).pool(timed)
}

/// Each candidate's time in each of [`ROUNDS`] rounds, `time` called on
/// every candidate in turn within a round.
fn rounds<T: Copy>(candidates: &[T], mut time: impl FnMut(T) -> f64) -> Vec<(T, Vec<f64>)> {
    let mut out: Vec<(T, Vec<f64>)> = candidates.iter().map(|c| (*c, Vec::with_capacity(ROUNDS))).collect();
    for _ in 0..ROUNDS {
        for (c, ts) in out.iter_mut() {
            ts.push(time(*c));
        }
    }
    out
}

/// The choice among timed candidates, the first being the default, and
/// each candidate's median time for the record. An alternative is taken
/// only when it is faster than the default by more than [`CLEAR_MARGIN`]
/// in the median of the rounds' paired ratios and faster in at least
/// [`min_wins`] of those rounds (the fastest such, if several are); a
/// best-of or a median of each candidate alone would let one lucky round,
/// or a stretch of the machine, decide. `None` when nothing was timed.
fn settle<T: Copy>(timed: &[(T, Vec<f64>)]) -> Option<(T, Vec<(T, f64)>)> {
    let (default, base) = timed.first()?;
    // A thread that failed times as infinite; none finite is no evidence.
    let median = |v: &mut dyn Iterator<Item = f64>| -> f64 {
        let mut v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            f64::INFINITY
        } else {
            pocketbench_types::stats::median_mut(&mut v)
        }
    };
    let mut chosen = (*default, 1.0 - CLEAR_MARGIN);
    for (c, ts) in &timed[1..] {
        let ratios: Vec<f64> = ts.iter().zip(base).map(|(t, b)| t / b).filter(|r| r.is_finite()).collect();
        let wins = ratios.iter().filter(|r| **r < 1.0).count();
        let ratio = median(&mut ratios.iter().copied());
        if ratio < chosen.1 && wins >= min_wins(ratios.len()) {
            chosen = (*c, ratio);
        }
    }
    Some((chosen.0, timed.iter().map(|(c, ts)| (*c, median(&mut ts.iter().copied()))).collect()))
}

/// Microseconds of one grouped-query attention call (four query heads of
/// 128 over 512 cached positions, L2-resident) at 256 and at 512 bits,
/// every thread at once, the slowest counted, in [`ROUNDS`] rounds taken
/// alternately (256, the instruction set's own width, first: the
/// default); empty where only one width runs.
#[cfg(target_arch = "x86_64")]
fn time_attention(threads: usize) -> Vec<(u32, Vec<f64>)> {
    if !(isa() == Isa::Avx2 && std::arch::is_x86_feature_detected!("avx512f")) {
        return Vec::new();
    }
    const DH: usize = 128;
    const LEN: usize = 512;
    const HEADS: usize = 4;
    const CALLS: usize = 8;
    let cache: Vec<u16> = (0..LEN * DH).map(|i| super::f32_to_f16(((i % 29) as f32 - 14.0) / 14.0)).collect();
    let q: Vec<f32> = (0..HEADS * DH).map(|i| ((i % 11) as f32 - 5.0) / 50.0).collect();
    let run = |wide: bool| -> f64 {
        let rows = super::KvRows { data: &cache, stride: DH, offset: 0 };
        let (mut scores, mut out) = (vec![0f32; HEADS * LEN], vec![0f32; HEADS * DH]);
        let t = Instant::now();
        for _ in 0..CALLS {
            // SAFETY: AVX2, FMA and F16C (`isa()`) and AVX-512 F are
            // detected (checked above); DH is a multiple of
            // 16, q and out hold HEADS heads, scores HEADS * LEN, and the
            // cache LEN rows of DH.
            unsafe { super::attention::grouped(wide, &q, rows, rows, LEN, 0.1, &mut scores, &mut out, DH) };
            std::hint::black_box(&out);
        }
        t.elapsed().as_secs_f64() * 1e6 / CALLS as f64
    };
    rounds(&[256u32, 512], |bits| slowest(threads, |_| run(bits == 512)))
}

/// No 512-bit attention off x86-64: nothing to time.
#[cfg(not(target_arch = "x86_64"))]
fn time_attention(_threads: usize) -> Vec<(u32, Vec<f64>)> {
    Vec::new()
}

/// Nanoseconds per block column (per token, for tiles) for each candidate:
/// a Q4_0 matrix of 256 × 2048 per thread (295 KB, cache-resident, so the
/// instructions are timed and not the memory), every thread at once, the
/// slowest thread counted, in [`ROUNDS`] rounds taken alternately. `tokens`
/// 1 times the matrix-vector kernel, 0 each variant's own tile.
fn time(candidates: &[X8], threads: usize, tokens: usize) -> Vec<(X8, Vec<f64>)> {
    const GROUPS: usize = 32;
    const NB: usize = 64;
    const PASSES: usize = 10;
    let mut data = vec![0u8; GROUPS * NB * 144];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for b in data.iter_mut() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *b = state as u8;
    }
    // Small positive scales keep every sum finite.
    for col in data.chunks_exact_mut(144) {
        for s in col[..16].chunks_exact_mut(2) {
            s.copy_from_slice(&super::f32_to_f16(0.01).to_le_bytes());
        }
    }
    let xf: Vec<f32> = (0..8 * NB * BLOCK).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
    let mut x = vec![BlockQ8::default(); 8 * NB];
    super::quantize_q8(&xf, &mut x);
    let run = |v: X8| -> f64 {
        let t = Instant::now();
        let mut out = [[0f32; 8]; 16];
        let (tt, k) = if tokens == 1 { (1, 1) } else { (super::tile_tokens_of(v), super::tile_groups_of(v)) };
        for _ in 0..PASSES {
            for g in data.chunks_exact(k * NB * 144) {
                // SAFETY: every candidate is `supported()` (tiles: has a tile
                // kernel); each group holds NB block columns, `g` the tile's
                // groups (GROUPS is even) and `x` 8 tokens of NB.
                unsafe {
                    if tokens == 1 {
                        super::x8_with::<{ super::layout::Q40 }>(v, 0, g, &x[..NB], &mut out[0]);
                    } else {
                        super::tile_with(v, super::layout::Q40, g, &x[..tt * NB], NB, &mut out[..k * tt]);
                    }
                }
                std::hint::black_box(&out);
            }
        }
        t.elapsed().as_nanos() as f64 / (PASSES * GROUPS * NB * tt) as f64
    };
    rounds(candidates, |v| slowest(threads, |_| run(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_variant_is_taken_when_supported_and_ignored_when_not() {
        let c = choose(Some("portable"), 1);
        assert_eq!((c.variant, c.how.as_str()), (X8::Portable, "POCKETBENCH_KERNELS"));
        // Some variant is never supported: AArch64 lacks the x86 ones and x86 lacks NEON.
        let absent = X8_VARIANTS.into_iter().find(|v| !v.supported()).expect("an unsupported variant");
        let c = choose(Some(absent.name()), 1);
        assert_ne!(c.variant, absent);
        assert!(c.variant.supported());
    }

    #[test]
    fn the_measured_choice_is_timed_and_described() {
        let c = choose(None, 2);
        assert!(c.variant.supported() && c.tile.supported());
        for (ts, chosen) in [(&c.timings, c.variant), (&c.tile_timings, c.tile)] {
            if ts.len() > 1 {
                assert!(ts.iter().any(|t| t.0 == chosen), "{ts:?}");
                assert!(ts.iter().all(|t| t.1.is_finite() && t.1 > 0.0), "{ts:?}");
                // The most capable variant is the default, timed first.
                assert_eq!(ts[0].0, *X8_VARIANTS.iter().rev().find(|v| ts.iter().any(|t| t.0 == **v)).unwrap());
            }
        }
        assert!(c.describe().starts_with(c.variant.name()), "{}", c.describe());
        assert_eq!(c.prefetch, 0, "nothing streamed, nothing prefetched");
        if c.attention_timings.is_empty() {
            assert!(!c.attention_512, "{}", c.describe());
        } else {
            assert_eq!(c.attention_timings.iter().map(|t| t.0).collect::<Vec<_>>(), [256, 512]);
        }
    }

    #[test]
    fn an_alternative_replaces_the_default_only_when_clearly_faster_round_by_round() {
        // A pattern of rounds repeated over the eleven a process times.
        let r = |ts: &[f64]| ts.iter().copied().cycle().take(ROUNDS).collect::<Vec<f64>>();
        // 2% faster in every round: within the margin, so the default.
        let close = [(0usize, r(&[10.0, 10.0, 10.0])), (9216, r(&[9.8, 9.8, 9.8]))];
        let (chosen, medians) = settle(&close).unwrap();
        assert_eq!((chosen, medians), (0, vec![(0, 10.0), (9216, 9.8)]));
        // One lucky round 30% faster (a best-of would take it), slower in
        // the rest: the default.
        let lucky =
            [(0usize, r(&[10.0; 11])), (9216, r(&[7.0, 10.5, 10.4, 10.5, 10.4, 10.5, 10.4, 10.5, 10.4, 10.5, 10.4]))];
        assert_eq!(settle(&lucky).unwrap().0, 0);
        // The machine slowed in the middle rounds for both alike: paired
        // ratios see the alternative 10% faster throughout.
        let moved = [(0usize, r(&[10.0, 20.0, 20.0, 10.0])), (1152, r(&[9.0, 18.0, 18.0, 9.0]))];
        assert_eq!(settle(&moved).unwrap().0, 1152);
        // Of two clear winners, the faster.
        let two = [(0usize, r(&[10.0, 10.0])), (1152, r(&[9.0, 9.0])), (9216, r(&[8.0, 8.0]))];
        assert_eq!(settle(&two).unwrap().0, 9216);
        // Equal in truth, noisy rounds: 5% faster in the median but the
        // faster in only 7 of 11 rounds, which equal candidates do by chance.
        let base = [10.0; 11];
        let noisy = [9.5, 9.4, 9.5, 9.3, 9.5, 9.6, 9.5, 10.8, 11.0, 10.6, 10.9];
        assert_eq!(settle(&[(0usize, r(&base)), (9216, r(&noisy))]).unwrap().0, 0);
        // Faster in 9 of 11: taken.
        let clear = [9.5, 9.4, 9.5, 9.3, 9.5, 9.6, 9.5, 9.4, 9.6, 10.6, 10.9];
        assert_eq!(settle(&[(0usize, r(&base)), (9216, r(&clear))]).unwrap().0, 9216);
        assert_eq!(settle::<usize>(&[]), None);
        // Pooled rounds: faster in 40 of 55 (73%, short of 9 in 11) is more
        // than chance gives, and taken; 30 of 55 is not.
        let pooled = |wins: usize| {
            let alt: Vec<f64> = (0..55).map(|i| if i < wins { 9.0 } else { 10.5 }).collect();
            settle(&[(0usize, vec![10.0; 55]), (9216, alt)]).unwrap().0
        };
        assert_eq!((pooled(40), pooled(30)), (9216, 0));
    }

    #[test]
    fn the_sign_test_asks_for_what_equal_candidates_reach_by_chance_at_most_3_5_percent_of_the_time() {
        assert_eq!([min_wins(0), min_wins(4), min_wins(5), min_wins(11), min_wins(55)], [1, 5, 5, 9, 35]);
        // A check of one: P(X >= 35 | 55 fair coins) = 0.0314, P(X >= 34) = 0.0541.
        let tail = |n: u64, k: u64| (k..=n).map(|i| binomial(n, i)).sum::<f64>() / 2f64.powi(n as i32);
        assert!(tail(55, 35) <= SIGN_TEST_ALPHA && tail(55, 34) > SIGN_TEST_ALPHA);
    }

    fn binomial(n: u64, k: u64) -> f64 {
        (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
    }

    #[test]
    fn every_prefetch_distance_is_timed_on_the_stream_in_rounds() {
        let m = QMatrix::new(super::super::WeightType::Q4_0, 64, 256, vec![0u8; 64 * 8 * 18]).unwrap();
        let down = QMatrix::new(super::super::WeightType::Q4_0, 32, 512, vec![0u8; 32 * 16 * 18]).unwrap();
        let ts = time_prefetch(X8::Avx512Vnni, &[&m, &down, &m], 2);
        if X8::Avx512Vnni.supported() {
            let distances: Vec<usize> = ts.iter().map(|t| t.0).collect();
            assert_eq!(distances, PREFETCH_AHEAD);
            assert!(
                ts.iter().all(|t| t.1.len() == ROUNDS && t.1.iter().all(|ms| ms.is_finite() && *ms > 0.0)),
                "{ts:?}"
            );
        } else {
            assert!(ts.is_empty());
        }
        assert!(time_prefetch(X8::Portable, &[&m], 1).is_empty(), "only the AVX-512 kernel prefetches");
        assert!(time_prefetch(X8::Avx512Vnni, &[], 1).is_empty(), "nothing to stream");
    }
}
