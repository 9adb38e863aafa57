//! Rendering for people: progress events on stderr, verdict lines.

use pocketbench::budget::{Status, Verdict};
use pocketbench::event::{Event, Reporter};

/// Prints events to stderr, one line each.
#[derive(Debug, Default)]
pub struct StderrReporter {
    /// Suppress everything but warnings.
    pub quiet: bool,
}

impl Reporter for StderrReporter {
    fn report(&mut self, event: &Event) {
        match event {
            Event::Warning(w) => eprintln!("warning: {w}"),
            _ if self.quiet => {}
            Event::Planned { sweep, configs, devices, skipped } => {
                eprintln!("sweep `{sweep}`: {configs} configurations x {devices} devices");
                if !skipped.is_empty() {
                    let s: Vec<String> = skipped.iter().map(|(r, n)| format!("{n} {r}")).collect();
                    eprintln!("  dropped while expanding: {}", s.join("; "));
                }
            }
            Event::DeviceDone { device, feasible, frontier } => {
                eprintln!("  {device}: predicted; {feasible} feasible, {frontier} on the frontier")
            }
            Event::Wrote(p) => eprintln!("  wrote {}", p.display()),
            Event::Measuring { device, config, index, total } => {
                eprintln!("  {device}: measuring {index}/{total} {config}...")
            }
            Event::Measured { device, config, decode_tok_s, peak_mem_mb } => {
                eprintln!("  {device}: {config}: {decode_tok_s:.1} tok/s decode, {peak_mem_mb:.0} MB peak (measured)")
            }
            Event::Resumed { device, config, path } => {
                eprintln!("  {device}: {config}: reusing the stored measurement {}", path.display())
            }
        }
    }
}

/// "pass (+23.5%)", "FAIL (-4.1%)" or "n/a".
pub fn verdict(v: &Verdict) -> String {
    match (v.status, v.margin) {
        (Status::Pass, Some(m)) => format!("pass ({:+.1}% margin)", m * 100.0),
        (Status::Fail, Some(m)) => format!("FAIL ({:+.1}% margin)", m * 100.0),
        _ => "n/a".to_string(),
    }
}
