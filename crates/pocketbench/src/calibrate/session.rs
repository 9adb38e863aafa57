//! Measuring a design for `calibrate --measure`: every job of the design
//! once per round, rounds one after the other (round-robin), so that the
//! host's drift over the calibration hits every point alike; each point's
//! speeds are then those of its fastest round, its peak memory the median.
//! Another process on the cores only ever slows a run, so on a shared host
//! the fastest of a few rounds is the figure that repeats: on the Zen 5 VM
//! one shape decoded at 284 tok/s in one check round and 400 in another
//! the same hour, the same binary.
//!
//! Every finished measurement is appended to a cache file (one JSON line,
//! flushed and synced) before the next starts, so a killed calibration is
//! rerun without redoing finished points. The cache belongs to one
//! unfinished calibration: the command removes it once the profile is
//! written, so the next calibration measures afresh.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::design::Design;
use crate::arch::Shape;
use crate::capability::{capability, ProxySettings};
use crate::device::{Device, PointToml};
use crate::event::{Event, Reporter};
use crate::record::Record;
use crate::runner::{Job, JobSettings, Runner};
use crate::schedule::{Attempted, Policy, Scheduler};
use crate::stats::median;
use crate::workload::Workload;

pub use crate::workload::MIN_PREFILL_PROMPT;

/// The outcome: a calibration point per (shape, workload) measured at least
/// once, and the jobs that never produced a measurement.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Points, in design order.
    pub points: Vec<PointToml>,
    /// `(config, workload, reason)` of each (shape, workload) with no
    /// measurement in any round.
    pub missing: Vec<(String, Workload, String)>,
    /// Per (shape, workload) measured in two rounds or more: how far its
    /// decode rounds lay apart, (fastest - slowest) / fastest. The
    /// machine's own repeatability, which bounds how closely any
    /// prediction can be shown to match it.
    pub decode_spreads: Vec<f64>,
    /// The same jobs: how far the fastest of their odd rounds and the
    /// fastest of their even rounds lie apart ([`halves`]), two estimates
    /// of the point made from rounds interleaved in time.
    pub decode_halves: Vec<f64>,
}

/// (fastest - slowest) / fastest of `speeds`; `None` for fewer than two.
pub fn spread(speeds: &[f64]) -> Option<f64> {
    let fastest = speeds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let slowest = speeds.iter().copied().fold(f64::INFINITY, f64::min);
    (speeds.len() >= 2 && fastest > 0.0).then(|| (fastest - slowest) / fastest)
}

/// How far apart two estimates of one job lie: the fastest of its odd
/// rounds and the fastest of its even rounds (`speeds` in round order),
/// as larger / smaller - 1; `None` for fewer than two. Where these two
/// disagree by more than a tolerance, a check of that job against any
/// prediction cannot be shown to be within it.
pub fn halves(speeds: &[f64]) -> Option<f64> {
    let fastest = |parity| speeds.iter().skip(parity).step_by(2).copied().fold(f64::NEG_INFINITY, f64::max);
    let (a, b) = (fastest(0), fastest(1));
    (speeds.len() >= 2 && a > 0.0 && b > 0.0).then(|| a.max(b) / a.min(b) - 1.0)
}

/// One line of the cache.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    key: String,
    round: u32,
    record: Record,
}

/// The cache key of a job: the shape, workload, threads, engine build and
/// machine, so a cache is never reused by another build or machine.
fn key(runner: &dyn Runner, job: &Job) -> String {
    format!(
        "{}|{}+{}|t{}|{}",
        job.shape.id(),
        job.workload.prompt,
        job.workload.gen,
        job.threads,
        runner.build(job.engine)
    )
}

/// Read what an earlier run of the same calibration finished. A torn last
/// line (a kill in mid-write) is skipped.
fn load(path: &Path) -> HashMap<(String, u32), Record> {
    let Ok(text) = std::fs::read_to_string(path) else { return HashMap::new() };
    text.lines().filter_map(|l| serde_json::from_str::<Line>(l).ok()).map(|l| ((l.key, l.round), l.record)).collect()
}

/// The cache file of one device's calibration on one machine.
pub fn cache_file(dir: &Path, fingerprint: &str, device: &str) -> PathBuf {
    dir.join("calibrations").join(fingerprint).join(format!("{device}.jsonl"))
}

/// Measure `design` on `device` through `runner`, one repetition per job
/// per round, caching into `cache`, progress on `reporter`.
pub fn measure(
    runner: &dyn Runner,
    device: &Device,
    design: &Design,
    settings: &JobSettings,
    cache: &Path,
    reporter: &mut dyn Reporter,
) -> Result<Measured, crate::Error> {
    // Every job is built (and so checked) before anything runs.
    let mut jobs: Vec<(usize, Job)> = Vec::with_capacity(design.jobs_per_round());
    for (i, p) in design.points.iter().enumerate() {
        for w in &p.workloads {
            jobs.push((i, settings.job(device, p.shape, *w)?));
        }
    }
    let keys: Vec<String> = jobs.iter().map(|(_, j)| key(runner, j)).collect();
    let mut done = load(cache);
    let total = jobs.len() * design.rounds as usize;
    let cached = (1..=design.rounds)
        .flat_map(|r| keys.iter().map(move |k| (k.clone(), r)))
        .filter(|k| done.contains_key(k))
        .count();
    reporter.report(&Event::RoundsPlanned { device: device.id().into(), jobs: total, cached });
    let mut file = Cache::open(cache)?;
    let scheduler = Scheduler::new(runner, device, Policy::single_repetition(None));
    let proxy = ProxySettings::default();
    let mut failures: HashMap<String, String> = HashMap::new();
    let mut n = 0;
    for round in 1..=design.rounds {
        for ((_, job), k) in jobs.iter().zip(&keys) {
            n += 1;
            let config = job.shape.to_string();
            let (rec, cached) = match done.get(&(k.clone(), round)) {
                Some(r) => (r.clone(), true),
                None => {
                    let cap = capability(&job.shape, &job.shape.accounting(), &proxy, None);
                    match scheduler.run(job, &cap, reporter) {
                        Attempted::Measured { record, .. } => {
                            file.append(&Line { key: k.clone(), round, record: (*record).clone() })?;
                            (*record, false)
                        }
                        Attempted::Failed { failure, .. } => {
                            let reason = failure.to_string();
                            failures.insert(k.clone(), reason.clone());
                            reporter.report(&Event::RoundFailed {
                                device: device.id().into(),
                                config,
                                workload: job.workload.to_string(),
                                round,
                                reason,
                            });
                            continue;
                        }
                        Attempted::TooHot { .. } => unreachable!("a calibration does not cool between jobs"),
                    }
                }
            };
            reporter.report(&Event::RoundMeasured {
                device: device.id().into(),
                done: n,
                jobs: total,
                round,
                config,
                workload: job.workload.to_string(),
                decode_tok_s: rec.decode_tok_s,
                cached,
            });
            done.insert((k.clone(), round), rec);
        }
    }
    Ok(outcome(design, &jobs, &keys, &done, &failures))
}

/// The cache file, appended to one synced line at a time.
struct Cache {
    path: std::path::PathBuf,
    file: std::fs::File,
}

impl Cache {
    fn open(path: &Path) -> Result<Cache, crate::Error> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| crate::Error::io(dir, e))?;
        }
        let file =
            std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| crate::Error::io(path, e))?;
        Ok(Cache { path: path.to_path_buf(), file })
    }

    fn append(&mut self, line: &Line) -> Result<(), crate::Error> {
        let text = serde_json::to_string(line).map_err(|e| crate::Error::io(&self.path, std::io::Error::other(e)))?;
        writeln!(self.file, "{text}").and_then(|_| self.file.sync_data()).map_err(|e| crate::Error::io(&self.path, e))
    }
}

/// Each (shape, workload)'s point from its rounds, and what never measured.
fn outcome(
    design: &Design,
    jobs: &[(usize, Job)],
    keys: &[String],
    done: &HashMap<(String, u32), Record>,
    failures: &HashMap<String, String>,
) -> Measured {
    let mut out =
        Measured { points: Vec::new(), missing: Vec::new(), decode_spreads: Vec::new(), decode_halves: Vec::new() };
    for ((i, job), k) in jobs.iter().zip(keys) {
        let recs: Vec<&Record> = (1..=design.rounds).filter_map(|r| done.get(&(k.clone(), r))).collect();
        if recs.is_empty() {
            let why = failures.get(k).cloned().unwrap_or_else(|| "not measured".into());
            out.missing.push((job.shape.to_string(), job.workload, why));
            continue;
        }
        let speeds: Vec<f64> = recs.iter().map(|r| r.decode_tok_s).collect();
        out.decode_spreads.extend(spread(&speeds));
        out.decode_halves.extend(halves(&speeds));
        out.points.push(point(&design.name, &job.shape, &recs, design.points[*i].holdout));
    }
    out
}

/// One point from a (shape, workload)'s rounds: the fastest round's decode
/// and prefill speeds (each on its own), the median peak memory.
fn point(design: &str, shape: &Shape, recs: &[&Record], holdout: bool) -> PointToml {
    use crate::units::{ByteSize, TokRate};
    let base = recs[0];
    let mut p = super::point_from_record(base, holdout).expect("measured records");
    let fastest = |f: fn(&Record) -> f64| recs.iter().map(|r| f(r)).fold(f64::NEG_INFINITY, f64::max);
    p.decode = Some(TokRate(fastest(|r| r.decode_tok_s)));
    p.prefill = (base.prompt_tokens >= MIN_PREFILL_PROMPT).then(|| TokRate(fastest(|r| r.prefill_tok_s)));
    p.peak_memory = Some(ByteSize(median(&recs.iter().map(|r| r.peak_mem_increase_mb * 1e6).collect::<Vec<_>>())));
    let m = base.measurement.as_ref().expect("measured records");
    p.source = format!(
        "measured {} by `pocketbench calibrate --measure` ({design} design, {shape}): fastest of {} round-robin round(s) of 1 repetition each (peak memory: median); {} {}, {} threads (timer; VmHWM){}",
        crate::hostinfo::today(),
        recs.len(),
        m.probe.engine,
        m.probe.engine_version,
        m.probe.threads,
        if p.prefill.is_none() { "; prefill not fitted at a prompt this short" } else { "" }
    );
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::measured_record;

    #[test]
    fn a_point_takes_its_fastest_round_and_says_so() {
        // Three rounds of one repetition each; the middle one slowed by
        // another process.
        let recs: Vec<Record> = [300.0, 150.0, 280.0].iter().map(|d| measured_record(2, 64, 16, &[*d])).collect();
        let refs: Vec<&Record> = recs.iter().collect();
        let shape = crate::arch::presets::s(128, 2, 4, 2, 32, 256, 512, true);
        let p = point("quick", &shape, &refs, false);
        assert_eq!(p.decode.map(|d| d.0), Some(300.0));
        assert!(p.source.contains("fastest of 3 round-robin round(s)"), "{}", p.source);
    }

    #[test]
    fn a_spread_is_the_gap_between_fastest_and_slowest_over_the_fastest() {
        assert_eq!(spread(&[300.0, 150.0, 280.0]), Some(0.5));
        assert_eq!(spread(&[200.0, 200.0]), Some(0.0));
        assert_eq!(spread(&[300.0]), None);
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn halves_compare_the_fastest_odd_round_with_the_fastest_even_round() {
        // Rounds 1 and 3 (300, 280) against rounds 2 and 4 (150, 250).
        assert!((halves(&[300.0, 150.0, 280.0, 250.0]).unwrap() - 0.2).abs() < 1e-12);
        assert!((halves(&[250.0, 300.0]).unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(halves(&[300.0]), None);
    }
}
