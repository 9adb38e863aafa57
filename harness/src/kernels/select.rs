//! Which variant of the interleaved 4-bit kernel (the decode and prefill hot
//! loop) runs: measured once per process, not fixed by a preference. An
//! AVX-512 kernel can lose to AVX2 on one x86 machine (narrower 512-bit
//! units, a lower clock under AVX-512) and win on another, so every variant
//! the CPU supports is timed on the same small matrix, alternating, and the
//! fastest is kept. `POCKETBENCH_KERNELS` names one instead (tests, and
//! measuring what a variant gains).

use std::sync::OnceLock;
use std::time::Instant;

use super::{isa, BlockQ8, Isa, BLOCK};

/// A variant of the interleaved 4-bit kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum X8 {
    /// Portable Rust.
    Portable,
    /// AArch64 NEON.
    Neon,
    /// x86-64 AVX2 (`maddubs`).
    Avx2,
    /// x86-64 AVX-VNNI (256-bit `vpdpbusd`).
    AvxVnni,
    /// x86-64 AVX-512 VNNI (512-bit `vpdpbusd`).
    Avx512Vnni,
}

impl X8 {
    /// Name recorded with results and accepted by `POCKETBENCH_KERNELS`.
    pub fn name(self) -> &'static str {
        match self {
            X8::Portable => "portable",
            X8::Neon => "neon",
            X8::Avx2 => "avx2",
            X8::AvxVnni => "avx-vnni",
            X8::Avx512Vnni => "avx512-vnni",
        }
    }

    /// Whether this CPU (and [`isa`]'s choice) can run it.
    pub fn supported(self) -> bool {
        match (self, isa()) {
            (X8::Portable, _) => true,
            (X8::Neon, Isa::Neon) => true,
            #[cfg(target_arch = "x86_64")]
            (X8::Avx2, Isa::Avx2) => true,
            #[cfg(target_arch = "x86_64")]
            (X8::AvxVnni, Isa::Avx2) => std::arch::is_x86_feature_detected!("avxvnni"),
            #[cfg(target_arch = "x86_64")]
            (X8::Avx512Vnni, Isa::Avx2) => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            _ => false,
        }
    }
}

/// Every variant, in order of preference when timings tie.
pub const X8_VARIANTS: [X8; 5] = [X8::Portable, X8::Neon, X8::Avx2, X8::AvxVnni, X8::Avx512Vnni];

/// The variant chosen, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The variant that runs.
    pub variant: X8,
    /// Nanoseconds per block column of eight rows for each variant timed
    /// (empty when the choice was not measured).
    pub timings: Vec<(X8, f64)>,
    /// Why this one: measured, forced by the environment, or the only one.
    pub how: String,
}

impl Choice {
    /// One line for results: the variant, then the start-up timings.
    pub fn describe(&self) -> String {
        let t: Vec<String> = self.timings.iter().map(|(v, ns)| format!("{} {ns:.2} ns", v.name())).collect();
        if t.is_empty() {
            format!("{} ({})", self.variant.name(), self.how)
        } else {
            format!("{} ({}: {} per 8×32 block)", self.variant.name(), self.how, t.join(", "))
        }
    }
}

/// The variant for this process (chosen at first use).
pub fn x8_choice() -> &'static Choice {
    static CHOICE: OnceLock<Choice> = OnceLock::new();
    CHOICE.get_or_init(|| choose(std::env::var("POCKETBENCH_KERNELS").ok().as_deref()))
}

/// The variant that runs.
pub fn x8_variant() -> X8 {
    x8_choice().variant
}

fn choose(forced: Option<&str>) -> Choice {
    let candidates: Vec<X8> = X8_VARIANTS.into_iter().filter(|v| v.supported() && *v != X8::Portable).collect();
    if let Some(name) = forced {
        if let Some(v) = X8_VARIANTS.into_iter().find(|v| v.name() == name && v.supported()) {
            return Choice { variant: v, timings: Vec::new(), how: "POCKETBENCH_KERNELS".into() };
        }
    }
    match candidates[..] {
        [] => Choice { variant: X8::Portable, timings: Vec::new(), how: "no SIMD variant on this CPU".into() },
        [only] => Choice { variant: only, timings: Vec::new(), how: "the only variant this CPU runs".into() },
        _ => {
            let timings = time(&candidates);
            let best = timings.iter().fold(timings[0], |b, t| if t.1 < b.1 { *t } else { b });
            Choice { variant: best.0, timings, how: "fastest at start-up".into() }
        }
    }
}

/// Nanoseconds per block column for each candidate: a Q4_0 matrix of
/// 256 × 2048 (295 KB, cache-resident, so the instructions are timed and
/// not the memory), best of 7 rounds taken alternately.
fn time(candidates: &[X8]) -> Vec<(X8, f64)> {
    const GROUPS: usize = 32;
    const NB: usize = 64;
    const PASSES: usize = 20;
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
    let xf: Vec<f32> = (0..NB * BLOCK).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
    let mut x = vec![BlockQ8::default(); NB];
    super::quantize_q8(&xf, &mut x);
    let mut best = vec![f64::INFINITY; candidates.len()];
    let mut out = [0f32; 8];
    for _ in 0..7 {
        for (v, b) in candidates.iter().zip(best.iter_mut()) {
            let t = Instant::now();
            for _ in 0..PASSES {
                for g in data.chunks_exact(NB * 144) {
                    // SAFETY: every candidate is `supported()`; each group holds NB block columns.
                    unsafe { super::x8_with::<false>(*v, g, &x, &mut out) };
                    std::hint::black_box(&out);
                }
            }
            *b = b.min(t.elapsed().as_nanos() as f64 / (PASSES * GROUPS * NB) as f64);
        }
    }
    candidates.iter().copied().zip(best).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_variant_is_taken_when_supported_and_ignored_when_not() {
        let c = choose(Some("portable"));
        assert_eq!((c.variant, c.how.as_str()), (X8::Portable, "POCKETBENCH_KERNELS"));
        // Some variant is never supported: AArch64 lacks the x86 ones and x86 lacks NEON.
        let absent = X8_VARIANTS.into_iter().find(|v| !v.supported()).expect("an unsupported variant");
        let c = choose(Some(absent.name()));
        assert_ne!(c.variant, absent);
        assert!(c.variant.supported());
    }

    #[test]
    fn the_measured_choice_is_the_fastest_timed_and_is_described() {
        let c = choose(None);
        assert!(c.variant.supported());
        if c.timings.len() > 1 {
            let min = c.timings.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
            assert_eq!(c.timings.iter().find(|t| t.0 == c.variant).unwrap().1, min);
            assert!(c.timings.iter().all(|t| t.1.is_finite() && t.1 > 0.0), "{:?}", c.timings);
        }
        assert!(c.describe().starts_with(c.variant.name()), "{}", c.describe());
    }
}
