//! `pocketbench history`: each metric's trend across commits, with the
//! commits where a shift began.

use std::path::PathBuf;

use clap::Args;
use pocketbench::error::Context;
use pocketbench::event::{Event, Reporter};
use pocketbench::history::{self, changepoint};

use super::render::EventArgs;
use super::Code;

/// Arguments of `history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// One input per commit: stores (pocketbench.db or OUT folders), results.json or results.jsonl. Ordered by
    /// their first run's start when every input records one, else as given.
    #[arg(required = true, num_args = 1.., value_name = "DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print every series, not only those with a shift.
    #[arg(long)]
    pub all: bool,
    /// The fewest points on either side of a shift.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub min_segment: usize,
    /// Permutations of the significance test.
    #[arg(long, default_value_t = 199, value_name = "N")]
    pub permutations: usize,
    /// Keep a shift whose permutation p-value is below this.
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub p_threshold: f64,
    /// Write the whole history (every point and shift) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub events: EventArgs,
}

/// Run `history`.
pub fn run(a: &HistoryArgs) -> pocketbench::Result<Code> {
    if a.min_segment < 2 || a.permutations < 19 || !(a.p_threshold > 0.0 && a.p_threshold < 1.0) {
        return Err(pocketbench::Error::usage(
            "--min-segment must be at least 2, --permutations at least 19, --p-threshold between 0 and 1",
        ));
    }
    let mut inputs = Vec::with_capacity(a.inputs.len());
    for p in &a.inputs {
        inputs.push(pocketbench::report::source::load(p).with_context(|| format!("reading {}", p.display()))?);
    }
    let order = history::order(&mut inputs);
    let s = changepoint::Settings {
        min_segment: a.min_segment,
        permutations: a.permutations,
        p_threshold: a.p_threshold,
        ..changepoint::Settings::default()
    };
    let h = history::history(&inputs, order, &s);
    if let Some(p) = &a.json {
        super::gate_cmd::write(p, &(super::pretty(&h)? + "\n"))?;
        a.events.reporter().report(&Event::Wrote { path: p.clone() });
    }
    let shifted = h.series.iter().filter(|x| !x.shifts.is_empty()).count();
    for x in h.series.iter().filter(|x| a.all || !x.shifts.is_empty()) {
        let unit = x.metric.unit();
        let (lo, hi) =
            x.points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| (l.min(p.value), h.max(p.value)));
        let mut line = format!(
            "{} of {}: {} point(s), {lo:.1}..{hi:.1} {unit}",
            x.metric.name(),
            x.key.label(&x.config_name),
            x.points.len()
        );
        if x.shifts.is_empty() {
            line.push_str("; no shift");
        }
        for sh in &x.shifts {
            line.push_str(&format!(
                "; shift at {} (input {} of {}): {:.1} -> {:.1} {unit} ({:+.1}%, {}), p = {:.3}",
                sh.commit,
                sh.input + 1,
                h.inputs.len(),
                sh.before,
                sh.after,
                (sh.ratio - 1.0) * 100.0,
                if sh.worse { "worse" } else { "better" },
                sh.p
            ));
        }
        outln!("{line}");
    }
    outln!(
        "history: {} input(s) ordered by {}, {} series, {shifted} with a shift (e-divisive means, p < {}, {} permutations)",
        h.inputs.len(),
        h.order,
        h.series.len(),
        s.p_threshold,
        s.permutations
    );
    Ok(Code::Ok)
}
