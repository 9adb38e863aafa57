//! Progress events. The library never prints; it hands events to a
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
