//! `pocketbench gate`: the CI regression gate.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use pocketbench::error::Context;
use pocketbench::gate::{self, power, EffectRule, Outcome, Settings, Status};
use pocketbench::report::gate as render;

use pocketbench::event::{Event, Reporter};

use super::render::EventArgs;
use super::Code;

/// The effect rule on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RuleArg {
    // Documented on the flag, so `gate --help` keeps the one-line layout of
    // every other command (documented values make clap switch to its long one).
    Estimate,
    Interval,
}

/// Arguments of `gate`.
#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 pass, or inconclusive (with a warning); 1 a regression or a broken budget; \
2 usage or input error; 3 harness or device error; 4 an invalid output (a side's runs generated different tokens).\n\n\
Settings come from the built-in defaults, then the `[gate]` table of --sweep FILE, then these flags.")]
pub struct GateArgs {
    /// The baseline: a store (pocketbench.db or its OUT folder), results.json, results.jsonl, or `run --json` output.
    #[arg(long, value_name = "B", required_unless_present_any = ["power", "measure"], conflicts_with = "measure")]
    pub baseline: Option<PathBuf>,
    /// The candidate, in any of the same forms.
    #[arg(long, value_name = "C", required_unless_present_any = ["power", "measure"], conflicts_with = "measure")]
    pub candidate: Option<PathBuf>,
    /// A sweep file whose `[gate]` table sets the defaults.
    #[arg(long, value_name = "FILE")]
    pub sweep: Option<PathBuf>,
    /// Family-wise significance level, Holm-corrected across the suite [default: 0.01].
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Minimum effect on decode and prefill speed, a fraction [default: 0.03].
    #[arg(long, value_name = "F")]
    pub min_effect_speed: Option<f64>,
    /// Minimum effect on energy per run [default: 0.05].
    #[arg(long, value_name = "F")]
    pub min_effect_energy: Option<f64>,
    /// Minimum effect on peak memory, relative [default: 0.01]...
    #[arg(long, value_name = "F")]
    pub min_effect_memory: Option<f64>,
    /// ...or absolute in MB, whichever is larger [default: 1].
    #[arg(long, value_name = "MB")]
    pub min_effect_memory_mb: Option<f64>,
    /// Fewer samples on a side than this is inconclusive [default: 6].
    #[arg(long, value_name = "N")]
    pub min_samples: Option<usize>,
    /// Level of the ratio's bootstrap interval [default: 0.95].
    #[arg(long, value_name = "L")]
    pub confidence: Option<f64>,
    /// What a regression's change must exceed: `estimate`, the ratio of medians beyond the minimum effect; or
    /// `interval`, the whole bootstrap interval beyond it (stricter: at 10 samples a side it catches a 5%
    /// slowdown half the time; see --power) [default: estimate].
    #[arg(long, value_enum, hide_possible_values = true)]
    pub effect_rule: Option<RuleArg>,
    /// Write JUnit XML: one testcase per configuration x device x metric.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Append Markdown for $GITHUB_STEP_SUMMARY (the file kept under 1 MiB, truncating with a note).
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// Write the full verdict as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Fail (exit 1) on inconclusive or invalid comparisons too.
    #[arg(long)]
    pub strict: bool,
    /// Compare sides measured under different protocols (workload,
    /// threads, engine, quantization, warm-up, repetition policy, machine;
    /// not the engine's build), naming every difference. Without it such a
    /// gate is refused (exit 2).
    #[arg(long)]
    pub allow_protocol_mismatch: bool,
    /// The metrics to gate (repeatable): decode_tok_s, prefill_tok_s, peak_mem_increase_mb,
    /// energy_j_per_run, p99_itl_ms, decode_efficiency (decode's share of the same-moment bandwidth),
    /// decode_at_bandwidth (decode with the machine's bandwidth moves taken out) [default: the first
    /// four].
    #[arg(long, value_name = "M", value_parser = metric_arg)]
    pub metric: Vec<gate::Metric>,
    /// Compare a side measured on a busy machine (contended repetitions no retake replaced) with a
    /// clean one; refused by default.
    #[arg(long)]
    pub allow_contended: bool,
    /// Print how often these settings fire, by seeded simulation, instead of gating:
    /// A/A false alarms and the power against --slowdown.
    #[arg(long)]
    pub power: bool,
    /// --power: samples a side.
    #[arg(long, default_value_t = 10, requires = "power")]
    pub samples: usize,
    /// --power: noise, the coefficient of variation of one sample.
    #[arg(long, default_value_t = 0.02, requires = "power")]
    pub noise: f64,
    /// --power: the slowdown to catch.
    #[arg(long, default_value_t = 0.05, requires = "power")]
    pub slowdown: f64,
    /// --power: trials.
    #[arg(long, default_value_t = 1000, requires = "power")]
    pub trials: usize,
    /// Measuring both sides here (`--measure`).
    #[command(flatten)]
    pub sides: super::gate_measure::MeasureSides,
    #[command(flatten)]
    pub events: EventArgs,
}

fn metric_arg(s: &str) -> Result<gate::Metric, String> {
    gate::Metric::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = gate::Metric::EVERY.iter().map(|m| m.name()).collect();
        format!("unknown metric `{s}`: one of {}", names.join(", "))
    })
}

fn settings(a: &GateArgs) -> pocketbench::Result<Settings> {
    let mut s = match &a.sweep {
        Some(path) => {
            let spec: pocketbench::sweep::SweepToml = pocketbench::config::load(path)?;
            let s = spec.gate.unwrap_or_default();
            s.validate().map_err(|e| {
                pocketbench::Error::from(pocketbench::sweep::SweepError::Invalid {
                    file: path.display().to_string(),
                    key: "gate".into(),
                    message: e.0,
                })
            })?;
            s
        }
        None => Settings::default(),
    };
    macro_rules! flag {
        ($($f:ident),*) => { $( if let Some(v) = a.$f { s.$f = v; } )* };
    }
    flag!(alpha, min_effect_speed, min_effect_energy, min_effect_memory, min_effect_memory_mb, min_samples, confidence);
    s.allow_contended |= a.allow_contended;
    if let Some(r) = a.effect_rule {
        s.effect_rule = match r {
            RuleArg::Estimate => EffectRule::Estimate,
            RuleArg::Interval => EffectRule::Interval,
        };
    }
    s.validate().map_err(|e| pocketbench::Error::usage(format!("--{}", e.0)))?;
    Ok(s)
}

/// Write an output file whole or not at all (a killed gate leaves no partial
/// JUnit for CI to read). An I/O error names the file and exits 3.
pub(super) fn write(path: &Path, text: &str) -> pocketbench::Result<()> {
    pocketbench::calibrate::write_atomic(path, text.as_bytes()).map_err(|e| pocketbench::Error::io(path, e))
}

/// Run `gate`.
pub fn run(a: &GateArgs, devices_dir: &Option<PathBuf>) -> pocketbench::Result<Code> {
    let s = settings(a)?;
    if a.power {
        return print_power(a, &s);
    }
    let mut reporter = a.events.reporter();
    let (baseline, candidate) = if a.sides.measure {
        let request = a.sides.request(a.sweep.as_deref())?;
        let devices = super::devices(devices_dir)?;
        pocketbench::pipeline::gate_measure::measure(&request, &devices, &s, &mut reporter)?
    } else {
        let (Some(b), Some(c)) = (&a.baseline, &a.candidate) else {
            return Err(pocketbench::Error::usage("--baseline and --candidate are both needed"));
        };
        (
            pocketbench::report::source::load(b).context("reading the baseline")?,
            pocketbench::report::source::load(c).context("reading the candidate")?,
        )
    };
    let differences = pocketbench::protocol::between(&baseline.records, &candidate.records);
    if !differences.is_empty() && !a.allow_protocol_mismatch {
        let listed: Vec<String> = differences.iter().map(ToString::to_string).collect();
        return Err(pocketbench::Error::usage(format!(
            "the baseline and the candidate were measured under different protocols ({}): their speeds do not compare like with like; measure both the same way, or pass --allow-protocol-mismatch to compare them anyway",
            listed.join("; ")
        )));
    }
    let metrics = if a.metric.is_empty() { gate::Metric::ALL.to_vec() } else { a.metric.clone() };
    let v = gate::evaluate_metrics(&baseline, &candidate, &s, &metrics);
    if let Some(p) = &a.json {
        write(p, &(super::pretty(&v)? + "\n"))?;
        reporter.report(&Event::Wrote { path: p.clone() });
    }
    if let Some(p) = &a.junit {
        write(p, &render::junit(&v))?;
        reporter.report(&Event::Wrote { path: p.clone() });
    }
    if let Some(p) = &a.summary {
        append_summary(p, &v)?;
        reporter.report(&Event::Wrote { path: p.clone() });
    }
    if v.outcome == Outcome::Inconclusive {
        reporter.report(&Event::warning(
            "the gate could not decide everything (inconclusive, invalid or unmatched results below): measure more repetitions, or fix the device errors",
        ));
    }
    drop(reporter);
    print(&v)?;
    // A side whose runs disagree on their tokens measured something wrong:
    // its speeds mean nothing, whatever the verdict says of them.
    for (side, l) in [("baseline", &baseline), ("candidate", &candidate)] {
        if let Some(why) = gate::trust::any_invalid_output(&l.records) {
            return Err(pocketbench::Error::InvalidOutput(format!("the {side}: {why}")));
        }
    }
    let failed = v.outcome == Outcome::Fail;
    Ok(if failed || (a.strict && v.outcome == Outcome::Inconclusive) { Code::Failed } else { Code::Ok })
}

/// Append to the step summary, keeping the whole file under GitHub's 1 MiB.
fn append_summary(p: &Path, v: &gate::Verdict) -> pocketbench::Result<()> {
    use std::io::Write;
    let used = std::fs::metadata(p).map_or(0, |m| m.len() as usize);
    let room = render::SUMMARY_LIMIT.saturating_sub(used + 1);
    let text = render::summary(v, room);
    let mut f =
        std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| pocketbench::Error::io(p, e))?;
    f.write_all(text.as_bytes()).map_err(|e| pocketbench::Error::io(p, e))
}

fn print(v: &gate::Verdict) -> pocketbench::Result<()> {
    for d in &v.protocol_differences {
        outln!("{:>12}  measured differently (--allow-protocol-mismatch): {d}", "protocol");
    }
    let shown = |c: &&gate::Comparison| c.fails() || !matches!(c.status, Status::Pass | Status::NotMeasured);
    for c in v.comparisons.iter().filter(shown) {
        let tag = if c.fails() {
            "FAIL"
        } else {
            match c.status {
                Status::Improvement => "better",
                Status::Inconclusive => "inconclusive",
                Status::Invalid => "invalid",
                _ => "ok",
            }
        };
        outln!("{tag:>12}  {}: {}", c.key.label(&c.config_name), c.why());
    }
    for (what, list) in [("only in the baseline", &v.only_in_baseline), ("only in the candidate", &v.only_in_candidate)]
    {
        for u in list {
            outln!("{:>12}  {}: {what}, not compared", "unmatched", u.key.label(&u.config_name));
        }
    }
    let counts: Vec<String> = v.counts.by_status.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let verdict = match v.outcome {
        Outcome::Pass => "pass",
        Outcome::Inconclusive => "pass with warnings (inconclusive)",
        Outcome::Fail => "FAIL",
    };
    outln!(
        "gate: {verdict}: {} comparison(s) of {} matched result(s): {}; {} budget(s) broken",
        v.counts.comparisons,
        v.counts.comparisons / gate::Metric::ALL.len().max(1),
        if counts.is_empty() { "none".into() } else { counts.join(", ") },
        v.counts.budget_failures
    );
    Ok(())
}

fn print_power(a: &GateArgs, s: &Settings) -> pocketbench::Result<Code> {
    if a.samples < s.min_samples {
        return Err(pocketbench::Error::usage(format!(
            "--samples {} is below min-samples {}: every comparison would be inconclusive",
            a.samples, s.min_samples
        )));
    }
    let noise_ok = a.noise.is_finite() && a.noise > 0.0 && a.noise < 1.0;
    if !noise_ok || !(0.0..1.0).contains(&a.slowdown) || a.trials == 0 {
        return Err(pocketbench::Error::usage("--noise must be in (0, 1), --slowdown in [0, 1), --trials at least 1"));
    }
    let sc = |slowdown| power::Scenario { samples: a.samples, noise: a.noise, slowdown, trials: a.trials, seed: 42 };
    let aa = power::regression_rate(s, &sc(0.0));
    let hit = power::regression_rate(s, &sc(a.slowdown));
    outln!(
        "{} samples a side, {:.1}% noise, alpha {}, minimum effect {:.1}%, effect rule {:?}, {} seeded trials each:",
        a.samples,
        a.noise * 100.0,
        s.alpha,
        s.min_effect_speed * 100.0,
        s.effect_rule,
        a.trials
    );
    outln!("  A/A (identical builds) declared a regression: {:.1}% of trials", aa * 100.0);
    outln!("  a {:.1}% slowdown caught:                     {:.1}% of trials", a.slowdown * 100.0, hit * 100.0);
    Ok(Code::Ok)
}
