//! Box-constrained least squares on relative error, for calibration.
//!
//! Each row predicts `y_i = x_i·θ + o_i` for a measured `t_i`; we minimise
//! `Σ ((y_i − t_i) / t_i)²` subject to `lo_j ≤ θ_j ≤ hi_j`. The problem is a
//! convex quadratic over a box, so its minimiser lies in the relative interior
//! of some face of the box and is the unconstrained minimiser on that face's
//! affine hull. With at most a handful of parameters we enumerate every face
//! (each parameter free, at its lower or at its upper bound: at most 3^n
//! candidates), solve the reduced normal equations on each, and keep the best
//! feasible candidate (the active-set enumeration of Lawson & Hanson, *Solving
//! Least Squares Problems*, 1974, ch. 23, done exhaustively).

/// One observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Coefficients of the parameters.
    pub x: Vec<f64>,
    /// The part of the prediction that does not depend on the parameters.
    pub offset: f64,
    /// The measured value (must be non-zero).
    pub target: f64,
}

/// Fitting failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// More parameters than enumeration allows.
    #[error("too many free parameters ({0}; at most 8)")]
    TooManyParams(usize),
    /// A row has the wrong width or a zero target.
    #[error("malformed observation {0}")]
    BadRow(usize),
    /// No point on the box is determined by the data.
    #[error("no feasible solution")]
    NoSolution,
}

/// The best parameters and their objective value.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Parameter values.
    pub theta: Vec<f64>,
    /// Sum of squared relative residuals.
    pub objective: f64,
    /// Which parameters ended on a bound.
    pub at_bound: Vec<bool>,
}

/// Solve the box-constrained problem. `bounds[j]` may have infinite ends; the
/// infinite end is then not a candidate face.
pub fn fit(rows: &[Row], bounds: &[(f64, f64)]) -> Result<Fit, FitError> {
    let n = bounds.len();
    if n > 8 {
        return Err(FitError::TooManyParams(n));
    }
    for (i, r) in rows.iter().enumerate() {
        if r.x.len() != n || r.target == 0.0 || !r.target.is_finite() {
            return Err(FitError::BadRow(i));
        }
    }
    let mut best: Option<Fit> = None;
    let mut state = vec![0u8; n]; // 0 free, 1 lower, 2 upper
    loop {
        if let Some(theta) = solve_face(rows, bounds, &state) {
            let feasible = theta
                .iter()
                .zip(bounds)
                .all(|(t, (lo, hi))| *t >= lo - 1e-12 * lo.abs().max(1.0) && *t <= hi + 1e-12 * hi.abs().max(1.0));
            if feasible {
                // The tolerance above is absolute near 0, and parameters of
                // a few picoseconds (the KV and prefill attention costs) lie
                // within it: a solution a hair outside the box is put on
                // its edge, so a fit never writes a value the profile
                // refuses (a kv-cost of -0.0004 ns did).
                let theta: Vec<f64> = theta.iter().zip(bounds).map(|(t, (lo, hi))| t.clamp(*lo, *hi)).collect();
                let objective = objective(rows, &theta);
                if best.as_ref().is_none_or(|b| objective < b.objective - 1e-15) {
                    let at_bound = state
                        .iter()
                        .zip(theta.iter().zip(bounds))
                        .map(|(s, (t, (lo, hi)))| *s != 0 || t == lo || t == hi)
                        .collect();
                    best = Some(Fit { theta, objective, at_bound });
                }
            }
        }
        // Next state, skipping infinite bounds.
        let mut j = 0;
        loop {
            if j == n {
                return best.ok_or(FitError::NoSolution);
            }
            state[j] += 1;
            if state[j] == 1 && bounds[j].0.is_infinite() {
                state[j] += 1;
            }
            if state[j] == 2 && bounds[j].1.is_infinite() {
                state[j] += 1;
            }
            if state[j] <= 2 {
                break;
            }
            state[j] = 0;
            j += 1;
        }
    }
}

/// Sum of squared relative residuals at `theta`.
pub fn objective(rows: &[Row], theta: &[f64]) -> f64 {
    rows.iter()
        .map(|r| {
            let y: f64 = r.x.iter().zip(theta).map(|(a, b)| a * b).sum::<f64>() + r.offset;
            ((y - r.target) / r.target).powi(2)
        })
        .sum()
}

fn solve_face(rows: &[Row], bounds: &[(f64, f64)], state: &[u8]) -> Option<Vec<f64>> {
    let n = bounds.len();
    let mut theta: Vec<f64> = (0..n)
        .map(|j| match state[j] {
            1 => bounds[j].0,
            2 => bounds[j].1,
            _ => 0.0,
        })
        .collect();
    let free: Vec<usize> = (0..n).filter(|j| state[*j] == 0).collect();
    if free.is_empty() {
        return Some(theta);
    }
    // Weighted rows: a_ij = x_ij / t_i, b_i = (t_i − o_i − fixed part) / t_i.
    let m = free.len();
    let mut ata = vec![vec![0.0; m]; m];
    let mut atb = vec![0.0; m];
    let mut scale = vec![0.0f64; m];
    for r in rows {
        for (c, &j) in free.iter().enumerate() {
            scale[c] += (r.x[j] / r.target).powi(2);
        }
    }
    let scale: Vec<f64> = scale.iter().map(|s| if *s > 0.0 { 1.0 / s.sqrt() } else { 0.0 }).collect();
    if scale.contains(&0.0) {
        return None; // a free parameter no row informs
    }
    for r in rows {
        let fixed: f64 = (0..n).filter(|j| state[*j] != 0).map(|j| r.x[j] * theta[j]).sum();
        let b = (r.target - r.offset - fixed) / r.target;
        let a: Vec<f64> = free.iter().enumerate().map(|(c, &j)| r.x[j] / r.target * scale[c]).collect();
        for p in 0..m {
            atb[p] += a[p] * b;
            for q in 0..m {
                ata[p][q] += a[p] * a[q];
            }
        }
    }
    let z = solve(ata, atb)?;
    for (c, &j) in free.iter().enumerate() {
        theta[j] = z[c] * scale[c];
    }
    Some(theta)
}

/// Gaussian elimination with partial pivoting; `None` when (near) singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|x, y| a[*x][col].abs().total_cmp(&a[*y][col].abs()))?;
        if a[piv][col].abs() < 1e-10 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            let (top, bottom) = a.split_at_mut(r);
            for (x, p) in bottom[0][col..].iter_mut().zip(&top[col][col..]) {
                *x -= f * p;
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_system_is_recovered() {
        // y = 2a + 3b
        let rows = vec![
            Row { x: vec![1.0, 0.0], offset: 0.0, target: 2.0 },
            Row { x: vec![0.0, 1.0], offset: 0.0, target: 3.0 },
            Row { x: vec![1.0, 1.0], offset: 0.0, target: 5.0 },
        ];
        let f = fit(&rows, &[(0.0, f64::INFINITY), (0.0, f64::INFINITY)]).unwrap();
        assert!((f.theta[0] - 2.0).abs() < 1e-9 && (f.theta[1] - 3.0).abs() < 1e-9);
        assert!(f.objective < 1e-18);
    }

    #[test]
    fn bound_is_respected() {
        // The data want a = 2, the box caps it at 1.5.
        let rows = vec![Row { x: vec![1.0], offset: 0.0, target: 2.0 }];
        let f = fit(&rows, &[(0.0, 1.5)]).unwrap();
        assert_eq!(f.theta, vec![1.5]);
        assert_eq!(f.at_bound, vec![true]);
    }

    #[test]
    fn a_solution_a_hair_outside_the_box_is_put_on_its_edge() {
        // The data want a = -1e-13, inside the feasibility tolerance of the
        // bound 0: the fit must not return a negative cost.
        let rows = vec![Row { x: vec![1.0], offset: 1.0, target: 1.0 - 1e-13 }];
        let f = fit(&rows, &[(0.0, 1e-8)]).unwrap();
        assert_eq!(f.theta, vec![0.0]);
        assert_eq!(f.at_bound, vec![true]);
    }

    #[test]
    fn uninformed_parameter_is_left_at_a_bound() {
        let rows = vec![Row { x: vec![1.0, 0.0], offset: 0.0, target: 2.0 }];
        let f = fit(&rows, &[(0.0, 10.0), (0.0, 10.0)]).unwrap();
        assert!((f.theta[0] - 2.0).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn never_worse_than_any_box_corner(
            xs in prop::collection::vec((0.1f64..10.0, 0.1f64..10.0, 0.5f64..50.0), 2..6)
        ) {
            let rows: Vec<Row> = xs.iter().map(|(a, b, t)| Row { x: vec![*a, *b], offset: 0.0, target: *t }).collect();
            let bounds = [(0.0, 5.0), (0.0, 5.0)];
            let f = fit(&rows, &bounds).unwrap();
            prop_assert!(f.theta.iter().all(|t| *t >= -1e-9 && *t <= 5.0 + 1e-9));
            for corner in [[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [5.0, 5.0], [2.5, 2.5]] {
                prop_assert!(f.objective <= objective(&rows, &corner) + 1e-9);
            }
        }
    }
}
