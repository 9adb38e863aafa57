//! Writing a GGUF file: magic, version, counts, metadata, tensor infos,
//! padding, then each tensor's bytes (GGUF specification, version 3).

use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::Path;

use pocketbench_types::arch::Shape;

use super::layout::{file_type, ggml_type_id};
use super::weights::{generate_with, CHUNK_ELEMS};
use super::{tensor_plan, GgufError, Storage, TensorPlan, ALIGN, INIT_STD, RMS_EPS, ROPE_THETA};

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Meta {
    /// GGUF UINT32.
    U32(u32),
    /// GGUF FLOAT32.
    F32(f32),
    /// GGUF STRING.
    Str(String),
    /// GGUF ARRAY of STRING.
    Strs(Vec<String>),
    /// GGUF ARRAY of INT32.
    I32s(Vec<i32>),
}

/// The GPT-2 byte-to-unicode table: printable bytes map to themselves,
/// the others to code points from 256 upward (as in GPT-2's `encoder.py`).
fn gpt2_byte_tokens() -> Vec<String> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut next = 256u32;
    (0u32..256)
        .map(|b| {
            let c = if printable(b) {
                b
            } else {
                next += 1;
                next - 1
            };
            char::from_u32(c).map(String::from).unwrap_or_default()
        })
        .collect()
}

/// The llama.cpp architecture a shape is written as: `qwen3` with QK-norm,
/// `llama` without.
pub fn architecture(s: &Shape) -> &'static str {
    if s.qk_norm {
        "qwen3"
    } else {
        "llama"
    }
}

/// The metadata key holding the exported shape's [`Shape::canonical`] name.
pub const SHAPE_KEY: &str = "pocketbench.shape";

/// llama.cpp-compatible `qwen3` or `llama` metadata with a minimal tokenizer.
pub fn metadata(s: &Shape, name: &str) -> Vec<(String, Meta)> {
    use Meta::*;
    let v = s.vocab as usize;
    let mut tokens = gpt2_byte_tokens();
    tokens.truncate(v.saturating_sub(1));
    while tokens.len() + 1 < v {
        tokens.push(format!("<pb{}>", tokens.len()));
    }
    tokens.push("<|endoftext|>".into());
    let mut types = vec![1i32; tokens.len()]; // NORMAL
    if let Some(last) = types.last_mut() {
        *last = 3; // CONTROL
    }
    let eos = (tokens.len() - 1) as u32;
    let kv = |k: &str, v: Meta| (k.to_string(), v);
    let arch = architecture(s);
    let a = |k: &str| format!("{arch}.{k}");
    vec![
        kv("general.architecture", Str(arch.into())),
        kv("general.name", Str(name.into())),
        kv("general.alignment", U32(ALIGN as u32)),
        kv("general.file_type", U32(Storage::of(s.quant).map_or(2, |st| file_type(st.dtype)))),
        // candle's quantized models compute RoPE tables in this dtype (0 = f32); f16 tables
        // would round positions past 2048. llama.cpp ignores the key.
        kv("general.dtype", U32(0)),
        // The whole shape, quantization group included, for tools that map
        // a result on this file back to it (`calibrate --import`).
        kv(SHAPE_KEY, Str(s.canonical())),
        kv(&a("context_length"), U32(s.context)),
        kv(&a("embedding_length"), U32(s.hidden)),
        kv(&a("block_count"), U32(s.layers)),
        kv(&a("feed_forward_length"), U32(s.ffn)),
        kv(&a("attention.head_count"), U32(s.heads)),
        kv(&a("attention.head_count_kv"), U32(s.kv_heads)),
        kv(&a("attention.key_length"), U32(s.head_dim)),
        kv(&a("attention.value_length"), U32(s.head_dim)),
        kv(&a("attention.layer_norm_rms_epsilon"), F32(RMS_EPS)),
        kv(&a("rope.freq_base"), F32(ROPE_THETA)),
        // llama.cpp's `llama` rotates all of a head; candle's quantized_llama reads it.
        kv(&a("rope.dimension_count"), U32(s.head_dim)),
        kv("tokenizer.ggml.model", Str("gpt2".into())),
        kv("tokenizer.ggml.pre", Str("qwen2".into())),
        kv("tokenizer.ggml.tokens", Strs(tokens)),
        kv("tokenizer.ggml.token_type", I32s(types)),
        kv("tokenizer.ggml.merges", Strs(Vec::new())),
        kv("tokenizer.ggml.bos_token_id", U32(eos)),
        kv("tokenizer.ggml.eos_token_id", U32(eos)),
        kv("tokenizer.ggml.padding_token_id", U32(eos)),
    ]
}

fn put_str<W: Write>(w: &mut W, s: &str) -> std::io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

fn put_meta<W: Write>(w: &mut W, m: &Meta) -> std::io::Result<()> {
    match m {
        Meta::U32(v) => {
            w.write_all(&4u32.to_le_bytes())?;
            w.write_all(&v.to_le_bytes())
        }
        Meta::F32(v) => {
            w.write_all(&6u32.to_le_bytes())?;
            w.write_all(&v.to_le_bytes())
        }
        Meta::Str(s) => {
            w.write_all(&8u32.to_le_bytes())?;
            put_str(w, s)
        }
        Meta::Strs(v) => {
            w.write_all(&9u32.to_le_bytes())?;
            w.write_all(&8u32.to_le_bytes())?;
            w.write_all(&(v.len() as u64).to_le_bytes())?;
            v.iter().try_for_each(|s| put_str(w, s))
        }
        Meta::I32s(v) => {
            w.write_all(&9u32.to_le_bytes())?;
            w.write_all(&5u32.to_le_bytes())?;
            w.write_all(&(v.len() as u64).to_le_bytes())?;
            v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))
        }
    }
}

fn pad<W: Write + Seek>(w: &mut W) -> std::io::Result<()> {
    let pos = w.stream_position()?;
    let n = (ALIGN - pos % ALIGN) % ALIGN;
    w.write_all(&vec![0u8; n as usize])
}

/// Write the model to `path` (via a temporary file renamed at the end, so a
/// killed build never leaves a truncated model behind).
pub fn write_model(s: &Shape, seed: u64, path: &Path) -> Result<(), GgufError> {
    write_model_with_std(s, seed, path, INIT_STD)
}

/// [`write_model`] with matrices of standard deviation `std`: larger weights
/// make attention sharp, so that tests comparing engines see a wrong
/// position encoding (at 0.02 attention is nearly uniform and hides it).
pub fn write_model_with_std(s: &Shape, seed: u64, path: &Path, std: f32) -> Result<(), GgufError> {
    let plan = tensor_plan(s)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| GgufError::Io { path: dir.to_path_buf(), source })?;
    }
    // Its own temporary file: two sweeps (or tests) building the same
    // cached model at once each rename a whole file into place. It is
    // removed when anything fails, so failures leave nothing behind.
    let tmp = crate::entry::temporary_sibling(path, "partial");
    let written = write_file(s, &plan, seed, std, &tmp).and_then(|()| {
        std::fs::rename(&tmp, path).map_err(|source| GgufError::Io { path: path.to_path_buf(), source })
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write_file(s: &Shape, plan: &[TensorPlan], seed: u64, std: f32, tmp: &Path) -> Result<(), GgufError> {
    let meta = metadata(s, &format!("pocketbench {} ({s})", s.id()));
    let ioerr = |source| GgufError::Io { path: tmp.to_path_buf(), source };
    let mut w = BufWriter::new(File::create(tmp).map_err(ioerr)?);
    (|| -> std::io::Result<()> {
        w.write_all(b"GGUF")?;
        w.write_all(&3u32.to_le_bytes())?;
        w.write_all(&(plan.len() as u64).to_le_bytes())?;
        w.write_all(&(meta.len() as u64).to_le_bytes())?;
        for (k, v) in &meta {
            put_str(&mut w, k)?;
            put_meta(&mut w, v)?;
        }
        let mut offset = 0u64;
        for t in plan {
            put_str(&mut w, &t.name)?;
            w.write_all(&(t.dims.len() as u32).to_le_bytes())?;
            for d in t.dims.iter().rev() {
                w.write_all(&(*d as u64).to_le_bytes())?;
            }
            w.write_all(&ggml_type_id(t.dtype).to_le_bytes())?;
            w.write_all(&offset.to_le_bytes())?;
            offset += t.bytes().div_ceil(ALIGN) * ALIGN;
        }
        pad(&mut w)
    })()
    .map_err(ioerr)?;
    for t in plan {
        generate_with(t, seed, CHUNK_ELEMS, std, |b| w.write_all(b))?;
        pad(&mut w).map_err(ioerr)?;
    }
    w.flush().map_err(ioerr)
}
