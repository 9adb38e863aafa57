//! `gate --measure`: the gate measures both sides itself, alternating them
//! on the same device one repetition at a time (A B A B ...), so the
//! device's drift over the minutes of the measurement hits both alike. The
//! sides differ in what the caller gives each: another engine, another probe
//! binary, another engine model, another thread count; the same for both is
//! an A/A gate.
//!
//! Every repetition is its own probe run (one VmHWM reading each, so peak
//! memory gets a sample per repetition too), and each finished record is
//! handed to the caller before the next starts, so the data is saved first.
//! Where the runner reads the device's temperature, each repetition waits
//! until the device has cooled to the threshold (polling, up to a timeout);
//! a repetition that cannot start cool is not counted and is reported.

use std::time::{Duration, Instant};

use crate::arch::Shape;
use crate::capability::{capability, ProxySettings};
use crate::device::Device;
use crate::record::{measured, Record};
use crate::runner::{Failure, Job, JobSettings, Runner};
use crate::sweep::FailedMeasurement;
use crate::workload::Workload;

/// One side.
pub struct Arm<'a> {
    /// `baseline` or `candidate`.
    pub name: &'static str,
    /// What measures it.
    pub runner: &'a dyn Runner,
    /// Its settings (repetitions are forced to one per probe run).
    pub settings: JobSettings,
}

/// Cooling between repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cooling {
    /// Start a repetition only at or below this, degrees C.
    pub target_c: f64,
    /// Give up waiting after this long (the repetition is then not counted).
    pub timeout: Duration,
    /// How often to read the temperature while waiting.
    pub poll: Duration,
}

impl Default for Cooling {
    fn default() -> Self {
        Cooling { target_c: 37.0, timeout: Duration::from_secs(180), poll: Duration::from_secs(5) }
    }
}

/// What the measurement reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Jobs in all (configurations x repetitions x 2), and whether the device
    /// has a thermal reading.
    Start {
        /// Probe runs to make.
        runs: usize,
        /// The first reading, if any.
        temperature: Option<crate::runner::thermal::Temperature>,
    },
    /// One repetition measured.
    Measured {
        /// Probe runs done.
        done: usize,
        /// In all.
        runs: usize,
        /// The side.
        arm: &'static str,
        /// The configuration.
        config: String,
        /// Decode tok/s of this repetition.
        decode_tok_s: f64,
        /// The temperature before it, C.
        celsius: Option<f64>,
    },
    /// Waiting for the device to cool.
    Cooling {
        /// Now, C.
        celsius: f64,
        /// Target, C.
        target_c: f64,
    },
    /// A repetition could not start cool and is not counted.
    TooHot {
        /// The side.
        arm: &'static str,
        /// The configuration.
        config: String,
        /// The last reading, C.
        celsius: f64,
    },
    /// A repetition failed (after one retry) and is recorded as a failure.
    Failed {
        /// The side.
        arm: &'static str,
        /// The configuration.
        config: String,
        /// Why.
        reason: String,
    },
}

/// Each side's measured records (one per repetition) and failures.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Baseline records.
    pub baseline: Vec<Record>,
    /// Candidate records.
    pub candidate: Vec<Record>,
    /// Baseline failures.
    pub baseline_failures: Vec<FailedMeasurement>,
    /// Candidate failures.
    pub candidate_failures: Vec<FailedMeasurement>,
    /// Repetitions not counted because the device stayed hot.
    pub too_hot: usize,
}

/// Wait until `runner`'s device is at or below the target; the last reading
/// (None without a reading) and whether it is cool.
fn cool(runner: &dyn Runner, c: &Cooling, progress: &mut dyn FnMut(Progress)) -> (Option<f64>, bool) {
    let start = Instant::now();
    loop {
        let Some(t) = runner.temperature() else { return (None, true) };
        if t.celsius <= c.target_c {
            return (Some(t.celsius), true);
        }
        if start.elapsed() >= c.timeout {
            return (Some(t.celsius), false);
        }
        progress(Progress::Cooling { celsius: t.celsius, target_c: c.target_c });
        std::thread::sleep(c.poll.min(c.timeout.saturating_sub(start.elapsed())).max(Duration::from_millis(1)));
    }
}

/// Measure `shapes` at `w` on `device`, `reps` repetitions a side,
/// alternating the two arms. `sink` gets each record (with its side) the
/// moment it lands. Every job is built, and so checked, before anything runs.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    device: &Device,
    shapes: &[Shape],
    w: Workload,
    reps: u32,
    arms: [&Arm; 2],
    cooling: &Cooling,
    sink: &mut dyn FnMut(&'static str, &Record) -> Result<(), crate::Error>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Measured, crate::Error> {
    let mut jobs: Vec<[Job; 2]> = Vec::with_capacity(shapes.len());
    for s in shapes {
        let job = |a: &Arm| -> Result<Job, crate::Error> {
            let settings = JobSettings { reps: 1, ..a.settings.clone() };
            Ok(settings.job(device, *s, w)?)
        };
        jobs.push([job(arms[0])?, job(arms[1])?]);
    }
    let runs = jobs.len() * reps as usize * 2;
    progress(Progress::Start { runs, temperature: arms[0].runner.temperature() });
    let proxy = ProxySettings::default();
    let mut out = Measured::default();
    let mut done = 0;
    for pair in &jobs {
        let config = pair[0].shape.to_string();
        for _ in 0..reps {
            for (side, (arm, job)) in arms.iter().zip(pair).enumerate() {
                done += 1;
                let (celsius, cool_enough) = cool(arm.runner, cooling, progress);
                if !cool_enough {
                    out.too_hot += 1;
                    progress(Progress::TooHot {
                        arm: arm.name,
                        config: config.clone(),
                        celsius: celsius.unwrap_or(f64::NAN),
                    });
                    continue;
                }
                let once = || -> Result<Record, Failure> {
                    let probe = arm.runner.measure(job)?;
                    let acct = job.shape.accounting();
                    let mut r =
                        measured(&job.shape, &acct, device, probe, &capability(&job.shape, &acct, &proxy, None))
                            .map_err(|e| Failure::BadOutput { reason: e.to_string() })?;
                    r.methods.insert(
                        "thermal".into(),
                        match celsius {
                            Some(c) => {
                                format!("{c:.1} C before the repetition, cooled to at most {:.1} C", cooling.target_c)
                            }
                            None => "no temperature reading on this device: not cooled".into(),
                        },
                    );
                    Ok(r)
                };
                match once().or_else(|_| once()) {
                    Ok(r) => {
                        sink(arm.name, &r)?;
                        progress(Progress::Measured {
                            done,
                            runs,
                            arm: arm.name,
                            config: config.clone(),
                            decode_tok_s: r.decode_tok_s,
                            celsius,
                        });
                        if side == 0 {
                            out.baseline.push(r);
                        } else {
                            out.candidate.push(r);
                        }
                    }
                    Err(f) => {
                        progress(Progress::Failed { arm: arm.name, config: config.clone(), reason: f.to_string() });
                        let failed = FailedMeasurement {
                            config_id: job.shape.id(),
                            config_name: config.clone(),
                            device: device.id().into(),
                            attempts: 2,
                            failure: f,
                        };
                        if side == 0 {
                            out.baseline_failures.push(failed);
                        } else {
                            out.candidate_failures.push(failed);
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}
