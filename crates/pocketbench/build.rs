//! Records the git commit the harness is built from (how the probe was built
//! is recorded by the probe's own build script).

use std::process::Command;

fn main() {
    // The commit the harness is built from, so every run in a store can say
    // which code produced it ("unknown" outside a git checkout).
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PB_GIT_COMMIT={commit}");
    if let Some(head) = git(&["rev-parse", "--git-dir"]).map(std::path::PathBuf::from) {
        println!("cargo:rerun-if-changed={}", head.join("HEAD").display());
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", head.join(r).display());
        }
    }
}
