//! What a probe is asked to run and what it reports: the JSON passed between
//! the runner and the probe process, and stored with every measurement.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use pocketbench_types::arch::Shape;
use pocketbench_types::workload::Workload;
use serde::de::DeserializeOwned;

use super::{engine, BuildInfo, EngineKind, HostFacts};
use crate::energy::EnergyFigures;
use crate::meter::EnergyReading;
use crate::thermal::{Cooling, RepThermal};
use crate::timing::{AutoReps, Sampling};
use crate::window::{Contention, ProcessCovariates, Window};

/// The version of the spec and result JSON. A probe refuses a spec, and a
/// harness a result, of any other version: the two ends of a phone's adb
/// link are separate builds, and a field read under another meaning would
/// be a wrong number, not an error. Raise it when a field changes meaning
/// or a required one is added; JSON without the field is version 1 (the
/// layout before the field existed).
pub const SCHEMA: u32 = 1;

fn schema_v1() -> u32 {
    1
}

/// Largest repetition count accepted.
pub const MAX_REPS: u32 = 1000;

/// What the probe is asked to run (written as JSON by the runner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// The JSON's version ([`SCHEMA`]).
    #[serde(default = "schema_v1")]
    pub schema: u32,
    /// The configuration.
    pub shape: Shape,
    /// Its GGUF file.
    pub model: PathBuf,
    /// The run.
    pub workload: Workload,
    /// Measured repetitions.
    pub reps: u32,
    /// Threads: the native engine's pool and llama.cpp's thread count (the
    /// runner also sets `RAYON_NUM_THREADS` for candle-transformers).
    pub threads: u32,
    /// Seed of the prompt tokens.
    pub seed: u64,
    /// The engine to measure through.
    #[serde(default)]
    pub engine: EngineKind,
    /// The runner's timeout, seconds: external engines give up a little
    /// before it, so no orphan outlives a killed probe.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Cool the device down before each repetition (a phone's `[thermal]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooling: Option<Cooling>,
    /// When a repetition's window counts as contended, and how many are
    /// retaken (none: windows are read, never judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Contention>,
    /// Repeat until the median is as precise as asked (`reps` is then the
    /// minimum); none: exactly `reps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoReps>,
    /// Pin the engine's threads one to a CPU.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pin: bool,
    /// Read the machine's bandwidth over a fresh 256 MiB buffer after the
    /// repetitions (the result's `read_bandwidth`). A calibration turns it
    /// off: each repetition's drift passes already read the weights'
    /// bandwidth, and on the shared VMs this pass cost up to 1.5 s a
    /// process (faulting in memory the model had just freed).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub bandwidth_pass: bool,
    /// Reload the model once for each summarized repetition after the
    /// first, timed, to give every repetition its own load time. A
    /// calibration turns it off: it fits no load time, and the reloads were
    /// a second of its every job.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub timed_reloads: bool,
    /// Run the workload back to back for a set time and read the speed per
    /// window ([`crate::soak`]) instead of repeating it `reps` times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<crate::soak::SoakSpec>,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rep {
    /// Seconds to load the model file (absent when the engine does not say:
    /// llama-bench).
    #[serde(default)]
    pub load_s: Option<f64>,
    /// Seconds of prefill (the whole prompt in one forward pass).
    pub prefill_s: f64,
    /// Seconds from the start of prefill to the first generated token.
    pub ttft_s: f64,
    /// Seconds for the `gen` decode steps.
    pub decode_s: f64,
    /// Prompt tokens / prefill seconds.
    pub prefill_tok_s: f64,
    /// Generated tokens / decode seconds.
    pub decode_tok_s: f64,
    /// Energy of prefill + decode (gross), when a meter is available.
    pub energy: Option<EnergyReading>,
    /// The device's temperatures around the repetition, where it has
    /// thermal zones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal: Option<RepThermal>,
    /// The output fingerprint: FNV-1a of every generated token id, the
    /// prefill's first included ([`crate::timing::Trace::hash`]); absent
    /// where the engine does not hand tokens back (llama-bench).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_hash: Option<String>,
    /// Every generated token id, the prefill's first included: the first
    /// repetition's only (the others' hashes say whether they agree), the
    /// output another engine's is held against (its common prefix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<u32>,
    /// Microseconds of each decode step: the inter-token latencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub itl_us: Vec<u32>,
    /// What else the machine did during the repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// The bandwidth of the weights' memory right before and right after,
    /// and decode's share of it ([`crate::drift`]); absent where the
    /// engine keeps its weights out of reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<crate::drift::Drift>,
    /// The app's thermal state (`ProcessInfo.thermalState` on Apple
    /// platforms) at the start and end of the repetition, where an
    /// embedding app reports it ([`crate::thermal::set_app_state_source`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_thermal: Option<crate::thermal::AppThermal>,
    /// Contended or drifted, and taken again: kept here, left out of the
    /// statistics.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retaken: bool,
}

/// Everything the probe measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// The JSON's version ([`SCHEMA`]).
    #[serde(default = "schema_v1")]
    pub schema: u32,
    /// Configuration id.
    pub config_id: String,
    /// Engine name.
    pub engine: String,
    /// Engine version.
    pub engine_version: String,
    /// The workload run.
    pub workload: Workload,
    /// Threads used.
    pub threads: u32,
    /// Warm-up runs before measuring.
    pub warmup: u32,
    /// One entry per repetition.
    pub reps: Vec<Rep>,
    /// VmRSS just before the first load, bytes.
    pub baseline_rss_bytes: u64,
    /// VmHWM at the end, bytes.
    pub peak_hwm_bytes: u64,
    /// peak − baseline: the reference study's "peak memory increase".
    pub peak_increase_bytes: u64,
    /// Size of the model file run (stat), bytes.
    pub model_file_bytes: u64,
    /// Why energy was not measured, when it was not.
    pub energy_not_measured: Option<String>,
    /// The idle draw, average power, gross and net energy per run.
    #[serde(flatten)]
    pub energy: EnergyFigures,
    /// Read bandwidth measured in the probe process right after the
    /// repetitions (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bandwidth: Option<ProbeBandwidth>,
    /// The machine, as the probe read it.
    pub host: HostFacts,
    /// What the runner read about the device beside the probe's own facts,
    /// keys prefixed by their source (an Android phone's `getprop` and adb
    /// serial: `android.model`, `android.soc`, `android.serial`...); empty
    /// on the host.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub device_props: BTreeMap<String, String>,
    /// The binary.
    pub build: BuildInfo,
    /// What the process held for the whole run: huge pages, CPUs, pinning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covariates: Option<ProcessCovariates>,
    /// How the repetitions were taken: clean, contended and retaken counts,
    /// and with automatic repetitions the precision reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// How each figure was obtained.
    pub methods: BTreeMap<String, String>,
    /// What read peak memory and energy (absent in results from before
    /// results named them: read from `methods`' words then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meters: Option<pocketbench_types::meter::Meters>,
    /// A soak's windows and throttle verdict, where the spec asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<crate::soak::Soak>,
}

/// A memory read bandwidth measured by the probe itself: the roofline of
/// the same moment, on a shared host whose bandwidth drifts over the day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeBandwidth {
    /// Bytes per second (best pass).
    pub bytes_per_s: f64,
    /// Threads reading (the probe's).
    pub threads: u32,
    /// Buffer size, bytes.
    pub buffer_bytes: u64,
    /// Passes (the best is kept).
    pub passes: u32,
}

impl ProbeBandwidth {
    /// Measure now with `threads` threads.
    pub fn measure(threads: u32) -> ProbeBandwidth {
        ProbeBandwidth {
            bytes_per_s: crate::hostinfo::read_bandwidth(PROBE_BANDWIDTH_BYTES, threads as usize, 3),
            threads,
            buffer_bytes: PROBE_BANDWIDTH_BYTES as u64,
            passes: 3,
        }
    }
}

/// Buffer of the probe's bandwidth pass: 256 MiB, 8x the host's L3.
pub const PROBE_BANDWIDTH_BYTES: usize = 256 << 20;

/// A spec or result could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    Json(serde_json::Error),
    /// JSON of a version this build does not read.
    #[error(
        "a probe {what} of schema {found}, but this build reads schema {SCHEMA} only: \
         push a probe built from the same pocketbench version as the harness"
    )]
    Version {
        /// `spec` or `result`.
        what: &'static str,
        /// The version found (`schema`).
        found: String,
    },
    /// The right version, the wrong content.
    #[error("not a probe {what}: {source}")]
    Content {
        /// `spec` or `result`.
        what: &'static str,
        /// What serde said.
        source: serde_json::Error,
    },
}

/// Read JSON of `what` after checking its `schema`.
fn read_versioned<T: DeserializeOwned>(what: &'static str, text: &str) -> Result<T, SchemaError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(SchemaError::Json)?;
    match value.get("schema") {
        None => {}
        Some(v) if v.as_u64() == Some(SCHEMA as u64) => {}
        Some(v) => return Err(SchemaError::Version { what, found: v.to_string() }),
    }
    if value.get("schema").is_none() && SCHEMA != 1 {
        return Err(SchemaError::Version { what, found: "1 (no `schema` field)".into() });
    }
    serde_json::from_value(value).map_err(|source| SchemaError::Content { what, source })
}

impl ProbeResult {
    /// Read a probe's result, refusing one of another [`SCHEMA`].
    pub fn from_json(text: &str) -> Result<ProbeResult, SchemaError> {
        read_versioned("result", text)
    }
}

/// The probe failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The spec is impossible.
    #[error("invalid probe spec: {0}")]
    Spec(String),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// The embedding app asked the probe to stop
    /// ([`crate::timing::request_cancel`]), and it stopped between tokens.
    #[error("cancelled: the app asked the probe to stop, and it stopped between two tokens")]
    Cancelled,
}

impl ProbeSpec {
    /// Read a spec, refusing one of another [`SCHEMA`].
    pub fn from_json(text: &str) -> Result<ProbeSpec, SchemaError> {
        read_versioned("spec", text)
    }

    /// Check what can be checked before anything is loaded.
    pub fn validate(&self) -> Result<(), ProbeError> {
        if self.schema != SCHEMA {
            return Err(ProbeError::Spec(format!("spec schema {} (this probe reads {SCHEMA})", self.schema)));
        }
        self.shape.validate().map_err(|e| ProbeError::Spec(e.to_string()))?;
        if self.reps == 0 || self.reps > MAX_REPS {
            return Err(ProbeError::Spec(format!("reps must be between 1 and {MAX_REPS}, got {}", self.reps)));
        }
        if let Some(a) = self.auto {
            if !(a.precision > 0.0 && a.precision < 1.0) || a.max_reps < self.reps.max(2) || a.max_reps > MAX_REPS {
                return Err(ProbeError::Spec(format!(
                    "automatic repetitions need a precision between 0 and 1 and a cap of at least max(reps, 2) \
                     and at most {MAX_REPS} repetitions, got precision {} and {}..{}",
                    a.precision, self.reps, a.max_reps
                )));
            }
        }
        if self.workload.prompt == 0 || self.workload.gen == 0 {
            return Err(ProbeError::Spec("prompt and gen must be at least 1".into()));
        }
        if let Some(soak) = &self.soak {
            soak.validate().map_err(ProbeError::Spec)?;
            if !self.engine.in_process() {
                return Err(ProbeError::Spec(format!(
                    "a soak times every decode step in the probe's own process; {} runs as an external tool",
                    self.engine.name()
                )));
            }
        }
        if self.workload.context > self.shape.context {
            return Err(ProbeError::Spec(format!(
                "the workload needs {} positions but the configuration is built for {}",
                self.workload.context, self.shape.context
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_json(schema: Option<serde_json::Value>) -> String {
        let shape: Shape = pocketbench_types::arch::preset("smollm2-135m").unwrap().shape;
        let spec = ProbeSpec {
            schema: SCHEMA,
            shape,
            model: "m.gguf".into(),
            workload: Workload::new(16, 8, None).unwrap(),
            reps: 1,
            threads: 1,
            seed: 7,
            engine: EngineKind::Native,
            timeout_s: None,
            cooling: None,
            contention: None,
            auto: None,
            pin: false,
            bandwidth_pass: true,
            timed_reloads: true,
            soak: None,
        };
        let mut v = serde_json::to_value(&spec).unwrap();
        match schema {
            Some(s) => v["schema"] = s,
            None => {
                v.as_object_mut().unwrap().remove("schema");
            }
        }
        v.to_string()
    }

    #[test]
    fn the_current_schema_and_json_from_before_the_field_are_read() {
        assert_eq!(ProbeSpec::from_json(&spec_json(Some(SCHEMA.into()))).unwrap().schema, SCHEMA);
        assert_eq!(ProbeSpec::from_json(&spec_json(None)).unwrap().schema, 1);
    }

    #[test]
    fn another_schema_is_refused_by_name_before_its_fields_are_read() {
        for (found, says) in [(serde_json::json!(2), "schema 2"), (serde_json::json!("x"), "schema \"x\"")] {
            let e = ProbeSpec::from_json(&spec_json(Some(found))).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("a probe spec of {says}")), "{text}");
            assert!(text.contains("push a probe built from the same pocketbench version"), "{text}");
        }
        let e = ProbeResult::from_json(r#"{"schema": 99, "config_id": 3}"#).unwrap_err();
        assert!(e.to_string().starts_with("a probe result of schema 99"), "{e}");
        let e = ProbeResult::from_json(r#"{"schema": 1, "config_id": 3}"#).unwrap_err();
        assert!(e.to_string().starts_with("not a probe result: "), "{e}");
        assert!(matches!(ProbeResult::from_json("{ not json"), Err(SchemaError::Json(_))));
    }
}
