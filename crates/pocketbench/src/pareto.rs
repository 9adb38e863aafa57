//! Pareto frontier and hypervolume over selectable objectives.
//!
//! Every objective is turned into "more is better" and normalised against a
//! reference point, the budget box: capability / 100, decode / limit − 1,
//! 1 − memory / limit, 1 − energy / limit. Feasible points are then all
//! non-negative, and the hypervolume (Zitzler & Thiele 1998) is the volume
//! they dominate above the budget corner, in these relative-margin units: it
//! compares sweeps on the same devices and budgets, not across them. It is computed exactly by slicing
//! along the last objective (the HSO scheme of While et al., IEEE TEC 2006),
//! which is fast for the few objectives and hundreds of points used here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An objective the frontier can be taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Capability (up).
    Capability,
    /// Decode speed (up).
    Decode,
    /// Peak memory increase (down).
    Memory,
    /// Energy per run (down).
    Energy,
}

/// All objectives, the default selection.
pub const ALL: [Objective; 4] = [Objective::Capability, Objective::Decode, Objective::Memory, Objective::Energy];

/// A name no objective has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown objective `{0}` (capability, decode, memory, energy)")]
pub struct UnknownObjective(pub String);

impl FromStr for Objective {
    type Err = UnknownObjective;
    fn from_str(s: &str) -> Result<Self, UnknownObjective> {
        match s.trim() {
            "capability" => Ok(Objective::Capability),
            "decode" => Ok(Objective::Decode),
            "memory" => Ok(Objective::Memory),
            "energy" => Ok(Objective::Energy),
            other => Err(UnknownObjective(other.to_string())),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Objective::Capability => "capability",
            Objective::Decode => "decode",
            Objective::Memory => "memory",
            Objective::Energy => "energy",
        })
    }
}

/// `a` dominates `b` (all coordinates maximised): no worse anywhere, better somewhere.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    let mut better = false;
    for (x, y) in a.iter().zip(b) {
        if x < y {
            return false;
        }
        if x > y {
            better = true;
        }
    }
    better
}

/// [`frontier`] of points of at most four coordinates, each padded with
/// zeros to four (a padding equal everywhere changes no dominance): one
/// array per point instead of one allocation, for the millions of points of
/// a large sweep.
pub fn frontier4(points: &[[f64; 4]]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|a, b| {
        points[*b]
            .iter()
            .zip(&points[*a])
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut on = vec![false; points.len()];
    let mut front: Vec<[f64; 4]> = Vec::new();
    for &i in &order {
        let p = &points[i];
        if !front.iter().any(|f| dominates(f, p)) {
            front.push(*p);
            on[i] = true;
        }
    }
    on
}

/// Which points are non-dominated. Duplicates of a frontier point are all kept.
pub fn frontier(points: &[Vec<f64>]) -> Vec<bool> {
    // In lexicographically descending order a dominating point always comes
    // before the points it dominates, so one pass against the front suffices.
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|a, b| {
        points[*b]
            .iter()
            .zip(&points[*a])
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut on = vec![false; points.len()];
    let mut front: Vec<usize> = Vec::new();
    for &i in &order {
        if !front.iter().any(|&j| dominates(&points[j], &points[i])) {
            front.push(i);
            on[i] = true;
        }
    }
    on
}

/// Hypervolume dominated by `points` with reference point at the origin
/// (coordinates ≤ 0 contribute nothing).
pub fn hypervolume(points: &[Vec<f64>]) -> f64 {
    let pts: Vec<Vec<f64>> = points.iter().filter(|p| p.iter().all(|x| *x > 0.0)).cloned().collect();
    hv(pts)
}

fn hv(pts: Vec<Vec<f64>>) -> f64 {
    match pts.first().map(Vec::len) {
        None => 0.0,
        Some(2) => hv2(pts.iter().map(|p| (p[0], p[1])).collect()),
        Some(3) => hv3(pts.iter().map(|p| [p[0], p[1], p[2]]).collect()),
        Some(4) => hv4(pts.iter().map(|p| [p[0], p[1], p[2], p[3]]).collect()),
        Some(_) => hv_slicing(pts, hv),
    }
}

/// Area dominated by 2-D points: sorted by x descending, each adds the
/// strip above the highest y so far. O(n log n).
fn hv2(mut pts: Vec<(f64, f64)>) -> f64 {
    pts.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
    let (mut area, mut top) = (0.0, 0.0f64);
    for (x, y) in pts {
        if y > top {
            area += x * (y - top);
            top = y;
        }
    }
    area
}

/// Volume dominated by 3-D points: a sweep down the last coordinate keeping
/// the 2-D staircase of the points seen so far and its area, updated as each
/// point is inserted (Beume, Fonseca, Lopez-Ibanez, Paquete and Vahrenhold,
/// "On the complexity of computing the hypervolume indicator", IEEE TEC
/// 2009). O(n log n) with the staircase in a B-tree keyed by x.
fn hv3(mut pts: Vec<[f64; 3]>) -> f64 {
    use std::collections::BTreeMap;
    use std::ops::Bound::{Excluded, Unbounded};
    pts.sort_by(|a, b| b[2].total_cmp(&a[2]));
    // The staircase maps x to y; along increasing x, y decreases. Its area is
    // the sum over its points of x * (y - y of the next point to the right).
    // Keys are the bits of x, which order like the numbers for x > 0.
    let mut stair: BTreeMap<u64, f64> = BTreeMap::new();
    let (mut area, mut volume) = (0.0, 0.0);
    for (i, p) in pts.iter().enumerate() {
        let (x, y, k) = (p[0], p[1], p[0].to_bits());
        // Covered when a point with x' >= x has y' >= y; the smallest such x'
        // has the largest y among them.
        let covered = stair.range(k..).next().is_some_and(|(_, yy)| *yy >= y);
        if !covered {
            let floor = stair.range((Excluded(k), Unbounded)).next().map_or(0.0, |(_, yy)| *yy);
            // The points it dominates (x' <= x, y' <= y) sit just left of x.
            let dominated: Vec<(u64, f64)> =
                stair.range(..=k).rev().take_while(|(_, yy)| **yy <= y).map(|(kk, yy)| (*kk, *yy)).collect();
            let mut gain = x * (y - floor);
            let mut right = floor;
            // From the right: each one added x' * (y' - the y to its right).
            for (kk, yy) in &dominated {
                gain -= f64::from_bits(*kk) * (yy - right);
                right = *yy;
            }
            // The next point to the left now steps down to y, not to `right`.
            if let Some((kl, _)) = stair.range(..k).rev().nth(dominated.iter().filter(|(kk, _)| *kk < k).count()) {
                gain -= f64::from_bits(*kl) * (y - right);
            }
            for (kk, _) in dominated {
                stair.remove(&kk);
            }
            stair.insert(k, y);
            area += gain;
        }
        let next = pts.get(i + 1).map_or(0.0, |n| n[2]);
        volume += area * (p[2] - next);
    }
    volume
}

/// Volume dominated by 4-D points: slices along the last coordinate, each
/// slab's 3-D volume by [`hv3`] over the projections seen so far (the HSO
/// scheme with the O(n log n) 3-D base; all four pocketbench objectives).
fn hv4(mut pts: Vec<[f64; 4]>) -> f64 {
    pts.sort_by(|a, b| b[3].total_cmp(&a[3]));
    let mut slab: Vec<[f64; 3]> = Vec::with_capacity(pts.len());
    let mut total = 0.0;
    for (i, p) in pts.iter().enumerate() {
        let q = [p[0], p[1], p[2]];
        if !slab.iter().any(|s| s[0] >= q[0] && s[1] >= q[1] && s[2] >= q[2]) {
            slab.retain(|s| !(q[0] >= s[0] && q[1] >= s[1] && q[2] >= s[2]));
            slab.push(q);
        }
        let depth = p[3] - pts.get(i + 1).map_or(0.0, |n| n[3]);
        if depth > 0.0 {
            total += depth * hv3(slab.clone());
        }
    }
    total
}

/// Slicing along the last coordinate (HSO): each slab's volume from the
/// projected points in it, by `lower` (one dimension down).
fn hv_slicing(mut pts: Vec<Vec<f64>>, lower: fn(Vec<Vec<f64>>) -> f64) -> f64 {
    let Some(d) = pts.first().map(Vec::len) else { return 0.0 };
    if d == 1 {
        return pts.iter().map(|p| p[0]).fold(0.0, f64::max);
    }
    // Slice along the last coordinate, highest first.
    pts.sort_by(|a, b| b[d - 1].total_cmp(&a[d - 1]));
    let mut total = 0.0;
    let mut slab: Vec<Vec<f64>> = Vec::with_capacity(pts.len());
    for i in 0..pts.len() {
        let p = &pts[i];
        let projected = p[..d - 1].to_vec();
        if !slab.iter().any(|q| q.iter().zip(&projected).all(|(a, b)| a >= b)) {
            slab.retain(|q| !projected.iter().zip(q).all(|(a, b)| a >= b));
            slab.push(projected);
        }
        let next = pts.get(i + 1).map_or(0.0, |n| n[d - 1]);
        let depth = p[d - 1] - next;
        if depth > 0.0 {
            total += depth * lower(slab.clone());
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn two_d_frontier_and_volume() {
        let pts = vec![vec![1.0, 3.0], vec![2.0, 2.0], vec![3.0, 1.0], vec![1.0, 1.0]];
        assert_eq!(frontier(&pts), vec![true, true, true, false]);
        // Staircase: 3x1 + 2x1 + 1x1 = 6.
        assert!((hypervolume(&pts) - 6.0).abs() < 1e-12);
    }

    #[test]
    fn three_d_volume() {
        // Two boxes 2x1x1 and 1x2x1 overlap in 1x1x1: union 3. Plus 1x1x2 adds 1.
        let pts = vec![vec![2.0, 1.0, 1.0], vec![1.0, 2.0, 1.0], vec![1.0, 1.0, 2.0]];
        assert!((hypervolume(&pts) - 4.0).abs() < 1e-12);
    }

    /// The plain slicing recursion, down to one dimension: the reference
    /// the sweep-line 2-D and 3-D volumes are checked against.
    fn reference(pts: Vec<Vec<f64>>) -> f64 {
        hv_slicing(pts, reference)
    }

    proptest! {
        #[test]
        fn fast_volumes_equal_plain_slicing(
            pts in prop::collection::vec(prop::collection::vec(0.01f64..10.0, 2..5), 1..30),
        ) {
            let d = pts[0].len();
            let pts: Vec<Vec<f64>> = pts.into_iter().filter(|p| p.len() == d).collect();
            let (fast, slow) = (hv(pts.clone()), reference(pts));
            prop_assert!((fast - slow).abs() <= 1e-9 * slow.max(1.0), "{} vs {}", fast, slow);
        }

        #[test]
        fn frontier_points_are_not_dominated(pts in prop::collection::vec(prop::collection::vec(0.0f64..10.0, 3), 1..40)) {
            let on = frontier(&pts);
            for (i, p) in pts.iter().enumerate() {
                let dominated = pts.iter().any(|q| dominates(q, p));
                prop_assert_eq!(on[i], !dominated);
            }
        }

        #[test]
        fn volume_is_monotone_and_frontier_only(pts in prop::collection::vec(prop::collection::vec(0.01f64..10.0, 3), 1..25)) {
            let all = hypervolume(&pts);
            let on = frontier(&pts);
            let front: Vec<Vec<f64>> = pts.iter().zip(&on).filter(|(_, o)| **o).map(|(p, _)| p.clone()).collect();
            prop_assert!((hypervolume(&front) - all).abs() <= 1e-9 * all.max(1.0));
            let largest_box = pts.iter().map(|p| p.iter().product::<f64>()).fold(0.0, f64::max);
            prop_assert!(all + 1e-9 >= largest_box);
        }
    }
}
