//! Measuring through the command line: `run`, and `sweep --measure` with
//! failing probes, stored results and resume.

use std::path::{Path, PathBuf};

use predicates::prelude::*;

#[path = "common/cli.rs"]
#[allow(dead_code)] // not every test binary uses every helper
mod cli;
use cli::{pb, TINY};

fn sweep_file(dir: &Path) -> PathBuf {
    let f = dir.join("tiny.toml");
    std::fs::write(
        &f,
        "[sweep]\nname = \"tiny\"\ndevices = [\"host\", \"oneplus-13\"]\n[workload]\nprompt = 16\ngen = 8\n\
         [space]\nlayers = [1, 2]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\ncontext = 256\n",
    )
    .unwrap();
    f
}

#[test]
fn run_reports_a_measured_record() {
    let d = tempfile::tempdir().unwrap();
    let out = pb(d.path())
        .arg("run")
        .args(TINY)
        .args(["--device", "host", "--prompt", "16", "--gen", "8", "--reps", "3", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["provenance"], "measured");
    assert_eq!(v["device"], "host");
    assert!(v["engine"].as_str().unwrap().starts_with("native"));
    assert!(v["methods"]["decode_tok_s"].as_str().unwrap().starts_with("measured: timer, median of 3"));
    // Energy is measured where this machine has a meter (RAPL, a discharging
    // battery) and said not to be everywhere else.
    let energy = v["methods"]["energy_j_per_run"].as_str().unwrap();
    match pocketbench::meter::detect() {
        Ok(_) => assert!(energy.starts_with("measured"), "{energy}"),
        Err(_) => assert!(energy.starts_with("not measured"), "{energy}"),
    }
    let m = &v["measurement"];
    // Three summarized repetitions; a busy moment (the other tests run
    // alongside) may add retaken ones, which are kept but not summarized.
    let reps = m["probe"]["reps"].as_array().unwrap();
    assert_eq!(reps.iter().filter(|r| r["retaken"] != true).count(), 3);
    assert_eq!(
        reps.iter().filter(|r| r["retaken"] == true).count() as u64,
        m["probe"]["sampling"]["retaken"].as_u64().unwrap()
    );
    assert_eq!(m["decode"]["n"], 3);
    assert!(m["bandwidth_efficiency"].as_f64().unwrap() > 0.0);
    assert!(m["predicted"]["decode_tok_s"].as_f64().unwrap() > 0.0);
    assert_eq!(v["decode_tok_s"], m["decode"]["median"]);
}

#[test]
fn one_repetition_has_no_interval() {
    let d = tempfile::tempdir().unwrap();
    let args = ["--device", "host", "--prompt", "8", "--gen", "4", "--reps", "1"];
    let out = pb(d.path()).arg("run").args(TINY).args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let decode = &v["measurement"]["decode"];
    assert_eq!(decode["n"], 1);
    assert!(decode["ci95_lo"].is_null() && decode["ci95_hi"].is_null(), "{decode}");
    pb(d.path())
        .arg("run")
        .args(TINY)
        .args(args)
        .assert()
        .success()
        .stdout(predicate::str::contains("no interval (1 repetition)").and(predicate::str::contains("95% CI").not()));
}

/// TINY at widths every block size divides (Q4_K and Q6_K store 256).
fn wide(quant: &str) -> Vec<String> {
    let mut a: Vec<String> = TINY.iter().map(|s| s.to_string()).collect();
    a[1] = "256".into();
    a[9] = "512".into();
    a.extend(["--quant".into(), quant.into()]);
    a
}

#[test]
fn every_storage_type_the_sweep_accepts_measures_natively_or_is_refused_first() {
    let d = tempfile::tempdir().unwrap();
    for quant in ["q4_1", "q4_k", "f16", "int4 group=64 zero"] {
        let out = pb(d.path())
            .arg("run")
            .args(wide(quant))
            .args(["--device", "host", "--prompt", "8", "--gen", "4", "--reps", "1", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{quant}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // The native engine itself, never candle-transformers under its name.
        let engine = v["engine"].as_str().unwrap();
        assert!(engine.starts_with("native (pocketbench native"), "{quant}: {engine}");
        let weights = v["measurement"]["probe"]["methods"]["weights"].as_str().unwrap();
        assert!(weights.starts_with(quant), "{quant}: {weights}");
        if quant.starts_with("int4") {
            assert!(weights.contains("stored as ggml q4_1 blocks of 32"), "{weights}");
        }
        // Q4_K is held in memory at 4.625 bits a weight, not the file's 4.5: the record says so.
        let caveat = v["measurement"]["probe"]["methods"]["caveat"].as_str();
        assert_eq!(caveat.is_some_and(|c| c.contains("4.625 bits per weight")), quant == "q4_k", "{quant}: {caveat:?}");
    }
    // No kernels for Q6_K: refused before anything is built, naming what to do.
    pb(d.path())
        .arg("run")
        .args(wide("q6_k"))
        .args(["--device", "host", "--prompt", "8", "--gen", "4"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("the native engine has no q6_k kernels")
                .and(predicate::str::contains("--engine llama-bench")),
        );
    pb(d.path())
        .arg("run")
        .args(wide("int3 group=64"))
        .args(["--device", "host", "--prompt", "8", "--gen", "4"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`int3 group=64` has no storage"));
}

#[test]
fn run_refuses_bad_settings_and_unreachable_devices() {
    let d = tempfile::tempdir().unwrap();
    pb(d.path())
        .arg("run")
        .args(TINY)
        .args(["--device", "host", "--reps", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--reps must be between 1"));
    pb(d.path())
        .arg("run")
        .args(TINY)
        .args(["--device", "host", "--prompt", "300"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the workload needs 428 positions; the configuration is built for 256"));
    pb(d.path())
        .arg("run")
        .args(TINY)
        // A job that validates (the input is checked first), on a named
        // device whose profile cannot say which one it is.
        .args(["--device", "iphone-18-pro", "--prompt", "16", "--gen", "8"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("names no iPhone or iPad: set `udid`"));
    pb(d.path())
        .arg("run")
        .args(TINY)
        // A named phone whose profile has no serial: a configuration to fix, not a phone to guess.
        .args(["--device", "oneplus-13", "--prompt", "16", "--gen", "8"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("device `oneplus-13` names no adb serial"));
}

#[test]
fn a_failing_probe_is_recorded_and_the_sweep_goes_on_then_resumes() {
    let d = tempfile::tempdir().unwrap();
    let f = sweep_file(d.path());
    let out = d.path().join("out");
    // The 1-layer configuration's id, to fail only that one.
    let mut one: Vec<&str> = TINY.to_vec();
    let at = one.iter().position(|a| *a == "--layers").unwrap();
    one[at + 1] = "1";
    let arch = pb(d.path()).arg("arch").args(&one).arg("--json").output().unwrap();
    let one_layer: serde_json::Value = serde_json::from_slice(&arch.stdout).unwrap();
    let id = one_layer["config_id"].as_str().unwrap().to_string();

    pb(d.path())
        .env("POCKETBENCH_FAULT", format!("crash:{id}"))
        .args(["sweep"])
        .arg(&f)
        .args(["--measure", "all", "--reps", "2", "--out"])
        .arg(&out)
        .assert()
        .code(0)
        .stderr(predicate::str::contains("probe failed (exit 3): error: injected fault: crash"))
        // The measurement is held against its prediction on the host's card.
        .stdout(predicate::str::contains("  measured against predicted: 1 measured: decode predicted "));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0]["config_id"], id.as_str());
    assert_eq!(failures[0]["failure"]["kind"], "crashed");
    let host: Vec<&serde_json::Value> =
        v["results"].as_array().unwrap().iter().filter(|r| r["device"] == "host").collect();
    assert_eq!(host.iter().filter(|r| r["provenance"] == "measured").count(), 1);
    // The phone has no runner here: its records stay predicted.
    assert!(v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["device"] == "oneplus-13")
        .all(|r| r["provenance"] == "predicted"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("## Failed measurements"));
    assert!(summary.contains("| measured config | decode predicted |"), "{summary}");
    assert_eq!(v["devices"].as_array().unwrap().iter().filter(|d| d["agreement"]["measured"] == 1).count(), 1);

    // Tamper with the stored measurement: a resumed sweep must keep it, not measure again.
    let db = out.join("pocketbench.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let changed = conn.execute("UPDATE results SET decode_tok_s = 12345.0 WHERE provenance = 'measured'", []).unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let results = |out: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
    };
    let host = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["results"].as_array().unwrap().iter().filter(|r| r["device"] == "host").cloned().collect()
    };
    let sweep = || {
        let mut c = pb(d.path());
        c.args(["sweep"]).arg(&f).args(["--measure", "all", "--reps", "2", "--out"]).arg(&out);
        c
    };

    // Resumed without --retry-failed: the failure is kept, the measurement reused.
    sweep().assert().code(0).stderr(predicate::str::contains("kept the stored failure"));
    let v = results(&out);
    assert_eq!(v["failures"].as_array().unwrap().len(), 1);
    assert!(host(&v).iter().any(|r| r["decode_tok_s"] == 12345.0), "the stored one was reused");

    // With --retry-failed the failed one is measured; nothing else is redone.
    sweep().arg("--retry-failed").assert().code(0).stderr(predicate::str::contains("kept the stored measurement"));
    let v = results(&out);
    assert!(host(&v).iter().all(|r| r["provenance"] == "measured"), "the failed one is measured now");
    assert!(host(&v).iter().any(|r| r["decode_tok_s"] == 12345.0));
    assert!(v["failures"].as_array().unwrap().is_empty());

    // A changed profile is refused by name; --fresh starts over and keeps the old store aside.
    let devices = d.path().join("devices");
    std::fs::create_dir(&devices).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap();
    for p in ["host", "oneplus-13"] {
        let text = std::fs::read_to_string(repo.join(format!("devices/{p}.toml"))).unwrap();
        let text =
            if p == "host" { text.replacen("decode = \"200 tok/s\"", "decode = \"20000 tok/s\"", 1) } else { text };
        std::fs::write(devices.join(format!("{p}.toml")), text).unwrap();
    }
    sweep()
        .arg("--devices-dir")
        .arg(&devices)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds a different sweep: device `host`'s profile changed"))
        .stderr(predicate::str::contains("--fresh"));
    assert_eq!(results(&out)["failures"].as_array().unwrap().len(), 0, "nothing was changed");
    sweep().arg("--devices-dir").arg(&devices).arg("--fresh").assert().code(0);
    assert!(out.join("pocketbench.db.prev").is_file());
    let v = results(&out);
    let fresh = host(&v);
    assert!(fresh.iter().all(|r| r["provenance"] == "measured" && r["decode_tok_s"] != 12345.0), "measured anew");
    assert!(fresh.iter().all(|r| r["budgets"]["decode"]["limit"] == 20000.0), "judged against today's profile");
}

#[test]
fn a_sweep_checks_every_job_before_it_predicts_anything() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("mixed.toml");
    std::fs::write(
        &f,
        "[sweep]\nname = \"mixed\"\ndevices = [\"host\"]\n[workload]\nprompt = 16\ngen = 8\n\
         [space]\nlayers = [1, 2]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\ncontext = 256\n\
         quant = [\"q4_0\", \"q4_k\"]\n",
    )
    .unwrap();
    let out = d.path().join("out");
    let a =
        pb(d.path()).arg("sweep").arg(&f).args(["--measure", "1", "--reps", "0", "--out"]).arg(&out).assert().code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    // Every problem at once: the setting, and both Q4_K shapes (a hidden of 128
    // cannot hold Q4_K's blocks of 256).
    assert!(stderr.contains("cannot measure as asked"), "{stderr}");
    assert!(stderr.contains("--reps must be between 1"), "{stderr}");
    assert_eq!(stderr.matches("stores rows in blocks of 256").count(), 2, "{stderr}");
    assert!(!out.exists(), "nothing was predicted or written");
}

#[test]
fn hung_and_killed_probes_do_not_take_the_sweep_down() {
    let d = tempfile::tempdir().unwrap();
    let f = sweep_file(d.path());
    for (fault, kind) in [("hang", "timeout"), ("kill", "killed")] {
        let out = d.path().join(fault);
        pb(d.path())
            .env("POCKETBENCH_FAULT", fault)
            .args(["sweep"])
            .arg(&f)
            .args(["--measure", "1", "--reps", "2", "--timeout", "2", "--out"])
            .arg(&out)
            .assert()
            .code(0);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
        assert_eq!(v["failures"][0]["failure"]["kind"], kind, "{fault}");
        let measured = v["results"].as_array().unwrap().iter().filter(|r| r["provenance"] == "measured").count();
        assert_eq!(measured, 0, "{fault}: nothing measured");
    }
}

#[cfg(not(feature = "llama"))]
#[test]
fn the_llama_engine_needs_the_feature() {
    let d = tempfile::tempdir().unwrap();
    pb(d.path())
        .arg("run")
        .args(TINY)
        .args(["--device", "host", "--engine", "llama.cpp"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("built without the llama.cpp engine"));
    pb(d.path())
        .arg("run")
        .args(TINY)
        .args(["--device", "host", "--engine", "mlc"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown engine `mlc`"));
}

#[test]
fn the_mnn_engine_needs_llm_bench_and_an_export_of_the_configuration() {
    let d = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mnn-llm-bench");
    for f in ["config.json", "llm_config.json"] {
        std::fs::copy(fixtures.join(f), d.path().join(f)).unwrap();
    }
    for f in ["llm.mnn", "llm.mnn.weight"] {
        std::fs::write(d.path().join(f), b"stand-in").unwrap();
    }
    let config = d.path().join("config.json");
    let bin = d.path().join("llm_bench");
    std::fs::write(&bin, "#!/bin/sh\nexit 1\n").unwrap();
    let run = |env: &Path, args: &[&str]| {
        let mut c = pb(d.path());
        c.env("POCKETBENCH_MNN_LLM_BENCH", env).arg("run").args(args).args(["--device", "host"]);
        c.assert().code(2)
    };
    let pocket = ["--preset", "mnn-pocket-0.3b", "--engine", "mnn-llm-bench"];
    let missing = d.path().join("nowhere/llm_bench");
    run(&missing, &pocket).stderr(predicate::str::contains("MNN's llm_bench not found: set POCKETBENCH_MNN_LLM_BENCH"));
    run(&bin, &pocket).stderr(predicate::str::contains("pass --engine-model"));
    let with_model = [&pocket[..], &["--engine-model", config.to_str().unwrap()]].concat();
    let mut tiny_mnn = TINY.to_vec();
    tiny_mnn.extend(["--prompt", "16", "--gen", "8"]);
    tiny_mnn.extend(&with_model[2..]);
    run(&bin, &tiny_mnn).stderr(predicate::str::contains("has hidden size 896, but the configuration has 128"));
    let mut candle = TINY.to_vec();
    candle.extend(["--prompt", "16", "--gen", "8", "--engine", "candle", "--engine-model", config.to_str().unwrap()]);
    run(&bin, &candle).stderr(predicate::str::contains("--engine-model is read only by engines"));
    pb(d.path())
        .env("POCKETBENCH_MNN_LLM_BENCH", &bin)
        .args(["sweep", "sweeps/quick.toml", "--measure", "1", "--engine", "mnn-llm-bench", "--out"])
        .arg(d.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a sweep cannot measure through it"));
    pb(d.path())
        .args(["sweep", "sweeps/quick.toml", "--measure", "1", "--engine-model"])
        .arg(&config)
        .arg("--out")
        .arg(d.path().join("out"))
        .assert()
        .code(2)
        // A `run` flag: `sweep` does not take it at all.
        .stderr(predicate::str::contains("unexpected argument '--engine-model'"));
}

#[test]
fn measured_records_become_calibration_points_and_dry_run_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let devices = d.path().join("devices");
    std::fs::create_dir(&devices).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap();
    std::fs::copy(repo.join("devices/host.toml"), devices.join("host.toml")).unwrap();
    let out = pb(d.path())
        .arg("run")
        .args(TINY)
        .args(["--device", "host", "--prompt", "16", "--gen", "8", "--reps", "2", "--json", "--devices-dir"])
        .arg(&devices)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = d.path().join("rec.json");
    std::fs::write(&rec, &out.stdout).unwrap();
    // A second file: `--add a b --dry-run` once fitted only the last one.
    let rec2 = d.path().join("rec2.json");
    std::fs::write(&rec2, &out.stdout).unwrap();
    let before = std::fs::read_to_string(devices.join("host.toml")).unwrap();
    let points = |t: &str| t.matches("[[calibration]]").count();
    let calibrate = |extra: &[&str]| {
        pb(d.path())
            .args(["calibrate", "--device", "host", "--devices-dir"])
            .arg(&devices)
            .arg("--add")
            .arg(&rec)
            .arg(&rec2)
            .args(extra)
            .assert()
            .success()
    };
    let held_rows =
        |stdout: &[u8]| String::from_utf8_lossy(stdout).matches("L2-d128-h4/2-f256-v512-q4_0 [held out]").count();
    let dry = calibrate(&["--holdout", "--dry-run"]).stderr(predicate::str::contains("would add L2-d128"));
    let per_point = ["decode", "prefill", "peak-memory"].len();
    assert_eq!(held_rows(&dry.get_output().stdout), 2 * per_point, "both files are in the dry-run fit");
    assert_eq!(std::fs::read_to_string(devices.join("host.toml")).unwrap(), before);
    let real = calibrate(&["--holdout"]).stderr(predicate::str::contains("added L2-d128"));
    assert_eq!(held_rows(&real.get_output().stdout), 2 * per_point);
    let after = std::fs::read_to_string(devices.join("host.toml")).unwrap();
    assert_eq!(points(&after), points(&before) + 2);
    assert!(after.ends_with("holdout = true\n") || after.contains("holdout = true\n\n[calibration.model]"), "{after}");
}
