//! Sweeps over the shipped files: the study's conclusions are reproduced, the
//! output contract holds, and the rendered reports are pinned by snapshots.

use std::path::{Path, PathBuf};

use pocketbench::device::Devices;
use pocketbench::event::Collect;
use pocketbench::report::{Exporter, FrontierCsv, ResultsJson, SummaryMarkdown, SweepReport};
use pocketbench::sweep::{run, Plan, PlanOptions};

fn sweep_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps").join(name)
}

/// The built-in profiles as a machine of its own sees them: the committed
/// host calibration is another machine's, which the reports must say.
fn devices_on_a_fresh_machine() -> Devices {
    let mut devices = Devices::built_in().unwrap();
    let here = pocketbench::probe::HostFacts {
        fingerprint: "0123456789ab".into(),
        cpu: "Test CPU".into(),
        ..pocketbench::probe::HostFacts::collect()
    };
    devices.assess(here);
    devices
}

fn sweep(name: &str) -> SweepReport {
    let devices = devices_on_a_fresh_machine();
    let mut plan = Plan::from_file(&sweep_file(name), &PlanOptions::default()).unwrap();
    plan.file = PathBuf::from("sweeps").join(name); // stable in snapshots
    let devs = devices.select(&plan.devices).unwrap();
    let outcome = run(&plan, &devs, None, &mut Collect::default());
    SweepReport::new(&plan, outcome)
}

#[test]
fn pocket_largest_feasible_on_iphone_is_near_300m() {
    let r = sweep("pocket.toml");
    let d = r.outcome.devices.iter().find(|d| d.device == "iphone-18-pro").unwrap();
    let id = d.largest_feasible.as_ref().unwrap();
    let rec = r.outcome.results.iter().find(|x| x.device == d.device && &x.config_id == id).unwrap();
    assert!((250e6..=450e6).contains(&(rec.params_total as f64)), "largest feasible: {} params", rec.params_total);
    // The sweep spans the study's range.
    let (min, max) =
        r.outcome.results.iter().fold((u64::MAX, 0), |(a, b), x| (a.min(x.params_total), b.max(x.params_total)));
    assert!(min < 60_000_000 && max > 1_200_000_000, "{min}..{max}");
    let layers: std::collections::BTreeSet<u32> = r.outcome.results.iter().map(|x| x.shape.layers).collect();
    assert_eq!((layers.first(), layers.last()), (Some(&16), Some(&36)));
    // Budgets bite: some configurations fail, some pass, on every device.
    for d in &r.outcome.devices {
        assert!(d.feasible > 0 && d.feasible < d.configs, "{}: {}/{}", d.device, d.feasible, d.configs);
        assert!(d.frontier > 0 && d.hypervolume > 0.0);
    }
}

#[test]
fn depth_study_decode_falls_with_depth_at_equal_size() {
    let r = sweep("depth.toml");
    for d in &r.outcome.devices {
        let mut rows: Vec<_> = r.outcome.results.iter().filter(|x| x.device == d.device).collect();
        rows.sort_by_key(|x| x.shape.layers);
        assert_eq!(rows.len(), 11, "one configuration per depth 16..=36 step 2");
        for x in &rows {
            assert!((x.params_total as f64 / 302.8e6 - 1.0).abs() <= 0.05, "{} params", x.params_total);
        }
        assert!(rows.last().unwrap().decode_tok_s < rows[0].decode_tok_s);
        if d.device.starts_with("i") {
            // GPU profiles carry a fitted per-layer cost: strictly slower with every step.
            for w in rows.windows(2) {
                assert!(
                    w[1].decode_tok_s < w[0].decode_tok_s,
                    "{}: {} -> {} layers",
                    d.device,
                    w[0].shape.layers,
                    w[1].shape.layers
                );
            }
        }
        // Capability stops rising past 28 layers (beyond the size jitter).
        let cap = |l: u32| rows.iter().find(|x| x.shape.layers == l).unwrap().capability;
        assert!(cap(28) > cap(16));
        assert!((cap(36) - cap(28)).abs() < 0.2);
    }
}

#[test]
fn vocab_trim_cuts_memory_and_raises_speed() {
    let r = sweep("vocab.toml");
    for d in &r.outcome.devices {
        let get = |v: u32| {
            r.outcome.results.iter().find(|x| x.device == d.device && x.shape.vocab == v && x.shape.tied).unwrap()
        };
        let (small, big) = (get(65536), get(151936));
        assert!(small.peak_mem_increase_mb < big.peak_mem_increase_mb);
        assert!(small.decode_tok_s > big.decode_tok_s);
        assert_eq!(small.params_non_embedding, big.params_non_embedding);
    }
}

#[test]
fn results_json_has_the_contract_fields() {
    let r = sweep("quick.toml");
    let v: serde_json::Value = serde_json::from_str(&ResultsJson.render(&r).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 8 * 5);
    for rec in results {
        for k in [
            "config_id",
            "device",
            "params_total",
            "layers",
            "hidden",
            "heads",
            "kv_heads",
            "head_dim",
            "ffn",
            "vocab",
            "tied",
            "quant",
            "decode_tok_s",
            "prefill_tok_s",
            "ttft_ms",
            "peak_mem_increase_mb",
            "package_mb",
            "energy_j_per_run",
            "battery_fraction_per_run",
            "provenance",
            "budgets",
            "capability",
            "capability_source",
        ] {
            assert!(rec.get(k).is_some(), "missing {k}");
        }
        assert!(rec["feasible"].is_boolean() && rec["on_frontier"].is_boolean());
        assert_eq!(rec["provenance"], "predicted");
        assert!(rec["capability_source"].as_str().unwrap().starts_with("proxy:"));
        if rec["on_frontier"] == true {
            assert_eq!(rec["feasible"], true);
        }
    }
    // The host has no battery: energy is not budgeted, and says so.
    let host = results.iter().find(|x| x["device"] == "host").unwrap();
    assert_eq!(host["budgets"]["energy"]["status"], "not-applicable");
    assert!(host["battery_fraction_per_run"].is_null());
}

#[test]
fn sweeps_are_deterministic() {
    assert_eq!(ResultsJson.render(&sweep("quick.toml")).unwrap(), ResultsJson.render(&sweep("quick.toml")).unwrap());
}

#[test]
fn quick_summary_snapshot() {
    insta::assert_snapshot!("quick_summary_md", SummaryMarkdown.render(&sweep("quick.toml")).unwrap());
}

#[test]
fn quick_frontier_snapshot() {
    insta::assert_snapshot!("quick_frontier_csv", FrontierCsv.render(&sweep("quick.toml")).unwrap());
}

#[test]
fn results_json_snapshot() {
    let devices = devices_on_a_fresh_machine();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweeps/two-by-two.toml");
    let mut plan = Plan::from_file(&file, &PlanOptions::default()).unwrap();
    plan.file = PathBuf::from("two-by-two.toml"); // stable in snapshots
    let devs = devices.select(&plan.devices).unwrap();
    let outcome = run(&plan, &devs, None, &mut Collect::default());
    insta::assert_snapshot!("two_by_two_results_json", ResultsJson.render(&SweepReport::new(&plan, outcome)).unwrap());
}
