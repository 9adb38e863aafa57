//! One chart, one file: each turns already-computed records into a
//! [`Figure`] through the shared [`super::scatter`] drawing. No chart
//! computes a statistic.

pub mod depth;
pub mod frontier;
pub mod latency;
pub mod measured;
pub mod scaling;
pub mod throttle;
pub mod vocab;

use plotters::style::RGBColor;

use super::scatter::{Marker, Point, Series};
use crate::outcome::DeviceSummary;
use crate::record::Record;
use crate::units::ParamCount;

/// Points a chart draws at most (the page stays light on huge sweeps).
pub const MAX_POINTS: usize = 600;

/// A drawn chart with its words.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Heading (escaped when written).
    pub title: String,
    /// What it shows and where its numbers come from (escaped when written).
    pub note: String,
    /// The SVG element.
    pub svg: String,
}

/// Series colours, one per device (Okabe-Ito, readable by colour-blind readers).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 120),
];

/// The tooltip of a record's point: what it is and every headline figure.
pub fn tip(r: &Record) -> String {
    format!(
        "{} on {} ({})\n{} params, capability {:.1}\ndecode {:.0} tok/s, peak {:.0} MB, {:.2} J/run\n{}{}",
        r.config_name,
        r.device,
        r.config_id,
        ParamCount(r.params_total as f64),
        r.capability,
        r.decode_tok_s,
        r.peak_mem_increase_mb,
        r.energy_j_per_run,
        r.provenance_label(),
        if r.feasible { ", feasible" } else { ", over a budget" }
    )
}

/// A record's point at (x, y).
pub fn point(r: &Record, x: f64, y: f64, radius: f64) -> Point {
    Point { x, y, r: radius, tip: tip(r) }
}

/// "N of M points shown" when a chart was decimated.
pub fn sampled(left_out: usize, shown: usize) -> String {
    if left_out == 0 {
        String::new()
    } else {
        format!(
            " Showing {shown} of {} points: every frontier and measured point, and an evenly spaced sample of the rest ({left_out} left out; results.jsonl has them all).",
            shown + left_out
        )
    }
}

/// One series per device (at most `max_devices`) of the records `picks`
/// names, each at its given x and at `y(record)`: the shape of the study charts.
pub fn per_device(
    devices: &[DeviceSummary],
    results: &[Record],
    picks: &[(f64, &str)],
    y: impl Fn(&Record) -> f64,
    line: bool,
    max_devices: usize,
) -> Vec<Series> {
    let mut series = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let points: Vec<Point> = picks
            .iter()
            .filter_map(|(x, id)| {
                results.iter().find(|r| r.device == d.device && r.config_id == *id).map(|r| point(r, *x, y(r), 4.0))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        series.push(Series {
            name: d.device.clone(),
            color: PALETTE[i % PALETTE.len()],
            marker: Marker::Filled,
            line,
            points,
        });
        if series.len() == max_devices {
            break;
        }
    }
    series
}
