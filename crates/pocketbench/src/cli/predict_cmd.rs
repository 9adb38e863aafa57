//! `pocketbench predict`.

use clap::Args;
use pocketbench::capability::{capability, ProxySettings};
use pocketbench::device::Devices;
use pocketbench::record::predicted_at;

use super::render::verdict;

/// "90% a-b unit", where both ends are known.
fn interval(lo: Option<f64>, hi: Option<f64>, decimals: usize, unit: &str) -> Option<String> {
    pocketbench::report::spread(lo, hi, decimals).map(|s| format!("90% {s}{unit}"))
}
use super::{Code, ShapeArgs, WorkloadArgs};

/// Arguments of `predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The configuration.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Device id (see `pocketbench devices`).
    #[arg(long, value_name = "D")]
    pub device: String,
    /// Workload (default: the device's reference workload).
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Print the record as JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit with code 1 when a budget fails.
    #[arg(long)]
    pub fail_on_budget: bool,
    /// Predict at this many CPU threads (N), or at each of a range (A..B: a curve, pinned and
    /// unpinned), from the device's `[facts.cpu]` clusters.
    #[arg(long, value_name = "N|A..B", value_parser = threads_arg)]
    pub threads: Option<std::ops::RangeInclusive<u32>>,
    /// With --threads N: threads placed as an unpinned pool (slowest cores first), not pinned to
    /// the fastest.
    #[arg(long, requires = "threads")]
    pub unpinned: bool,
    /// Predict for another engine class the device has points of (`llama.cpp`, or
    /// `llama.cpp/npu` where it runs on more than one backend): the profile's model scaled by
    /// what that class's points make of it. `devices show D` lists the classes.
    #[arg(long, value_name = "CLASS[/BACKEND]")]
    pub engine_class: Option<String>,
}

/// `N` or `A..B` (both at least 1, A at most B).
fn threads_arg(s: &str) -> Result<std::ops::RangeInclusive<u32>, String> {
    let num = |t: &str| t.trim().parse::<u32>().ok().filter(|n| *n >= 1);
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a), num(b)),
        None => (num(s), num(s)),
    };
    match (a, b) {
        (Some(a), Some(b)) if a <= b => Ok(a..=b),
        _ => Err(format!("expected a thread count N or a range A..B (1 or more, A at most B), got `{s}`")),
    }
}

/// Run `predict`.
pub fn run(a: &PredictArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let shape = a.shape.resolve()?;
    let with_classes = devices.with_classes(std::slice::from_ref(&a.device))?;
    let device = with_classes.get(&a.device)?;
    let classed;
    let device = match &a.engine_class {
        Some(c) => {
            classed = pocketbench::calibrate::classes::for_class(device, c)
                .map_err(|e| pocketbench::Error::usage(e.to_string()))?;
            &classed
        }
        None => device,
    };
    let w = a.workload.on_device(device)?;
    let acct = shape.accounting();
    let at_threads;
    let (device, placement) = match &a.threads {
        Some(t) if t.start() != t.end() => return curve(a, device, &shape, &w, t.clone()),
        Some(t) => {
            let (d, p) =
                device.at_threads(*t.start(), !a.unpinned).map_err(|e| pocketbench::Error::usage(e.to_string()))?;
            at_threads = d;
            (&at_threads, Some(p))
        }
        None => (device, None),
    };
    let settings = ProxySettings::default();
    let cap = capability(&shape, &acct, &settings, None);
    let r = predicted_at(&shape, &acct, device, &w, &cap, a.threads.as_ref().map(|t| *t.start()));
    if a.json {
        outln!("{}", super::pretty(&r)?);
    } else {
        outln!(
            "{} on {} [{}, engine class `{}` on {}]: predicted by {}",
            r.config_name,
            device.profile().device.name,
            r.engine,
            device.profile().engine.class(),
            device.profile().engine.backend.key(),
            r.produced_by
        );
        outln!("  calibration   {}", r.calibration);
        if let Some(p) = &placement {
            outln!(
                "  threads       {} on {}: the profile's efficiencies scaled by what they read and compute against \
                 its own {} threads (pinned)",
                p.threads,
                p.describe(),
                device.reference_placement().map_or(0, |r| r.threads)
            );
        }
        outln!("  workload      {w}");
        let over = device.model().bandwidth_range.map_or(String::new(), |[lo, hi]| {
            let p = pocketbench::predict::predict(&shape, &acct, device.model(), &w);
            format!(
                " ({:.1}-{:.1} tok/s over the machine's bandwidth, {:.1}-{:.1} GB/s)",
                p.decode_tok_s_range[0],
                p.decode_tok_s_range[1],
                lo / 1e9,
                hi / 1e9
            )
        });
        let b = &r.bounds;
        let ninety = |lo, hi, d, unit| interval(lo, hi, d, unit).map_or(String::new(), |s| format!(" ({s})"));
        let basis = pocketbench::interval::basis(device);
        let confidence = if b.low_confidence == Some(true) { "LOW" } else { "normal" };
        outln!(
            "  confidence    {confidence}: decode from {}, prefill from {} (90% intervals below)",
            basis.from[0],
            basis.from[1]
        );
        outln!(
            "  decode        {:>9.1} tok/s   {}{over}{}",
            r.decode_tok_s,
            verdict(&r.budgets.decode),
            ninety(b.decode_tok_s_low, b.decode_tok_s_high, 1, " tok/s")
        );
        outln!(
            "  prefill       {:>9.1} tok/s  {} time to first token {:.0} ms{}",
            r.prefill_tok_s,
            ninety(b.prefill_tok_s_low, b.prefill_tok_s_high, 0, ""),
            r.ttft_ms,
            ninety(r.ttft_ms_low, r.ttft_ms_high, 0, " ms")
        );
        outln!(
            "  peak memory   {:>9.1} MB      {}{}",
            r.peak_mem_increase_mb,
            verdict(&r.budgets.memory),
            ninety(b.peak_mem_increase_mb_low, b.peak_mem_increase_mb_high, 1, " MB")
        );
        outln!("  package       {:>9.1} MB", r.package_mb);
        let battery =
            r.battery_fraction_per_run.map_or("no battery".to_string(), |f| format!("{:.4}% of battery", f * 100.0));
        let mut notes: Vec<String> =
            interval(r.energy_j_per_run_low, r.energy_j_per_run_high, 2, " J").into_iter().collect();
        notes.push(battery);
        if let Some(s) = r.prefill_energy_share {
            notes.push(format!("{:.0}% of it in prefill", s * 100.0));
        }
        notes.push("an estimate, not measured".into());
        outln!(
            "  energy        {:>9.2} J/run   {} ({})",
            r.energy_j_per_run,
            verdict(&r.budgets.energy),
            notes.join("; ")
        );
        outln!("  capability    {:>9.1}         {}", r.capability, r.capability_source);
        outln!("  feasible      {}", if r.feasible { "yes" } else { "no" });
    }
    Ok(if a.fail_on_budget && !r.feasible { Code::Failed } else { Code::Ok })
}

/// `predict --threads A..B`: the thread curve, pinned and unpinned.
fn curve(
    a: &PredictArgs,
    device: &pocketbench::device::Device,
    shape: &pocketbench::arch::Shape,
    w: &pocketbench::workload::Workload,
    threads: std::ops::RangeInclusive<u32>,
) -> pocketbench::Result<Code> {
    let points =
        pocketbench::cores::curve(device, shape, w, threads).map_err(|e| pocketbench::Error::usage(e.to_string()))?;
    if a.json {
        outln!("{}", super::pretty(&points)?);
        return Ok(Code::Ok);
    }
    let reference = device.reference_placement().expect("a curve has clusters");
    outln!("{} on {}: predicted by thread count ({w})", shape, device.profile().device.name);
    outln!(
        "  the profile's efficiencies scaled by what each placement reads and computes against its own: {}",
        reference.describe()
    );
    outln!("  {:>7}  {:<38} {:>12} {:>13}", "threads", "cores", "decode tok/s", "prefill tok/s");
    for p in &points {
        outln!(
            "  {:>7}  {:<38} {:>12.1} {:>13.1}",
            p.placement.threads,
            p.placement.describe(),
            p.decode_tok_s,
            p.prefill_tok_s
        );
    }
    Ok(Code::Ok)
}
