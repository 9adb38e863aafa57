//! Exit codes: the library's table ([`pocketbench::ExitCode`]), and which
//! code an error chain means. CI gates depend on these values.

pub use pocketbench::ExitCode as Code;

/// The exit code of an error: the library error in its chain says
/// ([`pocketbench::Error::exit_code`]); anything else (a write to stdout
/// that failed, say) is the harness's.
pub fn classify(err: &anyhow::Error) -> Code {
    err.chain()
        .find_map(|c| c.downcast_ref::<pocketbench::Error>())
        .map_or(Code::Harness, pocketbench::Error::exit_code)
}

/// Whether the error is a write to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}
