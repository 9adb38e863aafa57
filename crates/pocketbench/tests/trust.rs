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
    // A shape whose repetitions take about 0.1 s on one thread: a window of
    // the tiny shape's (2 ms) can pass between two of the scheduler's time
    // slices without the probe's thread ever waiting.
    let out = pb(d.path())
        .arg("run")
        .args(["--hidden", "512", "--layers", "4", "--head-dim", "64", "--kv-heads", "2", "--ffn", "1024"])
        .args(["--vocab", "4096", "--context", "256", "--device", "host", "--threads", "1"])
        .args(["--prompt", "16", "--gen", "200", "--reps", "3", "--json"])
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
    // Each flagged window passed a threshold of the default rule: others'
    // CPU time (a window long enough for ticks to tell), CPU pressure, or
    // the run delay of the probe's own threads.
    for r in reps.iter().filter(|r| r["window"]["contended"] == true) {
        let w = &r["window"];
        let past = |k: &str, limit: f64| w[k].as_f64().is_some_and(|v| v > limit);
        assert!(past("other_share", 0.10) || past("cpu_pressure", 0.10) || past("run_delay_share", 0.05), "{r}");
    }
    let clean_kept = s["clean"].as_u64().unwrap();
    let contended_kept = s["contended"].as_u64().unwrap();
    let drifted_kept = s["drifted"].as_u64().unwrap();
    assert!(clean_kept + contended_kept + drifted_kept >= 3, "{s}");
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
    // The first repetition keeps its tokens (the prefill's and 24 decoded),
    // the others only their hash.
    let reps = m["probe"]["reps"].as_array().unwrap();
    assert_eq!(reps[0]["tokens"].as_array().map(Vec::len), Some(25));
    assert!(reps[1..].iter().all(|r| r.get("tokens").is_none()));
    // And the record says how it was measured.
    assert_eq!(m["protocol"]["workload"], "16+24");
    assert_eq!(m["protocol"]["reps"], "fixed");
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

/// `bench repeatability` runs fresh processes of ours and, in turns, of a
/// llama-bench (here a stand-in replaying recorded output) on the same GGUF,
/// and gives each engine's spread.
#[cfg(unix)]
#[test]
fn repeatability_runs_fresh_processes_in_turns_with_llama_bench() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama-bench");
    for (from, to) in [("pocket-t2-pp64.json", "pp.json"), ("pocket-t2-tg16-d64.json", "tg.json")] {
        std::fs::copy(fixtures.join(from), d.path().join(to)).unwrap();
    }
    let shim = d.path().join("llama-bench");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$*\" >> {0}/args.log\ncd {0}\ncase \"$*\" in *\"-n 0 \"*) cat pp.json ;; *) cat tg.json ;; esac\n",
            d.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = pb(d.path())
        .args(["bench", "repeatability"])
        .args([TINY, &["--threads", "2", "--prompt", "64", "--gen", "16", "--reps", "3"]].concat())
        .args(["--processes", "2", "--llama-reps", "3", "--json", "--llama-bench"])
        .arg(&shim)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    let ours = &v["ours"];
    assert_eq!(ours["processes"].as_array().unwrap().len(), 2, "{ours}");
    assert!(ours["cv_decode"].as_f64().is_some_and(|c| c >= 0.0), "{ours}");
    for p in ours["processes"].as_array().unwrap() {
        assert!(p["engine"].as_str().unwrap().starts_with("native"), "{p}");
        assert_eq!(p["reps"], 3);
        // The tiny model's weights sit in the caches: no bandwidth pass.
        assert!(p["efficiency"].is_null() && p["bandwidth_gb_s"].is_null(), "{p}");
    }
    let theirs = &v["reference"];
    let rows = theirs["processes"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{theirs}");
    assert!(rows.iter().all(|p| p["engine"].as_str().unwrap().starts_with("llama-bench")), "{theirs}");
    // The recorded tg16 samples 173.241, 181.592, 175.893: median 175.893,
    // the same in both processes, so a spread of 0.
    assert!((rows[0]["decode_tok_s"].as_f64().unwrap() - 175.893).abs() < 1e-9, "{theirs}");
    assert_eq!(theirs["cv_decode"], 0.0);
    // In turns: ours, llama-bench, ours, llama-bench (two llama-bench calls each).
    let log = std::fs::read_to_string(d.path().join("args.log")).unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");
    assert!(log.lines().all(|l| l.contains("-t 2 -r 3")), "{log}");

    pb(d.path())
        .args(["bench", "repeatability"])
        .args(TINY)
        .args(["--processes", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--processes must be at least 2"));
}
