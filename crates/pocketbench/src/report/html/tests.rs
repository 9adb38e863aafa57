use super::*;
use crate::device::Devices;
use crate::event::Collect;
use crate::sweep::{run, Plan, PlanOptions};

fn report(file: &str) -> SweepReport {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps").join(file);
    let plan = Plan::from_file(&path, &PlanOptions::default()).unwrap();
    let devices = Devices::built_in().unwrap();
    let devs = devices.select(&plan.devices).unwrap();
    SweepReport::new(&plan, run(&plan, &devs, None, &mut Collect::default()))
}

const HOSTILE: [&str; 2] = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(2)>"];

#[test]
fn every_input_string_is_escaped() {
    let mut r = report("quick.toml");
    r.sweep = HOSTILE[0].into();
    r.description = Some(HOSTILE[1].into());
    r.sweep_file = HOSTILE[1].into();
    let d = &mut r.outcome.devices[0];
    let old = d.device.clone();
    d.device = HOSTILE[0].into();
    d.name = HOSTILE[1].into();
    d.engine = HOSTILE[0].into();
    d.calibration = HOSTILE[1].into();
    for rec in r.outcome.results.iter_mut().filter(|x| x.device == old) {
        rec.device = HOSTILE[0].into();
        rec.config_name = HOSTILE[1].into();
    }
    let html = ReportHtml.render(&r).unwrap();
    assert!(!html.contains("<script>alert"), "a raw script tag");
    assert!(!html.contains("<img"), "a raw img tag");
    assert!(!html.contains("onerror=alert(2)>"), "an unescaped attribute break-out");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
    // Exactly one script element: ours.
    assert_eq!(html.matches("<script").count(), 1);
}

#[test]
fn the_page_fetches_nothing_and_has_its_charts() {
    let html = ReportHtml.render(&report("depth.toml")).unwrap();
    for bad in ["src=\"http", "href=\"http", "url(", "@import", "<link", "<iframe", "fetch(", "XMLHttpRequest"] {
        assert!(!html.contains(bad), "{bad}");
    }
    // The depth sweep has a depth study; every chart has a title, axes and points with tooltips.
    assert!(html.contains("Depth study: decode speed against layers"));
    let charts = html.matches("<svg").count();
    let devices = report("depth.toml").outcome.devices.len();
    assert_eq!(charts, devices + 3 + 2, "a frontier per device, three size charts, two depth charts");
    assert!(html.matches("<circle").count() > 20 && html.contains("<title>"));
    assert!(html.contains("decode speed (tok/s)") && html.contains("parameters (log scale)"));
}

#[test]
fn the_vocabulary_study_is_found_from_the_plan() {
    let html = ReportHtml.render(&report("vocab.toml")).unwrap();
    // The question it answers: at a model size, which vocabulary buys more.
    assert!(html.contains("Vocabulary study: capability by model size"));
    assert!(html.contains("Vocabulary study: decode speed by model size on "));
    assert!(
        html.contains("vocabulary 65536") && html.contains("total parameters (log scale)"),
        "a line per vocabulary"
    );
    let quick = ReportHtml.render(&report("quick.toml")).unwrap();
    assert!(quick.contains("Vocabulary study"), "quick.toml pairs two vocabularies over the same shapes");
    assert!(!quick.contains("Depth study"), "two depths are not a depth study");
}

#[test]
fn decimation_keeps_frontier_and_measured_points() {
    let r = report("pocket.toml");
    let recs: Vec<&Record> = r.outcome.results.iter().filter(|x| x.device == "iphone-18-pro").collect();
    let (kept, left) = studies::decimate(&recs, 50);
    assert_eq!(kept.len() + left, recs.len());
    assert!(kept.len() <= 50.max(recs.iter().filter(|x| x.on_frontier).count()));
    let frontier = recs.iter().filter(|x| x.on_frontier).count();
    assert_eq!(kept.iter().filter(|x| x.on_frontier).count(), frontier);
}

#[test]
fn the_outline_keeps_only_points_unbeaten_on_both_axes() {
    let pts = [(1.0, 5.0), (2.0, 4.0), (1.5, 3.0), (3.0, 1.0), (2.5, 1.0)];
    assert_eq!(studies::outline(&pts), vec![0, 1, 3]);
}

#[test]
fn how_this_was_made_is_a_table_not_raw_json() {
    let host = serde_json::json!({
        "fingerprint": "a468c0c80de0",
        "kernels": "avx2",
        "build": { "profile": "release", "rustc": "rustc 1.95.0", "target": "x86_64-unknown-linux-gnu" },
        "machine": { "cpu": "Some CPU", "logical_cpus": 2, "memory_bytes": 25276194816u64, "os": "Linux", "kernel": "6.18" }
    })
    .to_string();
    let (machine, build) = host_cells(&host);
    assert_eq!(machine, "Some CPU, 2 CPUs, 23.5 GiB, Linux (kernel 6.18), fingerprint a468c0c80de0");
    assert_eq!(build, "release build, rustc 1.95.0, avx2 kernels, x86_64-unknown-linux-gnu");
    // An older store's plain description stays as it was.
    assert_eq!(host_cells("AMD EPYC, 2 cores").0, "AMD EPYC, 2 cores");
    let html = ReportHtml.render(&report("quick.toml")).unwrap();
    let made = html.split("How this was made").nth(1).unwrap();
    assert!(made.contains("<table>") && !made.contains("{\""), "{made}");
}

#[test]
fn measurements_that_contradict_their_predictions_head_the_card_and_the_summary() {
    let mut r = report("quick.toml");
    let host = r.outcome.devices.iter().find(|d| d.device == "host").unwrap().clone();
    // A measured candidate far below its prediction, failing the decode
    // budget its prediction passed (a busy machine).
    let mut m = crate::testing::measured_record(2, 16, 8, &[60.0, 61.0, 62.0]);
    m.budgets.decode.status = crate::budget::Status::Fail;
    m.measurement.as_mut().unwrap().predicted.decode_tok_s = host.budget_decode_tok_s * 1.05;
    r.outcome.results.push(m);
    r.outcome.hold_measurements();
    let html = ReportHtml.render(&r).unwrap();
    let card = html.split("<div class=\"card\">").find(|c| c.contains("(host,")).unwrap();
    let (said, best) = (card.find("fails the decode budget its prediction passed"), card.find("Best feasible"));
    assert!(said.is_some() && said < best, "the contradiction comes first: {card}");
    assert!(
        card.contains("this device&#39;s predictions are suspect")
            || card.contains("this device's predictions are suspect"),
        "{card}"
    );
    let md = crate::report::markdown::SummaryMarkdown.render(&r).unwrap();
    let section = md.split("## ").find(|c| c.contains("(`host`")).unwrap();
    assert!(section.contains("**Measured: every measured configuration (1) fails the decode budget"), "{section}");
    assert!(
        section.contains("| measured config | decode predicted |"),
        "summary.md lists the measured results: {section}"
    );
}
