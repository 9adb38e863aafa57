//! Progress events. The library never prints; it hands events to a
//! [`Reporter`] that the caller chooses (the CLI renders them on stderr).

use std::path::PathBuf;

/// Something worth telling the user while work runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A sweep was expanded and validated.
    Planned {
        /// Sweep name.
        sweep: String,
        /// Configurations kept.
        configs: usize,
        /// Devices.
        devices: usize,
        /// Configurations dropped, with the reason and count.
        skipped: Vec<(String, usize)>,
    },
    /// One device's predictions are done.
    DeviceDone {
        /// Device id.
        device: String,
        /// Feasible configurations.
        feasible: usize,
        /// Configurations on the frontier.
        frontier: usize,
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
    /// A measurement finished.
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
    /// A stored measurement was reused.
    Resumed {
        /// Device id.
        device: String,
        /// Shape name.
        config: String,
        /// The stored file.
        path: PathBuf,
    },
    /// A warning (stale calibration, missing scores, a failed measurement).
    Warning(String),
    /// A file was written.
    Wrote(PathBuf),
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
