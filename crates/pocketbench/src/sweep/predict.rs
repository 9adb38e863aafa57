//! Running a plan: predict every configuration on every device, judge the
//! budgets, and mark each device's Pareto frontier among feasible configurations.

use super::Plan;
use crate::capability::{capability, Scores};
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::outcome::{frontiers, DeviceSummary, Outcome};
use crate::record::{predicted, Record};

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
