//! A background sampling thread shared by the energy meters: it reads either
//! a cumulative energy counter (which may wrap) or an instantaneous power, and
//! integrates joules until stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

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

/// A running sampler.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<(f64, usize), MeterError>>>,
    started: Instant,
    method: String,
}

impl Sampler {
    /// Start sampling `source` on a thread.
    pub fn start(mut source: Source, method: String) -> Result<Sampler, MeterError> {
        let first = source()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let started = Instant::now();
        let handle = std::thread::spawn(move || {
            let (mut joules, mut samples) = (0.0, 1usize);
            let (mut prev, mut prev_t) = (first, Instant::now());
            loop {
                let done = flag.load(Ordering::Relaxed);
                if !done {
                    std::thread::sleep(SAMPLE_INTERVAL);
                }
                let now = source()?;
                let t = Instant::now();
                joules += match (prev, now) {
                    (Reading::Counter { joules: a, .. }, Reading::Counter { joules: b, range }) => {
                        // A smaller value means the counter wrapped once since the last sample.
                        if b >= a {
                            b - a
                        } else {
                            b + range - a
                        }
                    }
                    // Trapezoid rule over the interval.
                    (Reading::Power(p0), Reading::Power(p1)) => 0.5 * (p0 + p1) * (t - prev_t).as_secs_f64(),
                    _ => 0.0,
                };
                samples += 1;
                prev = now;
                prev_t = t;
                if done {
                    return Ok((joules, samples));
                }
            }
        });
        Ok(Sampler { stop, handle: Some(handle), started, method })
    }

    /// Stop and integrate.
    pub fn stop(mut self) -> Result<EnergyReading, MeterError> {
        self.stop.store(true, Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64();
        let (joules, samples) = self.handle.take().ok_or(MeterError::NotStarted)?.join().map_err(|_| {
            MeterError::Read { path: self.method.clone(), message: "sampling thread panicked".into() }
        })??;
        Ok(EnergyReading { joules, seconds, samples, method: self.method.clone() })
    }
}
