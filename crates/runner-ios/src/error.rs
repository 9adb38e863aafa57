//! devicectl's failures, each with what to do next. The codes are those
//! documented by MNN's iOS benchmark notes (`shared/reference/ios.md`) and
//! seen in recorded outputs (the fixtures' README cites them).

use crate::json::CoreError;

/// `com.apple.dt.CoreDeviceError`.
pub const CORE_DEVICE: &str = "com.apple.dt.CoreDeviceError";
/// FrontBoard's launch errors.
pub const FBS_OPEN: &str = "FBSOpenApplicationErrorDomain";

/// Why a devicectl step failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DevicectlError {
    /// No `xcrun` to run (not a Mac, or no Xcode).
    #[error(
        "`{xcrun}` cannot be run ({why}): the iOS runner needs a Mac with Xcode 15 or later (set $XCRUN to its xcrun)"
    )]
    NoXcrun {
        /// What was tried.
        xcrun: String,
        /// Why it failed.
        why: String,
    },
    /// The output was not devicectl's JSON.
    #[error("devicectl {what}: {message}")]
    Output {
        /// The step.
        what: String,
        /// What was wrong.
        message: String,
    },
    /// No reachable iPhone or iPad.
    #[error("no iPhone or iPad is reachable{}: connect one by cable, unlock it and trust this Mac", listed(.seen))]
    NoDevice {
        /// Devices devicectl knows that were not usable, described.
        seen: Vec<String>,
    },
    /// More than one, and no `--device` to choose.
    #[error("{} iPhones and iPads are reachable ({}): name one with the device profile's `serial` (its identifier, UDID or name)", .candidates.len(), .candidates.join(", "))]
    Ambiguous {
        /// Each, described.
        candidates: Vec<String>,
    },
    /// The named device is not among those devicectl lists.
    #[error("no device `{selector}` is known to devicectl{}", listed(.seen))]
    NotFound {
        /// What was asked for.
        selector: String,
        /// What devicectl listed.
        seen: Vec<String>,
    },
    /// The device's tunnel is `unavailable`.
    #[error("{name} is known but cannot be reached (tunnelState unavailable): reconnect its cable or put it on this Mac's network, and unlock it")]
    Unreachable {
        /// The device.
        name: String,
    },
    /// Developer Mode is off.
    #[error("{name} has Developer Mode off: turn it on in Settings > Privacy & Security > Developer Mode, restart the device and confirm")]
    DeveloperModeOff {
        /// The device.
        name: String,
    },
    /// The device was locked when the app was launched.
    #[error("devicectl {what}: the device is locked ({detail}): unlock it and keep it unlocked during the run (Settings > Display & Brightness > Auto-Lock: Never)")]
    Locked {
        /// The step.
        what: String,
        /// devicectl's words.
        detail: String,
    },
    /// The developer profile is not trusted on the device.
    #[error("devicectl {what}: the app's developer profile is not trusted on the device ({detail}): trust it in Settings > General > VPN & Device Management")]
    Untrusted {
        /// The step.
        what: String,
        /// devicectl's words.
        detail: String,
    },
    /// The install failed (CoreDeviceError 3002).
    #[error("devicectl {what}: the app could not be installed ({detail}). A free development team may have at most three apps installed at once: delete another of its apps from the device; otherwise check the app's signing")]
    InstallFailed {
        /// The step.
        what: String,
        /// devicectl's words.
        detail: String,
    },
    /// The connection to the device went away mid-step.
    #[error("devicectl {what}: the device went away ({detail})")]
    DeviceGone {
        /// The step.
        what: String,
        /// devicectl's words.
        detail: String,
    },
    /// Any other failure, as devicectl put it.
    #[error("devicectl {what}: {domain} {code}: {detail}")]
    Other {
        /// The step.
        what: String,
        /// Its domain.
        domain: String,
        /// Its code.
        code: i64,
        /// devicectl's words.
        detail: String,
    },
}

fn listed(seen: &[String]) -> String {
    if seen.is_empty() {
        String::new()
    } else {
        format!(" (devicectl lists {})", seen.join("; "))
    }
}

impl DevicectlError {
    /// Classify the error devicectl reported for step `what`.
    pub fn from_core(what: &str, e: &CoreError) -> DevicectlError {
        let detail = e.messages().join(": ");
        let detail = if detail.is_empty() { format!("{} {}", e.domain, e.code) } else { detail };
        let said = |needle: &str| detail.to_lowercase().contains(needle);
        let what = what.to_string();
        if e.has(FBS_OPEN, 7) || said("locked") {
            DevicectlError::Locked { what, detail }
        } else if e.has(FBS_OPEN, 3) || said("explicitly trusted") || said("untrusted developer") {
            DevicectlError::Untrusted { what, detail }
        } else if e.has(CORE_DEVICE, 3002) {
            DevicectlError::InstallFailed { what, detail }
        } else if e
            .chain()
            .iter()
            .any(|c| c.domain.contains("ControlChannelConnectionError") || c.domain == "Network.NWError")
        {
            DevicectlError::DeviceGone { what, detail }
        } else {
            DevicectlError::Other { what, domain: e.domain.clone(), code: e.code, detail }
        }
    }

    /// Whether the device went away (or never came): the scheduler retries
    /// these, then records the job as failed while the sweep goes on.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            DevicectlError::DeviceGone { .. } | DevicectlError::Unreachable { .. } | DevicectlError::NoDevice { .. }
        )
    }
}
