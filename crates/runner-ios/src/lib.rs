//! iOS device protocol for pocketbench: builds `xcrun devicectl` invocations.
//!
//! This crate speaks devicectl, not sweeps: pocketbench's iOS runner
//! (`pocketbench::runner::ios`) drives these calls per job. Every devicectl
//! call asks for `--json-output FILE`, the tool's machine-readable result,
//! rather than parsing its human output.
//!
//! It also reads what a Mac's other tools export about a run on a device:
//! the app's XCTest metrics (`xcresult`: `xcresulttool get test-results
//! metrics`), a Power Profiler recording's table (`xctrace`: `xctrace
//! export --xpath`) and the battery's registry (`battery`: `pymobiledevice3
//! diagnostics battery single`), each with located errors (`export`).
//!
//! Nothing in this crate has run against a real iPhone or iPad yet: its
//! parsers are tested on fixtures that follow recorded or documented output
//! (`tests/fixtures/README.md` and `tests/fixtures/devicectl/README.md`
//! cite each).
#![deny(missing_docs)]

pub mod battery;
pub mod client;
pub mod contract;
pub mod error;
pub mod export;
pub mod json;
pub mod select;
pub mod tools;
pub mod xcresult;
pub mod xctrace;

pub use client::{Console, Xcrun};
pub use error::DevicectlError;

use std::ffi::OsString;
use std::path::Path;

/// The devicectl commands the runner uses, for one device (its CoreDevice
/// identifier). Each is the words after `xcrun devicectl`, without
/// `--json-output`, which [`Xcrun`] adds to every call right after the
/// subcommand (so it never lands among the app's own arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devicectl {
    /// The device's identifier (or UDID).
    pub device: String,
}

fn words(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

impl Devicectl {
    /// For a device.
    pub fn new(device: impl Into<String>) -> Self {
        Devicectl { device: device.into() }
    }

    /// `list devices --timeout 5`: every device CoreDevice knows (5 s is
    /// the least devicectl takes).
    pub fn list_devices() -> Vec<OsString> {
        words(&["list", "devices", "--timeout", "5"])
    }

    fn on_device(&self, sub: &[&str]) -> Vec<OsString> {
        let mut v = words(sub);
        v.extend([OsString::from("--device"), OsString::from(&self.device)]);
        v
    }

    /// `device install app --device D APP`.
    pub fn install(&self, app: &Path) -> Vec<OsString> {
        let mut v = self.on_device(&["device", "install", "app"]);
        v.push(app.into());
        v
    }

    fn copy(&self, direction: &str, bundle: &str, source: &Path, destination: &Path) -> Vec<OsString> {
        let mut v = self.on_device(&["device", "copy", direction]);
        for (k, val) in [
            ("--domain-type", OsString::from("appDataContainer")),
            ("--domain-identifier", bundle.into()),
            ("--source", source.into()),
            ("--destination", destination.into()),
        ] {
            v.push(k.into());
            v.push(val);
        }
        v
    }

    /// `device copy to ...`: a local file into the app's data container.
    pub fn copy_to(&self, bundle: &str, local: &Path, remote: &Path) -> Vec<OsString> {
        self.copy("to", bundle, local, remote)
    }

    /// `device copy from ...`: a file of the app's data container to a
    /// local path that must not exist yet (devicectl will not overwrite).
    pub fn copy_from(&self, bundle: &str, remote: &Path, local: &Path) -> Vec<OsString> {
        self.copy("from", bundle, remote, local)
    }

    /// `device process launch --device D --terminate-existing --console
    /// BUNDLE ARGS...`: each argument its own argv entry (no shell between,
    /// so none is quoted or split).
    pub fn launch(&self, bundle: &str, args: &[&str]) -> Vec<OsString> {
        let mut v = self.on_device(&["device", "process", "launch"]);
        v.extend(words(&["--terminate-existing", "--console", bundle]));
        v.extend(words(args));
        v
    }

    /// `device info processes --device D`: what runs on the device, to find
    /// the app's pid when a launch never came back.
    pub fn processes(&self) -> Vec<OsString> {
        self.on_device(&["device", "info", "processes"])
    }

    /// `device process terminate --device D --pid N` (there is no way to
    /// terminate by bundle id).
    pub fn terminate(&self, pid: u32) -> Vec<OsString> {
        let mut v = self.on_device(&["device", "process", "terminate"]);
        v.extend([OsString::from("--pid"), OsString::from(pid.to_string())]);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_stay_separate_and_the_apps_come_last() {
        let d = Devicectl::new("6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41");
        let v = d.launch("dev.pocketbench.probe", &["--spec", "Documents/pocketbench/a b.json"]);
        let s: Vec<&str> = v.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            s,
            [
                "device",
                "process",
                "launch",
                "--device",
                "6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41",
                "--terminate-existing",
                "--console",
                "dev.pocketbench.probe",
                "--spec",
                "Documents/pocketbench/a b.json"
            ]
        );
        let c = d.copy_from("b", Path::new("Documents/pocketbench/result.json"), Path::new("/tmp/x/result.json"));
        assert_eq!(c[..5], words(&["device", "copy", "from", "--device", "6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41"])[..]);
        assert!(c.windows(2).any(|w| w[0] == "--domain-type" && w[1] == "appDataContainer"));
        assert_eq!(d.terminate(1802)[5..], words(&["--pid", "1802"])[..]);
    }
}
