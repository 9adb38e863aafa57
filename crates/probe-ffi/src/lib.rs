//! The probe as a static library with a C ABI, so an app can link it and
//! measure in its own process (iOS, where a pushed executable cannot run).
//! The header is `include/pocketbench_probe.h`; a test holds it against
//! the functions below.
//!
//! - `pocketbench_probe_run(spec_json)` takes exactly the spec JSON that
//!   `pocketbench probe --spec FILE` reads and returns exactly the result
//!   JSON it writes. Where the spec's model file is absent it is written
//!   first (the same seeded GGUF the harness builds, from the shape and
//!   its id's seed), so an app needs the spec alone. Any failure comes back
//!   as JSON `{"schema": N, "error": {"field": F, "message": M}}`: a null
//!   pointer, text that is not UTF-8 or not JSON, an unknown preset or
//!   engine, a model too large for the memory the app may still take, a
//!   failed measurement, a cancel, even a panic. Never a null, never an
//!   abort.
//! - `pocketbench_probe_free` frees what `run` returned.
//! - `pocketbench_probe_version` names the build.
//! - `pocketbench_probe_cancel` asks a running probe to stop between two
//!   tokens; `run` then returns an error JSON whose field is `cancel`.
//! - `pocketbench_probe_set_thermal_state_callback` gives the probe a
//!   function returning `ProcessInfo.thermalState`'s raw value (0 nominal
//!   .. 3 critical), read at the start and end of every repetition.

// A C ABI takes and returns raw pointers: every unsafe block says why it is
// sound.
#![allow(unsafe_code)]

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use pocketbench_probe::thermal::{self, AppState};
use pocketbench_probe::timing;
use pocketbench_probe::{ProbeError, ProbeSpec, SCHEMA};
use serde_json::json;

/// Headroom kept above the model's own bytes when checking that it fits:
/// the KV cache, activations, the engine's scratch and the allocator's
/// slack.
const FIT_HEADROOM: f64 = 1.25;

/// A run's failure: the spec field it names (`spec` for the whole text,
/// `model` for a model that cannot be built or held, `run` for a failed
/// measurement, `cancel` when asked to stop) and what went wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The field.
    pub field: String,
    /// The message.
    pub message: String,
}

impl Failure {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure { field: field.into(), message: message.into() }
    }

    /// The error JSON the C ABI returns.
    pub fn to_json(&self) -> String {
        json!({ "schema": SCHEMA, "error": { "field": self.field, "message": self.message } }).to_string()
    }
}

/// Read a spec, naming the field a wrong value sits in.
pub fn parse_spec(text: &str) -> Result<ProbeSpec, Failure> {
    let mut de = serde_json::Deserializer::from_str(text);
    let spec: ProbeSpec = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() { "spec".to_string() } else { format!("spec.{path}") };
        Failure::new(field, e.into_inner().to_string())
    })?;
    if spec.schema != SCHEMA {
        return Err(Failure::new(
            "spec.schema",
            format!(
                "a spec of schema {}, but this probe reads schema {SCHEMA}: build the app with the harness's version",
                spec.schema
            ),
        ));
    }
    spec.validate().map_err(|e| Failure::new("spec", e.to_string()))?;
    Ok(spec)
}

/// Whether the model fits in what the app may still allocate (iOS's
/// `os_proc_available_memory`, or the machine's available memory elsewhere).
fn check_fits(spec: &ProbeSpec, available: Option<u64>) -> Result<(), Failure> {
    let Some(available) = available else { return Ok(()) };
    let need = spec.shape.accounting().weight_bytes as f64 * FIT_HEADROOM;
    if need > available as f64 {
        return Err(Failure::new(
            "spec.shape",
            format!(
                "{} needs about {:.0} MB (its weights and {:.0}% for the KV cache and scratch), but only {:.0} MB may \
                 still be allocated here",
                spec.shape,
                need / 1e6,
                (FIT_HEADROOM - 1.0) * 100.0,
                available as f64 / 1e6
            ),
        ));
    }
    Ok(())
}

/// Memory the process may still take: the app's limit where the platform
/// keeps one, else the machine's available memory as the probe's host facts
/// read it (sysinfo).
fn available_memory() -> Option<u64> {
    pocketbench_probe::meter::footprint::available()
        .or_else(|| Some(pocketbench_probe::HostFacts::collect().available_bytes).filter(|b| *b > 0))
}

/// Run the probe on `text` (a spec's JSON): the result JSON, or the
/// failure. What [`pocketbench_probe_run`] does inside its guard.
pub fn run_json(text: &str) -> Result<String, Failure> {
    let spec = parse_spec(text)?;
    check_fits(&spec, available_memory())?;
    pocketbench_probe::ensure_model(&spec)
        .map_err(|e| Failure::new("spec.model", format!("{}: cannot be written: {e}", spec.model.display())))?;
    let (meter, why) = match pocketbench_probe::meter::detect() {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    timing::clear_cancel();
    let result = pocketbench_probe::run(&spec, meter, why).map_err(|e| match e {
        ProbeError::Cancelled => Failure::new("cancel", e.to_string()),
        ProbeError::Spec(m) => Failure::new("spec", m),
        other => Failure::new("run", other.to_string()),
    })?;
    serde_json::to_string_pretty(&result).map_err(|e| Failure::new("run", e.to_string()))
}

/// The text behind `spec_json`, or why there is none.
///
/// # Safety
/// `spec_json` is null or points to a NUL-terminated string that stays
/// valid for the call.
unsafe fn spec_text(spec_json: *const c_char) -> Result<String, Failure> {
    if spec_json.is_null() {
        return Err(Failure::new("spec", "a null pointer was passed instead of the spec's JSON"));
    }
    // SAFETY: non-null, and NUL-terminated and valid per the caller's contract.
    let bytes = unsafe { CStr::from_ptr(spec_json) }.to_bytes();
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|e| Failure::new("spec", format!("the spec is not UTF-8 (byte {}): {e}", e.valid_up_to())))
}

/// A Rust string as a C string the caller frees with
/// [`pocketbench_probe_free`]. Interior NULs (never in JSON that serde
/// wrote, but a message might quote one) become spaces.
fn into_c(s: String) -> *mut c_char {
    let s = CString::new(s.replace('\0', " ")).unwrap_or_default();
    s.into_raw()
}

/// Run the probe on a spec: see the crate's documentation. Never returns
/// null; free the result with [`pocketbench_probe_free`].
///
/// # Safety
/// `spec_json` is null or a NUL-terminated string valid for the call.
#[no_mangle]
pub unsafe extern "C" fn pocketbench_probe_run(spec_json: *const c_char) -> *mut c_char {
    let out = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: passed on from this function's own contract.
        let text = unsafe { spec_text(spec_json) }?;
        run_json(&text)
    }));
    into_c(match out {
        Ok(Ok(json)) => json,
        Ok(Err(f)) => f.to_json(),
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Failure::new("run", format!("the probe panicked (caught at the C boundary): {why}")).to_json()
        }
    })
}

/// Free a string [`pocketbench_probe_run`] returned; null is ignored.
///
/// # Safety
/// `s` is null or a pointer `pocketbench_probe_run` returned, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pocketbench_probe_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: made by `CString::into_raw` in `into_c` and, per the
        // contract, not freed before.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// `pocketbench-probe VERSION (spec and result schema N, TARGET)`: static,
/// never freed.
#[no_mangle]
pub extern "C" fn pocketbench_probe_version() -> *const c_char {
    static VERSION: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            CString::new(format!(
                "pocketbench-probe {} (spec and result schema {SCHEMA}, {})",
                env!("CARGO_PKG_VERSION"),
                pocketbench_probe::BuildInfo::current().target
            ))
            .unwrap_or_default()
        })
        .as_ptr()
}

/// Ask a running [`pocketbench_probe_run`] to stop before its next token.
/// Safe from any thread; a run that starts afterwards is not affected.
#[no_mangle]
pub extern "C" fn pocketbench_probe_cancel() {
    timing::request_cancel();
}

/// The app's thermal-state function, as an address (0: none).
static THERMAL: AtomicUsize = AtomicUsize::new(0);

fn app_thermal_state() -> Option<AppState> {
    let f = THERMAL.load(Ordering::Acquire);
    if f == 0 {
        return None;
    }
    // SAFETY: only `pocketbench_probe_set_thermal_state_callback` stores a
    // non-zero value, and it stores the address of an
    // `extern "C" fn() -> i32` the app passed.
    let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute::<usize, extern "C" fn() -> i32>(f) };
    AppState::from_raw(f())
}

/// Give the probe a function returning `ProcessInfo.thermalState`'s raw
/// value (0 nominal, 1 fair, 2 serious, 3 critical), read at the start and
/// end of every repetition; null removes it.
#[no_mangle]
pub extern "C" fn pocketbench_probe_set_thermal_state_callback(callback: Option<extern "C" fn() -> i32>) {
    THERMAL.store(callback.map_or(0, |f| f as usize), Ordering::Release);
    thermal::set_app_state_source(callback.map(|_| app_thermal_state as fn() -> Option<AppState>));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_field_is_named() {
        let f = parse_spec(r#"{"schema": 1}"#).unwrap_err();
        assert_eq!(f.field, "spec", "{f:?}");
        let v: serde_json::Value = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(v["error"]["field"], "spec");
        assert!(v["schema"].is_u64());
    }

    #[test]
    fn a_model_larger_than_what_may_be_allocated_is_refused() {
        let shape = pocketbench_types::arch::preset("qwen3-1.7b").unwrap().shape;
        let spec = ProbeSpec {
            schema: SCHEMA,
            shape,
            model: "m.gguf".into(),
            workload: pocketbench_types::workload::Workload::new(4, 4, None).unwrap(),
            reps: 1,
            threads: 1,
            seed: 1,
            engine: pocketbench_probe::EngineKind::Native,
            timeout_s: None,
            cooling: None,
            contention: None,
            auto: None,
            pin: false,
            bandwidth_pass: true,
            timed_reloads: true,
            soak: None,
        };
        let f = check_fits(&spec, Some(500 << 20)).unwrap_err();
        assert_eq!(f.field, "spec.shape");
        assert!(f.message.contains("may still be allocated"), "{}", f.message);
        assert!(check_fits(&spec, Some(8 << 30)).is_ok());
        assert!(check_fits(&spec, None).is_ok());
    }
}
