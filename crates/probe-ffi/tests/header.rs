//! The hand-kept header against the code: every `extern "C"` function of
//! src/lib.rs is declared in include/pocketbench_probe.h with the C types
//! its Rust signature means, and the header declares nothing else.

use std::collections::BTreeMap;

/// The C spelling of a Rust FFI type, as this crate uses them.
fn c_type(rust: &str) -> String {
    match rust.trim() {
        "" | "()" => "void".into(),
        "*const c_char" => "const char *".into(),
        "*mut c_char" => "char *".into(),
        "Option<extern \"C\" fn() -> i32>" => "int (*)(void)".into(),
        other => panic!("no C spelling for the Rust type `{other}`: add it here and to the header"),
    }
}

/// `name -> (return type, [parameter types])` of the Rust side.
fn rust_side(src: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for (i, line) in src.lines().enumerate() {
        let Some(at) = line.find("extern \"C\" fn ") else { continue };
        if src.lines().nth(i.saturating_sub(1)).is_none_or(|l| l.trim() != "#[no_mangle]") {
            continue;
        }
        let sig = &line[at + "extern \"C\" fn ".len()..];
        let (name, rest) = sig.split_once('(').unwrap();
        // The parameter list ends at the parenthesis that closes it.
        let mut depth = 1;
        let close = rest
            .char_indices()
            .find(|(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .unwrap()
            .0;
        let params: Vec<String> = if rest[..close].trim().is_empty() {
            Vec::new()
        } else {
            rest[..close].split(": ").skip(1).map(|t| c_type(t.trim_end_matches(','))).collect()
        };
        let ret = rest[close + 1..].trim_start().strip_prefix("->").map_or("", |r| r.trim_end_matches('{'));
        out.insert(name.to_string(), (c_type(ret), params));
    }
    out
}

/// The same of the header: its function declarations.
fn header_side(h: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for line in h.lines().map(str::trim).filter(|l| l.contains("pocketbench_probe_") && l.ends_with(");")) {
        let open = line.find("pocketbench_probe_").unwrap();
        // "char *", "const char *", "void": the header writes `type *name`.
        let ret = line[..open].trim().to_string();
        let (name, rest) = line[open..].split_once('(').unwrap();
        let params = rest.trim_end_matches(");");
        let params: Vec<String> = match params {
            "void" => Vec::new(),
            // `int (*callback)(void)`: a function pointer, its name dropped.
            p if p.contains("(*") => {
                vec![format!("{}(*)({}", &p[..p.find("(*").unwrap()], p.split(")(").nth(1).unwrap())]
            }
            // `const char *spec_json`: the type is all before the name.
            p => p
                .split(',')
                .map(|x| {
                    let x = x.trim();
                    x[..=x.rfind([' ', '*']).unwrap()].trim().to_string()
                })
                .collect(),
        };
        out.insert(name.to_string(), (ret, params));
    }
    out
}

#[test]
fn the_header_declares_exactly_the_functions_the_library_exports() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let h = std::fs::read_to_string(dir.join("include/pocketbench_probe.h")).unwrap();
    let (rust, c) = (rust_side(&src), header_side(&h));
    assert_eq!(rust.len(), 5, "{rust:#?}");
    assert_eq!(rust, c, "the header and src/lib.rs disagree");
}

#[test]
fn the_parsers_see_a_difference() {
    // A test that cannot fail is no test: a changed parameter must show.
    let h = "char *pocketbench_probe_run(const char *spec_json);\n";
    let src =
        "#[no_mangle]\npub unsafe extern \"C\" fn pocketbench_probe_run(spec_json: *mut c_char) -> *mut c_char {\n";
    assert_ne!(rust_side(src), header_side(h));
    let src = src.replace("*mut c_char)", "*const c_char)");
    assert_eq!(rust_side(&src), header_side(h));
}
