//! A battery's Linux `power_supply` class files (laptops and Android):
//! `power_now` in microwatts where present, else `current_now` (microamps) x
//! `voltage_now` (microvolts). Drivers differ in the sign of current while
//! discharging (negative is documented only since 2020), so the magnitude is
//! used and the meter requires `status` = Discharging: readings while charging
//! are corrupted by the charger.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::clock::{Clock, SystemClock};
use super::sampler::{Reading, Sampler};
use super::{read_number, read_trimmed, EnergyMeter, EnergyReading, MeterError};

/// Integrates a discharging battery's power.
pub struct PowerSupplyMeter {
    dir: PathBuf,
    running: Option<Sampler>,
    clock: Arc<dyn Clock>,
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
            if read_trimmed(&d.join("status")).ok().as_deref() == Some("Discharging") && power(&d).is_ok() {
                return Ok(PowerSupplyMeter { dir: d, running: None, clock: Arc::new(SystemClock::new()) });
            }
        }
        Err(MeterError::Unavailable(if seen_battery {
            format!("the battery under {} is not discharging (on a charger, readings are corrupted)", root.display())
        } else {
            format!("no battery under {}", root.display())
        }))
    }
}

fn power(dir: &Path) -> Result<f64, MeterError> {
    let pn = dir.join("power_now");
    if pn.exists() {
        return Ok(read_number(&pn)?.abs() / 1e6);
    }
    let i = read_number(&dir.join("current_now"))?;
    let v = read_number(&dir.join("voltage_now"))?;
    Ok((i * v).abs() / 1e12)
}

impl PowerSupplyMeter {
    /// Time readings with `clock` instead of the system clock (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

impl EnergyMeter for PowerSupplyMeter {
    fn name(&self) -> String {
        let what = if self.dir.join("power_now").exists() { "power_now" } else { "current_now x voltage_now" };
        format!("power_supply {} {what}", self.dir.display())
    }

    fn start(&mut self) -> Result<(), MeterError> {
        let dir = self.dir.clone();
        self.running =
            Some(Sampler::start(Box::new(move || power(&dir).map(Reading::Power)), self.name(), self.clock.clone())?);
        Ok(())
    }

    fn stop(&mut self) -> Result<EnergyReading, MeterError> {
        self.running.take().ok_or(MeterError::NotStarted)?.stop()
    }
}
