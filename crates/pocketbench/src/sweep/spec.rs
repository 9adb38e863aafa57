//! The sweep file format (`sweeps/*.toml`) as written.

use serde::Deserialize;

use super::axis::Axis;
use crate::arch::Quant;
use crate::capability::ProxySettings;
use crate::pareto::Objective;
use crate::units::{Fraction, ParamCount};
use crate::workload::WorkloadSpec;

/// Default cap on the number of configurations a sweep may expand to.
pub const DEFAULT_MAX_CONFIGS: usize = 20_000;

/// A whole sweep file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SweepToml {
    /// Name and devices.
    pub sweep: Meta,
    /// The run each configuration is judged on.
    #[serde(default)]
    pub workload: WorkloadSpec,
    /// The configuration space.
    pub space: Space,
    /// Capability proxy settings.
    #[serde(default)]
    pub capability: ProxySettings,
    /// Frontier settings.
    #[serde(default)]
    pub frontier: FrontierToml,
    /// The regression gate's settings (`pocketbench gate --sweep FILE`).
    #[serde(default)]
    pub gate: Option<crate::gate::Settings>,
}

/// Sweep identity.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Meta {
    /// Short name (also the default output folder).
    pub name: String,
    /// What the sweep is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Device ids to predict on.
    pub devices: Vec<String>,
    /// Cap on the expanded size (before the parameter window).
    #[serde(default)]
    pub max_configs: Option<usize>,
}

/// The configuration space.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Space {
    /// Layers.
    pub layers: Axis<u32>,
    /// Hidden size.
    pub hidden: Axis<u32>,
    /// Head width (default 64).
    #[serde(default)]
    pub head_dim: Option<Axis<u32>>,
    /// Query heads (default hidden / head-dim).
    #[serde(default)]
    pub heads: Option<Axis<u32>>,
    /// KV heads.
    pub kv_heads: Axis<u32>,
    /// FFN width, absolute (exclusive with `ffn-mult`).
    #[serde(default)]
    pub ffn: Option<Axis<u32>>,
    /// FFN width as a multiple of hidden (exclusive with `ffn`).
    #[serde(default)]
    pub ffn_mult: Option<Axis<f64>>,
    /// Round multiplied FFN widths to a multiple of this (default 64).
    #[serde(default)]
    pub ffn_round: Option<u32>,
    /// Vocabulary sizes.
    pub vocab: Axis<u32>,
    /// Tied embeddings (default true).
    #[serde(default)]
    pub tied: Option<Axis<bool>>,
    /// QK-norm (default true).
    #[serde(default)]
    pub qk_norm: Option<Axis<bool>>,
    /// Quantizations (default q4_0).
    #[serde(default)]
    pub quant: Option<Axis<Quant>>,
    /// Maximum context (default: 4096 or the workload's context if larger).
    #[serde(default)]
    pub context: Option<Axis<u32>>,
    /// Parameter window.
    #[serde(default)]
    pub params: Option<ParamsWindow>,
    /// Which configurations to keep after the window.
    #[serde(default)]
    pub select: Select,
}

/// A window on the parameter count.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ParamsWindow {
    /// Lower bound.
    #[serde(default)]
    pub min: Option<ParamCount>,
    /// Upper bound.
    #[serde(default)]
    pub max: Option<ParamCount>,
    /// A target; with `tolerance` it defines the window, and `closest-per-layers` aims at it.
    #[serde(default)]
    pub target: Option<ParamCount>,
    /// Relative window around `target` ("5%").
    #[serde(default)]
    pub tolerance: Option<Fraction>,
    /// Which count the window applies to.
    #[serde(default)]
    pub count: ParamsCount,
}

/// Which parameter count a window applies to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParamsCount {
    /// All parameters.
    #[default]
    Total,
    /// Non-embedding parameters.
    NonEmbedding,
}

/// Post-window selection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Select {
    /// Keep every configuration in the window.
    #[default]
    All,
    /// Per layer count, keep the one closest to `params.target` (iso-parameter depth studies).
    ClosestPerLayers,
}

/// Frontier settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FrontierToml {
    /// Objectives (default all four).
    #[serde(default = "all_objectives")]
    pub objectives: Vec<Objective>,
}

impl Default for FrontierToml {
    fn default() -> Self {
        FrontierToml { objectives: all_objectives() }
    }
}

fn all_objectives() -> Vec<Objective> {
    crate::pareto::ALL.to_vec()
}
