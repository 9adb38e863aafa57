//! pocketbench: find the most capable small language model a device can run
//! inside hard budgets (decode speed, peak memory, energy per run).
//!
//! Pipeline: a sweep file ([`sweep`]) expands into shapes ([`arch`]); each is
//! predicted on every device ([`device`], [`predict`]) with parameters fitted
//! to published or measured points ([`calibrate`]); budgets ([`budget`]),
//! a capability proxy ([`capability`]) and the Pareto frontier ([`pareto`])
//! turn predictions into verdicts ([`record`]); exporters ([`report`]) render
//! stored results. The library never prints: long-running work reports
//! [`event::Event`]s to a [`event::Reporter`] chosen by the caller.
#![deny(missing_docs)]

pub mod budget;
pub mod calibrate;
pub mod capability;
pub mod config;
pub mod device;
pub mod event;
pub mod fit;
pub mod gate;
pub mod history;
pub mod pareto;
pub mod predict;
pub mod record;
pub mod report;
pub mod runner;
pub mod store;
pub mod sweep;
#[cfg(test)]
mod testing;

// The vocabulary shared with the probe, and the probe itself (what runs on a
// device), re-exported under the paths the harness has always used.
pub use pocketbench_probe as probe;
pub use pocketbench_probe::{external, hostinfo, kernels, meter};
pub use pocketbench_types::{arch, fnv1a, stats, units, workload};

use std::path::{Path, PathBuf};

/// Any error the library returns. [`Error::is_usage`] separates the user's
/// mistakes (exit code 2) from harness failures (exit code 3).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A TOML file is malformed.
    #[error(transparent)]
    Config(#[from] Box<config::ConfigError>),
    /// A device profile is invalid.
    #[error(transparent)]
    Profile(#[from] device::ProfileError),
    /// A shape could not be resolved.
    #[error(transparent)]
    Spec(#[from] arch::SpecError),
    /// A workload is impossible.
    #[error(transparent)]
    Workload(#[from] workload::WorkloadError),
    /// A sweep file is invalid or too large.
    #[error(transparent)]
    Sweep(#[from] sweep::SweepError),
    /// A measurement cannot be made as asked.
    #[error(transparent)]
    Job(#[from] runner::JobError),
    /// A sweep cannot measure as asked.
    #[error(transparent)]
    MeasurePlan(#[from] sweep::MeasurePlanError),
    /// Calibration failed.
    #[error(transparent)]
    Calibration(#[from] calibrate::CalibrationError),
    /// A scores file is invalid.
    #[error(transparent)]
    Scores(#[from] capability::ScoresError),
    /// No such device.
    #[error("unknown device `{id}` (known: {known})")]
    UnknownDevice {
        /// Requested id.
        id: String,
        /// Known ids.
        known: String,
    },
    /// Several profiles are invalid: each one's errors, every file reported.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Profiles(Vec<Error>),
    /// The results store cannot be used.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// Two profiles share an id.
    #[error("two device profiles have the id `{0}`")]
    DuplicateDevice(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl From<config::ConfigError> for Error {
    fn from(e: config::ConfigError) -> Self {
        Error::Config(Box::new(e))
    }
}

impl Error {
    /// Wrap an I/O error with its path.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), source }
    }

    /// Whether the error is the user's input (exit 2) rather than the harness (exit 3).
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Io { .. } => false,
            Error::Calibration(c) => !matches!(c, calibrate::CalibrationError::Write { .. }),
            Error::Profiles(all) => all.iter().all(Error::is_usage),
            Error::Store(e) => e.is_usage(),
            _ => true,
        }
    }
}

/// `pocketbench <version> (<git commit>)`: the harness version a store
/// records and a resumed sweep must match.
pub fn harness_version() -> String {
    format!("pocketbench {} ({})", env!("CARGO_PKG_VERSION"), git_commit())
}

/// The git commit this binary was built from ("unknown" outside a checkout).
pub fn git_commit() -> &'static str {
    env!("PB_GIT_COMMIT")
}
