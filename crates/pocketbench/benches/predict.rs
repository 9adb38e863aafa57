//! Prediction throughput: configuration x device predictions per second on
//! one core (target: at least 1 million), and the frontier of a full sweep.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pocketbench::device::Devices;
use pocketbench::event::Silent;
use pocketbench::predict::predict;
use pocketbench::sweep::{run, Plan, PlanOptions};

fn plan() -> Plan {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps/pocket.toml");
    Plan::from_file(&f, &PlanOptions::default()).expect("pocket.toml")
}

fn bench(c: &mut Criterion) {
    let devices = Devices::built_in().expect("built-in profiles");
    let plan = plan();
    let models: Vec<_> = devices.all().iter().map(|d| d.model()).collect();
    let n = (plan.shapes.len() * models.len()) as u64;

    let mut g = c.benchmark_group("predict");
    g.throughput(Throughput::Elements(n));
    g.bench_function("pocket.toml x 5 devices (arithmetic only)", |b| {
        b.iter(|| {
            let mut acc = 0.0;
            for m in &models {
                for (s, a) in &plan.shapes {
                    acc += predict(s, a, m, &plan.workload).decode_tok_s;
                }
            }
            black_box(acc)
        })
    });
    g.finish();

    let devs = devices.select(&plan.devices).expect("devices");
    let mut g = c.benchmark_group("sweep");
    g.throughput(Throughput::Elements((plan.shapes.len() * devs.len()) as u64));
    g.bench_function("pocket.toml records + budgets + frontier", |b| {
        b.iter(|| black_box(run(&plan, &devs, None, &mut Silent)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
