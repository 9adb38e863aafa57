//! What read a measured value: the probe names its meters with these, and
//! the harness keeps them on every measured figure.

use serde::{Deserialize, Serialize};

/// What read a measured value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Meter {
    /// A monotonic clock around prefill and each decode step.
    Timer,
    /// Linux's high-water mark of resident memory (`VmHWM`).
    VmHwm,
    /// Apple's `phys_footprint` ledger (`task_info`), what jetsam enforces.
    PhysFootprint,
    /// The size of the file run.
    FileSize,
    /// Intel/AMD RAPL energy counters (`/sys/class/powercap`).
    Rapl,
    /// A battery's or charger's `power_supply` readings.
    PowerSupply,
    /// The platform's battery API (starship-battery's energy rate).
    BatteryApi,
    /// A thermal zone or hwmon sensor.
    Thermal,
    /// Instruments' Power Profiler (`xcrun xctrace`), on the Mac.
    PowerProfiler,
    /// An iPhone's battery gauge read from the Mac (`pymobiledevice3`).
    BatteryGauge,
    /// Something else, named in the method's text.
    Other,
}

impl Meter {
    /// The meter a method's text begins with or names: for texts written
    /// before results named their meters (a result that names them is
    /// read as it says).
    pub fn of(detail: &str) -> Meter {
        let d = detail.to_ascii_lowercase();
        if d.starts_with("timer") {
            Meter::Timer
        } else if d.starts_with("vmhwm") {
            Meter::VmHwm
        } else if d.starts_with("phys_footprint") {
            Meter::PhysFootprint
        } else if d.starts_with("size of") {
            Meter::FileSize
        } else if d.contains("rapl") || d.contains("powercap") {
            Meter::Rapl
        } else if d.contains("power_supply") {
            Meter::PowerSupply
        } else if d.starts_with("battery api") {
            Meter::BatteryApi
        } else if d.starts_with("xctrace") {
            Meter::PowerProfiler
        } else if d.starts_with("pymobiledevice3") {
            Meter::BatteryGauge
        } else if d.contains("thermal") || d.contains("hwmon") {
            Meter::Thermal
        } else {
            Meter::Other
        }
    }
}

/// The meters a probe result's memory and energy figures were read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meters {
    /// Peak memory: VmHWM (Linux, Android) or phys_footprint (iOS).
    pub memory: Meter,
    /// Energy, where a meter read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<Meter>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_is_named_in_snake_case_and_guessed_from_old_texts() {
        assert_eq!(serde_json::to_string(&Meter::VmHwm).unwrap(), "\"vm_hwm\"");
        assert_eq!(serde_json::to_string(&Meter::PhysFootprint).unwrap(), "\"phys_footprint\"");
        assert_eq!(Meter::of("VmHWM minus VmRSS before load"), Meter::VmHwm);
        assert_eq!(Meter::of("RAPL powercap energy_uj (intel-rapl:0)"), Meter::Rapl);
        assert_eq!(Meter::of("battery API (starship-battery) energy_rate"), Meter::BatteryApi);
        let m: Meters = serde_json::from_str(r#"{"memory":"phys_footprint"}"#).unwrap();
        assert_eq!(m, Meters { memory: Meter::PhysFootprint, energy: None });
    }
}
