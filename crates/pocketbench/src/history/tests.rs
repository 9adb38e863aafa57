use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

use super::changepoint::{e_divisive, Settings};

/// The figure: a sudden 5% shift in a history of 40 points at 2%
/// noise is located within 2 commits. Trials put the shift anywhere from the
/// 6th to the 35th point.
#[test]
fn a_five_percent_shift_in_40_points_is_located_within_two_commits() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let trials = 200;
    let mut located = 0;
    let mut false_alarms = 0;
    let s = Settings { permutations: 99, ..Settings::default() };
    for t in 0..trials {
        let at = rng.random_range(5..35);
        let base = Normal::new(100.0, 2.0).unwrap();
        let shifted = Normal::new(95.0, 1.9).unwrap();
        let z: Vec<f64> =
            (0..40).map(|i| if i < at { base.sample(&mut rng) } else { shifted.sample(&mut rng) }).collect();
        let c = e_divisive(&z, &Settings { seed: t, ..s });
        if c.iter().any(|c| c.index.abs_diff(at) <= 2) {
            located += 1;
        }
        false_alarms += c.iter().filter(|c| c.index.abs_diff(at) > 2).count();
    }
    let rate = located as f64 / trials as f64;
    assert!(rate >= 0.95, "located within 2 commits in {rate} of trials");
    // Extra changes besides the real one are rare.
    assert!((false_alarms as f64 / trials as f64) < 0.15, "{false_alarms} spurious changes in {trials} trials");
}

#[test]
fn a_flat_history_rarely_has_a_change() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let trials = 200;
    let s = Settings { permutations: 99, ..Settings::default() };
    let noise = Normal::new(100.0, 2.0).unwrap();
    let with_change = (0..trials)
        .filter(|t| {
            let z: Vec<f64> = (0..40).map(|_| noise.sample(&mut rng)).collect();
            !e_divisive(&z, &Settings { seed: *t, ..s }).is_empty()
        })
        .count();
    // The permutation test runs at p < 0.05.
    assert!((with_change as f64 / trials as f64) <= 0.08, "{with_change} of {trials} flat histories had a change");
}
