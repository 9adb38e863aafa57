//! llama.cpp's `llama-bench -o json`: an array with one object per test. A
//! prompt-processing test (`pp`, n_gen = 0) times a prompt of `n_prompt`
//! tokens; a text-generation test (`tg`, n_prompt = 0) times `n_gen` decoded
//! tokens after `n_depth` tokens of context. Unknown fields are ignored on
//! purpose: llama-bench adds fields between releases.
//!
//! [`run`] runs it as an engine of the probe (`--engine llama-bench`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use pocketbench_types::stats::{Sample, SampleError};

/// One llama-bench test.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Test {
    /// llama.cpp commit.
    pub build_commit: String,
    /// llama.cpp build number.
    pub build_number: i64,
    /// CPU description.
    pub cpu_info: String,
    /// Backends used.
    #[serde(default)]
    pub backends: String,
    /// The model file.
    pub model_filename: String,
    /// Weight bytes as llama.cpp counts them.
    pub model_size: u64,
    /// Parameters as llama.cpp counts them.
    pub model_n_params: u64,
    /// Threads.
    pub n_threads: u32,
    /// KV cache type of K.
    #[serde(default)]
    pub type_k: String,
    /// Prompt tokens (pp tests).
    pub n_prompt: u32,
    /// Generated tokens (tg tests).
    pub n_gen: u32,
    /// Context before the test (tg at depth).
    #[serde(default)]
    pub n_depth: u32,
    /// Mean tokens per second.
    pub avg_ts: f64,
    /// Its standard deviation.
    pub stddev_ts: f64,
    /// Tokens per second of every repetition.
    pub samples_ts: Vec<f64>,
}

/// What is wrong with the output.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not llama-bench JSON.
    #[error("not llama-bench JSON output: {0}")]
    Json(#[from] serde_json::Error),
    /// A test with fewer than two repetitions.
    #[error("test {0}: {1}")]
    Sample(String, SampleError),
}

impl Test {
    /// `pp512`, `tg128`, `tg128@d1024`: llama-bench's own names.
    pub fn name(&self) -> String {
        match (self.n_prompt, self.n_gen, self.n_depth) {
            (p, 0, _) => format!("pp{p}"),
            (0, g, 0) => format!("tg{g}"),
            (0, g, d) => format!("tg{g}@d{d}"),
            (p, g, _) => format!("pp{p}+tg{g}"),
        }
    }

    /// The repetitions as a validated sample (tokens per second).
    pub fn sample(&self) -> Result<Sample, ParseError> {
        Sample::new(self.samples_ts.clone()).map_err(|e| ParseError::Sample(self.name(), e))
    }
}

/// Parse the whole output.
pub fn parse(text: &str) -> Result<Vec<Test>, ParseError> {
    Ok(serde_json::from_str(text)?)
}

/// One run of llama-bench as an engine of the probe.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The llama-bench executable.
    pub bin: &'a Path,
    /// The GGUF file.
    pub model: &'a Path,
    /// Prompt tokens.
    pub prompt: u32,
    /// Generated tokens.
    pub gen: u32,
    /// Threads.
    pub threads: u32,
    /// Repetitions (llama-bench's `-r`).
    pub reps: u32,
    /// Give up on one llama-bench process after this long.
    pub timeout: Duration,
}

/// The two command lines: the prompt (`-p P -n 0`), then `gen` tokens decoded
/// after `prompt` tokens of context (`-p 0 -n G -d P`), which is the
/// pocketbench workload's decode.
pub fn args(inv: &Invocation<'_>) -> [Vec<String>; 2] {
    let common = |extra: [&str; 6]| -> Vec<String> {
        let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        v.extend(
            ["-m", &inv.model.to_string_lossy(), "-t", &inv.threads.to_string(), "-r", &inv.reps.to_string()]
                .map(String::from),
        );
        v.extend(["-o", "json"].map(String::from));
        v
    };
    let (p, g) = (inv.prompt.to_string(), inv.gen.to_string());
    [common(["-p", &p, "-n", "0", "-d", "0"]), common(["-p", "0", "-n", &g, "-d", &p])]
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The prompt test.
    pub prefill: Test,
    /// The decode test.
    pub decode: Test,
    /// Largest VmHWM seen of the llama-bench processes (polled every 5 ms).
    pub peak_hwm_bytes: u64,
}

pub use super::process::RunError;

const TOOL: &str = "llama-bench";

/// Run both command lines and pick out the two tests.
pub fn run(inv: &Invocation<'_>) -> Result<Output, RunError> {
    let mut peak = 0;
    let mut tests = Vec::new();
    for a in args(inv) {
        let done = super::process::run(TOOL, inv.bin, &a, inv.timeout)?;
        peak = peak.max(done.peak_hwm_bytes);
        tests.extend(parse(&done.stdout).map_err(|e| RunError::Parse { tool: TOOL, message: e.to_string() })?);
    }
    let find = |test: String, f: &dyn Fn(&Test) -> bool| {
        tests.iter().find(|t| f(t)).cloned().ok_or(RunError::Missing { tool: TOOL, test })
    };
    let prefill = find(format!("pp{}", inv.prompt), &|t| t.n_prompt == inv.prompt && t.n_gen == 0)?;
    let decode = find(format!("tg{}@d{}", inv.gen, inv.prompt), &|t| {
        t.n_prompt == 0 && t.n_gen == inv.gen && t.n_depth == inv.prompt
    })?;
    Ok(Output { prefill, decode, peak_hwm_bytes: peak })
}

/// The llama-bench to run: `$POCKETBENCH_LLAMA_BENCH`, else `llama-bench`
/// on `PATH`.
pub fn locate() -> Option<PathBuf> {
    super::process::locate("POCKETBENCH_LLAMA_BENCH", "llama-bench")
}
