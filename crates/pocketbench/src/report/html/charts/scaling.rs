//! Parameters against decode speed, peak memory and energy per run, every
//! device a series, each with its budget line.

use super::super::scatter::{render, Guide, Marker, Scatter, Series};
use super::{point, sampled, Figure, MAX_POINTS, PALETTE};
use crate::outcome::DeviceSummary;
use crate::record::Record;

/// Which figure of a record a scaling chart plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Decode tok/s, against the decode budget.
    Decode,
    /// Peak memory increase MB, against the memory budget.
    Memory,
    /// Energy per 100 runs as a share of the battery (%), against 1%.
    Energy,
}

/// The chart of `metric` against parameters over every device.
pub fn figure(metric: Metric, devices: &[DeviceSummary], results: &[Record]) -> Result<Figure, String> {
    let per_device = (MAX_POINTS / devices.len().max(1)).max(50);
    let mut series = Vec::new();
    let mut guides: Vec<Guide> = Vec::new();
    let mut left_total = 0;
    let mut shown = 0;
    for (i, d) in devices.iter().enumerate() {
        let recs: Vec<&Record> = results.iter().filter(|r| r.device == d.device).collect();
        let (kept, left) = super::super::studies::decimate(&recs, per_device);
        left_total += left;
        let value = |r: &Record| match metric {
            Metric::Decode => Some(r.decode_tok_s),
            Metric::Memory => Some(r.peak_mem_increase_mb),
            Metric::Energy => r.battery_fraction_per_run.map(|f| f * 100.0 * 100.0),
        };
        let points: Vec<_> = kept
            .iter()
            .filter_map(|r| {
                value(r).map(|v| point(r, (r.params_total as f64).log10(), v, if r.feasible { 4.0 } else { 2.5 }))
            })
            .collect();
        shown += points.len();
        if points.is_empty() {
            continue;
        }
        series.push(Series {
            name: d.device.clone(),
            color: PALETTE[i % PALETTE.len()],
            marker: Marker::Filled,
            line: false,
            points,
        });
        let g = match metric {
            Metric::Decode => {
                Some((d.budget_decode_tok_s, format!("decode budget {:.0} tok/s", d.budget_decode_tok_s)))
            }
            Metric::Memory => Some((d.budget_memory_mb, format!("memory budget {:.0} MB", d.budget_memory_mb))),
            Metric::Energy => d.budget_energy_j.map(|_| (1.0, "energy budget: 1% per 100 runs".to_string())),
        };
        if let Some((v, label)) = g {
            if !guides.iter().any(|x| matches!(x, Guide::Horizontal(w, _) if *w == v)) {
                guides.push(Guide::Horizontal(v, label));
            }
        }
    }
    let (title, y_label, what) = match metric {
        Metric::Decode => ("Parameters against decode speed", "decode speed (tok/s)", "decode speed"),
        Metric::Memory => ("Parameters against peak memory", "peak memory increase (MB)", "peak memory increase over the engine's baseline"),
        Metric::Energy => ("Parameters against energy", "battery share per 100 runs (%)", "energy per run as a share of the device's battery, times 100 runs (devices without a battery are left out)"),
    };
    Ok(Figure {
        title: title.into(),
        note: format!(
            "The {what} of every configuration on every device against its parameter count (log scale); larger points meet every budget.{}",
            sampled(left_total, shown)
        ),
        svg: render(&Scatter {
            x_label: "parameters (log scale)".into(),
            y_label: y_label.into(),
            x_log: true,
            y_log: false,
            series,
            guides,
        })?,
    })
}
