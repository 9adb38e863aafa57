//! The library's one error type and the exit-code table the binary maps it
//! to. CI gates script against these codes: never renumber them.
//!
//! Every variant says which code it means in [`Error::exit_code`], a match
//! with no wildcard, so a new variant cannot compile without choosing one.
//! The table in README.md is checked against [`ExitCode::ALL`] by a test.

use std::path::{Path, PathBuf};

/// A process exit status of `pocketbench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: success (gate: pass or inconclusive).
    Ok = 0,
    /// 1: a budget failed where asked to fail on it (`--fail-on-budget`,
    /// `--require-feasible`); `gate`: a regression or a broken budget.
    Failed = 1,
    /// 2: usage or configuration error (bad flags, malformed TOML,
    /// impossible shape).
    Usage = 2,
    /// 3: harness or device error (I/O, a runner failed).
    Harness = 3,
    /// 4: a measurement's output was invalid: its repetitions (or its
    /// processes of one engine and build) generated different tokens.
    InvalidOutput = 4,
}

impl ExitCode {
    /// Every code, in numeric order.
    pub const ALL: [ExitCode; 5] =
        [ExitCode::Ok, ExitCode::Failed, ExitCode::Usage, ExitCode::Harness, ExitCode::InvalidOutput];

    /// The number the process exits with.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// What it means, as the README's table says it.
    pub fn meaning(self) -> &'static str {
        match self {
            ExitCode::Ok => "success (`gate`: pass or inconclusive)",
            ExitCode::Failed => {
                "a budget failed where asked to fail on it (`--fail-on-budget`, `--require-feasible`); `gate`: a regression or a broken budget"
            }
            ExitCode::Usage => "usage or configuration error (bad flags, malformed TOML, impossible shape)",
            ExitCode::Harness => "harness or device error (I/O, a runner failed)",
            ExitCode::InvalidOutput => {
                "invalid output: a measurement's repetitions (or processes of one engine and build) generated different tokens"
            }
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> std::process::ExitCode {
        std::process::ExitCode::from(c.code())
    }
}

/// Any error the library returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A TOML file is malformed.
    #[error(transparent)]
    Config(#[from] Box<crate::config::ConfigError>),
    /// A device profile is invalid.
    #[error(transparent)]
    Profile(#[from] crate::device::ProfileError),
    /// A shape could not be resolved.
    #[error(transparent)]
    Spec(#[from] crate::arch::SpecError),
    /// A workload is impossible.
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    /// A sweep file is invalid or too large.
    #[error(transparent)]
    Sweep(#[from] crate::sweep::SweepError),
    /// A measurement cannot be made as asked.
    #[error(transparent)]
    Job(#[from] crate::runner::JobError),
    /// A sweep cannot measure as asked.
    #[error(transparent)]
    MeasurePlan(#[from] crate::sweep::MeasurePlanError),
    /// Calibration failed.
    #[error(transparent)]
    Calibration(#[from] crate::calibrate::CalibrationError),
    /// A calibration design is unusable.
    #[error(transparent)]
    Design(#[from] crate::calibrate::design::DesignError),
    /// A scores file is invalid.
    #[error(transparent)]
    Scores(#[from] crate::capability::ScoresError),
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
    /// A built-in profile cannot be written back.
    #[error(
        "device `{0}` is a built-in profile; run from a directory with devices/ or pass --devices-dir to write the fit"
    )]
    BuiltIn(String),
    /// A profile cannot be updated.
    #[error("cannot update {path}: {message}")]
    ProfileWrite {
        /// File.
        path: String,
        /// Reason.
        message: String,
    },
    /// Two profiles share an id.
    #[error("two device profiles have the id `{0}`")]
    DuplicateDevice(String),
    /// The results store cannot be used.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A report cannot be rendered, written or read back.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// One side of a gate cannot be read.
    #[error(transparent)]
    Source(#[from] crate::report::source::SourceError),
    /// A device cannot be reached, or has no runner in this build.
    #[error("{0}")]
    Unavailable(String),
    /// A measurement produced no result.
    #[error("{0}")]
    Measurement(#[from] crate::runner::Failure),
    /// A model file cannot be built.
    #[error(transparent)]
    Model(#[from] crate::probe::gguf::GgufError),
    /// A file `calibrate --import` cannot take, located.
    #[error(transparent)]
    Import(#[from] crate::calibrate::import::ImportError),
    /// The probe, run as a process of its own, failed.
    #[error(transparent)]
    Probe(#[from] crate::probe::entry::EntryError),
    /// A request that no more specific variant describes is not usable
    /// as given (flags that do not go together, a value out of range); the
    /// message says what to do instead.
    #[error("{0}")]
    Usage(String),
    /// A measurement generated different tokens where greedy decoding must
    /// repeat: a wrong result, not a slow one.
    #[error("invalid output: {0}")]
    InvalidOutput(String),
    /// A file another tool exported (xcresulttool, xctrace,
    /// pymobiledevice3) cannot be read as what it should be.
    #[error(transparent)]
    Export(#[from] pocketbench_runner_ios::export::ExportError),
    /// Writing the command's own output (stdout, stderr) failed; a closed
    /// pipe (`pocketbench ... | head`) is not an error to the user.
    #[error("writing the output: {0}")]
    Output(#[source] std::io::Error),
    /// An error, and what was being done when it happened.
    #[error("{what}: {source}")]
    Context {
        /// What was being done ("reading the baseline").
        what: String,
        /// The error.
        source: Box<Error>,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl From<crate::config::ConfigError> for Error {
    fn from(e: crate::config::ConfigError) -> Self {
        Error::Config(Box::new(e))
    }
}

impl Error {
    /// Wrap an I/O error with its path.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), source }
    }

    /// A usage error in words.
    pub fn usage(message: impl Into<String>) -> Self {
        Error::Usage(message.into())
    }

    /// The exit code this error means: the user's input (2) or the harness
    /// and devices (3). Total over the variants.
    pub fn exit_code(&self) -> ExitCode {
        use crate::calibrate::CalibrationError;
        let usage = |yes: bool| if yes { ExitCode::Usage } else { ExitCode::Harness };
        match self {
            Error::Config(_)
            | Error::Profile(_)
            | Error::Spec(_)
            | Error::Workload(_)
            | Error::Sweep(_)
            | Error::Job(_)
            | Error::MeasurePlan(_)
            | Error::Design(_)
            | Error::Scores(_)
            | Error::UnknownDevice { .. }
            | Error::DuplicateDevice(_)
            | Error::BuiltIn(_)
            | Error::Export(_)
            | Error::Import(_)
            | Error::Usage(_) => ExitCode::Usage,
            Error::Calibration(c) => usage(!matches!(c, CalibrationError::NothingMeasured(_))),
            Error::Profiles(all) => usage(all.iter().all(|e| e.exit_code() == ExitCode::Usage)),
            Error::Store(e) => usage(e.is_usage()),
            Error::Report(e) => usage(matches!(e, crate::report::ReportError::Parse { .. })),
            Error::Source(e) => usage(e.is_usage()),
            Error::Probe(e) => usage(matches!(e, crate::probe::entry::EntryError::Usage(_))),
            Error::Model(e) => usage(matches!(e, crate::probe::gguf::GgufError::Unsupported(_))),
            Error::Unavailable(_)
            | Error::Measurement(_)
            | Error::ProfileWrite { .. }
            | Error::Io { .. }
            | Error::Output(_) => ExitCode::Harness,
            Error::Context { source, .. } => source.exit_code(),
            Error::InvalidOutput(_) => ExitCode::InvalidOutput,
        }
    }

    /// The same error, saying what was being done.
    pub fn context(self, what: impl Into<String>) -> Error {
        Error::Context { what: what.into(), source: Box::new(self) }
    }

    /// Whether it is a write to a closed pipe (the reader went away).
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            Error::Output(e) => e.kind() == std::io::ErrorKind::BrokenPipe,
            Error::Context { source, .. } => source.is_broken_pipe(),
            _ => false,
        }
    }
}

/// `.context(..)` and `.with_context(..)` on any result whose error is (or
/// converts into) the library's: the error then says what was being done,
/// and keeps its exit code.
pub trait Context<T> {
    /// Say what was being done.
    fn context(self, what: impl Into<String>) -> Result<T, Error>;
    /// Say what was being done, worded only on failure.
    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T, Error>;
}

impl<T, E: Into<Error>> Context<T> for Result<T, E> {
    fn context(self, what: impl Into<String>) -> Result<T, Error> {
        self.map_err(|e| e.into().context(what))
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T, Error> {
        self.map_err(|e| e.into().context(what()))
    }
}
