//! The Pareto frontier of one device: capability against decode speed,
//! point size for peak memory, feasible and infeasible apart, the frontier
//! joined by a line, the decode budget drawn.

use super::super::scatter::{render, Guide, Marker, Scatter, Series};
use super::{point, sampled, Figure, MAX_POINTS};
use crate::outcome::DeviceSummary;
use crate::record::Record;
use plotters::style::RGBColor;

/// The frontier chart of `device` over its records.
pub fn figure(device: &DeviceSummary, recs: &[&Record]) -> Result<Figure, String> {
    let (kept, left) = super::super::studies::decimate(recs, MAX_POINTS);
    let radius = |r: &Record| 3.0 + 6.0 * (r.peak_mem_increase_mb / device.budget_memory_mb.max(1.0)).clamp(0.0, 1.5);
    let front: Vec<&Record> = kept.iter().copied().filter(|r| r.on_frontier).collect();
    let xy: Vec<(f64, f64)> = front.iter().map(|r| (r.decode_tok_s, r.capability)).collect();
    let line: Vec<&Record> = super::super::studies::outline(&xy).into_iter().map(|i| front[i]).collect();
    let rest: Vec<&Record> =
        front.iter().copied().filter(|r| !line.iter().any(|l| l.config_id == r.config_id)).collect();
    let series = |name: &str, color, marker, line, rs: Vec<&Record>| Series {
        name: name.into(),
        color,
        marker,
        line,
        points: rs.iter().map(|r| point(r, r.decode_tok_s, r.capability, radius(r))).collect(),
    };
    let feasible: Vec<&Record> = kept.iter().copied().filter(|r| r.feasible && !r.on_frontier).collect();
    let infeasible: Vec<&Record> = kept.iter().copied().filter(|r| !r.feasible).collect();
    let s = Scatter {
        x_label: "decode speed (tok/s)".into(),
        y_label: "capability (proxy score)".into(),
        x_log: false,
        y_log: false,
        series: vec![
            series("over a budget", RGBColor(150, 150, 150), Marker::Hollow, false, infeasible),
            series("feasible", RGBColor(0, 158, 115), Marker::Filled, false, feasible),
            series("Pareto frontier", RGBColor(0, 114, 178), Marker::Filled, false, rest),
            series("frontier outline (capability x decode)", RGBColor(0, 114, 178), Marker::Filled, true, line),
        ],
        guides: vec![Guide::Vertical(
            device.budget_decode_tok_s,
            format!("decode budget {:.0} tok/s", device.budget_decode_tok_s),
        )],
    };
    Ok(Figure {
        title: format!("Pareto frontier on {}", device.device),
        note: format!(
            "Capability against decode speed for every configuration on {}; point size grows with peak memory (the largest at 1.5x the {:.0} MB budget or more). The frontier (blue) is the feasible configurations no other feasible one beats on every objective (capability, decode, memory, energy); its line is the frontier's outline in this plane.{}",
            device.name,
            device.budget_memory_mb,
            sampled(left, kept.len())
        ),
        svg: render(&s)?,
    })
}
