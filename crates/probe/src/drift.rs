//! The machine's bandwidth at the moment of each repetition, read over the
//! weights' own memory.
//!
//! On a shared VM the memory bandwidth moves between about 35 and 70 GB/s
//! over seconds and minutes, and an engine at the roofline moves with it:
//! the same process's decode speed follows the machine, not the engine.
//! Right before and right after each repetition the probe streams the
//! matrices the engine holds (the very pages decode reads, huge pages and
//! all) with the engine's thread count, in short passes: that is the
//! repetition's same-moment roofline. Decode speed over it,
//! `tok/s x bytes / (bytes/s)`, is the repetition's *efficiency*: the share
//! of the moment's bandwidth the engine turned into tokens, which stays
//! put when the machine moves and falls when the engine gets slower.
//!
//! A repetition whose two passes differ by more than
//! [`crate::window::Contention::max_drift`] ran while the bandwidth was
//! moving: neither pass describes its window, so it is marked `drifted`
//! and retaken like a contended one.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Passes on each side of a repetition; the best is kept (a pass that an
/// interrupt or a page walk slowed is not the memory's speed).
pub const PASSES: usize = 2;

/// Weights below this are not read: they fit in (or near) the last-level
/// caches (32 MiB on the hosts seen here, 12 MiB on the phones' big cores),
/// so their passes would time the caches and the threads' start, not the
/// memory whose moves decode feels. Their repetitions carry no drift.
pub const MIN_READ_BYTES: u64 = 64 << 20;

/// The bandwidth around one repetition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Read right before the repetition, GB/s (best of [`PASSES`]).
    pub before_gb_s: f64,
    /// Read right after it, GB/s.
    pub after_gb_s: f64,
    /// Decode tok/s x the weights' bytes / the mean of the two: the share
    /// of the moment's bandwidth decode achieved.
    pub efficiency: f64,
    /// The two passes differ by more than the rule's `max_drift` of their
    /// mean: the bandwidth moved during the repetition.
    #[serde(default)]
    pub drifted: bool,
}

impl Drift {
    /// From the two readings (bytes/s), the decode speed, the bytes a
    /// token reads and the rule's largest relative move (none: never
    /// drifted).
    pub fn new(before: f64, after: f64, decode_tok_s: f64, bytes: u64, max_drift: Option<f64>) -> Drift {
        let mut d = Drift {
            before_gb_s: before / 1e9,
            after_gb_s: after / 1e9,
            efficiency: decode_tok_s * bytes as f64 / ((before + after) / 2.0),
            drifted: false,
        };
        d.drifted = max_drift.is_some_and(|m| d.moved() > m);
        d
    }

    /// How far the bandwidth moved between the passes, over their mean.
    pub fn moved(&self) -> f64 {
        (self.after_gb_s - self.before_gb_s).abs() / ((self.after_gb_s + self.before_gb_s) / 2.0)
    }
}

/// Read bandwidth, bytes per second, of one streaming pass over `regions`
/// with `threads` threads, each summing an equal share of all the words;
/// the best of `passes`.
pub fn read(regions: &[&[u64]], threads: usize, passes: usize) -> f64 {
    let words: usize = regions.iter().map(|r| r.len()).sum();
    if words == 0 {
        return 0.0;
    }
    let threads = threads.max(1);
    let per = words.div_ceil(threads);
    let bytes = (words * 8) as f64;
    (0..passes.max(1))
        .map(|_| {
            let t = Instant::now();
            let total = std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|i| s.spawn(move || share(regions, i * per, ((i + 1) * per).min(words))))
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap_or(0)).fold(0u64, u64::wrapping_add)
            });
            std::hint::black_box(total);
            bytes / t.elapsed().as_secs_f64()
        })
        .fold(0.0, f64::max)
}

/// The sum of words `lo..hi` of `regions` taken as one sequence.
fn share(regions: &[&[u64]], lo: usize, hi: usize) -> u64 {
    let mut at = 0usize;
    let mut total = 0u64;
    for r in regions {
        let (start, end) = (at, at + r.len());
        at = end;
        if end <= lo || start >= hi {
            continue;
        }
        let a = lo.max(start) - start;
        let b = hi.min(end) - start;
        total = total.wrapping_add(crate::kernels::stream_sum(&r[a..b]));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_read_once_whatever_the_thread_count() {
        let a: Vec<u64> = (1..=1000).collect();
        let b: Vec<u64> = (1001..=1777).collect();
        let regions = [&a[..], &b[..]];
        let all: u64 = (1..=1777u64).sum();
        for threads in 1..=7 {
            let per = 1777usize.div_ceil(threads);
            let got = (0..threads).map(|i| share(&regions, i * per, ((i + 1) * per).min(1777))).sum::<u64>();
            assert_eq!(got, all, "{threads} threads");
        }
        assert!(read(&regions, 3, 2) > 0.0);
        assert_eq!(read(&[], 2, 2), 0.0);
    }

    #[test]
    fn efficiency_is_decode_over_the_mean_roofline_and_a_move_past_the_rule_is_drift() {
        // 100 tok/s x 1e8 bytes = 1e10 B/s of 2e10 mean: half the roofline.
        let d = Drift::new(1.8e10, 2.2e10, 100.0, 100_000_000, Some(0.15));
        assert!((d.efficiency - 0.5).abs() < 1e-12);
        assert!((d.moved() - 0.2).abs() < 1e-12 && d.drifted);
        assert!(!Drift::new(2.0e10, 2.1e10, 100.0, 1, Some(0.15)).drifted);
        assert!(!Drift::new(1.0e10, 3.0e10, 100.0, 1, None).drifted);
    }
}
