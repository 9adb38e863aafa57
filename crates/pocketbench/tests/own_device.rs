//! A device of one's own, end to end through the CLI: `devices add` writes
//! a profile based on the built-in one of its engine class, `devices show`
//! marks what it inherits, and `predict` and `sweep` use it.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn pb(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    c.current_dir(dir).env("POCKETBENCH_DATA_DIR", dir.join("data")).arg("--devices-dir").arg(dir.join("devices"));
    c
}

#[test]
fn a_device_added_in_a_few_facts_is_shown_predicted_and_swept() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("devices")).unwrap();
    let add = ["devices", "add", "my-phone", "--name", "Test phone", "--chip", "Snapdragon 8 Elite"];
    let facts = ["--bandwidth", "84.8 GB/s", "--memory", "12 GiB", "--battery", "5000 mAh", "--voltage", "3.87 V"];
    pb(d.path())
        .args(add)
        .args(facts)
        .args(["--engine-class", "mnn", "--source", "a spec sheet"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("based on `oneplus-13`"));
    let text = std::fs::read_to_string(d.path().join("devices/my-phone.toml")).unwrap();
    assert!(text.contains("based-on = \"oneplus-13\"") && text.contains("value = \"84.8 GB/s\""), "{text}");

    pb(d.path()).args(["devices", "show", "my-phone"]).assert().code(0).stdout(
        predicate::str::contains("based on     `oneplus-13`")
            .and(predicate::str::is_match(r"\n  \* compute ").unwrap())
            .and(predicate::str::is_match(r"\n    bandwidth  84.8 GB/s").unwrap())
            .and(predicate::str::contains("prior: `oneplus-13`'s fitted value")),
    );
    let json = pb(d.path()).args(["devices", "show", "my-phone", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["based_on"]["id"], "oneplus-13");
    let inherited =
        |key: &str| v["facts"].as_array().unwrap().iter().find(|e| e["key"] == key).unwrap()["inherited"].clone();
    assert_eq!((inherited("facts.bandwidth"), inherited("facts.compute")), (false.into(), true.into()));

    pb(d.path()).args(["predict", "--preset", "mnn-pocket-0.3b", "--device", "my-phone"]).assert().code(0).stdout(
        predicate::str::contains("on Test phone (Snapdragon 8 Elite) [MNN CPU, engine class `mnn` on cpu]")
            .and(predicate::str::contains("priors only")),
    );
    let sweep = d.path().join("own.toml");
    std::fs::write(
        &sweep,
        "[sweep]\nname = \"own\"\ndevices = [\"my-phone\"]\n[space]\nlayers = [16, 28]\nhidden = 896\nhead-dim = 64\nkv-heads = 2\nffn-mult = 3\nvocab = 65536\n",
    )
    .unwrap();
    pb(d.path())
        .args(["sweep", "own.toml", "--predict-only", "--quiet", "--out", "out"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("my-phone:"));

    // Again: the id is taken.
    pb(d.path())
        .args(add)
        .args(facts)
        .args(["--engine-class", "mnn"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a device `my-phone` exists already"));
    pb(d.path())
        .args([
            "devices",
            "add",
            "gpu-llama",
            "--name",
            "x",
            "--bandwidth",
            "1 GB/s",
            "--engine-class",
            "llama.cpp",
            "--gpu",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no built-in profile of the llama.cpp engine class on a GPU"));
}
