//! The portable battery API (`starship-battery`, the maintained fork of
//! `battery`): integrates the battery's reported power while discharging.
//! On Linux the sysfs [`super::PowerSupplyMeter`] is preferred (same files,
//! raw microwatts, testable against a fake tree); this meter serves macOS,
//! the BSDs and Windows laptops.

use std::sync::Arc;

use super::clock::{Clock, SystemClock};
use super::sampler::{Reading, Sampler};
use super::{EnergyMeter, EnergyReading, MeterError};

/// Integrates `Battery::energy_rate()` of the first discharging battery.
pub struct BatteryMeter {
    running: Option<Sampler>,
    clock: Arc<dyn Clock>,
}

fn first_discharging() -> Result<starship_battery::Battery, MeterError> {
    let manager = starship_battery::Manager::new().map_err(|e| MeterError::Unavailable(format!("battery API: {e}")))?;
    let batteries = manager.batteries().map_err(|e| MeterError::Unavailable(format!("battery API: {e}")))?;
    let mut any = false;
    for b in batteries.flatten() {
        any = true;
        if b.state() == starship_battery::State::Discharging {
            return Ok(b);
        }
    }
    Err(MeterError::Unavailable(if any {
        "battery API: no battery is discharging".into()
    } else {
        "battery API: no battery".into()
    }))
}

impl BatteryMeter {
    /// Available when a battery is discharging.
    pub fn discover() -> Result<Self, MeterError> {
        first_discharging().map(|_| BatteryMeter { running: None, clock: Arc::new(SystemClock::new()) })
    }
}

impl BatteryMeter {
    /// Time readings with `clock` instead of the system clock (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

impl EnergyMeter for BatteryMeter {
    fn kind(&self) -> pocketbench_types::meter::Meter {
        pocketbench_types::meter::Meter::BatteryApi
    }

    fn name(&self) -> String {
        "battery API (starship-battery) energy_rate".into()
    }

    fn start(&mut self) -> Result<(), MeterError> {
        let source = Box::new(|| {
            let mut b = first_discharging()?;
            let manager = starship_battery::Manager::new().map_err(|e| MeterError::Unavailable(e.to_string()))?;
            manager.refresh(&mut b).map_err(|e| MeterError::Unavailable(e.to_string()))?;
            Ok(Reading::Power(b.energy_rate().value as f64))
        });
        self.running = Some(Sampler::start(source, self.name(), self.clock.clone())?);
        Ok(())
    }

    fn stop(&mut self) -> Result<EnergyReading, MeterError> {
        self.running.take().ok_or(MeterError::NotStarted)?.stop()
    }
}
