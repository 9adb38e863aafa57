//! `pocketbench merge`: shard stores combined into one, as if the sweep had
//! run unsharded. Only shards of one sweep merge: the same sweep file, the
//! same options, the same harness version and the same device profiles.

use std::path::Path;

use super::{DeviceRow, Store, StoreError, SweepRow};
use crate::record::Provenance;

/// The one sweep and devices every store holds, and whether each finished
/// predicting; an error naming the first difference, or a shard given twice.
fn check(out: &Path, stores: &[Store]) -> Result<(SweepRow, Vec<DeviceRow>, bool), StoreError> {
    let mismatch = |what: String| StoreError::Mismatch { path: out.to_path_buf(), what };
    let name = |s: &Store| s.path().display().to_string();
    let mut first: Option<(SweepRow, Vec<DeviceRow>)> = None;
    let mut shards = Vec::new();
    let mut complete = true;
    for s in stores {
        let sweep = s.sweep()?.ok_or_else(|| StoreError::Corrupt {
            path: s.path().to_path_buf(),
            message: "no sweep recorded in it".into(),
        })?;
        let devices = s.devices()?;
        complete &= sweep.predicted_complete;
        if let Some((f, fd)) = &first {
            let (a, b) = (&f.identity, &sweep.identity);
            let first_path = name(&stores[0]);
            for (what, x, y) in [
                ("sweep file", &a.file_hash, &b.file_hash),
                ("options", &a.options, &b.options),
                ("harness version", &a.harness, &b.harness),
            ] {
                if x != y {
                    return Err(mismatch(format!("{first_path} and {} differ in their {what} ({x} vs {y})", name(s))));
                }
            }
            if fd != &devices {
                return Err(mismatch(format!("{first_path} and {} differ in their device profiles", name(s))));
            }
        } else {
            first = Some((sweep.clone(), devices));
        }
        if let Some(sh) = &sweep.identity.shard {
            if shards.contains(sh) {
                return Err(mismatch(format!("shard {sh} is given twice ({})", s.path().display())));
            }
            shards.push(sh.clone());
        }
    }
    let (sweep, devices) = first.ok_or_else(|| StoreError::Missing { path: out.to_path_buf() })?;
    Ok((sweep, devices, complete))
}

/// Merge the stores at `inputs` into a new store at `out` (which must not
/// exist yet). Every input is checked before anything is written.
pub fn merge(out: &Path, inputs: &[&Path]) -> Result<Store, StoreError> {
    if out.exists() {
        return Err(StoreError::Output {
            path: out.to_path_buf(),
            message: "already exists: merge writes a new store (choose another --out or remove it)".into(),
        });
    }
    let stores: Vec<Store> = inputs.iter().map(|p| Store::open_read_only(p)).collect::<Result<_, _>>()?;
    let (mut sweep, devices, complete) = check(out, &stores)?;
    let mut configs = Vec::new();
    for s in &stores {
        configs.extend(s.configurations()?);
    }
    configs.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.id().cmp(&b.0.id())));
    configs.dedup_by(|a, b| a.0 == b.0);
    sweep.identity.shard = None;
    sweep.configs = configs.len();
    let mut merged = Store::open(out)?;
    merged.create_sweep(&sweep, &devices, &configs)?;
    for s in &stores {
        merged.copy_runs(&s.runs()?)?;
    }
    merged.start_run(&format!("pocketbench merge ({} stores)", stores.len()), Some(crate::git_commit()), "{}")?;
    for s in &stores {
        let cal = s.calibration_params()?;
        let by_device = |d: &str| cal.get(d).cloned().unwrap_or_default();
        merged.insert_predicted(&s.records(Provenance::Predicted)?, &by_device)?;
        for (rec, key) in s.measured_with_keys()? {
            merged.insert_measured(&rec, &key, by_device(&rec.device))?;
        }
        for (f, key) in s.failures_with_keys()? {
            merged.insert_failure(&f, &key)?;
        }
    }
    if complete {
        merged.set_predicted_complete()?;
    }
    merged.finish_run("finished")?;
    Ok(merged)
}
