//! The JSON devicectl writes with `--json-output FILE`, as far as the
//! runner reads it. Every call's file is one envelope: `info` (with
//! `outcome`, `success` or `failed`), then `result` on success or `error` on
//! failure. The field names are devicectl's (Xcode 15 and later,
//! `jsonVersion` 2); the fixtures under `tests/fixtures/devicectl/` cite the
//! recorded outputs they follow.

use serde::Deserialize;

use crate::error::DevicectlError;

/// The envelope of every `--json-output` file.
#[derive(Debug, Clone, Deserialize)]
pub struct Envelope<T> {
    /// What ran and how it ended.
    pub info: Info,
    /// On success.
    #[serde(default = "none")]
    pub result: Option<T>,
    /// On failure.
    #[serde(default)]
    pub error: Option<CoreError>,
}

fn none<T>() -> Option<T> {
    None
}

/// `info`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    /// `success` or `failed`.
    pub outcome: String,
    /// The command, `devicectl.list.devices`.
    #[serde(default)]
    pub command_type: Option<String>,
    /// The JSON's version (2 as of Xcode 15 and 16).
    #[serde(default)]
    pub json_version: Option<u32>,
    /// devicectl's own version, `355.7.7`.
    #[serde(default)]
    pub version: Option<String>,
}

/// An `NSError` as devicectl writes it: code, domain, user info, and the
/// error under it, if any.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CoreError {
    /// The code within its domain (3002: the install failed).
    pub code: i64,
    /// `com.apple.dt.CoreDeviceError`, `FBSOpenApplicationErrorDomain`, ...
    pub domain: String,
    /// The messages.
    #[serde(default, rename = "userInfo")]
    pub user_info: UserInfo,
}

/// The user info of an error.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct UserInfo {
    /// `NSLocalizedDescription.string`.
    #[serde(default, rename = "NSLocalizedDescription")]
    pub description: Option<Text>,
    /// `NSLocalizedFailureReason.string`.
    #[serde(default, rename = "NSLocalizedFailureReason")]
    pub failure_reason: Option<Text>,
    /// `NSLocalizedRecoverySuggestion.string`.
    #[serde(default, rename = "NSLocalizedRecoverySuggestion")]
    pub recovery: Option<Text>,
    /// The error under this one.
    #[serde(default, rename = "NSUnderlyingError")]
    pub underlying: Option<Box<Underlying>>,
}

/// `{"string": ...}`, as devicectl wraps every text.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Text {
    /// The text.
    pub string: String,
}

/// `NSUnderlyingError`: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Underlying {
    /// The error.
    pub error: CoreError,
}

impl CoreError {
    /// This error and every one under it, outermost first.
    pub fn chain(&self) -> Vec<&CoreError> {
        let mut out = vec![self];
        while let Some(u) = &out[out.len() - 1].user_info.underlying {
            out.push(&u.error);
        }
        out
    }

    /// Every message of the chain, in order, without repeats.
    pub fn messages(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in self.chain() {
            let u = &e.user_info;
            for t in [&u.description, &u.failure_reason, &u.recovery].into_iter().flatten() {
                if !out.contains(&t.string) {
                    out.push(t.string.clone());
                }
            }
        }
        out
    }

    /// Whether any error of the chain is `code` in `domain`.
    pub fn has(&self, domain: &str, code: i64) -> bool {
        self.chain().iter().any(|e| e.domain == domain && e.code == code)
    }
}

/// `result` of `list devices`.
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceList {
    /// Every device CoreDevice knows of, reachable or not.
    pub devices: Vec<Device>,
}

/// One device of `list devices`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    /// The CoreDevice identifier (a UUID) that `--device` takes.
    pub identifier: String,
    /// Hardware.
    pub hardware_properties: Hardware,
    /// Software and name.
    pub device_properties: DeviceProperties,
    /// How it is reached.
    pub connection_properties: Connection,
}

/// `hardwareProperties`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hardware {
    /// The UDID (`00008140-...`), absent for some unpaired devices.
    #[serde(default)]
    pub udid: Option<String>,
    /// `iOS`, `watchOS`, ...
    #[serde(default)]
    pub platform: Option<String>,
    /// `iPhone`, `iPad`, `appleWatch`.
    #[serde(default)]
    pub device_type: Option<String>,
    /// `iPad Pro (11-inch)`.
    #[serde(default)]
    pub marketing_name: Option<String>,
    /// `iPhone16,1`.
    #[serde(default)]
    pub product_type: Option<String>,
    /// `physical` or `virtual` (a simulator, listed since Xcode 26's devicectl).
    #[serde(default)]
    pub reality: Option<String>,
}

/// `deviceProperties`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceProperties {
    /// The name the owner gave it.
    #[serde(default)]
    pub name: Option<String>,
    /// `17.3`.
    #[serde(default)]
    pub os_version_number: Option<String>,
    /// `enabled` or `disabled` (iOS 16 and later).
    #[serde(default)]
    pub developer_mode_status: Option<String>,
    /// `booted`, `shutdown` (simulators).
    #[serde(default)]
    pub boot_state: Option<String>,
}

/// `connectionProperties`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// `paired`, `unpaired`.
    #[serde(default)]
    pub pairing_state: Option<String>,
    /// `wired`, `localNetwork`.
    #[serde(default)]
    pub transport_type: Option<String>,
    /// `disconnected` is normal for a reachable device (the tunnel opens on
    /// demand); only `unavailable` means it cannot be reached.
    #[serde(default)]
    pub tunnel_state: Option<String>,
}

impl Device {
    /// The owner's name, else the marketing name, else the identifier.
    pub fn name(&self) -> &str {
        self.device_properties
            .name
            .as_deref()
            .or(self.hardware_properties.marketing_name.as_deref())
            .unwrap_or(&self.identifier)
    }

    /// A physical iPhone or iPad (not a watch, a TV or a simulator).
    pub fn is_ios_hardware(&self) -> bool {
        let h = &self.hardware_properties;
        h.platform.as_deref() == Some("iOS") && h.reality.as_deref() != Some("virtual")
    }

    /// Reachable now: its tunnel is not `unavailable`.
    pub fn reachable(&self) -> bool {
        self.connection_properties.tunnel_state.as_deref() != Some("unavailable")
    }

    /// Developer Mode is off (it must be on to launch a development app).
    pub fn developer_mode_off(&self) -> bool {
        self.device_properties.developer_mode_status.as_deref() == Some("disabled")
    }

    /// Whether `selector` names this device: its identifier, UDID or name.
    pub fn matches(&self, selector: &str) -> bool {
        self.identifier.eq_ignore_ascii_case(selector)
            || self.hardware_properties.udid.as_deref().is_some_and(|u| u.eq_ignore_ascii_case(selector))
            || self.device_properties.name.as_deref() == Some(selector)
    }
}

/// `result` of `device install app`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// The apps installed (one).
    pub installed_applications: Vec<InstalledApp>,
}

/// One installed app.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledApp {
    /// Its bundle id.
    #[serde(default, rename = "bundleID")]
    pub bundle_id: Option<String>,
    /// Where it was installed.
    #[serde(default, rename = "installationURL")]
    pub installation_url: Option<String>,
}

/// `result` of `device process launch`.
#[derive(Debug, Clone, Deserialize)]
pub struct Launched {
    /// The process started.
    pub process: Process,
}

/// A process on the device.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    /// Its pid, which `device process terminate --pid` takes.
    pub process_identifier: u32,
    /// Its executable's URL.
    #[serde(default)]
    pub executable: Option<String>,
}

/// `result` of `device info processes`: what runs on the device.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Processes {
    /// Every running process.
    pub running_processes: Vec<Process>,
}

impl Processes {
    /// The pids of the processes whose executable is `name` (the last
    /// component of its percent-encoded file URL, as a bundle's executable
    /// is named: `.../PocketbenchProbe.app/PocketbenchProbe`).
    pub fn named(&self, name: &str) -> Vec<u32> {
        self.running_processes
            .iter()
            .filter(|p| {
                p.executable.as_deref().is_some_and(|e| {
                    let last = e.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                    percent_decoded(last) == name
                })
            })
            .map(|p| p.process_identifier)
            .collect()
    }
}

/// `s` with its `%XX` escapes decoded (a file URL's path component).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Read one `--json-output` file of a command (`what`, for messages): its
/// `result`, or the failure it reports, classified.
pub fn parse<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T, DevicectlError> {
    let env: Envelope<T> = serde_json::from_str(text)
        .map_err(|e| DevicectlError::Output { what: what.into(), message: format!("not devicectl's JSON: {e}") })?;
    match (env.info.outcome.as_str(), env.result, env.error) {
        ("success", Some(r), _) => Ok(r),
        (_, _, Some(e)) => Err(DevicectlError::from_core(what, &e)),
        (outcome, _, None) => Err(DevicectlError::Output {
            what: what.into(),
            message: format!("outcome `{outcome}` with neither a result nor an error"),
        }),
    }
}
