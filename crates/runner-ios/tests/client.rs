//! The devicectl client against the stand-in `xcrun` (tests/support/xcrun),
//! which answers with the fixtures' JSON and devicectl's exit codes: every
//! call the runner makes, and each failure it must name.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pocketbench_runner_ios::json::{DeviceList, Installed};
use pocketbench_runner_ios::select::choose;
use pocketbench_runner_ios::{Console, Devicectl, DevicectlError, Xcrun};

const BUNDLE: &str = "dev.pocketbench.probe";

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// A probe as the stand-in runs it: writes a result where --out says.
fn fake_probe(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("probe");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn xcrun(dir: &Path, fail: &str, probe: &Path) -> Xcrun {
    Xcrun::at(here().join("support/xcrun"))
        .env("XCRUN_STANDIN_FIXTURES", here().join("fixtures/devicectl"))
        .env("XCRUN_STANDIN_HOME", dir.join("device"))
        .env("XCRUN_STANDIN_FAIL", fail)
        .env("XCRUN_STANDIN_PROBE", probe)
}

const WRITES_RESULT: &str = r#"while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$(dirname "$out")" && echo '{"measured": true}' > "$out""#;

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("device/calls")).unwrap_or_default().lines().map(String::from).collect()
}

#[test]
fn the_whole_flow_spec_in_launch_markers_result_out() {
    let d = tempfile::tempdir().unwrap();
    let x = xcrun(d.path(), "", &fake_probe(d.path(), WRITES_RESULT));
    let short = Duration::from_secs(20);
    let list: DeviceList = x.call("list devices", &Devicectl::list_devices(), short).unwrap();
    let device = choose(&list.devices, None).unwrap();
    let ctl = Devicectl::new(&device.identifier);
    let installed: Installed = x.call("install", &ctl.install(Path::new("/tmp/PocketbenchProbe.app")), short).unwrap();
    assert_eq!(installed.installed_applications[0].bundle_id.as_deref(), Some(BUNDLE));
    let spec = d.path().join("spec.json");
    std::fs::write(&spec, "{}").unwrap();
    let remote = Path::new("Documents/pocketbench/spec.json");
    x.call::<serde_json::Value>("copy to", &ctl.copy_to(BUNDLE, &spec, remote), short).unwrap();
    let console = x
        .launch_console(&ctl.launch(BUNDLE, &["--spec", "Documents/pocketbench/spec.json"]), short, &mut || {})
        .unwrap();
    assert_eq!(console, Console::Done);
    let local = d.path().join("fresh").join("result.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    let from = ctl.copy_from(BUNDLE, Path::new("Documents/pocketbench/result.json"), &local);
    x.call::<serde_json::Value>("copy from", &from, short).unwrap();
    assert_eq!(std::fs::read_to_string(&local).unwrap().trim(), r#"{"measured": true}"#);
    // devicectl will not overwrite: a second copy into the same path fails.
    let again = x.call::<serde_json::Value>("copy from", &from, short).unwrap_err();
    assert!(again.to_string().contains("already exists"), "{again}");
    // Every call carried --json-output before its options, and the app's
    // arguments came last, untouched.
    let log = calls(d.path());
    assert!(log.iter().all(|l| l.contains("--json-output")), "{log:#?}");
    let launch = log.iter().find(|l| l.contains("process launch")).unwrap();
    assert!(launch.ends_with(&format!("--console {BUNDLE} --spec Documents/pocketbench/spec.json")), "{launch}");
}

#[test]
fn each_failure_is_named() {
    let d = tempfile::tempdir().unwrap();
    let probe = fake_probe(d.path(), WRITES_RESULT);
    let short = Duration::from_secs(20);
    let ctl = Devicectl::new("6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41");
    let list = |fail: &str| -> Result<(), DevicectlError> {
        let l: DeviceList = xcrun(d.path(), fail, &probe).call("list devices", &Devicectl::list_devices(), short)?;
        choose(&l.devices, None).map(|_| ())
    };
    assert!(matches!(list("none"), Err(DevicectlError::NoDevice { .. })));
    assert!(matches!(list("two"), Err(DevicectlError::Ambiguous { .. })));
    assert!(matches!(list("devmode"), Err(DevicectlError::DeveloperModeOff { .. })));
    let e = xcrun(d.path(), "limit", &probe).call::<Installed>("install", &ctl.install(Path::new("a.app")), short);
    assert!(matches!(e, Err(DevicectlError::InstallFailed { .. })), "{e:?}");
    let launch = ctl.launch(BUNDLE, &["--spec", "Documents/pocketbench/spec.json"]);
    for (fail, want) in [("locked", "locked"), ("untrusted", "not trusted")] {
        let e = xcrun(d.path(), fail, &probe).launch_console(&launch, short, &mut || {}).unwrap_err();
        assert!(e.to_string().contains(want), "{fail}: {e}");
    }
    let died = xcrun(d.path(), "crash", &probe).launch_console(&launch, short, &mut || {}).unwrap();
    assert!(matches!(died, Console::Died(ref m) if m.contains("signal 9")), "{died:?}");
    let from = ctl.copy_from(BUNDLE, Path::new("Documents/pocketbench/result.json"), &d.path().join("r.json"));
    let gone = xcrun(d.path(), "gone", &probe).call::<serde_json::Value>("copy from", &from, short).unwrap_err();
    assert!(gone.is_unavailable(), "{gone}");
    // The app's own error marker comes back as its message.
    let failing = fake_probe(d.path(), "echo 'invalid probe spec: reps must be between 1 and 1000' >&2; exit 2");
    let spec = d.path().join("spec.json");
    std::fs::write(&spec, "{}").unwrap();
    let x = xcrun(d.path(), "", &failing);
    x.call::<serde_json::Value>(
        "copy to",
        &ctl.copy_to(BUNDLE, &spec, Path::new("Documents/pocketbench/spec.json")),
        short,
    )
    .unwrap();
    let c = x.launch_console(&launch, short, &mut || {}).unwrap();
    assert!(matches!(c, Console::Failed(ref m) if m.contains("reps must be")), "{c:?}");
    // No xcrun at all.
    let e = Xcrun::at("/nonexistent/xcrun").call::<DeviceList>("list devices", &Devicectl::list_devices(), short);
    assert!(matches!(e, Err(DevicectlError::NoXcrun { .. })), "{e:?}");
}

#[test]
fn a_launch_that_hangs_is_killed_with_its_process_group_and_terminated_on_the_device() {
    let d = tempfile::tempdir().unwrap();
    let x = xcrun(d.path(), "hang", &fake_probe(d.path(), WRITES_RESULT));
    let launch = Devicectl::new("D").launch(BUNDLE, &["--spec", "s.json"]);
    let started = Instant::now();
    let mut terminated = false;
    let e = x.launch_console(&launch, Duration::from_millis(700), &mut || terminated = true).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "the timeout held: {:?}", started.elapsed());
    assert!(terminated, "the app was to be terminated on the device");
    assert!(e.is_unavailable() && e.to_string().contains("killed"), "{e}");
    // The stand-in's `sleep 1000` went with its process group.
    if cfg!(target_os = "linux") {
        let sleeping = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .any(|p| std::fs::read(p.path().join("cmdline")).is_ok_and(|c| c == b"sleep\x001000\x00"))
        };
        let t = Instant::now();
        while sleeping() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!sleeping(), "the hung launch's child outlived the timeout");
    }
}
