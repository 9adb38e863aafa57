//! `pocketbench sweep`, `pocketbench report` and `pocketbench merge`.

use std::path::PathBuf;

use clap::Args;
use pocketbench::device::Devices;
use pocketbench::pareto::Objective;
use pocketbench::report::SweepReport;
use pocketbench::sweep::{MeasureSettings, PlanOptions, Selection, Shard};
use pocketbench::units::ParamCount;

use pocketbench::pipeline::exports::{self, Baseline};

use super::render::EventArgs;
use super::run_cmd::MeasureArgs;
use super::{Code, WorkloadArgs};

/// Arguments of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The sweep file (see sweeps/*.toml).
    pub file: PathBuf,
    /// Devices instead of the file's, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub devices: Option<Vec<String>>,
    /// Only predict; no device is touched.
    #[arg(long, conflicts_with = "measure")]
    pub predict_only: bool,
    /// After predicting, measure the top K candidates per measurable device
    /// (frontier first), or `all`. This host joins the sweep's devices when
    /// none of them can be measured here.
    #[arg(long, value_name = "K|all", default_value = "3")]
    pub measure: MeasureCount,
    /// Measurement settings.
    #[command(flatten)]
    pub measure_args: MeasureArgs,
    /// Extra attempts when a device becomes unavailable mid-measurement.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub retries: u32,
    /// Measure again what an earlier run of this sweep recorded as failed.
    #[arg(long)]
    pub retry_failed: bool,
    /// Start over: set an existing store aside (as pocketbench.db.prev) instead of resuming it.
    #[arg(long)]
    pub fresh: bool,
    /// Run share I of N of the plan (by configuration id); merge the shard stores with `pocketbench merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Output directory (default: reports/<sweep name>): the store and every export.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Workload overrides.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Raise the cap on the expanded size.
    #[arg(long, value_name = "N")]
    pub max_configs: Option<usize>,
    /// Frontier objectives, comma-separated (capability, decode, memory, energy).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub objectives: Option<Vec<Objective>>,
    /// Measured scores per configuration id (CSV: config_id,score[,source]) replacing the proxy.
    #[arg(long, value_name = "CSV")]
    pub scores: Option<PathBuf>,
    /// Exit with code 1 when some device has no feasible configuration.
    #[arg(long)]
    pub require_feasible: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A sweep's output folder (or its pocketbench.db).
    pub out: PathBuf,
    /// Gate this sweep's measurements against a baseline (a store, OUT folder, results.json or .jsonl) and add
    /// the comparison view to report.html (and the verdict to results.json), with the gate's default settings.
    #[arg(long, value_name = "B")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: compare a side measured on a busy machine with a clean one (as `gate
    /// --allow-contended`); refused by default.
    #[arg(long, requires = "baseline")]
    pub allow_contended: bool,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The merged output folder (must not hold a store yet).
    pub out: PathBuf,
    /// Shard output folders (or their pocketbench.db files).
    #[arg(required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `sweep`.
pub fn run(a: &SweepArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let request = pocketbench::pipeline::Request {
        file: a.file.clone(),
        options: PlanOptions {
            devices: a.devices.clone(),
            workload: a.workload.spec(),
            max_configs: a.max_configs,
            objectives: a.objectives.clone(),
        },
        shard: a.shard,
        measure: (!a.predict_only).then(|| MeasureSettings {
            selection: match a.measure {
                MeasureCount::Top(k) => Selection::Top(k),
                MeasureCount::All => Selection::All,
            },
            job: a.measure_args.settings(super::reps_args::Reps::Auto),
            retries: a.retries,
            retry_failed: a.retry_failed,
        }),
        scores: a.scores.clone(),
        out: a.out.clone(),
        fresh: a.fresh,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let mut reporter = a.events.reporter();
    let done = pocketbench::pipeline::run_request(&request, devices, &mut reporter)?;
    drop(reporter);
    print_summary(&done.report)?;
    let infeasible = done.report.outcome.devices.iter().any(|d| d.feasible == 0);
    Ok(if a.require_feasible && infeasible { Code::Failed } else { Code::Ok })
}

/// A record's provenance, with "suspect" on a prediction its device's
/// measurements contradict.
fn provenance(r: &pocketbench::record::Record, suspect: bool) -> String {
    match (r.provenance, suspect) {
        (pocketbench::record::Provenance::Predicted, true) => "predicted; suspect, see the measurements".into(),
        _ => r.provenance_label().into(),
    }
}

fn print_summary(report: &SweepReport) -> pocketbench::Result<()> {
    for d in &report.outcome.devices {
        let measured = report
            .outcome
            .results
            .iter()
            .filter(|r| r.device == d.device && r.provenance == pocketbench::record::Provenance::Measured)
            .count();
        let m = if measured > 0 { format!(", {measured} measured") } else { String::new() };
        outln!("{}: {} of {} feasible, {} on the frontier{m}", d.device, d.feasible, d.configs, d.frontier);
        // Measurements first: a verdict they contradict never heads the card.
        let agreement = d.agreement.as_ref();
        if let Some(c) = agreement.and_then(|a| a.contradiction()) {
            outln!("  MEASURED: {c}");
        }
        if let Some(a) = agreement {
            outln!("  measured against predicted: {}", a.describe());
        }
        let suspect = agreement.is_some_and(pocketbench::agreement::Agreement::doubts_predictions);
        for (label, id) in [("best", &d.best_feasible), ("largest", &d.largest_feasible)] {
            let rec = id
                .as_ref()
                .and_then(|id| report.outcome.results.iter().find(|r| r.device == d.device && &r.config_id == id));
            match rec {
                Some(r) => outln!(
                    "  {label:<8} {} {:>8}  capability {:>4.1}{}  {:>4.0} tok/s {:>4.0} MB {:>5.2} J  ({})",
                    r.config_name,
                    ParamCount(r.params_total as f64).to_string(),
                    r.capability,
                    if r.capability_source.starts_with("measured") { "" } else { "*" },
                    r.decode_tok_s,
                    r.peak_mem_increase_mb,
                    r.energy_j_per_run,
                    provenance(r, suspect)
                ),
                None => outln!("  {label:<8} none meets every budget"),
            }
        }
    }
    if let Some(r) = report.outcome.results.iter().find(|r| !r.capability_source.starts_with("measured")) {
        outln!("best: the most capable configuration meeting every budget; largest: the one with the most parameters");
        outln!("capability* is a {} (not a benchmark score)", r.capability_source);
    }
    Ok(())
}

/// Run `report`: re-render every export from the store, predicting and measuring nothing.
pub fn report(a: &ReportArgs) -> pocketbench::Result<Code> {
    let baseline = a.baseline.as_ref().map(|path| Baseline {
        path: path.clone(),
        settings: pocketbench::gate::Settings {
            allow_contended: a.allow_contended,
            ..pocketbench::gate::Settings::default()
        },
    });
    exports::report(&a.out, baseline.as_ref(), &mut a.events.reporter())?;
    Ok(Code::Ok)
}

/// Run `merge`: shard stores into one, then every export.
pub fn merge(a: &MergeArgs) -> pocketbench::Result<Code> {
    exports::merge(&a.out, &a.inputs, &mut a.events.reporter())?;
    Ok(Code::Ok)
}

/// `--measure K` or `--measure all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasureCount {
    /// The first K candidates per device.
    Top(usize),
    /// Every configuration.
    All,
}

impl std::str::FromStr for MeasureCount {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(MeasureCount::All),
            n => n.parse().map(MeasureCount::Top).map_err(|_| format!("expected a count or `all`, got `{n}`")),
        }
    }
}
