//! E-divisive means change-point detection: Matteson & James, "A
//! Nonparametric Approach for Multiple Change Point Analysis of Multivariate
//! Data" (JASA 109(505), 2014), with alpha = 1, as MongoDB's
//! signal-processing library and Apache Otava (Hunter) use it on performance
//! histories (Daly et al., "The Use of Change Point Detection to Identify
//! Software Performance Regressions in a Continuous Integration System",
//! ICPE 2020; Fleming et al., "Hunter", ICPE 2023).
//!
//! For a split of a segment into X (before) and Y (after), the statistic is
//! `Q = m n / (m + n) * (2/(m n) sum|x - y| - C(m,2)^-1 sum|x - x'| - C(n,2)^-1 sum|y - y'|)`.
//! The best split of each segment is kept when a permutation test (the
//! segment's points shuffled, seeded) finds it significant; segments are
//! split again until none is (hierarchical binary segmentation).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

/// Detection settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The fewest points a segment may have on either side of a change.
    pub min_segment: usize,
    /// Permutations of the significance test.
    pub permutations: usize,
    /// A change is kept when its permutation p-value is below this.
    pub p_threshold: f64,
    /// Seed of the permutations.
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { min_segment: 3, permutations: 199, p_threshold: 0.05, seed: 0x0ca7 }
    }
}

/// A change found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Index of the first point after the change.
    pub index: usize,
    /// The statistic.
    pub q: f64,
    /// Permutation p-value.
    pub p: f64,
}

/// The best split of `z` and its statistic; `None` when `z` is shorter than
/// two minimum segments.
fn best_split(z: &[f64], min_segment: usize) -> Option<(usize, f64)> {
    let n = z.len();
    let min = min_segment.max(2);
    if n < 2 * min {
        return None;
    }
    // Row sums of |z_i - z_j| split at a moving tau, updated in O(n) a step.
    let d = |i: usize, j: usize| (z[i] - z[j]).abs();
    let mut within_x = 0.0;
    let mut within_y = 0.0;
    for j in 0..n {
        for k in j + 1..n {
            within_y += d(j, k);
        }
    }
    let mut cross = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n {
        // Point tau - 1 moves from Y to X.
        let p = tau - 1;
        let to_x: f64 = (0..p).map(|i| d(i, p)).sum();
        let to_y: f64 = (p + 1..n).map(|j| d(p, j)).sum();
        cross += to_y - to_x;
        within_x += to_x;
        within_y -= to_y;
        let (m, k) = (tau as f64, (n - tau) as f64);
        if tau < min || n - tau < min {
            continue;
        }
        let e = 2.0 * cross / (m * k) - within_x / (m * (m - 1.0) / 2.0) - within_y / (k * (k - 1.0) / 2.0);
        let q = m * k / (m + k) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// Every significant change in `z`, in order.
pub fn e_divisive(z: &[f64], s: &Settings) -> Vec<Change> {
    let mut rng = StdRng::seed_from_u64(s.seed);
    let mut found = Vec::new();
    let mut todo = vec![(0, z.len())];
    while let Some((lo, hi)) = todo.pop() {
        let seg = &z[lo..hi];
        let Some((tau, q)) = best_split(seg, s.min_segment) else { continue };
        let mut shuffled = seg.to_vec();
        let mut as_large = 0;
        for _ in 0..s.permutations {
            shuffled.shuffle(&mut rng);
            if best_split(&shuffled, s.min_segment).is_some_and(|(_, qp)| qp >= q) {
                as_large += 1;
            }
        }
        let p = (as_large + 1) as f64 / (s.permutations + 1) as f64;
        if p < s.p_threshold {
            found.push(Change { index: lo + tau, q, p });
            todo.push((lo, lo + tau));
            todo.push((lo + tau, hi));
        }
    }
    found.sort_by_key(|c| c.index);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statistic by its definition, O(n^2) per split.
    fn q_direct(x: &[f64], y: &[f64]) -> f64 {
        let (m, n) = (x.len() as f64, y.len() as f64);
        let cross: f64 = x.iter().flat_map(|a| y.iter().map(move |b| (a - b).abs())).sum();
        let pairs = |v: &[f64]| -> f64 {
            let mut s = 0.0;
            for i in 0..v.len() {
                for j in i + 1..v.len() {
                    s += (v[i] - v[j]).abs();
                }
            }
            s
        };
        let e = 2.0 * cross / (m * n) - pairs(x) / (m * (m - 1.0) / 2.0) - pairs(y) / (n * (n - 1.0) / 2.0);
        m * n / (m + n) * e
    }

    #[test]
    fn the_incremental_statistic_equals_the_definition() {
        let z = [1.0, 3.0, 2.0, 8.0, 9.0, 7.5, 8.2, 1.0, 4.0];
        let (tau, q) = best_split(&z, 2).unwrap();
        let best =
            (2..=z.len() - 2).map(|t| (t, q_direct(&z[..t], &z[t..]))).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        assert_eq!(tau, best.0);
        assert!((q - best.1).abs() < 1e-9, "{q} {}", best.1);
    }

    #[test]
    fn a_step_is_found_and_a_flat_series_has_none() {
        let mut z: Vec<f64> = (0..20).map(|i| 100.0 + (i % 3) as f64 * 0.1).collect();
        z.extend((0..20).map(|i| 90.0 + (i % 3) as f64 * 0.1));
        let c = e_divisive(&z, &Settings::default());
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].index, 20);
        let flat: Vec<f64> = (0..40).map(|i| 100.0 + (i % 5) as f64 * 0.1).collect();
        assert!(e_divisive(&flat, &Settings::default()).is_empty());
        assert!(e_divisive(&[1.0, 2.0], &Settings::default()).is_empty());
    }
}
