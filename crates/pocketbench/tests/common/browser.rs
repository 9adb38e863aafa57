//! Headless Chromium for the tests that open a page we render: Debian's
//! `chromium`, a private profile, no network, its DOM after the page's
//! script ran. Where Chromium is missing a test says so and passes, except
//! under CI (`CI` set), where it fails: `.ci/run` installs it.
#![allow(dead_code)] // not every test binary uses every helper

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"].iter().map(PathBuf::from).find(|p| p.is_file())
}

pub fn headless(profile: &Path) -> Command {
    let mut c = Command::new(chromium().unwrap());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// A scratch folder when Chromium is here; `None` (the test passes,
/// saying so) when it is not, except under CI, where it fails.
pub fn browser_or_skip() -> Option<tempfile::TempDir> {
    pocketbench_testkit::need(chromium().is_some(), "Chromium at /usr/bin/chromium", "apt-get install chromium")
        .then(|| tempfile::tempdir().unwrap())
}

/// Load `page` in headless Chromium: its URL and DOM, after checking the
/// page's script ran to its end with no console error and no request.
pub fn render(page: &Path, profile: &Path) -> (String, String) {
    let url = format!("file://{}", page.display());
    let dom = headless(profile).arg("--dump-dom").arg(&url).output().unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let html = String::from_utf8_lossy(&dom.stdout).into_owned();
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(html.contains("data-ready=\"1\""), "the page's script ran to its end");
    let bad: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("net::ERR")).collect();
    assert!(bad.is_empty(), "console errors or failed requests: {bad:#?}");
    (url, html)
}
