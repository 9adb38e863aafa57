//! The vocabulary study: decode speed and peak memory against vocabulary
//! size for configurations alike in everything else.

use super::super::scatter::{render, Scatter};
use super::super::studies::VocabStudy;
use super::{per_device, Figure};
use crate::outcome::DeviceSummary;
use crate::record::Record;

/// Decode (`memory = false`) or peak memory against vocabulary.
pub fn figure(
    study: &VocabStudy,
    memory: bool,
    devices: &[DeviceSummary],
    results: &[Record],
) -> Result<Figure, String> {
    let picks: Vec<(f64, &str)> =
        study.groups.iter().flat_map(|g| g.iter()).map(|(v, id)| ((*v as f64).log10(), id.as_str())).collect();
    let y = |r: &Record| if memory { r.peak_mem_increase_mb } else { r.decode_tok_s };
    let series = per_device(devices, results, &picks, y, false, devices.len());
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
