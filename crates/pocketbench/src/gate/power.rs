//! How often the gate fires, by seeded simulation: the false-alarm rate of
//! identical distributions (A/A) and the power against a slowdown, for a
//! sample size and noise level. The statistics tests hold the gate to its
//! figures with this; `pocketbench gate --power` prints it for a team's own
//! sample size and noise.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

use super::{judge, Settings, Status};

/// What a simulation is of.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Scenario {
    /// Samples a side.
    pub samples: usize,
    /// Noise: the coefficient of variation of each sample (0.02 = 2%).
    pub noise: f64,
    /// The candidate's true slowdown of a higher-is-better metric (0.05 =
    /// 5% slower; 0 for A/A).
    pub slowdown: f64,
    /// Trials.
    pub trials: usize,
    /// Seed.
    pub seed: u64,
}

/// The share of trials the gate declared a regression in.
pub fn regression_rate(s: &Settings, sc: &Scenario) -> f64 {
    let mut rng = StdRng::seed_from_u64(sc.seed);
    let base = Normal::new(100.0, 100.0 * sc.noise).expect("finite noise");
    let cand = Normal::new(100.0 * (1.0 - sc.slowdown), 100.0 * (1.0 - sc.slowdown) * sc.noise).expect("finite noise");
    let mut fired = 0;
    for t in 0..sc.trials {
        let b: Vec<f64> = (0..sc.samples).map(|_| base.sample(&mut rng)).collect();
        let c: Vec<f64> = (0..sc.samples).map(|_| cand.sample(&mut rng)).collect();
        let j = judge(&b, &c, true, s.min_effect_speed, s, sc.seed ^ t as u64, false);
        fired += usize::from(j.alone(s.alpha) == Status::Regression);
    }
    fired as f64 / sc.trials as f64
}
