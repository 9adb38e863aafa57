//! Reading a GGUF file: candle-core parses the header (metadata and tensor
//! infos); tensor bytes are read on demand into the caller's buffer, so a
//! loader can place them where they will live and hold nothing twice.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::quantized::{gguf_file, GgmlDType};

use pocketbench_types::arch::{Quant, Shape};

use super::GgufError;

/// One tensor as the file stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The storage type.
    pub dtype: GgmlDType,
    /// Dimensions, outermost first.
    pub dims: Vec<usize>,
    /// Bytes of its data.
    pub bytes: usize,
}

/// An open GGUF file.
pub struct GgufFile {
    path: PathBuf,
    file: File,
    metadata: HashMap<String, gguf_file::Value>,
    infos: HashMap<String, gguf_file::TensorInfo>,
    base: u64,
}

impl GgufFile {
    /// Open `path` and parse its header.
    pub fn open(path: &Path) -> Result<Self, GgufError> {
        let mut file = File::open(path).map_err(|source| GgufError::Io { path: path.to_path_buf(), source })?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| GgufError::Read { path: path.to_path_buf(), message: e.to_string() })?;
        Ok(GgufFile {
            path: path.to_path_buf(),
            file,
            metadata: content.metadata,
            infos: content.tensor_infos,
            base: content.tensor_data_offset,
        })
    }

    fn error(&self, message: String) -> GgufError {
        GgufError::Read { path: self.path.clone(), message }
    }

    fn value(&self, key: &str) -> Result<&gguf_file::Value, GgufError> {
        self.metadata.get(key).ok_or_else(|| self.error(format!("metadata `{key}` missing")))
    }

    /// Whether the file has metadata `key`.
    pub fn has(&self, key: &str) -> bool {
        self.metadata.contains_key(key)
    }

    /// A UINT32 metadata value.
    pub fn u32(&self, key: &str) -> Result<u32, GgufError> {
        self.value(key)?.to_u32().map_err(|e| self.error(format!("`{key}`: {e}")))
    }

    /// A FLOAT32 metadata value.
    pub fn f32(&self, key: &str) -> Result<f32, GgufError> {
        self.value(key)?.to_f32().map_err(|e| self.error(format!("`{key}`: {e}")))
    }

    /// A STRING metadata value.
    pub fn string(&self, key: &str) -> Result<String, GgufError> {
        self.value(key)?.to_string().cloned().map_err(|e| self.error(format!("`{key}`: {e}")))
    }

    /// The model's shape: the one pocketbench recorded when it exported
    /// the file (`pocketbench.shape`), else read from llama.cpp's own
    /// metadata and tensors: the quantization is then the storage type of
    /// the first layer's FFN (a group-G integer format reads as the ggml
    /// blocks that store it).
    pub fn shape(&self) -> Result<Shape, GgufError> {
        if let Ok(text) = self.string(super::write::SHAPE_KEY) {
            return Shape::from_canonical(&text)
                .ok_or_else(|| self.error(format!("`{}` = {text:?} is not a shape", super::write::SHAPE_KEY)));
        }
        let arch = self.string("general.architecture")?;
        let qk_norm = match arch.as_str() {
            "qwen3" => true,
            "llama" | "qwen2" => false,
            other => {
                return Err(self.error(format!("architecture `{other}`: only qwen3, qwen2 and llama map to a shape")))
            }
        };
        let u = |key: &str| self.u32(&format!("{arch}.{key}"));
        let (hidden, heads) = (u("embedding_length")?, u("attention.head_count")?);
        let head_dim = u("attention.key_length").unwrap_or(hidden / heads.max(1));
        let embed = self.tensor("token_embd.weight")?;
        let ffn = self.tensor("blk.0.ffn_up.weight")?;
        let quant = match ffn.dtype {
            GgmlDType::Q4_0 => Quant::Q4_0,
            GgmlDType::Q4_1 => Quant::Q4_1,
            GgmlDType::Q8_0 => Quant::Q8_0,
            GgmlDType::Q4K => Quant::Q4K,
            GgmlDType::Q6K => Quant::Q6K,
            GgmlDType::F16 => Quant::F16,
            GgmlDType::F32 => Quant::F32,
            other => return Err(self.error(format!("weights stored as {other:?}, a type pocketbench does not model"))),
        };
        Ok(Shape {
            hidden,
            layers: u("block_count")?,
            heads,
            kv_heads: u("attention.head_count_kv")?,
            head_dim,
            ffn: u("feed_forward_length")?,
            vocab: embed.dims.first().copied().unwrap_or(0) as u32,
            tied: !self.contains("output.weight"),
            qk_norm,
            quant,
            context: u("context_length")?,
        })
    }

    /// Whether the file has tensor `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.infos.contains_key(name)
    }

    /// A tensor's type, dimensions and size.
    pub fn tensor(&self, name: &str) -> Result<TensorInfo, GgufError> {
        let info = self.infos.get(name).ok_or_else(|| self.error(format!("tensor `{name}` missing")))?;
        let dims = info.shape.dims().to_vec();
        let bytes = dims.iter().product::<usize>() / info.ggml_dtype.block_size() * info.ggml_dtype.type_size();
        Ok(TensorInfo { dtype: info.ggml_dtype, dims, bytes })
    }

    /// Bytes of every tensor's data.
    pub fn tensors(&self) -> impl Iterator<Item = TensorInfo> + '_ {
        self.infos.keys().filter_map(|name| self.tensor(name).ok())
    }

    /// A tensor's bytes into `buf`, which must be as long as
    /// [`TensorInfo::bytes`].
    pub fn read_into(&mut self, name: &str, buf: &mut [u8]) -> Result<(), GgufError> {
        let offset = self.infos.get(name).ok_or_else(|| self.error(format!("tensor `{name}` missing")))?.offset;
        let path = self.path.clone();
        self.file.seek(SeekFrom::Start(self.base + offset)).map_err(|source| GgufError::Io { path, source })?;
        self.file.read_exact(buf).map_err(|e| self.error(format!("reading `{name}`: {e}")))
    }
}
