//! `pocketbench arch` and `pocketbench presets`.

use clap::Args;
use pocketbench::arch::account::{decode_flops, prefill_flops};
use pocketbench::arch::{Accounting, Shape, PRESETS};
use pocketbench::units::{ByteSize, ParamCount};
use serde::Serialize;

use super::{Code, ShapeArgs};

/// Arguments of `arch`.
#[derive(Debug, Args)]
pub struct ArchArgs {
    /// The configuration.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ArchJson {
    config_id: String,
    config_name: String,
    #[serde(flatten)]
    shape: Shape,
    #[serde(flatten)]
    acct: Accounting,
    package_mb: f64,
    decode_flops_per_token_at_1024: f64,
    prefill_flops_1024: f64,
    notes: &'static str,
}

/// Run `arch`.
pub fn run(a: &ArchArgs) -> pocketbench::Result<Code> {
    let shape = a.shape.resolve()?;
    let acct = shape.accounting();
    if a.json {
        let j = ArchJson {
            config_id: shape.id(),
            config_name: shape.to_string(),
            shape,
            acct,
            package_mb: acct.package_bytes as f64 / 1e6,
            decode_flops_per_token_at_1024: decode_flops(&shape, &acct, 1024.0),
            prefill_flops_1024: prefill_flops(&shape, &acct, 1024.0),
            notes: "arithmetic from the shape; package adds a tokenizer/graph estimate (23.5 B x vocab + 0.93 MB); kv_bytes_per_token at f16; MB = 10^6 B",
        };
        outln!("{}", super::pretty(&j)?);
        return Ok(Code::Ok);
    }
    let b = |v: u64| ByteSize(v as f64).to_string();
    let p = |v: u64| ParamCount(v as f64).to_string();
    outln!("{}  (id {}; arithmetic from the shape, nothing measured)", shape, shape.id());
    outln!(
        "  shape           hidden {}, layers {}, heads {}/{} kv, head-dim {}, ffn {}, vocab {}, {}, {}, {}",
        shape.hidden,
        shape.layers,
        shape.heads,
        shape.kv_heads,
        shape.head_dim,
        shape.ffn,
        shape.vocab,
        if shape.tied { "tied" } else { "untied" },
        if shape.qk_norm { "qk-norm" } else { "no qk-norm" },
        shape.quant
    );
    outln!(
        "  parameters      {} total, {} non-embedding, {} per layer",
        p(acct.params_total),
        p(acct.params_non_embedding),
        p(acct.params_per_layer)
    );
    outln!(
        "  weights         {} ({} bits/weight for matrices, f32 norms)",
        b(acct.weight_bytes),
        shape.quant.bits_per_weight()
    );
    outln!("  package         {} (weights + tokenizer/graph estimate)", b(acct.package_bytes));
    outln!(
        "  read per token  {} of weights + {} of KV cache per context position (f16)",
        b(acct.weight_bytes_per_token),
        b(acct.kv_bytes_per_token)
    );
    outln!(
        "  FLOPs           {:.3} G per decoded token at context 1024; {:.1} G to prefill 1024 tokens",
        decode_flops(&shape, &acct, 1024.0) / 1e9,
        prefill_flops(&shape, &acct, 1024.0) / 1e9
    );
    Ok(Code::Ok)
}

/// Run `presets`.
pub fn presets() -> pocketbench::Result<Code> {
    outln!(
        "{:<16} {:>6} {:>6} {:>8} {:>9} {:>6} {:>7} {:>9}  source",
        "preset",
        "hidden",
        "layers",
        "heads",
        "head-dim",
        "ffn",
        "vocab",
        "params"
    );
    for p in PRESETS {
        let s = p.shape;
        outln!(
            "{:<16} {:>6} {:>6} {:>8} {:>9} {:>6} {:>7} {:>9}  {}",
            p.name,
            s.hidden,
            s.layers,
            format!("{}/{}", s.heads, s.kv_heads),
            s.head_dim,
            s.ffn,
            s.vocab,
            ParamCount(s.accounting().params_total as f64).to_string(),
            p.source
        );
    }
    Ok(Code::Ok)
}
