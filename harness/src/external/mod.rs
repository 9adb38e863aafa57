//! Output of engines a team already runs, parsed into samples pocketbench can
//! compare with its own measurements. Each parser is tested on recorded real
//! output (`tests/fixtures/`). llama-bench also runs as an engine of the
//! probe (`--engine llama-bench`).

pub mod llama_bench;
