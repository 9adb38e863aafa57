//! `pocketbench bench`: benchmarks of the measurement itself.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use pocketbench::bench::{Repeatability, Series};
use pocketbench::device::Devices;
use pocketbench::probe::EngineKind;
use pocketbench::runner;

use pocketbench::event::{Event, Reporter};

use super::render::EventArgs;
use super::reps_args::Reps;
use super::run_cmd::MeasureArgs;
use super::{Code, ShapeArgs, WorkloadArgs};

/// Arguments of `bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The benchmark.
    #[command(subcommand)]
    pub what: BenchCommand,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Run one job in N fresh processes and print the spread of their medians (decode tok/s,
    /// efficiency against the same-moment bandwidth) beside llama-bench's where it is on PATH.
    Repeatability(RepeatabilityArgs),
}

/// Arguments of `bench repeatability`.
#[derive(Debug, Args)]
pub struct RepeatabilityArgs {
    /// The configuration.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Device id (a local one: `host`).
    #[arg(long, value_name = "D", default_value = "host")]
    pub device: String,
    /// Workload [default: 1 prompt token + 128 generated: decode, which the roofline moves].
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Fresh processes of each engine.
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub processes: usize,
    /// llama.cpp's llama-bench to run in turns on the same exported GGUF [default:
    /// `$POCKETBENCH_LLAMA_BENCH`, else `llama-bench` on PATH, else none].
    #[arg(long, value_name = "PATH")]
    pub llama_bench: Option<PathBuf>,
    /// Repetitions of each llama-bench process (its `-r`).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub llama_reps: u32,
    /// Measurement settings of our processes.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `bench`.
pub fn run(a: &BenchArgs, devices: &Devices) -> pocketbench::Result<Code> {
    match &a.what {
        BenchCommand::Repeatability(r) => repeatability(r, devices),
    }
}

fn repeatability(a: &RepeatabilityArgs, devices: &Devices) -> pocketbench::Result<Code> {
    if a.processes < 2 {
        return Err(pocketbench::Error::usage(format!(
            "--processes must be at least 2 (a spread needs two), got {}",
            a.processes
        )));
    }
    let shape = a.shape.resolve()?;
    let device = devices.get(&a.device)?;
    let w =
        WorkloadArgs { prompt: a.workload.prompt.or(Some(1)), gen: a.workload.gen.or(Some(128)) }.on_device(device)?;
    let settings = a.measure.settings(Reps::Auto);
    let job = settings.job(device, shape, w)?;
    if let Some(p) = &a.llama_bench {
        if !p.is_file() {
            return Err(pocketbench::Error::usage(format!("--llama-bench {}: no such file", p.display())));
        }
        // Read by the llama-bench engine when it looks for its tool; set
        // before any thread is started.
        std::env::set_var("POCKETBENCH_LLAMA_BENCH", p);
    }
    let reference = if EngineKind::LlamaBench.available() {
        let s = runner::JobSettings {
            reps: a.llama_reps,
            auto: None,
            engine: Some(EngineKind::LlamaBench),
            threads: Some(job.threads),
            ..settings.clone()
        };
        Some(s.job(device, shape, w)?)
    } else {
        None
    };
    let runner = runner::for_device(device)?;
    let mut reporter = a.events.reporter();
    reporter.report(&Event::ProcessesPlanned {
        device: device.id().to_string(),
        config: shape.to_string(),
        workload: w.to_string(),
        processes: a.processes,
        threads: job.threads,
        reference: reference.is_some(),
    });
    let r = pocketbench::bench::repeatability(
        runner.as_ref(),
        device,
        &job,
        reference.as_ref(),
        a.processes,
        &mut reporter,
    );
    if a.json {
        outln!("{}", super::pretty(&r)?);
    } else {
        print(&r)?;
    }
    Ok(if r.ours.processes.len() < 2 { Code::Harness } else { Code::Ok })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn print_series(name: &str, s: &Series) -> pocketbench::Result<()> {
    outln!("{name}");
    outln!("  process   decode tok/s   reps   ±median   efficiency   bandwidth GB/s   at reference   flags");
    for (i, p) in s.processes.iter().enumerate() {
        let flags: Vec<&str> = [(p.contended, "contended"), (p.drifted, "drifted")]
            .into_iter()
            .filter_map(|(b, f)| b.then_some(f))
            .collect();
        outln!(
            "  {:>7}   {:>12.1}   {:>4}   {:>7}   {:>10}   {:>14}   {:>12}   {}",
            i + 1,
            p.decode_tok_s,
            p.reps,
            pct(p.precision),
            pct(p.efficiency),
            p.bandwidth_gb_s.map_or("-".into(), |[lo, hi]| format!("{lo:.1}-{hi:.1}")),
            p.adjusted_tok_s.map_or("-".into(), |t| format!("{t:.1}")),
            flags.join(", ")
        );
    }
    for f in &s.failed {
        outln!("  failed: {f}");
    }
    if let [(common, _), ..] = &s.kernel_choices[..] {
        outln!("  the processes chose their kernels differently at start-up (the spread includes that):");
        for (i, p) in s.processes.iter().enumerate() {
            if let Some(k) = p.kernels.as_ref().filter(|k| *k != common) {
                outln!("    process {}: {k}", i + 1);
            }
        }
        outln!("    the others: {common}");
    }
    outln!(
        "  CV across processes: decode {}, efficiency {}, decode at the reference bandwidth {}; bandwidth seen {}",
        pct(s.cv_decode),
        pct(s.cv_efficiency),
        pct(s.cv_adjusted),
        s.bandwidth_gb_s.map_or("not read".into(), |[lo, hi]| format!("{lo:.1}-{hi:.1} GB/s"))
    );
    match &s.bandwidth_fit {
        Some(f) => outln!(
            "  decode time vs bandwidth over {} repetitions: {:.2} ms + {:.0} MB / bandwidth a token (r = {:.2}); \
             reference {:.1} GB/s, the median repetition's",
            f.points,
            f.fixed_ms,
            f.bound_mb,
            f.r,
            f.reference_gb_s
        ),
        None if s.bandwidth_gb_s.is_some() => outln!(
            "  decode time vs bandwidth: no fit (needs {} repetitions over a {:.0}% spread of bandwidth that \
             explains the time, r >= {})",
            pocketbench::trust::MIN_FIT_POINTS,
            (pocketbench::trust::MIN_FIT_SPREAD - 1.0) * 100.0,
            pocketbench::trust::MIN_FIT_R
        ),
        None => {}
    }
    Ok(())
}

fn print(r: &Repeatability) -> pocketbench::Result<()> {
    outln!("{} at {} on {}, {} threads", r.config, r.workload, r.device, r.threads);
    let ours = r.ours.processes.first().map_or("ours".to_string(), |p| p.engine.clone());
    print_series(&ours, &r.ours)?;
    if let Some(t) = &r.reference {
        let name = t.processes.first().map_or("llama-bench".to_string(), |p| p.engine.clone());
        print_series(&format!("{name} (in turns, same GGUF)"), t)?;
    }
    Ok(())
}
