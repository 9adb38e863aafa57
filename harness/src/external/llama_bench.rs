//! llama.cpp's `llama-bench -o json`: an array with one object per test. A
//! prompt-processing test (`pp`, n_gen = 0) times a prompt of `n_prompt`
//! tokens; a text-generation test (`tg`, n_prompt = 0) times `n_gen` decoded
//! tokens after `n_depth` tokens of context. Unknown fields are ignored on
//! purpose: llama-bench adds fields between releases.

use serde::Deserialize;

use crate::stats::{Sample, SampleError};

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
