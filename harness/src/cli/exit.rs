//! The exit-code table. CI gates depend on these values; never renumber.
//!
//! | code | meaning |
//! |---:|---|
//! | 0 | success |
//! | 1 | a budget failed where the user asked to fail on it (`--fail-on-budget`, `--require-feasible`); `gate`: a regression or a broken budget |
//! | 2 | usage or configuration error (bad flags, malformed TOML, impossible shape) |
//! | 3 | harness or device error (I/O, a runner failed) |

use std::process::ExitCode;

/// A process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 0.
    Ok = 0,
    /// 1: a budget failed (where asked to fail on it), or the gate found a
    /// regression or a broken budget.
    Failed = 1,
    /// 2.
    Usage = 2,
    /// 3.
    Harness = 3,
}

impl From<Code> for ExitCode {
    fn from(c: Code) -> ExitCode {
        ExitCode::from(c as u8)
    }
}

/// Decide the exit code of an error by the library error in its chain.
pub fn classify(err: &anyhow::Error) -> Code {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<pocketbench::Error>() {
            return if e.is_usage() { Code::Usage } else { Code::Harness };
        }
        if let Some(e) = cause.downcast_ref::<pocketbench::report::ReportError>() {
            return match e {
                pocketbench::report::ReportError::Parse { .. } => Code::Usage,
                _ => Code::Harness,
            };
        }
        if let Some(e) = cause.downcast_ref::<pocketbench::gate::source::SourceError>() {
            return if e.is_usage() { Code::Usage } else { Code::Harness };
        }
        if cause.downcast_ref::<Usage>().is_some() {
            return Code::Usage;
        }
        if cause.downcast_ref::<Harness>().is_some() {
            return Code::Harness;
        }
    }
    Code::Harness
}

/// A usage error raised by the CLI itself (beyond what clap checks).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Whether the error is a write to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// A harness or device error raised by the CLI (exit 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Harness(pub String);
