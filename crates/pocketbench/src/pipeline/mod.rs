//! One `pocketbench sweep` from start to end, as the library runs it: the
//! plan built and checked (this host joining a sweep none of whose devices
//! can be measured here), every job on every measurable device validated,
//! the store opened (or set aside with `fresh`), the sweep executed into it,
//! and every export rendered from it. Nothing is predicted or measured
//! before all of the request holds. It sits on top of the library: it ends
//! in the report, which reads the sweep's types, so it cannot be part of the
//! sweep module.

pub mod exports;
pub mod gate_measure;
pub mod soak;

use std::path::{Path, PathBuf};

use crate::capability::Scores;
use crate::device::Devices;
use crate::event::{Event, Reporter};
use crate::report::{self, SweepReport};
use crate::store::{self, Identity, Store, StoreError};
use crate::sweep::{execute, validate_measure, MeasureSettings, Measuring, Plan, PlanOptions, Shard};
use crate::Error;

/// What a sweep is asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The sweep file.
    pub file: PathBuf,
    /// Devices, workload, cap and objectives overriding the file's.
    pub options: PlanOptions,
    /// Run one share of the plan.
    pub shard: Option<Shard>,
    /// Measure after predicting, with these settings (`None`: predict only).
    pub measure: Option<MeasureSettings>,
    /// Measured scores replacing the capability proxy.
    pub scores: Option<PathBuf>,
    /// The output folder (default `reports/<sweep name>`).
    pub out: Option<PathBuf>,
    /// Set an existing store aside instead of resuming it.
    pub fresh: bool,
    /// The command line, recorded with the run.
    pub command_line: String,
}

/// A finished sweep.
#[derive(Debug)]
pub struct Finished {
    /// Everything its exports were rendered from.
    pub report: SweepReport,
    /// The output folder.
    pub out: PathBuf,
}

/// Run `request` on `devices`, progress to `reporter`.
pub fn run_request(
    request: &Request,
    devices: &Devices,
    reporter: &mut (dyn Reporter + Send),
) -> Result<Finished, Error> {
    let mut plan = Plan::from_file(&request.file, &request.options)?;
    if let Some(s) = request.shard {
        plan.shard(s);
    }
    // `ID@CLASS` in the device list: device ID predicting for another of
    // its engine classes.
    let classed = devices.with_classes(&plan.devices)?;
    let devices = &classed;
    // The host joins a sweep none of whose devices can be measured here, so
    // that its report shows predicted against measured.
    if request.measure.is_some() && request.options.devices.is_none() {
        let any = devices.select(&plan.devices)?.iter().any(|d| crate::runner::for_device(d).is_ok());
        if !any && devices.get("host").is_ok_and(|h| crate::runner::for_device(h).is_ok()) {
            plan.devices.push("host".into());
        }
    }
    let devs = devices.select(&plan.devices)?;
    let scores = request.scores.as_deref().map(Scores::load).transpose()?;
    let runners: Vec<_> = match &request.measure {
        Some(_) => devs.iter().filter_map(|d| crate::runner::for_device(d).ok()).collect(),
        None => Vec::new(),
    };
    if let Some(settings) = &request.measure {
        let measurable: Vec<_> =
            devs.iter().copied().filter(|d| runners.iter().any(|r| r.device() == d.id())).collect();
        validate_measure(&plan, &measurable, settings)?;
    }
    let identity = identity(request, &plan)?;
    let out = request.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(&plan.name));
    if out.is_file() {
        let message = "--out names a file; it must be a folder".into();
        return Err(StoreError::Output { path: out, message }.into());
    }
    let db = out.join(store::FILE_NAME);
    if request.fresh {
        set_aside(&db)?;
    }

    reporter.report(&Event::Planned {
        sweep: plan.name.clone(),
        configs: plan.shapes.len(),
        devices: devs.len(),
        skipped: plan.skipped.clone(),
        shard: request.shard.map(|s| s.to_string()),
    });
    if request.measure.is_some() && runners.is_empty() {
        reporter
            .report(&Event::warning("no device of this sweep can be measured here (none has a runner in this build)"));
    }
    let mut store = Store::open(&db)?;
    store.start_run(&request.command_line, Some(crate::git_commit()), &host_fingerprint())?;
    let m = request.measure.as_ref().map(|settings| Measuring { settings, runners: &runners });
    let result = execute(&mut store, &plan, &devs, scores.as_ref(), identity, m, reporter);
    store.finish_run(if result.is_ok() { "finished" } else { "failed" })?;
    let report = SweepReport::with_outcome(&store, result?)?;
    for path in report::write_all(&out, &report, &report::standard())? {
        reporter.report(&Event::Wrote { path });
    }
    Ok(Finished { report, out })
}

/// What identifies this sweep in its store: a resume must match all of it.
fn identity(request: &Request, plan: &Plan) -> Result<Identity, Error> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| Error::io(p, e));
    let bytes = read(&request.file)?;
    let scores = match &request.scores {
        Some(p) => Some(format!("{:016x}", crate::fnv1a(&read(p)?))),
        None => None,
    };
    let options = serde_json::json!({
        "devices": plan.devices,
        "prompt": plan.workload.prompt,
        "gen": plan.workload.gen,
        "objectives": plan.objectives,
        "configs": plan.expanded,
        "scores": scores,
    });
    Ok(Identity::new(
        &plan.name,
        &request.file.display().to_string(),
        &bytes,
        options.to_string(),
        request.shard.map(|s| s.to_string()),
    ))
}

/// Set a store aside for `fresh`: nothing stored is deleted.
fn set_aside(db: &Path) -> Result<(), Error> {
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            let to = PathBuf::from(format!("{}.prev{suffix}", db.display()));
            std::fs::rename(&from, &to).map_err(|e| Error::io(&from, e))?;
        }
    }
    Ok(())
}

/// What the store's `runs.host` records: this machine's fingerprint and
/// facts, and the build.
pub(crate) fn host_fingerprint() -> String {
    let facts = crate::probe::HostFacts::collect();
    serde_json::json!({
        "fingerprint": facts.fingerprint,
        "machine": facts,
        "kernels": crate::kernels::isa().name(),
        "engine_build": crate::probe::EngineKind::Native.build(),
        "build": crate::probe::BuildInfo::current(),
    })
    .to_string()
}
