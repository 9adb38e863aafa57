//! The built-in engine's native path against candle-transformers' stock
//! quantized Qwen3 and Llama on the same GGUF: the same logits within
//! quantization noise, across prompt chunks, the KV cache, tied and untied
//! outputs, with and without QK-norm (llama.cpp `qwen3` and `llama`), Q4_0
//! and Q8_0, one and two threads.

use pocketbench::arch::{Quant, ShapeSpec};
use pocketbench::probe::engine::CandleModel;
use pocketbench::probe::gguf::{write_model, write_model_with_std};
use pocketbench::probe::native::{LoadError, NativeModel, CHUNK};

mod common;

fn model_file(quant: Quant, tied: bool, dir: &tempfile::TempDir) -> std::path::PathBuf {
    model_file_of(quant, tied, true, dir)
}

fn model_file_of(quant: Quant, tied: bool, qk_norm: bool, dir: &tempfile::TempDir) -> std::path::PathBuf {
    let shape = ShapeSpec { tied: Some(tied), quant: Some(quant), qk_norm: Some(qk_norm), ..common::tiny_spec() }
        .resolve()
        .unwrap();
    let path = dir.path().join(format!("{quant}-{tied}-{qk_norm}.gguf"));
    write_model(&shape, 11, &path).unwrap();
    path
}

/// Weights large enough that attention is sharp: a position encoding other
/// than the reference's changes the logits by far more than quantization.
fn sharp_model_file(qk_norm: bool, dir: &tempfile::TempDir) -> std::path::PathBuf {
    let shape =
        ShapeSpec { qk_norm: Some(qk_norm), quant: Some(Quant::Q8_0), ..common::tiny_spec() }.resolve().unwrap();
    let path = dir.path().join(format!("sharp-{qk_norm}.gguf"));
    write_model_with_std(&shape, 5, &path, 0.06).unwrap();
    path
}

#[test]
fn rope_layout_matches_the_reference_for_qwen3_and_llama() {
    let dir = tempfile::tempdir().unwrap();
    let prompt: Vec<u32> = (0..40u32).map(|i| (i * 53 + 11) % 512).collect();
    for qk_norm in [true, false] {
        let path = sharp_model_file(qk_norm, &dir);
        let mut reference = CandleModel::load(&path).unwrap();
        let mut native = NativeModel::load(&path, 1, 64).unwrap();
        let want = reference.logits(&prompt, 0).unwrap().to_vec1::<f32>().unwrap();
        native.forward(&prompt, 0).unwrap();
        let err = rel_err(native.logits(), &want);
        // At this std the right layout is within 0.02 here, the other one 0.3 off or more.
        assert!(err < 0.05, "qk-norm={qk_norm}: logits differ by {err}");
    }
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
    for (quant, tied, qk_norm, threads) in [
        (Quant::Q4_0, true, true, 2),
        (Quant::Q4_0, false, true, 1),
        (Quant::Q8_0, true, true, 2),
        (Quant::Q4_0, true, false, 2),
        (Quant::Q4_0, false, false, 1),
        (Quant::Q8_0, true, false, 1),
    ] {
        let path = model_file_of(quant, tied, qk_norm, &dir);
        let mut reference = CandleModel::load(&path).unwrap();
        assert!(matches!(reference, CandleModel::Llama(_)) != qk_norm, "qwen3 with QK-norm, llama without");
        let mut native = NativeModel::load(&path, threads, 64).unwrap();
        assert_eq!(native.config().vocab, 512);
        let case = format!("{quant} tied={tied} qk-norm={qk_norm}");

        let want = reference.logits(&prompt, 0).unwrap().to_vec1::<f32>().unwrap();
        native.forward(&prompt, 0).unwrap();
        let err = rel_err(native.logits(), &want);
        assert!(err < 0.03, "{case}: prefill logits differ by {err}");

        // Decode steps through the KV cache.
        for (i, tok) in [7u32, 300, 511].into_iter().enumerate() {
            let pos = prompt.len() + i;
            let want = reference.logits(&[tok], pos).unwrap().to_vec1::<f32>().unwrap();
            native.forward(&[tok], pos).unwrap();
            let err = rel_err(native.logits(), &want);
            assert!(err < 0.03, "{case}: decode step {i} logits differ by {err}");
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
