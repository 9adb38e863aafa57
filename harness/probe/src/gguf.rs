//! Writing a configuration as a GGUF file with seeded random weights, tensor
//! by tensor, so that building a 1.3B model never holds more than one chunk
//! of f32 weights in memory.
//!
//! Layout per the GGUF specification (ggml `docs/gguf.md`, version 3): magic
//! `GGUF`, version, tensor count, metadata count, metadata key/values, tensor
//! infos (name, dims innermost first, ggml type, offset), padding to
//! `general.alignment` (32), then each tensor's bytes, each padded to 32.
//! Metadata follows llama.cpp's architecture keys: `qwen3` for a shape with
//! QK-norm (Qwen3), `llama` for one without (SmolLM2, MobileLLM, Llama 3.2),
//! with a minimal
//! byte-level BPE tokenizer (the 256 GPT-2 byte tokens, filler tokens and an
//! end-of-text token) so llama.cpp and MNN's converters accept the file.

use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use pocketbench_types::arch::{Quant, Shape};

/// Standard deviation of the random matrices (the usual transformer init).
pub const INIT_STD: f32 = 0.02;
/// RMSNorm epsilon written into the file.
pub const RMS_EPS: f32 = 1e-6;
/// RoPE base (Qwen3).
pub const ROPE_THETA: f32 = 1_000_000.0;
const ALIGN: u64 = 32;
/// Elements generated and quantized at a time.
const CHUNK_ELEMS: usize = 1 << 22;

/// Building a model file failed.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    /// The shape cannot be stored in the format.
    #[error("{0}")]
    Unsupported(String),
    /// candle refused a tensor.
    #[error("quantizing {tensor}: {source}")]
    Candle {
        /// Tensor name.
        tensor: String,
        /// The error.
        source: candle_core::Error,
    },
    /// Writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// How a quantization is stored in the file: a ggml type, and the number of
/// consecutive weights of a row that share one scale (and minimum).
///
/// The ggml types store their own blocks (`group` = the block: 32, or 256
/// for the K types). The generic `int4 group=G` (G a multiple of 32) is
/// stored as ggml Q4_0 blocks of 32 (Q4_1 with `zero`), and `int8 group=G`
/// as Q8_0, with each group's scale (and minimum) computed over all G of its
/// weights and repeated in each of its G/32 blocks: the weights are exactly
/// the group-G ones, llama.cpp reads the file as plain Q4_0/Q4_1/Q8_0, and
/// the only difference from a compact group-G format is size (Q4_1 keeps
/// 5.0 bits per weight where `int4 group=64 zero` needs 4.5). This is the
/// reference study's own INT4 file: "Q4_1-style with group 64 stored as two
/// group-32 blocks".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storage {
    /// The ggml type of the blocks.
    pub dtype: GgmlDType,
    /// Weights per shared scale.
    pub group: usize,
}

impl Storage {
    /// How `q` is stored, or why no engine here stores it.
    pub fn of(q: Quant) -> Result<Storage, GgufError> {
        let native = |dtype: GgmlDType| Storage { dtype, group: dtype.block_size() };
        Ok(match q {
            Quant::Q4_0 => native(GgmlDType::Q4_0),
            Quant::Q4_1 => native(GgmlDType::Q4_1),
            Quant::Q8_0 => native(GgmlDType::Q8_0),
            Quant::Q4K => native(GgmlDType::Q4K),
            Quant::Q6K => native(GgmlDType::Q6K),
            Quant::F16 => native(GgmlDType::F16),
            Quant::F32 => native(GgmlDType::F32),
            Quant::Int { bits: 4, group, zero_point } if group % 32 == 0 => {
                Storage { dtype: if zero_point { GgmlDType::Q4_1 } else { GgmlDType::Q4_0 }, group: group as usize }
            }
            Quant::Int { bits: 8, group, zero_point: false } if group % 32 == 0 => {
                Storage { dtype: GgmlDType::Q8_0, group: group as usize }
            }
            Quant::Int { .. } => {
                return Err(GgufError::Unsupported(format!(
                    "`{q}` has no storage that llama.cpp or the native engine reads; the probe builds \
                     q4_0, q4_1, q8_0, q4_k, q6_k, f16, f32, `int4 group=G [zero]` and `int8 group=G` \
                     (G a multiple of 32)"
                )))
            }
        })
    }

    /// Whether groups span several ggml blocks (scales repeated).
    pub fn is_grouped(self) -> bool {
        self.group != self.dtype.block_size()
    }

    /// How the weights are stored, for the result's `methods`.
    pub fn describe(self, q: Quant) -> String {
        let name = format!("{:?}", self.dtype).to_ascii_lowercase();
        if self.is_grouped() {
            let stored = self.dtype.type_size() as f64 * 8.0 / self.dtype.block_size() as f64;
            format!(
                "{q} stored as ggml {name} blocks of {}, each group's scale{} repeated in its {} blocks \
                 ({stored:.2} bits per weight stored; the compact form is {:.2})",
                self.dtype.block_size(),
                if self.dtype == GgmlDType::Q4_1 { " and minimum" } else { "" },
                self.group / self.dtype.block_size(),
                q.bits_per_weight()
            )
        } else {
            format!("{q} as ggml {name}")
        }
    }
}

/// ggml storage type of a quantization.
pub fn ggml_dtype(q: Quant) -> Result<GgmlDType, GgufError> {
    Storage::of(q).map(|s| s.dtype)
}

/// ggml's `ggml_type` number of a storage type (`ggml.h`).
fn ggml_type_id(t: GgmlDType) -> u32 {
    match t {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q4_1 => 3,
        GgmlDType::Q5_0 => 6,
        GgmlDType::Q5_1 => 7,
        GgmlDType::Q8_0 => 8,
        GgmlDType::Q8_1 => 9,
        GgmlDType::Q2K => 10,
        GgmlDType::Q3K => 11,
        GgmlDType::Q4K => 12,
        GgmlDType::Q5K => 13,
        GgmlDType::Q6K => 14,
        GgmlDType::Q8K => 15,
        GgmlDType::BF16 => 30,
    }
}

/// llama.cpp `llama_ftype` of a storage type (for `general.file_type`).
fn file_type(t: GgmlDType) -> u32 {
    match t {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q4_1 => 3,
        GgmlDType::Q8_0 => 7,
        GgmlDType::Q4K => 15,
        GgmlDType::Q6K => 18,
        _ => 2,
    }
}

/// One tensor of the model: name, candle-order dims (rows, cols) and type.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorPlan {
    /// GGUF name (`blk.0.attn_q.weight`).
    pub name: String,
    /// Dimensions, outermost first (a weight is `(out, in)`).
    pub dims: Vec<usize>,
    /// Storage type.
    pub dtype: GgmlDType,
    /// Weights of a row sharing one scale (the block, unless grouped).
    pub group: usize,
}

impl TensorPlan {
    /// Number of elements.
    pub fn elems(&self) -> usize {
        self.dims.iter().product()
    }
    fn bytes(&self) -> u64 {
        (self.elems() / self.dtype.block_size() * self.dtype.type_size()) as u64
    }
    /// Norm weights (1-D) are ones; matrices are random.
    pub fn is_norm(&self) -> bool {
        self.dims.len() == 1
    }
}

/// Every tensor of a shape, in file order.
pub fn tensor_plan(s: &Shape) -> Result<Vec<TensorPlan>, GgufError> {
    let st = Storage::of(s.quant)?;
    let q = st.dtype;
    let (d, h, k, dh, f, v) = (
        s.hidden as usize,
        s.heads as usize,
        s.kv_heads as usize,
        s.head_dim as usize,
        s.ffn as usize,
        s.vocab as usize,
    );
    for (what, cols) in [("hidden", d), ("heads x head-dim", h * dh), ("ffn", f)] {
        if cols % st.group != 0 {
            return Err(GgufError::Unsupported(format!(
                "{} stores rows in {} of {}; {what} = {cols} is not a multiple",
                s.quant,
                if st.is_grouped() { "groups" } else { "blocks" },
                st.group
            )));
        }
    }
    let m =
        |name: String, rows: usize, cols: usize| TensorPlan { name, dims: vec![rows, cols], dtype: q, group: st.group };
    let n = |name: String, len: usize| TensorPlan { name, dims: vec![len], dtype: GgmlDType::F32, group: 1 };
    let mut t = vec![m("token_embd.weight".into(), v, d)];
    for i in 0..s.layers as usize {
        let p = format!("blk.{i}");
        t.push(n(format!("{p}.attn_norm.weight"), d));
        t.push(m(format!("{p}.attn_q.weight"), h * dh, d));
        t.push(m(format!("{p}.attn_k.weight"), k * dh, d));
        t.push(m(format!("{p}.attn_v.weight"), k * dh, d));
        t.push(m(format!("{p}.attn_output.weight"), d, h * dh));
        if s.qk_norm {
            t.push(n(format!("{p}.attn_q_norm.weight"), dh));
            t.push(n(format!("{p}.attn_k_norm.weight"), dh));
        }
        t.push(n(format!("{p}.ffn_norm.weight"), d));
        t.push(m(format!("{p}.ffn_gate.weight"), f, d));
        t.push(m(format!("{p}.ffn_up.weight"), f, d));
        t.push(m(format!("{p}.ffn_down.weight"), d, f));
    }
    t.push(n("output_norm.weight".into(), d));
    if !s.tied {
        t.push(m("output.weight".into(), v, d));
    }
    Ok(t)
}

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

/// The random stream of one tensor: seeded by the model seed and the tensor's name.
fn stream(t: &TensorPlan, seed: u64, std: f32) -> (StdRng, Normal<f32>) {
    let rng = StdRng::seed_from_u64(seed ^ pocketbench_types::fnv1a(t.name.as_bytes()));
    (rng, Normal::new(0.0f32, std).expect("a positive standard deviation"))
}

/// A whole tensor's f32 values at once, the same values [`generate`] streams
/// (for tests and small shapes: this holds the whole tensor in memory).
pub fn f32_values(t: &TensorPlan, seed: u64) -> Vec<f32> {
    if t.is_norm() {
        return vec![1.0; t.elems()];
    }
    let (mut rng, normal) = stream(t, seed, INIT_STD);
    (0..t.elems()).map(|_| normal.sample(&mut rng)).collect()
}

/// Seeded random values of one tensor, generated and quantized chunk by
/// chunk (whole rows, so block boundaries are respected); `sink` receives
/// the stored bytes in order.
pub fn generate(t: &TensorPlan, seed: u64, sink: impl FnMut(&[u8]) -> std::io::Result<()>) -> Result<(), GgufError> {
    generate_with(t, seed, CHUNK_ELEMS, INIT_STD, sink)
}

/// [`generate`] with a chosen chunk size (elements), so tests can check that
/// chunking does not change a byte.
pub fn generate_chunked(
    t: &TensorPlan,
    seed: u64,
    chunk_elems: usize,
    sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), GgufError> {
    generate_with(t, seed, chunk_elems, INIT_STD, sink)
}

fn generate_with(
    t: &TensorPlan,
    seed: u64,
    chunk_elems: usize,
    std: f32,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), GgufError> {
    let cerr = |source| GgufError::Candle { tensor: t.name.clone(), source };
    let ioerr = |source| GgufError::Io { path: PathBuf::from(&t.name), source };
    if t.is_norm() {
        let ones: Vec<u8> = std::iter::repeat_n(1.0f32.to_le_bytes(), t.elems()).flatten().collect();
        return sink(&ones).map_err(ioerr);
    }
    let (rows, cols) = (t.dims[0], t.dims[1]);
    let (mut rng, normal) = stream(t, seed, std);
    let rows_per_chunk = (chunk_elems / cols).max(1);
    let mut r = 0;
    while r < rows {
        let n = rows_per_chunk.min(rows - r);
        let data: Vec<f32> = (0..n * cols).map(|_| normal.sample(&mut rng)).collect();
        if t.group != t.dtype.block_size() {
            sink(&quantize_grouped(&data, t.dtype, t.group)).map_err(ioerr)?;
        } else {
            let tensor = Tensor::from_vec(data, (n, cols), &Device::Cpu).map_err(cerr)?;
            let q = QTensor::quantize(&tensor, t.dtype).map_err(cerr)?;
            sink(&q.data().map_err(cerr)?).map_err(ioerr)?;
        }
        r += n;
    }
    Ok(())
}

/// Quantize `x` (whole groups) to Q4_0, Q4_1 or Q8_0 blocks of 32 whose
/// scale (and minimum) are computed over each group of `group` values and
/// repeated in each of its blocks. The formulas are ggml's reference
/// quantizers (`quantize_row_q4_0_ref`, `_q4_1_ref`, `_q8_0_ref`) with the
/// statistics taken over the group; at `group` = 32 they give ggml's bytes.
pub fn quantize_grouped(x: &[f32], dtype: GgmlDType, group: usize) -> Vec<u8> {
    let f16 = |v: f32| half::f16::from_f32(v).to_bits().to_le_bytes();
    let mut out = Vec::with_capacity(x.len() / 32 * dtype.type_size());
    for g in x.chunks(group) {
        match dtype {
            GgmlDType::Q4_1 => {
                let (min, max) = g.iter().fold((f32::MAX, f32::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
                let d = (max - min) / 15.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                for blk in g.chunks(32) {
                    out.extend(f16(d));
                    out.extend(f16(min));
                    let q = |v: f32| (((v - min) * id + 0.5) as u8).min(15);
                    out.extend((0..16).map(|j| q(blk[j]) | (q(blk[j + 16]) << 4)));
                }
            }
            GgmlDType::Q4_0 => {
                // The value of largest magnitude, sign kept, maps to -8.
                let max = g.iter().fold(0f32, |m, v| if v.abs() > m.abs() { *v } else { m });
                let d = max / -8.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                for blk in g.chunks(32) {
                    out.extend(f16(d));
                    let q = |v: f32| ((v * id + 8.5) as i8 as u8).min(15);
                    out.extend((0..16).map(|j| q(blk[j]) | (q(blk[j + 16]) << 4)));
                }
            }
            GgmlDType::Q8_0 => {
                let amax = g.iter().fold(0f32, |m, v| m.max(v.abs()));
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                for blk in g.chunks(32) {
                    out.extend(f16(d));
                    out.extend(blk.iter().map(|v| (v * id).round() as i8 as u8));
                }
            }
            other => unreachable!("{other:?} is never grouped (Storage::of)"),
        }
    }
    out
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

/// Bytes the tensors occupy in the file.
pub fn tensor_bytes(s: &Shape) -> Result<u64, GgufError> {
    Ok(tensor_plan(s)?.iter().map(TensorPlan::bytes).sum())
}
