//! Measuring a design for `calibrate --measure`: every job of the design
//! once per round, rounds one after the other (round-robin), the even ones
//! in reverse, so that the host's drift over the calibration hits every
//! point alike ([`serpentine`]). Each round
//! repeats its job to a precision ([`super::host::JOB_PRECISION`]), with
//! contended and drifted repetitions retaken; a point's speeds are the
//! median of every round's summarized repetitions, its bandwidth the median
//! of their same-moment passes, its noise how far its rounds' medians lay
//! apart. (Until 2026-12-06 a point was the fastest of single-repetition
//! rounds: on the Zen 4 VM its rounds lay a median 10% apart and up to 67%,
//! which no fit can follow.)
//!
//! Every finished measurement is appended to a cache file (one JSON line,
//! flushed and synced) before the next starts, so a killed calibration is
//! rerun without redoing finished points. The cache belongs to one
//! unfinished calibration: the command removes it once the profile is
//! written, so the next calibration measures afresh.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::design::Design;
use super::pace::{self, Pace};
use crate::arch::Shape;
use crate::capability::{capability, ProxySettings};
use crate::device::{Device, PointToml};
use crate::event::{Event, Reporter};
use crate::record::Record;
use crate::runner::{Job, JobSettings, Runner};
use crate::schedule::{Attempted, Policy, Scheduler};
use crate::stats::median;
use crate::trust::Elasticity;
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
    /// of the point made from rounds interleaved in time, raw and with the
    /// machine's bandwidth moves taken out ([`Half`]).
    pub decode_halves: Vec<Half>,
    /// How decode followed the same-moment bandwidth within the jobs,
    /// where that could be fitted: what takes each job's halves to one
    /// bandwidth.
    pub elasticity: Option<Elasticity>,
    /// Points whose measurement kept contended repetitions (in any round).
    pub contended: usize,
    /// Rounds shortened to keep within the design's time budget ([`Pace`]).
    pub shortened: u32,
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

/// How far one job's two halves lie apart ([`halves`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Half {
    /// Of the rounds' median decode speeds as measured.
    pub raw: f64,
    /// Of the rounds' median decode speeds taken to one bandwidth by the
    /// calibration's [`Elasticity`], fitted within every job; `None` where
    /// none could be fitted (too few repetitions, a bandwidth that did not
    /// move or does not explain the speed) or a round has no passes.
    pub at_bandwidth: Option<f64>,
}

impl Half {
    /// The figure a calibration is judged by: at one bandwidth where that
    /// could be made, else as measured. A point is fitted at its own
    /// same-moment bandwidth, so what must repeat is its decode speed at a
    /// given bandwidth, not the machine's bandwidth in those minutes.
    pub fn judged(&self) -> f64 {
        self.at_bandwidth.unwrap_or(self.raw)
    }
}

/// (decode tok/s, same-moment GB/s) of every repetition of a job's rounds,
/// retaken ones included: what an [`Elasticity`] learns from.
fn job_points(recs: &[&Record]) -> Vec<(f64, f64)> {
    recs.iter()
        .filter_map(|r| r.measurement.as_ref())
        .flat_map(|m| crate::trust::decode_and_bandwidth(&m.probe, true))
        .collect()
}

/// A job's [`Half`] from its rounds' records, taken to one bandwidth with
/// `elasticity` where given and every round has same-moment passes;
/// `None` for fewer than two rounds.
pub fn half(recs: &[&Record], elasticity: Option<Elasticity>) -> Option<Half> {
    let raw = halves(&recs.iter().map(|r| r.decode_tok_s).collect::<Vec<_>>())?;
    let at_bandwidth = elasticity.and_then(|el| {
        // Any one reference gives the same ratio of halves; the job's median keeps the figures readable.
        let all = job_points(recs);
        let reference = (!all.is_empty()).then(|| median(&all.iter().map(|p| p.1).collect::<Vec<_>>()))?;
        let rounds: Option<Vec<f64>> = recs
            .iter()
            .map(|r| {
                let kept = crate::trust::decode_and_bandwidth(&r.measurement.as_ref()?.probe, false);
                let v: Vec<f64> = kept.into_iter().map(|(t, bw)| el.adjust(t, bw, reference)).collect();
                (!v.is_empty()).then(|| median(&v))
            })
            .collect();
        halves(&rounds?)
    });
    Some(Half { raw, at_bandwidth })
}

/// One line of the cache.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    key: String,
    round: u32,
    record: Record,
}

/// The cache key of a job: the shape, workload, threads, engine build,
/// machine and the precision each round asks for, so a cache is never
/// reused by another build or machine, nor by a calibration asking for
/// another precision.
fn key(runner: &dyn Runner, job: &Job) -> String {
    let precision =
        job.auto.map(|a| format!("|p{}-{}-{}s", a.precision, a.max_reps, a.max_seconds)).unwrap_or_default();
    format!(
        "{}|{}+{}|t{}|{}{precision}",
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
            // The drift passes around every repetition read the bandwidth
            // a point is fitted against; the 256 MiB pass after them adds
            // nothing here but seconds.
            jobs.push((i, Job { bandwidth_pass: false, timed_reloads: false, ..settings.job(device, p.shape, *w)? }));
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
    let policy = Policy { contention: Some(super::host::job_rule()), ..Policy::single_repetition(None) };
    let scheduler = Scheduler::new(runner, device, policy);
    let hurried = Scheduler::new(runner, device, pace::hurried(policy));
    let proxy = ProxySettings::default();
    let mut failures: HashMap<String, String> = HashMap::new();
    let mut pace = Pace::new(design.budget);
    if design.budget.is_some() {
        for ((_, job), k) in jobs.iter().zip(&keys) {
            let p = crate::predict::predict(&job.shape, &job.shape.accounting(), device.model(), &job.workload);
            pace.predict(k, pace::predicted_seconds(job, &p));
        }
    }
    let started = Instant::now();
    let order = serpentine(design.rounds, jobs.len());
    for (i, &(round, j)) in order.iter().enumerate() {
        let (job, k, n) = (&jobs[j].1, &keys[j], i + 1);
        let config = job.shape.to_string();
        let (rec, cached) = match done.get(&(k.clone(), round)) {
            Some(r) => (r.clone(), true),
            None => {
                let cap = capability(&job.shape, &job.shape.accounting(), &proxy, None);
                let rest = order[i..].iter().filter(|(r, j)| !done.contains_key(&(keys[*j].clone(), *r)));
                let hurry = pace.behind(started.elapsed().as_secs_f64(), rest.map(|(_, j)| &keys[*j]));
                let job = if hurry { pace::shortened(job) } else { job.clone() };
                let began = Instant::now();
                let attempted = if hurry { &hurried } else { &scheduler }.run(&job, &cap, reporter);
                pace.took(k, began.elapsed().as_secs_f64(), hurry);
                match attempted {
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
    Ok(outcome(design, &jobs, &keys, &done, &failures, &pace))
}

/// The order of a calibration's measurements, `(round, job)`: every job
/// once per round, the even rounds in reverse. A host that drifts over the
/// calibration then gives every job the same mean moment (a linear drift
/// moves every point alike, which the fit and the held-out shapes share),
/// where the same order every round gave the design's last jobs, the
/// held-out shapes among them, a later mean moment than its first.
fn serpentine(rounds: u32, jobs: usize) -> Vec<(u32, usize)> {
    (1..=rounds).flat_map(|r| (0..jobs).map(move |i| (r, if r % 2 == 1 { i } else { jobs - 1 - i }))).collect()
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
    pace: &Pace,
) -> Measured {
    let mut out = Measured {
        points: Vec::new(),
        missing: Vec::new(),
        decode_spreads: Vec::new(),
        decode_halves: Vec::new(),
        elasticity: None,
        contended: 0,
        shortened: pace.total_shortened(),
    };
    let mut jobs_recs: Vec<Vec<&Record>> = Vec::new();
    for ((i, job), k) in jobs.iter().zip(keys) {
        let recs: Vec<&Record> = (1..=design.rounds).filter_map(|r| done.get(&(k.clone(), r))).collect();
        if recs.is_empty() {
            let why = failures.get(k).cloned().unwrap_or_else(|| "not measured".into());
            out.missing.push((job.shape.to_string(), job.workload, why));
            continue;
        }
        let speeds: Vec<f64> = recs.iter().map(|r| r.decode_tok_s).collect();
        out.contended += usize::from(recs.iter().any(|r| r.measurement.as_ref().is_some_and(|m| m.contended)));
        out.decode_spreads.extend(spread(&speeds));
        let shortened = pace.shortened.get(k).copied().unwrap_or(0);
        out.points.push(point(&design.name, &job.shape, &recs, design.points[*i].holdout, job.auto, shortened));
        jobs_recs.push(recs);
    }
    let every: Vec<Vec<(f64, f64)>> = jobs_recs.iter().map(|r| job_points(r)).collect();
    out.elasticity = Elasticity::within(&every.iter().map(Vec::as_slice).collect::<Vec<_>>());
    for (recs, p) in jobs_recs.iter().zip(out.points.iter_mut()) {
        let h = half(recs, out.elasticity);
        out.decode_halves.extend(h);
        p.noise = h.map(|h| crate::units::Fraction(h.judged()));
    }
    out
}

/// One point from a (shape, workload)'s rounds: the median over every
/// summarized repetition of every round of decode and prefill speed (each
/// round repeated to its precision (`auto`, by default
/// [`super::host::JOB_PRECISION`]), contended and drifted
/// repetitions retaken), the median peak memory, the median same-moment
/// bandwidth of those repetitions (the weights' own passes; absent where
/// the weights are too small to read); `outcome` adds how far its halves
/// lay apart (the split-half noise, [`Half::judged`]).
fn point(
    design: &str,
    shape: &Shape,
    recs: &[&Record],
    holdout: bool,
    auto: Option<crate::probe::timing::AutoReps>,
    shortened: u32,
) -> PointToml {
    use crate::units::{Bandwidth, ByteSize, TokRate};
    let base = recs[0];
    let mut p = super::point_from_record(base, holdout).expect("measured records");
    let kept: Vec<&crate::probe::Rep> = recs
        .iter()
        .filter_map(|r| r.measurement.as_ref())
        .flat_map(|m| crate::trust::kept(&m.probe).collect::<Vec<_>>())
        .collect();
    let med = |f: &dyn Fn(&crate::probe::Rep) -> Option<f64>| {
        let v: Vec<f64> = kept.iter().filter_map(|r| f(r)).filter(|x| x.is_finite()).collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let pooled = |f: fn(&Record) -> f64| median(&recs.iter().map(|r| f(r)).collect::<Vec<_>>());
    p.decode = Some(TokRate(med(&|r| Some(r.decode_tok_s)).unwrap_or_else(|| pooled(|r| r.decode_tok_s))));
    p.prefill = (base.prompt_tokens >= MIN_PREFILL_PROMPT)
        .then(|| TokRate(med(&|r| Some(r.prefill_tok_s)).unwrap_or_else(|| pooled(|r| r.prefill_tok_s))));
    p.peak_memory = Some(ByteSize(median(&recs.iter().map(|r| r.peak_mem_increase_mb * 1e6).collect::<Vec<_>>())));
    p.bandwidth = med(&|r| r.drift.map(|d| (d.before_gb_s + d.after_gb_s) / 2.0 * 1e9)).map(Bandwidth);
    let m = base.measurement.as_ref().expect("measured records");
    let each_round = match auto {
        Some(a) => format!(
            "each round repeated until its median was within ±{}% or {} repetitions or {} s",
            (a.precision * 1000.0).round() / 10.0,
            a.max_reps,
            a.max_seconds
        ),
        None => "each round a set number of repetitions".into(),
    };
    let each_round = match shortened {
        0 => each_round,
        n => format!("{each_round}, {n} of them shortened to one repetition at the least, none retaken, to keep within the design's time budget"),
    };
    p.source = format!(
        "measured {} by `pocketbench calibrate --measure` ({design} design, {shape}): median of {} repetition(s) over {} round-robin round(s), {each_round} (peak memory: median of the rounds){}; {} {}, {} threads (timer; VmHWM){}",
        crate::hostinfo::today(),
        kept.len(),
        recs.len(),
        if p.bandwidth.is_some() {
            "; bandwidth: median of the weights' own read passes before and after each repetition"
        } else {
            ""
        },
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
    fn a_point_is_the_median_of_every_rounds_repetitions_and_its_halves_the_rounds_apart() {
        // Three rounds of a few repetitions each; the middle one slowed by
        // another process.
        let rounds: [&[f64]; 3] = [&[300.0, 310.0], &[150.0, 160.0, 170.0], &[280.0, 290.0]];
        let recs: Vec<Record> = rounds.iter().map(|d| measured_record(2, 64, 16, d)).collect();
        let refs: Vec<&Record> = recs.iter().collect();
        let shape = crate::arch::presets::s(128, 2, 4, 2, 32, 256, 512, true);
        let p = point("quick", &shape, &refs, false, Some(crate::calibrate::host::JOB_PRECISION), 0);
        assert_eq!(p.decode.map(|d| d.0), Some(280.0));
        // The fastest odd round's median (305) over the even one's (160),
        // which `outcome` writes as the point's noise.
        let noise = half(&refs, None).unwrap().judged();
        assert!((noise - (305.0 / 160.0 - 1.0)).abs() < 1e-9, "{noise}");
        assert!(p.source.contains("median of 7 repetition(s) over 3 round-robin round(s)"), "{}", p.source);
        // The test records carry no drift passes: no moment bandwidth.
        assert_eq!(p.bandwidth, None);
    }

    #[test]
    fn halves_are_judged_at_one_bandwidth_where_the_machine_moved_between_rounds() {
        // Decode follows the square root of the moment's bandwidth: round 1
        // in a slow stretch (25-35 GB/s), round 2 in a fast one (50-70 GB/s).
        // As measured the halves lie 41% apart; the same engine at one
        // bandwidth, they agree.
        let tok_s = |bw: f64| 40.0 * bw.sqrt();
        let bws: [[f64; 4]; 2] = [[25.0, 30.0, 35.0, 30.0], [50.0, 60.0, 70.0, 60.0]];
        let recs: Vec<Record> = bws
            .iter()
            .map(|round| {
                let mut r = measured_record(2, 64, 16, &round.map(tok_s));
                for (rep, bw) in r.measurement.as_mut().unwrap().probe.reps.iter_mut().zip(round) {
                    rep.drift = Some(crate::probe::drift::Drift::new(bw * 1e9, bw * 1e9, rep.decode_tok_s, 1, None));
                }
                r
            })
            .collect();
        let refs: Vec<&Record> = recs.iter().collect();
        let el = Elasticity::within(&[&job_points(&refs)]).unwrap();
        assert!((el.e - 0.5).abs() < 1e-9 && el.r > 0.999 && el.points == 8, "{el:?}");
        let h = half(&refs, Some(el)).unwrap();
        assert!((h.raw - (2f64.sqrt() - 1.0)).abs() < 1e-9, "{h:?}");
        assert!(h.at_bandwidth.unwrap() < 1e-9 && h.judged() < 1e-9, "{h:?}");
        // Without an elasticity, or without same-moment passes, nothing is taken out.
        assert_eq!(half(&refs, None).unwrap().at_bandwidth, None);
        let bare: Vec<Record> = bws.iter().map(|r| measured_record(2, 64, 16, &r.map(tok_s))).collect();
        let bare: Vec<&Record> = bare.iter().collect();
        assert!(job_points(&bare).is_empty());
        let h = half(&bare, Some(el)).unwrap();
        assert_eq!((h.at_bandwidth, h.judged()), (None, h.raw));
    }

    #[test]
    fn rounds_alternate_direction_so_every_job_has_the_same_mean_moment() {
        let order = serpentine(3, 3);
        assert_eq!(order, [(1, 0), (1, 1), (1, 2), (2, 2), (2, 1), (2, 0), (3, 0), (3, 1), (3, 2)]);
        // In two rounds, each job's two positions sum alike.
        let two = serpentine(2, 5);
        let mean = |j: usize| two.iter().enumerate().filter(|(_, (_, k))| *k == j).map(|(i, _)| i).sum::<usize>();
        assert!((0..5).all(|j| mean(j) == mean(0)), "{two:?}");
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
