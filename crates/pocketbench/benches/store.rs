//! A 20,000-configuration x 5-device sweep (100,000 records) predicted,
//! stored and rendered, each stage timed, and the resume decision of the
//! finished sweep: the targets are under 3 s for the three stages
//! together, under 20 MB for report.html and under 1 s to decide that a
//! finished sweep has nothing to do. A plain timing harness rather than
//! criterion: each stage takes seconds, so the median of three runs is
//! printed with its ratio to the target (`cargo bench --bench store`).
#![allow(missing_docs, clippy::print_stdout)]

use std::path::Path;
use std::time::Instant;

use pocketbench::device::Devices;
use pocketbench::event::Silent;
use pocketbench::report::{self, SweepReport};
use pocketbench::store::{Identity, Store, FILE_NAME};
use pocketbench::sweep::{self, Plan};

/// About 20,000 configurations after the parameter window (the cap is raised to fit).
const SPACE: &str = "[sweep]\nname = \"bench\"\nmax-configs = 60000\n\
    devices = [\"iphone-18-pro\", \"ipad-pro-m5\", \"snapdragon-8-gen-5\", \"oneplus-13\", \"host\"]\n\
    [workload]\nprompt = 1024\ngen = 128\n\
    [space]\nlayers = { from = 8, to = 33, step = 1 }\nhidden = { from = 256, to = 2304, step = 64 }\n\
    head-dim = 64\nkv-heads = [1, 2, 4, 8]\nffn-mult = [2.5, 3.0, 3.5, 4.0]\nvocab = [32000, 65536, 151936]\n\
    [space.params]\nmin = \"20M\"\nmax = \"3B\"\n";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let file = dir.path().join("bench.toml");
    std::fs::write(&file, SPACE).expect("write the sweep");
    let spec = pocketbench::config::load(&file).expect("parse");
    let plan = Plan::from_toml(&file, spec, &Default::default()).expect("plan");
    let devices = Devices::built_in().expect("profiles");
    let devs = devices.select(&plan.devices).expect("devices");
    let records = plan.shapes.len() * devs.len();
    println!("sweep: {} configurations x {} devices = {records} records", plan.shapes.len(), devs.len());
    let identity = || Identity::new(&plan.name, "bench.toml", b"", "{}".into(), None);
    if std::env::var_os("PB_BENCH_DIAG").is_some() {
        let o = sweep::run(&plan, &devs, None, &mut Silent);
        for d in &o.devices {
            let mut recs: Vec<_> = o.results.iter().filter(|r| r.device == d.device).cloned().collect();
            let t = Instant::now();
            let s = sweep::mark_frontier(
                &mut recs,
                &sweep::DeviceSummary::header(devs.iter().find(|x| x.id() == d.device).unwrap()),
                &plan.objectives,
            );
            println!(
                "{}: {} feasible, {} frontier, mark_frontier {:.3} s",
                d.device,
                s.feasible,
                s.frontier,
                t.elapsed().as_secs_f64()
            );
        }
        return;
    }
    let (mut predict, mut store_t, mut render, mut resume, mut html_bytes) = (vec![], vec![], vec![], vec![], 0);
    for round in 0..3 {
        let out = dir.path().join(format!("out-{round}"));
        let db = out.join(FILE_NAME);
        let t = Instant::now();
        let outcome = sweep::run(&plan, &devs, None, &mut Silent);
        predict.push(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let mut store = Store::open(&db).expect("store");
        store.start_run("bench", None, "{}").expect("run");
        let rows: Vec<_> = devs
            .iter()
            .map(|d| pocketbench::store::DeviceRow {
                header: sweep::DeviceSummary::header(d),
                profile_digest: sweep::profile_digest(d),
            })
            .collect();
        let shapes: Vec<_> = plan.shapes.iter().map(|(s, a)| (*s, a.params_total)).collect();
        store.create_sweep(&sweep::sweep_row(&plan, identity()), &rows, &shapes).expect("sweep row");
        let cal = |id: &str| devs.iter().find(|d| d.id() == id).map(|d| sweep::calibration_of(d)).unwrap_or_default();
        store.insert_predicted(&outcome.results, &cal).expect("insert");
        store.set_predicted_complete().expect("complete");
        store_t.push(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let data = SweepReport::from_store(&store).expect("read back");
        let read = t.elapsed().as_secs_f64();
        let written = report::write_all(&out, &data, &report::standard()).expect("render");
        render.push(t.elapsed().as_secs_f64());
        if round == 0 {
            // Where render's time goes: each exporter alone, outside the timed run.
            let mut split = vec![format!("read back {read:.3} s")];
            for e in report::standard() {
                let te = Instant::now();
                let _ = e.render(&data).expect("render");
                split.push(format!("{} {:.3} s", e.file_name(), te.elapsed().as_secs_f64()));
            }
            println!("render split (each exporter alone, in memory): {}", split.join(", "));
        }
        html_bytes = std::fs::metadata(out.join("report.html")).map_or(0, |m| m.len());
        drop(store);
        for p in &written {
            if round == 0 {
                println!(
                    "  {:>12} bytes  {}",
                    std::fs::metadata(p).map_or(0, |m| m.len()),
                    p.file_name().unwrap().to_string_lossy()
                );
            }
        }

        // Resume of the finished sweep: open, compare, find predictions complete and nothing to measure.
        let t = Instant::now();
        let store = Store::open(Path::new(&db)).expect("reopen");
        let row = store.sweep().expect("sweep").expect("a sweep");
        let same = row.identity == identity() && store.devices().expect("devices") == rows;
        let nothing_to_do = same && row.predicted_complete;
        resume.push(t.elapsed().as_secs_f64());
        assert!(nothing_to_do);
    }
    let (p, s, r, z) = (median(predict), median(store_t), median(render), median(resume));
    println!("predict {p:>7.3} s   store {s:>7.3} s   render {r:>7.3} s   (median of 3)");
    println!("predict + store + render: {:.3} s = {:.2}x the 3 s target", p + s + r, (p + s + r) / 3.0);
    println!("report.html: {:.1} MB = {:.2}x the 20 MB target", html_bytes as f64 / 1e6, html_bytes as f64 / 20e6);
    println!("resume decides nothing to do: {:.3} s = {:.2}x the 1 s target", z, z);
}
