//! The architecture page's layering, checked on the sources: the library's
//! measurement layer does not know the gate, and the binary's command
//! modules parse and render, leaving orchestration to the library (they do
//! not loop over devices, read records or write profiles themselves).

use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir` (or `dir` itself), with its text, tests
/// blocks included (a test may not reach across layers either).
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    if dir.is_file() {
        return vec![(dir.to_path_buf(), std::fs::read_to_string(dir).unwrap())];
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        out.extend(sources(&e.path()));
    }
    out
}

#[test]
fn measurement_does_not_know_the_gate_or_what_sits_above_it() {
    let mut wrong = Vec::new();
    for layer in ["runner", "schedule", "bench.rs"] {
        for (file, text) in sources(&src().join(layer)) {
            for above in ["crate::gate", "crate::sweep", "crate::report", "crate::pipeline", "crate::calibrate"] {
                if text.contains(above) {
                    wrong.push(format!("{} uses {above}", file.display()));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn command_modules_leave_orchestration_to_the_library() {
    let mut wrong = Vec::new();
    for (file, text) in sources(&src().join("cli")) {
        for (what, why) in [
            ("devices.all()", "loops over devices"),
            ("write_profile", "writes a profile"),
            ("with_points_added", "adds calibration points"),
            ("read_to_string", "reads input files"),
            ("Store::open", "opens the store"),
            ("report::write_all", "renders exports"),
            ("abab::", "schedules measurements"),
        ] {
            if text.contains(what) {
                wrong.push(format!("{} {why} (`{what}`)", file.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
