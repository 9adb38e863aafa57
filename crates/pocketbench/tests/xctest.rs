//! `pocketbench import-xctest`: what a device farm's run of the app's
//! XCTest leaves (`xcresulttool export attachments`: a manifest and the
//! files the test attached; `get test-results metrics`) stored in a sweep's
//! store. No farm, Mac or iPhone has run: the results here are this host's
//! probe on the spec, as the app's `pocketbench_probe_run` returns them,
//! and the manifest and metrics follow the formats the runner-ios fixtures
//! cite.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pocketbench(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pocketbench"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).env("POCKETBENCH_DATA_DIR", dir.join("data"));
    c
}

const SPEC: &str = r#"{"schema":1,"shape":{"hidden":128,"layers":2,"heads":4,"kv_heads":2,"head_dim":32,"ffn":256,
"vocab":512,"tied":true,"qk_norm":true,"quant":"q8_0","context":256},"model":"Documents/pocketbench/models/tiny.gguf",
"workload":{"prompt":16,"gen":8,"context":24},"reps":1,"threads":1,"seed":7,"engine":"native","timeout_s":120.0}"#;

/// A folder as `xcresulttool export attachments` leaves it: the spec and
/// `iterations` results of this host's probe on it, named as xcresulttool
/// names exports (a UUID), and the manifest. Returns the decode speeds.
fn attachments(dir: &Path, iterations: usize) -> (PathBuf, Vec<f64>) {
    let container = dir.join("container");
    std::fs::create_dir_all(&container).unwrap();
    std::fs::write(container.join("spec.json"), SPEC).unwrap();
    let att = dir.join("attachments");
    std::fs::create_dir_all(&att).unwrap();
    std::fs::copy(container.join("spec.json"), att.join("0A1B2C3D-0000-4000-8000-000000000001.json")).unwrap();
    let mut items = vec![serde_json::json!({
        "exportedFileName": "0A1B2C3D-0000-4000-8000-000000000001.json",
        "suggestedHumanReadableName": "pocketbench-spec_0_0A1B2C3D.json",
        "isAssociatedWithFailure": false,
        "deviceName": "Test iPhone",
        "deviceId": "00008150-000A1B2C3D4E5F60"
    })];
    let mut decode = Vec::new();
    for i in 0..iterations {
        let name = format!("0A1B2C3D-0000-4000-8000-00000000010{i}.json");
        let out = Command::new(env!("CARGO_BIN_EXE_pocketbench"))
            .current_dir(&container)
            .args(["probe", "--spec", "spec.json", "--out"])
            .arg(att.join(&name))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(att.join(&name)).unwrap()).unwrap();
        decode.push(r["reps"][0]["decode_tok_s"].as_f64().unwrap());
        items.push(serde_json::json!({
            "exportedFileName": name,
            "suggestedHumanReadableName": format!("pocketbench-result_{i}_0A1B2C3D.json"),
            "isAssociatedWithFailure": false
        }));
    }
    let manifest = serde_json::json!([{
        "testIdentifier": "ProbeMeasureTests/testMeasureSpec()",
        "testIdentifierURL": "test://com.apple.xcode/PocketbenchProbe/PocketbenchProbeTests/ProbeMeasureTests/testMeasureSpec",
        "attachments": items
    }]);
    std::fs::write(att.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    (att, decode)
}

/// `get test-results metrics` output for those iterations.
fn metrics(dir: &Path, decode: &[f64]) -> PathBuf {
    let m = serde_json::json!([{
        "testIdentifier": "ProbeMeasureTests/testMeasureSpec()",
        "testRuns": [{
            "device": {"deviceId": "00008150-000A1B2C3D4E5F60", "deviceName": "Test iPhone", "modelName": "iPhone 17 Pro",
                       "osVersion": "26.1", "platform": "iOS"},
            "testPlanConfiguration": {"configurationId": "1", "configurationName": "Test Scheme Action"},
            "metrics": [
                {"displayName": "Decode speed", "identifier": "dev.pocketbench.decode_tok_s", "unitOfMeasurement": "tokens/s",
                 "measurements": decode},
                {"displayName": "Memory Peak Physical", "unitOfMeasurement": "kB", "measurements": vec![50000.0; decode.len()]},
                {"displayName": "Clock Monotonic Time", "unitOfMeasurement": "s", "measurements": vec![0.25; decode.len()]}
            ]
        }]
    }]);
    let f = dir.join("metrics.json");
    std::fs::write(&f, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    f
}

/// A predicted sweep on `ios-any`: the store the import goes into.
fn store(dir: &Path) -> PathBuf {
    let sweep = dir.join("tiny.toml");
    std::fs::write(
        &sweep,
        "[sweep]\nname = \"tiny\"\ndevices = [\"ios-any\"]\n[workload]\nprompt = 16\ngen = 8\n\
         [space]\nlayers = [1, 2]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\ncontext = 256\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = pocketbench(dir)
        .arg("sweep")
        .arg(&sweep)
        .args(["--predict-only", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn import(dir: &Path, args: &[&str]) -> Output {
    pocketbench(dir).arg("import-xctest").args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_farms_xctest_run_is_stored_as_one_measured_record_with_its_provenance() {
    let d = tempfile::tempdir().unwrap();
    let (att, decode) = attachments(d.path(), 3);
    let m = metrics(d.path(), &decode);
    let out = store(d.path());
    let args = ["--attachments", att.to_str().unwrap(), "--metrics", m.to_str().unwrap(), "--device", "ios-any"];

    // A dry run writes nothing.
    let before = std::fs::read(out.join("pocketbench.db")).unwrap();
    let o = import(d.path(), &[&args[..], &["--out", out.to_str().unwrap(), "--dry-run"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("would store ProbeMeasureTests/testMeasureSpec()"), "{}", text(&o));
    assert_eq!(std::fs::read(out.join("pocketbench.db")).unwrap(), before);

    let o = import(d.path(), &[&args[..], &["--out", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let recs = results["results"].as_array().unwrap();
    let r = recs.iter().find(|r| r["provenance"] == "measured").expect("a measured record");
    assert_eq!(r["device"], "ios-any");
    assert!(r["produced_by"].as_str().unwrap().contains("XCTest (ProbeMeasureTests/testMeasureSpec())"), "{r}");
    // The three iterations are the record's repetitions; its decode is their median.
    let mut sorted = decode.clone();
    sorted.sort_by(f64::total_cmp);
    assert!((r["decode_tok_s"].as_f64().unwrap() - sorted[1]).abs() < 1e-9, "{r}");
    let source = r["methods"]["source"].as_str().unwrap();
    assert!(
        source.contains("3 XCTest measure() iterations") && source.contains("Test iPhone (iPhone 17 Pro, iOS 26.1)")
    );
    assert!(source.contains("XCTMemoryMetric's peak physical memory, median 50.0 MB"), "{source}");
    // The memory meter is the probe's own (VmHWM here; phys_footprint in the app).
    assert!(r["methods"]["peak_mem_increase_mb"].as_str().unwrap().starts_with("measured: VmHWM"), "{r}");
    assert!(std::fs::read_to_string(out.join("report.html")).unwrap().contains("XCTest"));
}

#[test]
fn metrics_of_another_run_and_bad_exports_are_refused_with_exit_2_and_nothing_stored() {
    let d = tempfile::tempdir().unwrap();
    let (att, decode) = attachments(d.path(), 2);
    let out = store(d.path());
    let before = std::fs::read(out.join("pocketbench.db")).unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec!["--device", "ios-any", "--out", out.to_str().unwrap()];
        a.extend_from_slice(extra);
        import(d.path(), &a)
    };

    // XCTest's figures of some other run.
    let other: Vec<f64> = decode.iter().map(|v| v * 1.5).collect();
    let m = metrics(d.path(), &other);
    let o = run(&["--attachments", att.to_str().unwrap(), "--metrics", m.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not of the same run") && text(&o).contains("metrics.json"), "{}", text(&o));

    // No manifest: not an export folder.
    let o = run(&["--attachments", d.path().join("container").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("manifest.json") && text(&o).contains("export attachments"), "{}", text(&o));

    // A manifest naming a file that is not there: the key.
    let manifest = std::fs::read_to_string(att.join("manifest.json")).unwrap();
    std::fs::write(att.join("manifest.json"), manifest.replace("00000000100.json", "gone.json")).unwrap();
    let o = run(&["--attachments", att.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("[0].attachments[1].exportedFileName"), "{}", text(&o));
    std::fs::write(att.join("manifest.json"), &manifest).unwrap();

    // A truncated result: file, line and column.
    let r0 = att.join("0A1B2C3D-0000-4000-8000-000000000100.json");
    let whole = std::fs::read_to_string(&r0).unwrap();
    std::fs::write(&r0, &whole[..whole.len() / 2]).unwrap();
    let o = run(&["--attachments", att.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("000000000100.json:") && text(&o).contains("truncated"), "{}", text(&o));
    // An iteration the app's probe failed.
    std::fs::write(&r0, r#"{"schema":1,"error":{"field":"spec.shape","message":"needs about 900 MB"}}"#).unwrap();
    let o = run(&["--attachments", att.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("the app's probe failed in this iteration") && text(&o).contains("900 MB"));
    std::fs::write(&r0, &whole).unwrap();

    // A store whose sweep lacks the device.
    let o = pocketbench(d.path())
        .args(["import-xctest", "--attachments", att.to_str().unwrap(), "--device", "iphone-18-pro", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("has no device `iphone-18-pro`"), "{}", text(&o));
    assert_eq!(std::fs::read(out.join("pocketbench.db")).unwrap(), before, "nothing half-imported");
}
