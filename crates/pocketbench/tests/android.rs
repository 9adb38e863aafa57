//! End to end on an emulated Android phone: `pocketbench run --device
//! android-any` pushes the probe (this very build, which the emulated phone
//! can run) over the real adb client to an adbd that speaks adb's wire
//! protocol (`runner-android/tests/support/adbd.rs`), runs it under mksh,
//! and reads speed, peak memory and energy from a fake battery rail.
#![allow(clippy::print_stderr)]

#[path = "../../runner-android/tests/support/adbd.rs"]
mod adbd;

use std::time::Duration;

use adbd::{Adbd, Phone};
use pocketbench_runner_android::Adb;

/// The real adb client and mksh: a skip outside CI, a failure under it.
fn tools() -> bool {
    use pocketbench_testkit::{need, on_path};
    need(on_path("adb") && on_path("mksh"), "the real adb client and mksh", "apt-get install adb mksh")
}

/// A phone on battery drawing a constant 4.0 V x 0.625 A = 2.5 W.
fn on_battery(d: &Adbd) {
    for (f, v) in
        [("type", "Battery"), ("status", "Discharging"), ("voltage_now", "4000000"), ("current_now", "625000")]
    {
        d.write(&format!("/sys/class/power_supply/battery/{f}"), &format!("{v}\n"));
    }
}

struct Server {
    adb: Adb,
}

impl Server {
    fn new() -> Server {
        let mut adb = Adb::found("").unwrap();
        adb.server_port = Some(std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
        let _ = adb.devices(Duration::from_secs(20)).unwrap();
        Server { adb }
    }

    fn port(&self) -> String {
        self.adb.server_port.unwrap().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut a = self.adb.server();
        a.push("kill-server".into());
        let _ = self.adb.call(&a, Duration::from_secs(20));
    }
}

/// An emulated phone on battery, connected to a private adb server, and a
/// scratch folder; `None` (skipped, saying so) without adb and mksh.
fn connected_phone() -> Option<(Adbd, Server, tempfile::TempDir)> {
    if !tools() {
        return None;
    }
    let d = Adbd::start(Phone::default()).unwrap();
    on_battery(&d);
    let server = Server::new();
    server.adb.connect(&d.serial(), Duration::from_secs(20)).unwrap().unwrap();
    Some((d, server, tempfile::tempdir().unwrap()))
}

fn pocketbench(server: &Server, data: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_pocketbench"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("ANDROID_ADB_SERVER_PORT", server.port())
        .env("POCKETBENCH_ANDROID_PROBE", env!("CARGO_BIN_EXE_pocketbench"))
        .env("POCKETBENCH_DATA_DIR", data)
        .env_remove("POCKETBENCH_SYSFS_ROOT");
    c
}

#[test]
fn run_on_android_any_measures_through_the_pushed_probe_with_energy_from_the_rail() {
    let Some((d, server, data)) = connected_phone() else { return };
    let out = pocketbench(&server, data.path())
        .args(["run", "--preset", "smollm2-135m", "--device", "android-any", "--json"])
        .args(["--prompt", "16", "--gen", "8", "--reps", "1", "--threads", "2", "--timeout", "600"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["provenance"], "measured", "{r}");
    assert_eq!(r["device"], "android-any");
    assert!(r["decode_tok_s"].as_f64().unwrap() > 0.0);
    assert!(r["peak_mem_increase_mb"].as_f64().unwrap() > 10.0, "smollm2-135m's weights alone are ~80 MB");
    let method = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(method.starts_with("measured") && method.contains("power_supply"), "{method}");
    // The one summarized repetition (a contended or drifted one before it
    // is kept in the result, retaken).
    let reps = r["measurement"]["probe"]["reps"].as_array().unwrap();
    let kept: Vec<_> = reps.iter().filter(|x| x["retaken"] != true).collect();
    assert_eq!(kept.len(), 1, "{r}");
    let rep = &kept[0]["energy"];
    let (j, s) = (rep["joules"].as_f64().unwrap(), rep["seconds"].as_f64().unwrap());
    let power = r["avg_power_w"].as_f64().unwrap();
    assert!((power / 2.5 - 1.0).abs() < 0.05, "average power {power} W from a 2.5 W rail");
    // Gross: the rail's integral over the measured time; net: minus the
    // idle draw, which on a constant rail is all of it.
    let gross = r["energy_gross_j_per_run"].as_f64().unwrap();
    assert!((gross - j).abs() < 1e-9 && (gross / (2.5 * s) - 1.0).abs() < 0.05, "{gross} J over {s} s");
    let net = r["energy_j_per_run"].as_f64().unwrap();
    assert!(net.abs() < 0.05 * gross, "net {net} J of a gross {gross} J on a constant rail");
    let idle = &r["measurement"]["probe"]["idle_energy"];
    assert!((idle["joules"].as_f64().unwrap() / idle["seconds"].as_f64().unwrap() / 2.5 - 1.0).abs() < 0.05);
    assert!(r["methods"]["energy_j_per_run"].as_str().unwrap().contains("net: gross minus the idle draw"), "{r}");
    // What the runner read of the phone, beside the probe's own facts.
    let props = &r["measurement"]["probe"]["device_props"];
    assert_eq!(props["android.model"], "Pocket Emulated Phone", "{props}");
    assert_eq!(props["android.serial"], d.serial().as_str(), "{props}");
    // Nothing is left on the phone but the probe and the model.
    let left: Vec<_> =
        std::fs::read_dir(d.path("/data/local/tmp/pocketbench")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| n == "probe" || n == "models"), "{left:?}");
}

#[test]
fn a_named_phone_without_a_serial_and_a_missing_probe_are_refused_before_anything_runs() {
    if !tools() {
        return;
    }
    let server = Server::new();
    let data = tempfile::tempdir().unwrap();
    let out = pocketbench(&server, data.path())
        .args(["run", "--preset", "smollm2-135m", "--device", "oneplus-13"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("names no adb serial") && stderr.contains("--device android-any"), "{stderr}");
    let out = pocketbench(&server, data.path())
        .env("POCKETBENCH_ANDROID_PROBE", "/nonexistent/probe")
        .args(["run", "--preset", "smollm2-135m", "--device", "android-any"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/probe does not exist"), "{stderr}");
}

fn tiny_sweep(dir: &std::path::Path) -> std::path::PathBuf {
    let f = dir.join("tiny-android.toml");
    std::fs::write(
        &f,
        "[sweep]\nname = \"tiny-android\"\ndevices = [\"android-any\"]\n[workload]\nprompt = 16\ngen = 8\n\
         [space]\nlayers = [1, 2]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\ncontext = 256\n",
    )
    .unwrap();
    f
}

fn results(out: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

#[test]
fn a_sweep_measures_on_the_phone_and_a_phone_that_drops_is_retried_then_recorded_as_failed() {
    let Some((d, server, data)) = connected_phone() else { return };
    let sweep = tiny_sweep(data.path());
    let sweep_into = |out: &str, extra: &[&str]| {
        let out = data.path().join(out);
        let run = pocketbench(&server, data.path())
            .arg("sweep")
            .arg(&sweep)
            .args(["--measure", "all", "--threads", "1", "--quiet"])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        results(&out)
    };
    let v = sweep_into("out", &["--reps", "2"]);
    let recs = v["results"].as_array().unwrap();
    assert_eq!(recs.len(), 2);
    for r in recs {
        assert_eq!((r["device"].as_str(), r["provenance"].as_str()), (Some("android-any"), Some("measured")), "{r}");
        assert!(r["methods"]["energy_j_per_run"].as_str().unwrap().starts_with("measured"), "{r}");
    }
    assert!(v["failures"].as_array().unwrap().is_empty());

    // The phone drops off before the next sweep: each job is retried, then
    // recorded as failed, and the sweep still finishes with its predictions.
    d.kill();
    let v = sweep_into("out2", &["--reps", "1", "--retries", "1"]);
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "{v}");
    for f in failures {
        assert_eq!(f["failure"]["kind"], "unavailable", "{f}");
        assert_eq!(f["attempts"], 2, "{f}");
    }
    assert!(v["results"].as_array().unwrap().iter().all(|r| r["provenance"] == "predicted"));
}

/// `pocketbench run --json` of a one-layer shape at 16+8 on android-any.
fn run_tiny(c: &mut std::process::Command, reps: u32, extra: &[&str]) -> std::process::Output {
    c.args(["run", "--hidden", "128", "--layers", "1", "--head-dim", "32", "--kv-heads", "2", "--ffn", "256"])
        .args(["--vocab", "512", "--context", "256", "--device", "android-any", "--json"])
        .args(["--prompt", "16", "--gen", "8", "--threads", "1", "--reps"])
        .arg(reps.to_string())
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_charging_phone_is_measured_without_energy_and_says_why() {
    let Some((d, server, data)) = connected_phone() else { return };
    d.write("/sys/class/power_supply/battery/status", "Charging\n");
    let out = run_tiny(&mut pocketbench(&server, data.path()), 1, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["provenance"], "measured");
    let method = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(method.starts_with("not measured") && method.contains("not discharging"), "{method}");
}

#[test]
fn the_quick_sweep_measures_its_first_candidate_on_the_phone() {
    let Some((_d, server, data)) = connected_phone() else { return };
    let out = data.path().join("quick");
    let run = pocketbench(&server, data.path())
        .args(["sweep", "sweeps/quick.toml", "--devices", "android-any", "--measure", "1", "--quiet"])
        .args(["--reps", "1", "--prompt", "32", "--gen", "8", "--threads", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v = results(&out);
    let recs = v["results"].as_array().unwrap();
    assert_eq!(recs.len(), 8, "the quick sweep's eight configurations, on the phone only");
    let measured: Vec<_> = recs.iter().filter(|r| r["provenance"] == "measured").collect();
    assert_eq!(measured.len(), 1, "{v}");
    let r = measured[0];
    assert_eq!(r["device"], "android-any");
    assert!(r["decode_tok_s"].as_f64().unwrap() > 0.0 && r["avg_power_w"].as_f64().unwrap() > 2.0, "{r}");
    assert!(v["failures"].as_array().unwrap().is_empty(), "{v}");
}

/// A profile folder holding android-any with `from` replaced by `to`.
fn android_any_as(dir: &std::path::Path, from: &str, to: &str) -> std::path::PathBuf {
    let profiles = dir.join("devices");
    std::fs::create_dir(&profiles).unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../devices/android-any.toml");
    let text = std::fs::read_to_string(root).unwrap();
    assert!(text.contains(from), "android-any.toml has no `{from}`");
    std::fs::write(profiles.join("android-any.toml"), text.replace(from, to)).unwrap();
    profiles
}

#[test]
fn a_phone_that_stays_hot_is_waited_for_then_measured_and_marked_hot() {
    let Some((d, server, data)) = connected_phone() else { return };
    // android-any with a 2 s cooling timeout, and a phone stuck at 45 C.
    let profiles = android_any_as(data.path(), "cool-timeout-s = 180", "cool-timeout-s = 2");
    d.write("/sys/class/thermal/thermal_zone0/type", "cpu-1-0-usr\n");
    d.write("/sys/class/thermal/thermal_zone0/temp", "45000\n");
    // Two CPUs' clusters, as a phone's sysfs gives them.
    d.write("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3532800\n");
    d.write("/sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq", "4320000\n");
    let out = run_tiny(pocketbench(&server, data.path()).arg("--devices-dir").arg(&profiles), 2, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for rep in r["measurement"]["probe"]["reps"].as_array().unwrap() {
        let t = &rep["thermal"];
        assert_eq!(t["source"], "sysfs thermal_zone0 (cpu-1-0-usr)", "{r}");
        assert_eq!(
            (t["start_c"].as_f64(), t["end_c"].as_f64(), t["hot"].as_bool()),
            (Some(45.0), Some(45.0), Some(true))
        );
        assert!(t["waited_s"].as_f64().unwrap() >= 2.0, "{t}");
    }
    assert_eq!(r["measurement"]["probe"]["host"]["cpu_max_khz"], serde_json::json!([3532800, 4320000]), "{r}");
    let method = r["methods"]["thermal"].as_str().unwrap();
    assert!(method.contains("cooled to 37 C (at most 2 s) before each; 2 repetition(s) started hot"), "{method}");
}

#[test]
fn devices_lists_which_configured_phones_are_attached() {
    let Some((d, server, data)) = connected_phone() else { return };
    let out = pocketbench(&server, data.path()).args(["devices"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let serial = d.serial();
    assert!(text.contains(&format!("phones over adb: {serial} (")), "{text}");
    assert!(text.contains(&format!("android-any        measures {serial}")), "{text}");
    assert!(text.contains("no serial set: put the attached phone's serial in its [transport] serial"), "{text}");
    let out = pocketbench(&server, data.path()).args(["devices", "--json"]).output().unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let any = rows.as_array().unwrap().iter().find(|r| r["id"] == "android-any").unwrap();
    assert_eq!(any["attached_serial"], serial.as_str(), "{any}");
    let host = rows.as_array().unwrap().iter().find(|r| r["id"] == "host").unwrap();
    assert!(host.get("attached_serial").is_none() && host.get("attached_why_not").is_none(), "{host}");
    // The phone goes away: the profile says why it cannot measure.
    d.kill();
    let out = pocketbench(&server, data.path()).args(["devices", "--json"]).output().unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let any = rows.as_array().unwrap().iter().find(|r| r["id"] == "android-any").unwrap();
    assert!(any["attached_why_not"].as_str().is_some(), "{any}");
    // --offline asks nothing.
    let out = pocketbench(&server, data.path()).args(["devices", "--offline"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("phones over adb"));
}

/// Whether this machine's kernel runs AArch64 executables through
/// qemu-aarch64 (a `binfmt_misc` entry for the AArch64 ELF header, as
/// `.ci/run` registers where it may).
fn binfmt_aarch64() -> bool {
    let Ok(entries) = std::fs::read_dir("/proc/sys/fs/binfmt_misc") else { return false };
    entries.flatten().any(|e| {
        std::fs::read_to_string(e.path())
            .is_ok_and(|t| t.starts_with("enabled") && t.contains("magic 7f454c460201010000000000000000000200b700"))
    })
}

/// The static AArch64 probe, the very file a phone gets, measured through
/// the real runner and adb on an emulated arm64 phone. `.ci/run` builds it
/// and names it in `POCKETBENCH_STATIC_PROBE`; the emulated phone's
/// commands run on this host's kernel, which runs AArch64 executables
/// through qemu-aarch64 registered with `binfmt_misc` (a phone's kernel
/// runs them natively). It needs that build, so `cargo test` lists it as
/// ignored and `.ci/run` runs it with `--ignored`; without binfmt it is a
/// skip outside CI and a failure under it.
#[test]
#[ignore = "needs the static AArch64 probe in POCKETBENCH_STATIC_PROBE: .ci/run builds it and runs this"]
fn the_static_aarch64_probe_measures_on_an_arm64_phone() {
    let probe = std::env::var_os("POCKETBENCH_STATIC_PROBE")
        .expect("POCKETBENCH_STATIC_PROBE names the static AArch64 probe (.ci/run builds it and sets it)");
    if !pocketbench_testkit::need(
        binfmt_aarch64(),
        "a binfmt_misc entry running AArch64 executables through qemu-aarch64",
        "apt-get install qemu-user-binfmt, or .ci/run's registration as root",
    ) {
        return;
    }
    if !tools() {
        return;
    }
    let d = Adbd::start(Phone { abi: "arm64-v8a".into(), ..Phone::default() }).unwrap();
    on_battery(&d);
    let server = Server::new();
    server.adb.connect(&d.serial(), Duration::from_secs(20)).unwrap().unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = pocketbench(&server, data.path())
        .env("POCKETBENCH_ANDROID_PROBE", &probe)
        .args(["run", "--preset", "smollm2-135m", "--device", "android-any", "--json"])
        .args(["--prompt", "16", "--gen", "8", "--reps", "1", "--threads", "2", "--timeout", "900"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["provenance"], "measured", "{r}");
    let probe = &r["measurement"]["probe"];
    assert_eq!(probe["build"]["target"], "aarch64-unknown-linux-musl", "{r}");
    assert_eq!(probe["host"]["isa"], "neon", "{r}");
    assert!(r["decode_tok_s"].as_f64().unwrap() > 0.0 && r["peak_mem_increase_mb"].as_f64().unwrap() > 10.0, "{r}");
    let power = r["avg_power_w"].as_f64().unwrap();
    assert!((power / 2.5 - 1.0).abs() < 0.05, "average power {power} W from a 2.5 W rail");
    eprintln!("static AArch64 probe on the emulated arm64 phone: {}", probe["methods"]["kernels"]);
}

#[test]
fn a_probe_that_hangs_on_the_phone_is_killed_there_at_the_timeout() {
    if !tools() {
        return;
    }
    let hang = vec![("POCKETBENCH_FAULT".to_string(), "hang".to_string())];
    let d = Adbd::start(Phone { env: hang, ..Phone::default() }).unwrap();
    on_battery(&d);
    let server = Server::new();
    server.adb.connect(&d.serial(), Duration::from_secs(20)).unwrap().unwrap();
    let data = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    // No cooling wait, so the runner's limit is the timeout (plus adb's margin).
    let profiles =
        android_any_as(data.path(), "cool-to-c = 37.0\ncool-timeout-s = 180", "cool-to-c = 37.0\ncool-timeout-s = 0");
    let out = run_tiny(pocketbench(&server, data.path()).arg("--devices-dir").arg(&profiles), 1, &["--timeout", "3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(120), "{:?}", started.elapsed());
    // No probe is left running on the phone, and its job folder is gone.
    let probe = d.path("/data/local/tmp/pocketbench/probe").display().to_string();
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(&probe))
        })
    };
    let t = std::time::Instant::now();
    while running() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(), "the hung probe still runs on the phone");
    let left: Vec<_> =
        std::fs::read_dir(d.path("/data/local/tmp/pocketbench")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| n == "probe" || n == "models"), "{left:?}");
}

#[test]
fn a_remote_phone_named_by_host_and_port_is_connected_by_the_runner() {
    if !tools() {
        return;
    }
    let d = Adbd::start(Phone::default()).unwrap();
    on_battery(&d);
    let server = Server::new(); // adb lists nothing: nobody ran `adb connect`
    let data = tempfile::tempdir().unwrap();
    let profiles = android_any_as(data.path(), "serial = \"\"", &format!("serial = \"{}\"", d.serial()));
    let out = run_tiny(pocketbench(&server, data.path()).arg("--devices-dir").arg(&profiles), 1, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["measurement"]["probe"]["device_props"]["android.serial"], d.serial().as_str(), "{r}");
}

#[path = "common/browser.rs"]
mod chrome;

/// Write a device file whole (a reader never sees it half-written).
fn write_whole(d: &Adbd, device_path: &str, contents: &str) {
    let tmp = format!("{device_path}.tmp");
    d.write(&tmp, contents);
    std::fs::rename(d.path(&tmp), d.path(device_path)).unwrap();
}

#[test]
fn a_soak_on_the_phone_draws_its_thermal_zones_in_the_throttle_curve() {
    let Some((d, server, data)) = connected_phone() else { return };
    let Some(browser) = chrome::browser_or_skip() else { return };
    // A phone at 36 C that, once the model is on it, warms by half a
    // degree every 200 ms and clocks down as it does; it is cooled to 90 C
    // first (no wait, but both cool-downs read its zones). The probe's
    // threads run on this machine's CPUs: each gets a clock on the phone.
    let profiles = android_any_as(data.path(), "cool-to-c = 37.0", "cool-to-c = 90.0");
    let models = d.path("/data/local/tmp/pocketbench/models");
    let pushed = move || std::fs::read_dir(&models).is_ok_and(|mut m| m.next().is_some());
    d.write("/sys/class/thermal/thermal_zone0/type", "cpu-1-0-usr\n");
    d.write("/sys/class/thermal/thermal_zone1/type", "battery\n");
    write_whole(&d, "/sys/class/thermal/thermal_zone1/temp", "30000\n");
    let clock = |d: &Adbd, khz: u32| {
        for c in 0..256 {
            write_whole(d, &format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"), &format!("{khz}\n"));
        }
    };
    write_whole(&d, "/sys/class/thermal/thermal_zone0/temp", "36000\n");
    clock(&d, 3_000_000);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let warming = std::thread::scope(|s| {
        let stop2 = stop.clone();
        let phone = &d;
        let warming = s.spawn(move || {
            let mut milli = 36_000;
            let mut steps = 0;
            while !pushed() && !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                milli += 500;
                steps += 1;
                write_whole(phone, "/sys/class/thermal/thermal_zone0/temp", &format!("{milli}\n"));
                if steps % 5 == 0 {
                    clock(phone, 3_000_000 - 100_000 * steps.min(20));
                }
            }
            milli
        });
        let out = pocketbench(&server, data.path())
            .arg("--devices-dir")
            .arg(&profiles)
            .args(["soak", "--hidden", "128", "--layers", "1", "--head-dim", "32", "--kv-heads", "2", "--ffn", "256"])
            .args(["--vocab", "512", "--context", "256", "--device", "android-any", "--json"])
            .args(["--prompt", "16", "--gen", "8", "--threads", "1", "--seconds", "3", "--window", "0.5", "--out"])
            .arg(data.path().join("soak"))
            .output()
            .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (out, warming.join().unwrap())
    });
    let (out, hottest) = warming;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let soak = &r["measurement"]["probe"]["soak"];
    let windows = soak["windows"].as_array().unwrap();
    assert!(windows.len() >= 4, "{soak}");
    assert_eq!(soak["temperature"], "sysfs thermal_zone0 (cpu-1-0-usr)", "{soak}");
    let temps: Vec<f64> = windows.iter().map(|w| w["celsius"].as_f64().unwrap()).collect();
    assert!(temps[0] >= 36.0 && temps.last().unwrap() > &temps[0], "{temps:?}");
    assert!(*temps.last().unwrap() <= hottest as f64 / 1000.0, "{temps:?}");
    assert!(windows.iter().all(|w| w["sensor"] == "sysfs thermal_zone0 (cpu-1-0-usr)" && w["window"]["mhz"].is_f64()));
    // The runner read the zones over adb before anything was pushed; the
    // probe read them on the phone before its first cycle.
    let thermal = r["methods"]["thermal"].as_str().unwrap();
    assert!(thermal.contains("36.0 C before the repetition, cooled to at most 90.0 C"), "{thermal}");
    let cooled = &soak["cooled"];
    assert_eq!(cooled["source"], "sysfs thermal_zone0 (cpu-1-0-usr)", "{cooled}");
    assert!(cooled["hot"] == false && cooled["waited_s"].as_f64().unwrap() < 1.0, "{cooled}");
    assert_eq!(r["measurement"]["output"]["agree"], true, "every cycle generated the same tokens");

    // The page, rendered from soak.json, in Chromium: both curves, the
    // phone's zone by name in the caption and every window's tooltip.
    let page = data.path().join("soak/soak.html");
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.path().join("soak/soak.json")).unwrap()).unwrap();
    assert_eq!(stored["measurement"]["probe"]["soak"], *soak, "the page's data is the record printed");
    let (_, html) = chrome::render(&page, &browser.path().join("p"));
    assert!(html.contains("Throttle curve: decode speed under sustained load"), "{html}");
    assert!(html.contains("Temperature under sustained load"));
    assert_eq!(html.matches("<svg").count(), 2, "the throttle curve and the temperature curve");
    let tips = html.matches("sysfs thermal_zone0 (cpu-1-0-usr)").count();
    assert!(tips >= 2 * windows.len(), "the zone in every point's tooltip of both curves: {tips}");
    assert!(html.contains(" MHz"), "the clock in the tooltips");
}
