//! Records how the probe was built, so every measurement can say so: the
//! candle and llama-cpp-2 versions from Cargo.lock, target, profile,
//! opt-level, rustc version, RUSTFLAGS and the digest of the native engine's
//! source.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let lock = std::fs::read_to_string("../../Cargo.lock").unwrap_or_default();
    let version_of = |name: &str| {
        lock.split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{name}\"")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"').map(String::from)))
            .unwrap_or_else(|| "unknown".into())
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rustc-env=PB_CANDLE_VERSION={}", version_of("candle-core"));
    println!("cargo:rustc-env=PB_LLAMA_VERSION={}", version_of("llama-cpp-2"));
    println!("cargo:rustc-env=PB_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=PB_PROFILE={}", env("PROFILE"));
    println!("cargo:rustc-env=PB_OPT_LEVEL={}", env("OPT_LEVEL"));
    println!("cargo:rustc-env=PB_RUSTC={}", rustc_version.trim());
    println!("cargo:rustc-env=PB_RUSTFLAGS={}", env("CARGO_ENCODED_RUSTFLAGS").replace('\x1f', " "));
    // The native engine's source: a calibration measured through another
    // version of it is "calibrated with another engine build". Paths are
    // hashed relative to this crate, with the file contents.
    let mut files = Vec::new();
    for dir in ["src/kernels", "src/native"] {
        println!("cargo:rerun-if-changed={dir}");
        sources(Path::new(dir), &mut files);
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in &files {
        for b in f.to_string_lossy().bytes().chain(std::fs::read(f).unwrap_or_default()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=PB_ENGINE_SOURCE={:012x}", h >> 16);
    println!("cargo:rerun-if-changed=../../Cargo.lock");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
