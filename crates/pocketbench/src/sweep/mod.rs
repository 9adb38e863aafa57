//! Sweeps: a TOML space expanded into validated, de-duplicated shapes (the
//! plan), then predicted on every device, judged against budgets and ranked on
//! a Pareto frontier (the outcome).

mod axis;
mod measure;
mod plan;
mod predict;
mod session;
mod spec;

pub use axis::{Axis, AxisValue};
pub use measure::{
    calibration_of, job_key, measure, profile_digest, validate as validate_measure, MeasurePlanError, MeasureSettings,
    Selection,
};
pub use plan::{Plan, PlanOptions, Shard};
pub use predict::run;
// The outcome's types under the paths sweeps have always used.
pub use crate::outcome::{frontiers, mark_frontier, DeviceSummary, FailedMeasurement, Outcome};
pub use session::{execute, merge, outcome, sweep_row, Measuring};
pub use spec::*;

/// A sweep file is invalid, or expands to too much or nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// A semantic error in the file.
    #[error("{file}: {key}: {message}")]
    Invalid {
        /// File.
        file: String,
        /// Key path.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// Over the cap.
    #[error("{file}: the space expands to {count} configurations, over the cap of {cap}; narrow an axis, or raise the cap with `max-configs = {count}` under [sweep] or `--max-configs {count}`")]
    TooLarge {
        /// File.
        file: String,
        /// Expanded size.
        count: usize,
        /// The cap.
        cap: usize,
    },
    /// Nothing left after validation and the window.
    #[error("{file}: no valid configuration is left ({reasons})")]
    Empty {
        /// File.
        file: String,
        /// Why each was dropped.
        reasons: String,
    },
}
