//! Engines a team already runs, as commands whose output pocketbench parses
//! into the samples it records for its own engines. Each parser is tested on
//! recorded real output (`tests/fixtures/`); each runs as an engine of the
//! probe (`--engine llama-bench`, `--engine mnn-llm-bench`).

pub mod llama_bench;
pub mod mnn_llm_bench;
pub mod process;
