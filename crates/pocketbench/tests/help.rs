//! Every command's `--help`, and the `devices` table, as snapshots: the
//! words a user reads are checked like any other output. The snapshots are
//! also the command reference of the book (`docs/src/reference/commands.md`
//! includes them), so the book cannot drift from the binary.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

fn pb() -> Command {
    let mut c = Command::cargo_bin("pocketbench").unwrap();
    // A fixed width (clap wraps to the terminal's), no profile folder from
    // the environment (clap would print its value), no machine profile of
    // the developer's, no adb.
    c.current_dir(root())
        .env("COLUMNS", "100")
        .env_remove("POCKETBENCH_DEVICES")
        .env("POCKETBENCH_DATA_DIR", std::env::temp_dir().join(format!("pb-help-{}", std::process::id())))
        .env("ADB", "/nonexistent/adb");
    c
}

fn help(args: &[&str]) -> String {
    let out = pb().args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{args:?} --help: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands the top-level help lists.
fn commands(top: &str) -> Vec<String> {
    let listing = top.split("Commands:\n").nth(1).expect("a Commands: section");
    listing
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A command's line starts two spaces in; its wrapped description further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_has_its_help_snapshot() {
    let top = help(&[]);
    insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("help", top);
    });
    let names = commands(&top);
    assert!(names.len() >= 12, "{names:?}");
    for name in names {
        let text = help(&[&name]);
        // One layout for every command: clap's long one (a blank line
        // between flags) appears when a flag or value has a paragraph.
        assert!(!text.contains("see a summary with '-h'"), "`{name} --help` uses the long layout");
        insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(format!("help-{name}"), text);
        });
        // A command with subcommands of its own: each of theirs too.
        if text.contains("\nCommands:\n") {
            for sub in commands(&text) {
                let text = help(&[&name, &sub]);
                insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => false }, {
                    insta::assert_snapshot!(format!("help-{name}-{sub}"), text);
                });
            }
        }
    }
}

#[test]
fn help_texts_say_what_this_version_does() {
    let run = help(&["run"]);
    assert!(!run.contains("this host today"), "run --help still says it measures only this host");
    assert!(run.contains("android"), "run --help names the devices it measures: {run}");
    for name in ["run", "sweep"] {
        let text = help(&[name]);
        assert!(text.contains("native"), "{name} --help names the built-in engine `native`: {text}");
    }
}

#[test]
fn the_devices_table() {
    let out = pb().args(["devices", "--offline"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // The profiles' own rows; what this machine is, and whether the host
    // profiles were calibrated on it, depend on the machine the test runs on.
    let table: String = text.lines().take_while(|l| !l.is_empty()).map(|l| format!("{l}\n")).collect();
    insta::with_settings!({
        omit_expression => true,
        prepend_module_to_snapshot => false,
        filters => vec![(r"(?m)^(host\S*\s.*?1024\+128\s+).*$", "$1[calibration state on this machine]")],
    }, {
        insta::assert_snapshot!("devices", table);
    });
    assert!(!table.contains("AVX2 kernels"), "the host engine is not described by one ISA: {table}");
}
