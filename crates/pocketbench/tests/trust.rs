//! What a measurement's samples say beside its medians, end to end through
//! the real probe process: a busy process alongside is seen and retaken, a
//! wrong token makes the result invalid (exit 4), every decode step is
//! timed, and `--reps auto` says the precision it reached.

use std::process::{Child, Command as Std};

#[path = "common/cli.rs"]
#[allow(dead_code)] // not every test binary uses every helper
mod cli;
use cli::{pb, TINY};

/// The tiny shape on this host with one thread.
fn tiny() -> Vec<&'static str> {
    [TINY, &["--device", "host", "--threads", "1"]].concat()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

/// Busy-loop processes that stop when dropped.
struct Busy(Vec<Child>);

impl Busy {
    fn start(n: usize) -> Busy {
        Busy((0..n).map(|_| Std::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap()).collect())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_busy_process_alongside_is_flagged_and_retaken() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // As many busy loops as CPUs: whichever CPU the probe's one thread is
    // on, another process wants it too.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let busy = Busy::start(cpus);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = pb(d.path())
        .arg("run")
        .args(tiny())
        .args(["--prompt", "16", "--gen", "32", "--reps", "3", "--json"])
        .output()
        .unwrap();
    drop(busy);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    let m = &v["measurement"];
    let s = &m["probe"]["sampling"];
    let reps = m["probe"]["reps"].as_array().unwrap();
    let flagged = reps.iter().filter(|r| r["window"]["contended"] == true).count();
    assert!(flagged >= 1, "no repetition was flagged: {s}");
    assert!(s["retaken"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!(s["retaken"].as_u64().unwrap() as usize, reps.iter().filter(|r| r["retaken"] == true).count());
    assert_eq!(m["decode"]["n"], 3, "retaken repetitions are not summarized");
    for r in reps.iter().filter(|r| r["window"]["contended"] == true) {
        assert!(r["window"]["other_share"].as_f64().unwrap() > 0.10, "{r}");
    }
    let clean_kept = s["clean"].as_u64().unwrap();
    let contended_kept = s["contended"].as_u64().unwrap();
    assert_eq!(clean_kept + contended_kept, 3, "{s}");
    assert_eq!(m["contended"] == true, contended_kept > 0);
    assert!(v["methods"]["decode_tok_s"].as_str().unwrap().contains("retaken"), "{}", v["methods"]["decode_tok_s"]);
}

#[test]
fn every_step_is_timed_and_repetitions_agree_on_their_tokens() {
    let d = tempfile::tempdir().unwrap();
    let out = pb(d.path())
        .arg("run")
        .args(tiny())
        .args(["--prompt", "16", "--gen", "24", "--reps", "3", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    let m = &v["measurement"];
    for r in m["probe"]["reps"].as_array().unwrap() {
        assert_eq!(r["itl_us"].as_array().unwrap().len(), 24);
        assert_eq!(r["tokens_hash"], m["output"]["tokens_hash"]);
        assert!(r["window"]["seconds"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(m["output"]["agree"], true);
    let itl = &m["itl"];
    let (p50, p90, p99, max) = (
        itl["p50_ms"].as_f64().unwrap(),
        itl["p90_ms"].as_f64().unwrap(),
        itl["p99_ms"].as_f64().unwrap(),
        itl["max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p90 && p90 <= p99 && p99 <= max, "{itl}");
    assert!(
        m["probe"]["covariates"]["allowed_cpus"].as_array().is_some_and(|c| !c.is_empty())
            || !cfg!(target_os = "linux")
    );
}

#[test]
fn a_wrong_token_makes_the_result_invalid_with_its_own_exit_code() {
    let d = tempfile::tempdir().unwrap();
    let out = pb(d.path())
        .env("POCKETBENCH_INJECT_WRONG_TOKEN", "1")
        .arg("run")
        .args(tiny())
        .args(["--prompt", "16", "--gen", "8", "--reps", "3", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid output") && stderr.contains("2 different token sequences"), "{stderr}");
    // The data is printed (and so kept) before the refusal.
    let v = json(&out);
    assert_eq!(v["measurement"]["output"]["agree"], false);
    assert_eq!(v["measurement"]["output"]["distinct"], 2);
    assert!(v["measurement"]["probe"]["methods"]["fault"].as_str().unwrap().contains("repetition 1"));
}

#[test]
fn automatic_repetitions_state_the_precision_they_reached() {
    let d = tempfile::tempdir().unwrap();
    let out = pb(d.path())
        .arg("run")
        .args(tiny())
        .args(["--prompt", "16", "--gen", "16", "--reps", "auto", "--min-reps", "3", "--max-reps", "8", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    let s = &v["measurement"]["probe"]["sampling"];
    assert_eq!(s["precision_target"], 0.02);
    let reached = s["precision_reached"].as_f64().unwrap();
    let n = v["measurement"]["decode"]["n"].as_u64().unwrap();
    assert!((3..=8).contains(&n), "{n}");
    match s["stopped_by"].as_str().unwrap() {
        "precision" => assert!(reached <= 0.02, "{s}"),
        "max reps" => assert_eq!(n, 8),
        other => panic!("stopped by {other}: {s}"),
    }
    assert!(v["methods"]["decode_tok_s"].as_str().unwrap().contains("repeated until the median's 95% interval"));
    pb(d.path())
        .arg("run")
        .args(tiny())
        .args(["--reps", "auto", "--precision", "0"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--precision must be above 0 and below 1"));
    pb(d.path())
        .arg("run")
        .args(tiny())
        .args(["--reps", "lots"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("expected a number of repetitions or `auto`"));
}
