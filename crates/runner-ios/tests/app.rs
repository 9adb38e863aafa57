//! The pocketbench app (`crates/runner-ios/app/`) checked by what can check
//! it on a machine without Xcode: its XcodeGen spec, its Swift's syntax
//! (tree-sitter's Swift grammar), the C functions it calls against the
//! header, the runner's contract it spells, its entitlement, and the spec its
//! XCTest measures against the probe's own parser. None of it compiles the
//! app; a Mac does (`examples/github-ios.yml`).

use std::path::{Path, PathBuf};

use pocketbench_runner_ios::contract;
use yaml_rust2::{Yaml, YamlLoader};

fn app() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("app")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap().to_path_buf()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn project() -> Yaml {
    let docs = YamlLoader::load_from_str(&read(&app().join("project.yml"))).expect("project.yml is YAML");
    docs.into_iter().next().expect("project.yml has a document")
}

/// A target's base build setting, as a string.
fn setting<'a>(project: &'a Yaml, target: &str, key: &str) -> &'a str {
    project["targets"][target]["settings"]["base"][key]
        .as_str()
        .unwrap_or_else(|| panic!("project.yml: targets.{target}.settings.base.{key} is not set"))
}

/// A build-setting path with `$(PROJECT_DIR)` (this folder) and the other
/// settings of the same target it names expanded.
fn resolve(project: &Yaml, target: &str, value: &str) -> PathBuf {
    let mut v = value.to_string();
    while let Some(start) = v.find("$(") {
        let end = v[start..].find(')').unwrap() + start;
        let name = v[start + 2..end].to_string();
        let with = if name == "PROJECT_DIR" {
            app().to_str().unwrap().to_string()
        } else {
            setting(project, target, &name).to_string()
        };
        v.replace_range(start..=end, &with);
    }
    PathBuf::from(v)
}

/// `a/b/../c` as `a/c`, without touching the disk (the library need not
/// be built for the test to know where it must be).
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_project_names_the_runners_app_and_its_files() {
    let p = project();
    assert_eq!(p["targets"]["PocketbenchProbe"]["type"].as_str(), Some("application"));
    assert_eq!(p["targets"]["PocketbenchProbe"]["platform"].as_str(), Some("iOS"));
    assert_eq!(setting(&p, "PocketbenchProbe", "PRODUCT_BUNDLE_IDENTIFIER"), contract::DEFAULT_BUNDLE_ID);
    assert_eq!(setting(&p, "PocketbenchProbe", "PRODUCT_NAME"), contract::DEFAULT_EXECUTABLE);
    assert_eq!(p["settings"]["base"]["CODE_SIGN_STYLE"].as_str(), Some("Automatic"));

    // Every source folder exists.
    for target in ["PocketbenchProbe", "PocketbenchProbeTests"] {
        for s in p["targets"][target]["sources"].as_vec().unwrap() {
            let dir = app().join(s["path"].as_str().unwrap());
            assert!(dir.is_dir(), "{target}'s sources {} are missing", dir.display());
        }
    }
    // The test target is hosted in the app and its scheme runs it.
    let tests = &p["targets"]["PocketbenchProbeTests"];
    assert_eq!(tests["type"].as_str(), Some("bundle.unit-test"));
    assert_eq!(tests["dependencies"][0]["target"].as_str(), Some("PocketbenchProbe"));
    assert!(setting(&p, "PocketbenchProbeTests", "TEST_HOST").ends_with("/PocketbenchProbe.app/PocketbenchProbe"));
    assert_eq!(p["schemes"]["PocketbenchProbe"]["test"]["targets"][0].as_str(), Some("PocketbenchProbeTests"));
}

#[test]
fn the_project_links_the_library_ci_builds_whole_and_finds_its_header() {
    let p = project();
    let t = "PocketbenchProbe";
    let ld = setting(&p, t, "OTHER_LDFLAGS");
    let words: Vec<&str> = ld.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"-force_load"), "{ld}");
    let lib = normal(&resolve(&p, t, words[1]));
    // The archive `.ci/run` builds and checks the symbols of.
    assert_eq!(lib, workspace().join("target/aarch64-apple-ios/release/libpocketbench_probe_ffi.a"));

    let include = normal(&resolve(&p, t, setting(&p, t, "HEADER_SEARCH_PATHS")));
    assert!(include.join("pocketbench_probe.h").is_file(), "no pocketbench_probe.h in {}", include.display());
    let bridging = app().join(setting(&p, t, "SWIFT_OBJC_BRIDGING_HEADER"));
    assert!(read(&bridging).contains("#include \"pocketbench_probe.h\""));
}

#[test]
fn the_app_carries_the_increased_memory_limit_entitlement() {
    let p = project();
    let text = read(&app().join(setting(&p, "PocketbenchProbe", "CODE_SIGN_ENTITLEMENTS")));
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(&text, options).expect("the entitlements are XML");
    let dict = doc.descendants().find(|n| n.has_tag_name("dict")).expect("a plist dict");
    let kids: Vec<_> = dict.children().filter(|n| n.is_element()).collect();
    let at = kids
        .iter()
        .position(|n| n.has_tag_name("key") && n.text() == Some("com.apple.developer.kernel.increased-memory-limit"))
        .expect("the increased-memory-limit key");
    assert!(kids[at + 1].has_tag_name("true"), "the entitlement is not set to true");
}

fn swift_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["PocketbenchProbe", "PocketbenchProbeTests"] {
        for e in std::fs::read_dir(app().join(dir)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "swift") {
                out.push(e.path());
            }
        }
    }
    out.sort();
    assert!(out.len() >= 3, "{out:?}");
    out
}

/// Where tree-sitter found a syntax error in `source`: line and column of
/// each ERROR or MISSING node.
fn syntax_errors(source: &str) -> Vec<String> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_swift::LANGUAGE.into()).unwrap();
    let tree = parser.parse(source, None).unwrap();
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            let at = n.start_position();
            out.push(format!("{}:{} {}", at.row + 1, at.column + 1, n.kind()));
        }
        if n.has_error() {
            stack.extend(n.children(&mut cursor));
        }
    }
    out
}

#[test]
fn the_swift_sources_parse() {
    for f in swift_files() {
        let errors = syntax_errors(&read(&f));
        assert!(errors.is_empty(), "{}: syntax errors at {errors:?}", f.display());
    }
}

#[test]
fn the_syntax_check_sees_a_broken_file() {
    // The check above must be able to fail.
    assert!(!syntax_errors("func f( { let").is_empty());
    assert!(syntax_errors("let x = 1\n").is_empty());
}

#[test]
fn every_c_function_the_swift_calls_is_in_the_header() {
    let header = read(&workspace().join("crates/probe-ffi/include/pocketbench_probe.h"));
    let mut called = std::collections::BTreeSet::new();
    for f in swift_files() {
        let text = read(&f);
        for (i, _) in text.match_indices("pocketbench_probe_") {
            let name: String = text[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if text[i + name.len()..].trim_start().starts_with(['(', '{']) {
                called.insert(name);
            }
        }
    }
    assert!(called.contains("pocketbench_probe_run") && called.contains("pocketbench_probe_free"), "{called:?}");
    for name in &called {
        assert!(header.contains(&format!("{name}(")), "the Swift calls {name}, which the header does not declare");
    }
}

#[test]
fn the_swift_spells_the_runners_contract() {
    let probe = read(&app().join("PocketbenchProbe/Probe.swift"));
    for s in [contract::RESULT, contract::DONE, contract::ERROR, contract::SPEC_ARG] {
        assert!(probe.contains(&format!("\"{s}\"")), "Probe.swift does not spell {s:?}");
    }
}

#[test]
fn the_xctest_spec_is_one_the_probe_accepts() {
    let text = read(&app().join("PocketbenchProbeTests/spec.json"));
    let spec = pocketbench_probe_ffi::parse_spec(&text).unwrap_or_else(|f| panic!("{}: {}", f.field, f.message));
    // Where the runner's specs put models, named as the harness names them.
    assert_eq!(spec.model, Path::new(contract::MODELS).join(format!("{}.gguf", spec.shape.id())));
    assert_eq!((spec.workload.prompt, spec.workload.gen), (1024, 128), "the mission's run");
    assert_eq!(spec.reps, 1, "XCTest's iterations are the repetitions");
}

#[test]
fn the_ios_workflow_builds_this_project_and_uploads_what_it_builds() {
    let text = read(&workspace().join("examples/github-ios.yml"));
    let p = project();
    let name = p["name"].as_str().unwrap();
    let scheme = p["schemes"].as_hash().unwrap().keys().next().unwrap().as_str().unwrap();
    let config = p["schemes"][scheme]["test"]["config"].as_str().unwrap();
    let product = setting(&p, "PocketbenchProbe", "PRODUCT_NAME");
    assert!(text.contains("APP_DIR: crates/runner-ios/app\n"), "the workflow's APP_DIR is not this folder");
    assert!(text.contains(&format!("-project {name}.xcodeproj -scheme {scheme}")), "project or scheme");
    // build-for-testing builds the scheme's test configuration, for devices.
    let app = format!("build/Build/Products/{config}-iphoneos/{product}.app");
    assert!(text.matches(&app).count() >= 2, "the workflow does not upload and install {app}");
    assert!(text.contains("rustup target add aarch64-apple-ios") && text.contains("--target aarch64-apple-ios"));
    assert!(text.contains("CODE_SIGNING_ALLOWED=NO") && text.contains("DEVELOPMENT_TEAM="));
    assert!(text.contains("xcresulttool get test-results metrics --path"));
}
