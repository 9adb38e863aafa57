//! The C ABI as an app calls it: C programs compiled here (with the `cc`
//! crate's compiler) against this crate's static library, on this host.
//! The same archive is built for aarch64-apple-ios by `.ci/run`; only its
//! symbols are checked there, since nothing here can run iOS code.

// The cancel test calls the ABI from Rust, raw pointers and all.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use pocketbench_probe::{EngineKind, ProbeResult, ProbeSpec, SCHEMA};
use pocketbench_types::workload::Workload;

#[path = "../../pocketbench/tests/common/mod.rs"]
mod common;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The static library, built now into the target folder this test runs
/// from (target/<profile>/): `cargo test` builds only the rlib its tests
/// link, not the staticlib an app links.
fn archive() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap();
            let target_dir = profile_dir.parent().unwrap();
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut c = Command::new(cargo);
            c.args(["build", "-p", "pocketbench-probe-ffi", "--lib", "--target-dir"]).arg(target_dir);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                c.arg("--release");
            }
            let status = c.status().unwrap();
            assert!(status.success(), "building the static library: {c:?}");
            let a = profile_dir.join("libpocketbench_probe_ffi.a");
            assert!(a.is_file(), "{} was not built", a.display());
            a
        })
        .clone()
}

/// Compile `source` (under tests/c/) against the archive into `dir`.
fn compile(source: &str, dir: &Path) -> PathBuf {
    let target = env!("PB_FFI_TARGET");
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .target(target)
        .host(target)
        .opt_level(0)
        .get_compiler();
    let out = dir.join(source.trim_end_matches(".c"));
    let mut c = compiler.to_command();
    c.arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c").join(source))
        .arg(archive())
        // What a Rust staticlib needs from the C library on Linux
        // (`rustc --print native-static-libs`).
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil"])
        .arg("-o")
        .arg(&out);
    let status = c.status().unwrap();
    assert!(status.success(), "compiling {source}: {c:?}");
    out
}

fn spec(dir: &Path, gen: u32) -> ProbeSpec {
    ProbeSpec {
        schema: SCHEMA,
        shape: common::tiny(),
        // Absent: the probe writes the seeded model there first.
        model: dir.join("tiny.gguf"),
        workload: Workload::new(16, gen, None).unwrap(),
        reps: 2,
        threads: 1,
        seed: 3,
        engine: EngineKind::Native,
        timeout_s: None,
        cooling: None,
        contention: None,
        auto: None,
        pin: false,
        bandwidth_pass: true,
        timed_reloads: true,
        soak: None,
    }
}

#[test]
fn a_c_program_measures_through_the_abi() {
    let dir = tempfile::tempdir().unwrap();
    let bin = compile("run_probe.c", dir.path());
    let s = spec(dir.path(), 8);
    let path = dir.path().join("spec.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    let out = Command::new(&bin).arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains(&format!("schema {SCHEMA}")), "{stderr}");
    // Exactly the JSON `pocketbench probe --out` writes.
    let r = ProbeResult::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(r.config_id, s.shape.id());
    assert_eq!(r.engine, "native");
    assert_eq!(r.reps.len(), 2);
    for rep in &r.reps {
        assert!(rep.decode_tok_s > 0.0, "{rep:?}");
        assert_eq!(rep.itl_us.len(), 8, "one timed step a generated token");
        // The callback's state, read at both ends of every repetition.
        let t = rep.app_thermal.expect("the app's thermal state");
        assert_eq!(
            (t.start, t.end),
            (pocketbench_probe::thermal::AppState::Serious, pocketbench_probe::thermal::AppState::Serious)
        );
    }
    // Provenance: how each figure was taken, the memory meter named.
    assert!(r.methods["decode_s"].starts_with("timer"), "{:?}", r.methods);
    let meter = if cfg!(target_vendor = "apple") { "phys_footprint" } else { "VmHWM" };
    assert!(r.methods["peak_increase_bytes"].contains(meter), "{}", r.methods["peak_increase_bytes"]);
    assert!(r.peak_increase_bytes > 0);
    assert!(s.model.is_file(), "the probe wrote the spec's model");
}

#[test]
fn every_bad_input_comes_back_as_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let bin = compile("bad_input.c", dir.path());
    let good = serde_json::to_value(spec(dir.path(), 4)).unwrap();
    let mut files = Vec::new();
    let mut write = |name: &str, v: &serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        files.push(p);
    };
    let mut engine = good.clone();
    engine["engine"] = "no-such-engine".into();
    write("engine.json", &engine);
    let mut shape = good.clone();
    shape["shape"]["quant"] = "q3_z".into();
    write("quant.json", &shape);
    // Far beyond any memory here: 200 layers of 16384.
    let mut huge = good.clone();
    huge["shape"]["hidden"] = 16384.into();
    huge["shape"]["heads"] = 128.into();
    huge["shape"]["kv_heads"] = 8.into();
    huge["shape"]["ffn"] = 65536.into();
    huge["shape"]["layers"] = 200.into();
    write("huge.json", &huge);
    let mut old = good.clone();
    old["schema"] = 999.into();
    write("schema.json", &old);

    let out = Command::new(&bin).args(&files).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect(l)).collect();
    let fields: Vec<&str> = lines.iter().map(|v| v["error"]["field"].as_str().unwrap_or("(none)")).collect();
    assert_eq!(
        fields,
        ["spec", "spec", "spec", "spec.engine", "spec.shape.quant", "spec.shape", "spec.schema"],
        "{lines:#?}"
    );
    let message = |i: usize| lines[i]["error"]["message"].as_str().unwrap().to_string();
    assert!(message(0).contains("null pointer"), "{}", message(0));
    assert!(message(1).contains("not UTF-8"), "{}", message(1));
    assert!(message(3).contains("no-such-engine"), "{}", message(3));
    assert!(message(5).contains("may still be allocated"), "{}", message(5));
    assert!(lines.iter().all(|v| v["schema"] == SCHEMA), "{lines:#?}");
}

#[test]
fn a_cancel_stops_a_run_between_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), 240);
    s.reps = 50;
    let text = std::ffi::CString::new(serde_json::to_string(&s).unwrap()).unwrap();
    let started = std::time::Instant::now();
    let run = std::thread::spawn(move || {
        // SAFETY: a valid NUL-terminated string; the result is freed below.
        let out = unsafe { pocketbench_probe_ffi::pocketbench_probe_run(text.as_ptr()) };
        // SAFETY: `out` is a NUL-terminated string the call returned.
        let json = unsafe { std::ffi::CStr::from_ptr(out) }.to_string_lossy().into_owned();
        // SAFETY: returned by `pocketbench_probe_run`, freed once.
        unsafe { pocketbench_probe_ffi::pocketbench_probe_free(out) };
        json
    });
    // Once the model is written and loaded, ask it to stop.
    while !s.model.exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    pocketbench_probe_ffi::pocketbench_probe_cancel();
    let json = run.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["error"]["field"], "cancel", "{json}");
    assert!(started.elapsed().as_secs() < 60);
}
