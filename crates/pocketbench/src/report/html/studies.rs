//! What the page's study charts show, computed from the records before any
//! chart draws: which configurations form a depth study (one per depth at
//! about equal size) and a vocabulary study (shapes alike but for their
//! vocabulary), detected from the plan's configurations, not from a file
//! name; and which points a chart keeps when a sweep is too large to draw
//! every one.

use std::collections::BTreeMap;

use crate::record::{Provenance, Record};

/// A depth study: per layer count, the configuration closest to the
/// sweep's median size, when at least three depths have one within 15%.
#[derive(Debug, Clone, PartialEq)]
pub struct DepthStudy {
    /// Configuration ids by layer count.
    pub by_layers: BTreeMap<u32, String>,
    /// The size they share, parameters (the median).
    pub params: u64,
}

/// Find a depth study among one device's records.
pub fn depth(recs: &[&Record]) -> Option<DepthStudy> {
    let mut sizes: Vec<u64> = recs.iter().map(|r| r.params_total).collect();
    if sizes.is_empty() {
        return None;
    }
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    let mut best: BTreeMap<u32, (&Record, f64)> = BTreeMap::new();
    for r in recs {
        let off = (r.params_total as f64 / median as f64 - 1.0).abs();
        let e = best.entry(r.shape.layers).or_insert((r, off));
        if off < e.1 || (off == e.1 && r.config_id < e.0.config_id) {
            *e = (r, off);
        }
    }
    let by_layers: BTreeMap<u32, String> =
        best.into_iter().filter(|(_, (_, off))| *off <= 0.15).map(|(l, (r, _))| (l, r.config_id.clone())).collect();
    (by_layers.len() >= 3).then_some(DepthStudy { by_layers, params: median })
}

/// A vocabulary study: groups of configurations that differ only in their
/// vocabulary, each group covering at least two vocabulary sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct VocabStudy {
    /// The vocabulary sizes seen, ascending.
    pub vocabs: Vec<u32>,
    /// Each group drawn: configuration id by vocabulary.
    pub groups: Vec<BTreeMap<u32, String>>,
    /// Groups found (more than drawn on a large sweep).
    pub total: usize,
}

/// Vocabulary groups drawn at most.
pub const MAX_VOCAB_GROUPS: usize = 40;

/// Find a vocabulary study among one device's records.
pub fn vocab(recs: &[&Record]) -> Option<VocabStudy> {
    let mut groups: BTreeMap<String, BTreeMap<u32, String>> = BTreeMap::new();
    for r in recs {
        let s = r.shape;
        let key = format!(
            "{}-{}-{}-{}-{}-{}-{}-{}-{}-{}",
            s.hidden, s.layers, s.heads, s.kv_heads, s.head_dim, s.ffn, s.tied, s.qk_norm, s.quant, s.context
        );
        groups.entry(key).or_default().insert(s.vocab, r.config_id.clone());
    }
    let all: Vec<BTreeMap<u32, String>> = groups.into_values().filter(|g| g.len() >= 2).collect();
    let total = all.len();
    // An evenly spaced share of the groups keeps the charts light on large sweeps.
    let step = total.div_ceil(MAX_VOCAB_GROUPS).max(1);
    let groups: Vec<BTreeMap<u32, String>> = all.into_iter().step_by(step).collect();
    let mut vocabs: Vec<u32> = groups.iter().flat_map(|g| g.keys().copied()).collect();
    vocabs.sort_unstable();
    vocabs.dedup();
    (!groups.is_empty() && vocabs.len() >= 2).then_some(VocabStudy { vocabs, groups, total })
}

/// At most `cap` of `recs` for one chart: every frontier and measured record,
/// then an evenly spaced share of the rest (a deterministic sample). Returns
/// the kept records and how many were left out.
pub fn decimate<'a>(recs: &[&'a Record], cap: usize) -> (Vec<&'a Record>, usize) {
    let keep = |r: &Record| r.on_frontier || r.provenance == Provenance::Measured;
    let mut out: Vec<&Record> = recs.iter().copied().filter(|r| keep(r)).collect();
    let rest: Vec<&Record> = recs.iter().copied().filter(|r| !keep(r)).collect();
    let room = cap.saturating_sub(out.len());
    if rest.len() <= room {
        out.extend(rest);
        return (out, 0);
    }
    let step = rest.len() as f64 / room.max(1) as f64;
    let picked: Vec<&Record> = (0..room).map(|i| rest[(i as f64 * step) as usize]).collect();
    let left = rest.len() - picked.len();
    out.extend(picked);
    (out, left)
}

/// The frontier's outline in a chart's plane: of `points` (x, y, both more
/// is better), those no other point beats on both, ordered by x. A frontier
/// over four objectives projected onto two is a cloud; its outline is the
/// line the chart draws through it.
pub fn outline(points: &[(f64, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|a, b| points[*b].0.total_cmp(&points[*a].0).then(points[*b].1.total_cmp(&points[*a].1)));
    let mut best = f64::NEG_INFINITY;
    let mut keep = Vec::new();
    for i in order {
        if points[i].1 > best {
            best = points[i].1;
            keep.push(i);
        }
    }
    keep.reverse();
    keep
}
