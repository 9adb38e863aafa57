//! A background sampling thread shared by the energy meters: it reads either
//! a cumulative energy counter (which may wrap) or an instantaneous power, and
//! integrates joules until stopped.
//!
//! Joules and seconds come from the same two instants: the first reading,
//! taken in `start`, and the last, taken on `stop`. (An earlier version
//! timed the interval from `start` to the call of `stop` while the thread
//! could finish a sleep and take one more reading, up to 5% over a 1 s run.)

use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::clock::Clock;
use super::{EnergyReading, MeterError, SAMPLE_INTERVAL};

/// One reading of a source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// A cumulative counter in joules that wraps to 0 after `range` joules.
    Counter {
        /// Current value.
        joules: f64,
        /// Wrap range.
        range: f64,
    },
    /// Instantaneous power in watts.
    Power(f64),
}

type Source = Box<dyn FnMut() -> Result<Reading, MeterError> + Send>;

/// Joules between consecutive readings, and the window they cover.
#[derive(Debug, Clone, Copy)]
struct Integral {
    first_t: f64,
    prev: Reading,
    prev_t: f64,
    joules: f64,
    samples: usize,
}

impl Integral {
    fn new(first: Reading, t: f64) -> Self {
        Integral { first_t: t, prev: first, prev_t: t, joules: 0.0, samples: 1 }
    }

    fn add(&mut self, now: Reading, t: f64) {
        self.joules += match (self.prev, now) {
            // A smaller value means the counter wrapped once since the last sample.
            (Reading::Counter { joules: a, .. }, Reading::Counter { joules: b, range }) => {
                if b >= a {
                    b - a
                } else {
                    b + range - a
                }
            }
            // Trapezoid rule over the interval.
            (Reading::Power(p0), Reading::Power(p1)) => 0.5 * (p0 + p1) * (t - self.prev_t),
            _ => 0.0,
        };
        self.samples += 1;
        self.prev = now;
        self.prev_t = t;
    }

    fn seconds(&self) -> f64 {
        self.prev_t - self.first_t
    }
}

/// A running sampler.
pub struct Sampler {
    stop: Sender<()>,
    handle: Option<JoinHandle<Result<Integral, MeterError>>>,
    method: String,
}

impl Sampler {
    /// Start sampling `source` on a thread, timed by `clock`.
    pub fn start(mut source: Source, method: String, clock: Arc<dyn Clock>) -> Result<Sampler, MeterError> {
        let first = source()?;
        let mut acc = Integral::new(first, clock.now());
        let (stop, stopped) = channel();
        let handle = std::thread::spawn(move || loop {
            let done = clock.wait(SAMPLE_INTERVAL, &stopped);
            acc.add(source()?, clock.now());
            if done {
                return Ok(acc);
            }
        });
        Ok(Sampler { stop, handle: Some(handle), method })
    }

    /// Stop, take a last reading and integrate.
    pub fn stop(mut self) -> Result<EnergyReading, MeterError> {
        let _ = self.stop.send(());
        let acc = self.handle.take().ok_or(MeterError::NotStarted)?.join().map_err(|_| MeterError::Read {
            path: self.method.clone(),
            message: "sampling thread panicked".into(),
        })??;
        Ok(EnergyReading {
            joules: acc.joules,
            seconds: acc.seconds(),
            samples: acc.samples,
            method: self.method.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::clock::{ManualClock, SystemClock};

    #[test]
    fn joules_and_seconds_cover_the_same_window_on_the_real_clock() {
        // A constant 10 W: whatever the scheduler does, joules must be exactly
        // 10 x seconds. With the window measured apart from the readings, the
        // last reading after `stop` made them disagree by up to one interval.
        let s =
            Sampler::start(Box::new(|| Ok(Reading::Power(10.0))), "test".into(), Arc::new(SystemClock::new())).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(120));
        let r = s.stop().unwrap();
        assert!(r.seconds > 0.1, "{r:?}");
        assert!((r.joules - 10.0 * r.seconds).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn a_manual_clock_gives_exact_readings() {
        // A counter at 3 W that wraps every 1 J, read at exactly known instants.
        let clock = Arc::new(ManualClock::new(1.0, |_| {}));
        let c = clock.clone();
        let src = Box::new(move || Ok(Reading::Counter { joules: (3.0 * c.now()) % 1.0, range: 1.0 }));
        let s = Sampler::start(src, "test".into(), clock).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let r = s.stop().unwrap();
        assert_eq!(r.samples, 22, "a reading at 0 s, at every 50 ms up to 1 s, and one on stop");
        assert!((r.seconds - 1.0).abs() < 1e-9, "{r:?}");
        assert!((r.joules - 3.0).abs() < 1e-9, "{r:?}");
    }
}
