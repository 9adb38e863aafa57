//! End to end on a stand-in iPhone: `pocketbench sweep --devices ios-any`
//! and `run --device ios-any` through the iOS runner and the `xcrun`
//! stand-in (`runner-ios/tests/support/xcrun`), which answers with
//! devicectl's documented JSON and exit codes and, for `process launch`,
//! does what the pocketbench app does: runs this build's probe on the copied
//! spec in a fake data container and prints the app's markers. No real
//! devicectl, Mac or iPhone has run any of this.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn standin() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../runner-ios/tests"))
}

/// `pocketbench` with `$XCRUN` the stand-in, its phone's state under `dir`.
fn pocketbench(dir: &Path, fail: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pocketbench"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("XCRUN", standin().join("support/xcrun"))
        .env("XCRUN_STANDIN_FIXTURES", standin().join("fixtures/devicectl"))
        .env("XCRUN_STANDIN_HOME", dir.join("phone"))
        .env("XCRUN_STANDIN_FAIL", fail)
        .env("XCRUN_STANDIN_PROBE", env!("CARGO_BIN_EXE_pocketbench"))
        .env("POCKETBENCH_DATA_DIR", dir.join("data"))
        .env_remove("XCRUN_STANDIN_DROP_AFTER")
        .env_remove("POCKETBENCH_IOS_APP");
    c
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("phone/calls")).unwrap_or_default().lines().map(String::from).collect()
}

fn tiny_sweep(dir: &Path) -> PathBuf {
    let f = dir.join("tiny-ios.toml");
    std::fs::write(
        &f,
        "[sweep]\nname = \"tiny-ios\"\ndevices = [\"ios-any\"]\n[workload]\nprompt = 16\ngen = 8\n\
         [space]\nlayers = [1, 2, 3]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\ncontext = 256\n",
    )
    .unwrap();
    f
}

fn sweep(dir: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> (Output, PathBuf) {
    let out = dir.join(out);
    let mut c = pocketbench(dir, "");
    c.arg("sweep").arg(tiny_sweep(dir)).args(["--measure", "all", "--threads", "1", "--quiet", "--reps", "1"]);
    c.args(extra).arg("--out").arg(&out);
    for (k, v) in env {
        c.env(k, v);
    }
    (c.output().unwrap(), out)
}

fn results(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

#[test]
fn a_sweep_measures_on_the_ios_device_into_the_store_and_the_report_with_its_meters() {
    let d = tempfile::tempdir().unwrap();
    let (run, out) = sweep(d.path(), "out", &[], &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v = results(&out);
    let recs = v["results"].as_array().unwrap();
    assert_eq!(recs.len(), 3, "{v}");
    for r in recs {
        assert_eq!((r["device"].as_str(), r["provenance"].as_str()), (Some("ios-any"), Some("measured")), "{r}");
        assert!(r["decode_tok_s"].as_f64().unwrap() > 0.0, "{r}");
        // Speed by the timer; memory by what the probe that ran read: the
        // stand-in runs the Linux probe, so VmHWM (an iPhone's app reads
        // phys_footprint).
        let methods = &r["methods"];
        assert!(methods["decode_tok_s"].as_str().unwrap().contains("timer"), "{methods}");
        assert!(methods["peak_mem_increase_mb"].as_str().unwrap().contains("VmHWM"), "{methods}");
        let props = &r["measurement"]["probe"]["device_props"];
        assert_eq!(props["ios.name"], "Lab iPhone", "{props}");
        assert_eq!(props["ios.identifier"], "6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41", "{props}");
    }
    assert!(v["failures"].as_array().unwrap().is_empty(), "{v}");
    // The report shows them as measured on that device, meters named.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("ios-any") && html.contains("VmHWM"), "the report names the device and the meter");
    assert!(out.join("pocketbench.db").is_file());
    // The contract: the spec copied into the container, the app launched
    // with it and its console, the result copied back.
    let c = calls(d.path());
    let spec = "Documents/pocketbench/spec.json";
    assert!(c.iter().any(|l| l.starts_with("devicectl device copy to") && l.contains(spec)), "{c:?}");
    assert!(
        c.iter().any(|l| l.starts_with("devicectl device process launch")
            && l.contains("--console")
            && l.contains("--terminate-existing")
            && l.ends_with(&format!("dev.pocketbench.probe --spec {spec}"))),
        "{c:?}"
    );
    assert_eq!(c.iter().filter(|l| l.starts_with("devicectl device copy from")).count(), 3, "{c:?}");
    assert!(c.iter().all(|l| l.contains("--json-output")), "{c:?}");
}

#[test]
fn a_device_that_drops_mid_sweep_keeps_the_finished_rows_and_the_sweep_goes_on() {
    let d = tempfile::tempdir().unwrap();
    let (run, out) = sweep(d.path(), "out", &["--retries", "1"], &[("XCRUN_STANDIN_DROP_AFTER", "1")]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.code().is_some(), "{stderr}");
    let v = results(&out);
    let recs = v["results"].as_array().unwrap();
    assert_eq!(recs.len(), 3, "{v}");
    let measured = recs.iter().filter(|r| r["provenance"] == "measured").count();
    assert_eq!(measured, 1, "the row finished before the drop is kept: {v}");
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "{v}");
    for f in failures {
        assert_eq!(f["failure"]["kind"], "unavailable", "{f}");
        assert_eq!(f["attempts"], 2, "retried once: {f}");
        let reason = f["failure"]["reason"].as_str().unwrap_or_default();
        // ios-any takes whichever device is reachable: none is, and the
        // phone that dropped is listed with its tunnel unavailable.
        assert!(reason.contains("no iPhone or iPad is reachable") && reason.contains("tunnel unavailable"), "{f}");
    }
    // The store keeps the finished row: a resumed sweep does not measure it again.
    let again = pocketbench(d.path(), "")
        .arg("sweep")
        .arg(d.path().join("tiny-ios.toml"))
        .args(["--measure", "all", "--threads", "1", "--quiet", "--reps", "1", "--retries", "0", "--out"])
        .arg(&out)
        .env("XCRUN_STANDIN_DROP_AFTER", "1")
        .output()
        .unwrap();
    let v = results(&out);
    let measured = v["results"].as_array().unwrap().iter().filter(|r| r["provenance"] == "measured").count();
    assert_eq!(measured, 1, "{}", String::from_utf8_lossy(&again.stderr));
}

/// `pocketbench run` of a one-layer shape on `device` through the stand-in
/// failing as `fail`: its exit code and stderr.
fn run_failing(fail: &str, device: &str, extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, Vec<String>) {
    let d = tempfile::tempdir().unwrap();
    let mut c = pocketbench(d.path(), fail);
    c.args(["run", "--hidden", "128", "--layers", "1", "--head-dim", "32", "--kv-heads", "2", "--ffn", "256"])
        .args(["--vocab", "512", "--context", "256", "--device", device])
        .args(["--prompt", "16", "--gen", "8", "--threads", "1", "--reps", "1"])
        .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), calls(d.path()))
}

#[test]
fn each_devicectl_failure_reaches_the_user_as_a_clear_error() {
    let app = tempfile::tempdir().unwrap();
    let app = app.path().join("PocketbenchProbe.app");
    std::fs::create_dir(&app).unwrap();
    let app = app.to_str().unwrap();
    for (fail, says) in [
        ("none", "no iPhone or iPad is reachable"),
        ("two", "2 iPhones and iPads are reachable"),
        ("devmode", "Developer Mode off"),
        ("limit", "at most three apps"),
        ("locked", "the device is locked"),
        ("untrusted", "not trusted on the device"),
        ("gone", "the device went away"),
        ("crash", "killed by signal 9, probably by iOS's memory limit (jetsam"),
    ] {
        let (code, stderr, _) = run_failing(fail, "ios-any", &[], &[("POCKETBENCH_IOS_APP", app)]);
        assert_ne!(code, Some(0), "{fail}: {stderr}");
        assert!(stderr.contains(says), "{fail}: expected `{says}` in: {stderr}");
    }
}

#[test]
fn an_error_the_app_prints_is_the_failure_reported() {
    let d = tempfile::tempdir().unwrap();
    let probe = d.path().join("failing-probe");
    std::fs::write(
        &probe,
        "#!/bin/sh\necho 'spec.shape: the model needs 900 MB, the app may allocate 600 MB' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, stderr, _) = run_failing("", "ios-any", &[], &[("XCRUN_STANDIN_PROBE", probe.to_str().unwrap())]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("the app's probe failed: spec.shape: the model needs 900 MB, the app may allocate 600 MB"),
        "{stderr}"
    );
}

#[test]
fn a_hung_app_is_timed_out_and_terminated_by_its_pid() {
    let (code, stderr, calls) = run_failing("hang", "ios-any", &["--timeout", "2"], &[]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(calls.iter().any(|l| l.starts_with("devicectl device info processes")), "{calls:?}");
    assert!(
        calls.iter().any(|l| l.starts_with("devicectl device process terminate") && l.ends_with("--pid 1802")),
        "{calls:?}"
    );
}

#[test]
fn a_named_device_without_a_udid_and_a_machine_without_xcrun_say_what_to_do() {
    let (code, stderr, calls) = run_failing("", "iphone-18-pro", &[], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("names no iPhone or iPad") && stderr.contains("--device ios-any"), "{stderr}");
    assert!(calls.is_empty(), "nothing ran: {calls:?}");
    let (code, stderr, _) = run_failing("", "ios-any", &[], &[("XCRUN", "/nonexistent/xcrun")]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("needs a Mac with Xcode"), "{stderr}");
}

#[test]
fn devices_lists_the_reachable_apple_devices_and_says_so_in_one_line_without_xcrun() {
    let d = tempfile::tempdir().unwrap();
    let out = pocketbench(d.path(), "").arg("devices").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("iPhones and iPads over devicectl: 6A1F0C2E-3B7D-4E59-8C21-9F0B3D2A7E41 (Lab iPhone"),
        "{text}"
    );
    assert!(text.contains("ios-any") && text.contains("measures 6A1F0C2E"), "{text}");
    let out = pocketbench(d.path(), "").env("XCRUN", "/nonexistent/xcrun").arg("devices").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("over devicectl")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("not asked") && lines[0].contains("needs a Mac with Xcode"), "{text}");
}

/// `pocketbench run --json` of a one-layer shape on `ios-any` with the
/// energy method `energy`: the record, and the calls made.
fn run_energy(energy: &str, fail: &str, reps: &str) -> (serde_json::Value, Vec<String>) {
    let d = tempfile::tempdir().unwrap();
    let mut c = pocketbench(d.path(), fail);
    c.args(["run", "--hidden", "128", "--layers", "1", "--head-dim", "32", "--kv-heads", "2", "--ffn", "256"])
        .args(["--vocab", "512", "--context", "256", "--device", "ios-any", "--json"])
        .args(["--prompt", "16", "--gen", "8", "--threads", "1", "--reps", reps])
        .env("POCKETBENCH_IOS_ENERGY", energy)
        .env("POCKETBENCH_IOS_IDLE_S", "2")
        .env("PYMOBILEDEVICE3", standin().join("support/pymobiledevice3"));
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (serde_json::from_slice(&out.stdout).unwrap(), calls(d.path()))
}

#[test]
fn the_power_profiler_reads_the_launchs_energy_net_of_idle_and_says_how() {
    let (r, calls) = run_energy("xctrace", "", "2");
    let method = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(
        method.starts_with("measured: xctrace Power Profiler: `system-power` of table `standin-power`"),
        "{method}"
    );
    assert!(method.contains("net of the idle power (1.00 W)") && method.contains("samples every 0.100 s"), "{method}");
    // The stand-in draws 2 W over idle while the app runs: net energy is
    // positive and below the gross, over the launch's 3 runs (warm-up included).
    let net = r["energy_j_per_run"].as_f64().unwrap();
    let gross = r["energy_gross_j_per_run"].as_f64().unwrap();
    assert!(net > 0.0 && net < gross, "net {net} gross {gross}");
    assert!(method.contains("over its 3 runs"), "{method}");
    assert!(r["energy_j_per_run_low"].is_null(), "a measured energy carries no predicted range");
    let record = calls.iter().find(|l| l.starts_with("xctrace record")).expect("xctrace record was called");
    assert!(
        record.contains("--template Power Profiler --device 00008140-001A2B3C4D5E6F70 --all-processes"),
        "{record}"
    );
    assert!(calls.iter().any(|l| l.starts_with("xctrace export") && l.contains("--toc")), "{calls:?}");
}

#[test]
fn the_battery_gauge_reads_the_drain_over_the_runs_with_its_resolution() {
    let (r, calls) = run_energy("battery", "", "1");
    let method = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(method.starts_with("measured: pymobiledevice3 diagnostics battery single"), "{method}");
    assert!(method.contains("30 mAh") && method.contains("resolution"), "{method}");
    // 30 mAh at 3.9 V over the launch's 2 runs.
    let j = r["energy_j_per_run"].as_f64().unwrap();
    assert!((j - 30.0 * 3.9 * 3.6 / 2.0).abs() < 1e-9, "{j}");
    let gauge: Vec<&String> = calls.iter().filter(|l| l.starts_with("pymobiledevice3")).collect();
    assert_eq!(gauge.len(), 2, "{calls:?}");
    assert!(gauge[0].ends_with("diagnostics battery single --udid 00008140-001A2B3C4D5E6F70"), "{gauge:?}");
}

#[test]
fn without_a_reading_energy_is_not_measured_and_says_why() {
    // No method: the prediction, labelled, and how to read one.
    let (r, _) = run_energy("none", "", "1");
    let m = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(m.starts_with("not measured (iOS gives an app no energy counter"), "{m}");
    assert!(m.contains("\"xctrace\"") && m.contains("\"battery\""), "{m}");
    // A device on its charger: the gauge's drain is refused, the Power
    // Profiler reads no power; the measurement stands, energy is not measured.
    let (r, _) = run_energy("battery", "charging", "1");
    let m = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(m.contains("the battery gauge (pymobiledevice3) read no energy") && m.contains("external power"), "{m}");
    assert!(r["decode_tok_s"].as_f64().unwrap() > 0.0);
    let (r, _) = run_energy("xctrace", "charging", "1");
    let m = r["methods"]["energy_j_per_run"].as_str().unwrap();
    assert!(m.contains("read no power over the launch") && m.contains("charging"), "{m}");
}
