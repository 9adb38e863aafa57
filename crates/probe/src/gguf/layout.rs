//! How a shape's tensors are stored in a GGUF file: the ggml type and group
//! of a quantization, every tensor's name, dimensions and size.

use candle_core::quantized::GgmlDType;

use pocketbench_types::arch::{Quant, Shape};

use super::GgufError;

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

/// llama.cpp's name of the storage type `q` is written as (`q4_0`, `q4_k`,
/// `f16`), lower case, as llama-bench's `model_type` ends.
pub fn type_name(q: Quant) -> Option<&'static str> {
    Some(match ggml_dtype(q).ok()? {
        GgmlDType::Q4_0 => "q4_0",
        GgmlDType::Q4_1 => "q4_1",
        GgmlDType::Q8_0 => "q8_0",
        GgmlDType::Q4K => "q4_k",
        GgmlDType::Q6K => "q6_k",
        GgmlDType::F16 => "f16",
        GgmlDType::F32 => "f32",
        _ => return None,
    })
}

/// ggml's `ggml_type` number of a storage type (`ggml.h`).
pub(super) fn ggml_type_id(t: GgmlDType) -> u32 {
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
pub(super) fn file_type(t: GgmlDType) -> u32 {
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
    pub(super) fn bytes(&self) -> u64 {
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

/// Bytes the tensors occupy in the file.
pub fn tensor_bytes(s: &Shape) -> Result<u64, GgufError> {
    Ok(tensor_plan(s)?.iter().map(TensorPlan::bytes).sum())
}
