//! Exit codes: the library's table ([`pocketbench::ExitCode`]), and which
//! code an error chain means. CI gates depend on these values.

pub use pocketbench::ExitCode as Code;

/// The exit code of an error: every command returns the library's one
/// error type, and [`pocketbench::Error::exit_code`] is the one place
/// that maps it.
pub fn classify(err: &pocketbench::Error) -> Code {
    err.exit_code()
}

/// Whether the error is a write to a closed pipe.
pub fn is_broken_pipe(err: &pocketbench::Error) -> bool {
    err.is_broken_pipe()
}
