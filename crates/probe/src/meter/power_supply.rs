//! A battery's Linux `power_supply` class files (laptops and Android):
//! `power_now` in microwatts where present, else `current_now` x
//! `voltage_now`.
//!
//! Drivers disagree on two things, so both are detected from the readings
//! rather than assumed, and the result names what was found:
//! - the **unit**: the kernel ABI says microamps and microvolts, but some
//!   vendor fuel-gauge drivers report milliamps (and a few millivolts). A
//!   current below 10,000 is read as mA (no phone running a model draws
//!   under 10 mA, and none draws 10 A), a voltage below 100,000 as mV (a
//!   Li-ion pack sits at 3-9 V);
//! - the **sign** while discharging: negative is documented only since
//!   2020 and many phones report positive. The sign of the first reading
//!   (taken while `status` is `Discharging`) is the driver's discharge
//!   sign; a later reading of the other sign means current flows into the
//!   battery.
//!
//! The meter requires `status` = Discharging at the start and on every
//! sample: readings while a charger feeds the phone measure the charger,
//! not the model, so a run during which the phone starts charging (or the
//! current reverses) has no energy figure, and says why.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::clock::{Clock, SystemClock};
use super::sampler::{Reading, Sampler};
use super::{read_number, read_trimmed, EnergyMeter, EnergyReading, MeterError};

/// Readings below this are milliamps, not microamps.
const MILLIAMP_BELOW: f64 = 10_000.0;
/// Readings below this are millivolts, not microvolts.
const MILLIVOLT_BELOW: f64 = 100_000.0;
/// A reversed current smaller than this (amps) is noise around zero.
const REVERSED_ABOVE_A: f64 = 0.010;

/// Integrates a discharging battery's power.
pub struct PowerSupplyMeter {
    dir: PathBuf,
    rail: Rail,
    running: Option<Sampler>,
    clock: Arc<dyn Clock>,
}

/// How this driver reports its rail, as detected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rail {
    /// `power_now`, microwatts.
    PowerNow,
    /// `current_now` x `voltage_now`.
    CurrentVoltage {
        /// Amps per unit of `current_now` (1e-6 for uA, 1e-3 for mA).
        amps_per_unit: f64,
        /// Volts per unit of `voltage_now`.
        volts_per_unit: f64,
        /// The sign of `current_now` while discharging (-1 or +1; 0 when the
        /// first reading was exactly zero and the sign is not known yet).
        discharge_sign: f64,
    },
}

impl Rail {
    /// Detect from one reading of a discharging battery's files.
    pub fn detect(dir: &Path) -> Result<Rail, MeterError> {
        if dir.join("power_now").exists() {
            read_number(&dir.join("power_now"))?;
            return Ok(Rail::PowerNow);
        }
        let i = read_number(&dir.join("current_now"))?;
        let v = read_number(&dir.join("voltage_now"))?;
        Ok(Rail::from_reading(i, v))
    }

    /// The units and sign that a reading of `current_now` = `i` and
    /// `voltage_now` = `v` implies.
    pub fn from_reading(i: f64, v: f64) -> Rail {
        Rail::CurrentVoltage {
            amps_per_unit: if i.abs() < MILLIAMP_BELOW { 1e-3 } else { 1e-6 },
            volts_per_unit: if v.abs() < MILLIVOLT_BELOW { 1e-3 } else { 1e-6 },
            discharge_sign: if i < 0.0 {
                -1.0
            } else if i > 0.0 {
                1.0
            } else {
                0.0
            },
        }
    }

    /// What was detected, for the result's method.
    pub fn describe(&self) -> String {
        match *self {
            Rail::PowerNow => "power_now (uW)".into(),
            Rail::CurrentVoltage { amps_per_unit, volts_per_unit, discharge_sign } => format!(
                "current_now x voltage_now (read as {} and {}, detected from the values; current {} while discharging)",
                if amps_per_unit == 1e-3 { "mA" } else { "uA" },
                if volts_per_unit == 1e-3 { "mV" } else { "uV" },
                match discharge_sign {
                    s if s < 0.0 => "negative",
                    s if s > 0.0 => "positive",
                    _ => "of unknown sign (zero at the start)",
                }
            ),
        }
    }

    /// Watts now; an error when the battery is not discharging any more.
    fn watts(&mut self, dir: &Path) -> Result<f64, MeterError> {
        let status = read_trimmed(&dir.join("status"))?;
        if status != "Discharging" {
            return Err(MeterError::Unavailable(format!(
                "the battery's status became `{status}` during the run (a charger was connected): \
                 its readings measure the charger, not the model"
            )));
        }
        match self {
            Rail::PowerNow => Ok(read_number(&dir.join("power_now"))?.abs() / 1e6),
            Rail::CurrentVoltage { amps_per_unit, volts_per_unit, discharge_sign } => {
                let amps = read_number(&dir.join("current_now"))? * *amps_per_unit;
                let volts = read_number(&dir.join("voltage_now"))? * *volts_per_unit;
                if *discharge_sign == 0.0 && amps != 0.0 {
                    *discharge_sign = amps.signum();
                } else if amps * *discharge_sign < 0.0 && amps.abs() > REVERSED_ABOVE_A {
                    return Err(MeterError::Unavailable(format!(
                        "the battery current reversed during the run ({amps:+.3} A against a discharge sign of \
                         {discharge_sign:+}): current flowed into the battery, so its readings do not measure the model"
                    )));
                }
                Ok((amps * volts).abs())
            }
        }
    }
}

impl PowerSupplyMeter {
    /// The first `type = Battery` supply under `root` that is discharging.
    pub fn discover(root: &Path) -> Result<Self, MeterError> {
        let entries = std::fs::read_dir(root)
            .map_err(|_| MeterError::Unavailable(format!("no power_supply class at {}", root.display())))?;
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        let mut seen_battery = false;
        for d in dirs {
            if read_trimmed(&d.join("type")).ok().as_deref() != Some("Battery") {
                continue;
            }
            seen_battery = true;
            if read_trimmed(&d.join("status")).ok().as_deref() == Some("Discharging") {
                if let Ok(rail) = Rail::detect(&d) {
                    return Ok(PowerSupplyMeter { dir: d, rail, running: None, clock: Arc::new(SystemClock::new()) });
                }
            }
        }
        Err(MeterError::Unavailable(if seen_battery {
            format!(
                "the battery under {} is not discharging (on a charger, readings are corrupted; \
                 on a phone: `adb shell dumpsys battery unplug`, a USB power switch, or wireless adb)",
                root.display()
            )
        } else {
            format!("no battery under {}", root.display())
        }))
    }

    /// The rail as detected.
    pub fn rail(&self) -> Rail {
        self.rail
    }
}

impl PowerSupplyMeter {
    /// Time readings with `clock` instead of the system clock (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

impl EnergyMeter for PowerSupplyMeter {
    fn kind(&self) -> pocketbench_types::meter::Meter {
        pocketbench_types::meter::Meter::PowerSupply
    }

    fn name(&self) -> String {
        format!("power_supply {} {}", self.dir.display(), self.rail.describe())
    }

    fn start(&mut self) -> Result<(), MeterError> {
        let dir = self.dir.clone();
        let mut rail = self.rail;
        self.running = Some(Sampler::start(
            Box::new(move || rail.watts(&dir).map(Reading::Power)),
            self.name(),
            self.clock.clone(),
        )?);
        Ok(())
    }

    fn stop(&mut self) -> Result<EnergyReading, MeterError> {
        self.running.take().ok_or(MeterError::NotStarted)?.stop()
    }
}
