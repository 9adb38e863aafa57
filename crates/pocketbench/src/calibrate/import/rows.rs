//! One test read from another tool's output, whatever the format: what it
//! timed, how fast, on which model and machine. The parsers make rows; the
//! importer maps each to a shape and a calibration point.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// An import that cannot be taken, located in its file: line where the
/// format has lines, row (the file's n-th test), and field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ImportError {
    /// The file, as given.
    pub file: PathBuf,
    /// 1-based line, where known.
    pub line: Option<usize>,
    /// 1-based row (test), where the problem is one row's.
    pub row: Option<usize>,
    /// The field (column, key) at fault.
    pub field: Option<String>,
    /// What is wrong, and what to do.
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        f.write_str(": ")?;
        if let Some(r) = self.row {
            write!(f, "row {r}: ")?;
        }
        if let Some(k) = &self.field {
            write!(f, "field `{k}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl ImportError {
    /// A problem with the file as a whole.
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        ImportError { file: file.to_path_buf(), line: None, row: None, field: None, message: message.into() }
    }

    /// The same, at `line`.
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }
}

/// Where a row is: its file, its index and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct At {
    /// The file.
    pub file: PathBuf,
    /// 1-based row.
    pub row: usize,
    /// 1-based line, where the format has lines.
    pub line: Option<usize>,
}

impl At {
    /// An error of this row, at `field` when given.
    pub fn error(&self, field: Option<&str>, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.clone(),
            line: self.line,
            row: Some(self.row),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

/// A speed and the spread of its repetitions, tokens per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The mean the tool printed.
    pub mean: f64,
    /// Its standard deviation, where printed.
    pub sd: Option<f64>,
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.sd {
            Some(sd) => write!(f, "{:.2} ± {sd:.2} tok/s", self.mean),
            None => write!(f, "{:.2} tok/s", self.mean),
        }
    }
}

/// What a test timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speeds {
    /// A prompt of `prompt` tokens into an empty cache.
    Prefill {
        /// Prompt tokens.
        prompt: u32,
        /// Prompt tokens per second.
        rate: Spread,
    },
    /// `gen` tokens decoded after `depth` tokens of context.
    Decode {
        /// Context before the first decoded token.
        depth: u32,
        /// Decoded tokens.
        gen: u32,
        /// Decoded tokens per second.
        rate: Spread,
    },
    /// A prompt, then decoding over its cache, each timed on its own.
    Both {
        /// Prompt tokens.
        prompt: u32,
        /// Decoded tokens.
        gen: u32,
        /// Prompt tokens per second.
        prefill: Spread,
        /// Decoded tokens per second.
        decode: Spread,
    },
}

impl Speeds {
    /// The tools' own name: `pp512`, `tg128`, `tg128@d1024`, `pp1024+tg128`.
    pub fn name(&self) -> String {
        match *self {
            Speeds::Prefill { prompt, .. } => format!("pp{prompt}"),
            Speeds::Decode { depth: 0 | 1, gen, .. } => format!("tg{gen}"),
            Speeds::Decode { depth, gen, .. } => format!("tg{gen}@d{depth}"),
            Speeds::Both { prompt, gen, .. } => format!("pp{prompt}+tg{gen}"),
        }
    }

    /// The figures in words.
    pub fn describe(&self) -> String {
        match self {
            Speeds::Prefill { rate, .. } => format!("prefill {rate}"),
            Speeds::Decode { rate, .. } => format!("decode {rate}"),
            Speeds::Both { prefill, decode, .. } => format!("prefill {prefill}, decode {decode}"),
        }
    }
}

/// The model a row names, as far as its tool records it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRef {
    /// Its file, where recorded (llama-bench's `model_filename`).
    pub file: Option<String>,
    /// Its name as printed (`qwen3 0.6B Q4_0`).
    pub label: String,
    /// Parameters as the tool counts them.
    pub params: Option<u64>,
    /// The storage type the tool names (`q4_0`, `q8_0`, `f16`), lower case.
    pub storage: Option<String>,
}

/// One test of an imported file.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Where it is.
    pub at: At,
    /// What it timed.
    pub speeds: Speeds,
    /// Repetitions behind the mean, where recorded.
    pub reps: Option<usize>,
    /// The model.
    pub model: ModelRef,
    /// Threads.
    pub threads: Option<u32>,
    /// The engine build, in words, where recorded.
    pub build: Option<String>,
    /// The CPU, as the tool names it.
    pub cpu: Option<String>,
    /// The backends, as the tool names them.
    pub backend: String,
    /// Whether the layers ran on a GPU.
    pub gpu: bool,
    /// Settings worth keeping in the point's source (`precision Low`).
    pub settings: Vec<String>,
}

/// One object of a JSON or CSV output, with typed getters whose errors
/// name the row and field.
pub struct Fields<'a> {
    /// Its keys and values (every CSV value is a string).
    pub map: &'a Map<String, Value>,
    /// Where it is.
    pub at: &'a At,
}

impl Fields<'_> {
    fn missing(&self, key: &str) -> ImportError {
        self.at.error(Some(key), "missing")
    }

    /// A string field.
    pub fn string(&self, key: &str) -> Result<String, ImportError> {
        match self.map.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Null) | None => Err(self.missing(key)),
            Some(other) => Ok(other.to_string()),
        }
    }

    /// A number field (a JSON number, or a CSV string holding one).
    pub fn number<T: std::str::FromStr>(&self, key: &str) -> Result<T, ImportError> {
        self.optional(key)?.ok_or_else(|| self.missing(key))
    }

    /// A number field that may be absent (an older version of the tool).
    pub fn optional<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, ImportError> {
        let text = match self.map.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
            Some(Value::String(s)) => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => return Err(self.at.error(Some(key), format!("`{other}` is not a number"))),
        };
        text.parse().map(Some).map_err(|_| self.at.error(Some(key), format!("`{text}` is not a number")))
    }

    /// A JSON array's length, where the field is an array.
    pub fn array_len(&self, key: &str) -> Option<usize> {
        self.map.get(key).and_then(Value::as_array).map(Vec::len)
    }
}

/// A positive, finite speed, or an error naming its field.
pub fn speed(at: &At, field: &str, v: f64) -> Result<f64, ImportError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(at.error(Some(field), format!("{v} is not a speed (tokens per second above 0)")))
    }
}

/// The 1-based line of byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}
