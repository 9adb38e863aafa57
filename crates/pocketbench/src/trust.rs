//! What a measurement's own samples say beside its medians: the tails of
//! its inter-token latency, whether every repetition generated the same
//! tokens, and whether the machine was busy while it ran. A record carries
//! these next to its speeds; the report draws them and the gate checks them.

use serde::{Deserialize, Serialize};

use crate::probe::{ProbeResult, Rep};
use crate::stats::{Sample, SampleError, Summary};

/// Percentiles of the inter-token latency (each decode step's time), over
/// every step of the repetitions a result summarizes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Steps pooled.
    pub steps: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Slowest step, ms.
    pub max_ms: f64,
}

/// The nearest-rank percentile `p` (0..=100) of sorted `v`.
fn nearest_rank(v: &[u32], p: f64) -> f64 {
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1] as f64
}

impl Latency {
    /// Over the steps of `reps`; `None` when none was timed (older probes,
    /// external tools).
    pub fn of<'a>(reps: impl Iterator<Item = &'a Rep>) -> Option<Latency> {
        let mut us: Vec<u32> = reps.flat_map(|r| r.itl_us.iter().copied()).collect();
        if us.is_empty() {
            return None;
        }
        us.sort_unstable();
        let ms = |p| nearest_rank(&us, p) / 1e3;
        Some(Latency { steps: us.len(), p50_ms: ms(50.0), p90_ms: ms(90.0), p99_ms: ms(99.0), max_ms: ms(100.0) })
    }
}

/// The percentiles at which [`latency_curve`] reads the distribution.
pub const CURVE_PERCENTILES: [f64; 14] =
    [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 97.0, 98.0, 99.0, 99.5, 99.9, 100.0];

/// The inter-token latency distribution of a result's summarized
/// repetitions as (percentile, ms) at [`CURVE_PERCENTILES`]; empty when no
/// step was timed.
pub fn latency_curve(probe: &ProbeResult) -> Vec<(f64, f64)> {
    let mut us: Vec<u32> = kept(probe).flat_map(|r| r.itl_us.iter().copied()).collect();
    if us.is_empty() {
        return Vec::new();
    }
    us.sort_unstable();
    CURVE_PERCENTILES.iter().map(|p| (*p, nearest_rank(&us, *p) / 1e3)).collect()
}

/// Whether the repetitions generated the same tokens (greedy decoding of
/// fixed weights and prompt must).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The fingerprint most repetitions had.
    pub tokens_hash: String,
    /// Every repetition (retaken ones included) had it.
    pub agree: bool,
    /// Distinct fingerprints seen.
    pub distinct: usize,
}

impl Output {
    /// Over every repetition that has a fingerprint.
    pub fn of(reps: &[Rep]) -> Option<Output> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for h in reps.iter().filter_map(|r| r.tokens_hash.as_deref()) {
            match counts.iter_mut().find(|(k, _)| *k == h) {
                Some((_, n)) => *n += 1,
                None => counts.push((h, 1)),
            }
        }
        let (hash, _) = *counts.iter().max_by_key(|(_, n)| *n)?;
        Some(Output { tokens_hash: hash.into(), agree: counts.len() == 1, distinct: counts.len() })
    }
}

/// The repetitions a result summarizes: all but those retaken.
pub fn kept(probe: &ProbeResult) -> impl Iterator<Item = &Rep> {
    probe.reps.iter().filter(|r| !r.retaken)
}

/// Whether a result keeps contended repetitions (no retake was left for
/// them): its speeds are not a quiet machine's.
pub fn contended(probe: &ProbeResult) -> bool {
    probe.sampling.as_ref().is_some_and(|s| s.contended > 0)
}

/// Decode's share of the same-moment bandwidth over the summarized
/// repetitions ([`crate::probe::drift`]); `None` where none carries a
/// drift reading.
pub fn efficiency(probe: &ProbeResult) -> Result<Option<Summary>, SampleError> {
    let v: Vec<f64> = kept(probe).filter_map(|r| r.drift.map(|d| d.efficiency)).collect();
    Ok(match v[..] {
        [] => None,
        [one] => Some(Summary::single(one)),
        _ => Some(Sample::new(v)?.summary()),
    })
}

/// The lowest and highest same-moment bandwidth pass over every
/// repetition, retaken ones included (they saw the machine too), GB/s.
pub fn moment_bandwidth(probe: &ProbeResult) -> Option<[f64; 2]> {
    let v: Vec<f64> = probe.reps.iter().filter_map(|r| r.drift).flat_map(|d| [d.before_gb_s, d.after_gb_s]).collect();
    (!v.is_empty()).then(|| [v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(0.0, f64::max)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(hash: &str, itl: &[u32]) -> Rep {
        Rep { tokens_hash: Some(hash.into()), itl_us: itl.to_vec(), ..Default::default() }
    }

    #[test]
    fn tails_are_nearest_rank_percentiles_over_every_step() {
        let steps: Vec<u32> = (1..=100).map(|i| i * 1000).collect();
        let reps = [rep("a", &steps[..50]), rep("a", &steps[50..])];
        let l = Latency::of(reps.iter()).unwrap();
        assert_eq!((l.steps, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms), (100, 50.0, 90.0, 99.0, 100.0));
        assert_eq!(Latency::of([rep("a", &[])].iter()), None);
    }

    #[test]
    fn one_different_repetition_breaks_agreement() {
        let same = [rep("a", &[]), rep("a", &[])];
        assert!(Output::of(&same).unwrap().agree);
        let one_off = [rep("a", &[]), rep("b", &[]), rep("a", &[])];
        let o = Output::of(&one_off).unwrap();
        assert_eq!((o.tokens_hash.as_str(), o.agree, o.distinct), ("a", false, 2));
        assert_eq!(Output::of(&[Rep::default()]), None);
    }
}
