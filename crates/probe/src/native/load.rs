//! Reading a Qwen3 or Llama GGUF into the native engine's weights: the GGUF
//! reader ([`crate::gguf::GgufFile`]) parses the header; tensor bytes are
//! read straight into their final buffers, so the resident model is the
//! file's tensors and nothing else.

use std::path::Path;

use candle_core::quantized::GgmlDType;

use crate::engine::EngineError;
use crate::gguf::{GgufError, GgufFile};
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

impl Layer {
    /// Its matrices in the order decode reads them.
    pub(super) fn matrices(&self) -> [&QMatrix; 7] {
        [&self.wq, &self.wk, &self.wv, &self.wo, &self.gate, &self.up, &self.down]
    }
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
    file: GgufFile,
    /// Where the matrices go ([`Arena`]: huge pages for the weights).
    arena: Arena,
}

impl From<GgufError> for EngineError {
    fn from(e: GgufError) -> Self {
        EngineError(e.to_string())
    }
}

impl From<GgufError> for LoadError {
    fn from(e: GgufError) -> Self {
        LoadError::Engine(e.into())
    }
}

impl Reader {
    fn bytes(&mut self, name: &str) -> Result<(GgmlDType, Vec<usize>, Vec<u8>), EngineError> {
        let info = self.file.tensor(name)?;
        let mut buf = vec![0u8; info.bytes];
        self.file.read_into(name, &mut buf)?;
        Ok((info.dtype, info.dims, buf))
    }

    fn matrix(&mut self, name: &str) -> Result<QMatrix, LoadError> {
        // Q4_K is read aside and repacked into the arena; the rest is read
        // into the arena and repacked in place.
        let info = self.file.tensor(name)?;
        let (dtype, dims, buf) = if info.dtype == GgmlDType::Q4K {
            let (d, s, v) = self.bytes(name)?;
            (d, s, WeightBuf::from(v))
        } else {
            let mut b = self.arena.take(info.bytes);
            self.file.read_into(name, &mut b)?;
            (info.dtype, info.dims, b)
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

/// The hyper-parameters of a Qwen3 or Llama file (the vocabulary is the
/// embedding's rows, read with it).
fn config(file: &GgufFile) -> Result<Config, LoadError> {
    let arch = match file.string("general.architecture")?.as_str() {
        "qwen3" => Arch::Qwen3,
        "llama" => Arch::Llama,
        other => {
            return Err(LoadError::Unsupported(format!(
                "architecture `{other}`; the native engine runs qwen3 and llama"
            )))
        }
    };
    let k = |key: &str| format!("{}.{key}", arch.name());
    let u = |key: &str| file.u32(&k(key)).map(|v| v as usize);
    let (heads, hidden) = (u("attention.head_count")?, u("embedding_length")?);
    let head_dim = if file.has(&k("attention.key_length")) { u("attention.key_length")? } else { hidden / heads };
    // llama.cpp's default base where a file has none.
    let theta = match file.f32(&k("rope.freq_base")) {
        Ok(v) => v,
        Err(_) if arch == Arch::Llama => 10_000.0,
        Err(e) => return Err(e.into()),
    };
    Ok(Config {
        arch,
        hidden,
        heads,
        kv_heads: u("attention.head_count_kv")?,
        head_dim,
        ffn: u("feed_forward_length")?,
        vocab: 0,
        layers: u("block_count")?,
        eps: file.f32(&k("attention.layer_norm_rms_epsilon"))?,
        theta,
    })
}

/// One decoder layer's tensors.
fn layer(r: &mut Reader, cfg: &Config, i: usize) -> Result<Layer, LoadError> {
    let p = format!("blk.{i}");
    Ok(Layer {
        attn_norm: r.vector(&format!("{p}.attn_norm.weight"), cfg.hidden)?,
        qk_norm: match cfg.arch {
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
    })
}

/// Read a Qwen3 or Llama GGUF.
pub fn read(path: &Path) -> Result<Weights, LoadError> {
    let file = GgufFile::open(path)?;
    let mut cfg = config(&file)?;
    // Room for every tensor (Q4_K grows by 4 bytes a row and 256 weights,
    // and each buffer starts on 64 bytes); only what is written is memory.
    let reserve =
        file.tensors().fold(0usize, |n, i| n.saturating_add(i.bytes.saturating_add(i.bytes / 32).saturating_add(64)));
    let mut r = Reader { file, arena: Arena::new(reserve) };
    let embed = r.matrix("token_embd.weight")?;
    cfg.vocab = embed.rows;
    if !cfg.heads.is_multiple_of(cfg.kv_heads.max(1)) || cfg.kv_heads == 0 || !cfg.head_dim.is_multiple_of(2) {
        return Err(EngineError(format!("unsupported head layout {cfg:?}")).into());
    }
    let layers = (0..cfg.layers).map(|i| layer(&mut r, &cfg, i)).collect::<Result<Vec<_>, _>>()?;
    let out_norm = r.vector("output_norm.weight", cfg.hidden)?;
    let output = if r.file.contains("output.weight") { Some(r.matrix("output.weight")?) } else { None };
    Ok(Weights { cfg, embed, output, out_norm, layers })
}
