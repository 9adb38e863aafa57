//! A device farm's run of the pocketbench app's XCTest, stored like any
//! other measurement. The test (`crates/runner-ios/app/PocketbenchProbeTests`)
//! keeps the spec it measured and each `measure()` iteration's whole probe
//! result as attachments; `xcrun xcresulttool export attachments` writes
//! them out with a `manifest.json`. Each iteration is one fresh
//! `pocketbench_probe_run` in the app, so the iterations are the
//! repetitions of one measured record. Where the farm also gives
//! `xcresulttool get test-results metrics`, XCTest's own figures must agree
//! with the attachments (the same iterations), and its clock and memory
//! metrics are kept as notes.

use std::path::Path;

use pocketbench_runner_ios::export::ExportError;
use pocketbench_runner_ios::xcresult::{self, ExportedRun, ProbeRun};

use crate::capability::{capability, ProxySettings};
use crate::device::Device;
use crate::probe::{ProbeResult, ProbeSpec};
use crate::record::{measured, predicted, Method, Record};
use crate::store::Store;
use crate::Error;

/// Relative difference beyond which XCTest's decode figure and the
/// attachment's are not the same iteration (both are the same f64, printed
/// and read back).
const SAME: f64 = 1e-6;

/// One imported test run: its record and the job key it is stored under.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The measured record.
    pub record: Record,
    /// Its configuration's prediction on the device, stored beside it where
    /// the sweep has none (a configuration outside the sweep's space).
    pub predicted: Record,
    /// The key beside its configuration and device.
    pub job_key: String,
    /// The test it came from.
    pub test: String,
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// The spec an attachment holds.
fn spec_of(path: &Path) -> Result<(ProbeSpec, String), Error> {
    let text = read(path)?;
    let spec: ProbeSpec = pocketbench_runner_ios::export::json(&path.display().to_string(), &text)?;
    spec.validate().map_err(|e| ExportError::new(&path.display().to_string(), "", e.to_string()))?;
    Ok((spec, text))
}

/// An iteration's result; an error result (the app's probe failed) is
/// refused with its field and message.
fn result_of(path: &Path, spec: &ProbeSpec) -> Result<ProbeResult, Error> {
    let file = path.display().to_string();
    let text = read(path)?;
    let value: serde_json::Value = pocketbench_runner_ios::export::json(&file, &text)?;
    if let Some(e) = value.get("error") {
        return Err(ExportError::new(
            &file,
            "error",
            format!("the app's probe failed in this iteration: {}: {}", e["field"], e["message"]),
        )
        .into());
    }
    let r: ProbeResult = pocketbench_runner_ios::export::json(&file, &text)?;
    if r.config_id != spec.shape.id() {
        return Err(ExportError::new(
            &file,
            "config_id",
            format!("{} is not the spec's configuration {}", r.config_id, spec.shape.id()),
        )
        .into());
    }
    Ok(r)
}

/// The iterations as one probe result: the first's facts, every
/// iteration's repetitions, the highest memory peak. Sampling statistics
/// belong to one process, so none are kept.
fn combine(mut results: Vec<ProbeResult>) -> ProbeResult {
    let mut all = results.remove(0);
    for r in results {
        all.peak_increase_bytes = all.peak_increase_bytes.max(r.peak_increase_bytes);
        all.peak_hwm_bytes = all.peak_hwm_bytes.max(r.peak_hwm_bytes);
        all.reps.extend(r.reps);
    }
    all.sampling = None;
    all
}

/// XCTest's metrics for the same run must be the attachments' iterations.
fn check_metrics(file: &str, run: &ExportedRun, xct: &ProbeRun, probe: &ProbeResult) -> Result<(), Error> {
    let ours: Vec<f64> = probe.reps.iter().map(|r| r.decode_tok_s).collect();
    let theirs = &xct.decode_tok_s;
    let same = ours.len() == theirs.len()
        && ours.iter().zip(theirs).all(|(a, b)| (a - b).abs() <= SAME * a.abs().max(b.abs()));
    if same {
        return Ok(());
    }
    Err(ExportError::new(
        file,
        format!("{}: {}", run.test, xcresult::DECODE),
        format!(
            "XCTest's decode speeds {theirs:?} are not the attachments' {ours:?}: the metrics and the attachments are \
             not of the same run"
        ),
    )
    .into())
}

fn median(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::median(v))
}

/// Read an export of attachments (`dir`) and, optionally, the same
/// bundle's metrics, into records for `device`. Nothing is written.
pub fn read_export(dir: &Path, metrics: Option<&Path>, device: &Device) -> Result<Vec<Imported>, Error> {
    let runs = xcresult::exported_runs(dir)?;
    let xct = match metrics {
        Some(m) => {
            let file = m.display().to_string();
            let tests = xcresult::parse(&file, &read(m)?)?;
            Some((file.clone(), ProbeRun::all(&file, &tests)?))
        }
        None => None,
    };
    let mut out = Vec::new();
    for run in &runs {
        let (spec, spec_text) = spec_of(&run.spec)?;
        let results = run.results.iter().map(|p| result_of(p, &spec)).collect::<Result<Vec<_>, _>>()?;
        let n = results.len();
        let probe = combine(results);
        let acct = spec.shape.accounting();
        let cap = capability(&spec.shape, &acct, &ProxySettings::default(), None);
        let mut notes = Vec::new();
        if let Some((file, xruns)) = &xct {
            let x = xruns.iter().find(|x| x.test == run.test).ok_or_else(|| {
                ExportError::new(file, "", format!("no metrics of the test `{}` the attachments are from", run.test))
            })?;
            check_metrics(file, run, x, &probe)?;
            let dev = &x.device;
            notes.push(format!(
                "XCTest measure() on {} ({}, {} {})",
                dev.device_name,
                dev.model_name.as_deref().unwrap_or("model not given"),
                dev.platform.as_deref().unwrap_or("iOS"),
                dev.os_version.as_deref().unwrap_or("")
            ));
            if let Some(m) = median(&x.memory_peak_bytes) {
                notes.push(format!("XCTMemoryMetric's peak physical memory, median {:.1} MB", m / 1e6));
            }
            if let Some(c) = median(&x.clock_s) {
                notes.push(format!("XCTClockMetric, median {c:.3} s an iteration"));
            }
        }
        let prediction = predicted(&spec.shape, &acct, device, &probe.workload, &cap);
        let mut record = measured(&spec.shape, &acct, device, probe, &cap)
            .map_err(|e| Error::Measurement(crate::runner::Failure::BadOutput { reason: e.to_string() }))?;
        record.produced_by = format!("{} via the pocketbench app's XCTest ({})", record.produced_by, run.test);
        record.methods.insert(
            crate::provenance::MethodKey::Source,
            Method::Note(format!(
                "{n} XCTest measure() iterations, each a fresh pocketbench_probe_run in the app, read from `xcresulttool \
                 export attachments`{}",
                if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) }
            )),
        );
        let what = format!("{spec_text}\n{}\n{}", run.test, record.engine);
        let job_key = format!("xctest-r{n}-t{}-{:016x}", spec.threads, crate::fnv1a(what.as_bytes()));
        out.push(Imported { record, predicted: prediction, job_key, test: run.test.clone() });
    }
    Ok(out)
}

/// Store imported records in a sweep's store, which must have `device`
/// among its devices (a sweep on it, `--predict-only` is enough).
pub fn store(store: &mut Store, device: &Device, imported: &[Imported], command_line: &str) -> Result<(), Error> {
    let known = store.devices()?;
    if !known.iter().any(|d| d.header.device == device.id()) {
        let have: Vec<String> = known.iter().map(|d| d.header.device.clone()).collect();
        return Err(Error::usage(format!(
            "the store {} has no device `{}` (it has {}): sweep on it first, `--predict-only` is enough",
            store.path().display(),
            device.id(),
            have.join(", ")
        )));
    }
    // The runs table's host is the machine that ran the command (the
    // importing one); the device is in each record's notes.
    store.start_run(command_line, Some(crate::git_commit()), &crate::pipeline::host_fingerprint())?;
    let calibration = crate::sweep::calibration_of(device);
    for i in imported {
        let p = &i.predicted;
        if store.records_of(device.id(), std::slice::from_ref(&p.config_id), false)?.is_empty() {
            store.add_configuration(&p.shape, p.params_total)?;
            store.insert_predicted(std::slice::from_ref(p), &|_| calibration.clone())?;
        }
        store.insert_measured(&i.record, &i.job_key, calibration.clone())?;
    }
    store.finish_run("ok")?;
    Ok(())
}
