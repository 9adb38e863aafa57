//! Shared by the harness's command-line tests that build and run a real
//! model: the tiny shape as `run`/`sweep` flags and a `pocketbench` command
//! with its own cache and data directory.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// [`super::tiny_spec`] as command-line flags.
pub const TINY: &[&str] = &[
    "--hidden",
    "128",
    "--layers",
    "2",
    "--head-dim",
    "32",
    "--kv-heads",
    "2",
    "--ffn",
    "256",
    "--vocab",
    "512",
    "--context",
    "256",
];

/// `pocketbench` run from the workspace root with `cache` as its cache and
/// a data directory of this test process's own, so no machine profile of
/// the developer's machine (in ~/.local/share/pocketbench) changes what the
/// tests see.
pub fn pb(cache: &Path) -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap())
        .env("POCKETBENCH_CACHE", cache)
        .env("POCKETBENCH_DATA_DIR", data_dir());
    c
}

/// This test process's data directory (see [`pb`]).
pub fn data_dir() -> PathBuf {
    std::env::temp_dir().join(format!("pocketbench-test-data-{}", std::process::id()))
}
