//! The README's sample output is today's binary's: its deterministic lines
//! (the predicted iPhone card of the main job, and `predict`'s output) are
//! printed again here and must match. The measured host lines are a real
//! run's (`just readme-figures`), which no test can repeat exactly.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

fn pb(d: &Path) -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    c.current_dir(root()).env("POCKETBENCH_DATA_DIR", d.join("data")).env("POCKETBENCH_CACHE", d.join("cache"));
    c
}

/// The ```console blocks of the README that start with `$ pocketbench ARGS`:
/// (args, the lines after).
fn console_blocks() -> Vec<(Vec<String>, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut blocks = Vec::new();
    for block in text.split("```console\n").skip(1) {
        let body = block.split("\n```").next().unwrap();
        let mut lines = body.lines();
        let command = lines.next().unwrap();
        let args = command.strip_prefix("$ pocketbench ").unwrap_or_else(|| panic!("`{command}`"));
        blocks.push((args.split_whitespace().map(str::to_string).collect(), lines.map(str::to_string).collect()));
    }
    blocks
}

/// A README line matches a printed one: whole, or up to a `...` that
/// stands for the rest.
fn shown_in(line: &str, printed: &str) -> bool {
    match line.split_once("...") {
        Some((head, _)) => printed.lines().any(|p| p.starts_with(head)),
        None => printed.lines().any(|p| p == line),
    }
}

#[test]
fn the_readmes_predicted_iphone_card_is_what_the_main_job_prints() {
    let d = tempfile::tempdir().unwrap();
    let blocks = console_blocks();
    let (args, lines) = blocks.iter().find(|(a, _)| a.first().is_some_and(|c| c == "sweep")).expect("a sweep block");
    // The card: the iPhone's summary line and the two after it.
    let at = lines.iter().position(|l| l.starts_with("iphone-18-pro: ")).expect("the iPhone card");
    let card = &lines[at..at + 3];
    assert!(card[1].trim_start().starts_with("best") && card[2].trim_start().starts_with("largest"), "{card:?}");
    // Predictions only: the measured host changes from run to run; the
    // iPhone's lines do not depend on it.
    let out = pb(d.path()).args(args).args(["--predict-only", "--out"]).arg(d.path().join("pocket")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    for line in card {
        assert!(shown_in(line, &printed), "README.md shows\n{line}\nbut `pocketbench sweep` prints\n{printed}");
    }
    // The device's progress line (stderr) and the note under the cards.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in lines.iter().filter(|l| l.starts_with("  iphone-18-pro:")) {
        assert!(shown_in(line, &stderr), "README.md shows\n{line}\nbut `pocketbench sweep` reports\n{stderr}");
    }
    for line in lines.iter().filter(|l| l.starts_with("best:") || l.starts_with("capability*")) {
        assert!(shown_in(line, &printed), "README.md shows\n{line}\nbut `pocketbench sweep` prints\n{printed}");
    }
}

#[test]
fn the_readmes_predict_output_is_what_predict_prints() {
    let d = tempfile::tempdir().unwrap();
    let blocks = console_blocks();
    let mut checked = 0;
    for (args, lines) in blocks.iter().filter(|(a, _)| a.first().is_some_and(|c| c == "predict")) {
        let out = pb(d.path()).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let printed = String::from_utf8_lossy(&out.stdout);
        for line in lines {
            assert!(
                shown_in(line, &printed),
                "README.md shows\n{line}\nbut `pocketbench {}` prints\n{printed}",
                args.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "no predict output in README.md to check");
}
