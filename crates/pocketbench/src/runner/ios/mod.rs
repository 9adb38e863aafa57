//! The iOS runner: each configuration measured on an iPhone or iPad by the
//! pocketbench app (the probe through its C ABI, `pocketbench-probe-ffi`)
//! over `xcrun devicectl` (`pocketbench-runner-ios`). Per job: pick the
//! device from `list devices`, install the app (once, where the profile
//! names an `.app`), copy the spec into the app's data container, launch
//! the app with `--console` and wait for its marker, copy the result back
//! into a fresh folder.
//!
//! The contract with the app (the book's iOS page):
//! - the spec is the JSON `pocketbench probe --spec` reads, at
//!   `Documents/pocketbench/spec.json`; every path in it is relative to the
//!   app's data container, and the app builds the seeded model file where
//!   the spec names it if it is absent, so nothing large is copied;
//! - the app is launched with `--spec Documents/pocketbench/spec.json`,
//!   writes `Documents/pocketbench/result.json` (the JSON `pocketbench probe
//!   --out` writes), prints `[pocketbench] done` or `[pocketbench] error:
//!   MESSAGE`, and exits.
//!
//! A device that is gone, unreachable or not listed is `Unavailable`, which
//! the scheduler retries and then records as failed while a sweep goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use pocketbench_runner_ios::json::{DeviceList, Installed, Processes};
use pocketbench_runner_ios::{select, Console, Devicectl, DevicectlError, Xcrun};

use super::{Failure, Job, Runner};
use crate::device::IosEnergy;
use crate::probe::{self, ProbeResult};

pub mod energy;

/// The contract's paths and names (`pocketbench_runner_ios::contract`):
/// the spec, the result and the models in the app's data container, and
/// the app's executable when the profile names no `.app`.
pub use pocketbench_runner_ios::contract::{DEFAULT_EXECUTABLE, MODELS, RESULT, SPEC, SPEC_ARG};

/// Limit for the short devicectl calls (list, copy, terminate).
const SHORT: Duration = Duration::from_secs(60);
/// Attempts at copying the result back: devicectl's copy can fail or hang
/// over a flaky connection, and each attempt needs a fresh destination.
const COPY_ATTEMPTS: u32 = 3;

/// Runs the pocketbench app on an iPhone or iPad.
pub struct IosRunner {
    device: String,
    xcrun: Xcrun,
    selector: String,
    bundle: String,
    app: Option<PathBuf>,
    installed: Mutex<bool>,
    energy: IosEnergy,
}

/// The `.app` to install: `$POCKETBENCH_IOS_APP`, else the profile's
/// `transport.app`; absent: the app is taken as installed.
pub fn app_path(profile: Option<&Path>) -> Result<Option<PathBuf>, crate::Error> {
    let p = std::env::var_os("POCKETBENCH_IOS_APP").filter(|v| !v.is_empty()).map(PathBuf::from);
    match p.or_else(|| profile.map(Path::to_path_buf)) {
        Some(p) if !p.exists() => Err(crate::Error::usage(format!("the iOS app {} does not exist", p.display()))),
        other => Ok(other),
    }
}

/// A devicectl failure as the scheduler sees it: a device that is gone
/// (or an xcrun that cannot run) is retried, the rest is refused.
fn unavailable(e: DevicectlError) -> Failure {
    if e.is_unavailable() || matches!(e, DevicectlError::NoXcrun { .. }) {
        Failure::Unavailable { reason: e.to_string() }
    } else {
        Failure::Refused { reason: e.to_string() }
    }
}

impl IosRunner {
    /// A runner for `device` through `xcrun` (selector empty: the only
    /// reachable device).
    pub fn new(device: &str, xcrun: Xcrun, selector: String, bundle: String, app: Option<PathBuf>) -> Self {
        IosRunner {
            device: device.into(),
            xcrun,
            selector,
            bundle,
            app,
            installed: Mutex::new(false),
            energy: IosEnergy::None,
        }
    }

    /// Read each launch's energy from the Mac this way.
    pub fn with_energy(mut self, energy: IosEnergy) -> Self {
        self.energy = energy;
        self
    }

    /// The app's executable name, which a hung launch is found by.
    fn executable(&self) -> String {
        self.app
            .as_deref()
            .and_then(|a| a.file_stem())
            .map_or_else(|| DEFAULT_EXECUTABLE.to_string(), |s| s.to_string_lossy().into_owned())
    }

    /// The device to measure, and what a result records of it.
    fn ready(&self) -> Result<(Devicectl, BTreeMap<String, String>), Failure> {
        let list: DeviceList =
            self.xcrun.call("list devices", &Devicectl::list_devices(), SHORT).map_err(unavailable)?;
        let d = select::choose(&list.devices, Some(&self.selector)).map_err(unavailable)?;
        let h = &d.hardware_properties;
        let known = [
            ("identifier", Some(d.identifier.clone())),
            ("udid", h.udid.clone()),
            ("name", d.device_properties.name.clone()),
            ("model", h.marketing_name.clone()),
            ("product-type", h.product_type.clone()),
            ("os", d.device_properties.os_version_number.clone()),
            ("transport", d.connection_properties.transport_type.clone()),
        ];
        let props = known.into_iter().filter_map(|(k, v)| Some((format!("ios.{k}"), v?))).collect();
        Ok((Devicectl::new(&d.identifier), props))
    }

    fn install(&self, ctl: &Devicectl, limit: Duration) -> Result<(), Failure> {
        let Some(app) = &self.app else { return Ok(()) };
        let mut installed = self.installed.lock().unwrap_or_else(|e| e.into_inner());
        if !*installed {
            let got: Installed = self.xcrun.call("install app", &ctl.install(app), limit).map_err(unavailable)?;
            let ids: Vec<&str> = got.installed_applications.iter().filter_map(|a| a.bundle_id.as_deref()).collect();
            if !ids.is_empty() && !ids.contains(&self.bundle.as_str()) {
                return Err(Failure::Refused {
                    reason: format!(
                        "{} installed as {}, not the profile's bundle id {}: set transport.bundle-id",
                        app.display(),
                        ids.join(", "),
                        self.bundle
                    ),
                });
            }
            *installed = true;
        }
        Ok(())
    }

    /// After a launch that never came back: the app's pid from `device info
    /// processes`, terminated (the next launch's `--terminate-existing`
    /// would end it too).
    fn terminate_hung(&self, ctl: &Devicectl) {
        let Ok(running) = self.xcrun.call::<Processes>("info processes", &ctl.processes(), SHORT) else { return };
        for pid in running.named(&self.executable()) {
            let _ = self.xcrun.call::<serde_json::Value>("process terminate", &ctl.terminate(pid), SHORT);
        }
    }

    /// The result copied back into `dir` (a fresh destination each attempt:
    /// devicectl will not overwrite one).
    fn copy_back(&self, ctl: &Devicectl, dir: &Path) -> Result<String, Failure> {
        let mut last = None;
        for attempt in 1..=COPY_ATTEMPTS {
            let dest = dir.join(format!("result-{attempt}.json"));
            match self.xcrun.call::<serde_json::Value>(
                "copy from",
                &ctl.copy_from(&self.bundle, Path::new(RESULT), &dest),
                SHORT,
            ) {
                Ok(_) => {
                    return std::fs::read_to_string(&dest).map_err(|e| Failure::BadOutput { reason: e.to_string() })
                }
                Err(e) => last = Some(e),
            }
        }
        Err(unavailable(last.expect("at least one attempt")))
    }
}

impl Runner for IosRunner {
    fn device(&self) -> &str {
        &self.device
    }

    fn build(&self, engine: probe::EngineKind) -> String {
        let on = if self.selector.is_empty() { "the only reachable iPhone or iPad" } else { self.selector.as_str() };
        let app = match &self.app {
            Some(a) => format!("the app {} ({})", self.bundle, a.display()),
            None => format!("the installed app {}", self.bundle),
        };
        let energy = match self.energy {
            IosEnergy::None => String::new(),
            IosEnergy::Xctrace => ", energy by xctrace's Power Profiler".into(),
            IosEnergy::Battery => ", energy by the battery gauge (pymobiledevice3)".into(),
        };
        format!("{} via {app} on {on}{energy}", engine.name())
    }

    fn measure(&self, job: &Job) -> Result<ProbeResult, Failure> {
        let (ctl, props) = self.ready()?;
        self.install(&ctl, job.timeout.max(SHORT))?;
        let local = tempfile::tempdir().map_err(|e| Failure::Build { reason: e.to_string() })?;
        let spec = job.spec(PathBuf::from(format!("{MODELS}/{}.gguf", job.shape.id())));
        let spec_path = local.path().join("spec.json");
        let text = serde_json::to_string(&spec).map_err(|e| Failure::Build { reason: e.to_string() })?;
        std::fs::write(&spec_path, text).map_err(|e| Failure::Build { reason: e.to_string() })?;
        self.xcrun
            .call::<serde_json::Value>("copy to", &ctl.copy_to(&self.bundle, &spec_path, Path::new(SPEC)), SHORT)
            .map_err(unavailable)?;
        let limit = super::android::backstop(job);
        let udid = props.get("ios.udid").map(String::as_str);
        let (mut session, started) = match energy::begin(self.energy, &self.xcrun, udid, local.path(), limit) {
            None => (None, None),
            Some(Ok(s)) => (Some(s), None),
            Some(Err(why)) => (None, Some(Err(why))),
        };
        if let Some(s) = session.as_mut() {
            s.launched();
        }
        let mut hung = false;
        let console =
            self.xcrun.launch_console(&ctl.launch(&self.bundle, &[SPEC_ARG, SPEC]), limit, &mut || hung = true);
        if let Some(s) = session.as_mut() {
            s.ended();
        }
        if hung {
            self.terminate_hung(&ctl);
            return Err(Failure::Timeout { seconds: limit.as_secs_f64() });
        }
        match console.map_err(unavailable)? {
            Console::Done => {
                let text = self.copy_back(&ctl, local.path())?;
                let mut r = ProbeResult::from_json(&text).map_err(|e| Failure::BadOutput { reason: e.to_string() })?;
                r.device_props.extend(props);
                let runs = r.warmup + r.reps.len() as u32;
                let reading = session.map(|s| s.finish(runs)).or(started);
                energy::apply(&mut r, self.energy, reading);
                Ok(r)
            }
            Console::Failed(message) => Err(Failure::AppError { message }),
            Console::Died(text) => Err(died(&text)),
        }
    }
}

/// What the console said of an app that died.
fn died(text: &str) -> Failure {
    let signal =
        text.to_lowercase().split("signal").nth(1).and_then(|rest| {
            rest.trim_start().split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok())
        });
    match signal {
        Some(9) => Failure::Killed {
            signal: 9,
            hint: ", probably by iOS's memory limit (jetsam: the phys_footprint limit; see the device's JetsamEvent reports)"
                .into(),
        },
        Some(s) => Failure::Killed { signal: s, hint: String::new() },
        None => Failure::AppError { message: text.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_nine_is_jetsam_and_a_silent_end_a_crash() {
        assert!(matches!(died("App terminated due to signal 9."), Failure::Killed { signal: 9, .. }));
        assert!(matches!(died("App terminated due to signal 11."), Failure::Killed { signal: 11, .. }));
        assert!(matches!(died("the app's console ended without"), Failure::AppError { .. }));
    }
}
