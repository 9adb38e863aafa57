//! pocketbench: find the most capable small language model a device can run
//! inside hard budgets (decode speed, peak memory, energy per run).
//!
//! Pipeline: a sweep file ([`sweep`]) expands into shapes ([`arch`]); each is
//! predicted on every device ([`device`], [`predict`]) with parameters fitted
//! to published or measured points ([`calibrate`]); budgets ([`budget`]),
//! a capability proxy ([`capability`]) and the Pareto frontier ([`pareto`])
//! turn predictions into verdicts ([`record`]); exporters ([`report`]) render
//! stored results; [`pipeline`] runs a whole sweep. The library never
//! prints: long-running work reports [`event::Event`]s to a
//! [`event::Reporter`] chosen by the caller.
//!
//! Modules use only the modules below them (the book's Architecture chapter
//! lists the layers), with one arrow that runs back up on purpose: every
//! module returns [`Error`], and [`error`] wraps each module's own error type,
//! so that each keeps its detail and [`Error::exit_code`] decides over all of
//! them in one match.
#![deny(missing_docs)]

pub mod agreement;
pub mod bench;
pub mod budget;
pub mod calibrate;
pub mod capability;
pub mod config;
pub mod cores;
pub mod device;
pub mod error;
pub mod event;
pub mod fit;
pub mod gate;
pub mod history;
pub mod interval;
pub mod markup;
pub mod outcome;
pub mod pareto;
pub mod pipeline;
pub mod predict;
pub mod protocol;
pub mod provenance;
pub mod record;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod store;
pub mod sweep;
#[cfg(test)]
mod testing;
pub mod trust;
pub mod xctest;

// The vocabulary shared with the probe, and the probe itself (what runs on a
// device), re-exported under the paths the harness has always used.
pub use pocketbench_probe as probe;
pub use pocketbench_probe::{external, hostinfo, kernels, meter};
pub use pocketbench_types::{arch, fnv1a, stats, units, workload};

pub use error::{Error, ExitCode};

/// A result with the library's error.
pub type Result<T> = std::result::Result<T, Error>;

/// `pocketbench <version> (<git commit>)`: the harness version a store
/// records and a resumed sweep must match.
pub fn harness_version() -> String {
    format!("pocketbench {} ({})", env!("CARGO_PKG_VERSION"), git_commit())
}

/// The git commit this binary was built from ("unknown" outside a checkout).
pub fn git_commit() -> &'static str {
    env!("PB_GIT_COMMIT")
}
