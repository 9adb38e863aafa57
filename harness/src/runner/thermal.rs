//! Device temperature, for cooling down between repetitions. Each runner
//! reads its own device (the Android runner `dumpsys thermalservice`, the
//! iOS runner its thermal state); the host reads Linux's thermal zones.

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
    let mut best: Option<Temperature> = None;
    for e in std::fs::read_dir(root).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("thermal_zone") {
            continue;
        }
        let Some(milli) =
            std::fs::read_to_string(e.path().join("temp")).ok().and_then(|t| t.trim().parse::<f64>().ok())
        else {
            continue;
        };
        let kind = std::fs::read_to_string(e.path().join("type")).map(|t| t.trim().to_owned()).unwrap_or_default();
        let t = Temperature { celsius: milli / 1000.0, source: format!("sysfs {name} ({kind})") };
        if best.as_ref().is_none_or(|b| t.celsius > b.celsius) {
            best = Some(t);
        }
    }
    best
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
}
