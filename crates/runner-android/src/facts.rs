//! What a phone says about itself: `getprop` (model, SoC, Android version,
//! ABI) and `dumpsys battery` (level, charging, the charger), parsed from the
//! formats Android prints.

use std::collections::BTreeMap;

/// `getprop` with no argument prints every property as `[name]: [value]`,
/// one per line (a value may be empty; the toybox/toolbox `getprop` of
/// every Android release since 4.x). Lines of another shape are skipped.
pub fn parse_getprop(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_end_matches('\r');
            let (k, v) = l.strip_prefix('[')?.split_once("]: [")?;
            Some((k.to_string(), v.strip_suffix(']')?.to_string()))
        })
        .collect()
}

/// The facts a device profile and a result record want from `getprop`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Props {
    /// `ro.product.manufacturer`.
    pub manufacturer: Option<String>,
    /// `ro.product.model` ("CPH2649").
    pub model: Option<String>,
    /// The SoC: `ro.soc.model` (Android 12+, "SM8750"), else
    /// `ro.board.platform` ("sun"), else `ro.hardware`.
    pub soc: Option<String>,
    /// `ro.build.version.release` ("15").
    pub android: Option<String>,
    /// `ro.build.version.sdk` (35).
    pub sdk: Option<u32>,
    /// `ro.product.cpu.abi` ("arm64-v8a").
    pub abi: Option<String>,
}

impl Props {
    /// Pick the facts out of parsed properties.
    pub fn from_map(p: &BTreeMap<String, String>) -> Props {
        let get = |k: &str| p.get(k).filter(|v| !v.is_empty()).cloned();
        Props {
            manufacturer: get("ro.product.manufacturer"),
            model: get("ro.product.model"),
            soc: get("ro.soc.model").or_else(|| get("ro.board.platform")).or_else(|| get("ro.hardware")),
            android: get("ro.build.version.release"),
            sdk: get("ro.build.version.sdk").and_then(|v| v.parse().ok()),
            abi: get("ro.product.cpu.abi"),
        }
    }

    /// Whether a static AArch64 Linux executable runs on it.
    pub fn runs_arm64(&self) -> bool {
        self.abi.as_deref() == Some("arm64-v8a")
    }
}

/// Battery status codes (`android.os.BatteryManager.BATTERY_STATUS_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 1.
    Unknown,
    /// 2.
    Charging,
    /// 3.
    Discharging,
    /// 4: plugged in, not charging (full, or a charge limit).
    NotCharging,
    /// 5.
    Full,
}

/// `dumpsys battery`, as `BatteryService.dumpInternal` prints it
/// (frameworks/base, services/core/java/com/android/server/BatteryService.java):
/// `Current Battery Service state:`, then indented `key: value` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Battery {
    /// `AC powered`, `USB powered`, `Wireless powered`, `Dock powered`
    /// (Android 13+): the chargers that are on.
    pub powered_by: Vec<&'static str>,
    /// `status`.
    pub status: Status,
    /// `level` / `scale`, 0..1.
    pub level: Option<f64>,
    /// `voltage`, volts (printed in mV).
    pub voltage_v: Option<f64>,
    /// `temperature`, degrees C (printed in tenths).
    pub temperature_c: Option<f64>,
    /// `(UPDATES STOPPED -- use 'reset' to restart)`: the figures are a test
    /// value set by `dumpsys battery set/unplug`, not the battery's. After
    /// `dumpsys battery unplug` the framework says "unplugged" while the
    /// charger may still feed the phone: energy read from the rails then is
    /// still not the battery's alone.
    pub updates_stopped: bool,
}

impl Battery {
    /// Whether a charger is feeding the phone (by the framework's account).
    pub fn on_charger(&self) -> bool {
        !self.powered_by.is_empty() || self.status == Status::Charging
    }
}

/// `dumpsys battery` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not the output of `dumpsys battery` (no \"Current Battery Service state:\" line or no status): {0:?}")]
pub struct BatteryError(pub String);

/// Parse `dumpsys battery`.
pub fn parse_battery(text: &str) -> Result<Battery, BatteryError> {
    let err = || BatteryError(text.chars().take(200).collect());
    let start = text.find("Current Battery Service state:").ok_or_else(err)?;
    let mut kv = BTreeMap::new();
    let mut updates_stopped = false;
    for line in text[start..].lines().skip(1) {
        let t = line.trim();
        if !line.starts_with(' ') {
            break; // the next section
        }
        if t.starts_with("(UPDATES STOPPED") {
            updates_stopped = true;
        } else if let Some((k, v)) = t.split_once(": ") {
            kv.insert(k.to_string(), v.trim().to_string());
        }
    }
    let num = |k: &str| kv.get(k).and_then(|v| v.parse::<f64>().ok());
    let status = match num("status").ok_or_else(err)? as i64 {
        2 => Status::Charging,
        3 => Status::Discharging,
        4 => Status::NotCharging,
        5 => Status::Full,
        _ => Status::Unknown,
    };
    let powered_by =
        [("AC powered", "ac"), ("USB powered", "usb"), ("Wireless powered", "wireless"), ("Dock powered", "dock")]
            .into_iter()
            .filter(|(k, _)| kv.get(*k).is_some_and(|v| v == "true"))
            .map(|(_, name)| name)
            .collect();
    let level = match (num("level"), num("scale")) {
        (Some(l), Some(s)) if s > 0.0 => Some(l / s),
        _ => None,
    };
    Ok(Battery {
        powered_by,
        status,
        level,
        voltage_v: num("voltage").map(|mv| mv / 1e3),
        temperature_c: num("temperature").map(|t| t / 10.0),
        updates_stopped,
    })
}
