//! The one event stream: every command that does work takes `--json-events`
//! and `--quiet`; every JSON line it prints is an event the book's events
//! page lists, with exactly the fields the page lists; the page lists every
//! event the library has, field for field; and the events each command
//! prints are pinned by a snapshot.

use std::collections::BTreeMap;
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

/// Commands that only print what they are asked (no progress, no file):
/// they take neither flag.
const PRINT_ONLY: &[&str] = &["arch", "predict", "presets", "devices", "help"];

/// The event page's table: event name -> its fields, in order.
fn documented() -> BTreeMap<String, Vec<String>> {
    let page = std::fs::read_to_string(root().join("docs/src/reference/events.md")).unwrap();
    let mut table = BTreeMap::new();
    for line in page.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 3, "{line}");
        let name = cells[0].trim_matches('`').to_string();
        let fields = cells[2].split(", ").map(|f| f.trim_matches('`').to_string()).filter(|f| !f.is_empty()).collect();
        assert!(table.insert(name.clone(), fields).is_none(), "`{name}` is listed twice");
    }
    table
}

/// `RoundMeasured` -> `round-measured`.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The library's `Event` enum, read from its source: variant -> fields.
fn in_the_code() -> BTreeMap<String, Vec<String>> {
    let src = std::fs::read_to_string(root().join("crates/pocketbench/src/event.rs")).unwrap();
    let body = src.split("pub enum Event {").nth(1).unwrap().split("\n}\n").next().unwrap();
    let mut events = BTreeMap::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in body.lines() {
        if let Some(v) = line.strip_prefix("    ").filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase())) {
            if let Some((n, f)) = current.take() {
                events.insert(n, f);
            }
            current = Some((kebab(v.trim_end_matches(" {").trim_end_matches(',')), Vec::new()));
        } else if let Some(field) = line.strip_prefix("        ").and_then(|l| l.split_once(':')) {
            if !field.0.starts_with("//") {
                current.as_mut().unwrap().1.push(field.0.trim().to_string());
            }
        }
    }
    events.extend(current);
    events
}

#[test]
fn the_events_page_lists_every_event_and_field_of_the_library() {
    let (docs, code) = (documented(), in_the_code());
    assert!(code.len() >= 25, "{code:?}");
    assert_eq!(docs, code, "docs/src/reference/events.md against pocketbench::event::Event");
}

#[test]
fn every_command_that_does_work_takes_json_events_and_quiet() {
    let d = tempfile::tempdir().unwrap();
    let help = pb(d.path()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let commands: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.strip_prefix("  ").filter(|l| !l.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| !PRINT_ONLY.contains(&c.as_str()))
        .collect();
    assert!(commands.len() >= 10, "{commands:?}");
    for c in commands {
        let args: Vec<&str> = if c == "bench" { vec!["bench", "repeatability"] } else { vec![c.as_str()] };
        let out = pb(d.path()).args(&args).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for flag in ["--json-events", "--quiet"] {
            assert!(text.contains(flag), "`pocketbench {}` has no {flag}", args.join(" "));
        }
    }
}

/// The events one command printed: each line must be JSON, a documented
/// event, with the documented fields (an optional one may be null).
fn events_of(args: &[&str], d: &Path) -> Vec<String> {
    let out = pb(d).args(args).arg("--json-events").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    let docs = documented();
    let mut names = Vec::new();
    for line in stderr.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{args:?}: not a JSON line ({e}): {line}"));
        let name = v["event"].as_str().unwrap_or_else(|| panic!("no `event` in {line}")).to_string();
        let fields = docs.get(&name).unwrap_or_else(|| panic!("`{name}` is not on the events page: {line}"));
        let got: Vec<&String> = v.as_object().unwrap().keys().filter(|k| *k != "event").collect();
        let mut want: Vec<&String> = fields.iter().collect();
        want.sort();
        let mut got = got;
        got.sort();
        assert_eq!(got, want, "{line}");
        names.push(name);
    }
    names
}

#[test]
fn each_command_reports_through_the_one_stream() {
    let d = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = d.path().join("out");
    let two = s(&root().join("crates/pocketbench/tests/fixtures/sweeps/two-by-two.toml"));
    let shape = ["--layers", "2", "--hidden", "128", "--kv-heads", "2", "--ffn", "256", "--vocab", "512"];
    let model = s(&d.path().join("m.gguf"));
    let run_json = d.path().join("run.json");
    let verdict = s(&d.path().join("verdict.json"));
    let history = s(&d.path().join("history.json"));

    let mut seen = BTreeMap::new();
    seen.insert("sweep", events_of(&["sweep", &two, "--predict-only", "--out", &s(&out)], d.path()));
    seen.insert("report", events_of(&["report", &s(&out)], d.path()));
    let mut export = vec!["export-gguf", "--out", &model];
    export.extend(shape);
    seen.insert("export-gguf", events_of(&export, d.path()));
    let mut run = vec!["run", "--device", "host", "--prompt", "8", "--gen", "4", "--reps", "2", "--json"];
    run.extend(shape);
    let r = pb(d.path()).args(&run).arg("--json-events").output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    std::fs::write(&run_json, &r.stdout).unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&r.stderr)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].as_str().unwrap().to_string())
        .collect();
    seen.insert("run", names);
    let rj = s(&run_json);
    seen.insert("gate", events_of(&["gate", "--baseline", &rj, "--candidate", &rj, "--json", &verdict], d.path()));
    seen.insert("history", events_of(&["history", &rj, &rj, "--json", &history], d.path()));

    let shown: String = seen.iter().map(|(c, e)| format!("{c}: {}\n", e.join(" "))).collect();
    insta::assert_snapshot!("events_by_command", shown);

    // --quiet: nothing but warnings.
    let q = pb(d.path()).args(["report", &s(&out), "--quiet"]).output().unwrap();
    assert!(q.status.success());
    let stderr = String::from_utf8_lossy(&q.stderr);
    assert!(stderr.lines().all(|l| l.starts_with("warning:")), "{stderr}");
}
