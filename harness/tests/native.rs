//! The built-in engine's native Qwen3 path against candle-transformers' stock
//! quantized Qwen3 on the same GGUF: the same logits within quantization
//! noise, across prompt chunks, the KV cache, tied and untied outputs, Q4_0
//! and Q8_0, one and two threads.

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen3::ModelWeights;
use pocketbench::arch::{Quant, ShapeSpec};
use pocketbench::probe::gguf::write_model;
use pocketbench::probe::native::{LoadError, NativeModel, CHUNK};

mod common;

fn model_file(quant: Quant, tied: bool, dir: &tempfile::TempDir) -> std::path::PathBuf {
    let shape = ShapeSpec { tied: Some(tied), quant: Some(quant), ..common::tiny_spec() }.resolve().unwrap();
    let path = dir.path().join(format!("{quant}-{tied}.gguf"));
    write_model(&shape, 11, &path).unwrap();
    path
}

/// Largest difference relative to the largest reference logit.
fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

#[test]
fn native_logits_match_candle_transformers() {
    let dir = tempfile::tempdir().unwrap();
    let prompt: Vec<u32> = (0..CHUNK as u32 + 9).map(|i| (i * 37 + 5) % 512).collect();
    for (quant, tied, threads) in [(Quant::Q4_0, true, 2), (Quant::Q4_0, false, 1), (Quant::Q8_0, true, 2)] {
        let path = model_file(quant, tied, &dir);
        let mut reader = std::fs::File::open(&path).unwrap();
        let ct = gguf_file::Content::read(&mut reader).unwrap();
        let mut reference = ModelWeights::from_gguf(ct, &mut reader, &Device::Cpu).unwrap();
        let mut native = NativeModel::load(&path, threads, 64).unwrap();
        assert_eq!(native.config().vocab, 512);

        let input = Tensor::new(prompt.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap();
        let want = reference.forward(&input, 0).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap();
        native.forward(&prompt, 0).unwrap();
        let err = rel_err(native.logits(), &want);
        assert!(err < 0.03, "{quant} tied={tied}: prefill logits differ by {err}");

        // Decode steps through the KV cache.
        for (i, tok) in [7u32, 300, 511].into_iter().enumerate() {
            let input = Tensor::new(&[tok], &Device::Cpu).unwrap().unsqueeze(0).unwrap();
            let pos = prompt.len() + i;
            let want = reference.forward(&input, pos).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap();
            native.forward(&[tok], pos).unwrap();
            let err = rel_err(native.logits(), &want);
            assert!(err < 0.03, "{quant} tied={tied}: decode step {i} logits differ by {err}");
        }
    }
}

#[test]
fn other_tensor_types_are_reported_as_unsupported_and_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = model_file(Quant::Q4_1, true, &dir);
    match NativeModel::load(&path, 1, 64) {
        Err(LoadError::Unsupported(why)) => assert!(why.contains("q4_0 and q8_0"), "{why}"),
        Err(LoadError::Engine(e)) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("q4_1 should not load on the native path"),
    }
    let mut m = NativeModel::load(&model_file(Quant::Q4_0, true, &dir), 1, 16).unwrap();
    assert!(m.forward(&[1; 17], 0).unwrap_err().0.contains("exceed the context of 16"));
    assert!(m.forward(&[512], 0).unwrap_err().0.contains("outside the vocabulary"));
    assert!(m.forward(&[], 0).is_err());
}
