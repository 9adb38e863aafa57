//! `pocketbench run`: measure one configuration on a device.

use std::time::Duration;

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::record::Record;
use pocketbench::runner::{self, JobSettings};

use pocketbench::event::{Event, Reporter};

use super::render::{range, verdict, EventArgs};
use super::reps_args::{AutoArgs, Reps};
use super::{Code, ShapeArgs, WorkloadArgs};

/// Measurement settings shared by `run` and `sweep --measure`.
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    /// Measured repetitions per configuration: a number, or `auto` (repeat until the median decode
    /// speed is as precise as --precision asks) [default: auto].
    #[arg(long, value_name = "N|auto", value_parser = super::reps_args::reps_arg)]
    pub reps: Option<Reps>,
    /// The limits of --reps auto.
    #[command(flatten)]
    pub auto: AutoArgs,
    /// Pin the engine's threads one to a CPU (thread i to the i-th CPU this process may use).
    #[arg(long)]
    pub pin: bool,
    /// Threads (default: all cores of the device).
    #[arg(long, value_name = "T")]
    pub threads: Option<u32>,
    /// Seconds before a probe is killed and recorded as timed out.
    #[arg(long, default_value_t = 1800, value_name = "S")]
    pub timeout: u64,
    /// Run configurations predicted not to fit in available memory.
    #[arg(long)]
    pub force: bool,
    /// Engine to measure through: native (built in: pocketbench's own
    /// decoder and kernels; `candle` is its deprecated old name),
    /// candle-transformers (built in, the stock reference), llama.cpp (built
    /// with `--features llama`), llama-bench (an external command:
    /// `$POCKETBENCH_LLAMA_BENCH` or on PATH) or mnn-llm-bench (MNN's
    /// llm_bench: `$POCKETBENCH_MNN_LLM_BENCH` or `llm_bench` on PATH; needs
    /// `run --engine-model`); default: the device profile's `engine.probe`.
    #[arg(long, value_name = "E", value_parser = super::engine_arg)]
    pub engine: Option<pocketbench::probe::EngineKind>,
}

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The configuration.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Device id: this host (`host`, `host-llama`) or an Android phone over
    /// adb (`android-any`, or a profile whose transport names its serial);
    /// `pocketbench devices` lists them and which are attached.
    #[arg(long, value_name = "D")]
    pub device: String,
    /// Workload (default: the device's reference workload).
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Measurement settings.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// A model in the engine's own format, run instead of the GGUF
    /// pocketbench builds: for mnn-llm-bench, the `config.json` of an MNN
    /// export (llmexport.py) of this configuration.
    #[arg(long, value_name = "PATH")]
    pub engine_model: Option<std::path::PathBuf>,
    /// Print the record as JSON (raw samples included).
    #[arg(long)]
    pub json: bool,
    /// Exit with code 1 when a budget fails.
    #[arg(long)]
    pub fail_on_budget: bool,
    /// Append the measurement to the device profile as a calibration point.
    #[arg(long)]
    pub save_point: bool,
    /// With --save-point: hold the point out of the fit (to check the fit against it).
    #[arg(long, requires = "save_point")]
    pub holdout: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

impl MeasureArgs {
    /// The settings every job is built from (checked by the library's one
    /// job builder); `default` where `--reps` was not given.
    pub fn settings(&self, default: Reps) -> JobSettings {
        let (reps, auto) = self.auto.resolve(self.reps.unwrap_or(default));
        JobSettings {
            reps,
            threads: self.threads,
            timeout: Duration::from_secs(self.timeout.max(1)),
            force: self.force,
            engine: self.engine,
            engine_model: None,
            auto,
            pin: self.pin,
        }
    }
}

/// Run `run`.
pub fn run(a: &RunArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let shape = a.shape.resolve()?;
    let device = devices.get(&a.device)?;
    let w = a.workload.on_device(device)?;
    let settings = JobSettings { engine_model: a.engine_model.clone(), ..a.measure.settings(Reps::Auto) };
    let job = settings.job(device, shape, w)?;
    let runner = runner::for_device(device)?;
    let reps = match job.auto {
        Some(a) => format!("{}..{} reps until ±{:.1}%", job.reps, a.max_reps, a.precision * 100.0),
        None => format!("{} reps", job.reps),
    };
    let mut reporter = a.events.reporter();
    reporter.report(&Event::RunPlanned {
        device: device.id().to_string(),
        config: shape.to_string(),
        reps,
        threads: job.threads,
        workload: w.to_string(),
    });
    let r = pocketbench::schedule::measure_one(runner.as_ref(), device, &job)?;
    drop(reporter);
    if a.json {
        outln!("{}", super::pretty(&r)?);
    } else {
        print_measured(&r)?;
    }
    // Printed first (the data is kept), then refused.
    if let Some(why) = r.measurement.as_ref().and_then(|m| m.invalid()) {
        return Err(pocketbench::Error::InvalidOutput(format!("{} on {}: {why}", r.config_name, r.device)));
    }
    if a.save_point {
        let profile = pocketbench::calibrate::points::save_point(devices, device, &r, a.holdout)?;
        a.events.reporter().report(&Event::PointAdded {
            device: device.id().to_string(),
            profile,
            what: format!("{} ({}+{})", r.config_name, r.prompt_tokens, r.gen_tokens),
            held_out: a.holdout,
            dry_run: false,
        });
    }
    Ok(if a.fail_on_budget && !r.feasible { Code::Failed } else { Code::Ok })
}

pub(super) fn print_measured(r: &Record) -> pocketbench::Result<()> {
    let m = r.measurement.as_ref().expect("measured record");
    outln!("{} on {} [{}]: measured", r.config_name, r.device, r.engine);
    outln!(
        "  workload      {} prompt + {} generated, {} threads, {} repetitions",
        r.prompt_tokens,
        r.gen_tokens,
        m.probe.threads,
        m.decode.n
    );
    outln!(
        "  decode        {:>9.1} tok/s   median; MAD {:.2}, {}, CV {:.1}%, {} outlier(s)   {}",
        m.decode.median,
        m.decode.mad,
        m.decode.interval_label(1),
        m.decode.cv * 100.0,
        m.decode.outliers,
        verdict(&r.budgets.decode)
    );
    if let Some(s) = &m.probe.sampling {
        let precision = match (s.precision_target, s.precision_reached) {
            (Some(t), Some(got)) => {
                format!(
                    "median within ±{:.1}% (asked ±{:.1}%{}, stopped by {}); ",
                    got * 100.0,
                    t * 100.0,
                    pocketbench::record::widened(s.autocorrelation),
                    s.stopped_by
                )
            }
            _ => String::new(),
        };
        outln!(
            "  samples       {precision}{} clean, {} contended, {} drifted, {} retaken{}{}",
            s.clean,
            s.contended,
            s.drifted,
            s.retaken,
            if m.contended { "   CONTENDED: a busy machine's figures" } else { "" },
            if m.drifted { "   DRIFTED: the machine's bandwidth moved under them" } else { "" }
        );
    }
    if let (Some(e), Some([lo, hi])) = (&m.decode_efficiency, m.moment_bandwidth_gb_s) {
        outln!(
            "  efficiency    {:>9.1}%        of the weights' memory bandwidth read right before and after each \
             repetition (median; CV {:.1}%; passes read {lo:.1}-{hi:.1} GB/s)",
            e.median * 100.0,
            e.cv * 100.0
        );
    }
    outln!("  prefill       {:>9.1} tok/s   time to first token {:.0} ms", r.prefill_tok_s, r.ttft_ms);
    if let Some(l) = &m.itl {
        outln!(
            "  latency       p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms between tokens ({} steps)",
            l.p50_ms,
            l.p90_ms,
            l.p99_ms,
            l.max_ms,
            l.steps
        );
    }
    if let Some(o) = &m.output {
        outln!(
            "  output        tokens {} {}",
            o.tokens_hash,
            if o.agree {
                "(every repetition the same)".to_string()
            } else {
                format!("INVALID: {} different token sequences", o.distinct)
            }
        );
    }
    let external = m.probe.engine.parse::<pocketbench::probe::EngineKind>().is_ok_and(|e| e.is_external());
    outln!(
        "  peak memory   {:>9.1} MB      {}   {}",
        r.peak_mem_increase_mb,
        if external { "the whole engine process (VmHWM)" } else { "increase over the pre-load baseline (VmHWM)" },
        verdict(&r.budgets.memory)
    );
    outln!("  model file    {:>9.1} MB", r.package_mb);
    outln!(
        "  bandwidth     {:>9.2} GB/s    achieved in decode = {:.1}% of {:.1} GB/s ({})",
        m.achieved_bandwidth_gb_s,
        m.bandwidth_efficiency * 100.0,
        m.device_bandwidth_gb_s,
        m.device_bandwidth_source
    );
    if let (Some(bw), Some(eff), Some(pb)) =
        (m.probe_bandwidth_gb_s, m.probe_bandwidth_efficiency, m.probe.read_bandwidth)
    {
        outln!(
            "  roofline      {:>9.1}%        of {:.1} GB/s read by the probe right after decoding ({} threads, {} MiB, best of {})",
            eff * 100.0,
            bw,
            pb.threads,
            pb.buffer_bytes >> 20,
            pb.passes
        );
    }
    outln!(
        "  energy        {:>9.2} J/run   {}{}   {}",
        r.energy_j_per_run,
        r.methods[&pocketbench::record::MethodKey::EnergyJPerRun],
        range(r.energy_j_per_run_low, r.energy_j_per_run_high, 2, " J").map_or(String::new(), |r| format!(" ({r})")),
        verdict(&r.budgets.energy)
    );
    outln!(
        "  predicted     {:>9.1} tok/s decode, {:.1} tok/s prefill (time to first token {:.0} ms), {:.1} MB peak ({})",
        m.predicted.decode_tok_s,
        m.predicted.prefill_tok_s,
        m.predicted.ttft_ms,
        m.predicted.peak_mem_increase_mb,
        r.calibration
    );
    Ok(())
}
