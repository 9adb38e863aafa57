//! `pocketbench sweep` and `pocketbench report`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use pocketbench::capability::Scores;
use pocketbench::device::Devices;
use pocketbench::event::{Event, Reporter};
use pocketbench::pareto::Objective;
use pocketbench::report::{self, SweepReport};
use pocketbench::sweep::{self, MeasureSettings, Plan, PlanOptions, Selection};
use pocketbench::units::ParamCount;

use super::render::StderrReporter;
use super::run_cmd::{runner_for, MeasureArgs};
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
    /// After predicting, measure the top K candidates per measurable device (frontier first), or `all`.
    #[arg(long, value_name = "K|all")]
    pub measure: Option<MeasureCount>,
    /// Measurement settings (with --measure).
    #[command(flatten)]
    pub measure_args: MeasureArgs,
    /// Extra attempts when a device becomes unavailable mid-measurement.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub retries: u32,
    /// Output directory (default: reports/<sweep name>).
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
    /// Only warnings on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results.json written by `sweep`.
    pub results: PathBuf,
    /// Output directory (default: the results file's directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Run `sweep`.
pub fn run(a: &SweepArgs, devices: &Devices) -> anyhow::Result<Code> {
    // Validate everything into a plan before any work: the sweep file, the
    // devices, the scores and, with --measure, every job on every measurable
    // device; nothing is predicted before all of it holds.
    let opts = PlanOptions {
        devices: a.devices.clone(),
        workload: a.workload.spec(),
        max_configs: a.max_configs,
        objectives: a.objectives.clone(),
    };
    let plan = Plan::from_file(&a.file, &opts)?;
    let devs = devices.select(&plan.devices)?;
    let scores = a.scores.as_deref().map(Scores::load).transpose().map_err(pocketbench::Error::from)?;
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(&plan.name));
    let measuring = match a.measure {
        Some(count) => {
            let settings = MeasureSettings {
                selection: match count {
                    MeasureCount::Top(k) => Selection::Top(k),
                    MeasureCount::All => Selection::All,
                },
                job: a.measure_args.settings(),
                retries: a.retries,
                store: out.join("measurements"),
            };
            let runners: Vec<_> = devs.iter().filter_map(|d| runner_for(d).ok()).collect();
            let measurable: Vec<_> =
                devs.iter().copied().filter(|d| runners.iter().any(|r| r.device() == d.id())).collect();
            sweep::validate_measure(&plan, &measurable, &settings).map_err(pocketbench::Error::from)?;
            Some((settings, runners))
        }
        None => None,
    };
    let mut reporter = StderrReporter { quiet: a.quiet };
    reporter.report(&Event::Planned {
        sweep: plan.name.clone(),
        configs: plan.shapes.len(),
        devices: devs.len(),
        skipped: plan.skipped.clone(),
    });
    let mut outcome = sweep::run(&plan, &devs, scores.as_ref(), &mut reporter);
    if let Some((settings, runners)) = measuring {
        if runners.is_empty() {
            reporter.report(&Event::Warning(
                "--measure: no device of this sweep can be measured here (only local devices have a runner today)"
                    .into(),
            ));
        }
        sweep::measure(&plan, &mut outcome, &devs, &runners, &settings, &mut reporter);
    }
    let report = SweepReport::new(&plan, outcome);
    for p in report::write_all(&out, &report, &report::standard()).context("writing the sweep report")? {
        reporter.report(&Event::Wrote(p));
    }
    print_summary(&report)?;
    let infeasible = report.outcome.devices.iter().any(|d| d.feasible == 0);
    Ok(if a.require_feasible && infeasible { Code::BudgetFailed } else { Code::Ok })
}

fn print_summary(report: &SweepReport) -> anyhow::Result<()> {
    for d in &report.outcome.devices {
        outln!("{}: {} of {} feasible, {} on the frontier", d.device, d.feasible, d.configs, d.frontier);
        for (label, id) in [("best", &d.best_feasible), ("largest", &d.largest_feasible)] {
            let rec = id
                .as_ref()
                .and_then(|id| report.outcome.results.iter().find(|r| r.device == d.device && &r.config_id == id));
            match rec {
                Some(r) => outln!(
                    "  {label:<8} {} {:>8}  {:>4.0} tok/s {:>4.0} MB {:>5.2} J  ({})",
                    r.config_name,
                    ParamCount(r.params_total as f64).to_string(),
                    r.decode_tok_s,
                    r.peak_mem_increase_mb,
                    r.energy_j_per_run,
                    r.provenance_label()
                ),
                None => outln!("  {label:<8} none meets every budget"),
            }
        }
    }
    Ok(())
}

/// Run `report`.
pub fn report(a: &ReportArgs) -> anyhow::Result<Code> {
    let data = report::load(&a.results)?;
    let out = a.out.clone().or_else(|| a.results.parent().map(PathBuf::from)).unwrap_or_default();
    let exporters: Vec<Box<dyn report::Exporter>> =
        vec![Box::new(report::FrontierCsv), Box::new(report::SummaryMarkdown)];
    for p in report::write_all(&out, &data, &exporters)? {
        eprintln!("wrote {}", p.display());
    }
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
