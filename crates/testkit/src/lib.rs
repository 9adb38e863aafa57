//! What a test needs from the machine (a tool on `PATH`, a browser, a
//! kernel feature), and what happens when it is missing.
//!
//! - Under CI (`CI` set to anything but empty, `0` or `false`, as GitHub
//!   Actions, GitLab and `.ci/run` set it) the test **fails**: a CI run that
//!   lacks a tool has a broken install step, and must not look green.
//! - Elsewhere the test passes as skipped, and says so where it is seen: one
//!   line on the terminal, written past libtest's output capture, naming the
//!   test, what it needed and the command that installs it; and one line in
//!   `skipped-tests.txt` beside the test binaries (`target/debug/`), so a
//!   run can be asked afterwards what it did not do.
//!
//! ```no_run
//! # fn main() {
//! if !pocketbench_testkit::need(pocketbench_testkit::on_path("gh"), "`gh`", "apt-get install gh") {
//!     return;
//! }
//! # }
//! ```

use std::io::Write as _;
use std::path::PathBuf;

/// Whether this run is CI: `CI` is set, and not to empty, `0` or `false`.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| means_ci(&v))
}

fn means_ci(value: &str) -> bool {
    !matches!(value.trim().to_ascii_lowercase().as_str(), "" | "0" | "false")
}

/// Whether `program` is an executable file in a folder on `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| d.join(program).is_file())
}

/// The name libtest gave the running test (its thread's name).
fn test_name() -> String {
    std::thread::current().name().unwrap_or("a test").to_string()
}

/// The file skips are listed in: `skipped-tests.txt` in the folder above
/// the test binary (`target/debug/` for `target/debug/deps/x-hash`).
pub fn skip_list() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("skipped-tests.txt"))
}

/// The line a skip prints and lists.
pub fn skip_line(test: &str, what: &str, install: &str) -> String {
    format!("SKIPPED {test}: needs {what} (install: {install}); under CI=true this fails")
}

/// `true` when `present`. Otherwise: under CI, panic with what to install;
/// elsewhere, report the skip (terminal and list) and return `false`, so
/// the caller returns.
#[must_use]
pub fn need(present: bool, what: &str, install: &str) -> bool {
    if present {
        return true;
    }
    let test = test_name();
    assert!(!ci(), "{test} needs {what}, and CI is set: the run must install it ({install})");
    let line = skip_line(&test, what, install);
    // Past libtest's capture (which takes only print!/eprint!): a skip is
    // seen whether or not the test passes.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    if let Some(list) = skip_list() {
        let binary = std::env::current_exe().ok().and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()));
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(list)
            .and_then(|mut f| writeln!(f, "{}\t{line}", binary.unwrap_or_default()));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_read_as_ci_services_set_it() {
        for (v, yes) in [("true", true), ("1", true), ("yes", true), ("", false), ("0", false), ("FALSE", false)] {
            assert_eq!(means_ci(v), yes, "{v}");
        }
    }

    #[test]
    fn a_skip_names_the_test_the_need_and_the_install() {
        let l = skip_line("t::x", "`adb`", "apt-get install adb");
        assert!(l.starts_with("SKIPPED t::x: needs `adb` (install: apt-get install adb)"), "{l}");
    }

    #[test]
    fn what_is_present_is_needed_without_a_word() {
        assert!(need(true, "nothing", "nothing"));
        assert!(on_path("sh") || !cfg!(unix));
        assert!(!on_path("surely-no-such-program-here"));
    }
}
