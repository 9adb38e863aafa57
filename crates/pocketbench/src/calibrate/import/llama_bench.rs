//! llama-bench's machine-readable outputs: `-o json` (an array of test
//! objects), `-o jsonl` (one object a line) and `-o csv` (a header of field
//! names, then one quoted row a test). The three carry the same fields
//! (`tools/llama-bench/llama-bench.cpp`, `test::get_fields`); CSV leaves out
//! the per-repetition `samples_ts`. Unknown fields are ignored, as they are
//! added between releases; the ones an import needs are required.
//!
//! A `pp` test (`n_gen` = 0) times a prompt into an empty cache; a `tg` test
//! (`n_prompt` = 0) times `n_gen` decoded tokens after `n_depth` tokens of
//! context. A `pg` test (both) times the two together, and its one speed is
//! neither: it is refused, as is a prompt timed at depth, which no
//! pocketbench workload describes.

use std::path::Path;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::rows::{line_of, speed, At, Fields, ImportError, ModelRef, Row, Speeds, Spread};
use super::Format;

/// The fields every row must have.
pub const REQUIRED: &[&str] = &[
    "build_commit",
    "cpu_info",
    "backends",
    "model_filename",
    "model_type",
    "model_n_params",
    "n_threads",
    "n_prompt",
    "n_gen",
    "avg_ts",
];

/// One test's object and the line it starts on.
type Numbered = (usize, Map<String, Value>);

/// Every test of `text`, read as `format` (one of llama-bench's three).
pub fn rows(file: &Path, text: &str, format: Format) -> Result<Vec<Row>, ImportError> {
    let objects = match format {
        Format::LlamaBenchJson => json_objects(file, text)?,
        Format::LlamaBenchJsonl => jsonl_objects(file, text)?,
        _ => csv_objects(file, text)?,
    };
    if objects.is_empty() {
        return Err(ImportError::file(file, format!("no tests in this {}", format.describe())));
    }
    objects
        .iter()
        .enumerate()
        .map(|(i, (line, map))| {
            let at = At { file: file.to_path_buf(), row: i + 1, line: Some(*line) };
            row(&Fields { map, at: &at })
        })
        .collect()
}

fn json_objects(file: &Path, text: &str) -> Result<Vec<Numbered>, ImportError> {
    let raw: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| {
        ImportError::file(file, format!("not llama-bench -o json output: {e}")).at_line(e.line().max(1))
    })?;
    raw.iter()
        .map(|r| {
            let line = line_of(text, (r.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize));
            let map = serde_json::from_str::<Map<String, Value>>(r.get())
                .map_err(|e| ImportError::file(file, format!("a test that is not a JSON object: {e}")).at_line(line))?;
            Ok((line, map))
        })
        .collect()
}

fn jsonl_objects(file: &Path, text: &str) -> Result<Vec<Numbered>, ImportError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str::<Map<String, Value>>(l)
                .map(|m| (i + 1, m))
                .map_err(|e| ImportError::file(file, format!("not a llama-bench -o jsonl line: {e}")).at_line(i + 1))
        })
        .collect()
}

fn csv_objects(file: &Path, text: &str) -> Result<Vec<Numbered>, ImportError> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| ImportError::file(file, format!("not llama-bench -o csv output: {e}")).at_line(1))?
        .clone();
    let mut all = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(1, |p| p.line() as usize);
            ImportError::file(file, format!("not llama-bench -o csv output: {e}")).at_line(line)
        })?;
        let line = record.position().map_or(1, |p| p.line() as usize);
        let map = headers.iter().zip(record.iter()).map(|(k, v)| (k.to_string(), Value::String(v.into()))).collect();
        all.push((line, map));
    }
    Ok(all)
}

/// The storage type llama.cpp names last in `model_type` (`qwen3 0.6B
/// Q4_0`, `llama 1B Q4_K - Medium`, `qwen3 0.6B all F32`), lower case.
pub fn storage_of(model_type: &str) -> Option<String> {
    let words: Vec<&str> = model_type.split_whitespace().collect();
    let i = words.iter().position(|w| {
        let w = w.to_ascii_lowercase();
        w.starts_with('q') && w.contains('_') || w == "f16" || w == "f32" || w == "bf16"
    })?;
    Some(words[i].to_ascii_lowercase())
}

/// Whether llama-bench's `backends` and `n_gpu_layers` put the layers on a
/// GPU (`CPU`, `BLAS` and the CPU's own accelerators do not).
fn on_gpu(backends: &str, gpu_layers: Option<i64>) -> bool {
    let gpu = backends
        .split(',')
        .map(|b| b.trim().to_ascii_lowercase())
        .any(|b| !b.is_empty() && !matches!(b.as_str(), "cpu" | "blas" | "amx" | "kleidiai" | "accelerate" | "rpc"));
    gpu && gpu_layers.is_none_or(|n| n > 0)
}

fn row(f: &Fields<'_>) -> Result<Row, ImportError> {
    let at = f.at;
    for key in REQUIRED {
        if !f.map.contains_key(*key) {
            return Err(at.error(
                Some(key),
                format!(
                    "missing: an import needs llama-bench's {} (written by -o json, jsonl and csv since 2024)",
                    REQUIRED.join(", ")
                ),
            ));
        }
    }
    let (prompt, gen): (u32, u32) = (f.number("n_prompt")?, f.number("n_gen")?);
    let depth: u32 = f.optional("n_depth")?.unwrap_or(0);
    let rate = Spread { mean: speed(at, "avg_ts", f.number("avg_ts")?)?, sd: f.optional("stddev_ts")? };
    let speeds = match (prompt, gen) {
        (0, 0) => return Err(at.error(Some("n_prompt"), "n_prompt and n_gen are both 0: the row times nothing")),
        (p, 0) if depth > 0 => {
            return Err(at.error(
                Some("n_depth"),
                format!(
                    "pp{p}@d{depth} times a prompt after {depth} tokens of context; pocketbench's prefill starts from an empty cache: import the tests at depth 0"
                ),
            ))
        }
        (p, 0) => Speeds::Prefill { prompt: p, rate },
        (0, g) => Speeds::Decode { depth, gen: g, rate },
        (p, g) => {
            return Err(at.error(
                Some("n_prompt"),
                format!(
                    "pp{p}+tg{g} (llama-bench -pg) times the prompt and the decode together, and its one speed is neither: import its pp{p} and tg{g} tests (-p {p} -n {g})"
                ),
            ))
        }
    };
    let model_type = f.string("model_type")?;
    let backend = f.string("backends")?;
    let build_number: Option<i64> = f.optional("build_number")?;
    let commit = f.string("build_commit")?;
    Ok(Row {
        at: at.clone(),
        speeds,
        reps: f.array_len("samples_ts"),
        model: ModelRef {
            file: Some(f.string("model_filename")?),
            storage: storage_of(&model_type),
            label: model_type,
            params: Some(f.number("model_n_params")?),
        },
        threads: Some(f.number("n_threads")?),
        build: Some(match build_number {
            Some(n) => format!("llama.cpp build {n} ({commit})"),
            None => format!("llama.cpp {commit}"),
        }),
        cpu: Some(f.string("cpu_info")?),
        gpu: on_gpu(&backend, f.optional("n_gpu_layers")?),
        backend,
        settings: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_is_the_ftype_word() {
        assert_eq!(storage_of("qwen3 0.6B Q4_0").as_deref(), Some("q4_0"));
        assert_eq!(storage_of("llama 1B Q4_K - Medium").as_deref(), Some("q4_k"));
        assert_eq!(storage_of("qwen3 ?B all F32").as_deref(), Some("f32"));
        assert_eq!(storage_of("qwen2 1.5B F16").as_deref(), Some("f16"));
        assert_eq!(storage_of("qwen3 ?B").as_deref(), None);
    }

    #[test]
    fn gpu_means_a_gpu_backend_with_layers_on_it() {
        assert!(!on_gpu("CPU", Some(99)));
        assert!(!on_gpu("BLAS", Some(99)));
        assert!(on_gpu("Metal,BLAS", Some(99)));
        assert!(!on_gpu("Metal,BLAS", Some(0)));
        assert!(on_gpu("CUDA", None));
    }
}
