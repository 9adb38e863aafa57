//! Running a plan: predict every configuration on every device, judge the
//! budgets, and mark each device's Pareto frontier among feasible configurations.

use serde::{Deserialize, Serialize};

use super::Plan;
use crate::capability::{capability, Scores};
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::pareto::{frontier, hypervolume, Objective};
use crate::record::{predicted, Record};

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
    pub failures: Vec<super::measure::FailedMeasurement>,
}

/// Predict `plan` on `devices` (already resolved from `plan.devices`).
pub fn run(plan: &Plan, devices: &[&Device], scores: Option<&Scores>, reporter: &mut dyn Reporter) -> Outcome {
    for d in devices {
        if let Some(w) = d.calibration_warning() {
            reporter.report(&Event::warning(w));
        }
    }
    let caps: Vec<_> = plan.shapes.iter().map(|(s, a)| capability(s, a, &plan.proxy, scores)).collect();
    // One device per thread: predictions are independent.
    let per_device: Vec<Vec<Record>> = std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .iter()
            .map(|device| {
                let caps = &caps;
                scope.spawn(move || {
                    plan.shapes.iter().zip(caps).map(|((s, a), c)| predicted(s, a, device, &plan.workload, c)).collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let headers: Vec<DeviceSummary> = devices.iter().map(|d| DeviceSummary::header(d)).collect();
    let (summaries, per_device) = frontiers(per_device, &headers, &plan.objectives);
    for summary in &summaries {
        reporter.report(&Event::Predicted {
            device: summary.device.clone(),
            configs: summary.configs,
            feasible: summary.feasible,
            frontier: summary.frontier,
            stored: false,
        });
    }
    let results = per_device.into_iter().flatten().collect();
    Outcome { devices: summaries, results, failures: Vec::new() }
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
            name: device.profile.device.name.clone(),
            engine: device.profile.engine.name.clone(),
            calibration: device.calibration_label(),
            budget_decode_tok_s: device.budgets.decode_tok_s,
            budget_memory_mb: device.budgets.memory_bytes / 1e6,
            budget_energy_j: device.budgets.energy_j,
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
