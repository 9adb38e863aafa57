//! The README and the book under `docs/` hold together: every relative link
//! and include points at a file that exists (and a `#fragment` at a heading
//! in it), the book's SUMMARY.md lists every page, the README stays short,
//! and both exit-code tables say what the library's table says.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pocketbench::ExitCode;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

/// Every Markdown file of the book.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(&root().join("docs/src"), &mut v);
    v.sort();
    v
}

/// mdBook's id of a heading: lower case, spaces to dashes, only
/// alphanumerics, dashes and underscores kept.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn headings(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `(target, line)` of every Markdown link `](target)` outside code.
fn links(text: &str) -> Vec<(String, usize)> {
    let mut in_code = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(j) = after.find(')') else { break };
            out.push((after[..j].to_string(), n + 1));
            rest = &after[j..];
        }
    }
    out
}

fn check_links(file: &Path, problems: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    for (target, line) in links(&text) {
        if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() { file.to_path_buf() } else { dir.join(path) };
        if !resolved.exists() {
            problems.push(format!("{}:{line}: `{target}`: no such file", file.display()));
            continue;
        }
        if let Some(f) = fragment {
            let t = std::fs::read_to_string(&resolved).unwrap_or_default();
            if !headings(&t).contains(f) {
                problems.push(format!("{}:{line}: `{target}`: no heading `#{f}` there", file.display()));
            }
        }
    }
    for (n, line) in text.lines().enumerate() {
        if let Some(start) = line.find("{{#include ") {
            let spec = line[start + 11..].split("}}").next().unwrap_or_default();
            let path = spec.split(':').next().unwrap_or_default();
            if !dir.join(path).is_file() {
                problems.push(format!("{}:{}: include `{path}`: no such file", file.display(), n + 1));
            }
        }
    }
}

#[test]
fn every_link_and_include_resolves() {
    let mut problems = Vec::new();
    check_links(&root().join("README.md"), &mut problems);
    for p in pages() {
        check_links(&p, &mut problems);
    }
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn the_summary_lists_every_page() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary).into_iter().map(|(t, _)| src.join(t)).collect();
    let orphans: Vec<_> = pages().into_iter().filter(|p| !p.ends_with("SUMMARY.md") && !listed.contains(p)).collect();
    assert!(orphans.is_empty(), "pages no chapter of SUMMARY.md names: {orphans:?}");
}

#[test]
fn the_readme_is_short_and_holds_no_session_log() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(text.lines().count() <= 200, "README.md is {} lines", text.lines().count());
    for dated in ["2026-11-", "2026-12-", "commit "] {
        assert!(
            !text.contains(dated),
            "README.md holds a dated log entry (`{dated}`): move it to docs/src/perf-log.md"
        );
    }
}

/// The `| code | meaning |` rows of a Markdown table.
fn exit_table(text: &str) -> Vec<(u8, String)> {
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').map(str::trim).collect();
            match cells[..] {
                [code, meaning] => code.parse().ok().map(|c| (c, meaning.to_string())),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn both_exit_code_tables_are_the_librarys() {
    let want: Vec<(u8, String)> = ExitCode::ALL.iter().map(|c| (c.code(), c.meaning().to_string())).collect();
    for file in ["README.md", "docs/src/reference/exit-codes.md"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert_eq!(exit_table(&text), want, "{file}'s exit-code table differs from pocketbench::ExitCode");
    }
}

#[test]
fn the_command_reference_includes_every_commands_help() {
    let reference = std::fs::read_to_string(root().join("docs/src/reference/commands.md")).unwrap();
    let snapshots = root().join("crates/pocketbench/tests/snapshots");
    for e in std::fs::read_dir(&snapshots).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("help") && name.ends_with(".snap") {
            assert!(reference.contains(&format!("snapshots/{name}:")), "commands.md does not include {name}");
            let text = std::fs::read_to_string(e.path()).unwrap();
            // The include starts at line 4: the header is `---`, `source:`, `---`.
            let header: Vec<&str> = text.lines().take(3).collect();
            assert!(header[0] == "---" && header[1].starts_with("source:") && header[2] == "---", "{name}: {header:?}");
        }
    }
}
