//! Device temperature, for cooling down between repetitions: Linux's
//! thermal zones (`/sys/class/thermal/thermal_zone*/temp`, millidegrees C),
//! which hosts and Android phones share. The probe reads them around every
//! repetition and cools down before each one where its spec asks
//! ([`Cooling`]); runners read them between repetitions (`gate --measure`).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A temperature reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Temperature {
    /// Degrees Celsius.
    pub celsius: f64,
    /// What was read: "sysfs thermal_zone0 (x86_pkg_temp)".
    pub source: String,
}

/// The hottest of Linux's thermal zones under `root`
/// (`/sys/class/thermal`): each `thermal_zoneN/temp` in millidegrees. `None`
/// when there is none (most VMs).
pub fn hottest_zone(root: &Path) -> Option<Temperature> {
    let zones = std::fs::read_dir(root).ok()?.flatten().filter_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("thermal_zone") {
            return None;
        }
        let milli = std::fs::read_to_string(e.path().join("temp")).ok()?;
        let kind = std::fs::read_to_string(e.path().join("type")).unwrap_or_default();
        Some(ZoneLine { zone: name, milli, kind })
    });
    hottest(zones)
}

/// The hottest sensor under `sys_class` (`/sys/class`): a thermal zone,
/// else an hwmon sensor (hosts whose kernel has hwmon but no zone).
pub fn hottest_sensor(sys_class: &Path) -> Option<Temperature> {
    hottest_zone(&sys_class.join("thermal")).or_else(|| hottest_hwmon(&sys_class.join("hwmon")))
}

/// One thermal zone as read: its directory name, `temp` and `type` as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneLine {
    /// `thermal_zone3`.
    pub zone: String,
    /// The `temp` file: millidegrees C.
    pub milli: String,
    /// The `type` file: "cpu-1-0-usr".
    pub kind: String,
}

/// The hottest of `zones` whose `temp` reads as a number: the one rule the
/// probe (reading the files) and the Android runner (reading them over adb,
/// [`parse_zone_lines`]) share.
pub fn hottest(zones: impl IntoIterator<Item = ZoneLine>) -> Option<Temperature> {
    let mut best: Option<Temperature> = None;
    for z in zones {
        let Ok(milli) = z.milli.trim().parse::<f64>() else { continue };
        let t = Temperature { celsius: milli / 1000.0, source: format!("sysfs {} ({})", z.zone, z.kind.trim()) };
        if best.as_ref().is_none_or(|b| t.celsius > b.celsius) {
            best = Some(t);
        }
    }
    best
}

/// The shell line that prints every thermal zone as `NAME TEMP TYPE`, one a
/// line (a zone whose files cannot be read prints empty fields): what the
/// Android runner runs over adb, its output read by [`parse_zone_lines`].
pub const ZONES_SHELL: &str = "for z in /sys/class/thermal/thermal_zone*; do \
     [ -d \"$z\" ] || continue; \
     echo \"${z##*/} $(cat \"$z/temp\" 2>/dev/null) $(cat \"$z/type\" 2>/dev/null)\"; done";

/// The zones of [`ZONES_SHELL`]'s output.
pub fn parse_zone_lines(text: &str) -> Vec<ZoneLine> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().splitn(3, ' ');
            let zone = f.next()?.to_owned();
            zone.starts_with("thermal_zone").then(|| ZoneLine {
                zone,
                milli: f.next().unwrap_or_default().to_owned(),
                kind: f.next().unwrap_or_default().to_owned(),
            })
        })
        .collect()
}

/// The hottest hwmon sensor under `root` (`/sys/class/hwmon`): each
/// `hwmonN/tempK_input` in millidegrees, named by the chip's `name` and the
/// sensor's `tempK_label` ("sysfs hwmon1 (k10temp Tctl)"). For hosts whose
/// kernel has hwmon but no thermal zone.
pub fn hottest_hwmon(root: &Path) -> Option<Temperature> {
    let mut best: Option<Temperature> = None;
    for chip in std::fs::read_dir(root).ok()?.flatten() {
        let dir = chip.path();
        let name = std::fs::read_to_string(dir.join("name")).map(|n| n.trim().to_owned()).unwrap_or_default();
        let Ok(files) = std::fs::read_dir(&dir) else { continue };
        for f in files.flatten() {
            let file = f.file_name().to_string_lossy().into_owned();
            let Some(sensor) = file.strip_suffix("_input").filter(|s| s.starts_with("temp")) else { continue };
            let Some(milli) = std::fs::read_to_string(f.path()).ok().and_then(|t| t.trim().parse::<f64>().ok()) else {
                continue;
            };
            let label = std::fs::read_to_string(dir.join(format!("{sensor}_label")))
                .map(|l| l.trim().to_owned())
                .unwrap_or_else(|_| sensor.to_owned());
            let t = Temperature {
                celsius: milli / 1000.0,
                source: format!("sysfs {} ({name} {label})", chip.file_name().to_string_lossy()),
            };
            if best.as_ref().is_none_or(|b| t.celsius > b.celsius) {
                best = Some(t);
            }
        }
    }
    best
}

/// Cool the device before each repetition: wait until the hottest zone is
/// at or below `cool_to_c`, for at most `timeout_s` (a runner's
/// `[thermal]` profile section).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cooling {
    /// Start a repetition only at or below this, degrees C.
    pub cool_to_c: f64,
    /// Wait at most this long, seconds; then run and say so (`hot`).
    pub timeout_s: f64,
}

/// The temperatures around one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepThermal {
    /// The hottest zone when the repetition started, degrees C.
    pub start_c: f64,
    /// The hottest zone when it ended.
    pub end_c: f64,
    /// Which zone was hottest at the start: "sysfs thermal_zone3 (cpu-1-0-usr)".
    pub source: String,
    /// Seconds waited to cool down first.
    pub waited_s: f64,
    /// Started above the cooling target because the wait timed out.
    #[serde(default)]
    pub hot: bool,
}

/// How often a cooling wait reads the zones again.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Where the probe reads thermal zones: `sys/class/thermal` under the sysfs
/// root ([`crate::meter::sysfs_root`]).
pub fn zones_root() -> std::path::PathBuf {
    crate::meter::sysfs_root().join("sys/class/thermal")
}

/// Before a repetition: wait (polling every `poll`) until `cooling` is met
/// or its timeout passes, and return the starting reading; `None` where the
/// device has no thermal zone.
pub fn before_rep(root: &Path, cooling: Option<Cooling>, poll: std::time::Duration) -> Option<RepThermal> {
    let started = std::time::Instant::now();
    let mut t = hottest_zone(root)?;
    let mut hot = false;
    if let Some(c) = cooling {
        while t.celsius > c.cool_to_c {
            if started.elapsed().as_secs_f64() >= c.timeout_s {
                hot = true;
                break;
            }
            std::thread::sleep(poll);
            t = hottest_zone(root)?;
        }
    }
    Some(RepThermal {
        start_c: t.celsius,
        end_c: t.celsius,
        source: t.source,
        waited_s: started.elapsed().as_secs_f64(),
        hot,
    })
}

/// After a repetition: its end temperature.
pub fn after_rep(root: &Path, t: &mut Option<RepThermal>) {
    if let (Some(t), Some(now)) = (t.as_mut(), hottest_zone(root)) {
        t.end_c = now.celsius;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_hottest_zone_and_none_without_zones() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(hottest_zone(d.path()), None);
        for (i, kind, milli) in [(0, "acpitz", "27800"), (1, "x86_pkg_temp", "41250\n"), (2, "broken", "n/a")] {
            let z = d.path().join(format!("thermal_zone{i}"));
            std::fs::create_dir(&z).unwrap();
            std::fs::write(z.join("type"), kind).unwrap();
            std::fs::write(z.join("temp"), milli).unwrap();
        }
        let t = hottest_zone(d.path()).unwrap();
        assert_eq!(t.celsius, 41.25);
        assert_eq!(t.source, "sysfs thermal_zone1 (x86_pkg_temp)");
        assert_eq!(hottest_zone(&d.path().join("missing")), None);
    }

    #[test]
    fn zones_read_over_a_shell_pick_the_same_zone_as_the_files() {
        let text = "thermal_zone0 27800 acpitz\nthermal_zone1 41250 cpu-1-0-usr\nthermal_zone2  broken\nnoise\n";
        let zones = parse_zone_lines(text);
        assert_eq!(zones.len(), 3);
        let t = hottest(zones).unwrap();
        assert_eq!((t.celsius, t.source.as_str()), (41.25, "sysfs thermal_zone1 (cpu-1-0-usr)"));
        assert_eq!(hottest(parse_zone_lines("")), None);
    }

    #[test]
    fn hwmon_sensors_are_read_with_their_chip_and_label() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(hottest_hwmon(d.path()), None);
        let chip = d.path().join("hwmon2");
        std::fs::create_dir(&chip).unwrap();
        std::fs::write(chip.join("name"), "k10temp\n").unwrap();
        std::fs::write(chip.join("temp1_input"), "48125\n").unwrap();
        std::fs::write(chip.join("temp1_label"), "Tctl\n").unwrap();
        std::fs::write(chip.join("temp3_input"), "39000\n").unwrap();
        std::fs::write(chip.join("fan1_input"), "90000\n").unwrap();
        let t = hottest_hwmon(d.path()).unwrap();
        assert_eq!((t.celsius, t.source.as_str()), (48.125, "sysfs hwmon2 (k10temp Tctl)"));
    }

    fn zone(root: &Path, milli: &str) {
        let z = root.join("thermal_zone0");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("type"), "cpu-0-0-usr").unwrap();
        std::fs::write(z.join("temp.tmp"), milli).unwrap();
        std::fs::rename(z.join("temp.tmp"), z.join("temp")).unwrap();
    }

    #[test]
    fn a_repetition_waits_for_the_device_to_cool_and_says_when_it_gave_up() {
        let poll = std::time::Duration::from_millis(20);
        let d = tempfile::tempdir().unwrap();
        assert_eq!(before_rep(d.path(), None, poll), None, "no zone, no reading");
        zone(d.path(), "50000");
        let plain = before_rep(d.path(), None, poll).unwrap();
        assert_eq!((plain.start_c, plain.hot), (50.0, false));
        assert_eq!(plain.source, "sysfs thermal_zone0 (cpu-0-0-usr)");

        // Too hot for the whole timeout: it runs anyway, marked hot.
        let c = Cooling { cool_to_c: 40.0, timeout_s: 0.2 };
        let hot = before_rep(d.path(), Some(c), poll).unwrap();
        assert!(hot.hot && hot.start_c == 50.0 && hot.waited_s >= 0.2, "{hot:?}");

        // Cools to 35 C after 150 ms: it waits for that, and no longer.
        let root = d.path().to_path_buf();
        let cooler = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            zone(&root, "35000");
        });
        let c = Cooling { cool_to_c: 40.0, timeout_s: 30.0 };
        let mut cooled = before_rep(d.path(), Some(c), poll);
        cooler.join().unwrap();
        let t = cooled.as_ref().unwrap();
        assert!(!t.hot && t.start_c == 35.0 && (0.1..5.0).contains(&t.waited_s), "{t:?}");
        zone(d.path(), "47500");
        after_rep(d.path(), &mut cooled);
        assert_eq!(cooled.unwrap().end_c, 47.5);
    }
}

/// An app's own thermal state, as Apple's `ProcessInfo.thermalState` names
/// it: nominal, fair, serious, critical.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppState {
    /// Within normal limits.
    Nominal,
    /// Slightly elevated.
    Fair,
    /// High: the system is reducing performance.
    Serious,
    /// Critical: the app should reduce its work at once.
    Critical,
}

impl AppState {
    /// From `ProcessInfo.ThermalState`'s raw value (0 nominal .. 3 critical).
    pub fn from_raw(v: i32) -> Option<AppState> {
        Some(match v {
            0 => AppState::Nominal,
            1 => AppState::Fair,
            2 => AppState::Serious,
            3 => AppState::Critical,
            _ => return None,
        })
    }
}

/// The app's thermal state at the start and end of one repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppThermal {
    /// When the repetition started.
    pub start: AppState,
    /// When it ended.
    pub end: AppState,
}

/// Where the app's thermal state is read from: set by an embedding app
/// (through the C ABI's callback), unset in a probe process.
static APP_STATE: std::sync::RwLock<Option<AppStateSource>> = std::sync::RwLock::new(None);

/// A function that reads the app's thermal state.
pub type AppStateSource = fn() -> Option<AppState>;

/// Read the app's thermal state through `source` at the start and end of
/// every repetition from now on (`None`: stop).
pub fn set_app_state_source(source: Option<AppStateSource>) {
    if let Ok(mut s) = APP_STATE.write() {
        *s = source;
    }
}

/// The app's thermal state now, where a source is set and answers.
pub fn app_state() -> Option<AppState> {
    APP_STATE.read().ok().and_then(|s| *s).and_then(|f| f())
}
