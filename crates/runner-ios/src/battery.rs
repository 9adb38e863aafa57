//! Energy from the battery's own gauge over a long loop of runs, read on
//! the Mac: `pymobiledevice3 diagnostics battery single` prints the
//! device's `IOPMPowerSource` registry entry as JSON before and after the
//! loop. The charge the battery lost, times its voltage, over the runs, is
//! the energy per run, with an uncertainty that is large: the gauge counts
//! whole mAh, the voltage moves, and everything else the device did in
//! that time is in it too.
//!
//! The keys read are those huangzhengxiang/LLM-Profiler's
//! `ios/monitor/monitor.py` reads from the same command (`UpdateTime`,
//! `Voltage` in mV, `AppleRawCurrentCapacity` and `AppleRawMaxCapacity` in
//! mAh), and the charging flags `IsCharging` and `ExternalConnected` of the
//! same registry entry. A file may hold one snapshot (`battery single`) or
//! a list of them (a monitor's log, as monitor.py keeps): the first and the
//! last are taken.

use serde::Deserialize;

use crate::export::{self, ExportError};

/// Joules in a mAh at one volt.
const J_PER_MAH_V: f64 = 3.6;

/// One reading of the battery registry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Snapshot {
    /// Seconds since 1970 of the gauge's last update.
    pub update_time: i64,
    /// mV.
    pub voltage: f64,
    /// The charge left, mAh.
    pub apple_raw_current_capacity: f64,
    /// The charge when full, mAh.
    #[serde(default)]
    pub apple_raw_max_capacity: Option<f64>,
    /// Charging now.
    #[serde(default)]
    pub is_charging: Option<bool>,
    /// A charger or cable supplies power.
    #[serde(default)]
    pub external_connected: Option<bool>,
    /// mA, negative while discharging.
    #[serde(default)]
    pub instant_amperage: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    Many(Vec<Snapshot>),
    One(Snapshot),
}

/// Read a snapshot file (one object, or a list of them); `file` names it in
/// errors. The first and last snapshot.
pub fn parse(file: &str, text: &str) -> Result<(Snapshot, Snapshot), ExportError> {
    let value: serde_json::Value = export::json(file, text)?;
    let first = match &value {
        serde_json::Value::Array(a) => a.first().cloned(),
        other => Some(other.clone()),
    };
    let Some(serde_json::Value::Object(o)) = first else {
        return Err(ExportError::new(file, "", "not a battery snapshot: expected a JSON object or a list of them"));
    };
    for key in ["UpdateTime", "Voltage", "AppleRawCurrentCapacity"] {
        if !o.contains_key(key) {
            return Err(ExportError::new(
                file,
                key,
                "missing: not `pymobiledevice3 diagnostics battery single` output (its IOPMPowerSource entry)",
            ));
        }
    }
    let all: OneOrMany = export::json(file, text)?;
    Ok(match all {
        OneOrMany::One(s) => (s.clone(), s),
        OneOrMany::Many(v) => (v[0].clone(), v[v.len() - 1].clone()),
    })
}

/// The energy per run from the charge lost over a loop of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Drain {
    /// Runs in the loop.
    pub runs: u32,
    /// Charge lost, mAh.
    pub charge_mah: f64,
    /// Seconds between the two readings.
    pub seconds: f64,
    /// Joules per run.
    pub joules_per_run: f64,
    /// ± joules per run: the gauge's whole mAh at each end, and the
    /// voltage's move between the readings.
    pub uncertainty_j: f64,
    /// Joules per run that one mAh is: the method's resolution.
    pub resolution_j: f64,
}

impl Drain {
    /// From the snapshot before the loop and the one after it, over `runs`
    /// runs. Refused: a device that was charging or on external power, no
    /// time between the readings, no charge lost.
    pub fn between(file: &str, before: &Snapshot, after: &Snapshot, runs: u32) -> Result<Drain, ExportError> {
        if runs == 0 {
            return Err(ExportError::new(file, "runs", "at least one run"));
        }
        for (what, s) in [("before", before), ("after", after)] {
            if s.is_charging == Some(true) || s.external_connected == Some(true) {
                return Err(ExportError::new(
                    file,
                    format!("{what}: IsCharging/ExternalConnected"),
                    "the device was on external power: the battery's drain is not the runs' energy. Disconnect \
                     power (drive the device over the network) and loop again",
                ));
            }
            if !(s.voltage.is_finite() && s.voltage > 0.0 && s.apple_raw_current_capacity.is_finite()) {
                return Err(ExportError::new(file, format!("{what}: Voltage"), format!("{} mV", s.voltage)));
            }
        }
        let seconds = (after.update_time - before.update_time) as f64;
        if seconds <= 0.0 {
            return Err(ExportError::new(
                file,
                "UpdateTime",
                "the two readings are the same gauge update: read the battery before and after the loop",
            ));
        }
        let charge_mah = before.apple_raw_current_capacity - after.apple_raw_current_capacity;
        if charge_mah < 1.0 {
            return Err(ExportError::new(
                file,
                "AppleRawCurrentCapacity",
                format!(
                    "{charge_mah} mAh lost over {runs} runs: the gauge counts whole mAh, so loop more runs (a 1024+128 run \
                     on a phone is a few joules; a mAh at 3.8 V is about 14 J)"
                ),
            ));
        }
        let volts = (before.voltage + after.voltage) / 2000.0;
        let swing = (before.voltage - after.voltage).abs() / 2000.0;
        let n = f64::from(runs);
        Ok(Drain {
            runs,
            charge_mah,
            seconds,
            joules_per_run: charge_mah * volts * J_PER_MAH_V / n,
            uncertainty_j: (charge_mah * swing + volts) * J_PER_MAH_V / n,
            resolution_j: volts * J_PER_MAH_V / n,
        })
    }
}
