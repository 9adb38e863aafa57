//! Imports of recorded real outputs (`tests/fixtures/import/`, whose README
//! says where each came from) into profiles in a scratch folder, assessed
//! against a stated machine so that the CPU checks do not depend on where
//! the tests run.

use std::path::{Path, PathBuf};

use super::*;
use crate::device::Devices;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");
const XEON: &str = "Intel(R) Xeon(R) Processor";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap()
}

/// A scratch folder with `host-llama` and `oneplus-13` (the repository's
/// profiles) and the small GGUF the llama-bench fixtures measured, under
/// the name they record.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../devices");
        std::fs::create_dir(dir.path().join("devices")).unwrap();
        for id in ["host-llama", "host", "oneplus-13"] {
            let name = format!("{id}.toml");
            std::fs::copy(root.join(&name), dir.path().join("devices").join(name)).unwrap();
        }
        let shape = "hidden=256,layers=4,head-dim=64,kv-heads=2,ffn=768,vocab=2048,context=256"
            .parse::<crate::arch::ShapeSpec>()
            .unwrap()
            .resolve()
            .unwrap();
        crate::probe::gguf::write_model(&shape, 0, &dir.path().join("pb-small.gguf")).unwrap();
        Scratch { dir }
    }

    /// `name` of the fixtures, copied beside the GGUF.
    fn file(&self, name: &str) -> PathBuf {
        let to = self.dir.path().join(name);
        std::fs::write(&to, fixture(name)).unwrap();
        to
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let to = self.dir.path().join(name);
        std::fs::write(&to, text).unwrap();
        to
    }

    fn devices(&self, cpu: &str) -> Devices {
        let here = crate::probe::HostFacts {
            cpu: cpu.into(),
            fingerprint: "f1f1f1f1f1f1".into(),
            ..crate::probe::HostFacts::collect()
        };
        Devices::discover_with(Some(&self.dir.path().join("devices")), None, here).unwrap()
    }

    fn profile(&self, id: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("devices").join(format!("{id}.toml"))).unwrap()
    }
}

fn err(r: Result<Imported, Error>) -> ImportError {
    match r {
        Err(Error::Import(e)) => e,
        Err(Error::Context { source, .. }) => match *source {
            Error::Import(e) => e,
            other => panic!("not an import error: {other}"),
        },
        Err(other) => panic!("not an import error: {other}"),
        Ok(_) => panic!("imported"),
    }
}

#[test]
fn every_fixture_is_recognised() {
    for (name, format) in [
        ("llama-bench-small.json", Format::LlamaBenchJson),
        ("llama-bench-small.csv", Format::LlamaBenchCsv),
        ("llama-bench-small-d64.jsonl", Format::LlamaBenchJsonl),
        ("llama-bench-small-pg.json", Format::LlamaBenchJson),
        ("mnn-llm-bench-issue-3806.md", Format::MnnMarkdown),
    ] {
        assert_eq!(Format::detect(&fixture(name)), Ok(format), "{name}");
    }
    let mnn_json = include_str!("../../../tests/fixtures/mnn-llm-bench/pocket-t2-defaults-and-pg64-16.json");
    assert_eq!(Format::detect(mnn_json), Ok(Format::MnnJson));
    let md = Format::detect(&fixture("llama-bench-small.md")).unwrap_err();
    assert!(md.contains("-o json"), "{md}");
    let other = Format::detect("hello\n").unwrap_err();
    assert!(other.contains("not an output pocketbench imports"), "{other}");
    assert_eq!("mnn-markdown".parse::<Format>(), Ok(Format::MnnMarkdown));
    assert!("xml".parse::<Format>().unwrap_err().contains("llama-bench-csv"));
}

#[test]
fn llama_bench_json_and_csv_read_the_same_tests() {
    let file = Path::new("x");
    let json = llama_bench::rows(file, &fixture("llama-bench-small.json"), Format::LlamaBenchJson).unwrap();
    let csv = llama_bench::rows(file, &fixture("llama-bench-small.csv"), Format::LlamaBenchCsv).unwrap();
    for rows in [&json, &csv] {
        assert_eq!(rows.iter().map(|r| r.speeds.name()).collect::<Vec<_>>(), ["pp64", "tg32"]);
        assert!(matches!(rows[0].speeds, Speeds::Prefill { prompt: 64, .. }));
        assert!(matches!(rows[1].speeds, Speeds::Decode { depth: 0, gen: 32, .. }));
        assert_eq!(rows[0].model.storage.as_deref(), Some("q4_0"));
        assert_eq!(rows[0].model.params, Some(3_672_832));
        assert_eq!(rows[0].cpu.as_deref(), Some(XEON));
        assert_eq!(rows[0].build.as_deref(), Some("llama.cpp build 1 (0c1e570)"));
        assert!(!rows[0].gpu);
    }
    // JSON rows start where their object does; CSV rows on their own line.
    assert_eq!((json[0].at.line, json[1].at.line), (Some(2), Some(48)));
    assert_eq!((csv[0].at.line, csv[1].at.line), (Some(2), Some(3)));
    assert_eq!(json[0].reps, Some(5));
    assert_eq!(csv[0].reps, None);
    let Speeds::Prefill { rate, .. } = json[0].speeds else { unreachable!() };
    assert_eq!((rate.mean, rate.sd), (18654.335914, Some(848.576961)));
    let d64 = llama_bench::rows(file, &fixture("llama-bench-small-d64.jsonl"), Format::LlamaBenchJsonl).unwrap();
    assert!(matches!(d64[0].speeds, Speeds::Decode { depth: 64, gen: 32, .. }), "{:?}", d64[0].speeds);
}

#[test]
fn bad_rows_are_located_by_row_line_and_field() {
    let file = Path::new("bench.json");
    let e = llama_bench::rows(file, &fixture("llama-bench-small-pg.json"), Format::LlamaBenchJson).unwrap_err();
    assert_eq!((e.row, e.line, e.field.as_deref()), (Some(1), Some(2), Some("n_prompt")));
    assert!(e.to_string().starts_with("bench.json:2: row 1: field `n_prompt`: pp64+tg32"), "{e}");

    let without = fixture("llama-bench-small.json").replacen("\"avg_ts\": 18654.335914,", "", 1);
    let e = llama_bench::rows(file, &without, Format::LlamaBenchJson).unwrap_err();
    assert_eq!((e.row, e.field.as_deref()), (Some(1), Some("avg_ts")), "{e}");
    assert!(e.message.starts_with("missing"), "{e}");

    let csv = fixture("llama-bench-small.csv");
    let bad = csv.replacen("\"19147.765263\"", "\"fast\"", 1);
    let e = llama_bench::rows(file, &bad, Format::LlamaBenchCsv).unwrap_err();
    assert_eq!((e.row, e.line, e.field.as_deref()), (Some(1), Some(2), Some("avg_ts")), "{e}");

    let truncated = &fixture("llama-bench-small.json")[..500];
    let e = llama_bench::rows(file, truncated, Format::LlamaBenchJson).unwrap_err();
    assert!(e.line.is_some() && e.message.contains("not llama-bench -o json"), "{e}");
}

#[test]
fn mnn_tables_and_json_read_their_speeds() {
    let file = Path::new("mnn.md");
    let rows = mnn::markdown_rows(file, &fixture("mnn-llm-bench-issue-3806.md")).unwrap();
    assert_eq!(rows.len(), 5);
    assert!(
        matches!(rows[0].speeds, Speeds::Prefill { prompt: 512, rate } if rate.mean == 344.09 && rate.sd == Some(0.53))
    );
    assert!(matches!(rows[4].speeds, Speeds::Decode { depth: 1, gen: 128, rate } if rate.mean == 45.58));
    assert_eq!((rows[4].threads, rows[4].at.line), (Some(4), Some(7)));
    assert_eq!(rows[0].settings, ["precision Low"]);
    assert_eq!(rows[0].model.label, "InternVL2-5_1B-MNN-INT8 (474.81 MiB)");

    let kv = "| model | modelSize | backend | threads | precision | llm_demo | speed(tok/s) |\n\
              | --- | ---: | --- | ---: | --- | --- | ---: |\n\
              | m | 1.00 MiB | CPU | 4 | Low | prompt=128<br>decode=64 | 500.00 ± 2.00<br>40.00 ± 1.00 |\n";
    let rows = mnn::markdown_rows(file, kv).unwrap();
    assert!(
        matches!(rows[0].speeds, Speeds::Both { prompt: 128, gen: 64, prefill, decode } if prefill.mean == 500.0 && decode.mean == 40.0)
    );
    let pg = kv.replace("prompt=128<br>decode=64 | 500.00 ± 2.00<br>40.00 ± 1.00", "prompt=128 | 500.00 ± 2.00");
    let e = mnn::markdown_rows(file, &pg).unwrap_err();
    assert_eq!((e.row, e.line, e.field.as_deref()), (Some(1), Some(3), Some("llm_demo")), "{e}");

    let json = include_str!("../../../tests/fixtures/mnn-llm-bench/pocket-t2-defaults-and-pg64-16.json");
    let rows = mnn::json_rows(Path::new("mnn.json"), json).unwrap();
    assert_eq!(rows.iter().map(|r| r.speeds.name()).collect::<Vec<_>>(), ["pp512", "tg128", "pp64+tg16"]);
}

#[test]
fn json_and_csv_import_into_a_llama_device_with_shapes_read_from_the_gguf() {
    let s = Scratch::new();
    let devices = s.devices(XEON);
    let before = s.profile("host-llama");
    let o = Options::default();
    let files = [s.file("llama-bench-small.json"), s.file("llama-bench-small.csv")];
    let done = import(&devices, "host-llama", &files, &o).unwrap();
    assert_eq!(done.points.len(), 4);
    let shape = done.points[0].shape;
    assert_eq!(shape.to_string(), "L4-d256-h4/2-f768-v2048-q4_0");
    assert!(
        done.points[0].mapped_by.starts_with("read from the GGUF's pocketbench.shape"),
        "{}",
        done.points[0].mapped_by
    );
    let after = s.profile("host-llama");
    assert!(after.starts_with(&before), "the profile is appended to, not rewritten");
    let added = &after[before.len()..];
    assert_eq!(added.matches("[[calibration]]").count(), 4, "{added}");
    assert!(added.contains("format = \"llama-bench -o json\"") && added.contains("engine = \"llama.cpp\""), "{added}");
    assert!(added.contains("machine = \"f1f1f1f1f1f1\""), "a row on this machine's CPU is this machine's: {added}");
    let pp = &done.device.points()[done.device.points().len() - 4];
    assert_eq!((pp.workload.prompt, pp.workload.gen), (64, 1));
    // As the profile writes it (`18654 tok/s`).
    assert!(pp.prefill_tok_s.is_some_and(|p| (p / 18654.335914 - 1.0).abs() < 1e-4), "{pp:?}");
    assert_eq!(pp.decode_tok_s, None);
    let tg = &done.device.points()[done.device.points().len() - 3];
    assert_eq!((tg.workload.prompt, tg.workload.gen, tg.prefill_tok_s), (1, 32, None));
    assert!(tg.decode_tok_s.is_some_and(|d| d > 1000.0), "{tg:?}");
    assert_eq!(tg.imported.as_ref().map(|i| (i.row, i.line)), Some((2, Some(48))));
    assert_eq!(tg.engine_build.as_deref(), Some("llama.cpp build 1 (0c1e570)"));
}

#[test]
fn nothing_is_written_when_any_row_fails_or_on_a_dry_run() {
    let s = Scratch::new();
    let devices = s.devices(XEON);
    let before = s.profile("host-llama");
    let good = s.file("llama-bench-small.json");
    let pg = s.file("llama-bench-small-pg.json");
    let e = err(import(&devices, "host-llama", &[good.clone(), pg], &Options::default()));
    assert_eq!(e.field.as_deref(), Some("n_prompt"));
    assert_eq!(s.profile("host-llama"), before);
    let dry = Options { dry_run: true, ..Options::default() };
    let done = import(&devices, "host-llama", &[good], &dry).unwrap();
    assert_eq!(done.points.len(), 2);
    assert_eq!(s.profile("host-llama"), before);
}

#[test]
fn rows_that_contradict_the_device_are_refused() {
    let s = Scratch::new();
    let json = s.file("llama-bench-small.json");
    // Another machine's CPU, into this machine's profile.
    let amd = s.devices("AMD EPYC 9B45");
    let e = err(import(&amd, "host-llama", std::slice::from_ref(&json), &Options::default()));
    assert_eq!((e.row, e.field.as_deref()), (Some(1), Some("cpu_info")), "{e}");
    assert!(e.message.contains("--force"), "{e}");
    let forced = import(
        &amd,
        "host-llama",
        std::slice::from_ref(&json),
        &Options { force: true, dry_run: true, ..Options::default() },
    )
    .unwrap();
    assert_eq!(forced.points[0].point.machine, None);
    // llama.cpp rows into the native engine's profile.
    let xeon = s.devices(XEON);
    let e = err(import(&xeon, "host", std::slice::from_ref(&json), &Options::default()));
    assert_eq!(e.field.as_deref(), Some("build_commit"), "{e}");
    assert!(e.message.contains("based-on = \"host\"") && e.message.contains("probe = \"llama-bench\""), "{e}");
    // MNN rows into a llama.cpp profile.
    let mnn = s.file("mnn-llm-bench-issue-3806.md");
    let e = err(import(&xeon, "host-llama", &[mnn], &Options::default()));
    assert!(e.message.contains("measured by mnn"), "{e}");
}

#[test]
fn a_model_that_cannot_be_mapped_says_what_is_missing_and_takes_a_shape() {
    let s = Scratch::new();
    let devices = s.devices(XEON);
    std::fs::remove_file(s.dir.path().join("pb-small.gguf")).unwrap();
    let json = s.file("llama-bench-small.json");
    let e = err(import(&devices, "host-llama", std::slice::from_ref(&json), &Options::default()));
    assert_eq!(e.field.as_deref(), Some("model_filename"), "{e}");
    for says in ["not its layers, hidden size", "`pb-small.gguf` is not readable here", "--preset", "--shape"] {
        assert!(e.message.contains(says), "{says}: {e}");
    }
    let shape = |spec: &str| Options { model: Some(spec.parse().unwrap()), dry_run: true, ..Options::default() };
    let small = "hidden=256,layers=4,head-dim=64,kv-heads=2,ffn=768,vocab=2048,context=256";
    let done = import(&devices, "host-llama", std::slice::from_ref(&json), &shape(small)).unwrap();
    assert_eq!(done.points[0].mapped_by, "given with --preset/--shape");
    let e = err(import(&devices, "host-llama", std::slice::from_ref(&json), &shape("preset=qwen3-0.6b")));
    assert_eq!(e.field.as_deref(), Some("model_n_params"), "{e}");
    let e = err(import(&devices, "host-llama", std::slice::from_ref(&json), &shape(&format!("{small},quant=q8_0"))));
    assert_eq!(e.field.as_deref(), Some("model_type"), "{e}");
    assert!(e.message.contains("quant=q4_0"), "{e}");
}

#[test]
fn an_mnn_table_imports_into_an_mnn_profile_with_its_shape_given() {
    let s = Scratch::new();
    let devices = s.devices(XEON);
    let md = s.file("mnn-llm-bench-issue-3806.md");
    let e = err(import(&devices, "oneplus-13", std::slice::from_ref(&md), &Options::default()));
    assert_eq!(e.field.as_deref(), Some("model"), "{e}");
    let qwen2_05b =
        "hidden=896,layers=24,heads=14,kv-heads=2,head-dim=64,ffn=4864,vocab=151936,qk-norm=false,quant=q8_0";
    let o = Options { model: Some(qwen2_05b.parse().unwrap()), ..Options::default() };
    let done = import(&devices, "oneplus-13", &[md], &o).unwrap();
    assert_eq!(done.points.len(), 5);
    let text = s.profile("oneplus-13");
    assert!(text.contains("format = \"MNN llm_bench table\"") && text.contains("engine = \"mnn\""));
    assert_eq!(done.points[4].point.machine, None, "a phone has no machine fingerprint");
}

#[test]
fn rows_import_into_a_profile_based_on_another_and_fit_it() {
    let s = Scratch::new();
    let child = "based-on = \"host\"\n\n[device]\nid = \"my-llama\"\nname = \"this host through llama-bench\"\n\n\
        [engine]\nname = \"llama.cpp (llama-bench)\"\nprobe = \"llama-bench\"\n\n\
        [model]\nfit = [\"bandwidth-efficiency\", \"layer-cost\", \"compute-efficiency\"]\n";
    std::fs::write(s.dir.path().join("devices/my-llama.toml"), child).unwrap();
    let devices = s.devices(XEON);
    assert_eq!(devices.get("my-llama").unwrap().state(), &crate::device::CalibrationState::Priors);
    let files = [s.file("llama-bench-small.json"), s.file("llama-bench-small.csv")];
    import(&devices, "my-llama", &files, &Options::default()).unwrap();
    // `calibrate` after the import writes the fit into the profile's own file.
    let again = s.devices(XEON);
    let d = again.get("my-llama").unwrap();
    let fit = crate::calibrate::points::fit_devices(&[d], false).unwrap();
    assert!(fit[0].written);
    let text = s.profile("my-llama");
    assert!(text.starts_with(child), "the profile keeps what it said");
    assert!(text.contains("bandwidth-efficiency = {") && text.contains("fitted-digest"), "{text}");
    let d = s.devices(XEON).get("my-llama").unwrap().clone();
    assert_eq!(d.state(), &crate::device::CalibrationState::Calibrated { points: 4, held_out: 0 });
    assert_eq!(d.based_on().unwrap().parent, "host");
    // Its engine build is the device's own (llama-bench's), so this machine's
    // calibration is current.
    assert!(d.calibration_warning().is_none(), "{:?}", d.calibration_warning());
}

#[test]
fn pocketbench_results_import_as_points_of_their_own_device() {
    let s = Scratch::new();
    let devices = s.devices(XEON);
    let rec = crate::testing::measured_record(4, 64, 32, &[100.0, 101.0, 99.0]);
    let json = serde_json::to_string(&rec).unwrap();
    assert_eq!(Format::detect(&json), Ok(Format::Pocketbench));
    let one = s.write("run.json", &json);
    let lines = s.write("results.jsonl", &format!("{json}\n{json}\n"));
    // Measured on the machine running the tests, not the one stated here.
    let e = import(&devices, "host", std::slice::from_ref(&one), &Options::default()).unwrap_err().to_string();
    assert!(e.contains("measured on another machine") && e.contains("--force"), "{e}");
    let e = import(&devices, "host-llama", std::slice::from_ref(&one), &Options::default()).unwrap_err().to_string();
    assert!(e.contains("measured on `host`, not `host-llama`"), "{e}");
    let forced = Options { force: true, ..Options::default() };
    let done = import(&devices, "host", &[one, lines], &forced).unwrap();
    assert_eq!(done.points.len(), 3);
    assert_eq!((done.points[2].at.row, done.points[2].at.line), (2, Some(2)));
    let text = s.profile("host");
    assert_eq!(text.matches("format = \"pocketbench result\"").count(), 3, "{text}");
    assert!(text.contains("engine = \"native\""), "{text}");
}
