//! Meters: energy over an interval (RAPL powercap, a battery's power_supply
//! files, a portable battery API, or typed absence) and peak memory
//! (`/proc/self/status`).
//!
//! Energy meters sample on a background thread at [`SAMPLE_INTERVAL`] (20 Hz,
//! above the 10 Hz that `shared/reference/measurement.md` asks for) from
//! `start` to `stop`, and return joules with the method that produced them.

mod battery;
pub mod clock;
pub mod footprint;
mod memory;
mod power_supply;
mod rapl;
mod sampler;

pub use battery::BatteryMeter;
pub use clock::{Clock, ManualClock, SystemClock};
pub use memory::{parse_status, usage, MemoryStatus, Usage, METER as MEMORY_METER};
pub use power_supply::{PowerSupplyMeter, Rail};
pub use rapl::RaplMeter;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How often energy meters sample.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// A meter failed or cannot work here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeterError {
    /// No source of energy readings on this machine.
    #[error("{0}")]
    Unavailable(String),
    /// A counter file could not be read or parsed.
    #[error("{path}: {message}")]
    Read {
        /// File.
        path: String,
        /// Why.
        message: String,
    },
    /// `stop` without `start`.
    #[error("meter was not started")]
    NotStarted,
}

/// Energy used over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyReading {
    /// Joules.
    pub joules: f64,
    /// Seconds between the first and the last reading: the window the
    /// joules were integrated over.
    pub seconds: f64,
    /// Samples taken.
    pub samples: usize,
    /// How: "RAPL powercap energy_uj (intel-rapl:0)", "power_supply BAT0 power_now", ...
    pub method: String,
}

/// Measures energy between `start` and `stop`.
pub trait EnergyMeter: Send {
    /// What the meter reads.
    fn name(&self) -> String;
    /// Which kind of meter it is.
    fn kind(&self) -> pocketbench_types::meter::Meter;
    /// Begin sampling.
    fn start(&mut self) -> Result<(), MeterError>;
    /// End sampling and return the energy used since `start`.
    fn stop(&mut self) -> Result<EnergyReading, MeterError>;
}

/// The best energy meter on this machine: RAPL when readable, else a
/// discharging battery's power_supply files, else the portable battery API,
/// else why none works.
pub fn detect() -> Result<Box<dyn EnergyMeter>, MeterError> {
    let root = sysfs_root();
    detect_in(&root.join("sys/class/powercap"), &root.join("sys/class/power_supply"))
}

/// Where the meters and thermal readings find `sys/`: `/`, or
/// `POCKETBENCH_SYSFS_ROOT` (an emulated device's root in the Android
/// runner's tests; a chroot'ed or containerised probe).
pub fn sysfs_root() -> std::path::PathBuf {
    std::env::var_os("POCKETBENCH_SYSFS_ROOT").filter(|v| !v.is_empty()).map_or_else(|| "/".into(), Into::into)
}

/// [`detect`] with other sysfs roots (tests use fake trees).
pub fn detect_in(powercap: &Path, power_supply: &Path) -> Result<Box<dyn EnergyMeter>, MeterError> {
    let mut why = Vec::new();
    match RaplMeter::discover(powercap) {
        Ok(m) => return Ok(Box::new(m)),
        Err(e) => why.push(e.to_string()),
    }
    match PowerSupplyMeter::discover(power_supply) {
        Ok(m) => return Ok(Box::new(m)),
        Err(e) => why.push(e.to_string()),
    }
    match BatteryMeter::discover() {
        Ok(m) => return Ok(Box::new(m)),
        Err(e) => why.push(e.to_string()),
    }
    Err(MeterError::Unavailable(why.join("; ")))
}

fn read_trimmed(path: &Path) -> Result<String, MeterError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| MeterError::Read { path: path.display().to_string(), message: e.to_string() })
}

fn read_number(path: &Path) -> Result<f64, MeterError> {
    let s = read_trimmed(path)?;
    s.parse::<f64>()
        .map_err(|_| MeterError::Read { path: path.display().to_string(), message: format!("`{s}` is not a number") })
}
