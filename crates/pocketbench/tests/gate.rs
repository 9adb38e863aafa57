//! `pocketbench gate` end to end on stores of real host sweeps: a baseline
//! at 2 threads, a candidate slowed by measuring at 1 thread, each input
//! form (store, folder, results.json, results.jsonl, `run --json`), the exit
//! codes, the JUnit read by an XML parser, the summary and the JSON verdict.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

fn pb(d: &Path) -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    c.current_dir(root()).env("POCKETBENCH_DATA_DIR", d.join("data")).env("POCKETBENCH_CACHE", d.join("cache"));
    c
}

const SWEEP: &str = "[sweep]\nname = \"gate\"\ndevices = [\"host\"]\n[workload]\nprompt = 64\ngen = 32\n\
    [space]\nlayers = 4\nhidden = 256\nhead-dim = 64\nkv-heads = 2\nffn = 768\nvocab = 2048\ncontext = 256\n";

/// Two real host sweeps of one small shape, 10 repetitions each: the
/// baseline at 2 threads with the kernels the probe chooses, the candidate at
/// 1 thread with the portable kernels (`POCKETBENCH_KERNELS=portable`), the
/// stand-in for a slowed build: 5-8x slower decode on the kinds of this
/// project (102 -> 22 tok/s at 1 thread on the AMD EPYC kind, debug build),
/// a margin that load on the machine does not close. Threads alone were
/// not: on a busy 2-core host the 2-thread baseline once measured no faster
/// than 1 thread, and the gate rightly passed. The host's decode budget is
/// lowered to 20 tok/s in a copy of the profiles, so only a regression can
/// fail the gate. Built once for every test of this file, holding [`heavy`].
struct Stores {
    dir: PathBuf,
    baseline: PathBuf,
    candidate: PathBuf,
    run_json: PathBuf,
}

/// Held by whatever measures, so two measuring tests of this file never
/// share the 2 cores: a baseline's 2 threads with another test's probe on
/// the same cores measure the load, not the build.
fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

fn stores() -> &'static Stores {
    static S: OnceLock<Stores> = OnceLock::new();
    S.get_or_init(|| {
        let _cores = heavy();
        let dir = std::env::temp_dir().join(format!("pocketbench-gate-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let devices = dir.join("devices");
        std::fs::create_dir_all(&devices).unwrap();
        for e in std::fs::read_dir(root().join("devices")).unwrap() {
            let e = e.unwrap();
            let text = std::fs::read_to_string(e.path()).unwrap();
            let text = if e.file_name() == "host.toml" {
                assert!(text.contains("decode = \"200 tok/s\""), "the host profile's decode budget moved");
                text.replace("decode = \"200 tok/s\"", "decode = \"20 tok/s\"")
            } else {
                text
            };
            std::fs::write(devices.join(e.file_name()), text).unwrap();
        }
        let sweep = dir.join("gate.toml");
        std::fs::write(&sweep, SWEEP).unwrap();
        let measure = |threads: &str, kernels: Option<&str>, out: &Path| {
            let mut c = pb(&dir);
            if let Some(k) = kernels {
                c.env("POCKETBENCH_KERNELS", k);
            }
            c.arg("--devices-dir")
                .arg(&devices)
                .arg("sweep")
                .arg(&sweep)
                .args(["--measure", "all", "--reps", "10", "--threads", threads, "--quiet", "--out"])
                .arg(out)
                .assert()
                .code(0);
        };
        let baseline = dir.join("baseline");
        let candidate = dir.join("candidate");
        measure("2", None, &baseline);
        measure("1", Some("portable"), &candidate);
        let out = pb(&dir)
            .env("POCKETBENCH_KERNELS", "portable")
            .arg("--devices-dir")
            .arg(&devices)
            .args(["run", "--hidden", "256", "--layers", "4", "--head-dim", "64", "--kv-heads", "2", "--ffn", "768"])
            .args(["--vocab", "2048", "--context", "256", "--device", "host", "--prompt", "64", "--gen", "32"])
            .args(["--reps", "8", "--threads", "1", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run_json = dir.join("run.json");
        std::fs::write(&run_json, &out.stdout).unwrap();
        Stores { dir, baseline, candidate, run_json }
    })
}

/// The two stores differ in threads by design (see [`Stores`]), so the
/// gate is told to compare them anyway; [`a_protocol_mismatch_is_refused_unless_allowed`]
/// checks that it refuses without being told. They are measured on
/// whatever machine runs the tests, which may be busy while one side is
/// measured and not the other (a CI run beside a build marked the baseline
/// contended, and the gate rightly refused to compare): these tests are
/// about verdicts on a 5-8x slowdown that load does not close, so the gate
/// is also told to compare contended data (the refusal is checked by
/// `gate::trust`'s own tests).
fn gate(s: &Stores, baseline: &Path, candidate: &Path) -> Command {
    let mut c = pb(&s.dir);
    c.arg("gate").arg("--baseline").arg(baseline).arg("--candidate").arg(candidate);
    c.args(["--allow-protocol-mismatch", "--allow-contended"]);
    c
}

#[test]
fn a_protocol_mismatch_is_refused_unless_allowed() {
    let s = stores();
    pb(&s.dir)
        .arg("gate")
        .arg("--baseline")
        .arg(&s.baseline)
        .arg("--candidate")
        .arg(&s.candidate)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("measured under different protocols (threads 2 vs 1")
                .and(predicate::str::contains("--allow-protocol-mismatch")),
        );
    let json = s.dir.join("mismatch.json");
    gate(s, &s.baseline, &s.candidate)
        .args(["--json"])
        .arg(&json)
        .assert()
        .stdout(predicate::str::contains("protocol  measured differently (--allow-protocol-mismatch): threads 2 vs 1"));
    let v = verdict(&json);
    assert_eq!(v["protocol_differences"][0]["field"], "threads", "{v}");
    assert_eq!(
        (v["protocol_differences"][0]["baseline"].as_str(), v["protocol_differences"][0]["candidate"].as_str()),
        (Some("2"), Some("1"))
    );
    // The same store: nothing to refuse, nothing listed.
    let same = s.dir.join("same-protocol.json");
    pb(&s.dir)
        .arg("gate")
        .arg("--baseline")
        .arg(&s.baseline)
        .arg("--candidate")
        .arg(&s.baseline)
        .arg("--json")
        .arg(&same)
        .assert()
        .code(0);
    assert!(verdict(&same).get("protocol_differences").is_none());
}

fn verdict(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_same_store_passes() {
    let s = stores();
    let json = s.dir.join("same.json");
    gate(s, &s.baseline, &s.baseline).arg("--json").arg(&json).assert().code(0);
    let v = verdict(&json);
    let decode = v["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == "decode_tok_s").unwrap();
    assert_eq!(decode["ratio"], 1.0);
    assert_eq!(decode["baseline"]["n"], 10);
    // No change, and a pass only where the store's own noise could have
    // shown the 3% minimum effect; on a noisier machine it is underpowered.
    let detectable = decode["detectable"].as_f64().expect("the change it could see");
    if detectable <= 0.03 {
        assert_eq!(decode["status"], "pass", "{decode}");
    } else {
        assert_eq!(decode["status"], "inconclusive", "{decode}");
        assert!(decode["reason"].as_str().unwrap().starts_with("inconclusive (underpowered: could see"), "{decode}");
    }
    // The outcome is every metric's, not decode's alone: prefill or TTFT
    // can be underpowered on a busy machine while decode passes. A store
    // against itself never fails.
    let statuses: Vec<&str> =
        v["comparisons"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert!(statuses.iter().all(|s| ["pass", "inconclusive", "not-measured"].contains(s)), "{v}");
    let expected = if statuses.contains(&"inconclusive") { "inconclusive" } else { "pass" };
    assert_eq!(v["outcome"], expected, "{v}");
}

#[test]
fn a_slowed_candidate_fails_with_junit_summary_and_json() {
    let s = stores();
    let (junit, summary, json) = (s.dir.join("slow.xml"), s.dir.join("summary.md"), s.dir.join("slow.json"));
    std::fs::write(&summary, "earlier step\n").unwrap();
    gate(s, &s.baseline.join("pocketbench.db"), &s.candidate)
        .arg("--junit")
        .arg(&junit)
        .arg("--summary")
        .arg(&summary)
        .arg("--json")
        .arg(&json)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL").and(predicate::str::contains("regression: decode_tok_s")));

    let text = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed JUnit XML");
    let suites = doc.root_element();
    assert_eq!(suites.tag_name().name(), "testsuites");
    let cases: Vec<roxmltree::Node> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 4, "one testcase per metric of the one matched result");
    assert_eq!(suites.attribute("tests"), Some("4"));
    let prop = |case: &roxmltree::Node, name: &str| -> String {
        case.descendants()
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .unwrap_or_default()
            .to_string()
    };
    let decode = cases.iter().find(|c| c.attribute("name").unwrap().starts_with("decode_tok_s")).unwrap();
    let failure = decode.children().find(|n| n.has_tag_name("failure")).expect("decode fails");
    assert_eq!(failure.attribute("type"), Some("regression"));
    assert!(failure.attribute("message").unwrap().starts_with("regression: decode_tok_s"));
    let ratio: f64 = prop(decode, "ratio").parse().unwrap();
    assert!(ratio < 0.97, "portable kernels at 1 thread against the chosen at 2: ratio {ratio}");
    assert!(prop(decode, "p-regression-holm").parse::<f64>().unwrap() < 0.01);
    assert_eq!(prop(decode, "baseline-n"), "10");
    // Energy is not measured on this host unless it has a meter; either way
    // the testcase says what happened instead of passing silently.
    let energy = cases.iter().find(|c| c.attribute("name").unwrap().starts_with("energy_j_per_run")).unwrap();
    let status = prop(energy, "status");
    assert!(
        ["not-measured", "pass", "regression", "improvement", "inconclusive"].contains(&status.as_str()),
        "{status}"
    );
    if status == "not-measured" {
        assert!(energy.children().any(|n| n.has_tag_name("skipped")));
    }

    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("earlier step\n## pocketbench gate: FAILED"), "appended: {md}");
    assert!(md.contains("| FAIL |"));
    assert_eq!(verdict(&json)["outcome"], "fail");
}

#[test]
fn every_input_form_gives_the_same_verdict() {
    let s = stores();
    let forms = [
        (s.baseline.clone(), s.candidate.clone()),
        (s.baseline.join("results.json"), s.candidate.join("results.jsonl")),
        (s.baseline.join("results.jsonl"), s.candidate.join("pocketbench.db")),
    ];
    let mut seen = Vec::new();
    for (i, (b, c)) in forms.iter().enumerate() {
        let json = s.dir.join(format!("form{i}.json"));
        gate(s, b, c).arg("--json").arg(&json).assert().code(1);
        let v = verdict(&json);
        let decode =
            v["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == "decode_tok_s").unwrap().clone();
        seen.push((decode["status"].clone(), decode["ratio"].clone(), decode["p_regression"].clone()));
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    // `run --json` output (one record, 8 repetitions as slowed as the candidate) is a candidate too.
    let json = s.dir.join("run-form.json");
    gate(s, &s.baseline, &s.run_json).arg("--json").arg(&json).assert().code(1);
    assert_eq!(verdict(&json)["candidate"]["kind"], "run --json");
}

#[test]
fn improvements_are_reported_and_pass() {
    let s = stores();
    // The faster side runs 2 threads to the other's 1: its peak is about
    // 1 MB higher (a second thread's stack and scratch), at the default
    // minimum memory effect; that is not what this test is about.
    gate(s, &s.candidate, &s.baseline)
        .args(["--min-effect-memory-mb", "4"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("better").and(predicate::str::contains("improvement: decode_tok_s")));
}

#[test]
fn bad_inputs_are_usage_errors_that_name_the_file() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope.db");
    pb(d.path())
        .args(["gate", "--baseline"])
        .arg(&missing)
        .arg("--candidate")
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nope.db").and(predicate::str::contains("reading the baseline")));
    let junk = d.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    pb(d.path())
        .args(["gate", "--baseline"])
        .arg(&junk)
        .arg("--candidate")
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("junk.json: not pocketbench results"));
    let lines = d.path().join("bad.jsonl");
    std::fs::write(&lines, "{}\n").unwrap();
    pb(d.path())
        .args(["gate", "--baseline"])
        .arg(&lines)
        .arg("--candidate")
        .arg(&lines)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.jsonl: not pocketbench results: line 1"));
    pb(d.path())
        .args(["gate", "--alpha", "2", "--baseline", "a", "--candidate", "b"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("alpha must be between 0 and 1"));
    let sweep = d.path().join("s.toml");
    std::fs::write(&sweep, format!("{SWEEP}[gate]\nalpha = 0.05\nmin-efect-speed = 0.1\n")).unwrap();
    pb(d.path())
        .args(["gate", "--baseline", "a", "--candidate", "b", "--sweep"])
        .arg(&sweep)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("s.toml").and(predicate::str::contains("min-efect-speed")));
}

#[test]
fn power_prints_the_simulated_rates() {
    let d = tempfile::tempdir().unwrap();
    pb(d.path()).args(["gate", "--power", "--trials", "200"]).assert().code(0).stdout(
        predicate::str::contains("A/A (identical builds) declared a regression")
            .and(predicate::str::contains("slowdown caught")),
    );
}

#[test]
fn the_github_example_parses_and_uses_real_flags() {
    let text = std::fs::read_to_string(root().join("examples/github-device-gate.yml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
    let w = &docs[0];
    // `gh run list` and `gh run download` need to read the repository's runs.
    assert_eq!(w["permissions"]["actions"].as_str(), Some("read"), "{text}");
    let steps = w["jobs"]["gate"]["steps"].as_vec().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    let sweep = runs.iter().find(|r| r.contains("pocketbench sweep")).expect("a sweep step");
    for flag in ["--devices", "--measure", "--reps", "--out"] {
        assert!(sweep.contains(flag), "{flag}");
    }
    let gate = runs.iter().find(|r| r.contains("pocketbench gate")).expect("a gate step");
    for flag in ["--sweep", "--baseline", "--candidate", "--junit", "--json", "--summary \"$GITHUB_STEP_SUMMARY\""] {
        assert!(gate.contains(flag), "{flag}");
    }
    // The flags it uses exist: `gate --help` lists each.
    let help = pb(&std::env::temp_dir()).args(["gate", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for flag in ["--sweep", "--baseline", "--candidate", "--junit", "--json", "--summary"] {
        assert!(help.contains(flag), "{flag}");
    }
    let reps = w["env"]["REPS"].as_i64().unwrap();
    assert!(reps >= 6, "at least the gate's min-samples");
    assert!(steps.iter().any(|s| s["with"]["name"].as_str() == Some("pocketbench-baseline")));
}

#[test]
fn history_names_the_input_where_a_shift_began() {
    let s = stores();
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&s.run_json).unwrap()).unwrap();
    let dir = s.dir.join("history");
    std::fs::create_dir_all(&dir).unwrap();
    let mut inputs = Vec::new();
    for i in 0..12 {
        // The same measured record, 10% slower from the 7th input on.
        let mut r = record.clone();
        let k = if i < 6 { 1.0 } else { 0.9 };
        for rep in r["measurement"]["probe"]["reps"].as_array_mut().unwrap() {
            rep["decode_tok_s"] = serde_json::json!(rep["decode_tok_s"].as_f64().unwrap() * k);
        }
        let p = dir.join(format!("c{i:02}.jsonl"));
        std::fs::write(&p, serde_json::to_string(&r).unwrap() + "\n").unwrap();
        inputs.push(p);
    }
    let json = dir.join("history.json");
    pb(&s.dir).arg("history").args(&inputs).arg("--json").arg(&json).assert().code(0).stdout(
        predicate::str::contains("decode_tok_s of")
            .and(predicate::str::contains("c06.jsonl (input 7 of 12)"))
            .and(predicate::str::contains("(-10.0%, worse)"))
            .and(predicate::str::contains("ordered by given")),
    );
    let h = verdict(&json);
    let decode = h["series"].as_array().unwrap().iter().find(|x| x["metric"] == "decode_tok_s").unwrap();
    assert_eq!(decode["points"].as_array().unwrap().len(), 12);
    assert_eq!(decode["shifts"][0]["input"], 6);
    // Prefill did not move: no shift there.
    let prefill = h["series"].as_array().unwrap().iter().find(|x| x["metric"] == "prefill_tok_s").unwrap();
    assert!(prefill["shifts"].as_array().unwrap().is_empty());
}

#[test]
fn gate_measure_alternates_the_sides_saves_them_and_gates() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("abab");
    let json = d.path().join("v.json");
    // The candidate is another probe binary, as a CI job's would be: this
    // one behind a script that slows it (the portable kernels), so the
    // regression does not depend on how the cores are shared.
    let slowed = d.path().join("slowed-pocketbench");
    let exe = assert_cmd::cargo::cargo_bin("pocketbench");
    std::fs::write(&slowed, format!("#!/bin/sh\nPOCKETBENCH_KERNELS=portable exec '{}' \"$@\"\n", exe.display()))
        .unwrap();
    let mut perms = std::fs::metadata(&slowed).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&slowed, perms).unwrap();
    let _cores = heavy();
    pb(d.path())
        .args(["gate", "--measure", "--hidden", "256", "--layers", "4", "--head-dim", "64", "--kv-heads", "2"])
        .args(["--ffn", "768", "--vocab", "2048", "--context", "256", "--prompt", "64", "--gen", "32", "--reps", "6"])
        // Threads (and so the protocol) differ on purpose.
        .args([
            "--baseline-threads",
            "2",
            "--candidate-threads",
            "1",
            "--min-samples",
            "6",
            "--allow-protocol-mismatch",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--candidate-probe")
        .arg(&slowed)
        .arg("--json")
        .arg(&json)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("alternating (ABAB): 12 probe runs")
                .and(predicate::str::contains("[  12/12] candidate")),
        )
        .stdout(predicate::str::contains("regression: decode_tok_s"));
    for side in ["baseline", "candidate"] {
        let text = std::fs::read_to_string(out.join(format!("{side}.jsonl"))).unwrap();
        assert_eq!(text.lines().count(), 6, "{side}: one record per repetition, saved as it landed");
    }
    let v = verdict(&json);
    // One VmHWM reading per probe run: peak memory is tested like the speeds.
    let mem = v["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == "peak_mem_increase_mb").unwrap();
    assert_eq!(mem["baseline"]["n"], 6);
    assert!(mem["method"].as_str().unwrap().starts_with("mann-whitney"), "{mem}");
    // The saved sides gate again, the same way, from the files.
    pb(d.path())
        .args(["gate", "--min-samples", "6", "--baseline"])
        .arg(out.join("baseline.jsonl"))
        .arg("--candidate")
        .arg(out.join("candidate.jsonl"))
        .arg("--allow-protocol-mismatch")
        .assert()
        .code(1);
}

#[test]
fn gate_measure_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    pb(d.path())
        .args(["gate", "--measure"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--measure needs a configuration"));
    pb(d.path())
        .args(["gate", "--measure", "--preset", "smollm2-135m", "--baseline", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
    pb(d.path())
        .args(["gate", "--measure", "--preset", "mnn-pocket-0.3b", "--baseline-probe", "/nonexistent/pocketbench"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/pocketbench: no such probe binary"));
}
