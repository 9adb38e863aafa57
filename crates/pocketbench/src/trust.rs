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

/// How two engines' outputs of one model and prompt agree: the length of
/// their common prefix of generated tokens (the prefill's first token
/// included), and how many each generated. `None` where either result
/// kept no tokens (an external tool's, or a result of an older version).
///
/// Two engines of different kernels (the native engine's int8 tiles,
/// llama.cpp's) round differently, and greedy decoding of a random-weight
/// model, whose logits lie close together, follows the first rounding
/// that flips an argmax: agreement is a long shared prefix, not every
/// token ([`ENGINES_AGREE`]).
pub fn common_prefix(a: &ProbeResult, b: &ProbeResult) -> Option<(usize, usize, usize)> {
    let (x, y) = (&a.reps.first()?.tokens, &b.reps.first()?.tokens);
    if x.is_empty() || y.is_empty() {
        return None;
    }
    Some((x.iter().zip(y).take_while(|(p, q)| p == q).count(), x.len(), y.len()))
}

/// The common prefix two engines must share, in tokens, at a short prompt
/// (64 tokens or fewer): the prefill's token and 31 decoded after it.
/// Measured here (Intel Xeon, 2 threads): 33 of 33 on the tests' tiny shape
/// at 16+32, 129 of 129 on mnn-pocket-0.3b at 64+128. After a long prompt
/// the two engines' attention sums over hundreds of positions round apart
/// and a random-weight model's near-tied logits flip early: at 1024+128
/// mnn-pocket-0.3b shares only its first token, which is why the rule is
/// stated at a short prompt (see the book's Engines page).
pub const ENGINES_AGREE: usize = 32;

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
    range(&v)
}

/// The median same-moment bandwidth of the summarized repetitions (each
/// the mean of its two passes), B/s; `None` where none carries a drift
/// reading.
pub fn moment_median(probe: &ProbeResult) -> Option<f64> {
    let v: Vec<f64> = kept(probe).filter_map(|r| r.drift).map(|d| (d.before_gb_s + d.after_gb_s) / 2.0 * 1e9).collect();
    (!v.is_empty()).then(|| crate::stats::median(&v))
}

/// The lowest and highest of `v`; `None` when it is empty.
pub fn range(v: &[f64]) -> Option<[f64; 2]> {
    (!v.is_empty())
        .then(|| [v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max)])
}

/// How decode time follows the same-moment bandwidth, fitted over many
/// repetitions: `t = a + b / bw`, the roofline with overlap. `t` is seconds
/// a token, `bw` the mean of a repetition's two passes in GB/s, so `a` is
/// the time a token spends whatever the memory does (compute, latency,
/// synchronisation) and `b`, in GB, the bytes a token reads at the
/// memory's pace. On the AMD EPYC VM (2026-12-06) eight processes of
/// MNN-Pocket at 1+128 and 2 threads gave a = 2.5 ms and b = 94 MB of the
/// 172 MB of weights, r = 0.88: decode follows about half of a move in
/// bandwidth, so efficiency (tok/s x bytes / bw) falls when the machine
/// speeds up and is no steadier than tok/s.
///
/// With `b` known, a repetition's time at a reference bandwidth is its
/// own less `b (1/bw - 1/reference)`: decode with the machine's moves
/// taken out, as an analysis of covariance would.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BandwidthFit {
    /// `a`: ms a token that do not follow the bandwidth (over all the
    /// points; each group of [`BandwidthFit::within`] has its own).
    pub fixed_ms: f64,
    /// `b`: MB a token reads at the memory's pace.
    pub bound_mb: f64,
    /// Pearson's r of `t` against `1 / bw` (within the groups fitted).
    pub r: f64,
    /// Repetitions fitted.
    pub points: usize,
    /// The bandwidth adjusted to, GB/s: the median of the repetitions'.
    pub reference_gb_s: f64,
    /// The lowest and highest repetition bandwidth fitted, GB/s.
    pub range_gb_s: [f64; 2],
}

/// The fewest repetitions a [`BandwidthFit`] is made from.
pub const MIN_FIT_POINTS: usize = 8;
/// The least spread of bandwidth (highest over lowest) a fit needs: within
/// one regime the passes' own noise (about ±5%) is all there is to fit.
pub const MIN_FIT_SPREAD: f64 = 1.2;
/// The least correlation for the fit to be used: below it, the bandwidth
/// does not explain the time and taking it out would add noise.
pub const MIN_FIT_R: f64 = 0.5;

impl BandwidthFit {
    /// Fit over (decode tok/s, same-moment GB/s) pairs of one engine;
    /// `None` when they are too few, span too little bandwidth, or do not
    /// follow it.
    pub fn of(points: &[(f64, f64)]) -> Option<BandwidthFit> {
        BandwidthFit::within(&[points])
    }

    /// One slope, fitted within each group only (each group keeps its own
    /// intercept: an analysis of covariance with the group as the factor).
    /// Two engines compared must not lend the line their difference: with
    /// a baseline measured in a slow stretch and a candidate in a fast one,
    /// a pooled line would take the engines' gap for the machine's. `None`
    /// when there are too few points, no group spans enough bandwidth, or
    /// the bandwidth does not explain the time within the groups.
    pub fn within(groups: &[&[(f64, f64)]]) -> Option<BandwidthFit> {
        let groups: Vec<Vec<(f64, f64)>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .filter(|(t, b)| t.is_finite() && b.is_finite() && *t > 0.0 && *b > 0.0)
                    .map(|(tok_s, bw)| (1.0 / bw, 1.0 / tok_s))
                    .collect()
            })
            .collect();
        let all: Vec<(f64, f64)> = groups.iter().flatten().copied().collect();
        if all.len() < MIN_FIT_POINTS {
            return None;
        }
        let spread = |g: &[(f64, f64)]| {
            let hi = g.iter().map(|p| p.0).fold(0.0, f64::max);
            let lo = g.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
            hi / lo
        };
        if !groups.iter().any(|g| g.len() >= 2 && spread(g) >= MIN_FIT_SPREAD) {
            return None;
        }
        let (sxy, sxx, syy) = within_sums(&groups);
        let b = sxy / sxx;
        let r = sxy / (sxx * syy).sqrt();
        if !(b > 0.0 && r >= MIN_FIT_R) {
            return None;
        }
        let n = all.len() as f64;
        let (mx, my) = (all.iter().map(|p| p.0).sum::<f64>() / n, all.iter().map(|p| p.1).sum::<f64>() / n);
        let bws: Vec<f64> = all.iter().map(|(x, _)| 1.0 / x).collect();
        let range_gb_s = range(&bws)?;
        Some(BandwidthFit {
            fixed_ms: (my - b * mx) * 1e3,
            bound_mb: b * 1e3,
            r,
            points: all.len(),
            reference_gb_s: crate::stats::median(&bws),
            range_gb_s,
        })
    }

    /// `tok_s`, measured at `bw_gb_s`, as it would have been at the
    /// reference bandwidth.
    pub fn adjust(&self, tok_s: f64, bw_gb_s: f64) -> f64 {
        let b = self.bound_mb / 1e3;
        1.0 / (1.0 / tok_s - b * (1.0 / bw_gb_s - 1.0 / self.reference_gb_s))
    }
}

/// The sums of cross-products and of squares of `(x, y)` about each
/// group's own means (the within-group terms of an analysis of
/// covariance): `(Sxy, Sxx, Syy)`.
fn within_sums(groups: &[Vec<(f64, f64)>]) -> (f64, f64, f64) {
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for g in groups.iter().filter(|g| !g.is_empty()) {
        let n = g.len() as f64;
        let (mx, my) = (g.iter().map(|p| p.0).sum::<f64>() / n, g.iter().map(|p| p.1).sum::<f64>() / n);
        sxy += g.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>();
        sxx += g.iter().map(|(x, _)| (x - mx).powi(2)).sum::<f64>();
        syy += g.iter().map(|(_, y)| (y - my).powi(2)).sum::<f64>();
    }
    (sxy, sxx, syy)
}

/// How strongly decode speed follows the same-moment bandwidth across many
/// jobs of different sizes: `tok/s ~ bw^e`, one exponent `e` fitted on
/// logarithms within each job (each keeps its own level, as in
/// [`BandwidthFit::within`]). A [`BandwidthFit`] needs a job's own eight
/// repetitions over a spread of bandwidth; a quick calibration gives each
/// job a few, but has dozens of jobs that together span the machine's
/// moves. `e` is 1 for an engine wholly at the memory's pace, 0 for one
/// that never waits on it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Elasticity {
    /// The exponent.
    pub e: f64,
    /// Pearson's r of log tok/s against log bandwidth within the jobs.
    pub r: f64,
    /// Repetitions fitted.
    pub points: usize,
}

impl Elasticity {
    /// Fit over each job's (decode tok/s, same-moment GB/s) pairs; `None`
    /// on the same grounds as [`BandwidthFit::within`].
    pub fn within(groups: &[&[(f64, f64)]]) -> Option<Elasticity> {
        let groups: Vec<Vec<(f64, f64)>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .filter(|(t, b)| t.is_finite() && b.is_finite() && *t > 0.0 && *b > 0.0)
                    .map(|(tok_s, bw)| (bw.ln(), tok_s.ln()))
                    .collect()
            })
            .collect();
        let points: usize = groups.iter().map(Vec::len).sum();
        let spread = |g: &[(f64, f64)]| {
            g.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max)
                - g.iter().map(|p| p.0).fold(f64::INFINITY, f64::min)
        };
        if points < MIN_FIT_POINTS || !groups.iter().any(|g| g.len() >= 2 && spread(g) >= MIN_FIT_SPREAD.ln()) {
            return None;
        }
        let (sxy, sxx, syy) = within_sums(&groups);
        let (e, r) = (sxy / sxx, sxy / (sxx * syy).sqrt());
        (e > 0.0 && r >= MIN_FIT_R).then_some(Elasticity { e, r, points })
    }

    /// `tok_s`, measured at `bw`, as it would have been at `reference`
    /// (any one unit for both).
    pub fn adjust(&self, tok_s: f64, bw: f64, reference: f64) -> f64 {
        tok_s * (reference / bw).powf(self.e)
    }
}

/// (decode tok/s, same-moment GB/s) of a result's repetitions, retaken
/// ones included when `all` (they saw the machine too, which is what a
/// fit learns from).
pub fn decode_and_bandwidth(probe: &ProbeResult, all: bool) -> Vec<(f64, f64)> {
    probe
        .reps
        .iter()
        .filter(|r| all || !r.retaken)
        .filter_map(|r| r.drift.map(|d| (r.decode_tok_s, (d.before_gb_s + d.after_gb_s) / 2.0)))
        .collect()
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
    fn the_fit_recovers_how_decode_follows_bandwidth_and_adjusts_to_the_reference() {
        // t = 2.5 ms + 94 MB / bw, at bandwidths in two regimes.
        let bws = [33.0, 34.0, 32.0, 55.0, 57.0, 54.0, 33.5, 56.0, 35.0, 58.0];
        let pts: Vec<(f64, f64)> = bws.iter().map(|bw| (1.0 / (0.0025 + 0.094 / bw), *bw)).collect();
        let f = BandwidthFit::of(&pts).unwrap();
        assert!((f.fixed_ms - 2.5).abs() < 1e-9 && (f.bound_mb - 94.0).abs() < 1e-9, "{f:?}");
        assert!((f.r - 1.0).abs() < 1e-9 && f.points == 10 && f.range_gb_s == [32.0, 58.0]);
        // Every repetition lands on the reference's speed.
        let at_ref = 1.0 / (0.0025 + 0.094 / f.reference_gb_s);
        for (tok_s, bw) in &pts {
            assert!((f.adjust(*tok_s, *bw) - at_ref).abs() < 1e-6);
        }
        // One regime only, too few points, or speed that does not follow:
        // no fit.
        let one: Vec<(f64, f64)> = pts.iter().map(|(t, b)| (*t, b.min(34.0))).collect();
        assert_eq!(BandwidthFit::of(&one), None);
        assert_eq!(BandwidthFit::of(&pts[..7]), None);
        let flat: Vec<(f64, f64)> = bws.iter().enumerate().map(|(i, bw)| (200.0 + (i % 3) as f64, *bw)).collect();
        assert_eq!(BandwidthFit::of(&flat), None);
    }

    #[test]
    fn an_elasticity_is_fitted_within_jobs_and_refused_without_enough_to_fit() {
        // Two jobs of different sizes, each following bw^0.4 at its own level.
        let job =
            |level: f64, bws: &[f64]| -> Vec<(f64, f64)> { bws.iter().map(|b| (level * b.powf(0.4), *b)).collect() };
        let (small, big) = (job(100.0, &[30.0, 40.0, 55.0, 60.0]), job(20.0, &[28.0, 35.0, 50.0, 62.0]));
        let e = Elasticity::within(&[&small, &big]).unwrap();
        assert!((e.e - 0.4).abs() < 1e-9 && e.r > 0.999 && e.points == 8, "{e:?}");
        // Taken to 60 GB/s, the small job's repetition at 30 GB/s reads as its one at 60.
        assert!((e.adjust(small[0].0, 30.0, 60.0) - small[3].0).abs() < 1e-9);
        assert_eq!(Elasticity::within(&[&small]), None, "fewer than 8 repetitions");
        let still: Vec<(f64, f64)> = (0..8).map(|i| (100.0 + i as f64, 40.0 + (i % 2) as f64)).collect();
        assert_eq!(Elasticity::within(&[&still]), None, "a bandwidth that did not move");
        let deaf: Vec<(f64, f64)> = [30.0, 60.0, 30.0, 60.0, 30.0, 60.0, 30.0, 60.0]
            .iter()
            .enumerate()
            .map(|(i, b)| (if i < 4 { 100.0 } else { 90.0 }, *b))
            .collect();
        assert_eq!(Elasticity::within(&[&deaf]), None, "a speed that does not follow it");
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
