//! What a sweep produced, as its reports show it: every record, each
//! device's summary and Pareto frontier, and the measurements that failed.
//! A pure function of records, below the sweep that makes them, the store
//! that keeps them and the gate and reports that read them.

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::pareto::{frontier, hypervolume, Objective};
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
}

/// Everything a sweep produced: the data reports are rendered from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Per-device summaries, in plan order.
    pub devices: Vec<DeviceSummary>,
    /// One record per configuration x device, device-major.
    pub results: Vec<Record>,
    /// Measurements that produced no result.
    #[serde(default)]
    pub failures: Vec<FailedMeasurement>,
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
        Outcome { devices, results: per_device.into_iter().flatten().collect(), failures }
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

/// Normalised "more is better" coordinates of a record (see [`crate::pareto`]).
fn coords(r: &Record, objectives: &[Objective], worst_energy: f64) -> Vec<f64> {
    objectives
        .iter()
        .map(|o| match o {
            Objective::Capability => r.capability / 100.0,
            Objective::Decode => r.decode_tok_s / r.budgets.decode.limit.unwrap_or(1.0) - 1.0,
            Objective::Memory => 1.0 - r.peak_mem_increase_mb / r.budgets.memory.limit.unwrap_or(f64::INFINITY),
            // Without a battery budget the worst feasible energy is the reference.
            Objective::Energy => 1.0 - r.energy_j_per_run / r.budgets.energy.limit.unwrap_or(worst_energy),
        })
        .collect()
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
            ..DeviceSummary::default()
        }
    }
}

/// Mark the frontier among `recs` (one device's records) and summarise them
/// under `header` (see [`DeviceSummary::header`]). A pure function of the
/// records, so a report re-rendered from a store, or a merge of shards,
/// recomputes it exactly.
pub fn mark_frontier(recs: &mut [Record], header: &DeviceSummary, objectives: &[Objective]) -> DeviceSummary {
    let feasible: Vec<usize> = (0..recs.len()).filter(|i| recs[*i].feasible).collect();
    let worst_energy = feasible.iter().map(|i| recs[*i].energy_j_per_run).fold(0.0, f64::max) * 1.0001;
    let pts: Vec<Vec<f64>> = feasible.iter().map(|i| coords(&recs[*i], objectives, worst_energy)).collect();
    let on = frontier(&pts);
    for r in recs.iter_mut() {
        r.on_frontier = false;
    }
    for (k, i) in feasible.iter().enumerate() {
        recs[*i].on_frontier = on[k];
    }
    let front: Vec<Vec<f64>> = pts.iter().zip(&on).filter(|(_, o)| **o).map(|(p, _)| p.clone()).collect();
    let best = feasible.iter().copied().max_by(|a, b| {
        let (x, y) = (&recs[*a], &recs[*b]);
        x.capability
            .total_cmp(&y.capability)
            .then(x.decode_tok_s.total_cmp(&y.decode_tok_s))
            .then(y.peak_mem_increase_mb.total_cmp(&x.peak_mem_increase_mb))
            .then(y.config_id.cmp(&x.config_id))
    });
    let largest = feasible.iter().copied().max_by(|a, b| {
        let (x, y) = (&recs[*a], &recs[*b]);
        x.params_total
            .cmp(&y.params_total)
            .then(x.capability.total_cmp(&y.capability))
            .then(y.config_id.cmp(&x.config_id))
    });
    DeviceSummary {
        configs: recs.len(),
        feasible: feasible.len(),
        frontier: front.len(),
        hypervolume: hypervolume(&front),
        best_feasible: best.map(|i| recs[i].config_id.clone()),
        largest_feasible: largest.map(|i| recs[i].config_id.clone()),
        ..header.clone()
    }
}
