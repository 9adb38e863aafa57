//! MNN's `llm_bench -j FILE`: one JSON object per run, the settings shared by
//! its tests and a `results` array. A `prefill` test (`-p`) times a prompt, a
//! `decode` test (`-n`) times tokens decoded after a one-token context, and a
//! `prefill_and_decode` test (`-pg P,G`, the reference study's `-pg 1024,128`)
//! times a prompt and then `G` tokens decoded over its KV cache. llm_bench
//! keeps only the mean and standard deviation of its repetitions; [`run`]
//! therefore starts one process per repetition so that every repetition is a
//! sample of its own. Unknown fields are ignored: llm_bench adds them between
//! releases.
//!
//! MNN reads its own model format, not GGUF: the engine is pointed at the
//! `config.json` of an MNN export (`llmexport.py`) of the configuration, and
//! [`ModelInfo`] checks that export against the configuration first.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use super::process::RunError;

use super::process;
use pocketbench_types::arch::Shape;

const TOOL: &str = "llm_bench";

/// One llm_bench run (`-j` output).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The model name llm_bench prints (from its config).
    pub model: String,
    /// Size of the weight file, GiB (llm_bench's "modelSize").
    pub model_size: f64,
    /// `CPU`, `METAL`, `OPENCL` or `HEXAGON`.
    pub backend: String,
    /// Threads.
    pub threads: u32,
    /// Weights memory-mapped.
    #[serde(default)]
    pub use_mmap: bool,
    /// Precision level (0 normal, 1 high, 2 low).
    pub precision: i32,
    /// Memory level (0 normal, 1 high, 2 low).
    pub memory: i32,
    /// KV cache quantization mode (0 none).
    #[serde(default)]
    pub quant_kv: i32,
    /// Flash attention (1 on).
    #[serde(default)]
    pub flash_attention: i32,
    /// The tests.
    pub results: Vec<Test>,
}

/// What a test timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A prompt alone (`-p`).
    Prefill,
    /// Decoding after a one-token context (`-n`).
    Decode,
    /// A prompt, then decoding over its KV cache (`-pg`).
    PrefillAndDecode,
}

/// One test: the mean and standard deviation over its repetitions.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Test {
    /// What it timed.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_len: u32,
    /// Generated tokens.
    #[serde(default)]
    pub generate_len: u32,
    /// Tokens per second (`prefill` and `decode` tests).
    pub tps: Option<f64>,
    /// Prompt tokens per second (`prefill_and_decode`).
    pub prefill_tps: Option<f64>,
    /// Generated tokens per second (`prefill_and_decode`).
    pub decode_tps: Option<f64>,
    /// Seconds to load the model (mean of llm_bench's three loads), with `-load true`.
    pub loading_time: Option<f64>,
}

impl Test {
    /// `pp512`, `tg128`, `pp1024+tg128`: llm_bench's own names.
    pub fn name(&self) -> String {
        match self.kind {
            Kind::Prefill => format!("pp{}", self.prompt_len),
            Kind::Decode => format!("tg{}", self.generate_len),
            Kind::PrefillAndDecode => format!("pp{}+tg{}", self.prompt_len, self.generate_len),
        }
    }

    /// Prompt and decode speeds, when this test has both.
    pub fn speeds(&self) -> Option<(f64, f64)> {
        match self.kind {
            Kind::PrefillAndDecode => Some((self.prefill_tps?, self.decode_tps?)),
            _ => None,
        }
    }
}

/// Parse one `-j` file.
pub fn parse(text: &str) -> Result<Report, serde_json::Error> {
    serde_json::from_str(text)
}

/// What pocketbench checks of an MNN export before running it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The export's `config.json`.
    pub config: PathBuf,
    /// `model_type` of its `llm_config.json`.
    pub model_type: String,
    /// Hidden size.
    pub hidden: u32,
    /// Layers.
    pub layers: u32,
    /// Bytes of the graph and weight files the config names.
    pub file_bytes: u64,
}

/// An MNN export that cannot stand for the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file is missing or unreadable.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not the JSON expected.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The export is of another shape.
    #[error("the MNN export at {path} has {what} {found}, but the configuration has {expected}")]
    Mismatch {
        /// The export's config.
        path: String,
        /// Which dimension.
        what: &'static str,
        /// The export's value.
        found: u32,
        /// The configuration's.
        expected: u32,
    },
}

#[derive(Deserialize)]
struct Config {
    #[serde(default = "default_graph")]
    llm_model: String,
    #[serde(default = "default_weight")]
    llm_weight: String,
}

fn default_graph() -> String {
    "llm.mnn".into()
}

fn default_weight() -> String {
    "llm.mnn.weight".into()
}

#[derive(Deserialize)]
struct LlmConfig {
    #[serde(default)]
    model_type: String,
    hidden_size: u32,
    layer_nums: u32,
}

impl ModelInfo {
    /// Read the export `config` names (its `config.json`; `llm_config.json`
    /// beside it) and check its hidden size and layers against `shape`.
    pub fn check(config: &Path, shape: &Shape) -> Result<ModelInfo, ModelError> {
        let dir = config.parent().unwrap_or(Path::new("."));
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|source| ModelError::Io { path: p.display().to_string(), source })
        };
        let json = |p: &Path, e: serde_json::Error| ModelError::Format {
            path: p.display().to_string(),
            message: e.to_string(),
        };
        let c: Config = serde_json::from_str(&read(config)?).map_err(|e| json(config, e))?;
        let llm_path = dir.join("llm_config.json");
        let l: LlmConfig = serde_json::from_str(&read(&llm_path)?).map_err(|e| json(&llm_path, e))?;
        let mismatch =
            |what, found, expected| ModelError::Mismatch { path: config.display().to_string(), what, found, expected };
        if l.hidden_size != shape.hidden {
            return Err(mismatch("hidden size", l.hidden_size, shape.hidden));
        }
        if l.layer_nums != shape.layers {
            return Err(mismatch("layers", l.layer_nums, shape.layers));
        }
        let mut file_bytes = 0;
        for f in [&c.llm_model, &c.llm_weight] {
            let p = dir.join(f);
            file_bytes +=
                std::fs::metadata(&p).map_err(|source| ModelError::Io { path: p.display().to_string(), source })?.len();
        }
        Ok(ModelInfo {
            config: config.to_path_buf(),
            model_type: l.model_type,
            hidden: l.hidden_size,
            layers: l.layer_nums,
            file_bytes,
        })
    }
}

/// One measurement through llm_bench.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The llm_bench executable.
    pub bin: &'a Path,
    /// The export's `config.json`.
    pub config: &'a Path,
    /// Prompt tokens.
    pub prompt: u32,
    /// Generated tokens.
    pub gen: u32,
    /// Threads.
    pub threads: u32,
    /// Repetitions: one llm_bench process each.
    pub reps: u32,
    /// Give up on one process after this long.
    pub timeout: Duration,
    /// Where the `-j` files go.
    pub out_dir: &'a Path,
}

/// The command line of repetition `rep`: CPU backend, the workload as `-pg`
/// (with `-p 0 -n 0`, else llm_bench adds its default pp512 and tg128 tests),
/// one measured repetition after llm_bench's own warm-up, load time timed.
pub fn args(inv: &Invocation<'_>, rep: u32) -> Vec<String> {
    let json = inv.out_dir.join(format!("llm_bench-{rep}.json"));
    [
        "-m",
        &inv.config.to_string_lossy(),
        "-a",
        "cpu",
        "-t",
        &inv.threads.to_string(),
        "-p",
        "0",
        "-n",
        "0",
        "-pg",
        &format!("{},{}", inv.prompt, inv.gen),
        "-rep",
        "1",
        "-load",
        "true",
        "-j",
        &json.to_string_lossy(),
    ]
    .map(String::from)
    .to_vec()
}

/// What the repetitions produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The first run's report (settings; its test is `tests[0]`).
    pub report: Report,
    /// The `-pg` test of every repetition.
    pub tests: Vec<Test>,
    /// Largest VmHWM seen of the llm_bench processes.
    pub peak_hwm_bytes: u64,
}

/// Run `reps` llm_bench processes and collect each one's `-pg` test.
pub fn run(inv: &Invocation<'_>) -> Result<Output, RunError> {
    let parse_error = |message: String| RunError::Parse { tool: TOOL, message };
    let (mut report, mut tests, mut peak) = (None, Vec::new(), 0);
    for rep in 0..inv.reps {
        let a = args(inv, rep);
        let json = a.last().expect("-j has a path");
        // A file left from before must not pass for this run's output.
        let _ = std::fs::remove_file(json);
        let done = process::run(TOOL, inv.bin, &a, inv.timeout)?;
        peak = peak.max(done.peak_hwm_bytes);
        let text = std::fs::read_to_string(json)
            .map_err(|e| parse_error(format!("no -j output at {json} ({e}); it printed: {}", done.stdout.trim())))?;
        let r = parse(&text).map_err(|e| parse_error(format!("{json}: not llm_bench JSON output: {e}")))?;
        let test = r
            .results
            .iter()
            .find(|t| t.kind == Kind::PrefillAndDecode && t.prompt_len == inv.prompt && t.generate_len == inv.gen)
            .filter(|t| t.speeds().is_some())
            .cloned()
            .ok_or_else(|| RunError::Missing { tool: TOOL, test: format!("pp{}+tg{}", inv.prompt, inv.gen) })?;
        tests.push(test);
        report.get_or_insert(r);
    }
    let report = report.ok_or_else(|| parse_error("no repetitions were asked for".into()))?;
    Ok(Output { report, tests, peak_hwm_bytes: peak })
}

/// The llm_bench to run: `$POCKETBENCH_MNN_LLM_BENCH`, else `llm_bench` on `PATH`.
pub fn locate() -> Option<PathBuf> {
    process::locate("POCKETBENCH_MNN_LLM_BENCH", "llm_bench")
}
