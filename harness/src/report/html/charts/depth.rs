//! The depth study: decode speed and capability against layers at about
//! equal size, one line per device.

use super::super::scatter::{render, Marker, Scatter, Series};
use super::super::studies::DepthStudy;
use super::{point, Figure, PALETTE};
use crate::record::Record;
use crate::sweep::DeviceSummary;
use crate::units::ParamCount;

/// Decode (`capability = false`) or capability against layers.
pub fn figure(
    study: &DepthStudy,
    capability: bool,
    devices: &[DeviceSummary],
    results: &[Record],
) -> Result<Figure, String> {
    let mut series = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let points: Vec<_> = study
            .by_layers
            .iter()
            .filter_map(|(layers, id)| {
                results.iter().find(|r| r.device == d.device && &r.config_id == id).map(|r| (layers, r))
            })
            .map(|(layers, r)| point(r, *layers as f64, if capability { r.capability } else { r.decode_tok_s }, 4.0))
            .collect();
        if points.is_empty() {
            continue;
        }
        series.push(Series {
            name: d.device.clone(),
            color: PALETTE[i % PALETTE.len()],
            marker: Marker::Filled,
            line: true,
            points,
        });
        if capability {
            // The capability proxy does not depend on the device: one line says it.
            break;
        }
    }
    let (title, y) = if capability {
        ("Depth study: capability against layers", "capability (proxy score)")
    } else {
        ("Depth study: decode speed against layers", "decode speed (tok/s)")
    };
    Ok(Figure {
        title: title.into(),
        note: format!(
            "Per layer count the configuration closest to {} parameters (within 15%): how depth trades speed for capability at equal size.",
            ParamCount(study.params as f64)
        ),
        svg: render(&Scatter { x_label: "layers".into(), y_label: y.into(), x_log: false, y_log: false, series, guides: vec![] })?,
    })
}
