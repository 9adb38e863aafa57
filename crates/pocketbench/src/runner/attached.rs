//! Which configured phones and tablets are attached: one `adb devices -l`,
//! matched against every profile whose transport is adb, and one `xcrun
//! devicectl list devices`, matched against every iOS profile
//! (`pocketbench devices`).

use std::time::Duration;

use pocketbench_runner_android::{choose, Adb};
use serde::Serialize;

use crate::device::{Device, Transport};

/// One adb or iOS profile against what its tool lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attachment {
    /// The profile's id.
    pub device: String,
    /// The attached phone it measures, when one is attached and ready (an
    /// adb serial, a CoreDevice identifier).
    pub serial: Option<String>,
    /// That phone's model (`adb devices -l`'s `model:`; devicectl's name
    /// and marketing name).
    pub model: Option<String>,
    /// Why it cannot measure now, and what to do (absent when it can).
    pub why_not: Option<String>,
}

impl Attachment {
    /// Profile `d` against the device its tool chose for it (its serial or
    /// identifier and model), or why none.
    fn of(d: &Device, chosen: Result<(String, Option<String>), String>) -> Attachment {
        let device = d.id().to_string();
        match chosen {
            Ok((serial, model)) => Attachment { device, serial: Some(serial), model, why_not: None },
            Err(why) => Attachment { device, serial: None, model: None, why_not: Some(why) },
        }
    }
}

/// What adb (or devicectl) lists, matched to its profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attached {
    /// Each adb profile, in the registry's order.
    pub devices: Vec<Attachment>,
    /// Every phone the tool lists: serial (identifier), state and model.
    pub listed: Vec<(String, String, Option<String>)>,
}

/// Ask `adb` (one `adb devices -l`, within `timeout`) which of `devices`'
/// adb profiles have their phone attached. Asking starts adb's server when
/// none runs, as `adb devices` does.
pub fn attached(devices: &[Device], adb: &Adb, timeout: Duration) -> Result<Attached, crate::Error> {
    let unavailable = |e: &dyn std::fmt::Display| crate::Error::Unavailable(e.to_string());
    let listed = adb.devices(timeout).map_err(|e| unavailable(&e))?.map_err(|e| unavailable(&e))?;
    let devices = devices
        .iter()
        .filter_map(|d| match &d.profile().transport {
            Transport::Adb { serial, any, .. } => Some((d, serial, *any)),
            _ => None,
        })
        .map(|(d, serial, any)| {
            let chosen = if serial.is_empty() && !any {
                Err("no serial set: put the attached phone's serial in its [transport] serial".to_string())
            } else {
                choose(&listed, serial).map_err(|e| e.to_string())
            };
            Attachment::of(d, chosen.map(|l| (l.serial.clone(), l.model.clone())))
        })
        .collect();
    let listed = listed.into_iter().map(|l| (l.serial, l.state.name().to_string(), l.model)).collect();
    Ok(Attached { devices, listed })
}

/// Ask `xcrun devicectl` (one `list devices`, within `timeout`) which of
/// `devices`' iOS profiles have their iPhone or iPad reachable.
pub fn attached_ios(
    devices: &[Device],
    xcrun: &pocketbench_runner_ios::Xcrun,
    timeout: Duration,
) -> Result<Attached, crate::Error> {
    use pocketbench_runner_ios::{json::DeviceList, select, Devicectl};
    let list: DeviceList = xcrun
        .call("list devices", &Devicectl::list_devices(), timeout)
        .map_err(|e| crate::Error::Unavailable(e.to_string()))?;
    let model = |d: &pocketbench_runner_ios::json::Device| {
        let h = &d.hardware_properties;
        Some(match h.marketing_name.as_deref().or(h.product_type.as_deref()) {
            Some(m) if m != d.name() => format!("{}, {m}", d.name()),
            _ => d.name().to_string(),
        })
    };
    let rows = devices
        .iter()
        .filter_map(|d| match &d.profile().transport {
            Transport::Ios { udid, any, .. } => Some((d, udid, *any)),
            _ => None,
        })
        .map(|(d, udid, any)| {
            let chosen = if udid.is_empty() && !any {
                Err("no udid set: put the device's identifier, UDID or name in its [transport] udid".to_string())
            } else {
                select::choose(&list.devices, Some(udid)).map_err(|e| e.to_string())
            };
            Attachment::of(d, chosen.map(|l| (l.identifier.clone(), model(l))))
        })
        .collect();
    let listed = list
        .devices
        .iter()
        .filter(|d| d.is_ios_hardware())
        .map(|d| (d.identifier.clone(), d.connection_properties.tunnel_state.clone().unwrap_or_default(), model(d)))
        .collect();
    Ok(Attached { devices: rows, listed })
}

/// What each tool said: adb's and devicectl's lists matched to the
/// profiles, or why the tool could not be asked; `None` where it was not
/// asked (`pocketbench devices --offline`).
#[derive(Debug, Default)]
pub struct Asked {
    /// `adb devices -l`.
    pub android: Option<Result<Attached, crate::Error>>,
    /// `xcrun devicectl list devices`.
    pub apple: Option<Result<Attached, crate::Error>>,
}

/// Ask adb (within 15 s) and devicectl (within 30 s) which of the
/// registry's phones and tablets are attached; nothing with `offline`.
pub fn ask(devices: &crate::device::Devices, offline: bool) -> Asked {
    if offline {
        return Asked::default();
    }
    let android = Adb::found("")
        .map_err(|e| crate::Error::Unavailable(e.to_string()))
        .and_then(|adb| attached(devices.all(), &adb, Duration::from_secs(15)));
    let apple = pocketbench_runner_ios::Xcrun::locate()
        .map_err(|e| crate::Error::Unavailable(e.to_string()))
        .and_then(|x| attached_ios(devices.all(), &x, Duration::from_secs(30)));
    Asked { android: Some(android), apple: Some(apple) }
}
