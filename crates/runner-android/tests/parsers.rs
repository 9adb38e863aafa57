//! The parsers against recorded adb output and outputs written to the
//! formats of adb's and Android's sources (`fixtures/README.md` says which
//! is which).

use pocketbench_runner_android::devices::{parse_devices, DevicesError};
use pocketbench_runner_android::facts::{parse_battery, parse_getprop, Props, Status};
use pocketbench_runner_android::{choose, State};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

#[test]
fn recorded_device_lists_parse_in_both_forms() {
    for name in ["adb-devices-l.recorded.txt", "adb-devices.recorded.txt"] {
        let l = parse_devices(&fixture(name)).unwrap();
        assert_eq!(l.len(), 2, "{name}");
        assert_eq!((l[0].serial.as_str(), &l[0].state), ("127.0.0.1:37573", &State::Device));
        assert_eq!((l[1].serial.as_str(), &l[1].state), ("127.0.0.1:38979", &State::Unauthorized));
    }
    let l = parse_devices(&fixture("adb-devices-l.recorded.txt")).unwrap();
    assert_eq!(l[0].model.as_deref(), Some("Pocket_Emulated_Phone"));
    assert_eq!(l[0].product.as_deref(), Some("pocket_emu"));
    assert_eq!(l[0].device.as_deref(), Some("pocketemu"));
    assert_eq!((l[0].transport_id, l[1].transport_id), (Some(1), Some(2)));
    assert_eq!(l[1].model, None);

    let off = parse_devices(&fixture("adb-devices-l-offline.recorded.txt")).unwrap();
    assert_eq!(off.len(), 1);
    assert_eq!(off[0].state, State::Offline);
    let e = choose(&off, "127.0.0.1:15555").unwrap_err().0;
    assert!(e.contains("is offline") && e.contains("adb reconnect offline"), "{e}");

    let none = parse_devices(&fixture("adb-devices-l-none.recorded.txt")).unwrap();
    assert!(none.is_empty());
    assert!(choose(&none, "").unwrap_err().0.contains("no Android device is attached"));
}

#[test]
fn every_state_of_the_usb_format_and_what_to_do() {
    let l = parse_devices(&fixture("adb-devices-l-usb.format.txt")).unwrap();
    let states: Vec<&str> = l.iter().map(|d| d.state.name()).collect();
    assert_eq!(states[0], "device");
    assert_eq!(states[1], "unauthorized");
    assert!(states[2].starts_with("no permissions (missing udev rules?") && states[2].ends_with("device.html]"));
    assert_eq!(&states[3..], ["recovery", "offline", "device"]);
    assert_eq!(l[0].devpath.as_deref(), Some("usb:1-1.2"));
    assert_eq!(l[2].devpath.as_deref(), Some("usb:1-1.4"));
    assert_eq!(l[3].serial, "(no serial number)");
    assert_eq!(l[5].serial, "very-long-serial-name-of-a-farm-device:5555");
    assert_eq!(l[5].model.as_deref(), Some("SM_S938B"));
    assert_eq!(l.iter().map(|d| d.transport_id.unwrap()).collect::<Vec<_>>(), [3, 4, 5, 6, 7, 8]);
    for d in &l {
        assert_eq!(d.state.advice().is_none(), d.state.is_ready(), "{d:?}");
    }
    assert!(l[2].state.advice().unwrap().contains("udev"));
    assert!(l[3].state.advice().unwrap().contains("not booted"));
    // Several devices and no serial: the user must pick one.
    let e = choose(&l, "").unwrap_err().0;
    assert!(e.contains("6 Android devices are attached") && e.contains("`serial`"), "{e}");
    assert_eq!(choose(&l, "R5CX20ABCDE").unwrap().model.as_deref(), Some("PJZ110"));
    assert!(choose(&l, "absent:5555").unwrap_err().0.contains("adb connect absent:5555"));
}

#[test]
fn not_a_device_list_is_an_error() {
    assert!(matches!(parse_devices("error: no devices/emulators found\n"), Err(DevicesError::NoHeader(_))));
}

#[test]
fn getprop_gives_model_soc_android_and_abi() {
    let p = parse_getprop(&fixture("getprop.format.txt"));
    assert_eq!(p.len(), 13);
    assert_eq!(p["persist.sys.empty"], "");
    let f = Props::from_map(&p);
    assert_eq!(f.model.as_deref(), Some("PJZ110"));
    assert_eq!(f.manufacturer.as_deref(), Some("OnePlus"));
    assert_eq!(f.soc.as_deref(), Some("SM8750"), "ro.soc.model first");
    assert_eq!((f.android.as_deref(), f.sdk), (Some("15"), Some(35)));
    assert!(f.runs_arm64());
    // Before Android 12 there is no ro.soc.model: the board platform.
    let mut old = p.clone();
    old.remove("ro.soc.model");
    assert_eq!(Props::from_map(&old).soc.as_deref(), Some("sun"));
}

#[test]
fn dumpsys_battery_says_level_charger_and_whether_it_is_real() {
    let b = parse_battery(&fixture("dumpsys-battery-usb.format.txt")).unwrap();
    assert_eq!(b.powered_by, ["usb"]);
    assert_eq!(b.status, Status::Charging);
    assert!(b.on_charger() && !b.updates_stopped);
    assert_eq!((b.level, b.voltage_v, b.temperature_c), (Some(0.81), Some(4.213), Some(31.2)));
    let u = parse_battery(&fixture("dumpsys-battery-unplugged.format.txt")).unwrap();
    assert!(u.updates_stopped, "after `dumpsys battery unplug` the figures are set, not read");
    assert!(!u.on_charger());
    assert_eq!(u.status, Status::Discharging);
    assert!(parse_battery("Can't find service: battery\n").is_err());
}
