//! The readers of the exports a Mac's tools write about an iOS run:
//! xcresulttool's metrics (the app's XCTest on a farm), xctrace's table
//! export (Power Profiler) and pymobiledevice3's battery registry, each on
//! the fixtures `tests/fixtures/README.md` cites, a truncated copy and a
//! foreign file.

use std::path::Path;

use pocketbench_runner_ios::{battery, xcresult, xctrace};

fn fixture(name: &str) -> (String, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    (name.to_string(), std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
}

#[test]
fn xcresult_metrics_give_the_apps_measurements_in_stored_units() {
    let (f, text) = fixture("xcresult/metrics.json");
    let tests = xcresult::parse(&f, &text).unwrap();
    assert_eq!(tests.len(), 1);
    assert_eq!(tests[0].test_runs[0].metrics.len(), 6);
    let runs = xcresult::ProbeRun::all(&f, &tests).unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r.test, "ProbeMeasureTests/testMeasureSpec()");
    assert_eq!(r.device.model_name.as_deref(), Some("iPhone 17 Pro"));
    assert_eq!(r.decode_tok_s, [210.5, 212.25, 208.75, 211.0, 209.5]);
    assert_eq!(r.prefill_tok_s.len(), 5);
    // ms to s, kB (decimal) to bytes.
    assert!((r.ttft_s[0] - 0.6825).abs() < 1e-12, "{:?}", r.ttft_s);
    assert_eq!(r.peak_increase_bytes[0], 230_400_000.0);
    assert_eq!(r.memory_peak_bytes[2], 252_928_000.0);
    assert_eq!(r.clock_s, [2.51, 2.48, 2.49, 2.53, 2.5]);
}

#[test]
fn xcresult_metrics_truncated_or_foreign_are_located_errors() {
    let (f, text) = fixture("xcresult/metrics-truncated.json");
    let e = xcresult::parse(&f, &text).unwrap_err();
    assert!(e.line.is_some() && e.message.contains("truncated"), "{e}");
    assert!(e.to_string().starts_with("xcresult/metrics-truncated.json:"), "{e}");

    let (f, text) = fixture("xcresult/test-results-tests.json");
    let e = xcresult::parse(&f, &text).unwrap_err();
    assert!(e.to_string().contains("`get test-results tests` output"), "{e}");

    let (f, text) = fixture("devicectl/launch-ok.json");
    assert!(xcresult::parse(&f, &text).unwrap_err().to_string().contains("devicectl"));
}

#[test]
fn xcresult_metrics_with_a_wrong_value_name_its_path() {
    let (f, text) = fixture("xcresult/metrics.json");
    // A measurement that is not a number: the path to it.
    let bad = text.replacen("[ 210.5,", "[ \"fast\",", 1);
    let e = xcresult::parse(&f, &bad).unwrap_err();
    assert!(e.key.starts_with("[0].testRuns[0].metrics[2].measurements"), "{e}");
    assert!(e.line.is_some(), "{e}");
    // A unit the reader does not know.
    let bad = text.replacen("\"unitOfMeasurement\" : \"ms\"", "\"unitOfMeasurement\" : \"fortnights\"", 1);
    let tests = xcresult::parse(&f, &bad).unwrap();
    let e = xcresult::ProbeRun::all(&f, &tests).unwrap_err();
    assert!(e.key.contains(xcresult::TTFT) && e.message.contains("fortnights"), "{e}");
    // No app metric at all: another app's metrics.
    let other = text.replace("dev.pocketbench.decode_tok_s", "com.example.fps");
    let tests = xcresult::parse(&f, &other).unwrap();
    assert!(xcresult::ProbeRun::all(&f, &tests).unwrap_err().message.contains("no test run has the app's"));
    // A zero speed is no measurement.
    let zero = text.replacen("[ 210.5,", "[ 0.0,", 1);
    let tests = xcresult::parse(&f, &zero).unwrap();
    assert!(xcresult::ProbeRun::all(&f, &tests).unwrap_err().message.contains("a measurement of 0"));
}

#[test]
fn the_apps_metric_identifiers_are_the_readers() {
    let swift = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("app/PocketbenchProbeTests/ProbeMeasureTests.swift"),
    )
    .unwrap();
    for id in [xcresult::DECODE, xcresult::PREFILL, xcresult::TTFT, xcresult::FOOTPRINT] {
        assert!(swift.contains(&format!("\"{id}\"")), "the Swift metric does not report {id}");
    }
    assert!(swift.contains("unitSymbol: \"tokens/s\"") && swift.contains("unitSymbol: \"ms\""));
}

#[test]
fn xctrace_table_resolves_refs_and_sentinels_and_integrates_power_net_of_idle() {
    let (f, text) = fixture("xctrace/power.xml");
    let table = xctrace::parse(&f, &text).unwrap();
    assert_eq!(table.schema, "test-power");
    assert_eq!(table.columns.len(), 4);
    assert_eq!(table.rows.len(), 7);
    // A ref takes the value and fmt of the element it names.
    assert_eq!(table.rows[1].cells[2].as_ref().unwrap().fmt.as_deref(), Some("1.00 W"));
    assert_eq!(table.rows[0].cells[3], None);
    let (column, samples) = table.power(&f, None).unwrap();
    assert_eq!(column, "device-power");
    // "4,000 mW" is 4 W.
    assert_eq!(samples[2], (1.0, 4.0));
    let run = xctrace::Window { start_s: 1.0, end_s: 2.5 };
    let idle = xctrace::Window { start_s: 0.0, end_s: 1.0 };
    let e = xctrace::energy(&f, &column, &samples, run, idle).unwrap();
    // 4 W for 1 s and 5 W for 0.5 s; idle 1 W over the run's 1.5 s.
    assert!((e.gross_j - 6.5).abs() < 1e-9, "{e:?}");
    assert!((e.idle_w - 1.0).abs() < 1e-9, "{e:?}");
    assert!((e.net_j - 5.0).abs() < 1e-9, "{e:?}");
    assert_eq!(e.samples, 3);
    assert_eq!(e.resolution_s, 0.5);
}

#[test]
fn xctrace_bad_input_is_located() {
    let (f, text) = fixture("xctrace/power-truncated.xml");
    let e = xctrace::parse(&f, &text).unwrap_err();
    assert!(e.line.is_some() && e.message.contains("not well-formed XML"), "{e}");

    let (f, text) = fixture("xctrace/toc.xml");
    let e = xctrace::parse(&f, &text).unwrap_err();
    assert!(e.message.contains("table of contents") && e.line == Some(2), "{e}");

    let (f, text) = fixture("xctrace/power.xml");
    let table = xctrace::parse(&f, &text).unwrap();
    assert!(table.power(&f, Some("watts")).unwrap_err().message.contains("it has start, duration, device-power, note"));
    assert!(table.power(&f, Some("note")).unwrap_err().message.contains("a power of `run`"));
    // A window outside the recording, or empty.
    let (c, s) = table.power(&f, None).unwrap();
    let idle = xctrace::Window { start_s: 0.0, end_s: 1.0 };
    let late = xctrace::Window { start_s: 2.0, end_s: 9.0 };
    assert!(xctrace::energy(&f, &c, &s, late, idle).unwrap_err().message.contains("not inside the recording"));
    let empty = xctrace::Window { start_s: 2.0, end_s: 2.0 };
    assert!(xctrace::energy(&f, &c, &s, empty, idle).unwrap_err().message.contains("is empty"));

    // A row with a value missing: its line.
    let short = text.replacen("<sentinel/></row>", "</row>", 1);
    let e = xctrace::parse(&f, &short).unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("3 values for the schema's 4 columns"), "{e}");
    // A ref to nothing.
    let dangling = text.replacen("<duration ref=\"2\"/>", "<duration ref=\"99\"/>", 1);
    assert!(xctrace::parse(&f, &dangling).unwrap_err().to_string().contains("ref=99"));
}

#[test]
fn battery_drain_over_a_loop_gives_joules_per_run_with_its_uncertainty() {
    let (f, text) = fixture("battery/log.json");
    let (before, after) = battery::parse(&f, &text).unwrap();
    assert_eq!(before.apple_raw_current_capacity, 3012.0);
    assert_eq!(after.apple_raw_current_capacity, 2967.0);
    let d = battery::Drain::between(&f, &before, &after, 100).unwrap();
    assert_eq!(d.charge_mah, 45.0);
    assert_eq!(d.seconds, 600.0);
    // 45 mAh at a mean 3.896 V is 631.152 J; over 100 runs.
    assert!((d.joules_per_run - 6.31152).abs() < 1e-9, "{d:?}");
    // ±1 mAh at 3.896 V, and 45 mAh times half the 32 mV swing.
    assert!((d.uncertainty_j - 0.166176).abs() < 1e-9, "{d:?}");
    assert!((d.resolution_j - 0.140256).abs() < 1e-9, "{d:?}");

    // One `battery single` snapshot reads as the first and the last.
    let (f, text) = fixture("battery/single-before.json");
    let (a, b) = battery::parse(&f, &text).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.instant_amperage, Some(-412.0));
    assert!(battery::Drain::between(&f, &a, &b, 10).unwrap_err().message.contains("same gauge update"));
}

#[test]
fn battery_bad_input_is_refused_with_what_to_do() {
    let (f, text) = fixture("battery/charging.json");
    let (a, b) = battery::parse(&f, &text).unwrap();
    let e = battery::Drain::between(&f, &a, &b, 100).unwrap_err();
    assert!(e.message.contains("external power"), "{e}");

    let (f, text) = fixture("battery/log.json");
    let (a, _) = battery::parse(&f, &text).unwrap();
    let mut b = a.clone();
    b.update_time += 60;
    assert!(battery::Drain::between(&f, &a, &b, 100).unwrap_err().message.contains("whole mAh"));
    assert!(battery::Drain::between(&f, &a, &b, 0).unwrap_err().key == "runs");

    let truncated = &text[..text.len() / 2];
    let e = battery::parse(&f, truncated).unwrap_err();
    assert!(e.line.is_some() && e.message.contains("truncated"), "{e}");

    let (f, text) = fixture("xcresult/test-results-tests.json");
    let e = battery::parse(&f, &text).unwrap_err();
    assert!(e.key == "UpdateTime" && e.message.contains("pymobiledevice3"), "{e}");
    let e = battery::parse("x.json", "[1, 2]").unwrap_err();
    assert!(e.message.contains("not a battery snapshot"), "{e}");
}

#[test]
fn xctrace_toc_lists_the_first_runs_tables() {
    let (f, text) = fixture("xctrace/toc.xml");
    assert_eq!(xctrace::toc_schemas(&f, &text).unwrap(), ["test-power"]);
    let (f, text) = fixture("xctrace/power.xml");
    assert!(xctrace::toc_schemas(&f, &text).unwrap_err().message.contains("not xctrace's <trace-toc>"));
}
