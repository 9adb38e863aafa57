//! Predicting a plan: every configuration on every device, judged against
//! the budgets, each device's Pareto frontier marked among its feasible
//! configurations.
//!
//! Into a store, the configurations are predicted in chunks and written as
//! they are predicted, in configuration-id order (so the store's unique
//! index grows at its end instead of at random places), while only each
//! record's [`Point`] is kept: a sweep of a million configurations on four
//! devices never holds its four million records at once. The frontiers are
//! computed from the points and written to the store afterwards; the
//! outcome holds every record of a sweep up to
//! [`crate::outcome::FULL_RESULTS`], and beyond
//! it the records a report shows ([`crate::outcome::keeps`]), predicted
//! again from their shapes (the same records as those stored).

use super::Plan;
use crate::capability::{capability, Capability, Scores};
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::outcome::{keeps, summarize, DeviceSummary, Limits, Outcome, Point, LIMITS};
use crate::record::{predicted, Record};
use crate::store::{Store, StoreError};

/// Configurations predicted (on every device) and written per chunk.
const CHUNK: usize = 4_096;

/// Predict `plan` on `devices` (already resolved from `plan.devices`), in
/// memory: every record.
pub fn run(plan: &Plan, devices: &[&Device], scores: Option<&Scores>, reporter: &mut dyn Reporter) -> Outcome {
    let predictor = Predictor::new(plan, devices, scores, reporter);
    let all: Vec<usize> = (0..plan.shapes.len()).collect();
    let mut per_device: Vec<Vec<Record>> = vec![Vec::with_capacity(all.len()); devices.len()];
    for chunk in all.chunks(CHUNK) {
        for (d, recs) in predictor.chunk(chunk).into_iter().enumerate() {
            per_device[d].extend(recs);
        }
    }
    predictor.finish(per_device, reporter)
}

/// Predict `plan` on `devices` into `store` (whose predictions were
/// cleared), writing every record and marking each frontier there.
pub fn run_into(
    store: &mut Store,
    plan: &Plan,
    devices: &[&Device],
    scores: Option<&Scores>,
    reporter: &mut dyn Reporter,
) -> Result<Outcome, StoreError> {
    run_into_limited(store, plan, devices, scores, reporter, LIMITS)
}

/// [`run_into`] under `limits`.
pub(crate) fn run_into_limited(
    store: &mut Store,
    plan: &Plan,
    devices: &[&Device],
    scores: Option<&Scores>,
    reporter: &mut dyn Reporter,
    limits: Limits,
) -> Result<Outcome, StoreError> {
    let predictor = Predictor::new(plan, devices, scores, reporter);
    let full = plan.shapes.len() * devices.len() <= limits.full;
    // Configuration-id order, for the store's index.
    let mut order: Vec<usize> = (0..plan.shapes.len()).collect();
    order.sort_by_cached_key(|i| crate::outcome::id_number(&plan.shapes[*i].0.id()));
    // Each device's points at their plan positions.
    let mut points: Vec<Vec<Point>> = vec![vec![Point::default(); order.len()]; devices.len()];
    let mut kept: Vec<Vec<Record>> = vec![Vec::new(); devices.len()];
    let calibration =
        |id: &str| devices.iter().find(|d| d.id() == id).map(|d| super::calibration_of(d)).unwrap_or_default();
    store.begin_bulk()?;
    // One thread predicts the next chunk while this one writes the last.
    let written = std::thread::scope(|scope| -> Result<(), StoreError> {
        let (send, chunks) = std::sync::mpsc::sync_channel::<(&[usize], Vec<Vec<Record>>)>(1);
        let predictor = &predictor;
        let order = &order;
        scope.spawn(move || {
            for chunk in order.chunks(CHUNK) {
                if send.send((chunk, predictor.chunk(chunk))).is_err() {
                    return;
                }
            }
        });
        for (chunk, recs) in chunks {
            // Configuration-major: each configuration's devices side by side.
            let interleaved = (0..chunk.len()).flat_map(|k| recs.iter().map(move |d| &d[k]));
            store.insert_predicted_iter(interleaved, &calibration)?;
            for (d, recs) in recs.into_iter().enumerate() {
                for (i, r) in chunk.iter().zip(&recs) {
                    points[d][*i] = Point::of(r);
                }
                if full {
                    kept[d].extend(recs);
                }
            }
        }
        Ok(())
    });
    written?;
    store.end_bulk()?;
    if full {
        let position: std::collections::HashMap<String, usize> =
            plan.shapes.iter().enumerate().map(|(i, (s, _))| (s.id(), i)).collect();
        for recs in &mut kept {
            recs.sort_by_key(|r| position.get(&r.config_id).copied().unwrap_or(usize::MAX));
        }
        let outcome = predictor.finish(kept, reporter);
        let frontier: Vec<&Record> = outcome.results.iter().filter(|r| r.on_frontier).collect();
        store.mark_frontier(frontier.into_iter())?;
        return Ok(outcome);
    }
    predictor.digest(store, &points, limits.sample, reporter)
}

/// What predicting a plan on its devices needs, computed once.
struct Predictor<'a> {
    plan: &'a Plan,
    devices: &'a [&'a Device],
    scores: Option<&'a Scores>,
    headers: Vec<DeviceSummary>,
}

impl<'a> Predictor<'a> {
    fn new(plan: &'a Plan, devices: &'a [&'a Device], scores: Option<&'a Scores>, reporter: &mut dyn Reporter) -> Self {
        for d in devices {
            if let Some(w) = d.calibration_warning() {
                reporter.report(&Event::warning(w));
            }
        }
        Predictor { plan, devices, scores, headers: devices.iter().map(|d| DeviceSummary::header(d)).collect() }
    }

    /// The capability of the configuration at `i` (computed where needed:
    /// a million of them held at once would take hundreds of megabytes).
    fn capability(&self, i: usize) -> Capability {
        let (s, a) = &self.plan.shapes[i];
        capability(s, a, &self.plan.proxy, self.scores)
    }

    /// The records of the configurations at `positions` on every device,
    /// one device per thread (predictions are independent).
    fn chunk(&self, positions: &[usize]) -> Vec<Vec<Record>> {
        let plan = self.plan;
        let caps: Vec<Capability> = positions.iter().map(|i| self.capability(*i)).collect();
        let caps = &caps;
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .devices
                .iter()
                .map(|device| {
                    scope.spawn(move || {
                        positions
                            .iter()
                            .zip(caps)
                            .map(|(i, cap)| {
                                let (s, a) = &plan.shapes[*i];
                                predicted(s, a, device, &plan.workload, cap)
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        })
    }

    /// Every record, each device's frontier marked: the outcome.
    fn finish(&self, per_device: Vec<Vec<Record>>, reporter: &mut dyn Reporter) -> Outcome {
        let (summaries, per_device) = crate::outcome::frontiers(per_device, &self.headers, &self.plan.objectives);
        report_predicted(&summaries, reporter);
        Outcome {
            devices: summaries,
            results: per_device.into_iter().flatten().collect(),
            failures: Vec::new(),
            omitted: 0,
        }
    }

    /// The outcome of a sweep beyond its limit: each device's summary and
    /// frontier from its points (the frontier marked in the store), the
    /// records a report shows (a spread sample of about `sample`) predicted
    /// again.
    fn digest(
        &self,
        store: &mut Store,
        points: &[Vec<Point>],
        sample: usize,
        reporter: &mut dyn Reporter,
    ) -> Result<Outcome, StoreError> {
        // The frontiers of the devices side by side (the costly part).
        let objectives = &self.plan.objectives;
        let summaries: Vec<(DeviceSummary, Vec<bool>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .headers
                .iter()
                .zip(points)
                .map(|(header, pts)| scope.spawn(move || summarize(pts, header, objectives)))
                .collect();
            handles.into_iter().map(|h| h.join().expect("a frontier thread panicked")).collect()
        });
        let (mut devices, mut results, mut omitted) = (Vec::new(), Vec::new(), 0);
        for ((device, pts), (summary, on)) in self.devices.iter().zip(points).zip(summaries) {
            let keep = keeps(pts, &on, &summary, sample);
            let mut frontier = Vec::new();
            for (i, (on, keep)) in on.iter().zip(&keep).enumerate() {
                if !keep {
                    omitted += 1;
                    continue;
                }
                let (s, a) = &self.plan.shapes[i];
                let mut r = predicted(s, a, device, &self.plan.workload, &self.capability(i));
                r.on_frontier = *on;
                if *on {
                    frontier.push(r.clone());
                }
                results.push(r);
            }
            store.mark_frontier(frontier.iter())?;
            devices.push(summary);
        }
        report_predicted(&devices, reporter);
        Ok(Outcome { devices, results, failures: Vec::new(), omitted })
    }
}

fn report_predicted(summaries: &[DeviceSummary], reporter: &mut dyn Reporter) {
    for summary in summaries {
        reporter.report(&Event::Predicted {
            device: summary.device.clone(),
            configs: summary.configs,
            feasible: summary.feasible,
            frontier: summary.frontier,
            stored: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Collect;
    use crate::record::Provenance;
    use crate::store::{DeviceRow, Identity};

    /// Four dozen configurations on two devices.
    fn plan() -> Plan {
        let toml = "[sweep]\nname = \"t\"\ndevices = [\"iphone-18-pro\", \"oneplus-13\"]\n[workload]\nprompt = 64\ngen = 16\n\
                    [space]\nlayers = { from = 4, to = 15, step = 1 }\nhidden = [256, 384]\nhead-dim = 64\nkv-heads = [1, 2]\n\
                    ffn = 768\nvocab = 4096\n";
        let spec = crate::config::parse(std::path::Path::new("t.toml"), toml).unwrap();
        Plan::from_toml(std::path::Path::new("t.toml"), spec, &Default::default()).unwrap()
    }

    #[test]
    fn beyond_the_limit_the_outcome_keeps_what_a_report_shows_and_the_store_every_record() {
        let plan = plan();
        let devices = crate::device::Devices::built_in().unwrap();
        let devs = devices.select(&plan.devices).unwrap();
        let full = run(&plan, &devs, None, &mut Collect::default());
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join(crate::store::FILE_NAME)).unwrap();
        let identity = Identity::new("t", "t.toml", b"", "{}".into(), None);
        let rows: Vec<DeviceRow> = devs
            .iter()
            .map(|d| DeviceRow { header: DeviceSummary::header(d), profile_digest: super::super::profile_digest(d) })
            .collect();
        let shapes: Vec<_> = plan.shapes.iter().map(|(s, a)| (*s, a.params_total)).collect();
        store.create_sweep(&super::super::sweep_row(&plan, identity), &rows, &shapes).unwrap();
        let limits = Limits { full: 10, sample: 3 };
        let kept = run_into_limited(&mut store, &plan, &devs, None, &mut Collect::default(), limits).unwrap();

        // The summaries are those of every record.
        assert_eq!(kept.devices, full.devices);
        assert!(kept.omitted > 0 && kept.results.len() + kept.omitted == full.results.len(), "{}", kept.omitted);
        // Every frontier record, the best and the largest are kept, as predicted.
        for r in full.results.iter().filter(|r| r.on_frontier) {
            assert!(kept.results.contains(r), "frontier {} kept", r.config_id);
        }
        for d in &full.devices {
            for id in [&d.best_feasible, &d.largest_feasible].into_iter().flatten() {
                assert!(kept.results.iter().any(|r| r.device == d.device && &r.config_id == id));
            }
        }
        // The store holds every record, frontier marks included.
        let stored = store.records(Provenance::Predicted).unwrap();
        assert_eq!(stored.len(), full.results.len());
        assert_eq!(stored, full.results, "the store holds every record as the full prediction made it");
        // Read back under the same limits, the store gives the same outcome.
        let back = super::super::session::outcome_limited(&store, false, limits).unwrap();
        assert_eq!(back.devices, kept.devices);
        assert_eq!(back.results, kept.results);
        assert_eq!(back.omitted, kept.omitted);
    }

    #[test]
    fn within_the_limit_the_store_and_the_outcome_hold_every_record() {
        let plan = plan();
        let devices = crate::device::Devices::built_in().unwrap();
        let devs = devices.select(&plan.devices).unwrap();
        let full = run(&plan, &devs, None, &mut Collect::default());
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join(crate::store::FILE_NAME)).unwrap();
        let identity = Identity::new("t", "t.toml", b"", "{}".into(), None);
        let rows: Vec<DeviceRow> = devs
            .iter()
            .map(|d| DeviceRow { header: DeviceSummary::header(d), profile_digest: super::super::profile_digest(d) })
            .collect();
        let shapes: Vec<_> = plan.shapes.iter().map(|(s, a)| (*s, a.params_total)).collect();
        store.create_sweep(&super::super::sweep_row(&plan, identity), &rows, &shapes).unwrap();
        let o = run_into(&mut store, &plan, &devs, None, &mut Collect::default()).unwrap();
        assert_eq!(o, full);
        assert_eq!(store.records(Provenance::Predicted).unwrap(), full.results);
    }
}
