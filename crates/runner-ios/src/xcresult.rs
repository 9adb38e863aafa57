//! `xcrun xcresulttool get test-results metrics --path X.xcresult` (Xcode
//! 16.3 and later): the performance metrics of an XCTest run as JSON, so a
//! device farm's run of the app's XCTest target can be stored like any
//! other measurement.
//!
//! The output is a list of tests, each with its runs (one per device and
//! test-plan configuration), each with its metrics: a display name, a unit
//! and the measurements of every iteration. The schema is what
//! `xcresulttool help get test-results metrics` prints, as transcribed by
//! a7ex/xcresultparser (`XCTestWithMetrics`, `XCTestRunWithMetrics`,
//! `XCMetric`, `XCDevice`, `XCConfiguration`); fields beyond these are
//! ignored, so a newer Xcode's additions do not break the reader.

use serde::Deserialize;

use crate::export::{self, ExportError};

/// The app's own metric (`ProbeMetric` in
/// `app/PocketbenchProbeTests/ProbeMeasureTests.swift`): decode speed,
/// tokens/s, the median of the probe's repetitions in one iteration.
pub const DECODE: &str = "dev.pocketbench.decode_tok_s";
/// Prefill speed, tokens/s.
pub const PREFILL: &str = "dev.pocketbench.prefill_tok_s";
/// Time to the first token, ms.
pub const TTFT: &str = "dev.pocketbench.ttft_ms";
/// The peak memory increase the probe read (`phys_footprint` by
/// `task_info`, less its value before the load), kB.
pub const FOOTPRINT: &str = "dev.pocketbench.peak_increase_kb";
/// `XCTClockMetric`'s display name.
pub const CLOCK: &str = "Clock Monotonic Time";
/// `XCTMemoryMetric`'s peak physical memory, as XCTest names it ("Memory
/// Peak Physical, kB" in ExecuTorch's benchmark app; a local run adds
/// " (local)").
pub const MEMORY_PEAK: &str = "Memory Peak Physical";

/// One test and its runs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestWithMetrics {
    /// `ProbeMeasureTests/testMeasureSpec()`.
    pub test_identifier: String,
    /// `test://com.apple.xcode/...`.
    #[serde(rename = "testIdentifierURL", default)]
    pub test_identifier_url: Option<String>,
    /// One per device and configuration.
    pub test_runs: Vec<TestRun>,
}

/// One run of a test: a device, a configuration, the metrics.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestRun {
    /// The test plan's configuration.
    pub test_plan_configuration: Configuration,
    /// Where it ran.
    pub device: Device,
    /// What it measured.
    pub metrics: Vec<Metric>,
}

/// A test plan configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// `1`.
    pub configuration_id: String,
    /// `Test Scheme Action`.
    pub configuration_name: String,
}

/// The device a run ran on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    /// Its UDID.
    pub device_id: String,
    /// Its name.
    pub device_name: String,
    /// `arm64e`.
    #[serde(default)]
    pub architecture: Option<String>,
    /// `iPhone 17 Pro`.
    #[serde(default)]
    pub model_name: Option<String>,
    /// `26.1`.
    #[serde(default)]
    pub os_version: Option<String>,
    /// `iOS`.
    #[serde(default)]
    pub platform: Option<String>,
}

/// One metric and its measurements.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    /// `Clock Monotonic Time`, `Decode speed`.
    pub display_name: String,
    /// `s`, `kB`, `tokens/s`.
    pub unit_of_measurement: String,
    /// One per iteration.
    pub measurements: Vec<f64>,
    /// The metric's identifier, where XCTest records one.
    #[serde(default)]
    pub identifier: Option<String>,
}

/// Read `xcresulttool get test-results metrics` output; `file` names it in
/// errors.
pub fn parse(file: &str, text: &str) -> Result<Vec<TestWithMetrics>, ExportError> {
    let value: serde_json::Value = export::json(file, text)?;
    if !value.is_array() {
        let what = match &value {
            serde_json::Value::Object(o) if o.contains_key("testNodes") => {
                " (it is `get test-results tests` output: run `get test-results metrics`)".to_string()
            }
            serde_json::Value::Object(o) if o.contains_key("info") && o.contains_key("result") => {
                " (it is devicectl's --json-output)".to_string()
            }
            _ => String::new(),
        };
        return Err(ExportError::new(
            file,
            "",
            format!("not `xcresulttool get test-results metrics` output: its top level is not a list of tests{what}"),
        ));
    }
    export::json(file, text)
}

/// What one run of the app's XCTest measured, per iteration, in the units
/// pocketbench stores.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeRun {
    /// The test.
    pub test: String,
    /// The device's name and model.
    pub device: Device,
    /// Decode speed per iteration, tokens/s.
    pub decode_tok_s: Vec<f64>,
    /// Prefill speed per iteration, tokens/s.
    pub prefill_tok_s: Vec<f64>,
    /// Time to first token per iteration, seconds.
    pub ttft_s: Vec<f64>,
    /// The probe's peak memory increase (`phys_footprint`) per iteration,
    /// bytes.
    pub peak_increase_bytes: Vec<f64>,
    /// XCTest's clock time per iteration, seconds (absent: not measured).
    pub clock_s: Vec<f64>,
    /// XCTest's peak physical memory per iteration, bytes.
    pub memory_peak_bytes: Vec<f64>,
}

fn metric<'a>(run: &'a TestRun, id: &str) -> Option<&'a Metric> {
    run.metrics.iter().find(|m| m.identifier.as_deref() == Some(id))
}

fn named<'a>(run: &'a TestRun, name: &str) -> Option<&'a Metric> {
    run.metrics.iter().find(|m| m.display_name.starts_with(name))
}

/// A measurement in `unit` as bytes (XCTest's units are decimal: a kB is
/// 1000 bytes, as Foundation's `UnitInformationStorage.kilobytes`).
fn bytes(file: &str, key: &str, m: &Metric) -> Result<Vec<f64>, ExportError> {
    let scale = match m.unit_of_measurement.as_str() {
        "B" | "bytes" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        other => return Err(ExportError::new(file, key, format!("a memory in `{other}`, not B, kB, MB or GB"))),
    };
    Ok(m.measurements.iter().map(|v| v * scale).collect())
}

fn seconds(file: &str, key: &str, m: &Metric) -> Result<Vec<f64>, ExportError> {
    let scale = match m.unit_of_measurement.as_str() {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" | "us" => 1e-6,
        "ns" => 1e-9,
        other => return Err(ExportError::new(file, key, format!("a time in `{other}`, not s, ms, µs or ns"))),
    };
    Ok(m.measurements.iter().map(|v| v * scale).collect())
}

fn positive(file: &str, key: &str, values: &[f64]) -> Result<(), ExportError> {
    match values.iter().find(|v| !v.is_finite() || **v <= 0.0) {
        Some(v) => Err(ExportError::new(file, key, format!("a measurement of {v}, which no run can have"))),
        None => Ok(()),
    }
}

impl ProbeRun {
    /// The app's measurements in every run of every test that has them;
    /// an error where a test has the app's decode metric but a value or
    /// unit is wrong, or where no test has it at all.
    pub fn all(file: &str, tests: &[TestWithMetrics]) -> Result<Vec<ProbeRun>, ExportError> {
        let mut out = Vec::new();
        for (t, test) in tests.iter().enumerate() {
            for (r, run) in test.test_runs.iter().enumerate() {
                let Some(decode) = metric(run, DECODE) else { continue };
                let key = |id: &str| format!("[{t}].testRuns[{r}].metrics[{id}]");
                if decode.unit_of_measurement != "tokens/s" {
                    return Err(ExportError::new(
                        file,
                        key(DECODE),
                        format!("in `{}`, not tokens/s", decode.unit_of_measurement),
                    ));
                }
                positive(file, &key(DECODE), &decode.measurements)?;
                let same = |id: &str| -> Result<Vec<f64>, ExportError> {
                    let Some(m) = metric(run, id) else { return Ok(Vec::new()) };
                    let v = match id {
                        PREFILL => m.measurements.clone(),
                        TTFT => seconds(file, &key(id), m)?,
                        _ => bytes(file, &key(id), m)?,
                    };
                    positive(file, &key(id), &v)?;
                    Ok(v)
                };
                let clock = named(run, CLOCK).map(|m| seconds(file, &key(CLOCK), m)).transpose()?.unwrap_or_default();
                let memory =
                    named(run, MEMORY_PEAK).map(|m| bytes(file, &key(MEMORY_PEAK), m)).transpose()?.unwrap_or_default();
                out.push(ProbeRun {
                    test: test.test_identifier.clone(),
                    device: run.device.clone(),
                    decode_tok_s: decode.measurements.clone(),
                    prefill_tok_s: same(PREFILL)?,
                    ttft_s: same(TTFT)?,
                    peak_increase_bytes: same(FOOTPRINT)?,
                    clock_s: clock,
                    memory_peak_bytes: memory,
                });
            }
        }
        if out.is_empty() {
            return Err(ExportError::new(
                file,
                "",
                format!(
                    "no test run has the app's `{DECODE}` metric: is this the metrics of the pocketbench app's XCTest \
                     (ProbeMeasureTests)?"
                ),
            ));
        }
        Ok(out)
    }
}

/// The name the app's XCTest gives the spec it measured.
pub const SPEC_ATTACHMENT: &str = "pocketbench-spec";
/// The name it gives each iteration's whole result JSON.
pub const RESULT_ATTACHMENT: &str = "pocketbench-result";

/// One test's entry in the `manifest.json` that `xcrun xcresulttool export
/// attachments --path X.xcresult --output-path DIR` writes beside the
/// files: the test and its attachments (fields as public Codable mirrors
/// of the file have them, XCTestHTMLReport's `TestResultsSchema.swift`
/// among them).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestEntry {
    /// `ProbeMeasureTests/testMeasureSpec()`.
    pub test_identifier: String,
    /// Its attachments, in the order the test added them.
    #[serde(default)]
    pub attachments: Vec<ManifestAttachment>,
}

/// An exported attachment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestAttachment {
    /// The file's name in the output folder.
    pub exported_file_name: String,
    /// The attachment's name (`XCTAttachment.name`), as xcresulttool
    /// suggests it (it may add a suffix).
    #[serde(default)]
    pub suggested_human_readable_name: Option<String>,
    /// The device's name, where the manifest records it.
    #[serde(default)]
    pub device_name: Option<String>,
    /// Seconds since 1970, where the manifest records it.
    #[serde(default)]
    pub timestamp: Option<f64>,
}

impl ManifestAttachment {
    /// Whether the test named it `name` (xcresulttool's suggested name is
    /// the attachment's name, perhaps with a suffix and an extension).
    pub fn is(&self, name: &str) -> bool {
        self.suggested_human_readable_name.as_deref().is_some_and(|n| n.starts_with(name))
    }
}

/// The app's spec and results in an export of attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedRun {
    /// The test.
    pub test: String,
    /// The spec's file.
    pub spec: std::path::PathBuf,
    /// Each iteration's result file, in order.
    pub results: Vec<std::path::PathBuf>,
}

/// Read `DIR/manifest.json` and find the app's spec and results: one
/// [`ExportedRun`] per test that has them. Every file the manifest names
/// must be in the folder.
pub fn exported_runs(dir: &std::path::Path) -> Result<Vec<ExportedRun>, ExportError> {
    let manifest = dir.join("manifest.json");
    let file = manifest.display().to_string();
    let text = std::fs::read_to_string(&manifest).map_err(|e| {
        ExportError::new(
            &file,
            "",
            format!("cannot be read ({e}): is this the --output-path of `xcresulttool export attachments`?"),
        )
    })?;
    let entries: Vec<ManifestEntry> = export::json(&file, &text)?;
    let mut out = Vec::new();
    for (t, entry) in entries.iter().enumerate() {
        let path = |a: &ManifestAttachment, i: usize| {
            let p = dir.join(&a.exported_file_name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(ExportError::new(
                    &file,
                    format!("[{t}].attachments[{i}].exportedFileName"),
                    format!("{} is not in the folder", a.exported_file_name),
                ))
            }
        };
        let mut spec = None;
        let mut results = Vec::new();
        for (i, a) in entry.attachments.iter().enumerate() {
            if a.is(SPEC_ATTACHMENT) {
                spec = Some(path(a, i)?);
            } else if a.is(RESULT_ATTACHMENT) {
                results.push(path(a, i)?);
            }
        }
        match (spec, results.is_empty()) {
            (Some(spec), false) => out.push(ExportedRun { test: entry.test_identifier.clone(), spec, results }),
            (None, false) => {
                return Err(ExportError::new(
                    &file,
                    format!("[{t}].attachments"),
                    format!("results but no `{SPEC_ATTACHMENT}`: the spec they measured is not in the bundle"),
                ))
            }
            _ => {}
        }
    }
    if out.is_empty() {
        return Err(ExportError::new(
            &file,
            "",
            format!(
                "no test has `{RESULT_ATTACHMENT}` attachments: export the attachments of the pocketbench app's XCTest \
                 (ProbeMeasureTests), without --only-failures"
            ),
        ));
    }
    Ok(out)
}
