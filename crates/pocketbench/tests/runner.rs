//! The host runner against shims that misbehave the ways real probes do, and
//! the real probe on a tiny configuration. The shims are POSIX shell scripts
//! and the checks read `/proc`, so this suite is for Unix (Linux) hosts.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pocketbench::runner::{Failure, HostRunner, Job, Runner};
use pocketbench::workload::Workload;

mod common;

fn job(timeout: Duration) -> Job {
    let shape = common::tiny();
    Job {
        shape,
        workload: Workload::new(16, 8, None).unwrap(),
        reps: 2,
        threads: 1,
        timeout,
        predicted_peak_bytes: 1e6,
        force: false,
        engine: Default::default(),
        engine_model: None,
        cooling: None,
        auto: None,
        pin: false,
        bandwidth_pass: true,
        timed_reloads: true,
        soak: None,
        contention: None,
    }
}

fn shim(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("shim.sh");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn runner(dir: &Path, exe: PathBuf) -> HostRunner {
    let mut r = HostRunner::new("host", exe, dir.join("cache"));
    r.available_bytes = 1 << 30;
    r
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"))
}

#[test]
fn a_timeout_kills_what_the_probe_started_too() {
    // A probe that runs a tool (as llama-bench runs under the probe) and hangs.
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("tool.pid");
    let body = format!("sleep 300 &\necho $! > {}\nwait", pidfile.display());
    let r = runner(d.path(), shim(d.path(), &body));
    assert_eq!(r.measure(&job(Duration::from_secs(1))), Err(Failure::Timeout { seconds: 1.0 }));
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let t = std::time::Instant::now();
    while alive(pid) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let orphan = alive(pid);
    if orphan {
        let _ = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    assert!(!orphan, "the probe's child {pid} outlived the timeout");
}

#[test]
fn a_crash_is_a_failure_with_its_stderr() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(d.path(), shim(d.path(), "echo 'thread main panicked: boom' >&2; exit 3"));
    match r.measure(&job(Duration::from_secs(20))) {
        Err(Failure::Crashed { code: 3, stderr }) => assert!(stderr.contains("boom"), "{stderr}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hang_is_killed_at_the_timeout() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(d.path(), shim(d.path(), "sleep 30"));
    let t = std::time::Instant::now();
    assert_eq!(r.measure(&job(Duration::from_secs(1))), Err(Failure::Timeout { seconds: 1.0 }));
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn sigkill_is_reported_as_probably_out_of_memory() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(d.path(), shim(d.path(), "kill -9 $$"));
    match r.measure(&job(Duration::from_secs(20))) {
        Err(Failure::Killed { signal: 9, hint }) => assert!(hint.contains("out-of-memory")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_output_is_not_a_result() {
    let d = tempfile::tempdir().unwrap();
    // Arguments are: probe --spec SPEC --out OUT.
    let r = runner(d.path(), shim(d.path(), "echo 'half a json {' > \"$5\""));
    assert!(matches!(r.measure(&job(Duration::from_secs(20))), Err(Failure::BadOutput { .. })));
}

#[test]
fn a_configuration_predicted_not_to_fit_is_refused_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(d.path(), shim(d.path(), "exit 0"));
    let mut j = job(Duration::from_secs(20));
    j.predicted_peak_bytes = 4e9;
    match r.measure(&j) {
        Err(Failure::Refused { reason }) => assert!(reason.contains("--force"), "{reason}"),
        other => panic!("{other:?}"),
    }
    j.force = true;
    // Forced, it runs (and this shim writes no result).
    assert!(matches!(r.measure(&j), Err(Failure::BadOutput { .. })));
}

#[test]
fn the_real_probe_measures_a_tiny_model() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(d.path(), PathBuf::from(env!("CARGO_BIN_EXE_pocketbench")));
    let j = job(Duration::from_secs(120));
    let p = r.measure(&j).unwrap();
    assert_eq!(p.reps.len(), 2);
    assert_eq!(p.config_id, j.shape.id());
    assert_eq!(p.engine, "native");
    assert!(p.reps.iter().all(|x| x.decode_tok_s > 0.0
        && x.prefill_s > 0.0
        && x.ttft_s >= x.prefill_s
        && x.load_s.is_some_and(|l| l > 0.0)));
    assert!(p.read_bandwidth.is_some_and(|b| b.bytes_per_s > 1e8 && b.threads == 1));
    assert!(p.peak_hwm_bytes > p.baseline_rss_bytes && p.peak_increase_bytes > 0);
    assert!(p.model_file_bytes > 0);
    assert_eq!(p.threads, 1);
    assert!(p.methods["peak_increase_bytes"].contains("VmHWM"));
    // Energy is measured where this machine has a meter, and said why not elsewhere.
    if pocketbench::meter::detect().is_ok() {
        assert!(p.energy_not_measured.is_none());
        assert!(p.reps.iter().all(|x| x.energy.as_ref().is_some_and(|e| e.seconds > 0.0)));
    } else {
        assert!(p.energy_not_measured.is_some());
        assert!(p.reps.iter().all(|x| x.energy.is_none()));
    }
}
