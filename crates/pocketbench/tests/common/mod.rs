//! Shared by the integration tests (the harness's and the probe's): the tiny configuration every test that
//! builds and runs a real model uses (small enough for a debug build).

use pocketbench_types::arch::{Shape, ShapeSpec};

/// hidden 128, 2 layers, 4 heads of 32 (2 KV), FFN 256, vocabulary 512, context 256.
pub fn tiny_spec() -> ShapeSpec {
    ShapeSpec {
        hidden: Some(128),
        layers: Some(2),
        head_dim: Some(32),
        kv_heads: Some(2),
        ffn: Some(256),
        vocab: Some(512),
        context: Some(256),
        ..Default::default()
    }
}

/// [`tiny_spec`], resolved.
#[allow(dead_code)] // not every test binary uses both helpers
pub fn tiny() -> Shape {
    tiny_spec().resolve().expect("the tiny shape is valid")
}
