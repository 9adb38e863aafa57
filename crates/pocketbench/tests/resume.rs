//! A measuring sweep killed with SIGKILL at random points resumes without
//! losing, redoing or duplicating a finished measurement, and its store
//! stays sound. Five kills run with the suite; twenty in the ignored soak
//! test (`cargo test --test resume -- --ignored`).
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

const CONFIGS: usize = 6;

fn sweep_file(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("kill.toml");
    std::fs::write(
        &f,
        "[sweep]\nname = \"kill\"\ndevices = [\"host\"]\n[workload]\nprompt = 16\ngen = 8\n\
         [space]\nlayers = [1, 2, 3]\nhidden = [128, 256]\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\ncontext = 256\n",
    )
    .unwrap();
    f
}

fn sweep(dir: &Path, f: &Path, out: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_pocketbench"));
    c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap())
        .env("POCKETBENCH_CACHE", dir.join("cache"))
        .env("POCKETBENCH_DATA_DIR", dir.join("data"))
        .arg("sweep")
        .arg(f)
        .args(["--measure", "all", "--reps", "2", "--threads", "1", "-q", "--out"])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

/// Measured results in the store: (config, device, job) -> decode tok/s,
/// after checking the file is sound and no key is stored twice.
fn measured(db: &Path) -> BTreeMap<(String, String, String), f64> {
    if !db.exists() {
        return BTreeMap::new();
    }
    let c = rusqlite::Connection::open(db).unwrap();
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    let tables: i64 =
        c.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'results'", [], |r| r.get(0)).unwrap();
    if tables == 0 {
        return BTreeMap::new();
    }
    let mut st = c
        .prepare("SELECT config_id, device, job_key, decode_tok_s FROM results WHERE provenance = 'measured'")
        .unwrap();
    let rows: Vec<((String, String, String), f64)> =
        st.query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?))).unwrap().map(Result::unwrap).collect();
    let n = rows.len();
    let map: BTreeMap<_, _> = rows.into_iter().collect();
    assert_eq!(map.len(), n, "a measurement is stored twice");
    // A repetition contended by something else on the machine is retaken
    // and kept, marked (`retaken`): it is not one of the two.
    let samples: i64 = c.query_row("SELECT count(*) FROM samples WHERE retaken IS NOT 1", [], |r| r.get(0)).unwrap();
    assert_eq!(samples as usize, 2 * n, "every measured result has its two samples, no more");
    map
}

fn kill_and_resume(kills: usize, seed: u64) {
    let d = tempfile::tempdir().unwrap();
    let f = sweep_file(d.path());
    let out = d.path().join("out");
    let db = out.join("pocketbench.db");
    // How long a whole uninterrupted run takes here, to spread the kills over it.
    let t = Instant::now();
    {
        let scratch = d.path().join("scratch");
        assert!(sweep(d.path(), &f, &scratch).status().unwrap().success());
        assert_eq!(measured(&scratch.join("pocketbench.db")).len(), CONFIGS);
    }
    let full = t.elapsed().as_secs_f64();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen: BTreeMap<(String, String, String), f64> = BTreeMap::new();
    for _ in 0..kills {
        let mut child = sweep(d.path(), &f, &out).spawn().unwrap();
        std::thread::sleep(Duration::from_secs_f64(rng.random_range(0.02..1.0) * full));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let now = measured(&db);
        for (k, v) in &seen {
            assert_eq!(now.get(k), Some(v), "a finished measurement was lost or redone: {k:?}");
        }
        seen = now;
    }
    let status = sweep(d.path(), &f, &out).status().unwrap();
    assert!(status.success());
    let end = measured(&db);
    assert_eq!(end.len(), CONFIGS, "every configuration measured once");
    for (k, v) in &seen {
        assert_eq!(end.get(k), Some(v), "a finished measurement was lost or redone: {k:?}");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), CONFIGS);
    assert!(results.iter().all(|r| r["provenance"] == "measured"));
    // No probe outlives its killed sweep (each asks to die with its parent).
    std::thread::sleep(Duration::from_millis(300));
    let probes = std::process::Command::new("pgrep").args(["-f", &format!("{}.*probe", d.path().display())]).output();
    if let Ok(p) = probes {
        assert!(p.stdout.is_empty(), "orphaned probes: {}", String::from_utf8_lossy(&p.stdout));
    }
}

#[test]
fn a_killed_sweep_resumes_losing_and_redoing_nothing() {
    kill_and_resume(5, 7);
}

#[test]
#[ignore = "soak: 20 kills, a few minutes"]
fn soak_twenty_kills() {
    kill_and_resume(20, 11);
}
