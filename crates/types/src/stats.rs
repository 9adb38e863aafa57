//! Summary statistics of repeated measurements: median, spread (MAD), a
//! bootstrap confidence interval of the median, and outlier flags.
//!
//! Outliers use the modified z-score of Iglewicz and Hoaglin ("How to Detect
//! and Handle Outliers", ASQC 1993): `M_i = 0.6745 (x_i − median) / MAD`,
//! flagged when `|M_i| > 3.5` (the same method hyperfine uses). The interval
//! is the percentile bootstrap (Efron & Tibshirani, *An Introduction to the
//! Bootstrap*, 1993, ch. 13) with a fixed seed, so a stored sample always
//! yields the same interval.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use statrs::statistics::{Data, OrderStatistics};

/// Threshold on the modified z-score (Iglewicz & Hoaglin).
pub const OUTLIER_Z: f64 = 3.5;
/// Bootstrap resamples.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Why a sample was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    /// Fewer than two points say nothing about spread.
    #[error("a sample needs at least 2 points, got {0}")]
    TooFew(usize),
    /// NaN or infinity.
    #[error("a sample must not contain NaN or infinite values (point {0})")]
    NotFinite(usize),
}

/// At least two finite measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<f64>", into = "Vec<f64>")]
pub struct Sample(Vec<f64>);

impl TryFrom<Vec<f64>> for Sample {
    type Error = SampleError;
    fn try_from(v: Vec<f64>) -> Result<Self, SampleError> {
        Sample::new(v)
    }
}

impl From<Sample> for Vec<f64> {
    fn from(s: Sample) -> Vec<f64> {
        s.0
    }
}

/// Summary of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of points.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    /// Mean.
    pub mean: f64,
    /// Coefficient of variation: standard deviation / mean.
    pub cv: f64,
    /// Lower end of the 95% bootstrap interval of the median; `None` (null)
    /// for a single repetition, which has no interval.
    pub ci95_lo: Option<f64>,
    /// Upper end; `None` for a single repetition.
    pub ci95_hi: Option<f64>,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Points flagged as outliers.
    pub outliers: usize,
}

impl Summary {
    /// A single repetition as it is: no spread, and no interval (a 95%
    /// interval needs at least two points; [`Sample`] refuses fewer).
    pub fn single(v: f64) -> Summary {
        Summary {
            n: 1,
            median: v,
            mad: 0.0,
            mean: v,
            cv: 0.0,
            ci95_lo: None,
            ci95_hi: None,
            min: v,
            max: v,
            outliers: 0,
        }
    }

    /// The 95% interval of the median in words: "95% CI a..b", or "no
    /// interval (1 repetition)".
    pub fn interval_label(&self, decimals: usize) -> String {
        match (self.ci95_lo, self.ci95_hi) {
            (Some(lo), Some(hi)) => format!("95% CI {lo:.decimals$}..{hi:.decimals$}"),
            _ => format!("no interval ({} repetition{})", self.n, if self.n == 1 { "" } else { "s" }),
        }
    }
}

/// Median of a non-empty slice (sorts it in place).
pub fn median_mut(v: &mut [f64]) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        (v[k - 1] + v[k]) / 2.0
    }
}

/// Median of a non-empty slice.
pub fn median(v: &[f64]) -> f64 {
    median_mut(&mut v.to_vec())
}

fn median_of(v: &[f64]) -> f64 {
    Data::new(v.to_vec()).median()
}

impl Sample {
    /// Validate the points.
    pub fn new(v: Vec<f64>) -> Result<Self, SampleError> {
        if v.len() < 2 {
            return Err(SampleError::TooFew(v.len()));
        }
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(SampleError::NotFinite(i));
        }
        Ok(Sample(v))
    }

    /// The points.
    pub fn values(&self) -> &[f64] {
        &self.0
    }

    /// Median.
    pub fn median(&self) -> f64 {
        median_of(&self.0)
    }

    /// Median absolute deviation from the median (unscaled).
    pub fn mad(&self) -> f64 {
        let m = self.median();
        median_of(&self.0.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
    }

    /// Modified z-scores; infinite for points off the median when MAD is 0.
    pub fn modified_z(&self) -> Vec<f64> {
        let (m, mad) = (self.median(), self.mad());
        self.0
            .iter()
            .map(|x| {
                let d = x - m;
                if mad > 0.0 {
                    0.6745 * d / mad
                } else if d == 0.0 {
                    0.0
                } else {
                    f64::INFINITY.copysign(d)
                }
            })
            .collect()
    }

    /// Which points are outliers (|modified z| > 3.5).
    pub fn outliers(&self) -> Vec<bool> {
        self.modified_z().iter().map(|z| z.abs() > OUTLIER_Z).collect()
    }

    /// Percentile-bootstrap 95% interval of the median (seeded, deterministic).
    pub fn median_ci95(&self) -> (f64, f64) {
        let mut rng = StdRng::seed_from_u64(0x5eed);
        let n = self.0.len();
        let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
            .map(|_| median_of(&(0..n).map(|_| self.0[rng.random_range(0..n)]).collect::<Vec<_>>()))
            .collect();
        medians.sort_by(f64::total_cmp);
        let mut d = Data::new(medians);
        (d.quantile(0.025), d.quantile(0.975))
    }

    /// Every summary figure.
    pub fn summary(&self) -> Summary {
        let n = self.0.len();
        let mean = self.0.iter().sum::<f64>() / n as f64;
        let var = self.0.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let (ci95_lo, ci95_hi) = self.median_ci95();
        Summary {
            n,
            median: self.median(),
            mad: self.mad(),
            mean,
            cv: if mean != 0.0 { var.sqrt() / mean.abs() } else { 0.0 },
            ci95_lo: Some(ci95_lo),
            ci95_hi: Some(ci95_hi),
            min: self.0.iter().copied().fold(f64::INFINITY, f64::min),
            max: self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            outliers: self.outliers().iter().filter(|o| **o).count(),
        }
    }
}

/// A side's noise: its robust coefficient of variation, 1.4826 x MAD /
/// median (the standard deviation's estimate under normal noise, which one
/// outlier does not move), or `None` for fewer than two samples or a zero
/// median.
pub fn robust_cv(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = median(v);
    if m == 0.0 || !m.is_finite() {
        return None;
    }
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    Some(1.4826 * median(&dev) / m.abs())
}

/// The standard error of the relative difference between two sides of
/// these sizes and noises (coefficients of variation): what a power
/// calculation scales.
pub fn relative_se(cv: [f64; 2], n: [usize; 2]) -> f64 {
    (cv[0] * cv[0] / n[0].max(1) as f64 + cv[1] * cv[1] / n[1].max(1) as f64).sqrt()
}

/// The smallest relative change a one-sided Mann-Whitney test at level
/// `alpha` catches with probability `power`, for a relative standard error
/// `se` ([`relative_se`]): (z(1 - alpha) + z(power)) x se, widened by the
/// test's asymptotic efficiency against the t-test under normal noise
/// (3/pi, Pitman), as a textbook normal-approximation power calculation.
pub fn detectable_change(se: f64, alpha: f64, power: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let z = Normal::new(0.0, 1.0).expect("the standard normal");
    let za = z.inverse_cdf(1.0 - alpha.clamp(1e-12, 0.5));
    let zp = z.inverse_cdf(power.clamp(0.5, 1.0 - 1e-12));
    (za + zp) * se / (3.0 / std::f64::consts::PI).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detectable_change_follows_the_noise_and_the_samples() {
        // The case: 10 samples a side at 15% noise, alpha 0.01.
        let wide = detectable_change(relative_se([0.15, 0.15], [10, 10]), 0.01, 0.8);
        assert!((0.20..0.24).contains(&wide), "{wide}");
        // A quiet machine: 2% noise, 10 a side, sees about 3%.
        let quiet = detectable_change(relative_se([0.02, 0.02], [10, 10]), 0.01, 0.8);
        assert!((0.025..0.032).contains(&quiet), "{quiet}");
        // Four times the samples halve it.
        let more = detectable_change(relative_se([0.15, 0.15], [40, 40]), 0.01, 0.8);
        assert!((more / wide - 0.5).abs() < 1e-9, "{more} {wide}");
        assert!((robust_cv(&[100.0, 102.0, 98.0, 100.0, 100.0]).unwrap() - 0.0).abs() < 1e-12);
        assert!(robust_cv(&[1.0]).is_none());
    }
    use proptest::prelude::*;

    #[test]
    fn refuses_bad_samples() {
        assert_eq!(Sample::new(vec![1.0]).unwrap_err(), SampleError::TooFew(1));
        assert_eq!(Sample::new(vec![1.0, f64::NAN]).unwrap_err(), SampleError::NotFinite(1));
        assert!(serde_json::from_str::<Sample>("[1.0]").is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn known_values() {
        let s = Sample::new(vec![10.0, 11.0, 9.0, 10.0, 30.0]).unwrap();
        assert_eq!(s.median(), 10.0);
        assert_eq!(s.mad(), 1.0);
        assert_eq!(s.outliers(), vec![false, false, false, false, true]);
        let sum = s.summary();
        assert_eq!((sum.min, sum.max, sum.outliers), (9.0, 30.0, 1));
        let (lo, hi) = (sum.ci95_lo.unwrap(), sum.ci95_hi.unwrap());
        assert!(lo <= 10.0 && hi >= 10.0);
    }

    proptest! {
        #[test]
        fn median_within_range_and_shift_equivariant(v in prop::collection::vec(-1e6f64..1e6, 2..40), c in -1e3f64..1e3) {
            let s = Sample::new(v.clone()).unwrap();
            let sum = s.summary();
            prop_assert!(sum.min <= sum.median && sum.median <= sum.max);
            prop_assert!(sum.mad >= 0.0);
            let (lo, hi) = (sum.ci95_lo.unwrap(), sum.ci95_hi.unwrap());
            prop_assert!(lo <= hi && lo >= sum.min && hi <= sum.max);
            let shifted = Sample::new(v.iter().map(|x| x + c).collect()).unwrap();
            prop_assert!((shifted.median() - (s.median() + c)).abs() < 1e-6);
            prop_assert!((shifted.mad() - s.mad()).abs() < 1e-6);
        }

        #[test]
        fn scaling_does_not_change_outliers(v in prop::collection::vec(0.1f64..1e3, 3..30), k in prop::sample::select(vec![0.25, 0.5, 2.0, 4.0, 16.0])) {
            let a = Sample::new(v.clone()).unwrap().outliers();
            let b = Sample::new(v.iter().map(|x| x * k).collect()).unwrap().outliers();
            prop_assert_eq!(a, b);
        }
    }
}
