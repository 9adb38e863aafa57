//! Progress events: the one stream every long-running command reports on
//! (sweeps, calibrations and checks, `gate --measure`, the scheduler under
//! all of them). The library never prints; it hands events to a
//! [`Reporter`] that the caller chooses (the CLI draws progress bars, plain
//! lines, or one JSON object per line with `--json-events`).
//!
//! The JSON form is a contract for CI scripts: each event is an object
//! whose `event` field names it in kebab-case (`planned`, `predicted`,
//! `measuring`, ...) and whose other fields are the variant's, snake_case.

use std::path::PathBuf;

use serde::Serialize;

/// Something worth telling the user while work runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A sweep was expanded and validated.
    Planned {
        /// Sweep name.
        sweep: String,
        /// Configurations kept (this shard's, when sharded).
        configs: usize,
        /// Devices.
        devices: usize,
        /// Configurations dropped, with the reason and count.
        skipped: Vec<(String, usize)>,
        /// `I/N` when this is one shard of the sweep.
        shard: Option<String>,
    },
    /// The output folder already holds this sweep: what is kept.
    Resuming {
        /// The store.
        store: PathBuf,
        /// Predicted records kept.
        predicted: usize,
        /// Measured records kept.
        measured: usize,
        /// Failed measurements kept.
        failed: usize,
    },
    /// One device's predictions are done (or were already stored).
    Predicted {
        /// Device id.
        device: String,
        /// Configurations predicted.
        configs: usize,
        /// Feasible configurations.
        feasible: usize,
        /// Configurations on the frontier.
        frontier: usize,
        /// Taken from the store instead of computed.
        stored: bool,
    },
    /// Measurement of one device begins.
    MeasurePlanned {
        /// Device id.
        device: String,
        /// Candidates to measure (stored ones included).
        total: usize,
    },
    /// A measurement starts.
    Measuring {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// 1-based position.
        index: usize,
        /// Measurements on this device.
        total: usize,
    },
    /// A measurement finished and was stored.
    Measured {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Median decode tok/s.
        decode_tok_s: f64,
        /// Peak memory increase, MB.
        peak_mem_mb: f64,
    },
    /// A stored measurement was kept instead of measuring again.
    Resumed {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
    },
    /// A measurement failed (after its retries) and was recorded.
    Failed {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Why.
        reason: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A failure stored by an earlier run was kept, not retried (`--retry-failed` retries).
    KeptFailure {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Why it failed.
        reason: String,
    },
    /// A measurement failed and is tried again ([`crate::schedule::Policy`]).
    Retrying {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Its workload ("16+8").
        workload: String,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Why it failed.
        reason: String,
        /// Seconds paused before the next attempt.
        pause_s: f64,
    },
    /// Waiting for the device to cool before a measurement.
    Cooling {
        /// Device id.
        device: String,
        /// Its temperature now, C.
        celsius: f64,
        /// The temperature waited for, C.
        target_c: f64,
    },
    /// A repetition was not run: the device stayed above its temperature.
    TooHot {
        /// Device id.
        device: String,
        /// The side (`baseline`, `candidate`).
        arm: String,
        /// Shape name.
        config: String,
        /// The last reading, C.
        celsius: f64,
        /// How long it was waited for, s.
        timeout_s: f64,
    },
    /// `gate --measure` begins: both sides alternating (ABAB).
    AbabPlanned {
        /// Device id.
        device: String,
        /// Configurations.
        configs: usize,
        /// Repetitions a side.
        reps: u32,
        /// Probe runs in all.
        runs: usize,
        /// The device's temperature now, C, where it has a reading.
        celsius: Option<f64>,
        /// What was read.
        sensor: Option<String>,
        /// The temperature each repetition waits for, C.
        cool_to_c: f64,
    },
    /// `gate --measure` stopped alternating one configuration, and why (the
    /// count asked, the change it can now see, or a cap).
    AbabStopped {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Pairs measured.
        pairs: u32,
        /// Why it stopped.
        reason: String,
    },
    /// One repetition of one side measured (`gate --measure`).
    RepMeasured {
        /// Device id.
        device: String,
        /// The side.
        arm: String,
        /// Shape name.
        config: String,
        /// Probe runs done.
        done: usize,
        /// In all.
        runs: usize,
        /// Decode tok/s of this repetition.
        decode_tok_s: f64,
        /// The temperature before it, C.
        celsius: Option<f64>,
    },
    /// One repetition of one side failed after its retry and is recorded.
    RepFailed {
        /// Device id.
        device: String,
        /// The side.
        arm: String,
        /// Shape name.
        config: String,
        /// Why.
        reason: String,
    },
    /// A calibration or check of this machine begins.
    CalibrationPlanned {
        /// Device id.
        device: String,
        /// `calibrating` or `checking`, and what: "calibrating `host`".
        what: String,
        /// This machine, described.
        machine: String,
        /// Its fingerprint.
        fingerprint: String,
        /// The design's name.
        design: String,
        /// Shapes of the design.
        shapes: usize,
        /// Of them held out of the fit.
        held_out: usize,
        /// Jobs per round.
        jobs_per_round: usize,
        /// Rounds.
        rounds: u32,
        /// Threads.
        threads: u32,
    },
    /// This machine's read bandwidth was measured.
    Bandwidth {
        /// GB/s with every thread.
        read_gb_s: f64,
        /// Threads.
        threads: usize,
        /// GB/s with one thread.
        read_1_gb_s: f64,
        /// Best of this many passes.
        passes: usize,
        /// Over a buffer of this many MiB.
        buffer_mib: usize,
    },
    /// A calibration's rounds begin.
    RoundsPlanned {
        /// Device id.
        device: String,
        /// Jobs in all (rounds x jobs per round).
        jobs: usize,
        /// Of them, finished by an earlier, killed run.
        cached: usize,
    },
    /// One job of a calibration round finished (or was in the cache).
    RoundMeasured {
        /// Device id.
        device: String,
        /// Jobs done.
        done: usize,
        /// In all.
        jobs: usize,
        /// 1-based round.
        round: u32,
        /// Shape name.
        config: String,
        /// Its workload.
        workload: String,
        /// Decode tok/s.
        decode_tok_s: f64,
        /// From the cache.
        cached: bool,
    },
    /// A job of a calibration round failed after its retry; the round goes on.
    RoundFailed {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Its workload.
        workload: String,
        /// 1-based round.
        round: u32,
        /// Why.
        reason: String,
    },
    /// One fresh process of `bench repeatability` finished.
    ProcessMeasured {
        /// Device id.
        device: String,
        /// `ours` or `reference`.
        arm: String,
        /// 1-based process.
        index: usize,
        /// Processes of each engine.
        total: usize,
        /// The engine that ran.
        engine: String,
        /// Median decode tok/s.
        decode_tok_s: f64,
        /// Median efficiency, where measured.
        efficiency: Option<f64>,
        /// Lowest and highest bandwidth pass, GB/s.
        bandwidth_gb_s: Option<[f64; 2]>,
    },
    /// `run` begins its one measurement.
    RunPlanned {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Repetitions, as planned ("5 reps", "5..30 reps until ±2.0%").
        reps: String,
        /// Threads.
        threads: u32,
        /// Its workload ("1024+128").
        workload: String,
    },
    /// `soak` begins: the workload back to back for `seconds`.
    SoakPlanned {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Seconds asked.
        seconds: f64,
        /// Seconds a window.
        window_s: f64,
        /// Windows to run.
        windows: u32,
        /// Threads.
        threads: u32,
        /// The workload of each cycle ("1024+128").
        workload: String,
    },
    /// `bench repeatability` begins.
    ProcessesPlanned {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// Its workload.
        workload: String,
        /// Fresh processes of each engine.
        processes: usize,
        /// Threads.
        threads: u32,
        /// Whether each is followed by one of llama-bench on the same GGUF.
        reference: bool,
    },
    /// A calibration point was added to a device profile (`calibrate
    /// --add`, `run --save-point`), or would be (`--dry-run`).
    PointAdded {
        /// Device id.
        device: String,
        /// The profile it went into.
        profile: String,
        /// Which measurement ("L28-... (1024+128) from r.json").
        what: String,
        /// Held out of the fit.
        held_out: bool,
        /// Not written (`--dry-run`).
        dry_run: bool,
    },
    /// A device farm's XCTest run was read to be stored (`import-xctest`).
    Imported {
        /// Device id.
        device: String,
        /// The XCTest that ran.
        test: String,
        /// Shape name.
        config: String,
        /// Median decode tok/s.
        decode_tok_s: f64,
        /// Median prefill tok/s.
        prefill_tok_s: f64,
        /// Peak memory increase, MB.
        peak_mem_mb: f64,
        /// Repetitions.
        reps: usize,
        /// Not stored (`--dry-run`).
        dry_run: bool,
    },
    /// A sweep's measurements were gated against a baseline (`report --baseline`).
    Compared {
        /// The baseline as named.
        baseline: PathBuf,
        /// The gate's outcome (`pass`, `fail`, `inconclusive`, `invalid`).
        outcome: String,
        /// Comparisons made.
        comparisons: usize,
    },
    /// A model file was written (`export-gguf`).
    Exported {
        /// The file.
        path: PathBuf,
        /// Shape name.
        config: String,
        /// Its size, MB.
        mb: f64,
        /// The weights' seed (the probe's own for this shape).
        seed: u64,
    },
    /// A warning (stale calibration, missing scores).
    Warning {
        /// The text.
        message: String,
    },
    /// A file was written.
    Wrote {
        /// The file.
        path: PathBuf,
    },
}

impl Event {
    /// A warning event.
    pub fn warning(message: impl Into<String>) -> Event {
        Event::Warning { message: message.into() }
    }
}

/// Receives events.
pub trait Reporter {
    /// Handle one event.
    fn report(&mut self, event: &Event);
}

/// Drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Reporter for Silent {
    fn report(&mut self, _: &Event) {}
}

/// Keeps every event, for tests.
#[derive(Debug, Default, Clone)]
pub struct Collect(pub Vec<Event>);

impl Reporter for Collect {
    fn report(&mut self, event: &Event) {
        self.0.push(event.clone());
    }
}
