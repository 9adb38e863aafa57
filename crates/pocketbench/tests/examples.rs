//! The shipped workflows call real tools with flags those tools have: every
//! `gh` command in a `run:` step of `examples/*.yml` is checked against the
//! real GitHub CLI's own `gh <command> <subcommand> --help` (Debian's `gh`;
//! `.ci/run` installs it), and every `pocketbench` flag against this build's
//! help. Where `gh` is not installed the `gh` half says SKIPPED.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

/// Every `run:` script of every workflow under `examples/`, with its file.
fn scripts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for job in docs[0]["jobs"].as_hash().unwrap().values() {
            for step in job["steps"].as_vec().into_iter().flatten() {
                if let Some(run) = step["run"].as_str() {
                    out.push((name.clone(), run.to_string()));
                }
            }
        }
    }
    out
}

/// Each invocation of `tool` in `script`: its words up to the end of the
/// command (a newline not continued by `\`, `|`, `;`, `&&`, `)` or `>`).
fn invocations(script: &str, tool: &str) -> Vec<Vec<String>> {
    let joined = script.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        // A command substitution starts a command of its own.
        let line = line.replace("$(", " ");
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            if *w == tool || w.ends_with(&format!("/{tool}")) {
                let rest: Vec<String> = words[i + 1..]
                    .iter()
                    .take_while(|x| !matches!(**x, "|" | ";" | "&&" | "||" | ">" | ">>" | "2>&1"))
                    .map(|x| x.trim_end_matches(')').to_string())
                    .collect();
                out.push(rest);
            }
        }
    }
    out
}

/// The flags (`--long`, `-s`) of an invocation, without their values.
fn flags(words: &[String]) -> Vec<String> {
    words
        .iter()
        .filter(|w| w.starts_with('-') && w.len() > 1 && !w.starts_with("--jq=") && w.as_str() != "-")
        .map(|w| w.split('=').next().unwrap().to_string())
        .collect()
}

/// Its (sub)commands: the words before the first flag that are plain names.
fn commands(words: &[String], depth: usize) -> Vec<String> {
    words
        .iter()
        .take_while(|w| !w.starts_with('-'))
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .take(depth)
        .cloned()
        .collect()
}

fn help_of(program: &str, args: &[String]) -> Option<String> {
    let out = Command::new(program).args(args).arg("--help").output().ok()?;
    Some(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// Whether `help` documents `flag` (`--dir`, or `-D` in `-D, --dir`).
fn documents(help: &str, flag: &str) -> bool {
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']').any(|w| w == flag)
}

#[test]
fn every_gh_call_uses_flags_gh_has() {
    if !pocketbench_testkit::need(Command::new("gh").arg("--version").output().is_ok(), "`gh`", "apt-get install gh") {
        return;
    }
    let mut checked = 0;
    let mut problems = Vec::new();
    for (file, script) in scripts() {
        for call in invocations(&script, "gh") {
            let cmd = commands(&call, 2);
            let help = help_of("gh", &cmd).unwrap();
            assert!(help.contains("USAGE"), "{file}: `gh {}` is not a gh command: {help}", cmd.join(" "));
            for f in flags(&call) {
                checked += 1;
                if !documents(&help, &f) {
                    problems.push(format!("{file}: `gh {}` has no flag {f}", cmd.join(" ")));
                }
            }
        }
    }
    assert!(checked >= 5, "found too few gh flags to check ({checked})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_pocketbench_call_uses_flags_pocketbench_has() {
    let exe = env!("CARGO_BIN_EXE_pocketbench");
    let mut checked = 0;
    let mut problems = Vec::new();
    for (file, script) in scripts() {
        for call in invocations(&script, "pocketbench") {
            let cmd = commands(&call, 1);
            let help = help_of(exe, &cmd).unwrap();
            for f in flags(&call) {
                checked += 1;
                if !documents(&help, &f) {
                    problems.push(format!("{file}: `pocketbench {}` has no flag {f}", cmd.join(" ")));
                }
            }
        }
    }
    assert!(checked >= 10, "found too few pocketbench flags to check ({checked})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_flag_gh_lacks_is_caught() {
    // The call the device-gate workflow once shipped: `gh run download` has
    // no --branch.
    let call: Vec<String> = ["run", "download", "--branch", "main"].iter().map(|s| s.to_string()).collect();
    assert_eq!(flags(&call), ["--branch"]);
    assert_eq!(commands(&call, 2), ["run", "download"]);
    let help = help_of("gh", &commands(&call, 2));
    if !pocketbench_testkit::need(help.is_some(), "`gh`", "apt-get install gh") {
        return;
    }
    let help = help.unwrap_or_default();
    assert!(!documents(&help, "--branch"), "{help}");
    assert!(documents(&help, "--dir") && documents(&help, "-n"), "{help}");
}
