//! A sweep run into a results store: checked against what the store already
//! holds, predicted where the store has no predictions yet, measured where
//! it has no measurement yet, and read back as the outcome every export is
//! rendered from. Rerunning the same sweep into the same store resumes it.

use super::measure::{measure, profile_digest, MeasureSettings};
use super::{predict::run_into, Plan};
use crate::capability::Scores;
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::outcome::{keeps, summarize, Limits, Outcome, Point, LIMITS};
use crate::record::{Provenance, Record};
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
        store.clear_predicted()?;
        let o = run_into(store, plan, devices, scores, reporter)?;
        store.set_predicted_complete()?;
        o
    };
    if let Some(m) = measuring {
        measure(plan, &predicted, devices, m.runners, m.settings, store, reporter)?;
    }
    // The predictions are in hand and equal to what the store holds (its
    // records read back field for field); only the measurements and
    // failures are read, and the frontier written again only where they
    // moved it.
    let measured = store.records(Provenance::Measured)?;
    let failures = store.failures()?;
    if measured.is_empty() && failures.is_empty() {
        return Ok(predicted);
    }
    let o = if predicted.omitted == 0 {
        Outcome::from_rows(predicted.devices, &plan.objectives, predicted.results, measured, failures)
    } else {
        digest(store, true, LIMITS.sample)?
    };
    store.write_frontier(&o)?;
    Ok(o)
}

/// The outcome of what `store` holds: its rows, with each device's frontier
/// and summary computed from them ([`Outcome::from_rows`]); with
/// `measured = false` the predictions alone (what measurement candidates
/// are chosen from).
pub fn outcome(store: &Store, measured: bool) -> Result<Outcome, StoreError> {
    outcome_limited(store, measured, LIMITS)
}

/// [`outcome`] under `limits`.
pub(crate) fn outcome_limited(store: &Store, measured: bool, limits: Limits) -> Result<Outcome, StoreError> {
    if store.count(Provenance::Predicted)? > limits.full {
        return digest(store, measured, limits.sample);
    }
    let rows = store.rows(measured)?;
    Ok(Outcome::from_rows(rows.devices, &rows.objectives, rows.predicted, rows.measured, rows.failures))
}

/// The newest result's point of each configuration on `device`: a
/// measurement replaces the prediction (points come oldest first).
fn newest_points(stored: Vec<(bool, Point)>) -> Vec<Point> {
    let mut at: std::collections::HashMap<u64, usize> = Default::default();
    let mut points: Vec<Point> = Vec::new();
    for (_, p) in stored {
        match at.get(&p.id) {
            Some(&i) => points[i] = p,
            None => {
                at.insert(p.id, points.len());
                points.push(p);
            }
        }
    }
    points
}

/// [`outcome`] of a store beyond [`crate::outcome::FULL_RESULTS`] records: each device's
/// summary and frontier from its points (a measurement replacing the
/// prediction of its configuration), and only the records a report shows
/// read ([`crate::outcome::keeps`]).
fn digest(store: &Store, measured: bool, sample: usize) -> Result<Outcome, StoreError> {
    let sweep = store.sweep()?.ok_or_else(|| StoreError::Corrupt {
        path: store.path().to_path_buf(),
        message: "no sweep recorded in it".into(),
    })?;
    let rows = store.devices()?;
    let mut all = store.points(measured)?;
    let points: Vec<Vec<Point>> =
        rows.iter().map(|row| newest_points(all.remove(&row.header.device).unwrap_or_default())).collect();
    // The frontiers of the devices side by side (the costly part).
    let summaries: Vec<(crate::outcome::DeviceSummary, Vec<bool>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = rows
            .iter()
            .zip(&points)
            .map(|(row, pts)| scope.spawn(|| summarize(pts, &row.header, &sweep.objectives)))
            .collect();
        handles.into_iter().map(|h| h.join().expect("a frontier thread panicked")).collect()
    });
    let (mut devices, mut results, mut omitted) = (Vec::new(), Vec::new(), 0);
    for ((row, points), (summary, on)) in rows.iter().zip(&points).zip(summaries) {
        let keep = keeps(points, &on, &summary, sample);
        let frontier: std::collections::HashSet<u64> =
            points.iter().zip(&on).filter(|(_, on)| **on).map(|(p, _)| p.id).collect();
        let ids: Vec<String> = points.iter().zip(&keep).filter(|(_, k)| **k).map(|(p, _)| p.config_id()).collect();
        omitted += points.len() - ids.len();
        // Oldest first within a configuration: the last is the newest.
        let mut newest: Vec<Record> = Vec::with_capacity(ids.len());
        for mut r in store.records_of(&row.header.device, &ids, measured)? {
            r.on_frontier = frontier.contains(&crate::outcome::id_number(&r.config_id));
            match newest.last_mut() {
                Some(last) if last.config_id == r.config_id => *last = r,
                _ => newest.push(r),
            }
        }
        results.extend(newest);
        devices.push(summary);
    }
    let failures = if measured { store.failures()? } else { Vec::new() };
    Ok(Outcome { devices, results, failures, omitted })
}

/// Merge the stores of a sharded sweep into a new one at `out`
/// ([`crate::store::merge`]) and mark its frontier.
pub fn merge(out: &std::path::Path, inputs: &[&std::path::Path]) -> Result<(Store, Outcome), StoreError> {
    let mut store = crate::store::merge(out, inputs)?;
    let o = outcome(&store, true)?;
    store.write_frontier(&o)?;
    Ok((store, o))
}
