//! The binary's exit codes and messages (a contract for CI gates).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweeps").join(name)
}

fn pb() -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    // No test here asks a real adb which phones are attached (that would
    // start adb's server on its default port): tests/android.rs does, on a
    // private one.
    c.current_dir(root()).env("POCKETBENCH_DATA_DIR", data_dir()).env("ADB", "/nonexistent/adb");
    c
}

/// A data directory of this test process's own, so no machine profile of
/// the developer's machine (in ~/.local/share/pocketbench) changes what the
/// tests see.
fn data_dir() -> PathBuf {
    std::env::temp_dir().join(format!("pocketbench-test-data-{}", std::process::id()))
}

#[test]
fn unknown_key_names_file_line_column_and_key() {
    let f = fixture("unknown-key.toml");
    pb().arg("sweep")
        .arg(&f)
        .arg("--out")
        .arg(tempfile::tempdir().unwrap().path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("{}:11:1: unknown field `layres`", f.display())))
        .stderr(predicate::str::contains("(at key `space.layres`)"));
}

#[test]
fn unit_mistake_is_an_error_with_position() {
    let f = fixture("bad-unit.toml");
    pb().arg("sweep")
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}:13:7: `50Mb` is not a valid parameter count: unknown unit `Mb`",
            f.display()
        )))
        .stderr(predicate::str::contains("(at key `space.params.min`)"));
}

#[test]
fn non_finite_numbers_are_refused_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[sweep]\nname = \"x\"\ndevices = [\"iphone-18-pro\"]\n[space]\nlayers = 28\nhidden = 896\nkv-heads = 2\nvocab = 65536\n";
    for (extra, line, key) in [
        ("ffn-mult = nan\n", 9, "space.ffn-mult"),
        ("ffn-mult = [2.5, inf]\n", 9, "space.ffn-mult"),
        ("ffn-mult = 2.5\n[space.params]\nmin = -inf\n", 11, "space.params.min"),
        ("ffn-mult = 2.5\n[capability]\ndepth-penalty = nan\n", 11, "capability.depth-penalty"),
    ] {
        let f = dir.path().join("s.toml");
        std::fs::write(&f, format!("{base}{extra}")).unwrap();
        let a = pb().arg("sweep").arg(&f).arg("--predict-only").assert().code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
        assert!(err.contains(&format!("{}:{line}:", f.display())), "{extra}: {err}");
        assert!(err.contains("is not a finite number") && err.contains(&format!("(at key `{key}`)")), "{extra}: {err}");
    }
    // A device profile's numbers too: a bare fraction and a quantity.
    let devices = dir.path().join("devices");
    std::fs::create_dir(&devices).unwrap();
    let ipad = std::fs::read_to_string(root().join("devices/ipad-pro-m5.toml")).unwrap();
    for (from, to, key) in [
        ("value = \"45.4%\"", "value = nan", "model.compute-efficiency.value"),
        ("value = \"153 GB/s\"", "value = \"inf GB/s\"", "facts.bandwidth.value"),
    ] {
        assert!(ipad.contains(from), "{from}");
        std::fs::write(devices.join("ipad-pro-m5.toml"), ipad.replacen(from, to, 1)).unwrap();
        let a = pb().args(["--devices-dir", devices.to_str().unwrap(), "devices"]).assert().code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
        let refused = err.contains("is not a finite number") || err.contains("is not a valid bandwidth: no number");
        assert!(err.contains("ipad-pro-m5.toml:") && refused && err.contains(key), "{to}: {err}");
    }
}

#[test]
fn syntax_error_has_a_position() {
    let f = fixture("syntax.toml");
    pb().arg("sweep")
        .arg(&f)
        .assert()
        .code(2)
        .stderr(format!("error: {}:5:1: invalid array: expected `]`\n", f.display()));
}

#[test]
fn over_the_cap_says_the_count_and_how_to_raise_it() {
    let f = fixture("too-big.toml");
    pb().arg("sweep")
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the space expands to 3904 configurations, over the cap of 100"))
        .stderr(predicate::str::contains("--max-configs 3904"));
}

#[test]
fn a_space_of_impossible_shapes_says_why() {
    pb().arg("sweep")
        .arg(fixture("impossible.toml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no valid configuration is left (1 heads not a multiple of kv-heads)"));
}

#[test]
fn unknown_device_lists_known_ones() {
    pb().arg("sweep").arg(fixture("unknown-device.toml")).assert().code(2).stderr(predicate::str::contains(
        "unknown device `pixel-99` (known: android-any, host, host-llama, ios-any, ipad-pro-m5",
    ));
}

#[test]
fn impossible_shape_on_the_command_line() {
    pb().args(["arch", "--hidden", "896", "--layers", "28", "--kv-heads", "3", "--ffn", "2560", "--vocab", "65536"])
        .assert()
        .code(2)
        .stderr("error: heads (14) must be a multiple of kv-heads (3) for grouped-query attention\n");
    pb().args(["arch", "--preset", "mnn-pocket-0.3b", "--quant", "q5_0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown quantization `q5_0`"));
    pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "host", "--prompt", "0"])
        .assert()
        .code(2)
        .stderr("error: prompt tokens must be at least 1\n");
}

#[test]
fn budget_failure_exits_1_only_when_asked() {
    let args = ["predict", "--preset", "qwen3-0.6b", "--device", "iphone-18-pro"];
    pb().args(args).assert().code(0).stdout(predicate::str::contains("FAIL"));
    pb().args(args).arg("--fail-on-budget").assert().code(1);
    pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "iphone-18-pro", "--fail-on-budget"])
        .assert()
        .code(0);
}

#[test]
fn require_feasible_exits_1_when_a_device_has_none() {
    let dir = tempfile::tempdir().unwrap();
    // Qwen3-1.7B's weights alone are far over the iPhone's 300 MB budget (the
    // host's profile would tie the test to the machine it was calibrated on).
    let f = dir.path().join("s.toml");
    std::fs::write(&f, "[sweep]\nname = \"x\"\ndevices = [\"iphone-18-pro\"]\n[space]\nlayers = 28\nhidden = 2048\nkv-heads = 8\nffn = 6144\nvocab = 151936\n").unwrap();
    pb().arg("sweep").arg(&f).arg("--predict-only").arg("--out").arg(dir.path()).assert().code(0);
    pb().arg("sweep").arg(&f).args(["--predict-only", "--require-feasible", "--out"]).arg(dir.path()).assert().code(1);
}

#[test]
fn predict_json_has_the_contract_fields() {
    let out =
        pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "ipad-pro-m5", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "decode_tok_s",
        "prefill_tok_s",
        "ttft_ms",
        "peak_mem_increase_mb",
        "package_mb",
        "energy_j_per_run",
        "battery_fraction_per_run",
        "budgets",
        "provenance",
        "feasible",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["provenance"], "predicted");
    assert_eq!(v["prompt_tokens"], 512, "predict defaults to the device's reference workload");
    assert_eq!(v["budgets"]["decode"]["status"], "pass");
    let decode = v["decode_tok_s"].as_f64().unwrap();
    assert!((decode / 466.0 - 1.0).abs() < 0.05, "{decode}");
}

#[test]
fn arch_json_has_the_contract_fields() {
    let out = pb().args(["arch", "--preset", "qwen3-0.6b", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params_total"], 596_049_920u64);
    assert_eq!(v["params_non_embedding"], 440_467_456u64);
    for k in ["package_bytes", "weight_bytes_per_token", "kv_bytes_per_token"] {
        assert!(v[k].as_u64().unwrap() > 0, "{k}");
    }
}

#[test]
fn calibrate_writes_the_fit_and_keeps_comments() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("devices/ipad-pro-m5.toml");
    let text = std::fs::read_to_string(&src).unwrap().replace("fitted-digest = ", "# removed\nold-digest-was = ");
    // Unfitted: drop the digest line entirely.
    let text: String = text.lines().filter(|l| !l.starts_with("old-digest-was")).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("ipad-pro-m5.toml"), &text).unwrap();
    let dd = dir.path().to_str().unwrap();
    pb().args(["--devices-dir", dd, "devices"]).assert().code(0).stdout(predicate::str::contains("not fitted yet"));
    pb().args(["--devices-dir", dd, "calibrate", "--device", "ipad-pro-m5"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("decode 466.0 tok/s 472.3 tok/s   +1.36%"));
    let after = std::fs::read_to_string(dir.path().join("ipad-pro-m5.toml")).unwrap();
    assert!(after.contains("fitted-digest = "));
    assert!(after.contains("# Note on the fit"), "comments survive");
    pb().args(["--devices-dir", dd, "devices"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("calibrated (3 points, 1 held out)"));
}

#[test]
fn calibrate_refuses_a_device_without_points() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("devices/oneplus-13.toml")).unwrap();
    let cut = text.find("[[calibration]]").unwrap();
    std::fs::write(dir.path().join("oneplus-13.toml"), &text[..cut]).unwrap();
    pb().args(["--devices-dir", dir.path().to_str().unwrap(), "calibrate", "--device", "oneplus-13"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("has no calibration points"));
}

#[test]
fn report_rerenders_every_export_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    pb().args(["sweep", "sweeps/quick.toml", "-q", "--predict-only", "--out"]).arg(dir.path()).assert().code(0);
    let files = ["results.json", "results.jsonl", "frontier.csv", "summary.md"];
    let before: Vec<String> = files.iter().map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap()).collect();
    for f in files {
        std::fs::remove_file(dir.path().join(f)).unwrap();
    }
    pb().arg("report").arg(dir.path()).assert().code(0);
    let after: Vec<String> = files.iter().map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap()).collect();
    assert_eq!(after, before, "re-rendered from the store alone, byte for byte");
    let empty = tempfile::tempdir().unwrap();
    pb().arg("report").arg(empty.path()).assert().code(2).stderr(predicate::str::contains("no pocketbench store here"));
    std::fs::write(empty.path().join("pocketbench.db"), "not a database at all, just text").unwrap();
    pb().arg("report")
        .arg(empty.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("pocketbench.db: not a usable pocketbench store"));
}

#[test]
fn broken_pipe_is_not_a_crash() {
    // `pocketbench … | head -1` closes the pipe early. The read end is closed
    // before the binary starts, so its first write fails for certain (a
    // `| head` of a short output would have fit in the pipe's buffer and
    // never broken it).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    for args in [&["presets"][..], &["devices"][..], &["predict", "--preset", "qwen3-0.6b", "--device", "ipad-pro-m5"]]
    {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pocketbench"))
            .current_dir(root())
            .args(args)
            .stdout(writer.try_clone().unwrap())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn every_invalid_profile_and_key_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let edit = |name: &str, edits: &[(&str, &str)]| {
        let mut text = std::fs::read_to_string(root().join(format!("devices/{name}.toml"))).unwrap();
        for (from, to) in edits {
            assert!(text.contains(from), "{name} has `{from}`");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
    };
    // Two problems in one file, one in another: all three are reported.
    edit(
        "ipad-pro-m5",
        &[
            ("kv-bits = 16", "kv-bits = 12"),
            ("value = \"45.4%\"", "value = \"250%\""),
            ("range = [\"1.15 W\", \"6.9 W\"]", "range = [\"6.9 W\", \"1.15 W\"]"),
        ],
    );
    edit("oneplus-13", &[("act-bits = 16", "act-bits = 7")]);
    let a = pb().args(["--devices-dir", dir.path().to_str().unwrap(), "devices"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    // Each names its file, line and column, then the key.
    for (file, want) in [
        ("ipad-pro-m5.toml", "model.compute-efficiency: must be in (0, 100%], got 250%"),
        ("ipad-pro-m5.toml", "engine.kv-bits: must be 4, 8, 16 or 32, got 12"),
        ("ipad-pro-m5.toml", "model.active-power.range: must be [low, high] with low <= high"),
        ("oneplus-13.toml", "engine.act-bits: must be 4, 8, 16 or 32, got 7"),
    ] {
        let line =
            stderr.lines().find(|l| l.contains(want)).unwrap_or_else(|| panic!("missing `{want}` in:\n{stderr}"));
        let at = line.split(file).nth(1).unwrap_or_else(|| panic!("`{line}` does not name {file}"));
        let pos: Vec<&str> = at.splitn(4, ':').collect();
        assert!(
            pos.len() == 4 && pos[1].parse::<u32>().is_ok() && pos[2].parse::<u32>().is_ok(),
            "`{line}`: no line:col"
        );
    }
}

#[test]
fn an_out_that_is_a_file_or_a_newer_store_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, "keep me").unwrap();
    pb().args(["sweep", "sweeps/quick.toml", "--predict-only", "--out"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--out names a file"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    let out = dir.path().join("out");
    pb().args(["sweep", "sweeps/quick.toml", "--predict-only", "-q", "--out"]).arg(&out).assert().code(0);
    let db = out.join("pocketbench.db");
    rusqlite::Connection::open(&db).unwrap().pragma_update(None, "user_version", 99).unwrap();
    let before = std::fs::read(&db).unwrap();
    for args in [&["sweep", "sweeps/quick.toml", "--predict-only", "--out"][..], &["report"][..]] {
        pb().args(args).arg(&out).assert().code(2).stderr(predicate::str::contains("store schema version 99 is newer"));
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "nothing stored was changed");
}

#[test]
fn the_built_in_engines_old_name_still_works_and_says_it_is_deprecated() {
    // Parsed (the warning), then refused for the unknown device: nothing runs.
    pb().args(["run", "--preset", "smollm2-135m", "--device", "nope", "--engine", "candle"]).assert().code(2).stderr(
        predicate::str::contains("engine `candle` is deprecated: the built-in engine is now called `native`")
            .and(predicate::str::contains("unknown device `nope`")),
    );
    pb().args(["run", "--preset", "smollm2-135m", "--device", "nope", "--engine", "native"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("deprecated").not());
}

#[test]
fn the_oneplus_13_thread_curve_bends_where_the_prime_cores_run_out() {
    let out = pb()
        .args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13", "--threads", "1..8", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let points: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let decode = |threads: u64, pinned: bool| {
        let p = points
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["placement"]["threads"] == threads && p["placement"]["pinned"] == pinned)
            .unwrap();
        p["decode_tok_s"].as_f64().unwrap()
    };
    assert_eq!(points.as_array().unwrap().len(), 16, "1 to 8 threads, pinned and unpinned");
    // Pinned: the two prime cores carry decode; the third thread lands on a
    // performance core and every share waits for it.
    assert!(decode(2, true) > 1.9 * decode(1, true), "{points}");
    assert!(decode(3, true) < decode(2, true), "{points}");
    // Unpinned, the pool starts on the performance cores at half the bandwidth.
    assert!((decode(2, false) / decode(2, true) - 0.5).abs() < 1e-6, "{points}");
    // The study's setting, 4 threads pinned, is the profile's own: the plain prediction.
    let plain =
        pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13", "--json"]).output().unwrap();
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!((plain["decode_tok_s"].as_f64().unwrap() / decode(4, true) - 1.0).abs() < 1e-9);
    // Prefill keeps climbing with every core.
    let prefill: Vec<f64> = points
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["placement"]["pinned"] == true)
        .map(|p| p["prefill_tok_s"].as_f64().unwrap())
        .collect();
    assert!(prefill.windows(2).all(|w| w[1] > w[0]), "{prefill:?}");
}

#[test]
fn a_prediction_names_the_engine_class_it_predicts_for() {
    for (device, class) in [("oneplus-13", "mnn"), ("host", "native"), ("host-llama", "llama.cpp")] {
        pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", device])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(", engine class `{class}` on cpu]: predicted by")));
    }
}

#[test]
fn threads_a_device_cannot_place_are_refused() {
    pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13", "--threads", "9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--threads 9: device `oneplus-13` has 8 cores"));
    pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "host", "--threads", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("device `host` has no [facts.cpu] clusters"));
    pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13", "--threads", "4..2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected a thread count N or a range A..B"));
}

#[test]
fn a_cluster_without_cores_is_refused_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("devices/oneplus-13.toml")).unwrap();
    let bad = text.replacen("cores = 6,", "cores = 0,", 1);
    assert_ne!(bad, text);
    std::fs::write(dir.path().join("oneplus-13.toml"), bad).unwrap();
    pb().arg("--devices-dir")
        .arg(dir.path())
        .args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("facts.cpu.clusters[1].cores"))
        .stderr(predicate::str::contains("must be at least 1"));
}

#[test]
fn a_sweep_names_another_engine_class_of_a_device_as_id_at_class() {
    let out = tempfile::tempdir().unwrap();
    pb().args(["sweep", "sweeps/quick.toml", "--predict-only", "--devices", "ipad-pro-m5,ipad-pro-m5@llama.cpp"])
        .current_dir(root())
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    let decode = |device: &str| -> Vec<f64> {
        results.iter().filter(|r| r["device"] == device).map(|r| r["decode_tok_s"].as_f64().unwrap()).collect()
    };
    let (mnn, llama) = (decode("ipad-pro-m5"), decode("ipad-pro-m5@llama.cpp"));
    assert_eq!(mnn.len(), llama.len());
    assert!(!mnn.is_empty());
    // The class's decode factor (below 1 on this device) scales every configuration.
    for (m, l) in mnn.iter().zip(&llama) {
        assert!(l < m, "{l} vs {m}");
    }
    let r = results.iter().find(|r| r["device"] == "ipad-pro-m5@llama.cpp").unwrap();
    assert!(r["engine"].as_str().unwrap().starts_with("llama.cpp on gpu"), "{r}");
    // Such a device predicts; it is never measured by pocketbench's own engine.
    pb().args(["run", "--preset", "mnn-pocket-0.3b", "--device", "ipad-pro-m5@llama.cpp"]).assert().code(2).stderr(
        predicate::str::contains("measure `ipad-pro-m5` instead").or(predicate::str::contains("unknown device")),
    );
}

#[test]
fn points_that_contradict_each_other_are_a_warning_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("devices/ios-any.toml")).unwrap()
        + "\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"a\"\n\
           \n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"300 tok/s\"\nsource = \"b\"\n";
    std::fs::write(dir.path().join("ios-any.toml"), &text).unwrap();
    let line = text.lines().position(|l| l == "decode = \"300 tok/s\"").unwrap() + 1;
    pb().args(["--devices-dir", dir.path().to_str().unwrap(), "devices", "show", "ios-any"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("ios-any.toml:{line}:")))
        .stdout(predicate::str::contains("calibration[1].decode: contradicts calibration[0] (100 against 300"));
}

#[test]
fn predict_prints_a_ninety_percent_interval_and_its_confidence() {
    let out =
        pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (lo, mid, hi) = (
        v["decode_tok_s_low"].as_f64().unwrap(),
        v["decode_tok_s"].as_f64().unwrap(),
        v["decode_tok_s_high"].as_f64().unwrap(),
    );
    assert!(lo < mid && mid < hi, "{lo} {mid} {hi}");
    assert_eq!(v["low_confidence"], true, "one energy point calibrates nothing of speed");
    for k in ["prefill_tok_s_low", "prefill_tok_s_high", "peak_mem_increase_mb_low", "peak_mem_increase_mb_high"] {
        assert!(v[k].as_f64().is_some(), "{k}");
    }
    pb().args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13"])
        .assert()
        .success()
        .stdout(predicate::str::contains("confidence    LOW: decode from prior (0 fitted point(s))"))
        .stdout(predicate::str::contains("(90% "));
}
