//! Expanding a sweep file into a validated plan: every shape checked, invalid
//! ones counted by reason, the parameter window applied, duplicates removed,
//! in a deterministic order (parameter count, then id).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::spec::{ParamsCount, Select, Space, SweepToml, DEFAULT_MAX_CONFIGS};
use super::SweepError;
use crate::arch::{Accounting, Shape, ShapeError, DEFAULT_CONTEXT};
use crate::capability::ProxySettings;
use crate::pareto::Objective;
use crate::workload::{Workload, WorkloadSpec};

/// Command-line overrides of a sweep file.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Devices instead of the file's.
    pub devices: Option<Vec<String>>,
    /// Workload fields that replace the file's.
    pub workload: WorkloadSpec,
    /// Cap instead of the file's.
    pub max_configs: Option<usize>,
    /// Objectives instead of the file's.
    pub objectives: Option<Vec<Objective>>,
}

/// A validated, expanded sweep, ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Sweep name.
    pub name: String,
    /// The file it came from.
    pub file: PathBuf,
    /// Description.
    pub description: Option<String>,
    /// The workload budgets are judged on.
    pub workload: Workload,
    /// Device ids.
    pub devices: Vec<String>,
    /// Shapes with their accounting, in a stable order.
    pub shapes: Vec<(Shape, Accounting)>,
    /// Capability proxy settings.
    pub proxy: ProxySettings,
    /// Frontier objectives.
    pub objectives: Vec<Objective>,
    /// Dropped configurations by reason.
    pub skipped: Vec<(String, usize)>,
    /// Size of the raw cartesian product.
    pub expanded: usize,
}

/// One of N deterministic shares of a plan (`--shard I/N`, 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which share, 1..=count.
    pub index: u32,
    /// How many shares.
    pub count: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Not a shard: `I/N` with 1 <= I <= N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected I/N with 1 <= I <= N (for example 2/4), got `{0}`")]
pub struct BadShard(pub String);

impl std::str::FromStr for Shard {
    type Err = BadShard;
    fn from_str(s: &str) -> Result<Self, BadShard> {
        let bad = || BadShard(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether a configuration belongs to this share: by a fixed hash of its
    /// id, so every machine splits a plan the same way.
    pub fn holds(&self, config_id: &str) -> bool {
        crate::fnv1a(config_id.as_bytes()) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl Plan {
    /// Keep only `shard`'s configurations (plan order is kept).
    pub fn shard(&mut self, shard: Shard) {
        self.shapes.retain(|(s, _)| shard.holds(&s.id()));
    }

    /// Load and expand a sweep file.
    pub fn from_file(path: &Path, opts: &PlanOptions) -> Result<Plan, crate::Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| crate::config::ConfigError::new(path, None, format!("cannot read: {e}")))?;
        let toml: SweepToml = crate::config::parse(path, &text)?;
        // A key's problem names the line it is written at.
        Ok(Plan::from_toml(path, toml, opts).map_err(|e| match e {
            SweepError::Invalid { file, key, message } => {
                let file = match crate::config::position_of(&text, &key) {
                    Some((line, column)) => format!("{file}:{line}:{column}"),
                    None => file,
                };
                SweepError::Invalid { file, key, message }
            }
            other => other,
        })?)
    }

    /// Expand a parsed sweep: every key checked, the space's size held
    /// against the cap before anything is expanded, each shape validated
    /// and the parameter window applied, duplicates dropped (each reason
    /// counted), and the closest shape per depth kept where asked.
    pub fn from_toml(path: &Path, t: SweepToml, opts: &PlanOptions) -> Result<Plan, SweepError> {
        let file = path.display().to_string();
        let invalid = |key: &str, message: String| SweepError::Invalid { file: file.clone(), key: key.into(), message };
        let workload =
            t.workload.overridden_by(&opts.workload).resolve().map_err(|e| invalid("workload", e.to_string()))?;
        let devices = opts.devices.clone().unwrap_or(t.sweep.devices.clone());
        if devices.is_empty() {
            return Err(invalid("sweep.devices", "names no device".into()));
        }
        let objectives = opts.objectives.clone().unwrap_or(t.frontier.objectives.clone());
        if objectives.is_empty() {
            return Err(invalid("frontier.objectives", "names no objective".into()));
        }
        if let Some(o) = objectives.iter().enumerate().find_map(|(i, o)| objectives[..i].contains(o).then_some(o)) {
            return Err(invalid("frontier.objectives", format!("names `{o}` twice")));
        }
        if let Some(g) = &t.gate {
            g.validate().map_err(|e| invalid("gate", e.0))?;
        }
        let axes = Axes::of(&t.space, &workload).map_err(|(key, message)| invalid(key, message))?;
        let window = window(t.space.params.as_ref()).map_err(|m| invalid("space.params", m))?;
        let target = t.space.params.and_then(|p| p.target);
        if t.space.select == Select::ClosestPerLayers && target.is_none() {
            return Err(invalid("space.select", "`closest-per-layers` needs `params.target`".into()));
        }
        let expanded = axes.lens().iter().try_fold(1usize, |acc, n| acc.checked_mul(*n)).unwrap_or(usize::MAX);
        let cap = opts.max_configs.or(t.sweep.max_configs).unwrap_or(DEFAULT_MAX_CONFIGS);
        if expanded > cap {
            return Err(SweepError::TooLarge { file, count: expanded, cap });
        }
        let count = t.space.params.map(|p| p.count).unwrap_or_default();
        let (mut shapes, mut skipped) = axes.expand(window, count);
        if let (Select::ClosestPerLayers, Some(target)) = (t.space.select, target) {
            let before = shapes.len();
            shapes = closest_per_layers(shapes, target.0);
            *skipped.entry("not the closest to the target at its depth".into()).or_default() += before - shapes.len();
        }
        shapes.sort_by(|a, b| a.1.params_total.cmp(&b.1.params_total).then_with(|| a.0.id().cmp(&b.0.id())));
        let skipped: Vec<(String, usize)> = skipped.into_iter().filter(|(_, n)| *n > 0).collect();
        if shapes.is_empty() {
            let reasons = skipped.iter().map(|(r, n)| format!("{n} {r}")).collect::<Vec<_>>().join(", ");
            return Err(SweepError::Empty { file, reasons });
        }
        Ok(Plan {
            name: t.sweep.name,
            file: path.to_path_buf(),
            description: t.sweep.description,
            workload,
            devices,
            shapes,
            proxy: t.capability,
            objectives,
            skipped,
            expanded,
        })
    }
}

/// The space's axes with their defaults filled in.
struct Axes<'a> {
    space: &'a Space,
    head_dims: Vec<u32>,
    heads: Option<Vec<u32>>,
    tied: Vec<bool>,
    qk: Vec<bool>,
    quants: Vec<crate::arch::Quant>,
    contexts: Vec<u32>,
    ffn_round: u32,
}

impl<'a> Axes<'a> {
    /// The axes of `s`, checked: `(key, message)` of the first problem.
    fn of(s: &'a Space, workload: &Workload) -> Result<Axes<'a>, (&'static str, String)> {
        if s.ffn.is_some() == s.ffn_mult.is_some() {
            return Err(("space", "give exactly one of `ffn` and `ffn-mult`".into()));
        }
        let ffn_round = s.ffn_round.unwrap_or(64);
        if ffn_round == 0 {
            return Err(("space.ffn-round", "must be at least 1".into()));
        }
        let contexts = s.context.as_ref().map_or(vec![DEFAULT_CONTEXT.max(workload.context)], |a| a.0.clone());
        if let Some(c) = contexts.iter().find(|c| **c < workload.context) {
            return Err(("space.context", format!("{c} is smaller than the workload's {} tokens", workload.context)));
        }
        Ok(Axes {
            space: s,
            head_dims: s.head_dim.as_ref().map_or(vec![64], |a| a.0.clone()),
            heads: s.heads.as_ref().map(|a| a.0.clone()),
            tied: s.tied.as_ref().map_or(vec![true], |a| a.0.clone()),
            qk: s.qk_norm.as_ref().map_or(vec![true], |a| a.0.clone()),
            quants: s.quant.as_ref().map_or(vec![crate::arch::Quant::Q4_0], |a| a.0.clone()),
            contexts,
            ffn_round,
        })
    }

    /// Each axis's length, in the order [`Axes::shape`] reads an index.
    fn lens(&self) -> [usize; 11] {
        let s = self.space;
        let ffn_len = s.ffn.as_ref().map_or_else(|| s.ffn_mult.as_ref().map_or(1, |a| a.0.len()), |a| a.0.len());
        [
            s.layers.0.len(),
            s.hidden.0.len(),
            self.head_dims.len(),
            self.heads.as_ref().map_or(1, Vec::len),
            s.kv_heads.0.len(),
            ffn_len,
            s.vocab.0.len(),
            self.tied.len(),
            self.qk.len(),
            self.quants.len(),
            self.contexts.len(),
        ]
    }

    /// The shape at index tuple `ix`, or why there is none.
    fn shape(&self, ix: &[usize; 11]) -> Result<Shape, &'static str> {
        let s = self.space;
        let hidden = s.hidden.0[ix[1]];
        let head_dim = self.head_dims[ix[2]];
        let heads = match &self.heads {
            Some(h) => h[ix[3]],
            None if head_dim != 0 && hidden.is_multiple_of(head_dim) => hidden / head_dim,
            None => return Err("hidden not a multiple of head-dim"),
        };
        let ffn = match (&s.ffn, &s.ffn_mult) {
            (Some(f), _) => f.0[ix[5]],
            (None, Some(m)) => round_to(hidden as f64 * m.0[ix[5]], self.ffn_round),
            (None, None) => unreachable!("checked by Axes::of"),
        };
        let shape = Shape {
            hidden,
            layers: s.layers.0[ix[0]],
            heads,
            kv_heads: s.kv_heads.0[ix[4]],
            head_dim,
            ffn,
            vocab: s.vocab.0[ix[6]],
            tied: self.tied[ix[7]],
            qk_norm: self.qk[ix[8]],
            quant: self.quants[ix[9]],
            context: self.contexts[ix[10]],
        };
        shape.validate().map_err(|e| reason(&e))?;
        Ok(shape)
    }

    /// Every valid, distinct shape inside the parameter window, and how many
    /// were dropped for each reason.
    fn expand(&self, window: (f64, f64), count: ParamsCount) -> (Vec<(Shape, Accounting)>, BTreeMap<String, usize>) {
        let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
        let mut seen = HashSet::new();
        let mut shapes = Vec::new();
        for ix in Odometer::new(self.lens()) {
            let shape = match self.shape(&ix) {
                Ok(s) => s,
                Err(why) => {
                    *skipped.entry(why.into()).or_default() += 1;
                    continue;
                }
            };
            let acct = shape.accounting();
            let n = match count {
                ParamsCount::Total => acct.params_total,
                ParamsCount::NonEmbedding => acct.params_non_embedding,
            } as f64;
            if n < window.0 || n > window.1 {
                *skipped.entry("outside the parameter window".into()).or_default() += 1;
            } else if !seen.insert(shape) {
                *skipped.entry("duplicate (ffn-mult rounding)".into()).or_default() += 1;
            } else {
                shapes.push((shape, acct));
            }
        }
        (shapes, skipped)
    }
}

/// Per depth, the shape whose parameter count is closest to `target`
/// (ties: the smaller id).
fn closest_per_layers(shapes: Vec<(Shape, Accounting)>, target: f64) -> Vec<(Shape, Accounting)> {
    let mut best: BTreeMap<u32, (Shape, Accounting)> = BTreeMap::new();
    for (shape, acct) in shapes {
        let dist = |a: &Accounting| (a.params_total as f64 - target).abs();
        let keep = match best.get(&shape.layers) {
            None => true,
            Some((bs, ba)) => dist(&acct) < dist(ba) || (dist(&acct) == dist(ba) && shape.id() < bs.id()),
        };
        if keep {
            best.insert(shape.layers, (shape, acct));
        }
    }
    best.into_values().collect()
}

/// Every index tuple of a cartesian product, last axis fastest.
struct Odometer<const N: usize> {
    lens: [usize; N],
    next: Option<[usize; N]>,
}

impl<const N: usize> Odometer<N> {
    fn new(lens: [usize; N]) -> Self {
        let next = lens.iter().all(|l| *l > 0).then_some([0; N]);
        Odometer { lens, next }
    }
}

impl<const N: usize> Iterator for Odometer<N> {
    type Item = [usize; N];
    fn next(&mut self) -> Option<[usize; N]> {
        let cur = self.next?;
        let mut n = cur;
        let mut i = N;
        self.next = loop {
            if i == 0 {
                break None;
            }
            i -= 1;
            n[i] += 1;
            if n[i] < self.lens[i] {
                break Some(n);
            }
            n[i] = 0;
        };
        Some(cur)
    }
}

fn round_to(x: f64, m: u32) -> u32 {
    ((x / m as f64).round().max(1.0) as u32) * m
}

fn reason(e: &ShapeError) -> &'static str {
    match e {
        ShapeError::Zero(_) => "a zero dimension",
        ShapeError::TooLarge { .. } => "an absurd dimension",
        ShapeError::HeadsNotDivisible { .. } => "heads not a multiple of kv-heads",
        ShapeError::OddHeadDim(_) => "odd head-dim",
        ShapeError::AttentionWidth { .. } => "heads x head-dim far from hidden",
    }
}

fn window(p: Option<&super::spec::ParamsWindow>) -> Result<(f64, f64), String> {
    let Some(p) = p else { return Ok((0.0, f64::INFINITY)) };
    let (mut lo, mut hi) = (p.min.map_or(0.0, |v| v.0), p.max.map_or(f64::INFINITY, |v| v.0));
    match (p.target, p.tolerance) {
        (Some(t), Some(tol)) => {
            if !(tol.0 >= 0.0 && tol.0 < 1.0) {
                return Err("tolerance must be between 0% and 100%".into());
            }
            lo = lo.max(t.0 * (1.0 - tol.0));
            hi = hi.min(t.0 * (1.0 + tol.0));
        }
        (None, Some(_)) => return Err("`tolerance` needs `target`".into()),
        _ => {}
    }
    if lo > hi {
        return Err(format!("the window is empty (min {lo} > max {hi})"));
    }
    Ok((lo, hi))
}
