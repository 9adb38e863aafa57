//! Bad input to every command, as a table: each case pins the exit code
//! (the README's table: 2 is the user's input) and what the first line of
//! the error says, and that it says it once. Files the cases need are
//! written into a scratch folder first; `{dir}` in an argument is that
//! folder.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

/// One bad input: a name, the arguments, files to write first (name,
/// text), the exit code and words the first line of stderr must hold.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    files: &'static [(&'static str, &'static str)],
    code: i32,
    says: &'static [&'static str],
}

/// A copy of a built-in profile with one line changed.
fn profile(from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(root().join("devices/ios-any.toml")).unwrap();
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

fn cases() -> Vec<Case> {
    vec![
        // arch, predict, presets: shapes and devices that do not exist.
        Case { name: "arch: unknown preset", args: &["arch", "--preset", "nope"], files: &[], code: 2, says: &["nope"] },
        Case { name: "arch: unknown flag", args: &["arch", "--hiden", "128"], files: &[], code: 2, says: &["--hiden"] },
        Case {
            name: "predict: unknown device",
            args: &["predict", "--preset", "mnn-pocket-0.3b", "--device", "nope"],
            files: &[],
            code: 2,
            says: &["unknown device `nope`"],
        },
        Case { name: "presets: stray argument", args: &["presets", "x"], files: &[], code: 2, says: &["x"] },
        // sweep: missing, garbage, out of domain.
        Case {
            name: "sweep: missing file",
            args: &["sweep", "{dir}/none.toml", "--predict-only"],
            files: &[],
            code: 2,
            says: &["none.toml", "cannot read"],
        },
        Case {
            name: "sweep: not TOML",
            args: &["sweep", "{dir}/garbage.toml", "--predict-only"],
            files: &[("garbage.toml", "\u{0}\u{1}[[[ not toml")],
            code: 2,
            says: &["garbage.toml:1:"],
        },
        Case {
            name: "sweep: a negative multiplier",
            args: &["sweep", "{dir}/s.toml", "--predict-only", "--out", "{dir}/o"],
            files: &[("s.toml", "[sweep]\nname = \"bad\"\ndevices = [\"host\"]\n[space]\nlayers = 2\nkv-heads = 2\nvocab = 512\nhidden = 128\nffn-mult = -2.0\n")],
            code: 2,
            says: &["s.toml:9:", "must be above 0", "space.ffn-mult"],
        },
        Case {
            name: "sweep: zero layers",
            args: &["sweep", "{dir}/s.toml", "--predict-only", "--out", "{dir}/o"],
            files: &[("s.toml", "[sweep]\nname = \"bad\"\ndevices = [\"host\"]\n[space]\nkv-heads = 2\nvocab = 512\nhidden = 128\nlayers = [2, 0]\n")],
            code: 2,
            says: &["s.toml:8:", "at least 1", "space.layers"],
        },
        Case {
            name: "sweep: unknown device",
            args: &["sweep", "{dir}/s.toml", "--predict-only", "--devices", "nope", "--out", "{dir}/o"],
            files: &[("s.toml", "[sweep]\nname = \"bad\"\ndevices = [\"host\"]\n[space]\nkv-heads = 2\nvocab = 512\nhidden = 128\nffn-mult = 2.0\nlayers = 2\n")],
            code: 2,
            says: &["nope"],
        },
        // Device profiles: a missing folder, out-of-domain values with their line.
        Case {
            name: "devices: missing --devices-dir",
            args: &["--devices-dir", "{dir}/nowhere", "devices", "--offline"],
            files: &[],
            code: 2,
            says: &["no such folder"],
        },
        Case {
            name: "devices: zero threads",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "THREADS")],
            code: 2,
            says: &["ios-any.toml:", "engine.threads: must be at least 1"],
        },
        Case {
            name: "predict: a battery of 0 mAh",
            args: &["--devices-dir", "{dir}/d", "predict", "--preset", "mnn-pocket-0.3b", "--device", "ios-any"],
            files: &[("d/ios-any.toml", "BATTERY")],
            code: 2,
            says: &["ios-any.toml:", "facts.battery.capacity: must be above 0"],
        },
        Case {
            name: "predict: a zero decode budget",
            args: &["--devices-dir", "{dir}/d", "predict", "--preset", "mnn-pocket-0.3b", "--device", "ios-any"],
            files: &[("d/ios-any.toml", "BUDGET")],
            code: 2,
            says: &["budgets.decode: must be above 0"],
        },
        Case {
            name: "devices: a published point without a citation",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "APPEND:\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"x\"\nprovenance = \"published\"\n")],
            code: 2,
            says: &["calibration[0].citation: a published point needs a citation"],
        },
        Case {
            name: "devices: a citation without its date",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "APPEND:\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"x\"\nprovenance = \"published\"\ncitation = { where = \"a/b issue #1\" }\n")],
            code: 2,
            says: &["ios-any.toml:", "missing field `date`"],
        },
        Case {
            name: "devices: a citation with a bad date",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "APPEND:\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"x\"\nprovenance = \"published\"\ncitation = { where = \"a/b issue #1\", date = \"last spring\" }\n")],
            code: 2,
            says: &["calibration[0].citation.date: must be YYYY-MM-DD or YYYY-MM"],
        },
        Case {
            name: "devices: a point of an unknown engine class",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "APPEND:\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"x\"\nengine-class = \"tflite\"\n")],
            code: 2,
            says: &["calibration[0].engine-class: unknown engine class `tflite`"],
        },
        Case {
            name: "devices: a nearest-chip point fitted",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "APPEND:\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"x\"\nran-on = { device = \"x\", chip = \"y\", relation = \"nearest-chip\" }\n")],
            code: 2,
            says: &["calibration[0].holdout: a point from the nearest chip"],
        },
        Case {
            name: "devices: a point whose prompt is unstated, fitted",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/ios-any.toml", "APPEND:\n[[calibration]]\nmodel = { preset = \"qwen3-0.6b\" }\ndecode = \"100 tok/s\"\nsource = \"x\"\nunstated = [\"prompt\"]\n")],
            code: 2,
            says: &["calibration[0].holdout: its source does not state its prompt length"],
        },
        Case {
            name: "predict: an engine class the device has no points of",
            args: &["predict", "--preset", "mnn-pocket-0.3b", "--device", "oneplus-13", "--engine-class", "mlx"],
            files: &[],
            code: 2,
            says: &["no points of engine class `mlx`", "`mnn/cpu`, `llama.cpp/npu`"],
        },
        // Stores and results: missing and garbage.
        Case { name: "report: no store", args: &["report", "{dir}/nowhere"], files: &[], code: 2, says: &["nowhere"] },
        Case {
            name: "report: garbage store",
            args: &["report", "{dir}/g.db"],
            files: &[("g.db", "garbage, not SQLite")],
            code: 2,
            says: &["g.db"],
        },
        Case {
            name: "merge: garbage shard",
            args: &["merge", "{dir}/merged", "{dir}/g.db"],
            files: &[("g.db", "garbage, not SQLite")],
            code: 2,
            says: &["g.db"],
        },
        Case {
            name: "gate: garbage baseline",
            args: &["gate", "--baseline", "{dir}/g.db", "--candidate", "{dir}/g.db"],
            files: &[("g.db", "garbage\n")],
            code: 2,
            says: &["reading the baseline", "g.db"],
        },
        Case {
            name: "gate: a binary file as the baseline",
            args: &["gate", "--baseline", "{dir}/b.db", "--candidate", "{dir}/b.db"],
            files: &[("b.db", "NOT_UTF8")],
            code: 2,
            says: &["reading the baseline", "b.db", "neither a SQLite store nor UTF-8 JSON"],
        },
        Case {
            name: "report: a binary file as the store",
            args: &["report", "{dir}/b.db"],
            files: &[("b.db", "NOT_UTF8")],
            code: 2,
            says: &["b.db"],
        },
        Case {
            name: "sweep: a binary sweep file",
            args: &["sweep", "{dir}/b.toml", "--predict-only"],
            files: &[("b.toml", "NOT_UTF8")],
            code: 2,
            says: &["b.toml"],
        },
        Case {
            name: "devices: a binary profile",
            args: &["--devices-dir", "{dir}/d", "devices", "--offline"],
            files: &[("d/x.toml", "NOT_UTF8")],
            code: 2,
            says: &["x.toml"],
        },
        Case {
            name: "history: missing input",
            args: &["history", "{dir}/a.json", "{dir}/b.json"],
            files: &[],
            code: 2,
            says: &["a.json"],
        },
        // Measuring commands: refused before any device is touched.
        Case {
            name: "run: unknown device",
            args: &["run", "--preset", "mnn-pocket-0.3b", "--device", "nope"],
            files: &[],
            code: 2,
            says: &["unknown device `nope`"],
        },
        Case {
            name: "run: unknown quantization",
            args: &["run", "--preset", "mnn-pocket-0.3b", "--quant", "q3_x", "--device", "host"],
            files: &[],
            code: 2,
            says: &["q3_x"],
        },
        Case {
            name: "calibrate: unknown device",
            args: &["calibrate", "--device", "nope"],
            files: &[],
            code: 2,
            says: &["unknown device `nope`"],
        },
        Case {
            name: "host-info: unknown flag",
            args: &["host-info", "--nope"],
            files: &[],
            code: 2,
            says: &["--nope"],
        },
        Case {
            name: "bench: unknown device",
            args: &["bench", "repeatability", "--preset", "mnn-pocket-0.3b", "--device", "nope"],
            files: &[],
            code: 2,
            says: &["unknown device `nope`"],
        },
        Case {
            name: "export-gguf: unknown preset",
            args: &["export-gguf", "--preset", "nope", "--out", "{dir}/m.gguf"],
            files: &[],
            code: 2,
            says: &["nope"],
        },
        Case {
            name: "import-xctest: no export folder",
            args: &["import-xctest", "--attachments", "{dir}/nowhere", "--device", "ios-any", "--out", "{dir}/o"],
            files: &[],
            code: 2,
            says: &["manifest.json", "export attachments"],
        },
        Case {
            name: "calibrate: an import no tool wrote",
            args: &["calibrate", "--device", "host-llama", "--import", "{dir}/notes.txt"],
            files: &[("notes.txt", "my phone did 40 tok/s\n")],
            code: 2,
            says: &["notes.txt:1:", "not an output pocketbench imports"],
        },
        Case {
            name: "calibrate: an imported row with one speed for two phases",
            args: &["calibrate", "--device", "host-llama", "--import", "{dir}/pg.json"],
            files: &[("pg.json", include_str!("fixtures/import/llama-bench-small-pg.json"))],
            code: 2,
            says: &["pg.json:2: row 1: field `n_prompt`: pp64+tg32"],
        },
        Case {
            name: "calibrate: an import format that does not exist",
            args: &["calibrate", "--device", "host-llama", "--import", "{dir}/a.json", "--format", "xml"],
            files: &[],
            code: 2,
            says: &["xml", "llama-bench-json"],
        },
        Case {
            name: "soak: zero seconds",
            args: &["soak", "--preset", "smollm2-135m", "--device", "host", "--seconds", "0"],
            files: &[],
            code: 2,
            says: &["--seconds must be above 0 and at most 3600 (an hour), got 0"],
        },
        Case {
            name: "soak: past the cap",
            args: &["soak", "--preset", "smollm2-135m", "--device", "host", "--seconds", "3601"],
            files: &[],
            code: 2,
            says: &["--seconds must be above 0 and at most 3600 (an hour), got 3601"],
        },
        Case {
            name: "soak: a window longer than the soak",
            args: &["soak", "--preset", "smollm2-135m", "--device", "host", "--seconds", "10", "--window", "20"],
            files: &[],
            code: 2,
            says: &["--window must be at least 0.25 s and at most --seconds (10), got 20"],
        },
        Case {
            name: "soak: an engine that times itself",
            args: &["soak", "--preset", "smollm2-135m", "--device", "host", "--seconds", "10", "--engine", "llama-bench"],
            files: &[],
            code: 2,
            says: &["soak times every decode step inside the probe", "llama-bench"],
        },
        Case {
            name: "probe: missing spec",
            args: &["probe", "--spec", "{dir}/none.json"],
            files: &[],
            code: 2,
            says: &["none.json"],
        },
    ]
}

#[test]
fn every_command_refuses_bad_input_with_its_exit_code_and_one_clear_line() {
    let data = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let at = |s: &str| s.replace("{dir}", dir.path().to_str().unwrap());
        for (name, text) in case.files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if *text == "NOT_UTF8" {
                std::fs::write(p, [0xffu8, 0xfe, 0x00, 0x80, b'\n', 0xc3]).unwrap();
                continue;
            }
            let text = match *text {
                "THREADS" => profile("threads = 2\n", "threads = 0\n"),
                "BATTERY" => profile("capacity = \"4252 mAh\"", "capacity = \"0 mAh\""),
                "BUDGET" => profile("[reference-workload]", "[budgets]\ndecode = \"0 tok/s\"\n\n[reference-workload]"),
                other => match other.strip_prefix("APPEND:") {
                    Some(tail) => profile("", "") + tail,
                    None => other.to_string(),
                },
            };
            std::fs::write(p, text).unwrap();
        }
        let out = Command::new(env!("CARGO_BIN_EXE_pocketbench"))
            .current_dir(dir.path())
            .args(case.args.iter().map(|a| at(a)))
            .env("POCKETBENCH_DATA_DIR", data.path())
            .env("ADB", "/nonexistent/adb")
            .env("XCRUN", "/nonexistent/xcrun")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().to_string();
        let mut wrong = Vec::new();
        if out.status.code() != Some(case.code) {
            wrong.push(format!("exit {:?}, not {}", out.status.code(), case.code));
        }
        for w in case.says {
            if !first.contains(&at(w)) {
                wrong.push(format!("the first line does not say `{w}`"));
            }
        }
        // Said once: no clause of the message repeated whole.
        let clauses: Vec<&str> = first.split(": ").filter(|c| c.len() > 12).collect();
        if let Some(c) = clauses.iter().enumerate().find_map(|(i, c)| clauses[i + 1..].contains(c).then_some(c)) {
            wrong.push(format!("`{c}` is said twice"));
        }
        if !wrong.is_empty() {
            failures.push(format!("{}: {}\n    stderr: {}", case.name, wrong.join("; "), stderr.trim()));
        }
    }
    assert!(failures.is_empty(), "{} case(s) wrong:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_table_covers_every_command() {
    let help = Command::new(env!("CARGO_BIN_EXE_pocketbench")).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.strip_prefix("  ").filter(|l| !l.starts_with(' ')).and_then(|l| l.split_whitespace().next()))
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 15, "{commands:?}");
    let covered: Vec<String> = cases().iter().map(|c| c.name.split(':').next().unwrap().to_string()).collect();
    for c in commands {
        assert!(covered.iter().any(|x| x == c), "no bad-input case for `{c}`");
    }
}
