//! Rendering for people and for CI: the library's progress events as
//! progress bars (stderr is a terminal), plain lines (it is not), or one
//! JSON object per line (`--json-events`); and verdict lines.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use pocketbench::budget::{Certainty, Status, Verdict};
use pocketbench::event::{Event, Reporter};

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Progress bars on a terminal, plain lines otherwise.
    Auto,
    /// Warnings only.
    Quiet,
    /// One JSON object per line on stderr.
    Json,
}

/// `--quiet` and `--json-events`, which every command that does work takes.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct EventArgs {
    /// Only warnings on stderr.
    #[arg(long, short, conflicts_with = "json_events")]
    pub quiet: bool,
    /// Progress as one JSON object per line on stderr (the book's events page lists them).
    #[arg(long)]
    pub json_events: bool,
}

impl EventArgs {
    /// The style these flags ask for.
    pub fn style(self) -> Style {
        if self.json_events {
            Style::Json
        } else if self.quiet {
            Style::Quiet
        } else {
            Style::Auto
        }
    }

    /// A reporter in that style.
    pub fn reporter(self) -> StderrReporter {
        StderrReporter::new(self.style())
    }
}

/// Shows events on stderr.
pub struct StderrReporter {
    style: Style,
    bars: Option<Bars>,
}

struct Bars {
    multi: MultiProgress,
    per_device: HashMap<String, ProgressBar>,
}

impl StderrReporter {
    /// A reporter in `style` (Auto draws bars only when stderr is a terminal).
    pub fn new(style: Style) -> Self {
        let bars = (style == Style::Auto && std::io::stderr().is_terminal()).then(|| Bars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            per_device: HashMap::new(),
        });
        StderrReporter { style, bars }
    }

    fn line(&self, text: String) {
        match &self.bars {
            Some(b) => {
                let _ = b.multi.println(text);
            }
            None => {
                let _ = writeln!(std::io::stderr(), "{text}");
            }
        }
    }

    fn bar(&mut self, device: &str, total: usize) -> Option<&ProgressBar> {
        let b = self.bars.as_mut()?;
        let bar = b.per_device.entry(device.to_string()).or_insert_with(|| {
            let pb = b.multi.add(ProgressBar::new(total as u64));
            pb.set_style(
                ProgressStyle::with_template("{prefix:>20} [{bar:30}] {pos}/{len} eta {eta} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            pb.set_prefix(device.to_string());
            pb
        });
        bar.set_length(total as u64);
        Some(bar)
    }
}

impl Reporter for StderrReporter {
    fn report(&mut self, event: &Event) {
        if self.style == Style::Json {
            if let Ok(s) = serde_json::to_string(event) {
                let _ = writeln!(std::io::stderr(), "{s}");
            }
            return;
        }
        match event {
            Event::Warning { message } => self.line(format!("warning: {message}")),
            Event::Retrying { .. } | Event::TooHot { .. } | Event::RepFailed { .. } | Event::RoundFailed { .. } => {
                if let Some(text) = measuring_line(event) {
                    self.line(text);
                }
            }
            Event::Failed { device, config, reason, attempts } => {
                self.line(format!(
                    "warning: {device}: {config}: {reason} (after {attempts} attempt(s); recorded as failed)"
                ));
                if let Some(b) = self.bar(device, 0) {
                    b.inc(1);
                }
            }
            _ if self.style == Style::Quiet => {}
            Event::Planned { sweep, configs, devices, skipped, shard } => {
                let shard = shard.as_ref().map(|s| format!(" (shard {s})")).unwrap_or_default();
                self.line(format!("sweep `{sweep}`{shard}: {configs} configurations x {devices} devices"));
                if !skipped.is_empty() {
                    let s: Vec<String> = skipped.iter().map(|(r, n)| format!("{n} {r}")).collect();
                    self.line(format!("  dropped while expanding: {}", s.join("; ")));
                }
            }
            Event::Resuming { store, predicted, measured, failed } => self.line(format!(
                "  resuming {}: {predicted} predicted, {measured} measured and {failed} failed result(s) kept",
                store.display()
            )),
            Event::Predicted { device, configs, feasible, frontier, stored } => self.line(format!(
                "  {device}: {configs} {}; {feasible} feasible, {frontier} on the frontier",
                if *stored { "predictions kept from the store" } else { "predicted" }
            )),
            Event::MeasurePlanned { device, total } => {
                if self.bar(device, *total).is_none() {
                    self.line(format!("  {device}: measuring {total} candidate(s)"));
                }
            }
            Event::Measuring { device, config, index, total } => match self.bar(device, *total) {
                Some(b) => b.set_message(format!("measuring {config}")),
                None => self.line(format!("  {device}: measuring {index}/{total} {config}...")),
            },
            Event::Measured { device, config, decode_tok_s, peak_mem_mb } => {
                let text = format!(
                    "  {device}: {config}: {decode_tok_s:.1} tok/s decode, {peak_mem_mb:.0} MB peak (measured)"
                );
                self.line(text);
                if let Some(b) = self.bar(device, 0) {
                    b.inc(1);
                }
            }
            Event::Resumed { device, config } => {
                self.line(format!("  {device}: {config}: kept the stored measurement"));
                if let Some(b) = self.bar(device, 0) {
                    b.inc(1);
                }
            }
            Event::KeptFailure { device, config, reason } => {
                self.line(format!(
                    "  {device}: {config}: kept the stored failure ({reason}); --retry-failed retries it"
                ));
                if let Some(b) = self.bar(device, 0) {
                    b.inc(1);
                }
            }
            Event::Wrote { path } => self.line(format!("  wrote {}", path.display())),
            Event::RunPlanned { device, config, reps, threads, workload } => {
                self.line(format!("measuring {config} on {device} ({reps}, {threads} threads, {workload})..."))
            }
            Event::SoakPlanned { device, config, seconds, window_s, windows, threads, workload } => {
                self.line(format!(
                    "soaking {config} on {device} for {seconds} s: {workload} back to back, {windows} window(s) of \
                     {window_s} s, {threads} threads..."
                ))
            }
            Event::ProcessesPlanned { device, config, workload, processes, threads, reference } => {
                self.line(format!(
                    "{processes} fresh process(es) of {config} at {workload} on {device} ({threads} threads){}",
                    if *reference {
                        ", each followed by one of llama-bench on the same GGUF"
                    } else {
                        "; llama-bench not found (--llama-bench PATH compares with it)"
                    }
                ))
            }
            Event::PointAdded { device, profile, what, held_out, dry_run } => self.line(format!(
                "{} {what} to {profile} as a{} calibration point{}",
                if *dry_run { "would add" } else { "added" },
                if *held_out { " held-out" } else { "" },
                if *dry_run { String::new() } else { format!("; `pocketbench calibrate --device {device}` refits") }
            )),
            Event::Imported { test, config, device, decode_tok_s, prefill_tok_s, peak_mem_mb, reps, dry_run } => {
                self.line(format!(
                    "{} {test}: {config} on {device}: decode {decode_tok_s:.1} tok/s, prefill {prefill_tok_s:.1} tok/s, peak memory +{peak_mem_mb:.1} MB ({reps} repetitions)",
                    if *dry_run { "would store" } else { "storing" },
                ))
            }
            Event::Compared { baseline, outcome, comparisons } => self.line(format!(
                "compared with {}: gate {outcome}, {comparisons} comparison(s)",
                baseline.display()
            )),
            Event::Exported { path, config, mb, seed } => self.line(format!(
                "wrote {} ({config}, {mb:.1} MB, seed {seed:#x}: the same weights as the probe runs)",
                path.display()
            )),
            other => {
                if let Some(text) = measuring_line(other) {
                    self.line(text);
                }
            }
        }
    }
}

impl Drop for StderrReporter {
    fn drop(&mut self) {
        if let Some(b) = &self.bars {
            for bar in b.per_device.values() {
                bar.finish_and_clear();
            }
        }
    }
}

/// The line of a calibration's, a check's or `gate --measure`'s event
/// (warnings included); `None` for the events a sweep draws itself.
fn measuring_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Retrying { config, workload, reason, pause_s, .. } if *pause_s == 0.0 => {
            format!("warning: {config} at {workload} failed ({reason}); trying once more")
        }
        Event::Retrying { device, config, reason, attempt, pause_s, .. } => {
            format!("warning: {device}: {config}: {reason}; attempt {} in {pause_s:.0} s", attempt + 1)
        }
        Event::Cooling { celsius, target_c, .. } => format!("cooling: {celsius:.1} C, waiting for {target_c:.1} C"),
        Event::TooHot { arm, config, celsius, timeout_s, .. } => {
            format!("warning: {arm} {config}: still {celsius:.1} C after {timeout_s:.0} s: repetition not counted")
        }
        Event::AbabPlanned { device, configs, reps, runs, celsius, sensor, cool_to_c } => format!(
            "measuring {configs} configuration(s) on {device}, {reps} repetitions a side alternating (ABAB): {runs} probe runs; {}",
            match (celsius, sensor) {
                (Some(t), Some(s)) => format!("{t:.1} C now ({s}), cooling to {cool_to_c:.1} C before each"),
                _ => "no temperature reading on this device: not cooled".into(),
            }
        ),
        Event::RepMeasured { done, runs, arm, config, decode_tok_s, .. } => {
            format!("[{done:>4}/{runs}] {arm:<9} {config}: {decode_tok_s:.1} tok/s decode")
        }
        Event::AbabStopped { config, pairs, reason, .. } => format!("{config}: {pairs} pair(s): stopped: {reason}"),
        Event::RepFailed { arm, config, reason, .. } => format!("warning: {arm} {config}: failed twice: {reason}"),
        Event::CalibrationPlanned {
            what,
            machine,
            fingerprint,
            design,
            shapes,
            held_out,
            jobs_per_round,
            rounds,
            threads,
            ..
        } => {
            let held = if held_out < shapes { format!(" ({held_out} held out)") } else { String::new() };
            format!(
                "{what} on {machine} (fingerprint {fingerprint}): {design} design, {shapes} shapes{held}, {jobs_per_round} jobs x {rounds} rounds, {threads} threads"
            )
        }
        Event::Bandwidth { read_gb_s, threads, read_1_gb_s, passes, buffer_mib } => format!(
            "bandwidth: read {read_gb_s:.1} GB/s with {threads} threads ({read_1_gb_s:.1} with 1), best of {passes} passes over {buffer_mib} MiB"
        ),
        Event::RoundsPlanned { jobs, cached, .. } if *cached > 0 => {
            format!("{jobs} measurements, {cached} of them kept from the unfinished calibration before")
        }
        Event::RoundsPlanned { jobs, .. } => format!("{jobs} measurements"),
        Event::RoundMeasured { done, jobs, round, config, workload, decode_tok_s, cached, .. } => format!(
            "[{done:>3}/{jobs}] round {round}: {config} at {workload}: {decode_tok_s:.1} tok/s decode{}",
            if *cached { " (kept)" } else { "" }
        ),
        Event::ProcessMeasured { arm, index, total, decode_tok_s, efficiency, bandwidth_gb_s, .. } => format!(
            "[{index:>3}/{total}] {arm:<9} {decode_tok_s:.1} tok/s decode{}{}",
            efficiency.map_or(String::new(), |e| format!(", efficiency {:.1}%", e * 100.0)),
            bandwidth_gb_s.map_or(String::new(), |[lo, hi]| format!(", bandwidth {lo:.1}-{hi:.1} GB/s"))
        ),
        Event::RoundFailed { config, workload, round, reason, .. } => {
            format!("warning: {config} at {workload} failed twice in round {round} ({reason}); going on without it")
        }
        _ => return None,
    })
}

/// "pass (+23.5%)", "FAIL (-4.1%)" or "n/a".
pub fn verdict(v: &Verdict) -> String {
    let sure = match v.certainty {
        Some(Certainty::Sure) => ", sure over the range",
        Some(Certainty::Uncertain) => ", UNCERTAIN: the range crosses the limit",
        None => "",
    };
    match (v.status, v.margin) {
        (Status::Pass, Some(m)) => format!("pass ({:+.1}% margin{sure})", m * 100.0),
        (Status::Fail, Some(m)) => format!("FAIL ({:+.1}% margin{sure})", m * 100.0),
        _ => "n/a".to_string(),
    }
}

/// "range LO-HI UNIT" for a predicted value with a range wider than
/// rounding; `None` otherwise.
pub fn range(lo: Option<f64>, hi: Option<f64>, decimals: usize, unit: &str) -> Option<String> {
    pocketbench::report::spread(lo, hi, decimals).map(|s| format!("range {s}{unit}"))
}
