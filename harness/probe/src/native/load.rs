//! Reading a Qwen3 or Llama GGUF into the native engine's weights: candle-core parses
//! the header; tensor bytes are read straight into their final buffers, so
//! the resident model is the file's tensors and nothing else.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use candle_core::quantized::{gguf_file, GgmlDType};

use crate::engine::EngineError;
use crate::kernels::{Arena, QMatrix, WeightBuf, WeightType};

/// The decoder families the engine runs: the same block, with or without
/// QK-norm, and each with llama.cpp's RoPE layout for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// llama.cpp `qwen3`: QK-norm, RoPE over the two halves of a head (NeoX).
    Qwen3,
    /// llama.cpp `llama` (SmolLM2, MobileLLM, Llama 3.2): no QK-norm, RoPE
    /// over adjacent pairs (llama.cpp's "normal" RoPE, candle's `rope_i`).
    Llama,
}

impl Arch {
    /// The family's name in llama.cpp (`general.architecture`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::Qwen3 => "qwen3",
            Arch::Llama => "llama",
        }
    }
}

/// Hyper-parameters read from the file's `qwen3.*` or `llama.*` metadata.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The family.
    pub arch: Arch,
    /// Hidden width.
    pub hidden: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// FFN width.
    pub ffn: usize,
    /// Vocabulary.
    pub vocab: usize,
    /// Decoder layers.
    pub layers: usize,
    /// RMSNorm epsilon.
    pub eps: f32,
    /// RoPE base.
    pub theta: f32,
}

/// One decoder layer.
pub struct Layer {
    pub(super) attn_norm: Vec<f32>,
    /// QK-norm weights (Qwen3); `None` for Llama.
    pub(super) qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    pub(super) ffn_norm: Vec<f32>,
    pub(super) wq: QMatrix,
    pub(super) wk: QMatrix,
    pub(super) wv: QMatrix,
    pub(super) wo: QMatrix,
    pub(super) gate: QMatrix,
    pub(super) up: QMatrix,
    pub(super) down: QMatrix,
}

/// Everything read from the file.
pub struct Weights {
    pub(super) cfg: Config,
    pub(super) embed: QMatrix,
    /// `None` when the output layer is tied to the embedding.
    pub(super) output: Option<QMatrix>,
    pub(super) out_norm: Vec<f32>,
    pub(super) layers: Vec<Layer>,
}

/// The tensor types the native kernels run, as the refusal names them.
pub const NATIVE_TYPES: &str = "q4_0, q4_1, q8_0, q4_k, f16 and f32";

/// The native kernels' type for a ggml storage type, if they have one.
pub fn weight_type(dtype: GgmlDType) -> Option<WeightType> {
    Some(match dtype {
        GgmlDType::Q4_0 => WeightType::Q4_0,
        GgmlDType::Q4_1 => WeightType::Q4_1,
        GgmlDType::Q8_0 => WeightType::Q8_0,
        GgmlDType::Q4K => WeightType::Q4K,
        GgmlDType::F16 => WeightType::F16,
        GgmlDType::F32 => WeightType::F32,
        _ => return None,
    })
}

/// Why a file cannot run on the native engine.
#[derive(Debug)]
pub enum LoadError {
    /// A tensor type without a native kernel.
    Unsupported(String),
    /// Anything else.
    Engine(EngineError),
}

impl LoadError {
    /// As an engine error (for callers that cannot fall back).
    pub fn into_engine(self) -> EngineError {
        match self {
            LoadError::Unsupported(why) => EngineError(format!("the native engine does not run this file: {why}")),
            LoadError::Engine(e) => e,
        }
    }
}

impl From<EngineError> for LoadError {
    fn from(e: EngineError) -> Self {
        LoadError::Engine(e)
    }
}

struct Reader {
    file: File,
    infos: HashMap<String, gguf_file::TensorInfo>,
    base: u64,
    /// Where the matrices go ([`Arena`]: huge pages for the weights).
    arena: Arena,
}

impl Reader {
    fn bytes(&mut self, name: &str) -> Result<(GgmlDType, Vec<usize>, Vec<u8>), EngineError> {
        let (dtype, dims, len) = self.info(name)?;
        let mut buf = vec![0u8; len];
        self.read_into(name, &mut buf)?;
        Ok((dtype, dims, buf))
    }

    /// A tensor's type, dimensions and size in bytes.
    fn info(&self, name: &str) -> Result<(GgmlDType, Vec<usize>, usize), EngineError> {
        let info = self.infos.get(name).ok_or_else(|| EngineError(format!("tensor `{name}` missing")))?;
        let (dtype, dims) = (info.ggml_dtype, info.shape.dims().to_vec());
        let elems: usize = dims.iter().product();
        let len = elems / dtype.block_size() * dtype.type_size();
        Ok((dtype, dims, len))
    }

    /// A tensor's bytes into `buf` (as long as [`Reader::info`] says).
    fn read_into(&mut self, name: &str, buf: &mut [u8]) -> Result<(), EngineError> {
        let offset = self.infos.get(name).ok_or_else(|| EngineError(format!("tensor `{name}` missing")))?.offset;
        self.file.seek(SeekFrom::Start(self.base + offset)).map_err(|e| EngineError(e.to_string()))?;
        self.file.read_exact(buf).map_err(|e| EngineError(format!("reading `{name}`: {e}")))
    }

    fn matrix(&mut self, name: &str) -> Result<QMatrix, LoadError> {
        // Q4_K is read aside and repacked into the arena; the rest is read
        // into the arena and repacked in place.
        let q4k = self.infos.get(name).is_some_and(|i| i.ggml_dtype == GgmlDType::Q4K);
        let (dtype, dims, buf) = if q4k {
            let (d, s, v) = self.bytes(name)?;
            (d, s, WeightBuf::from(v))
        } else {
            let (d, s, len) = self.info(name)?;
            let mut b = self.arena.take(len);
            self.read_into(name, &mut b)?;
            (d, s, b)
        };
        let Some(kind) = weight_type(dtype) else {
            return Err(LoadError::Unsupported(format!(
                "`{name}` is {dtype:?}; the native kernels cover {NATIVE_TYPES}"
            )));
        };
        let [rows, cols] = dims[..] else {
            return Err(EngineError(format!("`{name}` has {} dimensions, expected 2", dims.len())).into());
        };
        let m = QMatrix::new_in(kind, rows, cols, buf, &mut |len| self.arena.take(len))
            .map_err(|e| EngineError(format!("`{name}`: {e}")))?;
        // A Q4_0 or Q4_1 matrix with shared scales shrank where it lies.
        self.arena.reclaim(&m.data);
        Ok(m)
    }

    fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>, EngineError> {
        let (dtype, dims, buf) = self.bytes(name)?;
        if dtype != GgmlDType::F32 || dims.iter().product::<usize>() != len {
            return Err(EngineError(format!("`{name}` should be {len} f32 values, is {dtype:?} {dims:?}")));
        }
        Ok(buf.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }
}

/// Read a Qwen3 or Llama GGUF.
pub fn read(path: &Path) -> Result<Weights, LoadError> {
    let ee = |e: candle_core::Error| EngineError(format!("{}: {e}", path.display()));
    let mut file = File::open(path).map_err(|e| EngineError(format!("{}: {e}", path.display())))?;
    let content = gguf_file::Content::read(&mut file).map_err(ee)?;
    let md = |k: &str| content.metadata.get(k).ok_or_else(|| EngineError(format!("metadata `{k}` missing")));
    let u = |k: &str| -> Result<usize, EngineError> { Ok(md(k)?.to_u32().map_err(ee)? as usize) };
    let f = |k: &str| -> Result<f32, EngineError> { md(k)?.to_f32().map_err(ee) };
    let arch = match md("general.architecture")?.to_string().map_err(ee)?.as_str() {
        "qwen3" => Arch::Qwen3,
        "llama" => Arch::Llama,
        other => {
            return Err(LoadError::Unsupported(format!(
                "architecture `{other}`; the native engine runs qwen3 and llama"
            )))
        }
    };
    let k = |key: &str| format!("{}.{key}", arch.name());
    let heads = u(&k("attention.head_count"))?;
    let hidden = u(&k("embedding_length"))?;
    let head_dim = match md(&k("attention.key_length")) {
        Ok(v) => v.to_u32().map_err(ee)? as usize,
        Err(_) => hidden / heads,
    };
    let mut cfg = Config {
        arch,
        hidden,
        heads,
        kv_heads: u(&k("attention.head_count_kv"))?,
        head_dim,
        ffn: u(&k("feed_forward_length"))?,
        vocab: 0,
        layers: u(&k("block_count"))?,
        eps: f(&k("attention.layer_norm_rms_epsilon"))?,
        // llama.cpp's default base where a file has none.
        theta: f(&k("rope.freq_base")).or_else(|e| if arch == Arch::Llama { Ok(10_000.0) } else { Err(e) })?,
    };
    // Room for every tensor (Q4_K grows by 4 bytes a row and 256 weights,
    // and each buffer starts on 64 bytes); only what is written is memory.
    let reserve = content.tensor_infos.values().fold(0usize, |n, i| {
        let bytes = i.shape.elem_count() / i.ggml_dtype.block_size() * i.ggml_dtype.type_size();
        n.saturating_add(bytes.saturating_add(bytes / 32).saturating_add(64))
    });
    let arena = Arena::new(reserve);
    let mut r = Reader { file, infos: content.tensor_infos, base: content.tensor_data_offset, arena };
    let embed = r.matrix("token_embd.weight")?;
    cfg.vocab = embed.rows;
    if !cfg.heads.is_multiple_of(cfg.kv_heads.max(1)) || cfg.kv_heads == 0 || !cfg.head_dim.is_multiple_of(2) {
        return Err(EngineError(format!("unsupported head layout {cfg:?}")).into());
    }
    let mut layers = Vec::with_capacity(cfg.layers);
    for i in 0..cfg.layers {
        let p = format!("blk.{i}");
        layers.push(Layer {
            attn_norm: r.vector(&format!("{p}.attn_norm.weight"), cfg.hidden)?,
            qk_norm: match arch {
                Arch::Qwen3 => Some((
                    r.vector(&format!("{p}.attn_q_norm.weight"), cfg.head_dim)?,
                    r.vector(&format!("{p}.attn_k_norm.weight"), cfg.head_dim)?,
                )),
                Arch::Llama => None,
            },
            ffn_norm: r.vector(&format!("{p}.ffn_norm.weight"), cfg.hidden)?,
            wq: r.matrix(&format!("{p}.attn_q.weight"))?,
            wk: r.matrix(&format!("{p}.attn_k.weight"))?,
            wv: r.matrix(&format!("{p}.attn_v.weight"))?,
            wo: r.matrix(&format!("{p}.attn_output.weight"))?,
            gate: r.matrix(&format!("{p}.ffn_gate.weight"))?,
            up: r.matrix(&format!("{p}.ffn_up.weight"))?,
            down: r.matrix(&format!("{p}.ffn_down.weight"))?,
        });
    }
    let out_norm = r.vector("output_norm.weight", cfg.hidden)?;
    let output = if r.infos.contains_key("output.weight") { Some(r.matrix("output.weight")?) } else { None };
    Ok(Weights { cfg, embed, output, out_norm, layers })
}
