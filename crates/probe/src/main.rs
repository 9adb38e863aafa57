//! `pocketbench-probe`: the probe process a runner starts on a device.
//! Everything it does is [`pocketbench_probe::entry`]; this only prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    match pocketbench_probe::entry::main(std::env::args_os().skip(1)) {
        Ok(pocketbench_probe::entry::Outcome::Print(json)) => println!("{json}"),
        Ok(pocketbench_probe::entry::Outcome::Info(text)) => println!("{text}"),
        Ok(pocketbench_probe::entry::Outcome::Written) => {}
        Err(e) => {
            eprintln!("pocketbench-probe: error: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
