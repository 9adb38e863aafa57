//! `--reps N|auto` and the flags of automatic repetitions, shared by `run`,
//! `sweep --measure` and `gate --measure`.

use clap::Args;
use pocketbench::probe::timing::AutoReps;

/// `--reps`: a fixed count, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reps {
    /// Exactly this many.
    Count(u32),
    /// Until the median is as precise as `--precision` asks.
    Auto,
}

/// Parse `--reps`: `auto` or a count.
pub fn reps_arg(s: &str) -> Result<Reps, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Reps::Auto);
    }
    s.parse().map(Reps::Count).map_err(|_| format!("expected a number of repetitions or `auto`, got `{s}`"))
}

/// The limits of `--reps auto`.
#[derive(Debug, Clone, Args)]
pub struct AutoArgs {
    /// With --reps auto: repeat until the 95% interval of the median decode speed is within ± this
    /// fraction of it (0.02: ±2%), widened where successive repetitions correlate.
    #[arg(long, default_value_t = 0.02, value_name = "F")]
    pub precision: f64,
    /// With --reps auto: at least this many repetitions (6: what the gate needs to compare a side).
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub min_reps: u32,
    /// With --reps auto: at most this many repetitions.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub max_reps: u32,
    /// With --reps auto: stop starting repetitions after this many seconds of them (a configuration's
    /// result says when this, not the precision, stopped it).
    #[arg(long, default_value_t = 60, value_name = "S")]
    pub max_time: u64,
}

impl AutoArgs {
    /// The repetitions (the minimum under `auto`) and the automatic rule.
    pub fn resolve(&self, reps: Reps) -> (u32, Option<AutoReps>) {
        match reps {
            Reps::Count(n) => (n, None),
            Reps::Auto => (
                self.min_reps,
                Some(AutoReps {
                    precision: self.precision,
                    max_reps: self.max_reps,
                    max_seconds: self.max_time as f64,
                }),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_or_auto() {
        assert_eq!(reps_arg("7"), Ok(Reps::Count(7)));
        assert_eq!(reps_arg("AUTO"), Ok(Reps::Auto));
        assert!(reps_arg("many").unwrap_err().contains("`auto`"));
    }
}
