//! `adb devices -l`: which phones the adb server sees, in which state, and
//! what a user does about each state.
//!
//! The format is the adb server's (`append_transport` in adb's
//! `transport.cpp`, packages/modules/adb): a header line `List of devices
//! attached`, then per device the serial left-aligned in 22 columns (longer
//! serials push the rest right), one space, the state name, then ` usb:…`
//! (the device path, USB only), ` product:…`, ` model:…` (non-alphanumerics
//! turned into `_`), ` device:…`, each only when known, and last
//! ` transport_id:N` (adb 1.0.40 and later). A state may contain spaces (`no
//! permissions (…); see […]`), so the line is read from both ends.

/// A device's connection state, as adb names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Booted and authorized: usable.
    Device,
    /// The phone has not accepted this computer's key.
    Unauthorized,
    /// Known to the server but not answering (cable, sleeping adbd, a remote
    /// session that ended).
    Offline,
    /// The key exchange is in progress.
    Authorizing,
    /// A TCP device the server is still connecting to.
    Connecting,
    /// The host may not open the USB device.
    NoPermissions(String),
    /// Not booted into Android (`bootloader`, `recovery`, `rescue`, `sideload`).
    NotBooted(String),
    /// Any other state name.
    Other(String),
}

impl State {
    fn parse(s: &str) -> State {
        match s {
            "device" => State::Device,
            "unauthorized" => State::Unauthorized,
            "offline" => State::Offline,
            "authorizing" => State::Authorizing,
            "connecting" => State::Connecting,
            "bootloader" | "recovery" | "rescue" | "sideload" => State::NotBooted(s.to_string()),
            s if s.starts_with("no permissions") => State::NoPermissions(s.to_string()),
            s => State::Other(s.to_string()),
        }
    }

    /// The state as adb prints it.
    pub fn name(&self) -> &str {
        match self {
            State::Device => "device",
            State::Unauthorized => "unauthorized",
            State::Offline => "offline",
            State::Authorizing => "authorizing",
            State::Connecting => "connecting",
            State::NoPermissions(s) | State::NotBooted(s) | State::Other(s) => s,
        }
    }

    /// Whether the device can be measured now.
    pub fn is_ready(&self) -> bool {
        *self == State::Device
    }

    /// What to do about a device in this state; `None` when it is ready.
    pub fn advice(&self) -> Option<&'static str> {
        Some(match self {
            State::Device => return None,
            State::Unauthorized => {
                "unlock the phone and accept \"Allow USB debugging?\" (tick \"Always allow from this computer\"); no prompt: Developer options > Revoke USB debugging authorizations, then reconnect"
            }
            State::Offline => {
                "the device does not answer adb: replug the cable or run `adb reconnect offline`; a remote session (device farm, `adb connect`) may have ended: `adb disconnect HOST:PORT` and connect again"
            }
            State::Authorizing | State::Connecting => "adb is still connecting: wait a few seconds and list again",
            State::NoPermissions(_) => {
                "this user may not open the USB device: add a udev rule for the phone's vendor (or Debian's android-sdk-platform-tools-common package) and replug"
            }
            State::NotBooted(_) => "the phone is not booted into Android: boot it normally (`adb reboot`)",
            State::Other(_) => "adb reports a state pocketbench does not know: see `adb devices -l`",
        })
    }
}

/// One line of `adb devices -l`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// USB serial or `host:port`.
    pub serial: String,
    /// Its state.
    pub state: State,
    /// `usb:…` device path, for USB devices.
    pub devpath: Option<String>,
    /// `product:` (ro.product.name).
    pub product: Option<String>,
    /// `model:` (ro.product.model, non-alphanumerics as `_`).
    pub model: Option<String>,
    /// `device:` (ro.product.device).
    pub device: Option<String>,
    /// `transport_id:` (adb 1.0.40+).
    pub transport_id: Option<u64>,
}

/// `adb devices -l` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DevicesError {
    /// No `List of devices attached` header: not the output of `adb devices`.
    #[error("not the output of `adb devices -l` (no \"List of devices attached\" line): {0:?}")]
    NoHeader(String),
    /// A device line without a state.
    #[error("`adb devices -l` line {line}: no state after the serial: {text:?}")]
    NoState {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
}

const NO_SERIAL: &str = "(no serial number)";

/// Parse the output of `adb devices -l` (the plain `adb devices` form,
/// `serial<TAB>state`, too). Lines before the header (`* daemon started
/// successfully` and the like) are skipped.
pub fn parse_devices(text: &str) -> Result<Vec<Listed>, DevicesError> {
    let mut lines = text.lines().enumerate();
    if !lines.any(|(_, l)| l.trim_end() == "List of devices attached") {
        return Err(DevicesError::NoHeader(text.chars().take(200).collect()));
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let line = line.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let (serial, rest) = match line.strip_prefix(NO_SERIAL) {
            Some(rest) => (NO_SERIAL.to_string(), rest),
            None => {
                let end = line.find([' ', '\t']).unwrap_or(line.len());
                (line[..end].to_string(), &line[end..])
            }
        };
        let mut rest = rest.trim();
        if rest.is_empty() {
            return Err(DevicesError::NoState { line: i + 1, text: line.to_string() });
        }
        let mut transport_id = None;
        if let Some((head, id)) = rest.rsplit_once(" transport_id:") {
            if let Ok(id) = id.trim().parse() {
                transport_id = Some(id);
                rest = head.trim_end();
            }
        }
        // The state runs to the first attribute; `no permissions (…)` may
        // hold spaces and ends at its closing bracket.
        let state_end = if rest.starts_with("no permissions") {
            rest.rfind(']').map_or(rest.find(" usb:").unwrap_or(rest.len()), |i| i + 1)
        } else {
            rest.find(' ').unwrap_or(rest.len())
        };
        let state = State::parse(rest[..state_end].trim());
        let mut listed =
            Listed { serial, state, devpath: None, product: None, model: None, device: None, transport_id };
        for word in rest[state_end..].split_whitespace() {
            let value = |p: &str| word.strip_prefix(p).map(str::to_string);
            if let Some(v) = value("product:") {
                listed.product = Some(v);
            } else if let Some(v) = value("model:") {
                listed.model = Some(v);
            } else if let Some(v) = value("device:") {
                listed.device = Some(v);
            } else if listed.devpath.is_none() {
                listed.devpath = Some(word.to_string());
            }
        }
        out.push(listed);
    }
    Ok(out)
}

/// The device a run targets: `serial`, or with none the only device adb
/// lists (as `adb` without `-s` picks it). The error says what is wrong in
/// words a user acts on.
pub fn choose<'a>(listed: &'a [Listed], serial: &str) -> Result<&'a Listed, NotReady> {
    choose_one(listed, serial).map_err(NotReady)
}

/// Why no listed device can run a job now, in words a user acts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotReady(pub String);

fn choose_one<'a>(listed: &'a [Listed], serial: &str) -> Result<&'a Listed, String> {
    let found = if serial.is_empty() {
        match listed {
            [] => return Err("no Android device is attached (`adb devices -l` lists none): plug one in with USB debugging on, or `adb connect HOST:PORT` a remote one".into()),
            [one] => one,
            many => {
                let names: Vec<&str> = many.iter().map(|l| l.serial.as_str()).collect();
                return Err(format!(
                    "{} Android devices are attached ({}): set the profile's `serial`",
                    many.len(),
                    names.join(", ")
                ));
            }
        }
    } else {
        listed.iter().find(|l| l.serial == serial).ok_or_else(|| {
            format!("device `{serial}` is not attached (`adb devices -l` does not list it); a remote one needs `adb connect {serial}`")
        })?
    };
    match found.state.advice() {
        None => Ok(found),
        Some(advice) => Err(format!("device `{}` is {}: {advice}", found.serial, found.state.name())),
    }
}
