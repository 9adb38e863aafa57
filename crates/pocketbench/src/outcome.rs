//! What a sweep produced, as its reports show it: every record, each
//! device's summary and Pareto frontier, and the measurements that failed.
//! A pure function of records, below the sweep that makes them, the store
//! that keeps them and the gate and reports that read them.

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::pareto::{frontier4, hypervolume, Objective};
use crate::record::Record;
use crate::runner::Failure;

/// A measurement that produced no result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedMeasurement {
    /// Configuration id.
    pub config_id: String,
    /// Shape name.
    pub config_name: String,
    /// Device id.
    pub device: String,
    /// Attempts made.
    pub attempts: u32,
    /// Why.
    pub failure: Failure,
}

/// Per-device outcome of a sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSummary {
    /// Device id.
    pub device: String,
    /// Display name.
    pub name: String,
    /// Engine label.
    pub engine: String,
    /// The calibration behind the predictions.
    pub calibration: String,
    /// Decode budget, tok/s.
    pub budget_decode_tok_s: f64,
    /// Memory budget, MB.
    pub budget_memory_mb: f64,
    /// Energy budget, J per run (null without a battery).
    pub budget_energy_j: Option<f64>,
    /// Configurations predicted.
    pub configs: usize,
    /// Configurations meeting every budget.
    pub feasible: usize,
    /// Configurations on the frontier.
    pub frontier: usize,
    /// Hypervolume of the frontier in the normalised budget box.
    pub hypervolume: f64,
    /// Highest capability among feasible configurations (ties: faster decode, then less memory).
    pub best_feasible: Option<String>,
    /// Most parameters among feasible configurations.
    pub largest_feasible: Option<String>,
    /// Its measurements against their predictions, where any were made
    /// ([`crate::agreement`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<crate::agreement::Agreement>,
    /// Its calibration points, each predicted by a fit of the others
    /// ([`crate::calibrate::loo`]), as one line; absent without points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leave_one_out: Option<String>,
    /// Its published points counted against the goal, and its other engine
    /// classes, as one line ([`crate::calibrate::published`]); absent
    /// without published points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    /// What its predictions' intervals rest on, as one line
    /// ([`crate::interval::Basis`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<String>,
}

/// Everything a sweep produced: the data reports are rendered from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Per-device summaries, in plan order.
    pub devices: Vec<DeviceSummary>,
    /// One record per configuration x device, device-major in plan order;
    /// for a sweep of more than [`FULL_RESULTS`] records, the records a
    /// report shows ([`keeps`]), the rest counted in `omitted`.
    pub results: Vec<Record>,
    /// Measurements that produced no result.
    #[serde(default)]
    pub failures: Vec<FailedMeasurement>,
    /// Records of the sweep left out of `results` (every one of them is in
    /// the store); absent when none is.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Records an outcome holds in full. Beyond, it keeps per device the
/// records a report shows (the frontier, the best and largest feasible,
/// every measurement, and an evenly spread sample of about
/// [`SAMPLE_PER_DEVICE`]), so that a sweep of millions of records is held,
/// exported and rendered in bounded memory; the store keeps every record.
pub const FULL_RESULTS: usize = 200_000;

/// Records of the spread sample an outcome beyond [`FULL_RESULTS`] keeps per device.
pub const SAMPLE_PER_DEVICE: usize = 4_000;

/// How many records an outcome holds: every one up to `full`, beyond it
/// the ones a report shows with a sample of about `sample` a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Records held in full.
    pub full: usize,
    /// The spread sample per device beyond.
    pub sample: usize,
}

/// The limits every command uses ([`FULL_RESULTS`], [`SAMPLE_PER_DEVICE`]).
pub const LIMITS: Limits = Limits { full: FULL_RESULTS, sample: SAMPLE_PER_DEVICE };

/// The figures of one record that its device's frontier and summary are
/// computed from, without the record (a few dozen bytes, where a record
/// with its texts takes a few kilobytes).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    /// The configuration id as a number (ids are 12 hex digits).
    pub id: u64,
    /// Every applicable budget passes.
    pub feasible: bool,
    /// Capability.
    pub capability: f64,
    /// Decode tok/s.
    pub decode_tok_s: f64,
    /// Peak memory increase, MB.
    pub peak_mem_mb: f64,
    /// Energy per run, J.
    pub energy_j: f64,
    /// All parameters.
    pub params_total: u64,
}

impl Point {
    /// The point of a record.
    pub fn of(r: &Record) -> Point {
        Point {
            id: id_number(&r.config_id),
            feasible: r.feasible,
            capability: r.capability,
            decode_tok_s: r.decode_tok_s,
            peak_mem_mb: r.peak_mem_increase_mb,
            energy_j: r.energy_j_per_run,
            params_total: r.params_total,
        }
    }

    /// Its configuration id as text.
    pub fn config_id(&self) -> String {
        format!("{:012x}", self.id)
    }
}

/// A configuration id as a number (its hex digits; 0 for a malformed one).
pub fn id_number(config_id: &str) -> u64 {
    u64::from_str_radix(config_id, 16).unwrap_or(0)
}

/// Which of a device's points an outcome beyond [`FULL_RESULTS`] keeps:
/// the frontier, the best and largest feasible, and a sample spread evenly
/// over the configuration ids (a function of the points alone, so a store
/// re-read keeps the very records the sweep kept).
pub fn keeps(points: &[Point], on_frontier: &[bool], summary: &DeviceSummary, sample: usize) -> Vec<bool> {
    let stride = (points.len() / sample.max(1)).max(1) as u64;
    let named = |p: &Point, id: &Option<String>| id.as_deref().is_some_and(|id| id_number(id) == p.id);
    points
        .iter()
        .zip(on_frontier)
        .map(|(p, f)| {
            *f || named(p, &summary.best_feasible)
                || named(p, &summary.largest_feasible)
                || (p.id >> 4).is_multiple_of(stride)
        })
        .collect()
}

impl Outcome {
    /// The outcome of stored rows, as the reports show it: per
    /// configuration and device the newest measurement, else the
    /// prediction; each device's frontier and summary recomputed from those
    /// records under its `header` ([`DeviceSummary::header`]); every
    /// failure. Records of a device not in `headers` are left out.
    pub fn from_rows(
        headers: Vec<DeviceSummary>,
        objectives: &[Objective],
        predicted: Vec<Record>,
        measured: Vec<Record>,
        failures: Vec<FailedMeasurement>,
    ) -> Outcome {
        let index: std::collections::HashMap<String, usize> =
            headers.iter().enumerate().map(|(i, d)| (d.device.clone(), i)).collect();
        let mut per_device: Vec<Vec<Record>> = vec![Vec::new(); headers.len()];
        let mut at: Vec<std::collections::HashMap<String, usize>> = vec![Default::default(); headers.len()];
        // Predictions first, then measurements oldest to newest: a later
        // measurement of the same pair replaces an earlier one.
        for r in predicted.into_iter().chain(measured) {
            let Some(&d) = index.get(r.device.as_str()) else { continue };
            match at[d].get(&r.config_id) {
                Some(&i) => per_device[d][i] = r,
                None => {
                    at[d].insert(r.config_id.clone(), per_device[d].len());
                    per_device[d].push(r);
                }
            }
        }
        let (devices, per_device) = frontiers(per_device, &headers, objectives);
        Outcome { devices, results: per_device.into_iter().flatten().collect(), failures, omitted: 0 }
    }
}

/// [`mark_frontier`] for every device's records at once, the devices spread
/// over the machine's cores (a frontier of thousands of points in four
/// objectives is the costly part of a large sweep's summary).
pub fn frontiers(
    per_device: Vec<Vec<Record>>,
    headers: &[DeviceSummary],
    objectives: &[Objective],
) -> (Vec<DeviceSummary>, Vec<Vec<Record>>) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(per_device.len()).max(1);
    let mut jobs: Vec<(usize, Vec<Record>)> = per_device.into_iter().enumerate().collect();
    let mut done: Vec<(usize, DeviceSummary, Vec<Record>)> = Vec::with_capacity(jobs.len());
    // Largest first, dealt round-robin, so the threads finish together.
    jobs.sort_by_key(|(_, r)| std::cmp::Reverse(r.len()));
    let mut shares: Vec<Vec<(usize, Vec<Record>)>> = (0..threads).map(|_| Vec::new()).collect();
    for (k, job) in jobs.into_iter().enumerate() {
        shares[k % threads].push(job);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| {
                scope.spawn(move || {
                    share
                        .into_iter()
                        .map(|(i, mut recs)| {
                            let s = mark_frontier(&mut recs, &headers[i], objectives);
                            (i, s, recs)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            done.extend(h.join().unwrap_or_default());
        }
    });
    done.sort_by_key(|(i, _, _)| *i);
    done.into_iter().map(|(_, s, r)| (s, r)).unzip()
}

/// Normalised "more is better" coordinates of a point under `header`'s
/// budgets (see [`crate::pareto`]), in `objectives` order, padded with
/// zeros to four.
fn coords(p: &Point, header: &DeviceSummary, objectives: &[Objective], worst_energy: f64) -> [f64; 4] {
    let mut c = [0.0; 4];
    for (c, o) in c.iter_mut().zip(objectives) {
        *c = match o {
            Objective::Capability => p.capability / 100.0,
            Objective::Decode => p.decode_tok_s / header.budget_decode_tok_s - 1.0,
            Objective::Memory => 1.0 - p.peak_mem_mb / header.budget_memory_mb,
            // Without a battery budget the worst feasible energy is the reference.
            Objective::Energy => 1.0 - p.energy_j / header.budget_energy_j.unwrap_or(worst_energy),
        };
    }
    c
}

impl Outcome {
    /// Hold every device's measurements against their predictions
    /// ([`crate::agreement`]): its `agreement`, from its records.
    pub fn hold_measurements(&mut self) {
        let records = &self.results;
        for d in &mut self.devices {
            let limits = crate::agreement::Limits {
                decode_tok_s: d.budget_decode_tok_s,
                memory_mb: d.budget_memory_mb,
                energy_j: d.budget_energy_j,
            };
            d.agreement = crate::agreement::of(&d.device, limits, records);
        }
    }
}

/// A device's published points and other engine classes, as one line.
fn published_line(device: &Device) -> Option<String> {
    let c = crate::calibrate::published::coverage(device);
    (c.points > 0).then(|| {
        let own = device.class_label();
        std::iter::once(c.describe())
            .chain(crate::calibrate::classes::classes(device).iter().map(|f| f.describe(&own)))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

impl DeviceSummary {
    /// The device's identity and budgets, with no records counted yet: what
    /// [`mark_frontier`] needs of a device, and what the store keeps of it.
    pub fn header(device: &Device) -> DeviceSummary {
        DeviceSummary {
            device: device.id().to_string(),
            name: device.profile().device.name.clone(),
            engine: device.profile().engine.name.clone(),
            calibration: device.calibration_label(),
            budget_decode_tok_s: device.budgets().decode_tok_s,
            budget_memory_mb: device.budgets().memory_bytes / 1e6,
            budget_energy_j: device.budgets().energy_j,
            leave_one_out: (device.points().iter().any(|p| !p.holdout))
                .then(|| crate::calibrate::loo::leave_one_out(device).ok().map(|l| l.describe()))
                .flatten(),
            published: published_line(device),
            intervals: Some(crate::interval::basis(device).describe()),
            ..DeviceSummary::default()
        }
    }
}

/// Mark the frontier among `recs` (one device's records) and summarise them
/// under `header` (see [`DeviceSummary::header`]). A pure function of the
/// records, so a report re-rendered from a store, or a merge of shards,
/// recomputes it exactly.
pub fn mark_frontier(recs: &mut [Record], header: &DeviceSummary, objectives: &[Objective]) -> DeviceSummary {
    let points: Vec<Point> = recs.iter().map(Point::of).collect();
    let (summary, on) = summarize(&points, header, objectives);
    for (r, on) in recs.iter_mut().zip(on) {
        r.on_frontier = on;
    }
    summary
}

/// A device's summary under `header`, and which of its points lie on its
/// Pareto frontier of feasible configurations (in `points` order).
pub fn summarize(points: &[Point], header: &DeviceSummary, objectives: &[Objective]) -> (DeviceSummary, Vec<bool>) {
    let feasible: Vec<usize> = (0..points.len()).filter(|i| points[*i].feasible).collect();
    let worst_energy = feasible.iter().map(|i| points[*i].energy_j).fold(0.0, f64::max) * 1.0001;
    let pts: Vec<[f64; 4]> = feasible.iter().map(|i| coords(&points[*i], header, objectives, worst_energy)).collect();
    let on = frontier4(&pts);
    let mut flags = vec![false; points.len()];
    for (k, i) in feasible.iter().enumerate() {
        flags[*i] = on[k];
    }
    let n = objectives.len().min(4);
    let front: Vec<Vec<f64>> = pts.iter().zip(&on).filter(|(_, o)| **o).map(|(p, _)| p[..n].to_vec()).collect();
    let best = feasible.iter().copied().max_by(|a, b| {
        let (x, y) = (&points[*a], &points[*b]);
        x.capability
            .total_cmp(&y.capability)
            .then(x.decode_tok_s.total_cmp(&y.decode_tok_s))
            .then(y.peak_mem_mb.total_cmp(&x.peak_mem_mb))
            .then(y.id.cmp(&x.id))
    });
    let largest = feasible.iter().copied().max_by(|a, b| {
        let (x, y) = (&points[*a], &points[*b]);
        x.params_total.cmp(&y.params_total).then(x.capability.total_cmp(&y.capability)).then(y.id.cmp(&x.id))
    });
    let summary = DeviceSummary {
        configs: points.len(),
        feasible: feasible.len(),
        frontier: front.len(),
        hypervolume: hypervolume(&front),
        best_feasible: best.map(|i| points[i].config_id()),
        largest_feasible: largest.map(|i| points[i].config_id()),
        ..header.clone()
    };
    (summary, flags)
}
