//! Earlier processes' start-up timings on this machine, pooled with this
//! one's before a kernel choice is settled.
//!
//! Eleven rounds a process are few where a round moves 5-10%: fresh
//! processes of one job on the Zen 4 VM still chose different prefetch
//! distances or attention widths (two of eight on 2026-12-07, evening, with
//! the sign test), and the choice is part of the engine. Each process
//! therefore adds its rounds to a small file in the probe's cache
//! (`kernels/<key>.json`, the last [`KEPT_ROUNDS`]) and settles on all of
//! them, so the choice converges as processes run, where alone each would
//! flip a coin near a tie. FFTW's "wisdom" is the same idea for the same
//! reason.
//!
//! The key is what must not mix: which choice (and for prefetch, the
//! matrices streamed), the candidates, the thread count, this CPU's
//! identity from `/proc/cpuinfo` where readable, and the engine's build
//! (the digest of its source, and the profile).
//! Rounds are paired within themselves (every candidate timed in turn), so
//! rounds from moments of different speed pool soundly: only each round's
//! ratios are compared. Pooling is best effort: a cache that cannot be read
//! or written leaves this process's own rounds, and the choice says how
//! many earlier rounds it pooled. `POCKETBENCH_KERNEL_HISTORY=0` turns it
//! off (measuring what a lone process chooses).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Rounds kept in a file, the newest: this process's eleven and four
/// earlier processes' (older rounds describe a machine that may have
/// changed since).
pub const KEPT_ROUNDS: usize = 55;

/// One choice's rounds on this machine.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Rounds {
    /// The full key (the file name is its hash).
    key: String,
    /// Each round's time of every candidate, in the candidates' order.
    rounds: Vec<Vec<f64>>,
}

/// Where one choice's rounds are kept.
#[derive(Debug, Clone)]
pub struct History {
    /// `None`: not pooled (turned off).
    path: Option<PathBuf>,
    key: String,
}

impl History {
    /// The history of choice `what` among `candidates` on `threads`
    /// threads, in the probe's cache directory.
    pub fn here(what: &str, candidates: &[String], threads: usize) -> History {
        // The probe's own unit tests time choices beside other tests: their
        // rounds are not this machine's to keep.
        let off = cfg!(test) || std::env::var("POCKETBENCH_KERNEL_HISTORY").is_ok_and(|v| v == "0");
        History::at(if off { None } else { Some(crate::cache_dir().join("kernels")) }, what, candidates, threads)
    }

    /// The same in `dir` (`None`: not pooled).
    pub fn at(dir: Option<PathBuf>, what: &str, candidates: &[String], threads: usize) -> History {
        let key = format!(
            "{what}|{}|{threads} thread(s)|{}|engine source {}, {} build",
            candidates.join(","),
            cpu_identity(),
            env!("PB_ENGINE_SOURCE"),
            env!("PB_PROFILE")
        );
        let path = dir.map(|d| d.join(format!("{:016x}.json", pocketbench_types::fnv1a(key.as_bytes()))));
        History { path, key }
    }

    /// This process's rounds (`timed`: each candidate's time in each round)
    /// after the earlier ones kept here, and how many earlier rounds that
    /// is; the newest [`KEPT_ROUNDS`] of them are written back.
    pub fn pool<T: Copy>(&self, timed: Vec<(T, Vec<f64>)>) -> (Vec<(T, Vec<f64>)>, usize) {
        let Some(path) = &self.path else { return (timed, 0) };
        let n = timed.len();
        let mine: Vec<Vec<f64>> =
            (0..timed.first().map_or(0, |t| t.1.len())).map(|r| timed.iter().map(|(_, ts)| ts[r]).collect()).collect();
        if n == 0 || mine.is_empty() {
            return (timed, 0);
        }
        let earlier: Vec<Vec<f64>> = read(path)
            .filter(|h| h.key == self.key)
            .map(|h| h.rounds)
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.len() == n && r.iter().all(|t| t.is_finite() && *t > 0.0))
            .collect();
        let keep = KEPT_ROUNDS.saturating_sub(mine.len());
        let earlier = earlier[earlier.len().saturating_sub(keep)..].to_vec();
        let all: Vec<Vec<f64>> = earlier.iter().chain(&mine).cloned().collect();
        // A failed write loses only the pooling of later processes. A round
        // with a failed thread (an infinite time) counts here, as settling
        // does, but is not kept: JSON has no infinity.
        let keep: Vec<Vec<f64>> = all.iter().filter(|r| r.iter().all(|t| t.is_finite())).cloned().collect();
        let _ = write(path, &Rounds { key: self.key.clone(), rounds: keep });
        let pooled =
            timed.iter().enumerate().map(|(c, (cand, _))| (*cand, all.iter().map(|r| r[c]).collect())).collect();
        (pooled, earlier.len())
    }
}

fn read(path: &Path) -> Option<Rounds> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Written whole and renamed into place, so a process reading it at the
/// same moment sees the old rounds or the new, never half a file.
fn write(path: &Path, rounds: &Rounds) -> std::io::Result<()> {
    let dir = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.{}", std::process::id(), path.file_name().and_then(|n| n.to_str()).unwrap_or("")));
    std::fs::write(&tmp, serde_json::to_vec(rounds).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

/// The CPU, as `/proc/cpuinfo` names it (its vendor, family, model and
/// name on x86; implementer and part on Arm), else the architecture alone.
fn cpu_identity() -> String {
    let fields = ["vendor_id", "cpu family", "model", "model name", "CPU implementer", "CPU part"];
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mut seen: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            let k = k.trim();
            if fields.contains(&k) && !seen.iter().any(|s| s.starts_with(&format!("{k}="))) {
                seen.push(format!("{k}={}", v.trim()));
            }
        }
    }
    seen.insert(0, std::env::consts::ARCH.to_string());
    seen.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_pool_across_processes_up_to_the_newest_kept_and_only_under_their_own_key() {
        let d = tempfile::tempdir().unwrap();
        let h = History::at(Some(d.path().to_path_buf()), "prefetch", &["0".into(), "9216".into()], 2);
        let process = |a: f64, b: f64| vec![(0usize, vec![a; 11]), (9216usize, vec![b; 11])];
        // The first process has only its own rounds.
        let (pooled, earlier) = h.pool(process(10.0, 9.0));
        assert_eq!((earlier, pooled[0].1.len()), (0, 11));
        // The next ones add theirs after it, candidate by candidate.
        let (pooled, earlier) = h.pool(process(20.0, 19.0));
        assert_eq!((earlier, pooled[1].1.len()), (11, 22));
        assert_eq!((pooled[0].1[0], pooled[0].1[21], pooled[1].1[0]), (10.0, 20.0, 9.0));
        for _ in 0..6 {
            h.pool(process(30.0, 29.0));
        }
        let (pooled, earlier) = h.pool(process(40.0, 39.0));
        assert_eq!((earlier, pooled[0].1.len()), (KEPT_ROUNDS - 11, KEPT_ROUNDS));
        assert_eq!(pooled[0].1[0], 30.0, "the oldest dropped first");
        // Another choice, thread count or candidate list pools nothing of it.
        for other in [
            History::at(Some(d.path().to_path_buf()), "attention", &["0".into(), "9216".into()], 2),
            History::at(Some(d.path().to_path_buf()), "prefetch", &["0".into(), "9216".into()], 1),
            History::at(Some(d.path().to_path_buf()), "prefetch", &["0".into(), "1152".into()], 2),
        ] {
            assert_eq!(other.pool(process(1.0, 1.0)).1, 0);
        }
        // Turned off, or a file that is not ours: this process's rounds alone.
        assert_eq!(History::at(None, "prefetch", &["0".into(), "9216".into()], 2).pool(process(1.0, 1.0)).1, 0);
        std::fs::write(h.path.as_ref().unwrap(), "not json").unwrap();
        assert_eq!(h.pool(process(1.0, 1.0)).1, 0);
        assert_eq!(h.pool(process(1.0, 1.0)).1, 11, "and it is written afresh");
    }

    #[test]
    fn the_cpu_is_named_where_the_system_says() {
        let id = cpu_identity();
        assert!(id.starts_with(std::env::consts::ARCH), "{id}");
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) && Path::new("/proc/cpuinfo").exists() {
            assert!(id.contains("model name="), "{id}");
        }
    }
}
