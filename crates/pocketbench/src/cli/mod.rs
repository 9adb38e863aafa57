//! Command-line definitions and dispatch. Each subcommand lives in its own
//! module; rendering for people is in `render`.

/// `println!` that returns broken-pipe and other write errors instead of
/// panicking (`pocketbench sweep … | head` must not crash).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*).map_err(pocketbench::Error::Output)?
    }};
}

/// A value as pretty JSON for stdout or a file; a failure here is the
/// output failing, not the user's input.
fn pretty<T: serde::Serialize + ?Sized>(value: &T) -> pocketbench::Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| pocketbench::Error::Output(std::io::Error::other(e)))
}

mod arch_cmd;
mod bench_cmd;
mod calibrate_cmd;
mod calibrate_print;
mod devices_add;
mod devices_cmd;
mod devices_show;
pub mod exit;
mod gate_cmd;
mod gate_measure;
mod history_cmd;
mod hostinfo_cmd;
mod import_cmd;
mod predict_cmd;
mod probe_cmd;
mod render;
mod reps_args;
mod run_cmd;
mod soak_cmd;
mod sweep_cmd;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use pocketbench::arch::{Quant, ShapeSpec};
use pocketbench::device::Devices;
use pocketbench::workload::WorkloadSpec;

pub use exit::Code;

/// Find the most capable small language model a device can run inside hard
/// budgets: decode speed, peak memory and energy per run.
#[derive(Debug, Parser)]
#[command(name = "pocketbench", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    /// Directory of device profiles (default: ./devices if present, else the built-in profiles).
    #[arg(long, global = true, value_name = "DIR", env = "POCKETBENCH_DEVICES")]
    pub devices_dir: Option<PathBuf>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 ok (gate: pass or inconclusive), 1 a budget failed where asked to fail on it (gate: a regression or a broken budget), 2 usage or configuration error, 3 harness or device error, 4 invalid output (a measurement generated different tokens).";

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parameter, byte and FLOP accounting of one configuration.
    Arch(arch_cmd::ArchArgs),
    /// Predict one configuration on one device.
    Predict(predict_cmd::PredictArgs),
    /// Expand a sweep file, predict every configuration on every device, chart the frontier.
    Sweep(sweep_cmd::SweepArgs),
    /// Re-render every export of a sweep from its store (nothing is predicted or measured).
    Report(sweep_cmd::ReportArgs),
    /// Merge the stores of a sharded sweep into one, and render its exports.
    Merge(sweep_cmd::MergeArgs),
    /// Fit a device's predictor parameters to its calibration points.
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// List device profiles and their calibration state.
    Devices(devices_cmd::DevicesArgs),
    /// List the architecture presets.
    Presets,
    /// Measure one configuration for real on a device: this host, or an Android phone over adb.
    Run(run_cmd::RunArgs),
    /// Run one configuration back to back for a set time and draw its throttle curve (tok/s, temperature and clock per window).
    Soak(Box<soak_cmd::SoakArgs>),
    /// The measuring process a runner starts on a device (reads a JSON spec).
    #[command(hide = true)]
    Probe(probe_cmd::ProbeArgs),
    /// Write a configuration as a GGUF file with the probe's seeded weights.
    ExportGguf(probe_cmd::ExportArgs),
    /// Compare a candidate's measured results with a baseline's: fail on a real regression or a broken budget.
    Gate(Box<gate_cmd::GateArgs>),
    /// Each metric's trend across commits (one input per commit) and the commits where a shift began.
    History(history_cmd::HistoryArgs),
    /// Measure this host's memory bandwidth and record it in the host profile.
    HostInfo(hostinfo_cmd::HostInfoArgs),
    /// Benchmarks of the measurement itself: `bench repeatability` (fresh-process spread).
    Bench(bench_cmd::BenchArgs),
    /// Store a device farm's run of the pocketbench app's XCTest (exported attachments) in a sweep's store.
    ImportXctest(import_cmd::ImportXctestArgs),
}

/// An engine flag's value: an engine's name, or `candle`, the built-in
/// engine's old name, which still works and says it is deprecated.
pub fn engine_arg(s: &str) -> Result<pocketbench::probe::EngineKind, pocketbench::probe::UnknownEngine> {
    if pocketbench::probe::EngineKind::is_deprecated_name(s) {
        eprintln!("warning: engine `{s}` is deprecated: the built-in engine is now called `native` (`{s}` keeps working for now)");
    }
    s.parse()
}

/// A configuration given as a preset, shape flags, or a preset with overrides.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Start from a named preset (see `pocketbench presets`).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Hidden size.
    #[arg(long)]
    pub hidden: Option<u32>,
    /// Layers.
    #[arg(long)]
    pub layers: Option<u32>,
    /// Query heads (default hidden / head-dim).
    #[arg(long)]
    pub heads: Option<u32>,
    /// KV heads (default: heads).
    #[arg(long)]
    pub kv_heads: Option<u32>,
    /// Head dim (default 64).
    #[arg(long)]
    pub head_dim: Option<u32>,
    /// FFN size.
    #[arg(long)]
    pub ffn: Option<u32>,
    /// Vocabulary size.
    #[arg(long)]
    pub vocab: Option<u32>,
    /// Separate output projection (default: tied to the embedding).
    #[arg(long)]
    pub untied: bool,
    /// No QK-norm (default: Qwen3-style QK-norm).
    #[arg(long)]
    pub no_qk_norm: bool,
    /// Quantization: q4_0, q4_1, q8_0, q4_k, q6_k, f16, f32, or "int4 group=64".
    #[arg(long, value_name = "Q")]
    pub quant: Option<Quant>,
    /// Maximum context the configuration is built for.
    #[arg(long)]
    pub context: Option<u32>,
}

impl ShapeArgs {
    pub(crate) fn spec(&self) -> ShapeSpec {
        ShapeSpec {
            preset: self.preset.clone(),
            hidden: self.hidden,
            layers: self.layers,
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            ffn: self.ffn,
            vocab: self.vocab,
            tied: self.untied.then_some(false),
            qk_norm: self.no_qk_norm.then_some(false),
            quant: self.quant,
            context: self.context,
        }
    }

    fn resolve(&self) -> pocketbench::Result<pocketbench::arch::Shape> {
        Ok(self.spec().resolve()?)
    }
}

/// `--prompt` / `--gen` overrides.
#[derive(Debug, Clone, Copy, Args)]
pub struct WorkloadArgs {
    /// Prompt tokens per run.
    #[arg(long, value_name = "N")]
    pub prompt: Option<u32>,
    /// Generated tokens per run.
    #[arg(long, value_name = "N")]
    pub gen: Option<u32>,
}

impl WorkloadArgs {
    pub(crate) fn spec(&self) -> WorkloadSpec {
        WorkloadSpec { prompt: self.prompt, gen: self.gen, context: None }
    }

    /// The device's reference workload with these overrides.
    fn on_device(&self, device: &pocketbench::device::Device) -> pocketbench::Result<pocketbench::workload::Workload> {
        Ok(device.profile().reference_workload.overridden_by(&self.spec()).resolve()?)
    }
}

fn devices(cli_dir: &Option<PathBuf>) -> pocketbench::Result<Devices> {
    Devices::discover(cli_dir.as_deref())
}

/// Run the parsed command.
pub fn run(cli: Cli) -> pocketbench::Result<Code> {
    match cli.command {
        Command::Arch(a) => arch_cmd::run(&a),
        Command::Predict(a) => predict_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::Sweep(a) => sweep_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::Report(a) => sweep_cmd::report(&a),
        Command::Merge(a) => sweep_cmd::merge(&a),
        Command::Calibrate(a) => calibrate_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::Devices(a) => match &a.action {
            Some(devices_cmd::Action::Show(s)) => devices_show::run(s, &devices(&cli.devices_dir)?),
            Some(devices_cmd::Action::Add(s)) => {
                devices_add::run(s, &devices(&cli.devices_dir)?, cli.devices_dir.as_deref())
            }
            None => devices_cmd::run(&a, &devices(&cli.devices_dir)?),
        },
        Command::Presets => arch_cmd::presets(),
        Command::Run(a) => run_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::Soak(a) => soak_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::Probe(a) => probe_cmd::run(&a),
        Command::ExportGguf(a) => probe_cmd::export(&a),
        Command::Gate(a) => gate_cmd::run(&a, &cli.devices_dir),
        Command::History(a) => history_cmd::run(&a),
        Command::HostInfo(a) => hostinfo_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::Bench(a) => bench_cmd::run(&a, &devices(&cli.devices_dir)?),
        Command::ImportXctest(a) => import_cmd::run(&a, &devices(&cli.devices_dir)?),
    }
}
