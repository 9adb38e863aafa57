//! llama.cpp's `llama-bench -o json`: an array with one object per test. A
//! prompt-processing test (`pp`, n_gen = 0) times a prompt of `n_prompt`
//! tokens; a text-generation test (`tg`, n_prompt = 0) times `n_gen` decoded
//! tokens after `n_depth` tokens of context. Unknown fields are ignored on
//! purpose: llama-bench adds fields between releases.
//!
//! [`run`] runs it as an engine of the probe (`--engine llama-bench`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::meter::MemoryStatus;
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

/// Running llama-bench failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It could not be started.
    #[error("cannot start {bin}: {source}")]
    Spawn {
        /// The executable.
        bin: String,
        /// The cause.
        source: std::io::Error,
    },
    /// It failed.
    #[error("llama-bench {args} failed ({status}): {stderr}")]
    Failed {
        /// Its arguments.
        args: String,
        /// Exit status.
        status: String,
        /// Last lines of its stderr.
        stderr: String,
    },
    /// It ran past the timeout and was killed.
    #[error("llama-bench ran longer than {0:?} and was killed")]
    Timeout(Duration),
    /// Its output did not parse or lacked a test.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The expected test is not in the output.
    #[error("llama-bench output has no {0} test")]
    Missing(String),
}

/// Run both command lines and pick out the two tests.
pub fn run(inv: &Invocation<'_>) -> Result<Output, RunError> {
    let mut peak = 0;
    let mut tests = Vec::new();
    for a in args(inv) {
        let (text, hwm) = run_one(inv.bin, &a, inv.timeout)?;
        peak = peak.max(hwm);
        tests.extend(parse(&text)?);
    }
    let find =
        |name: String, f: &dyn Fn(&Test) -> bool| tests.iter().find(|t| f(t)).cloned().ok_or(RunError::Missing(name));
    let prefill = find(format!("pp{}", inv.prompt), &|t| t.n_prompt == inv.prompt && t.n_gen == 0)?;
    let decode = find(format!("tg{}@d{}", inv.gen, inv.prompt), &|t| {
        t.n_prompt == 0 && t.n_gen == inv.gen && t.n_depth == inv.prompt
    })?;
    Ok(Output { prefill, decode, peak_hwm_bytes: peak })
}

fn run_one(bin: &Path, args: &[String], timeout: Duration) -> Result<(String, u64), RunError> {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| RunError::Spawn { bin: bin.display().to_string(), source })?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let (pid, start) = (child.id(), Instant::now());
    let mut hwm = 0;
    let status = loop {
        if let Some(m) = MemoryStatus::of(pid) {
            hwm = hwm.max(m.vm_hwm);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(source) => return Err(RunError::Spawn { bin: bin.display().to_string(), source }),
        }
    };
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(RunError::Failed {
            args: args.join(" "),
            status: status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    Ok((stdout, hwm))
}

/// The llama-bench to run: `$POCKETBENCH_LLAMA_BENCH`, else `llama-bench`
/// on `PATH`.
pub fn locate() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("POCKETBENCH_LLAMA_BENCH") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("llama-bench")).find(|p| p.is_file())
}
