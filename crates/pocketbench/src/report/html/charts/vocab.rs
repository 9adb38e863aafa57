//! The vocabulary study answers one question: at a given model size, which
//! vocabulary buys more? One line per vocabulary size, through the groups of
//! configurations alike but for their vocabulary, against the model's total
//! parameters: capability (the proxy, the same on every device) in one
//! chart, decode speed on the sweep's first device in the other. A smaller
//! vocabulary moves a line left (fewer embedding parameters at the same
//! body) and, at the same total size, up.

use super::super::scatter::{render, Marker, Point, Scatter, Series};
use super::super::studies::VocabStudy;
use super::{point, Figure, PALETTE};
use crate::outcome::DeviceSummary;
use crate::record::Record;

/// Capability (`decode = false`) or decode speed on the first device,
/// against total parameters, one line per vocabulary size.
pub fn figure(
    study: &VocabStudy,
    decode: bool,
    devices: &[DeviceSummary],
    results: &[Record],
) -> Result<Figure, String> {
    let device = devices.first().map(|d| d.device.as_str()).unwrap_or_default();
    let series: Vec<Series> = study
        .vocabs
        .iter()
        .enumerate()
        .map(|(i, vocab)| {
            let mut points: Vec<Point> = study
                .groups
                .iter()
                .filter_map(|g| g.get(vocab))
                .filter_map(|id| results.iter().find(|r| r.device == device && &r.config_id == id))
                .map(|r| {
                    let y = if decode { r.decode_tok_s } else { r.capability };
                    point(r, (r.params_total as f64).log10(), y, 4.0)
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                name: format!("vocabulary {vocab}"),
                color: PALETTE[i % PALETTE.len()],
                marker: Marker::Filled,
                line: true,
                points,
            }
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let (title, y_label, what) = if decode {
        (
            format!("Vocabulary study: decode speed by model size on {device}"),
            "decode speed (tok/s)",
            format!("decode speed on {device}, predicted or measured as each point's tooltip says"),
        )
    } else {
        (
            "Vocabulary study: capability by model size".to_string(),
            "capability (proxy score)",
            "the capability proxy, which counts only non-embedding parameters and is the same on every device"
                .to_string(),
        )
    };
    let sizes: Vec<String> = study.vocabs.iter().map(u32::to_string).collect();
    Ok(Figure {
        title,
        note: format!(
            "{} groups of configurations alike but for their vocabulary ({}), one line per vocabulary: {what}. At equal total size, the higher line is the better vocabulary.{}",
            study.total,
            sizes.join(" and "),
            if study.groups.len() < study.total {
                format!(" An evenly spaced {} of the groups are drawn.", study.groups.len())
            } else {
                String::new()
            }
        ),
        svg: render(&Scatter {
            x_label: "total parameters (log scale)".into(),
            y_label: y_label.into(),
            x_log: true,
            y_log: false,
            series,
            guides: vec![],
        })?,
    })
}
