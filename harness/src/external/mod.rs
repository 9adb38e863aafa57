//! Output of engines a team already runs, parsed into samples pocketbench can
//! compare with its own measurements. Each parser is tested on recorded real
//! output (`tests/fixtures/`). Running these tools as engines of a sweep is
//! the engine issue's remaining work.

pub mod llama_bench;
