//! Sharded sweeps: N shards merged equal the unsharded run, record for
//! record; merges of unrelated stores are refused; the shipped CI example
//! parses and uses the flags that exist.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

fn pb() -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    c.current_dir(root()).env("POCKETBENCH_DATA_DIR", data_dir());
    c
}

/// A data directory of this test process's own, so no machine profile of
/// the developer's machine (in ~/.local/share/pocketbench) changes what the
/// tests see.
fn data_dir() -> PathBuf {
    std::env::temp_dir().join(format!("pocketbench-test-data-{}", std::process::id()))
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn shards_merged_equal_the_unsharded_sweep() {
    let d = tempfile::tempdir().unwrap();
    let (whole, merged) = (d.path().join("whole"), d.path().join("merged"));
    pb().args(["sweep", "sweeps/depth.toml", "--predict-only", "-q", "--out"]).arg(&whole).assert().success();
    let mut shard_dirs = Vec::new();
    let mut sizes = Vec::new();
    for i in 1..=3 {
        let out = d.path().join(format!("shard-{i}"));
        pb().args(["sweep", "sweeps/depth.toml", "--predict-only", "-q", "--shard", &format!("{i}/3"), "--out"])
            .arg(&out)
            .assert()
            .success();
        sizes.push(json(&out.join("results.json"))["results"].as_array().unwrap().len());
        shard_dirs.push(out);
    }
    let all = json(&whole.join("results.json"));
    assert_eq!(sizes.iter().sum::<usize>(), all["results"].as_array().unwrap().len(), "the shards split the plan");
    assert!(sizes.iter().all(|n| *n > 0), "{sizes:?}");
    pb().arg("merge").arg(&merged).args(&shard_dirs).assert().success();
    let m = json(&merged.join("results.json"));
    assert_eq!(m["results"], all["results"], "record for record");
    assert_eq!(m["devices"], all["devices"], "frontiers and summaries recomputed over the whole");
    assert_eq!(
        std::fs::read_to_string(merged.join("frontier.csv")).unwrap(),
        std::fs::read_to_string(whole.join("frontier.csv")).unwrap()
    );

    // A merge into an existing store, a shard given twice and an unrelated store are refused.
    pb().arg("merge")
        .arg(&merged)
        .args(&shard_dirs)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    pb().arg("merge")
        .arg(d.path().join("twice"))
        .arg(&shard_dirs[0])
        .arg(&shard_dirs[0])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("shard 1/3 is given twice"));
    let other = d.path().join("other");
    pb().args(["sweep", "sweeps/vocab.toml", "--predict-only", "-q", "--out"]).arg(&other).assert().success();
    pb().arg("merge")
        .arg(d.path().join("mixed"))
        .arg(&shard_dirs[0])
        .arg(&other)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("differ in their sweep file"));
    assert!(!d.path().join("mixed").join("pocketbench.db").exists(), "nothing written for a refused merge");
}

#[test]
fn a_bad_shard_is_a_usage_error() {
    for bad in ["0/3", "4/3", "1", "a/b"] {
        pb().args(["sweep", "sweeps/quick.toml", "--predict-only", "--shard", bad])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("expected I/N"));
    }
}

#[test]
fn the_github_example_parses_and_uses_real_flags() {
    let text = std::fs::read_to_string(root().join("examples/github-sharded-sweep.yml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
    let w = &docs[0];
    let shard = &w["jobs"]["shard"];
    // The shard count is written once (SHARDS); the plan job's step turns it
    // into the matrix. Run that step's shell as the runner would.
    assert_eq!(shard["strategy"]["matrix"]["index"].as_str(), Some("${{ fromJSON(needs.plan.outputs.index) }}"));
    assert_eq!(shard["needs"].as_str(), Some("plan"));
    let plan = w["jobs"]["plan"]["steps"][0]["run"].as_str().unwrap();
    let out = tempfile::NamedTempFile::new().unwrap();
    let status = std::process::Command::new("bash")
        .args(["-c", plan])
        .env("SHARDS", w["env"]["SHARDS"].as_i64().unwrap().to_string())
        .env("GITHUB_OUTPUT", out.path())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(out.path()).unwrap(), "index=[1,2,3,4]\n");
    let runs: Vec<&str> = ["shard", "merge"]
        .iter()
        .flat_map(|j| w["jobs"][*j]["steps"].as_vec().unwrap().iter().filter_map(|s| s["run"].as_str()))
        .collect();
    let sweep = runs.iter().find(|r| r.contains("pocketbench sweep")).expect("a sweep step");
    for flag in ["--shard", "--predict-only", "--json-events", "--out"] {
        assert!(sweep.contains(flag), "{flag}");
    }
    assert!(runs.iter().any(|r| r.contains("pocketbench merge")));
    assert_eq!(w["jobs"]["merge"]["needs"].as_str(), Some("shard"));
}
