//! The vocabulary study: decode speed and peak memory against vocabulary
//! size for configurations alike in everything else.

use super::super::scatter::{render, Marker, Scatter, Series};
use super::super::studies::VocabStudy;
use super::{point, Figure, PALETTE};
use crate::record::Record;
use crate::sweep::DeviceSummary;

/// Decode (`memory = false`) or peak memory against vocabulary.
pub fn figure(
    study: &VocabStudy,
    memory: bool,
    devices: &[DeviceSummary],
    results: &[Record],
) -> Result<Figure, String> {
    let mut series = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let points: Vec<_> = study
            .groups
            .iter()
            .flat_map(|g| g.iter())
            .filter_map(|(v, id)| results.iter().find(|r| r.device == d.device && &r.config_id == id).map(|r| (v, r)))
            .map(|(v, r)| {
                point(r, (*v as f64).log10(), if memory { r.peak_mem_increase_mb } else { r.decode_tok_s }, 3.5)
            })
            .collect();
        if !points.is_empty() {
            series.push(Series {
                name: d.device.clone(),
                color: PALETTE[i % PALETTE.len()],
                marker: Marker::Filled,
                line: false,
                points,
            });
        }
    }
    let (title, y) = if memory {
        ("Vocabulary study: peak memory against vocabulary", "peak memory increase (MB)")
    } else {
        ("Vocabulary study: decode speed against vocabulary", "decode speed (tok/s)")
    };
    let vocabs: Vec<String> = study.vocabs.iter().map(u32::to_string).collect();
    Ok(Figure {
        title: title.into(),
        note: format!(
            "{} groups of configurations alike but for their vocabulary ({}): the embedding and output layer's share of speed and memory.{}",
            study.total,
            vocabs.join(", "),
            if study.groups.len() < study.total {
                format!(" An evenly spaced {} of them are drawn.", study.groups.len())
            } else {
                String::new()
            }
        ),
        svg: render(&Scatter { x_label: "vocabulary (tokens, log scale)".into(), y_label: y.into(), x_log: true, y_log: false, series, guides: vec![] })?,
    })
}
