//! devicectl's JSON and errors, on fixtures that follow recorded output
//! (`fixtures/devicectl/README.md` cites each).

use pocketbench_runner_ios::json::{self, DeviceList, Installed, Launched, Processes};
use pocketbench_runner_ios::select::choose;
use pocketbench_runner_ios::DevicectlError;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/devicectl").join(name),
    )
    .unwrap()
}

fn devices(name: &str) -> Vec<json::Device> {
    json::parse::<DeviceList>("list devices", &fixture(name)).unwrap().devices
}

#[test]
fn list_devices_parses_and_the_only_reachable_iphone_is_chosen() {
    let all = devices("list-devices.json");
    assert_eq!(all.len(), 4);
    // The iPad's tunnel is unavailable, the watch is watchOS, the simulator
    // is virtual: the iPhone, whose tunnel is merely `disconnected`, is it.
    let d = choose(&all, None).unwrap();
    assert_eq!(d.identifier, "6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41");
    assert_eq!(d.name(), "Lab iPhone");
    assert_eq!(d.hardware_properties.udid.as_deref(), Some("00008140-001A2B3C4D5E6F70"));
    // By UDID, identifier or name.
    for s in ["00008140-001A2B3C4D5E6F70", "6a1f0c2e-3b7d-4e59-8c21-9f0b3d2a7e41", "Lab iPhone"] {
        assert_eq!(choose(&all, Some(s)).unwrap().identifier, d.identifier, "{s}");
    }
}

#[test]
fn each_way_a_device_cannot_be_used_says_what_to_do() {
    let all = devices("list-devices.json");
    let e = choose(&all, Some("Lab iPad")).unwrap_err();
    assert!(matches!(e, DevicectlError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("reconnect its cable"), "{e}");
    let e = choose(&all, Some("no such phone")).unwrap_err();
    assert!(matches!(e, DevicectlError::NotFound { .. }) && e.to_string().contains("Lab iPad"), "{e}");
    let e = choose(&devices("list-devices-two.json"), None).unwrap_err();
    assert!(matches!(e, DevicectlError::Ambiguous { ref candidates } if candidates.len() == 2), "{e}");
    assert!(e.to_string().contains("`serial`"), "{e}");
    let e = choose(&devices("list-devices-developer-mode-off.json"), None).unwrap_err();
    assert!(matches!(e, DevicectlError::DeveloperModeOff { .. }) && e.to_string().contains("Developer Mode"), "{e}");
    let e = choose(&devices("list-devices-none.json"), None).unwrap_err();
    assert!(matches!(e, DevicectlError::NoDevice { .. }) && e.to_string().contains("connect one by cable"), "{e}");
    assert!(e.is_unavailable());
}

#[test]
fn install_and_launch_results_parse() {
    let i = json::parse::<Installed>("install", &fixture("install-ok.json")).unwrap();
    assert_eq!(i.installed_applications[0].bundle_id.as_deref(), Some("dev.pocketbench.probe"));
    let l = json::parse::<Launched>("launch", &fixture("launch-ok.json")).unwrap();
    assert_eq!(l.process.process_identifier, 1802);
}

#[test]
fn failures_are_classified_with_their_remedy() {
    let err = |what: &str, name: &str| json::parse::<Launched>(what, &fixture(name)).unwrap_err();
    let e = err("launch", "launch-locked.json");
    assert!(matches!(e, DevicectlError::Locked { .. }) && e.to_string().contains("unlock it"), "{e}");
    let e = err("launch", "launch-untrusted.json");
    assert!(matches!(e, DevicectlError::Untrusted { .. }) && e.to_string().contains("VPN & Device Management"), "{e}");
    let e = err("install", "install-failed-3002.json");
    assert!(matches!(e, DevicectlError::InstallFailed { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("not a valid bundle") && text.contains("three apps"), "{text}");
    let e = err("install", "install-device-gone.json");
    assert!(matches!(e, DevicectlError::DeviceGone { .. }) && e.is_unavailable(), "{e}");
    assert!(e.to_string().contains("Connection was invalidated"), "{e}");
    // Not devicectl's JSON at all, and an envelope with neither part.
    let e = json::parse::<Launched>("launch", "Error: xcrun: unable to find utility").unwrap_err();
    assert!(matches!(e, DevicectlError::Output { .. }), "{e}");
    let e = json::parse::<Launched>("launch", r#"{"info": {"outcome": "failed"}}"#).unwrap_err();
    assert!(e.to_string().contains("neither a result nor an error"), "{e}");
}

#[test]
fn running_processes_parse_and_the_app_is_found_by_its_executable_name() {
    let p: Processes = json::parse("info processes", &fixture("info-processes.json")).unwrap();
    assert_eq!(p.running_processes.len(), 4);
    assert_eq!(p.named("PocketbenchProbe"), [1802]);
    // Percent-encoded names decode; a process without an executable and a
    // name that only starts the same match nothing.
    assert_eq!(p.named("Other App"), [1911]);
    assert!(p.named("Pocketbench").is_empty() && p.named("backboard").is_empty());
}
