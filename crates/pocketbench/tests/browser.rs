//! `report.html` in a real browser: Debian's Chromium, headless, loads the
//! page of a sweep whose sweep file and device profile carry hostile names,
//! runs its script without a console error or a request, and shows every
//! chart with its tooltips. Where Chromium is missing the test says so and
//! passes, except under CI (`CI` set), where it fails: `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/browser.rs"]
mod chrome;
use chrome::{browser_or_skip, headless, render};

const HOSTILE_SWEEP: &str = "<script>alert(1)</script>";
const HOSTILE_DEVICE: &str = "\"><img src=x onerror=alert(2)>";

fn hostile_report(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap();
    let devices = dir.join("devices");
    std::fs::create_dir_all(&devices).unwrap();
    for d in ["iphone-18-pro", "oneplus-13"] {
        let text = std::fs::read_to_string(root.join(format!("devices/{d}.toml"))).unwrap();
        let text = if d == "oneplus-13" {
            text.replacen("name = \"OnePlus 13\"", &format!("name = '{HOSTILE_DEVICE}'"), 1)
        } else {
            text
        };
        std::fs::write(devices.join(format!("{d}.toml")), text).unwrap();
    }
    let sweep = dir.join("hostile.toml");
    std::fs::write(
        &sweep,
        format!(
            "[sweep]\nname = \"hostile\"\ndescription = \"{HOSTILE_SWEEP}\"\ndevices = [\"iphone-18-pro\", \"oneplus-13\"]\n\
             [space]\nlayers = [16, 20, 24, 28, 32]\nhidden = [640, 768, 896]\nkv-heads = 2\nffn-mult = 2.857\nvocab = [65536, 151936]\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let st = Command::new(env!("CARGO_BIN_EXE_pocketbench"))
        .arg("--devices-dir")
        .arg(&devices)
        .arg("sweep")
        .arg(&sweep)
        .args(["--predict-only", "-q", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    out.join("report.html")
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(d) = browser_or_skip() else { return };
    let page = hostile_report(d.path());
    let (url, html) = render(&page, &d.path().join("p1"));
    // Only our own script element, no injected image; the hostile names shown as text.
    assert_eq!(html.matches("<script").count(), 1, "one script element");
    assert!(!html.contains("<img"), "no injected element");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Two frontiers, three size charts, the depth and vocabulary studies (two each).
    assert_eq!(html.matches("<svg").count(), 2 + 3 + 2 + 2, "charts");
    let tip = html.find("<g class=\"pts\"").map(|i| &html[i..(i + 600).min(html.len())]).unwrap_or_default();
    assert!(tip.contains("<title>L") && tip.contains(" params, capability "), "a data point's tooltip: {tip}");
    assert!(html.contains("id=\"results\"") && html.matches("<tr>").count() > 60);

    // A screenshot, as a reader on a laptop sees it (kept beside the page).
    let shot = page.with_file_name("report.png");
    let s = headless(&d.path().join("p2"))
        .arg("--window-size=1280,2400")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 50_000, "a real screenshot ({} bytes)", png.len());
    if let Some(keep) = std::env::var_os("POCKETBENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// Two real host sweeps of one shape (the second measured at 1 thread
/// through the portable kernels, so slower, as tests/gate.rs slows its
/// candidate), the baseline in a folder whose name is hostile markup, and
/// the second's report rendered with `report OUT --baseline B`.
fn comparison_report(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap();
    let sweep = dir.join("cmp.toml");
    std::fs::write(
        &sweep,
        "[sweep]\nname = \"cmp\"\ndevices = [\"host\"]\n[workload]\nprompt = 64\ngen = 32\n\
         [space]\nlayers = 4\nhidden = 256\nhead-dim = 64\nkv-heads = 2\nffn = 768\nvocab = 2048\ncontext = 256\n",
    )
    .unwrap();
    let pb = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pocketbench"));
        c.current_dir(root).env("POCKETBENCH_DATA_DIR", dir.join("data")).env("POCKETBENCH_CACHE", dir.join("cache"));
        c
    };
    let baseline = dir.join("b<img src=x onerror=alert(3)>");
    let candidate = dir.join("candidate");
    for (threads, kernels, out) in [("2", None, &baseline), ("1", Some("portable"), &candidate)] {
        let mut c = pb();
        if let Some(k) = kernels {
            c.env("POCKETBENCH_KERNELS", k);
        }
        let st = c
            .arg("sweep")
            .arg(&sweep)
            .args(["--measure", "all", "--reps", "6", "--threads", threads, "-q", "--out"])
            .arg(out)
            .status()
            .unwrap();
        assert!(st.success());
    }
    // The sides run while other tests load the machine: one may keep a
    // contended repetition the other has not, which the gate would refuse
    // to compare; this test is about the view, so it compares them anyway.
    let st =
        pb().arg("report").arg(&candidate).arg("--baseline").arg(&baseline).arg("--allow-contended").status().unwrap();
    assert!(st.success());
    candidate.join("report.html")
}

#[test]
fn the_comparison_view_renders_in_headless_chromium() {
    let Some(d) = browser_or_skip() else { return };
    let page = comparison_report(d.path());
    let (_, html) = render(&page, &d.path().join("p1"));
    assert!(!html.contains("<img"), "the hostile folder name stays text");
    assert!(html.contains("b&lt;img src=x onerror=alert(3)&gt;"));
    let start = html.find("id=\"comparison\"").expect("the comparison view");
    let table = &html[start..html[start..].find("</table>").map_or(html.len(), |e| start + e)];
    assert_eq!(table.matches("<tr>").count(), 1 + 4, "a header and one row per metric");
    assert!(table.contains("gate: FAIL"), "1 thread against 2 regresses: {table}");
    assert!(table.contains("regression: decode_tok_s"));
    assert!(table.matches("<svg class=\"ci\"").count() >= 2, "interval bars for decode and prefill");
}
