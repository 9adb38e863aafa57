//! Records how the binary was built, so every measurement can say so: the
//! candle version from Cargo.lock, target, profile, opt-level, rustc version
//! and RUSTFLAGS.

use std::process::Command;

fn main() {
    let lock = std::fs::read_to_string("../Cargo.lock").unwrap_or_default();
    let version_of = |name: &str| {
        lock.split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{name}\"")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"').map(String::from)))
            .unwrap_or_else(|| "unknown".into())
    };
    let candle = version_of("candle-core");
    let llama = version_of("llama-cpp-2");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rustc-env=PB_CANDLE_VERSION={candle}");
    println!("cargo:rustc-env=PB_LLAMA_VERSION={llama}");
    println!("cargo:rustc-env=PB_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=PB_PROFILE={}", env("PROFILE"));
    println!("cargo:rustc-env=PB_OPT_LEVEL={}", env("OPT_LEVEL"));
    println!("cargo:rustc-env=PB_RUSTC={}", rustc_version.trim());
    println!("cargo:rustc-env=PB_RUSTFLAGS={}", env("CARGO_ENCODED_RUSTFLAGS").replace('\x1f', " "));
    println!("cargo:rerun-if-changed=../Cargo.lock");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}
