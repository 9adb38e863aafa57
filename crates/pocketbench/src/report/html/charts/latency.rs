//! The inter-token latency distribution of measured configurations: each
//! one's decode steps by percentile, so a tail (a slow step every so
//! often: a page fault, a preempted thread, a throttled core) shows where
//! a median hides it.

use super::super::scatter::{render, Guide, Marker, Scatter, Series};
use super::{point, Figure, PALETTE};
use crate::record::Record;

/// Curves drawn at most (the slowest p99 first).
pub const MAX_CURVES: usize = 8;

/// A record, its curve, its p99.
type Timed<'a> = (&'a Record, Vec<(f64, f64)>, f64);

/// The figure, or `None` when no measured record timed its steps.
pub fn figure(measured: &[&Record]) -> Result<Option<Figure>, String> {
    let mut timed: Vec<Timed> = measured
        .iter()
        .filter_map(|r| {
            let m = r.measurement.as_ref()?;
            let curve = crate::trust::latency_curve(&m.probe);
            Some((*r, curve, m.itl?.p99_ms))
        })
        .filter(|(_, c, _)| !c.is_empty())
        .collect();
    if timed.is_empty() {
        return Ok(None);
    }
    timed.sort_by(|a, b| b.2.total_cmp(&a.2));
    let left_out = timed.len().saturating_sub(MAX_CURVES);
    let series = timed
        .iter()
        .take(MAX_CURVES)
        .enumerate()
        .map(|(i, (r, curve, _))| Series {
            name: format!("{} on {}", r.config_name, r.device),
            color: PALETTE[i % PALETTE.len()],
            marker: Marker::Filled,
            line: true,
            points: curve.iter().map(|(p, ms)| point(r, *p, *ms, 3.0)).collect(),
        })
        .collect();
    let more =
        if left_out > 0 { format!(" {left_out} more not drawn (results.jsonl has them).") } else { String::new() };
    Ok(Some(Figure {
        title: "Inter-token latency distribution".into(),
        note: format!(
            "Each measured configuration's decode steps (timer after every step, retaken repetitions left out) by percentile: the curve's right end is its slowest steps. The slowest p99 first, at most {MAX_CURVES}.{more}"
        ),
        svg: render(&Scatter {
            x_label: "percentile of decode steps".into(),
            y_label: "inter-token latency (ms)".into(),
            x_log: false,
            y_log: false,
            series,
            guides: vec![Guide::Vertical(99.0, "p99".into())],
        })?,
    }))
}
