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

/// About 1,000,000 configurations on the four target devices: how the cost
/// grows (`PB_BENCH_SCALE=1 cargo bench --bench store`), one round.
const SCALE: &str = "[sweep]\nname = \"scale\"\nmax-configs = 4000000\n\
    devices = [\"iphone-18-pro\", \"ipad-pro-m5\", \"snapdragon-8-gen-5\", \"oneplus-13\"]\n\
    [workload]\nprompt = 1024\ngen = 128\n\
    [space]\nlayers = { from = 8, to = 40, step = 1 }\nhidden = { from = 256, to = 2304, step = 64 }\n\
    head-dim = [64, 128]\nkv-heads = [1, 2, 4, 8]\nffn-mult = [2.0, 2.5, 3.0, 3.5, 4.0, 4.5]\n\
    vocab = [32000, 49152, 65536, 151936]\nquant = [\"q4_0\", \"q4_1\", \"q8_0\", \"q4_k\"]\ntied = [true, false]\nqk-norm = [true, false]\n\
    [space.params]\nmin = \"20M\"\nmax = \"3B\"\n";

/// This process's peak resident memory, MB (Linux `VmHWM`).
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
    kb.unwrap_or(0.0) / 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let file = dir.path().join("bench.toml");
    let scale = std::env::var_os("PB_BENCH_SCALE").is_some();
    std::fs::write(&file, if scale { SCALE } else { SPACE }).expect("write the sweep");
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
    let (mut stored, mut render, mut resume, mut html_bytes) = (vec![], vec![], vec![], 0);
    for round in 0..if scale { 1 } else { 3 } {
        let out = dir.path().join(format!("out-{round}"));
        let db = out.join(FILE_NAME);
        // As `sweep` runs it: predicted in chunks, written as predicted.
        let t = Instant::now();
        let mut store = Store::open(&db).expect("store");
        store.start_run("bench", None, "{}").expect("run");
        let outcome = sweep::execute(&mut store, &plan, &devs, None, identity(), None, &mut Silent).expect("sweep");
        stored.push(t.elapsed().as_secs_f64());

        // As `sweep` renders: from the outcome in hand (the store gives the
        // sweep's row and runs); `pocketbench report` reads it back.
        let t = Instant::now();
        let data = SweepReport::with_outcome(&store, outcome).expect("report");
        let written = report::write_all(&out, &data, &report::standard()).expect("render");
        render.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let back = SweepReport::from_store(&store).expect("read back");
        let read = t.elapsed().as_secs_f64();
        assert_eq!(back.outcome, data.outcome, "the store gives back what the sweep rendered");
        if round == 0 {
            println!(
                "kept {} records in the outcome, {} left in the store alone",
                data.outcome.results.len(),
                data.outcome.omitted
            );
            // Where render's time goes: each exporter alone, outside the timed run.
            let mut split = vec![format!("(`pocketbench report` reads the store back first: {read:.3} s)")];
            for e in report::standard() {
                let te = Instant::now();
                let _ = e.render(&data).expect("render");
                split.push(format!("{} {:.3} s", e.file_name(), te.elapsed().as_secs_f64()));
            }
            println!("render split (each exporter alone, in memory): {}", split.join(", "));
            for p in &written {
                println!(
                    "  {:>12} bytes  {}",
                    std::fs::metadata(p).map_or(0, |m| m.len()),
                    p.file_name().unwrap().to_string_lossy()
                );
            }
        }
        html_bytes = std::fs::metadata(out.join("report.html")).map_or(0, |m| m.len());
        drop(store);

        // Resume of the finished sweep: open, compare, find predictions complete and nothing to measure.
        let t = Instant::now();
        let store = Store::open(Path::new(&db)).expect("reopen");
        let row = store.sweep().expect("sweep").expect("a sweep");
        let nothing_to_do = row.identity == identity() && row.predicted_complete;
        resume.push(t.elapsed().as_secs_f64());
        assert!(nothing_to_do);
    }
    let (s, r, z) = (median(stored), median(render), median(resume));
    let rounds = if scale { "one round" } else { "median of 3" };
    println!("predict and store {s:>7.3} s   render {r:>7.3} s   ({rounds})");
    let target = if scale { 60.0 } else { 3.0 };
    println!("predict + store + render: {:.3} s = {:.2}x the {target} s target", s + r, (s + r) / target);
    println!("report.html: {:.1} MB = {:.2}x the 20 MB target", html_bytes as f64 / 1e6, html_bytes as f64 / 20e6);
    println!("resume decides nothing to do: {:.3} s = {:.2}x the 1 s target", z, z);
    println!("peak resident memory: {:.0} MB{}", peak_rss_mb(), if scale { " (target: at most 1000)" } else { "" });
}
