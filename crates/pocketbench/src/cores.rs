//! Threads on a CPU of several core kinds (big.LITTLE): which cores a pool
//! of N threads runs on, and what it can read and compute there.
//!
//! The model is the one a CPU engine's static split implies: every thread
//! gets an equal share of each matrix, so the slowest core in the pool sets
//! the pace. Decode reads at `threads x` the smallest per-core bandwidth of
//! the cores used (capped at the memory's peak); prefill computes at
//! `threads x` the lowest clock of them. Pinned threads take the fastest
//! cores first (`taskset` to the prime cores); an unpinned pool is placed
//! slowest first, which is where an energy-aware scheduler puts a new pool
//! (the OnePlus 13's note: "else the pool lands on mid cores at about half
//! bandwidth"); a real one migrates, which this does not model.
//!
//! A profile's parameters were fitted at its own thread count
//! (`[engine] threads`, pinned); a prediction at another count scales its
//! bandwidth and compute efficiency by the ratio of the two placements.

use serde::{Deserialize, Serialize};

use crate::device::CpuFacts;

/// Where a pool of threads runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Threads in the pool.
    pub threads: u32,
    /// Pinned to the fastest cores (else placed slowest first).
    pub pinned: bool,
    /// Cores used per cluster, in the order taken: ("prime", 2).
    pub cores: Vec<(String, u32)>,
    /// What the pool reads, B/s: threads x the smallest per-core bandwidth
    /// used, at most the memory's peak.
    pub bandwidth: f64,
    /// What the pool computes at, in core-hertz: threads x the lowest clock used.
    pub core_hz: f64,
}

impl Placement {
    /// "2 prime + 2 performance (pinned)": cores per cluster.
    pub fn describe(&self) -> String {
        let cores: Vec<String> = self.cores.iter().map(|(n, c)| format!("{c} {n}")).collect();
        format!("{} ({})", cores.join(" + "), if self.pinned { "pinned" } else { "unpinned" })
    }
}

/// Why threads cannot be placed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlaceError {
    /// The profile has no clusters.
    #[error("device `{0}` has no [facts.cpu] clusters: its thread count cannot be predicted")]
    NoClusters(String),
    /// More threads than cores.
    #[error("--threads {threads}: device `{device}` has {cores} cores")]
    TooMany {
        /// Device id.
        device: String,
        /// Threads asked.
        threads: u32,
        /// Cores it has.
        cores: u32,
    },
}

/// Place `threads` on `cpu`'s clusters, reading at most `peak` B/s.
pub fn place(device: &str, cpu: &CpuFacts, threads: u32, pinned: bool, peak: f64) -> Result<Placement, PlaceError> {
    let total: u32 = cpu.clusters.iter().map(|c| c.cores).sum();
    if cpu.clusters.is_empty() {
        return Err(PlaceError::NoClusters(device.into()));
    }
    if threads == 0 || threads > total {
        return Err(PlaceError::TooMany { device: device.into(), threads, cores: total });
    }
    let mut order: Vec<_> = cpu.clusters.iter().collect();
    order.sort_by(|a, b| if pinned { b.clock.0.total_cmp(&a.clock.0) } else { a.clock.0.total_cmp(&b.clock.0) });
    let (mut left, mut cores, mut min_bw, mut min_hz) = (threads, Vec::new(), f64::INFINITY, f64::INFINITY);
    for c in order {
        if left == 0 {
            break;
        }
        let take = left.min(c.cores);
        cores.push((c.name.clone(), take));
        min_bw = min_bw.min(c.core_bandwidth.0);
        min_hz = min_hz.min(c.clock.0);
        left -= take;
    }
    Ok(Placement {
        threads,
        pinned,
        cores,
        bandwidth: (threads as f64 * min_bw).min(peak),
        core_hz: threads as f64 * min_hz,
    })
}

/// One point of a thread curve: a placement and what is predicted there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Where the threads run.
    pub placement: Placement,
    /// Predicted decode, tok/s.
    pub decode_tok_s: f64,
    /// Predicted prefill, tok/s.
    pub prefill_tok_s: f64,
    /// Predicted time to first token, ms.
    pub ttft_ms: f64,
}

/// `shape` at `workload` on `device` at each thread count of `threads`,
/// pinned and unpinned.
pub fn curve(
    device: &crate::device::Device,
    shape: &crate::arch::Shape,
    workload: &crate::workload::Workload,
    threads: std::ops::RangeInclusive<u32>,
) -> Result<Vec<CurvePoint>, PlaceError> {
    let acct = shape.accounting();
    let mut out = Vec::new();
    for t in threads {
        for pinned in [true, false] {
            let (d, placement) = device.at_threads(t, pinned)?;
            let p = crate::predict::predict(shape, &acct, d.model(), workload);
            out.push(CurvePoint {
                placement,
                decode_tok_s: p.decode_tok_s,
                prefill_tok_s: p.prefill_tok_s,
                ttft_ms: p.ttft_ms,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::ClusterToml;
    use crate::units::{Bandwidth, Frequency};

    /// The OnePlus 13's Snapdragon 8 Elite as its profile writes it.
    fn elite() -> CpuFacts {
        let c = |name: &str, cores, ghz, gb_s| ClusterToml {
            name: name.into(),
            cores,
            clock: Frequency(ghz * 1e9),
            core_bandwidth: Bandwidth(gb_s * 1e9),
        };
        CpuFacts { clusters: vec![c("performance", 6, 3.53, 15.35), c("prime", 2, 4.32, 30.7)], source: "test".into() }
    }

    #[test]
    fn pinned_threads_take_the_prime_cores_first_and_the_pool_slows_to_its_slowest_core() {
        let at = |t, pinned| place("oneplus-13", &elite(), t, pinned, 84.8e9).unwrap();
        let two = at(2, true);
        assert_eq!(two.cores, [("prime".to_string(), 2)]);
        assert!((two.bandwidth - 61.4e9).abs() < 1e6 && (two.core_hz - 8.64e9).abs() < 1e3);
        // The third thread runs on a performance core: every share waits for it.
        let three = at(3, true);
        assert_eq!(three.describe(), "2 prime + 1 performance (pinned)");
        assert!(three.bandwidth < two.bandwidth, "{three:?}");
        assert!((at(4, true).bandwidth - two.bandwidth).abs() < 1e6, "4 threads read what 2 prime cores do");
        assert_eq!(at(8, true).bandwidth, 84.8e9, "capped at the peak");
        // Unpinned, the pool lands on the performance cores at half the bandwidth.
        let loose = at(2, false);
        assert_eq!(loose.cores, [("performance".to_string(), 2)]);
        assert!((loose.bandwidth / two.bandwidth - 0.5).abs() < 1e-9);
        assert_eq!(at(7, false).describe(), "6 performance + 1 prime (unpinned)");
    }

    #[test]
    fn a_pool_bigger_than_the_cpu_or_a_cpu_without_clusters_is_refused() {
        let e = place("oneplus-13", &elite(), 9, true, 84.8e9).unwrap_err();
        assert_eq!(e.to_string(), "--threads 9: device `oneplus-13` has 8 cores");
        assert!(place("x", &elite(), 0, true, 1.0).is_err());
        let none = CpuFacts { clusters: vec![], source: String::new() };
        assert!(matches!(place("x", &none, 1, true, 1.0), Err(PlaceError::NoClusters(_))));
    }
}
