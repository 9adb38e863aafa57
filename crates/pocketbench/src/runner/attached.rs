//! Which configured phones are attached: one `adb devices -l`, matched
//! against every profile whose transport is adb (`pocketbench devices`).

use std::time::Duration;

use pocketbench_runner_android::{choose, Adb};
use serde::Serialize;

use crate::device::{Device, Transport};

/// One adb profile against what adb lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attachment {
    /// The profile's id.
    pub device: String,
    /// The attached phone it measures, when one is attached and ready.
    pub serial: Option<String>,
    /// That phone's model (`adb devices -l`'s `model:`).
    pub model: Option<String>,
    /// Why it cannot measure now, and what to do (absent when it can).
    pub why_not: Option<String>,
}

/// What adb lists, matched to the adb profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attached {
    /// Each adb profile, in the registry's order.
    pub devices: Vec<Attachment>,
    /// Every phone adb lists: serial, state and model.
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
            match chosen {
                Ok(l) => Attachment {
                    device: d.id().to_string(),
                    serial: Some(l.serial.clone()),
                    model: l.model.clone(),
                    why_not: None,
                },
                Err(why) => Attachment { device: d.id().to_string(), serial: None, model: None, why_not: Some(why) },
            }
        })
        .collect();
    let listed = listed.into_iter().map(|l| (l.serial, l.state.name().to_string(), l.model)).collect();
    Ok(Attached { devices, listed })
}
