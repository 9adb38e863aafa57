//! iOS device protocol for pocketbench: builds `xcrun devicectl` invocations.
//!
//! This crate speaks devicectl, not sweeps. The runner that installs the
//! probe app, launches it and copies results back arrives with the
//! device-runner issue. Every devicectl call asks for `--json-output FILE`,
//! the tool's machine-readable result, rather than parsing its human output.
//!
//! Nothing in this crate has run against a real iPhone or iPad yet: its
//! parsers are tested on fixtures that follow recorded devicectl output
//! (`tests/fixtures/devicectl/README.md` cites each).
#![deny(missing_docs)]

pub mod error;
pub mod json;
pub mod select;

pub use error::DevicectlError;

use std::path::Path;

/// The device selector: a UDID, or empty for "the only connected device"
/// (devicectl itself needs an explicit `--device`, so an empty UDID is
/// resolved by `list devices` first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devicectl {
    /// Target device UDID or identifier.
    pub device: String,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl Devicectl {
    /// For a device.
    pub fn new(device: impl Into<String>) -> Self {
        Devicectl { device: device.into() }
    }

    /// `xcrun devicectl list devices --json-output OUT`.
    pub fn list_devices(out: &Path) -> Vec<String> {
        let mut v = strings(&["devicectl", "list", "devices", "--json-output"]);
        v.push(out.display().to_string());
        v
    }

    /// `xcrun devicectl device install app --device D APP --json-output OUT`.
    pub fn install(&self, app: &Path, out: &Path) -> Vec<String> {
        let mut v = strings(&["devicectl", "device", "install", "app", "--device"]);
        v.extend([self.device.clone(), app.display().to_string(), "--json-output".into(), out.display().to_string()]);
        v
    }

    /// `xcrun devicectl device process launch --device D --console BUNDLE ARGS… --json-output OUT`.
    /// Arguments after the bundle id go to the app as separate argv entries
    /// (no shell in between, so no quoting is needed).
    pub fn launch(&self, bundle: &str, args: &[&str], out: &Path) -> Vec<String> {
        let mut v = strings(&["devicectl", "device", "process", "launch", "--device"]);
        v.push(self.device.clone());
        v.extend(["--json-output".into(), out.display().to_string(), "--console".into(), bundle.to_string()]);
        v.extend(args.iter().map(|a| a.to_string()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_keeps_arguments_separate() {
        let d = Devicectl::new("00008140-001A2B3C4D5E6F70");
        let v = d.launch("dev.pocketbench.probe", &["--spec", "a b.json"], Path::new("/tmp/o.json"));
        assert_eq!(v[..6], ["devicectl", "device", "process", "launch", "--device", "00008140-001A2B3C4D5E6F70"]);
        assert_eq!(v.last().map(String::as_str), Some("a b.json"));
        assert!(v.contains(&"--json-output".to_string()));
        assert_eq!(
            Devicectl::list_devices(Path::new("x.json")),
            ["devicectl", "list", "devices", "--json-output", "x.json"]
        );
    }
}
