//! A sweep run into a results store: checked against what the store already
//! holds, predicted where the store has no predictions yet, measured where
//! it has no measurement yet, and read back as the outcome every export is
//! rendered from. Rerunning the same sweep into the same store resumes it.

use super::measure::{calibration_of, measure, profile_digest, MeasureSettings};
use super::{predict::run, Plan};
use crate::capability::Scores;
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::outcome::Outcome;
use crate::record::Provenance;
use crate::runner::Runner;
use crate::store::{DeviceRow, Identity, Store, StoreError, SweepRow};

/// What to measure after predicting, and through which runners.
pub struct Measuring<'a> {
    /// Settings.
    pub settings: &'a MeasureSettings,
    /// One runner per measurable device.
    pub runners: &'a [Box<dyn Runner>],
}

/// The store rows describing `plan` on `devices`.
pub fn sweep_row(plan: &Plan, identity: Identity) -> SweepRow {
    SweepRow {
        identity,
        description: plan.description.clone(),
        prompt_tokens: plan.workload.prompt,
        gen_tokens: plan.workload.gen,
        objectives: plan.objectives.clone(),
        skipped: plan.skipped.clone(),
        configs: plan.shapes.len(),
        predicted_complete: false,
    }
}

fn device_rows(devices: &[&Device]) -> Vec<DeviceRow> {
    devices
        .iter()
        .map(|d| DeviceRow { header: crate::outcome::DeviceSummary::header(d), profile_digest: profile_digest(d) })
        .collect()
}

/// Every difference between the stored sweep and this one, in words.
fn differences(stored: &SweepRow, stored_devices: &[DeviceRow], now: &Identity, devices: &[DeviceRow]) -> Vec<String> {
    let old = &stored.identity;
    let mut d = Vec::new();
    if old.name != now.name {
        d.push(format!("the sweep name changed (`{}` -> `{}`)", old.name, now.name));
    }
    if old.file_hash != now.file_hash {
        d.push(format!("the sweep file changed ({} was {}, is {})", now.file, old.file_hash, now.file_hash));
    }
    if old.options != now.options {
        d.push(format!("the options changed ({} -> {})", old.options, now.options));
    }
    if old.harness != now.harness {
        d.push(format!("another harness version ({} -> {})", old.harness, now.harness));
    }
    if old.shard != now.shard {
        d.push(format!("another shard ({:?} -> {:?})", old.shard, now.shard));
    }
    let ids = |v: &[DeviceRow]| v.iter().map(|r| r.header.device.clone()).collect::<Vec<_>>();
    if ids(stored_devices) != ids(devices) {
        d.push(format!("the devices changed ({:?} -> {:?})", ids(stored_devices), ids(devices)));
    } else {
        for (a, b) in stored_devices.iter().zip(devices) {
            if a.profile_digest != b.profile_digest {
                d.push(format!(
                    "device `{}`'s profile changed (digest {} -> {})",
                    a.header.device, a.profile_digest, b.profile_digest
                ));
            }
        }
    }
    d
}

/// Run `plan` into `store`: resume what it holds, predict and measure the
/// rest, and return the outcome as the store now has it.
pub fn execute(
    store: &mut Store,
    plan: &Plan,
    devices: &[&Device],
    scores: Option<&Scores>,
    identity: Identity,
    measuring: Option<Measuring<'_>>,
    reporter: &mut (dyn Reporter + Send),
) -> Result<Outcome, StoreError> {
    let rows = device_rows(devices);
    let predicted_done = match store.sweep()? {
        None => {
            let shapes: Vec<_> = plan.shapes.iter().map(|(s, a)| (*s, a.params_total)).collect();
            store.create_sweep(&sweep_row(plan, identity), &rows, &shapes)?;
            false
        }
        Some(stored) => {
            let diff = differences(&stored, &store.devices()?, &identity, &rows);
            if !diff.is_empty() {
                return Err(StoreError::Mismatch { path: store.path().to_path_buf(), what: diff.join("; ") });
            }
            reporter.report(&Event::Resuming {
                store: store.path().to_path_buf(),
                predicted: store.count(Provenance::Predicted)?,
                measured: store.count(Provenance::Measured)?,
                failed: store.failures()?.len(),
            });
            stored.predicted_complete
        }
    };
    let predicted = if predicted_done {
        let o = outcome(store, false)?;
        for d in &o.devices {
            reporter.report(&Event::Predicted {
                device: d.device.clone(),
                configs: d.configs,
                feasible: d.feasible,
                frontier: d.frontier,
                stored: true,
            });
        }
        o
    } else {
        let o = run(plan, devices, scores, reporter);
        let by_id = |id: &str| devices.iter().find(|d| d.id() == id).map(|d| calibration_of(d)).unwrap_or_default();
        store.clear_predicted()?;
        store.insert_predicted(&o.results, &by_id)?;
        store.set_predicted_complete()?;
        o
    };
    if let Some(m) = measuring {
        measure(plan, &predicted, devices, m.runners, m.settings, store, reporter)?;
    }
    let outcome = outcome(store, true)?;
    store.write_frontier(&outcome)?;
    Ok(outcome)
}

/// The outcome of what `store` holds: its rows, with each device's frontier
/// and summary computed from them ([`Outcome::from_rows`]); with
/// `measured = false` the predictions alone (what measurement candidates
/// are chosen from).
pub fn outcome(store: &Store, measured: bool) -> Result<Outcome, StoreError> {
    let rows = store.rows(measured)?;
    Ok(Outcome::from_rows(rows.devices, &rows.objectives, rows.predicted, rows.measured, rows.failures))
}

/// Merge the stores of a sharded sweep into a new one at `out`
/// ([`crate::store::merge`]) and mark its frontier.
pub fn merge(out: &std::path::Path, inputs: &[&std::path::Path]) -> Result<(Store, Outcome), StoreError> {
    let mut store = crate::store::merge(out, inputs)?;
    let o = outcome(&store, true)?;
    store.write_frontier(&o)?;
    Ok((store, o))
}
