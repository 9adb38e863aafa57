//! Host calibrations belong to the machine they were measured on: the
//! foreign state said out loud, `calibrate --measure` on a tiny design, the
//! per-machine profile folder, resuming a killed calibration, and the
//! faults (a degenerate design, a foreign record, an unwritable folder).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

/// The binary in the repository root (so `./devices` is found), with a
/// data directory and a model cache of the test's own.
fn pb(d: &Path) -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    c.current_dir(root())
        .env("POCKETBENCH_DATA_DIR", d.join("data"))
        .env("POCKETBENCH_CACHE", d.join("cache"))
        .env("ADB", "/nonexistent/adb");
    c
}

fn fingerprint(d: &Path) -> String {
    let out = pb(d).args(["host-info", "--buffer-mib", "64", "--passes", "1", "--dry-run", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["host"]["fingerprint"].as_str().unwrap().to_string()
}

/// A design of tiny shapes: four fitted (two depths, two widths), one held out.
fn tiny_design(d: &Path, rounds: u32) -> PathBuf {
    let shape = |layers: u32, hidden: u32| {
        format!(
            "[[point]]\nmodel = {{ hidden = {hidden}, layers = {layers}, heads = 4, kv-heads = 2, head-dim = 32, ffn = 256, vocab = 512, context = 256 }}\n\
             workloads = [{{ prompt = 1, gen = 8 }}, {{ prompt = 64, gen = 8 }}]\n"
        )
    };
    let mut text = format!("name = \"tiny\"\nrounds = {rounds}\n");
    for (l, h) in [(1, 128), (3, 128), (1, 192), (2, 160)] {
        text.push_str(&shape(l, h));
    }
    text.push_str(&shape(2, 128));
    text.push_str("holdout = true\n");
    let f = d.join("tiny-design.toml");
    std::fs::write(&f, text).unwrap();
    f
}

/// Start a calibration of `design` (with `extra` flags) and kill it once it
/// has finished three measurements, leaving its cache behind.
fn killed_after_three(d: &Path, design: &Path, extra: &[&str]) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pocketbench"))
        .current_dir(root())
        .env("POCKETBENCH_DATA_DIR", d.join("data"))
        .env("POCKETBENCH_CACHE", d.join("cache"))
        .args(["calibrate", "--device", "host", "--measure", "--threads", "1", "--buffer-mib", "64", "--design"])
        .arg(design)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = 0;
    while seen < 3 {
        let line = lines.next().expect("the calibration ended before three measurements").unwrap();
        seen += usize::from(line.starts_with('['));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_profile_calibrated_on_another_machine_is_said_out_loud_wherever_host_predictions_show() {
    let d = tempfile::tempdir().unwrap();
    let foreign = "calibrated on another machine (AMD EPYC (Zen 5) VM, 2 vCPUs): run `pocketbench calibrate --device host --measure`";
    pb(d.path()).arg("devices").assert().success().stdout(predicate::str::contains(foreign));
    pb(d.path())
        .args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "host"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("calibration   profile `host` from devices/host.toml, {foreign}")));
    let out = d.path().join("out");
    let sweep =
        pb(d.path()).args(["sweep", "sweeps/quick.toml", "--predict-only", "--out"]).arg(&out).assert().success();
    let stderr = String::from_utf8_lossy(&sweep.get_output().stderr).to_string();
    let advice = "calibrate this machine with `pocketbench calibrate --device host --measure --quick`";
    assert_eq!(stderr.matches(advice).count(), 1, "said once: {stderr}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(foreign), "{summary}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("calibrated on another machine (AMD EPYC (Zen 5) VM, 2 vCPUs)"));
    // The committed profile is a prior: nothing was written anywhere.
    assert!(!d.path().join("data").exists());
}

#[test]
fn calibrate_measure_writes_this_machines_own_profile_and_a_killed_one_resumes() {
    let d = tempfile::tempdir().unwrap();
    let design = tiny_design(d.path(), 2);
    let repo_profile = std::fs::read(root().join("devices/host.toml")).unwrap();
    let fp = fingerprint(d.path());
    // Kill the first calibration once it has finished three measurements.
    killed_after_three(d.path(), &design, &[]);
    let profile = d.path().join("data/devices").join(&fp).join("host.toml");
    assert!(!profile.exists(), "a killed calibration writes no profile");

    let done = pb(d.path())
        .args(["calibrate", "--device", "host", "--measure", "--threads", "1", "--buffer-mib", "64", "--design"])
        .arg(&design)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&done.get_output().stderr).to_string();
    assert!(stderr.contains("20 measurements, 3 of them kept from the unfinished calibration before"), "{stderr}");
    assert_eq!(stderr.matches("(kept)").count(), 3, "{stderr}");
    let stdout = String::from_utf8_lossy(&done.get_output().stdout).to_string();
    assert!(stdout.contains("held-out decode: 2 point(s)"), "{stdout}");
    assert!(stdout.contains("this machine's repeatability: a job's decode rounds lay a median "), "{stdout}");
    assert!(stdout.contains(" of 10 job(s) spread wider than 10%"), "{stdout}");
    assert!(stdout.contains(&format!("written to {}", profile.display())), "{stdout}");

    // This machine's profile, found before ./devices; the repository's untouched.
    let text = std::fs::read_to_string(&profile).unwrap();
    assert!(text.contains(&format!("machine = \"{fp}\"")), "{text}");
    assert!(text.contains("threads = 1"));
    // The engine's own prompt chunk, where the repository's profile says 32.
    assert!(text.contains(&format!("prefill-chunk = {}", pocketbench::probe::native::CHUNK)), "{text}");
    assert!(text.contains("attention-scratch = \"per-thread\""), "{text}");
    // The engine named by the build measured, and the KV cost fitted.
    assert!(text.contains("name = \"native (pocketbench native engine source "), "{text}");
    assert!(text.contains("\"kv-cost\", \"prefill-attention-cost\"]"), "{text}");
    // The calibration's judgement of the machine's noise, with what it saw.
    assert!(text.contains("[model.noise]") && text.contains("split-half: "), "{text}");
    assert_eq!(std::fs::read(root().join("devices/host.toml")).unwrap(), repo_profile);
    pb(d.path())
        .arg("devices")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"\nhost .* calibrated \(8 points, 2 held out\)\n").unwrap());
    let out = pb(d.path())
        .args(["predict", "--hidden", "128", "--layers", "2", "--head-dim", "32", "--kv-heads", "2"])
        .args(["--ffn", "256", "--vocab", "512", "--context", "256", "--device", "host", "--prompt", "1", "--gen", "8"])
        .assert()
        .success();
    // A tiny design on a shared VM may well be judged noisy (by its split
    // halves, its held-out points, or a contended point when this runs
    // beside other tests): either verdict is fine here, as long as a noisy
    // one is said with its reasons.
    let out = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let label = format!("from {}, calibrated (8 points, 2 held out)", profile.display());
    assert!(out.contains(&format!("{label}\n")) || out.contains(&format!("{label}, NOISY (")), "{out}");
    // A finished calibration leaves no cache: the next one measures afresh.
    assert!(!d.path().join("data/calibrations").join(&fp).join("host.jsonl").exists());
    // A measurement at another thread count says it is outside the calibration.
    pb(d.path())
        .args(["run", "--hidden", "128", "--layers", "2", "--head-dim", "32", "--kv-heads", "2", "--ffn", "256"])
        .args(["--vocab", "512", "--context", "256", "--device", "host", "--prompt", "16", "--gen", "8"])
        .args(["--reps", "1", "--threads", "2"])
        .assert()
        .success()
        .stdout(predicate::str::contains("outside the calibration: calibrated at 1 thread(s), measured at 2"));
    // A check that measures again a job the profile was fitted to reports
    // it as the machine's drift, not as a check of the model.
    let check = d.path().join("check.toml");
    std::fs::write(
        &check,
        "rounds = 1\n[[point]]\nmodel = { hidden = 128, layers = 1, heads = 4, kv-heads = 2, head-dim = 32, ffn = 256, vocab = 512, context = 256 }\n\
         workloads = [{ prompt = 1, gen = 8 }]\n\
         [[point]]\nmodel = { hidden = 128, layers = 4, heads = 4, kv-heads = 2, head-dim = 32, ffn = 256, vocab = 512, context = 256 }\n\
         workloads = [{ prompt = 1, gen = 8 }]\n",
    )
    .unwrap();
    let out = pb(d.path())
        .args(["calibrate", "--device", "host", "--threads", "1", "--json", "--check"])
        .arg(&check)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["drift"]["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{v:#}");
    assert_eq!(
        (jobs[0]["model"].as_str(), jobs[0]["workload"].as_str()),
        (Some("L1-d128-h4/2-f256-v512-q4_0"), Some("1+8"))
    );
    let (then, now) = (jobs[0]["then"].as_f64().unwrap(), jobs[0]["now"].as_f64().unwrap());
    assert!((jobs[0]["change"].as_f64().unwrap() - (now / then - 1.0)).abs() < 1e-12, "{v:#}");
    // Only the new shape is checked against its prediction.
    let residuals = v["residuals"].as_array().unwrap();
    assert!(residuals.iter().all(|r| r["model"] == "L4-d128-h4/2-f256-v512-q4_0"), "{v:#}");
    assert_eq!(v["drift"]["adjusted_decode"]["points"].as_u64(), Some(1), "{v:#}");
}

#[test]
fn a_calibration_that_cannot_fit_says_why_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("flat.toml");
    let point = |hidden: u32| {
        format!(
            "[[point]]\nmodel = {{ hidden = {hidden}, layers = 2, heads = 4, kv-heads = 2, head-dim = 32, ffn = 256, vocab = 512, context = 256 }}\nworkloads = [{{ prompt = 1, gen = 8 }}]\n"
        )
    };
    std::fs::write(&f, [128, 160, 192, 224].map(point).concat()).unwrap();
    pb(d.path())
        .args(["calibrate", "--device", "host", "--measure", "--design"])
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("flat.toml: a degenerate design: every fitted shape has the same depth"));
    std::fs::write(&f, point(128)).unwrap();
    pb(d.path())
        .args(["calibrate", "--device", "host", "--measure", "--design"])
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("1 distinct fitted shape(s), the fit needs at least 4"));
    assert!(!d.path().join("data").exists());
}

#[test]
fn an_unwritable_data_directory_is_a_harness_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let blocker = d.path().join("data");
    std::fs::write(&blocker, "a file where the data directory must be").unwrap();
    pb(d.path())
        .args(["host-info", "--buffer-mib", "64", "--passes", "1"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(blocker.join("devices").display().to_string()));
    pb(d.path())
        .args(["calibrate", "--device", "host", "--measure", "--buffer-mib", "64", "--design"])
        .arg(tiny_design(d.path(), 1))
        .assert()
        .code(3)
        .stderr(
            predicate::str::contains("this machine's profile folder")
                .and(predicate::str::contains(blocker.join("devices").display().to_string())),
        )
        // Refused before a single measurement.
        .stderr(predicate::str::contains("round 1").not());
}

#[test]
fn a_record_of_another_machine_is_refused_by_calibrate_add_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let out = pb(d.path())
        .args(["run", "--hidden", "128", "--layers", "2", "--head-dim", "32", "--kv-heads", "2", "--ffn", "256"])
        .args(["--vocab", "512", "--context", "256", "--device", "host", "--prompt", "16", "--gen", "8"])
        .args(["--reps", "1", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    rec["measurement"]["probe"]["host"]["fingerprint"] = "0000deadbeef".into();
    rec["measurement"]["probe"]["host"]["cpu"] = "Some Other CPU".into();
    let f = d.path().join("foreign.json");
    std::fs::write(&f, rec.to_string()).unwrap();
    pb(d.path())
        .args(["calibrate", "--device", "host", "--add"])
        .arg(&f)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("measured on another machine (Some Other CPU")
                .and(predicate::str::contains("fingerprint 0000deadbeef), not this one")),
        )
        .stderr(predicate::str::contains("pass --force to add it anyway"));
    // Forced, into a copy of the repository's profile (whose own points fit).
    let devices = d.path().join("devices");
    std::fs::create_dir(&devices).unwrap();
    std::fs::copy(root().join("devices/host.toml"), devices.join("host.toml")).unwrap();
    pb(d.path())
        .args(["calibrate", "--device", "host", "--force", "--devices-dir"])
        .arg(&devices)
        .arg("--add")
        .arg(&f)
        .assert()
        .success()
        .stderr(predicate::str::contains("added L2-d128"));
    let text = std::fs::read_to_string(devices.join("host.toml")).unwrap();
    assert!(text.contains("machine = \"0000deadbeef\""), "{text}");
}

#[test]
fn a_calibration_whose_every_measurement_fails_says_so_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    pb(d.path())
        .env("POCKETBENCH_FAULT", "crash")
        .args(["calibrate", "--device", "host", "--measure", "--buffer-mib", "64", "--design"])
        .arg(tiny_design(d.path(), 1))
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "failed (probe failed (exit 3): error: injected fault: crash); trying once more",
        ))
        .stderr(predicate::str::contains("failed twice in round 1"))
        .stderr(predicate::str::contains("every measurement of the design failed; nothing was written"));
    let fp = fingerprint(d.path());
    assert!(!d.path().join("data/devices").join(fp).join("host.toml").exists(), "no profile was written");
}

#[test]
fn a_calibration_measured_through_another_engine_build_is_said_out_loud() {
    let d = tempfile::tempdir().unwrap();
    let fp = fingerprint(d.path());
    pb(d.path())
        .args(["calibrate", "--device", "host", "--measure", "--buffer-mib", "64", "--design"])
        .arg(tiny_design(d.path(), 1))
        .assert()
        .success();
    let profile = d.path().join("data/devices").join(&fp).join("host.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    let build = text.lines().find(|l| l.starts_with("engine-build = ")).unwrap().to_string();
    std::fs::write(
        &profile,
        text.replace(&build, "engine-build = \"pocketbench native engine source 000000000000, opt-level 3\""),
    )
    .unwrap();
    // The points changed, so the fit is refreshed first; the build stays another one.
    pb(d.path()).args(["calibrate", "--device", "host"]).assert().success();
    pb(d.path()).arg("devices").assert().success().stdout(predicate::str::contains(
        "calibrated with another engine build (pocketbench native engine source 000000000000, opt-level 3): run `pocketbench calibrate --device host --measure`",
    ));
}

#[test]
fn calibrate_check_measures_held_out_shapes_and_predicts_them_as_predict_does() {
    let d = tempfile::tempdir().unwrap();
    let shape = ["--hidden", "160", "--layers", "3", "--heads", "4", "--kv-heads", "1", "--head-dim", "32"];
    let shape_rest = ["--ffn", "256", "--vocab", "768", "--context", "256"];
    let f = d.path().join("check.toml");
    std::fs::write(
        &f,
        "rounds = 2\n[[point]]\nmodel = { hidden = 160, layers = 3, heads = 4, kv-heads = 1, head-dim = 32, ffn = 256, vocab = 768, context = 256 }\n\
         workloads = [{ prompt = 1, gen = 8 }, { prompt = 64, gen = 8 }]\n",
    )
    .unwrap();
    let repo_profile = std::fs::read(root().join("devices/host.toml")).unwrap();
    let out = pb(d.path())
        .args(["calibrate", "--device", "host", "--threads", "1", "--json", "--check"])
        .arg(&f)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("checking profile `host` from devices/host.toml, calibrated on another machine"),
        "{stderr}"
    );
    assert!(stderr.contains("4 measurements"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let residuals = v["residuals"].as_array().unwrap();
    // Decode and peak memory at both workloads, prefill at the 64-token prompt.
    assert_eq!(residuals.len(), 5, "{v:#}");
    assert!(residuals.iter().all(|r| r["holdout"] == true));
    // Each prediction is the one `predict` makes from the same profile.
    for w in ["1", "64"] {
        let p = pb(d.path())
            .arg("predict")
            .args(shape)
            .args(shape_rest)
            .args(["--device", "host", "--prompt", w, "--gen", "8", "--json"])
            .output()
            .unwrap();
        assert!(p.status.success());
        let p: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
        let p = if p.is_array() { p[0].clone() } else { p };
        let r = residuals.iter().find(|r| r["metric"] == "decode" && r["workload"] == format!("{w}+8")).unwrap();
        let (predicted, measured) = (r["predicted"].as_f64().unwrap(), r["measured"].as_f64().unwrap());
        assert!((predicted / p["decode_tok_s"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{r} against {p}");
        let err = r["rel_error"].as_f64().unwrap();
        assert!((err - (predicted / measured - 1.0)).abs() < 1e-12);
    }
    let acc = v["accuracy"].as_array().unwrap();
    let decode = acc.iter().find(|a| a["metric"] == "decode").unwrap();
    assert_eq!((decode["points"].as_u64(), decode["tolerance"].as_f64()), (Some(2), Some(0.10)));
    let memory = acc.iter().find(|a| a["metric"] == "peak-memory").unwrap();
    assert_eq!(memory["tolerance"].as_f64(), Some(0.15));
    // Beside the errors, how far each job's own two rounds lay apart.
    let rep = &v["repeatability"];
    assert_eq!((rep["jobs"].as_u64(), rep["tolerance"].as_f64()), (Some(2), Some(0.10)), "{v:#}");
    let (median, worst) = (rep["median_spread"].as_f64().unwrap(), rep["worst_spread"].as_f64().unwrap());
    assert!((0.0..1.0).contains(&median) && median <= worst && worst < 1.0, "{rep}");
    // Two jobs: the median is their mean, so the other spread is 2 x median - worst.
    let other = 2.0 * median - worst;
    assert_eq!(rep["wider"].as_u64().unwrap(), u64::from(worst > 0.10) + u64::from(other > 0.10), "{rep}");
    // Nothing was written: no profile, no cache left, the repository's untouched.
    let fp = fingerprint(d.path());
    assert!(!d.path().join("data/devices").join(&fp).exists());
    assert!(!d.path().join("data/calibrations").join(&fp).join("host-check.jsonl").exists());
    assert_eq!(std::fs::read(root().join("devices/host.toml")).unwrap(), repo_profile);
    // A phone is not this machine: its --check is leave-one-out over its
    // points, and a design file to measure is refused; --check does not mix
    // with --add.
    pb(d.path())
        .args(["calibrate", "--device", "iphone-18-pro", "--check"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("iphone-18-pro: leave-one-out over 2 fitted point(s)"))
        .stdout(predicate::str::contains("verdict: within the goals (decode worst"));
    pb(d.path())
        .args(["calibrate", "--device", "oneplus-13", "--check", "design.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("measures the file's design on this machine"));
    pb(d.path()).args(["calibrate", "--device", "host", "--check", "--add", "x.json"]).assert().code(2);
}

#[test]
fn rounds_overrides_the_designs_own_count_and_is_checked() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("check.toml");
    std::fs::write(
        &f,
        "rounds = 2\n[[point]]\nmodel = { hidden = 128, layers = 2, heads = 4, kv-heads = 2, head-dim = 32, ffn = 256, vocab = 512, context = 256 }\n\
         workloads = [{ prompt = 1, gen = 8 }]\n",
    )
    .unwrap();
    let out = pb(d.path())
        .args(["calibrate", "--device", "host", "--threads", "1", "--rounds", "3", "--json", "--check"])
        .arg(&f)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 jobs x 3 rounds"), "{stderr}");
    assert!(stderr.contains("3 measurements"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["repeatability"]["jobs"].as_u64(), Some(1), "{v:#}");
    // Zero rounds measure nothing; rounds belong to a measuring command.
    pb(d.path())
        .args(["calibrate", "--device", "host", "--rounds", "0", "--check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--rounds"));
    pb(d.path()).args(["calibrate", "--device", "host", "--rounds", "3"]).assert().code(2);
}

#[test]
fn a_rounds_precision_is_the_flags_written_into_each_point_and_never_reused_at_another() {
    let d = tempfile::tempdir().unwrap();
    let design = tiny_design(d.path(), 1);
    let fp = fingerprint(d.path());
    let profile = d.path().join("data/devices").join(&fp).join("host.toml");
    let calibrate = |extra: &[&str]| {
        let out = pb(d.path())
            .args(["calibrate", "--device", "host", "--measure", "--threads", "1", "--buffer-mib", "64", "--design"])
            .arg(&design)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    // An unfinished run at the default precision is not reused by one
    // asking for another.
    killed_after_three(d.path(), &design, &[]);
    let stderr = calibrate(&["--precision", "0.3", "--max-reps", "4", "--max-time", "0.05"]);
    assert!(stderr.contains("10 measurements") && !stderr.contains("(kept)"), "{stderr}");
    let text = std::fs::read_to_string(&profile).unwrap();
    assert!(text.contains("each round repeated until its median was within ±30% or 4 repetitions or 0.05 s"), "{text}");

    // Out of range, named.
    for (flag, value) in [("--precision", "1.5"), ("--max-reps", "1"), ("--max-time", "-1")] {
        pb(d.path())
            .args(["calibrate", "--device", "host", "--measure", "--design"])
            .arg(&design)
            .arg(format!("{flag}={value}"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(flag));
    }
    // They belong to a measuring command.
    pb(d.path()).args(["calibrate", "--device", "host", "--max-time", "2"]).assert().code(2);
}

#[test]
fn a_design_past_its_time_budget_shortens_its_later_rounds_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let design = tiny_design(d.path(), 2);
    // No time at all: every job is shortened, as the profile's predictions
    // of what each costs say from the start.
    let text =
        std::fs::read_to_string(&design).unwrap().replacen("rounds = 2\n", "rounds = 2\nbudget-seconds = 0\n", 1);
    std::fs::write(&design, text).unwrap();
    let out = pb(d.path())
        .args([
            "calibrate",
            "--device",
            "host",
            "--measure",
            "--threads",
            "1",
            "--buffer-mib",
            "64",
            "--dry-run",
            "--design",
        ])
        .arg(&design)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("(20 of 20 job rounds shortened to one repetition at the least, none retaken"), "{stdout}");
    // Rounds asked for on the command line are measured whole.
    let out = pb(d.path())
        .args(["calibrate", "--device", "host", "--measure", "--threads", "1", "--buffer-mib", "64", "--dry-run"])
        .args(["--rounds", "2", "--design"])
        .arg(&design)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !stdout.contains("shortened"), "{stdout}");
}
