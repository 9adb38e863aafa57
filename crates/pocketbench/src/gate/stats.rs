//! The gate's statistics: a one-sided Mann-Whitney U test on raw samples,
//! Holm's step-down correction across a suite, and a percentile-bootstrap
//! interval of the ratio of medians.
//!
//! - Mann-Whitney U (Mann & Whitney 1947): exact null distribution when
//!   neither sample has ties and both are at most [`EXACT_MAX`] long (the
//!   recurrence of Mann & Whitney's paper); otherwise the normal
//!   approximation with the tie-corrected variance and a continuity
//!   correction (as R's `wilcox.test` and SciPy's `mannwhitneyu` do).
//! - Holm (1979), "A simple sequentially rejective multiple test procedure".
//! - Percentile bootstrap (Efron & Tibshirani 1993, ch. 13), each side
//!   resampled on its own, seeded, so a verdict is a pure function of its
//!   samples.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

pub use crate::stats::{detectable_change, median, median_mut, relative_se, robust_cv};

/// Largest sample size the exact distribution is computed for.
pub const EXACT_MAX: usize = 40;

/// Which way the alternative hypothesis points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The candidate's values tend to be smaller than the baseline's.
    Less,
    /// The candidate's values tend to be larger.
    Greater,
}

/// One one-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UTest {
    /// U of the candidate: pairs (candidate, baseline) in the alternative's
    /// direction, ties counting one half.
    pub u: f64,
    /// One-sided p-value.
    pub p: f64,
    /// Whether the exact distribution was used (else the normal approximation).
    pub exact: bool,
}

/// The one-sided Mann-Whitney U test of `candidate` against `baseline`.
/// Both must be non-empty.
pub fn mann_whitney(candidate: &[f64], baseline: &[f64], side: Side) -> UTest {
    let (n, m) = (candidate.len(), baseline.len());
    assert!(n > 0 && m > 0, "Mann-Whitney needs two non-empty samples");
    // U counts pairs where the candidate lies on the alternative's side.
    let mut u: f64 = 0.0;
    for &c in candidate {
        for &b in baseline {
            let wins = match side {
                Side::Less => c < b,
                Side::Greater => c > b,
            };
            if wins {
                u += 1.0;
            } else if c == b {
                u += 0.5;
            }
        }
    }
    // Both samples sorted together: ties are equal neighbours.
    let mut all: Vec<f64> = candidate.iter().chain(baseline).copied().collect();
    all.sort_by(f64::total_cmp);
    let ties = all.windows(2).any(|w| w[0] == w[1]);
    if !ties && n <= EXACT_MAX && m <= EXACT_MAX {
        // P(U >= u) under H0; u is an integer without ties.
        let dist = u_distribution(n, m);
        let total: f64 = dist.iter().sum();
        let k = u.round() as usize;
        let tail: f64 = dist[k..].iter().sum();
        return UTest { u, p: (tail / total).min(1.0), exact: true };
    }
    let (nf, mf) = (n as f64, m as f64);
    let mean = nf * mf / 2.0;
    // Tie-corrected variance: n m / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))).
    let big_n = (n + m) as f64;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1] == all[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let var = nf * mf / 12.0 * ((big_n + 1.0) - tie_term / (big_n * (big_n - 1.0)));
    if var <= 0.0 {
        // Every value equal: no evidence either way.
        return UTest { u, p: 1.0, exact: false };
    }
    let z = (u - mean - 0.5) / var.sqrt();
    let p = 1.0 - Normal::standard().cdf(z);
    UTest { u, p: p.clamp(0.0, 1.0), exact: false }
}

/// Counts of each U = 0..=n m over the C(n+m, n) arrangements, from the
/// recurrence f(n, m, u) = f(n - 1, m, u) + f(n, m - 1, u - n): the largest
/// value belongs to the first sample (adding no pair) or to the second
/// (adding n).
fn u_distribution(n: usize, m: usize) -> Vec<f64> {
    // prev[j] holds f(i - 1, j, .), cur[j] builds f(i, j, .).
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect(); // f(0, j, u) = [u == 0]
    for i in 1..=n {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        cur.push(vec![1.0]); // f(i, 0, u) = [u == 0]
        for j in 1..=m {
            let mut f = vec![0.0; i * j + 1];
            for (u, c) in prev[j].iter().enumerate() {
                f[u] += c;
            }
            for (u, c) in cur[j - 1].iter().enumerate() {
                f[u + i] += c;
            }
            cur.push(f);
        }
        prev = cur;
    }
    prev.swap_remove(m)
}

/// The smallest p-value a one-sided test of these sizes can give: complete
/// separation, 1 / C(n + m, n).
pub fn smallest_p(n: usize, m: usize) -> f64 {
    let mut c = 1.0f64;
    for k in 1..=n.min(m) {
        c = c * (n + m + 1 - k) as f64 / k as f64;
    }
    1.0 / c
}

/// Holm's step-down adjusted p-values, in the input's order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// The ratio of medians `median(candidate) / median(baseline)` and its
/// two-sided percentile-bootstrap interval at `level` (0.95 for 95%),
/// `resamples` draws, seeded.
pub fn ratio_of_medians(candidate: &[f64], baseline: &[f64], level: f64, resamples: usize, seed: u64) -> Ratio {
    let estimate = median(candidate) / median(baseline);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut a = vec![0.0; candidate.len()];
    let mut b = vec![0.0; baseline.len()];
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for x in a.iter_mut() {
            *x = candidate[rng.random_range(0..candidate.len())];
        }
        for x in b.iter_mut() {
            *x = baseline[rng.random_range(0..baseline.len())];
        }
        let r = median_mut(&mut a) / median_mut(&mut b);
        if r.is_finite() {
            ratios.push(r);
        }
    }
    ratios.sort_unstable_by(f64::total_cmp);
    let q = |p: f64| -> f64 {
        if ratios.is_empty() {
            return f64::NAN;
        }
        let pos = p * (ratios.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        ratios[lo] + (ratios[hi] - ratios[lo]) * (pos - lo as f64)
    };
    let tail = (1.0 - level) / 2.0;
    Ratio { estimate, lo: q(tail), hi: q(1.0 - tail) }
}

/// A ratio with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// Point estimate.
    pub estimate: f64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_distribution_sums_to_the_binomial_and_is_symmetric() {
        for (n, m) in [(1, 1), (3, 4), (10, 10), (7, 12)] {
            let d = u_distribution(n, m);
            assert_eq!(d.len(), n * m + 1);
            let total: f64 = d.iter().sum();
            assert!((total - 1.0 / smallest_p(n, m)).abs() < 1e-6 * total, "{n} {m}");
            for u in 0..d.len() {
                assert_eq!(d[u], d[d.len() - 1 - u]);
            }
        }
        // C(8, 4) = 70 arrangements of two samples of 4.
        assert_eq!(u_distribution(4, 4).iter().sum::<f64>(), 70.0);
    }

    #[test]
    fn known_p_values() {
        // Complete separation, 5 v 5: p = 1/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let t = mann_whitney(&a, &b, Side::Less);
        assert!(t.exact);
        assert_eq!(t.u, 25.0);
        assert!((t.p - 1.0 / 252.0).abs() < 1e-12);
        assert!((mann_whitney(&a, &b, Side::Greater).p - 1.0).abs() < 1e-12);
        // SciPy: mannwhitneyu([1,3,5,7,9],[2,4,6,8,10], alternative='less',
        // method='exact') gives U (of the first) = 10, p = 0.3452.
        let t = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0], Side::Less);
        assert_eq!(t.u, 15.0);
        assert!((t.p - 0.345_238).abs() < 1e-5, "{}", t.p);
    }

    #[test]
    fn ties_use_the_normal_approximation() {
        let t = mann_whitney(&[1.0, 1.0, 2.0], &[2.0, 3.0, 3.0], Side::Less);
        assert!(!t.exact);
        assert!(t.p > 0.0 && t.p < 0.2, "{}", t.p);
        let same = mann_whitney(&[1.0, 1.0], &[1.0, 1.0], Side::Less);
        assert_eq!(same.p, 1.0);
    }

    #[test]
    fn holm_matches_the_textbook() {
        // p = 0.01, 0.04, 0.03, 0.005 -> sorted 0.005 0.01 0.03 0.04 ->
        // 0.02, 0.03, 0.06, 0.06 (monotone).
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        // 2 x 0.8 caps at 1, and the step-down keeps the larger.
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert_eq!(holm(&[0.004, 0.3]), vec![0.008, 0.3]);
    }

    #[test]
    fn ratio_interval_brackets_the_estimate() {
        let b: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let c: Vec<f64> = b.iter().map(|x| x * 0.9).collect();
        let r = ratio_of_medians(&c, &b, 0.95, 2000, 7);
        assert!((r.estimate - 0.9).abs() < 1e-12);
        assert!(r.lo <= r.estimate && r.estimate <= r.hi, "{r:?}");
        assert_eq!(r, ratio_of_medians(&c, &b, 0.95, 2000, 7));
    }
}
