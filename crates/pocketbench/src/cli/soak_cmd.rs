//! `pocketbench soak`: sustained load on one configuration, and its
//! throttle curve.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::probe::soak::{SoakSpec, DEFAULT_THROTTLE_DROP};
use pocketbench::runner::{self, JobSettings};

use super::render::EventArgs;
use super::{Code, ShapeArgs, WorkloadArgs};

/// Arguments of `soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// The configuration.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Device id (`pocketbench devices` lists them): this host or an Android phone over adb.
    #[arg(long, value_name = "D")]
    pub device: String,
    /// Seconds of sustained load: above 0, at most 3600 (rounded up to whole windows).
    #[arg(long, value_name = "N")]
    pub seconds: f64,
    /// Seconds per window of the throttle curve (default: a twentieth of --seconds, 1 to 30 s).
    #[arg(long, value_name = "S")]
    pub window: Option<f64>,
    /// Flag the result `throttled` when the last window's decode speed is more than this share
    /// below the first's.
    #[arg(long, value_name = "F", default_value_t = DEFAULT_THROTTLE_DROP)]
    pub throttle_drop: f64,
    /// Workload of each cycle (default: the device's reference workload).
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Threads (default: the device profile's, else all cores).
    #[arg(long, value_name = "T")]
    pub threads: Option<u32>,
    /// Pin the engine's threads one to a CPU.
    #[arg(long)]
    pub pin: bool,
    /// Engine: native, candle-transformers or llama.cpp (timed in the probe's own process);
    /// default: the device profile's `engine.probe`.
    #[arg(long, value_name = "E", value_parser = super::engine_arg)]
    pub engine: Option<pocketbench::probe::EngineKind>,
    /// Seconds beyond the soak itself before the probe is killed (the load and warm-up).
    #[arg(long, default_value_t = 600, value_name = "S")]
    pub timeout: u64,
    /// Run a configuration predicted not to fit in available memory.
    #[arg(long)]
    pub force: bool,
    /// Folder for soak.json (the record) and soak.html (its throttle curve).
    #[arg(long, value_name = "DIR", default_value = "soak")]
    pub out: PathBuf,
    /// Print the record as JSON (every window included).
    #[arg(long)]
    pub json: bool,
    /// Exit with code 1 when the result is throttled.
    #[arg(long)]
    pub fail_on_throttle: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `soak`.
pub fn run(a: &SoakArgs, devices: &Devices) -> pocketbench::Result<Code> {
    // Checked, with every other flag, by the library's plan below.
    let soak = SoakSpec {
        seconds: a.seconds,
        window_s: a.window.unwrap_or_else(|| pocketbench::pipeline::soak::default_window(a.seconds)),
        throttle_drop: a.throttle_drop,
    };
    let shape = a.shape.resolve()?;
    let device = devices.get(&a.device)?;
    let w = a.workload.on_device(device)?;
    let settings = JobSettings {
        reps: 1,
        threads: a.threads,
        timeout: Duration::from_secs(a.timeout.max(1)),
        force: a.force,
        engine: a.engine,
        engine_model: None,
        auto: None,
        pin: a.pin,
    };
    let job = pocketbench::pipeline::soak::plan(device, settings, shape, w, soak)?;
    let runner = runner::for_device(device)?;
    let mut reporter = a.events.reporter();
    let (r, _) = pocketbench::pipeline::soak::run(runner.as_ref(), device, &job, &a.out, &mut reporter)?;
    drop(reporter);
    let m = r.measurement.as_ref().expect("a measured record");
    let s = m.probe.soak.as_ref().expect("a soak's record");
    if a.json {
        outln!("{}", super::pretty(&r)?);
    } else {
        outln!("{} on {} [{}]: soaked", r.config_name, r.device, r.engine);
        outln!("  {:>8} {:>8} {:>12} {:>8} {:>8}  sensor", "from s", "steps", "decode tok/s", "temp C", "MHz");
        for w in &s.windows {
            outln!(
                "  {:>8.1} {:>8} {:>12} {:>8} {:>8}  {}{}",
                w.start_s,
                w.decode_tokens,
                w.decode_tok_s.map_or("-".into(), |t| format!("{t:.1}")),
                w.celsius.map_or("-".into(), |c| format!("{c:.1}")),
                w.window.mhz.map_or("-".into(), |m| format!("{m:.0}")),
                w.sensor.as_deref().unwrap_or("not readable"),
                if w.window.contended { "  CONTENDED" } else { "" }
            );
        }
        outln!("  soak          {}", s.describe());
        super::run_cmd::print_measured(&r)?;
    }
    if let Some(why) = m.invalid() {
        return Err(pocketbench::Error::InvalidOutput(format!("{} on {}: {why}", r.config_name, r.device)));
    }
    Ok(if a.fail_on_throttle && s.throttled { Code::Failed } else { Code::Ok })
}
