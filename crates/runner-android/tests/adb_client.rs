//! The real adb client (Debian's `adb`, `.ci/run` installs it) against an
//! emulated device that speaks the adb wire protocol (`support/adbd.rs`):
//! connect, list, shell, push and pull as a first contact with a phone
//! would, each adb server on a private port that the test kills after.
#![allow(clippy::print_stderr, clippy::print_stdout)]

#[path = "support/adbd.rs"]
mod adbd;

use std::ffi::OsString;
use std::time::Duration;

use adbd::{Adbd, Phone};
use pocketbench_runner_android::{choose, Adb, AdbError, State};

const T: Duration = Duration::from_secs(20);

/// An adb client on its own server port; the server is killed on drop.
struct Client {
    adb: Adb,
}

impl Client {
    fn new(serial: &str) -> Client {
        let mut adb = Adb::found(serial).expect("the real adb client (Debian: apt-get install adb)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        adb.server_port = Some(port);
        Client { adb }
    }

    fn args(&self, v: &[&str]) -> Vec<OsString> {
        let mut a = self.adb.server();
        a.extend(v.iter().map(OsString::from));
        a
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.adb.call(&self.args(&["kill-server"]), T);
    }
}

/// The real adb client and Debian's mksh, or `None` (with a note) outside
/// CI where they are not installed; CI must have them (`.ci/run` installs
/// them).
fn tools() -> Option<()> {
    use pocketbench_testkit::{need, on_path};
    let adb = std::env::var_os("ADB").is_some() || on_path("adb");
    need(adb && on_path("mksh"), "the real adb client and mksh", "apt-get install adb mksh").then_some(())
}

fn connected(phone: Phone) -> (Adbd, Client) {
    let d = Adbd::start(phone).unwrap();
    let c = Client::new(&d.serial());
    // The first call starts the private server.
    let _ = c.adb.devices(T).unwrap();
    // An unauthorized phone fails to connect; its test checks the state.
    let _ = c.adb.connect(&d.serial(), T).unwrap();
    (d, c)
}

fn text(o: &[OsString]) -> Vec<String> {
    o.iter().map(|s| s.to_string_lossy().into_owned()).collect()
}

#[test]
fn a_connected_phone_is_listed_and_runs_quoted_commands_unchanged() {
    let Some(()) = tools() else { return };
    let (d, c) = connected(Phone::default());
    let listed = c.adb.devices(T).unwrap().unwrap();
    let me = choose(&listed, &d.serial()).unwrap_or_else(|e| panic!("{e}: {listed:?}"));
    assert_eq!(me.state, State::Device);
    assert_eq!(me.model.as_deref(), Some("Pocket_Emulated_Phone"), "adb turns non-alphanumerics into _");
    assert_eq!(me.product.as_deref(), Some("pocket_emu"));
    assert_eq!(me.device.as_deref(), Some("pocketemu"));
    assert!(me.transport_id.is_some());
    // The only device: an empty serial picks it.
    assert_eq!(choose(&listed, "").unwrap().serial, d.serial());

    // Hostile arguments reach the device shell (mksh) as one argument each
    // and execute nothing.
    let hostile = [
        "a b",
        "it's",
        "$(touch pwned1)",
        "`touch pwned2`",
        "x; touch pwned3",
        "line\nbreak",
        "\"dq\" && touch pwned4",
        "*",
    ];
    let mut args = vec!["printf", "%s|"];
    args.extend(hostile);
    let out = c.adb.call(&c.adb.shell(&args), T).unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, hostile.iter().map(|h| format!("{h}|")).collect::<String>());
    for p in ["pwned1", "pwned2", "pwned3", "pwned4"] {
        assert!(!d.path(p).exists() && !std::path::Path::new(p).exists(), "{p} was created");
    }
    // The device command's exit code comes back (shell protocol v2), and
    // its stderr apart from stdout.
    let out = c.adb.call(&c.adb.shell(&["sh", "-c", "echo out; echo err >&2; exit 7"]), T).unwrap();
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (7, "out\n", "err\n"));

    // push, chmod, run, pull: a path with a space survives each step.
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("probe file");
    // No `#!` line: the host has no /system/bin/sh, and a shell runs a
    // script without one itself.
    std::fs::write(&local, "echo \"ran $1\"\n").unwrap();
    let remote = "/data/local/tmp/pocketbench/probe file";
    let mk = c.adb.call(&c.adb.shell(&["mkdir", "-p", "/data/local/tmp/pocketbench"]), T).unwrap();
    assert_eq!(mk.code, 0, "{mk:?}");
    let push = c.adb.call(&c.adb.push(local.to_str().unwrap(), remote), T).unwrap();
    assert_eq!(push.code, 0, "{push:?}");
    assert!(d.path(remote).is_file());
    let run = c.adb.call(&c.adb.shell(&["chmod", "755", remote]), T).unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    let run = c.adb.call(&c.adb.shell(&[remote, "my spec.json"]), T).unwrap();
    assert_eq!((run.code, run.stdout.as_str()), (0, "ran my spec.json\n"), "{run:?}");
    let back = dir.path().join("back");
    let pull = c.adb.call(&c.adb.pull(remote, back.to_str().unwrap()), T).unwrap();
    assert_eq!(pull.code, 0, "{pull:?}");
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&local).unwrap());
    // A file the device does not have is an error, not an empty file.
    let missing = dir.path().join("missing");
    let pull = c.adb.call(&c.adb.pull("/data/local/tmp/none.json", missing.to_str().unwrap()), T).unwrap();
    assert_ne!(pull.code, 0);
    assert!(!missing.exists());

    // The fake sysfs a test controls is what device commands read.
    d.write("/sys/class/power_supply/battery/voltage_now", "3870000\n");
    let v = c.adb.call(&c.adb.shell(&["cat", "/sys/class/power_supply/battery/voltage_now"]), T).unwrap();
    assert_eq!(v.stdout, "3870000\n");
    assert_eq!(text(&c.adb.shell(&["true"]))[..2], ["-P".to_string(), c.adb.server_port.unwrap().to_string()]);
}

#[test]
fn an_unauthorized_phone_is_listed_with_what_to_do() {
    let Some(()) = tools() else { return };
    let (d, c) = connected(Phone { authorized: false, ..Phone::default() });
    // The key exchange takes the server a moment.
    let mut state = None;
    for _ in 0..50 {
        let listed = c.adb.devices(T).unwrap().unwrap();
        state = listed.iter().find(|l| l.serial == d.serial()).map(|l| l.state.clone());
        if state == Some(State::Unauthorized) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(state, Some(State::Unauthorized));
    let listed = c.adb.devices(T).unwrap().unwrap();
    let e = choose(&listed, &d.serial()).unwrap_err().0;
    assert!(e.contains("is unauthorized") && e.contains("Allow USB debugging"), "{e}");
    let out = c.adb.call(&c.adb.shell(&["true"]), T).unwrap();
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("unauthorized"), "{out:?}");
}

#[test]
fn a_phone_that_drops_fails_its_commands_and_is_no_longer_ready() {
    let Some(()) = tools() else { return };
    let (d, c) = connected(Phone::default());
    assert_eq!(c.adb.call(&c.adb.shell(&["true"]), T).unwrap().code, 0);
    d.kill();
    let mut ready = true;
    for _ in 0..50 {
        let listed = c.adb.devices(T).unwrap().unwrap();
        ready = listed.iter().any(|l| l.serial == d.serial() && l.state.is_ready());
        if !ready {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!ready, "the dropped phone still reads as ready");
    let out = c.adb.call(&c.adb.shell(&["true"]), T).unwrap();
    assert_ne!(out.code, 0, "{out:?}");
}

#[test]
fn a_command_past_its_timeout_is_killed_and_said_so() {
    let Some(()) = tools() else { return };
    let (_d, c) = connected(Phone::default());
    let e = c.adb.call(&c.adb.shell(&["sleep", "30"]), Duration::from_secs(1)).unwrap_err();
    assert!(matches!(e, AdbError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("did not finish within 1 s"), "{e}");
}

/// Prints what the real adb client lists for a ready and an unauthorized
/// emulated phone (the recorded fixtures in `fixtures/` came from this).
#[test]
#[ignore = "prints fixtures: cargo test -p pocketbench-runner-android --test adb_client -- --ignored --nocapture"]
fn print_device_lists() {
    let Some(()) = tools() else { return };
    let (ready, c) = connected(Phone::default());
    let locked = Adbd::start(Phone { authorized: false, ..Phone::default() }).unwrap();
    let _ = c.adb.connect(&locked.serial(), T).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    for v in [&["devices", "-l"][..], &["devices"][..]] {
        let out = c.adb.call(&c.args(v), T).unwrap();
        println!(
            "--- adb {} ({} ready, {} unauthorized)\n{}",
            v.join(" "),
            ready.serial(),
            locked.serial(),
            out.stdout
        );
    }
}
