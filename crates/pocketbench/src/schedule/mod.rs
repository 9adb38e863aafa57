//! The one measurement scheduler: how every measurement runs, whoever asks
//! for it (`sweep --measure`, `calibrate --measure` and `--check`,
//! `gate --measure`, `run`). For one job on one runner it waits for the
//! device to cool where asked, runs the probe (whose runner enforces the
//! job's timeout and kills the probe's process group past it), retries
//! what the policy retries (after a pause that doubles, where it asks
//! for one), turns the probe's result into a record, and reports each
//! step as an [`Event`] on the one event stream.
//!
//! What is retried differs by caller and is said in its [`Policy`]: a
//! sweep retries only a device that went away (a crash or a timeout would
//! repeat, and a sweep has many other jobs to do), pausing 1 s, 2 s,
//! 4 s... at most 30 s so a re-plugged phone or a re-connected farm
//! session can come back; calibration and the gate measure one repetition
//! per probe run and retry any failure once, at once (one repetition
//! failing is more often the shared machine than the configuration).
//!
//! Every policy also carries the [`Contention`] rule: a repetition whose
//! window saw steal or other processes' CPU time above its thresholds is
//! marked `contended` and retaken, a bounded number of times. The probe
//! applies the rule (only it sees a window while a retake can still be
//! made in the same process and minutes); the policy decides it, and the
//! record carries the clean, contended and retaken counts.

pub mod abab;

use std::time::{Duration, Instant};

use crate::capability::Capability;
use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::probe::window::Contention;
use crate::provenance::Method;
use crate::record::{measured, Record};
use crate::runner::{Failure, Job, Runner};

/// Which failures are tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Only a device that became unavailable.
    Unavailable,
    /// Any failure.
    Any,
}

/// Waiting for the device to cool before each job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cooling {
    /// Start a job only at or below this, degrees C.
    pub target_c: f64,
    /// Give up waiting after this long (the job is then not run).
    pub timeout: Duration,
    /// How often to read the temperature while waiting.
    pub poll: Duration,
}

impl Default for Cooling {
    fn default() -> Self {
        Cooling { target_c: 37.0, timeout: Duration::from_secs(180), poll: Duration::from_secs(5) }
    }
}

/// How a caller's jobs are run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Attempts after the first.
    pub retries: u32,
    /// Which failures are retried.
    pub retry: Retry,
    /// Pause before each retry, doubling from 1 s up to 30 s; none when false.
    pub backoff: bool,
    /// Cool the device before each job (where its runner reads a temperature).
    pub cooling: Option<Cooling>,
    /// When a repetition counts as contended, and how many the probe
    /// retakes in the job ([`Contention::default`] for every caller: 5%
    /// steal or 10% others' CPU time, 10 retakes).
    pub contention: Option<Contention>,
}

impl Policy {
    /// A sweep's: a device that went away is retried `retries` times,
    /// with pauses; nothing is cooled here (the probe cools between its
    /// own repetitions where the profile asks).
    pub fn sweep(retries: u32) -> Policy {
        Policy {
            retries,
            retry: Retry::Unavailable,
            backoff: true,
            cooling: None,
            contention: Some(Contention::default()),
        }
    }

    /// One repetition per probe run (calibration, the gate): any failure
    /// is tried once more, at once.
    pub fn single_repetition(cooling: Option<Cooling>) -> Policy {
        Policy { retries: 1, retry: Retry::Any, backoff: false, cooling, contention: Some(Contention::default()) }
    }

    /// The pause before attempt `attempt + 1`.
    pub fn pause(&self, attempt: u32) -> Duration {
        if self.backoff {
            Duration::from_secs((1u64 << attempt.saturating_sub(1).min(5)).min(30))
        } else {
            Duration::ZERO
        }
    }

    fn retries(&self, f: &Failure) -> bool {
        match self.retry {
            Retry::Any => true,
            Retry::Unavailable => matches!(f, Failure::Unavailable { .. }),
        }
    }
}

/// What one scheduled job came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempted {
    /// Measured into a record.
    Measured {
        /// The record (measured provenance, raw samples inside).
        record: Box<Record>,
        /// Attempts made.
        attempts: u32,
        /// The temperature before it, C, where the device was cooled.
        celsius: Option<f64>,
    },
    /// No result, after every attempt the policy allows.
    Failed {
        /// Why (the last attempt's failure).
        failure: Failure,
        /// Attempts made.
        attempts: u32,
    },
    /// Not run: the device did not cool to the target in time.
    TooHot {
        /// The last reading, C.
        celsius: f64,
    },
}

/// Runs jobs on one runner under one policy.
pub struct Scheduler<'a> {
    runner: &'a dyn Runner,
    device: &'a Device,
    policy: Policy,
}

impl<'a> Scheduler<'a> {
    /// A scheduler for `device`'s `runner`.
    pub fn new(runner: &'a dyn Runner, device: &'a Device, policy: Policy) -> Self {
        Scheduler { runner, device, policy }
    }

    /// The runner.
    pub fn runner(&self) -> &'a dyn Runner {
        self.runner
    }

    /// Measure `job` into a record scored with `cap`, as the policy says.
    pub fn run(&self, job: &Job, cap: &Capability, reporter: &mut dyn Reporter) -> Attempted {
        let celsius = match self.policy.cooling {
            None => None,
            Some(c) => match cool(self.runner, &c, reporter) {
                (celsius, true) => celsius,
                (celsius, false) => return Attempted::TooHot { celsius: celsius.unwrap_or(f64::NAN) },
            },
        };
        let job = &Job { contention: self.policy.contention, ..job.clone() };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self.runner.measure(job).and_then(|probe| {
                let acct = job.shape.accounting();
                measured(&job.shape, &acct, self.device, probe, cap)
                    .map_err(|e| Failure::BadOutput { reason: e.to_string() })
            });
            match result {
                Ok(mut record) => {
                    if let Some(c) = self.policy.cooling {
                        record.methods.insert(crate::provenance::MethodKey::Thermal, thermal_note(celsius, c.target_c));
                    }
                    return Attempted::Measured { record: Box::new(record), attempts: attempt, celsius };
                }
                Err(f) if attempt <= self.policy.retries && self.policy.retries(&f) => {
                    let pause = self.policy.pause(attempt);
                    reporter.report(&Event::Retrying {
                        device: self.device.id().into(),
                        config: job.shape.to_string(),
                        workload: job.workload.to_string(),
                        attempt,
                        reason: f.to_string(),
                        pause_s: pause.as_secs_f64(),
                    });
                    std::thread::sleep(pause);
                }
                Err(failure) => return Attempted::Failed { failure, attempts: attempt },
            }
        }
    }
}

/// `run`'s one measurement: through the scheduler with no retry (a user
/// at the command line sees the failure and decides), scored with the
/// default capability proxy.
pub fn measure_one(runner: &dyn Runner, device: &Device, job: &Job) -> Result<Record, crate::Error> {
    let acct = job.shape.accounting();
    let cap = crate::capability::capability(&job.shape, &acct, &crate::capability::ProxySettings::default(), None);
    let policy = Policy {
        retries: 0,
        retry: Retry::Unavailable,
        backoff: false,
        cooling: None,
        contention: Some(Contention::default()),
    };
    match Scheduler::new(runner, device, policy).run(job, &cap, &mut crate::event::Silent) {
        Attempted::Measured { record, .. } => Ok(*record),
        Attempted::Failed { failure, .. } => Err(failure.into()),
        Attempted::TooHot { .. } => unreachable!("no cooling asked"),
    }
}

/// The note a cooled repetition carries: its temperature before it.
fn thermal_note(celsius: Option<f64>, target_c: f64) -> Method {
    Method::Note(match celsius {
        Some(c) => format!("{c:.1} C before the repetition, cooled to at most {target_c:.1} C"),
        None => "no temperature reading on this device: not cooled".into(),
    })
}

/// Wait until `runner`'s device is at or below the target; the last reading
/// (None without a reading) and whether it is cool.
fn cool(runner: &dyn Runner, c: &Cooling, reporter: &mut dyn Reporter) -> (Option<f64>, bool) {
    let start = Instant::now();
    loop {
        let Some(t) = runner.temperature() else { return (None, true) };
        if t.celsius <= c.target_c {
            return (Some(t.celsius), true);
        }
        if start.elapsed() >= c.timeout {
            return (Some(t.celsius), false);
        }
        reporter.report(&Event::Cooling { device: runner.device().into(), celsius: t.celsius, target_c: c.target_c });
        std::thread::sleep(c.poll.min(c.timeout.saturating_sub(start.elapsed())).max(Duration::from_millis(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Collect;

    #[test]
    fn a_sweep_pauses_longer_each_time_up_to_half_a_minute() {
        let secs: Vec<u64> = (1..=8).map(|a| Policy::sweep(8).pause(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(Policy::single_repetition(None).pause(1), Duration::ZERO);
    }

    fn job(device: &Device) -> Job {
        let shape = crate::arch::presets::s(128, 1, 4, 2, 32, 256, 512, true);
        let settings = crate::runner::JobSettings {
            reps: 1,
            threads: Some(1),
            timeout: Duration::from_secs(5),
            force: false,
            engine: None,
            engine_model: None,
            auto: None,
            pin: false,
        };
        settings.job(device, shape, crate::workload::Workload { prompt: 8, gen: 4, context: 12 }).unwrap()
    }

    fn attempts(policy: Policy, failure: Failure) -> (u32, Vec<Event>) {
        let devices = crate::device::Devices::built_in().unwrap();
        let device = devices.get("host").unwrap();
        let runner = crate::testing::Failing::new(failure);
        let mut events = Collect::default();
        let cap = Capability { score: 0.0, source: "test".into() };
        let got = Scheduler::new(&runner, device, policy).run(&job(device), &cap, &mut events);
        assert!(matches!(got, Attempted::Failed { attempts, .. } if attempts == runner.calls()));
        (runner.calls(), events.0)
    }

    #[test]
    fn a_sweep_retries_a_device_that_went_away_and_nothing_else() {
        let gone = Failure::Unavailable { reason: "adb: device offline".into() };
        let crash = Failure::Crashed { code: 3, stderr: "boom".into() };
        let policy = Policy { backoff: false, ..Policy::sweep(2) };
        let (calls, events) = attempts(policy, gone);
        assert_eq!(calls, 3);
        assert_eq!(events.iter().filter(|e| matches!(e, Event::Retrying { .. })).count(), 2);
        assert_eq!(attempts(policy, crash).0, 1, "a crash would repeat");
    }

    #[test]
    fn a_single_repetition_is_tried_once_more_whatever_failed() {
        let crash = Failure::Crashed { code: 3, stderr: "boom".into() };
        let (calls, events) = attempts(Policy::single_repetition(None), crash);
        assert_eq!(calls, 2);
        assert!(matches!(&events[..], [Event::Retrying { attempt: 1, pause_s, .. }] if *pause_s == 0.0));
    }
}
