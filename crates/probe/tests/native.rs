//! The built-in engine's native path against candle-transformers' stock
//! quantized Qwen3 and Llama on the same GGUF: the same logits within
//! quantization noise, across prompt chunks, the KV cache, tied and untied
//! outputs, with and without QK-norm (llama.cpp `qwen3` and `llama`), every
//! storage type the native kernels run (Q4_0, Q4_1, Q8_0, Q4_K, F16, F32,
//! and the study's group-64 Q4_1), one and two threads.

use pocketbench_probe::engine::CandleModel;
use pocketbench_probe::gguf::{write_model, write_model_with_std};
use pocketbench_probe::native::{LoadError, NativeModel, CHUNK, NATIVE_TYPES};
use pocketbench_types::arch::{Quant, ShapeSpec};

#[path = "../../pocketbench/tests/common/mod.rs"]
mod common;

fn model_file(quant: Quant, tied: bool, dir: &tempfile::TempDir) -> std::path::PathBuf {
    model_file_of(quant, tied, true, dir)
}

fn model_file_of(quant: Quant, tied: bool, qk_norm: bool, dir: &tempfile::TempDir) -> std::path::PathBuf {
    // Q4_K stores rows in super-blocks of 256: every width a multiple.
    let wide = matches!(quant, Quant::Q4K | Quant::Q6K);
    let shape = ShapeSpec {
        tied: Some(tied),
        quant: Some(quant),
        qk_norm: Some(qk_norm),
        hidden: Some(if wide { 256 } else { 128 }),
        ffn: Some(if wide { 512 } else { 256 }),
        ..common::tiny_spec()
    }
    .resolve()
    .unwrap();
    let path = dir.path().join(format!("{}-{tied}-{qk_norm}.gguf", quant.to_string().replace(' ', "_")));
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
        (Quant::Q4_1, false, true, 2),
        (Quant::Q4_1, true, false, 1),
        (Quant::Q4K, true, true, 2),
        (Quant::Q4K, false, false, 1),
        (Quant::F16, true, false, 2),
        (Quant::F32, false, true, 1),
        (Quant::Int { bits: 4, group: 64, zero_point: true }, true, true, 2),
        (Quant::Int { bits: 4, group: 128, zero_point: false }, false, false, 1),
    ] {
        let path = model_file_of(quant, tied, qk_norm, &dir);
        let mut reference = CandleModel::load(&path).unwrap();
        assert!(matches!(reference, CandleModel::Llama(_)) != qk_norm, "qwen3 with QK-norm, llama without");
        let mut native = NativeModel::load(&path, threads, CHUNK + 16).unwrap();
        assert_eq!(native.config().vocab, 512);
        let case = format!("{quant} tied={tied} qk-norm={qk_norm}");
        // A group-64 or group-128 file's 4-bit matrices keep each repeated
        // scale once (every one of them: the tiny shape's rows are whole
        // groups of eight); no other file shares scales.
        let (bytes, shared) = native.weight_bytes();
        let grouped = matches!(quant, Quant::Int { .. });
        assert_eq!(shared > 0, grouped, "{case}: {shared} matrices share scales");
        if grouped {
            assert!((bytes as u64) < std::fs::metadata(&path).unwrap().len() * 95 / 100, "{case}: {bytes} bytes held");
        }

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
fn other_tensor_types_are_refused_with_the_types_it_runs_and_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = model_file(Quant::Q6K, true, &dir);
    match NativeModel::load(&path, 1, 64) {
        Err(LoadError::Unsupported(why)) => assert!(why.contains(NATIVE_TYPES), "{why}"),
        Err(LoadError::Engine(e)) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("q6_k has no native kernels"),
    }
    let mut m = NativeModel::load(&model_file(Quant::Q4_0, true, &dir), 1, 16).unwrap();
    assert!(m.forward(&[1; 17], 0).unwrap_err().0.contains("exceed the context of 16"));
    assert!(m.forward(&[512], 0).unwrap_err().0.contains("outside the vocabulary"));
    assert!(m.forward(&[], 0).is_err());
}
