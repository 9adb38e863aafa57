//! The exported GGUF loads back with the shapes, metadata and weights the
//! probe intends, and runs the same forward pass as the model built in memory.

use std::io::Cursor;

use candle_core::quantized::{gguf_file, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen3::ModelWeights;
use pocketbench::arch::{Quant, ShapeSpec};
use pocketbench::probe::gguf::{f32_values, generate_chunked, metadata, tensor_plan, write_model, Meta};

mod common;

fn tiny(quant: Quant, tied: bool) -> pocketbench::arch::Shape {
    ShapeSpec { tied: Some(tied), quant: Some(quant), ..common::tiny_spec() }.resolve().unwrap()
}

fn to_candle(m: &Meta) -> gguf_file::Value {
    use gguf_file::Value as V;
    match m {
        Meta::U32(v) => V::U32(*v),
        Meta::F32(v) => V::F32(*v),
        Meta::Str(s) => V::String(s.clone()),
        Meta::Strs(v) => V::Array(v.iter().map(|s| V::String(s.clone())).collect()),
        Meta::I32s(v) => V::Array(v.iter().map(|x| V::I32(*x)).collect()),
    }
}

fn logits(mut reader: impl std::io::Read + std::io::Seek, tokens: &[u32]) -> Vec<f32> {
    let ct = gguf_file::Content::read(&mut reader).unwrap();
    let mut m = ModelWeights::from_gguf(ct, &mut reader, &Device::Cpu).unwrap();
    let input = Tensor::new(tokens, &Device::Cpu).unwrap().unsqueeze(0).unwrap();
    let mut out = m.forward(&input, 0).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap();
    // One decode step through the KV cache too.
    let next = Tensor::new(&[7u32], &Device::Cpu).unwrap().unsqueeze(0).unwrap();
    out.extend(m.forward(&next, tokens.len()).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap());
    out
}

#[test]
fn streamed_file_matches_the_in_memory_model() {
    for (quant, tied) in [(Quant::Q4_0, true), (Quant::Q8_0, false), (Quant::F16, true)] {
        let shape = tiny(quant, tied);
        let seed = 42;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        write_model(&shape, seed, &path).unwrap();

        // The same model built in memory, whole tensors at once, written by candle's own writer.
        let plan = tensor_plan(&shape).unwrap();
        let qtensors: Vec<QTensor> = plan
            .iter()
            .map(|t| {
                let v = Tensor::from_vec(f32_values(t, seed), t.dims.clone(), &Device::Cpu).unwrap();
                QTensor::quantize(&v, t.dtype).unwrap()
            })
            .collect();
        let meta: Vec<(String, gguf_file::Value)> =
            metadata(&shape, "x").into_iter().map(|(k, v)| (k, to_candle(&v))).collect();
        let meta_refs: Vec<(&str, &gguf_file::Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let tensor_refs: Vec<(&str, &QTensor)> =
            plan.iter().zip(&qtensors).map(|(t, q)| (t.name.as_str(), q)).collect();
        let mut mem = Cursor::new(Vec::new());
        gguf_file::write(&mut mem, &meta_refs, &tensor_refs).unwrap();
        mem.set_position(0);

        let tokens = [1u32, 5, 9, 200, 511, 3];
        let a = logits(std::fs::File::open(&path).unwrap(), &tokens);
        let b = logits(mem, &tokens);
        assert_eq!(a.len(), 2 * 512);
        assert!(a.iter().all(|x| x.is_finite()));
        assert_eq!(a, b, "{quant} tied={tied}: file and in-memory model disagree");
    }
}

#[test]
fn shapes_and_metadata_read_back() {
    let shape = tiny(Quant::Q4_0, false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.gguf");
    write_model(&shape, 1, &path).unwrap();
    let mut f = std::fs::File::open(&path).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    let md = |k: &str| ct.metadata.get(k).unwrap_or_else(|| panic!("missing {k}"));
    assert_eq!(md("general.architecture").to_string().unwrap(), "qwen3");
    assert_eq!(md("qwen3.block_count").to_u32().unwrap(), 2);
    assert_eq!(md("qwen3.embedding_length").to_u32().unwrap(), 128);
    assert_eq!(md("qwen3.attention.head_count").to_u32().unwrap(), 4);
    assert_eq!(md("qwen3.attention.head_count_kv").to_u32().unwrap(), 2);
    assert_eq!(md("qwen3.attention.key_length").to_u32().unwrap(), 32);
    assert_eq!(md("qwen3.feed_forward_length").to_u32().unwrap(), 256);
    assert_eq!(md("tokenizer.ggml.tokens").to_vec().unwrap().len(), 512);
    assert_eq!(md("tokenizer.ggml.model").to_string().unwrap(), "gpt2");
    let info = |n: &str| ct.tensor_infos.get(n).unwrap_or_else(|| panic!("missing {n}"));
    assert_eq!(info("token_embd.weight").shape.dims(), &[512, 128]);
    assert_eq!(info("output.weight").shape.dims(), &[512, 128]);
    assert_eq!(info("blk.1.attn_k.weight").shape.dims(), &[64, 128]);
    assert_eq!(info("blk.0.ffn_down.weight").shape.dims(), &[128, 256]);
    assert_eq!(info("blk.0.attn_q_norm.weight").shape.dims(), &[32]);
    assert_eq!(ct.tensor_infos.len(), 1 + 2 * 11 + 1 + 1);
    // File size: the planned tensor bytes plus header and padding, nothing more.
    let tensors = pocketbench::probe::gguf::tensor_bytes(&shape).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > tensors && size < tensors + 64 * 1024, "{size} vs {tensors}");
}

#[test]
fn chunking_does_not_change_a_byte() {
    let shape = tiny(Quant::Q4_0, true);
    for t in tensor_plan(&shape).unwrap() {
        let mut whole = Vec::new();
        generate_chunked(&t, 3, usize::MAX, |b| {
            whole.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        let mut pieces = Vec::new();
        generate_chunked(&t, 3, 256, |b| {
            pieces.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(whole, pieces, "{}", t.name);
    }
}

#[test]
fn unsupported_shapes_say_why() {
    let mut s = tiny(Quant::Q4K, true);
    let e = tensor_plan(&s).unwrap_err().to_string();
    assert!(e.contains("blocks of 256") && e.contains("hidden = 128"), "{e}");
    s.quant = Quant::Q4_0;
    // Without QK-norm the shape is a llama.cpp `llama`: two norms fewer a layer.
    let with = tensor_plan(&s).unwrap();
    s.qk_norm = false;
    let without = tensor_plan(&s).unwrap();
    assert_eq!(with.len() - without.len(), 2 * s.layers as usize);
    assert!(without.iter().all(|t| !t.name.contains("_q_norm") && !t.name.contains("_k_norm")));
    s.qk_norm = true;
    s.quant = "int4 group=64".parse().unwrap();
    assert!(tensor_plan(&s).unwrap_err().to_string().contains("no ggml storage type"));
}
