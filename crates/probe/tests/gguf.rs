//! The exported GGUF loads back with the shapes, metadata and weights the
//! probe intends, and runs the same forward pass as the model built in memory.

use std::io::Cursor;

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen3::ModelWeights;
use pocketbench_probe::gguf::{
    f32_values, generate_chunked, metadata, quantize_grouped, tensor_plan, write_model, Meta, Storage,
};
use pocketbench_types::arch::{Quant, ShapeSpec};

#[path = "../../pocketbench/tests/common/mod.rs"]
mod common;

fn tiny(quant: Quant, tied: bool) -> pocketbench_types::arch::Shape {
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
    let tensors = pocketbench_probe::gguf::tensor_bytes(&shape).unwrap();
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
    // The group forms llama.cpp can read are stored as its blocks; others say why.
    s.quant = "int4 group=64".parse().unwrap();
    assert!(tensor_plan(&s)
        .unwrap()
        .iter()
        .all(|t| t.dims.len() == 1 || (t.dtype == GgmlDType::Q4_0 && t.group == 64)));
    s.quant = "int4 group=256 zero".parse().unwrap();
    let e = tensor_plan(&s).unwrap_err().to_string();
    assert!(e.contains("groups of 256") && e.contains("hidden = 128"), "{e}");
    for q in ["int3 group=64", "int4 group=16", "int8 group=64 zero"] {
        s.quant = q.parse().unwrap();
        let e = tensor_plan(&s).unwrap_err().to_string();
        assert!(e.contains(q) && e.contains("no storage that llama.cpp or the native engine reads"), "{q}: {e}");
    }
}

/// Random rows around an offset, so Q4_1's minimum is not zero.
fn values(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random_range(-0.5f32..1.5)).collect()
}

#[test]
fn grouped_quantization_at_the_block_size_is_ggmls_own() {
    let x = values(32 * 64, 1);
    let t = Tensor::from_vec(x.clone(), (64, 32), &Device::Cpu).unwrap();
    for dtype in [GgmlDType::Q4_0, GgmlDType::Q4_1, GgmlDType::Q8_0] {
        let want = QTensor::quantize(&t, dtype).unwrap().data().unwrap().into_owned();
        assert_eq!(quantize_grouped(&x, dtype, 32), want, "{dtype:?}");
    }
}

#[test]
fn group_64_q4_1_shares_one_scale_and_minimum_across_two_blocks() {
    let x = values(64 * 8, 2);
    let bytes = quantize_grouped(&x, GgmlDType::Q4_1, 64);
    assert_eq!(bytes.len(), x.len() / 32 * 20, "stored as Q4_1 blocks of 32: 5 bits a weight");
    let half = |b: &[u8]| half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    for (g, pair) in bytes.chunks_exact(40).zip(x.chunks_exact(64)) {
        assert_eq!(g[..4], g[20..24], "the group's scale and minimum repeat in its second block");
        let (d, m) = (half(&g[..2]), half(&g[2..4]));
        let (lo, hi) = pair.iter().fold((f32::MAX, f32::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
        assert!((m - lo).abs() <= 1e-3 && (d - (hi - lo) / 15.0).abs() <= 1e-3, "group statistics over all 64");
    }
    // candle (ggml's dequantizer) reads them back within half a step of the input.
    let q =
        pocketbench_probe::kernels::QMatrix::new(pocketbench_probe::kernels::WeightType::Q4_1, 8, 64, bytes.clone())
            .unwrap();
    let mut row = vec![0f32; 64];
    for r in 0..8 {
        q.dequantize_row(r, &mut row);
        let d = half(&bytes[r * 40..r * 40 + 2]);
        for (a, b) in row.iter().zip(&x[r * 64..(r + 1) * 64]) {
            assert!((a - b).abs() <= d * 0.5 + 2e-3, "row {r}: {a} vs {b} (step {d})");
        }
    }
}

#[test]
fn storage_says_how_a_group_form_differs_from_the_compact_one() {
    let q: Quant = "int4 group=64 zero".parse().unwrap();
    let st = Storage::of(q).unwrap();
    assert_eq!((st.dtype, st.group), (GgmlDType::Q4_1, 64));
    let d = st.describe(q);
    assert!(d.contains("q4_1 blocks of 32") && d.contains("5.00 bits per weight stored") && d.contains("4.50"), "{d}");
    assert_eq!(Storage::of(Quant::Q4_1).unwrap().describe(Quant::Q4_1), "q4_1 as ggml q4_1");
}

#[test]
fn writers_building_the_same_model_at_once_each_rename_a_whole_file() {
    // Two sweeps, or parallel tests, building one cached model: with one
    // shared temporary name they wrote into each other's file and one
    // rename took it from under the other ("No such file or directory").
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gguf").join("same.gguf");
    let s = tiny(Quant::Q4_0, true);
    for _ in 0..5 {
        let _ = std::fs::remove_file(&path);
        std::thread::scope(|scope| {
            let writers: Vec<_> =
                (0..4).map(|_| scope.spawn(|| pocketbench_probe::gguf::write_model(&s, 7, &path))).collect();
            for w in writers {
                w.join().unwrap().unwrap();
            }
        });
        let lone = dir.path().join("lone.gguf");
        pocketbench_probe::gguf::write_model(&s, 7, &lone).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&lone).unwrap(), "a whole, identical file");
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("same.gguf")], "no temporary file left behind");
    }
}

#[test]
fn the_shape_reads_back_from_its_own_key_and_from_llama_cpp_metadata() {
    use pocketbench_probe::gguf::{GgufFile, SHAPE_KEY};
    let dir = tempfile::tempdir().unwrap();
    // A grouped integer format is only recoverable from pocketbench's own key.
    for quant in [Quant::Q4_0, Quant::Q8_0, "int4 group=64 zero".parse().unwrap()] {
        for tied in [true, false] {
            let shape = tiny(quant, tied);
            let path = dir.path().join("m.gguf");
            write_model(&shape, 1, &path).unwrap();
            assert_eq!(GgufFile::open(&path).unwrap().shape().unwrap(), shape, "{quant} tied={tied}");
        }
    }
    // Without the key (a GGUF from elsewhere): llama.cpp's metadata and the
    // tensors' storage type.
    let shape = tiny(Quant::Q8_0, false);
    let plan = tensor_plan(&shape).unwrap();
    let qtensors: Vec<QTensor> = plan
        .iter()
        .map(|t| {
            let v = Tensor::from_vec(f32_values(t, 1), t.dims.clone(), &Device::Cpu).unwrap();
            QTensor::quantize(&v, t.dtype).unwrap()
        })
        .collect();
    let meta: Vec<(String, gguf_file::Value)> =
        metadata(&shape, "x").into_iter().filter(|(k, _)| k != SHAPE_KEY).map(|(k, v)| (k, to_candle(&v))).collect();
    let meta_refs: Vec<(&str, &gguf_file::Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> = plan.iter().zip(&qtensors).map(|(t, q)| (t.name.as_str(), q)).collect();
    let path = dir.path().join("other.gguf");
    let mut f = std::fs::File::create(&path).unwrap();
    gguf_file::write(&mut f, &meta_refs, &tensor_refs).unwrap();
    drop(f);
    assert_eq!(GgufFile::open(&path).unwrap().shape().unwrap(), shape);
}
