//! Energy around the repetitions: the idle draw measured just before them,
//! each run's gross energy, and the net energy a run costs.
//!
//! A phone's battery feeds the screen, the radios and the OS whether or not
//! a model runs, so the gross joules of a run overstate what the model
//! costs. The probe measures the idle draw for [`IDLE_WINDOW`] right before
//! the repetitions (the model loaded and warmed, nothing running), and
//! reports per run, as medians over the repetitions:
//! - `avg_power_w`: gross joules / seconds of the run;
//! - `energy_gross_j_per_run`: the gross joules;
//! - `energy_j_per_run`: gross minus the idle power times the run's seconds
//!   (the gross figure where no idle draw was measured).
//!
//! A meter that fails mid-way (a charger connected, the current reversed)
//! loses energy for the whole result, with the reason: a figure made of
//! some repetitions on battery and some on a charger is not one figure.

use std::time::Duration;

use pocketbench_types::stats::median;
use serde::{Deserialize, Serialize};

use crate::meter::{EnergyMeter, EnergyReading};
use crate::Rep;

/// How long the idle draw is measured before the repetitions.
pub const IDLE_WINDOW: Duration = Duration::from_secs(2);

/// The energy figures of a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyFigures {
    /// The idle draw measured just before the repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_energy: Option<EnergyReading>,
    /// Median gross average power of a run, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_power_w: Option<f64>,
    /// Median gross energy of a run, J.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_gross_j_per_run: Option<f64>,
    /// Median net energy of a run (gross minus the idle draw over the run's
    /// time), J; the gross figure when no idle draw was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j_per_run: Option<f64>,
}

impl EnergyFigures {
    /// The figures of `reps` (each with its gross reading) and `idle`; a
    /// retaken repetition (contended or drifted) is no run of the figures.
    pub fn of(reps: &[Rep], idle: Option<&EnergyReading>) -> EnergyFigures {
        let kept: Vec<&Rep> = reps.iter().filter(|r| !r.retaken).collect();
        let runs: Vec<&EnergyReading> = kept.iter().filter_map(|r| r.energy.as_ref()).collect();
        if runs.is_empty() || runs.len() != kept.len() {
            return EnergyFigures::default();
        }
        let idle_w = idle.filter(|i| i.seconds > 0.0).map(|i| i.joules / i.seconds);
        let of = |f: &dyn Fn(&EnergyReading) -> f64| Some(median(&runs.iter().map(|e| f(e)).collect::<Vec<_>>()));
        EnergyFigures {
            idle_energy: idle.cloned(),
            avg_power_w: of(&|e| if e.seconds > 0.0 { e.joules / e.seconds } else { 0.0 }),
            energy_gross_j_per_run: of(&|e| e.joules),
            energy_j_per_run: of(&|e| e.joules - idle_w.unwrap_or(0.0) * e.seconds),
        }
    }

    /// How the net figure was made, for the result's methods.
    pub fn describe(&self) -> Option<String> {
        self.energy_j_per_run?;
        Some(match &self.idle_energy {
            Some(i) if i.seconds > 0.0 => format!(
                "net: gross minus the idle draw ({:.3} W, measured over {:.1} s with the model loaded and \
                 nothing running, just before the repetitions) times each run's seconds; median of the repetitions",
                i.joules / i.seconds,
                i.seconds
            ),
            _ => "gross: no idle draw was measured; median of the repetitions".into(),
        })
    }
}

/// A meter through one probe run: idle window, then one reading per
/// repetition; the first failure ends metering for the whole result.
pub struct Session {
    meter: Option<Box<dyn EnergyMeter>>,
    why_not: Option<String>,
    idle: Option<EnergyReading>,
}

impl Session {
    /// Meter with `meter`, or say `why_not` there is none.
    pub fn new(meter: Option<Box<dyn EnergyMeter>>, why_not: Option<String>) -> Session {
        Session { meter, why_not, idle: None }
    }

    /// The meter, where there is one.
    pub fn meter(&self) -> Option<pocketbench_types::meter::Meter> {
        self.meter.as_ref().map(|m| m.kind())
    }

    /// What the meter reads, or why there is none.
    pub fn method(&self) -> String {
        match (&self.meter, &self.why_not) {
            (Some(m), _) => m.name(),
            (None, Some(why)) => format!("not measured: {why}"),
            (None, None) => "not measured".into(),
        }
    }

    /// Measure the idle draw over `window` (nothing of the probe's running).
    pub fn idle(&mut self, window: Duration) {
        if self.meter.is_none() {
            return;
        }
        self.start();
        std::thread::sleep(window);
        self.idle = self.stop();
    }

    /// Begin one reading.
    pub fn start(&mut self) {
        if let Some(m) = self.meter.as_mut() {
            if let Err(e) = m.start() {
                self.lose(e.to_string());
            }
        }
    }

    /// End one reading.
    pub fn stop(&mut self) -> Option<EnergyReading> {
        match self.meter.as_mut()?.stop() {
            Ok(r) => Some(r),
            Err(e) => {
                self.lose(e.to_string());
                None
            }
        }
    }

    fn lose(&mut self, why: String) {
        self.meter = None;
        self.why_not = Some(why);
    }

    /// The figures, and why energy was not measured when it was not. A
    /// meter lost mid-way (it is then gone) clears every repetition's reading.
    pub fn finish(self, reps: &mut [Rep]) -> (EnergyFigures, Option<String>) {
        if self.meter.is_none() {
            for r in reps.iter_mut() {
                r.energy = None;
            }
            return (EnergyFigures::default(), Some(self.why_not.unwrap_or_else(|| "no meter".into())));
        }
        (EnergyFigures::of(reps, self.idle.as_ref()), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::MeterError;

    fn reading(joules: f64, seconds: f64) -> EnergyReading {
        EnergyReading { joules, seconds, samples: 10, method: "test".into() }
    }

    fn rep(energy: Option<EnergyReading>) -> Rep {
        Rep {
            load_s: None,
            prefill_s: 1.0,
            ttft_s: 1.0,
            decode_s: 1.0,
            prefill_tok_s: 1.0,
            decode_tok_s: 1.0,
            energy,
            thermal: None,
            ..Default::default()
        }
    }

    #[test]
    fn net_energy_is_gross_minus_the_idle_draw_over_the_run() {
        // Idle 1 W; runs of 10 J in 2 s, 12 J in 2 s, 9 J in 1.5 s.
        let reps = [rep(Some(reading(10.0, 2.0))), rep(Some(reading(12.0, 2.0))), rep(Some(reading(9.0, 1.5)))];
        let f = EnergyFigures::of(&reps, Some(&reading(2.0, 2.0)));
        assert_eq!(f.avg_power_w, Some(6.0), "median of 5, 6 and 6 W");
        assert_eq!(f.energy_gross_j_per_run, Some(10.0));
        assert_eq!(f.energy_j_per_run, Some(8.0), "median of 8, 10 and 7.5 J");
        assert!(f.describe().unwrap().starts_with("net: gross minus the idle draw (1.000 W"));
        let gross = EnergyFigures::of(&reps, None);
        assert_eq!(gross.energy_j_per_run, Some(10.0));
        assert!(gross.describe().unwrap().starts_with("gross"));
        assert_eq!(EnergyFigures::of(&[rep(None)], None), EnergyFigures::default());
        // A retaken repetition (contended, drifted) is no run of the figures.
        let busy = Rep { retaken: true, ..rep(Some(reading(100.0, 2.0))) };
        let f = EnergyFigures::of(&[busy.clone(), rep(Some(reading(10.0, 2.0))), busy], None);
        assert_eq!(f.energy_gross_j_per_run, Some(10.0));
    }

    /// A meter that reads 1 W idle and then fails on the `fail_at`-th stop.
    struct Scripted {
        stops: usize,
        fail_at: usize,
    }

    impl EnergyMeter for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn kind(&self) -> pocketbench_types::meter::Meter {
            pocketbench_types::meter::Meter::Other
        }
        fn start(&mut self) -> Result<(), MeterError> {
            Ok(())
        }
        fn stop(&mut self) -> Result<EnergyReading, MeterError> {
            self.stops += 1;
            if self.stops == self.fail_at {
                return Err(MeterError::Unavailable("the battery's status became `Charging`".into()));
            }
            Ok(reading(self.stops as f64, 1.0))
        }
    }

    #[test]
    fn a_meter_lost_mid_way_loses_energy_for_the_whole_result_with_the_reason() {
        let mut s = Session::new(Some(Box::new(Scripted { stops: 0, fail_at: 3 })), None);
        s.idle(Duration::ZERO);
        let mut reps = Vec::new();
        for _ in 0..3 {
            s.start();
            reps.push(rep(s.stop()));
        }
        assert!(reps[0].energy.is_some() && reps[1].energy.is_none());
        let (figures, why) = s.finish(&mut reps);
        assert_eq!(figures, EnergyFigures::default());
        assert!(why.unwrap().contains("Charging"));
        assert!(reps.iter().all(|r| r.energy.is_none()), "no repetition keeps a reading");

        let mut s = Session::new(Some(Box::new(Scripted { stops: 0, fail_at: 0 })), None);
        s.idle(Duration::ZERO);
        let mut reps = vec![{
            s.start();
            rep(s.stop())
        }];
        let (figures, why) = s.finish(&mut reps);
        assert_eq!((why, figures.energy_gross_j_per_run, figures.energy_j_per_run), (None, Some(2.0), Some(1.0)));
    }
}
