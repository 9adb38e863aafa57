//! The `pocketbench` command line: parse, dispatch, map errors to exit codes.
#![allow(clippy::print_stdout, clippy::print_stderr)] // the binary is where output belongs

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code.into(),
        // The reader went away (`| head`): not an error.
        Err(err) if cli::exit::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let code = cli::exit::classify(&err);
            // Each error's text already carries its causes, once.
            eprintln!("error: {err}");
            code.into()
        }
    }
}
