//! The depth study: decode speed and capability against layers at about
//! equal size, one line per device.

use super::super::scatter::{render, Scatter};
use super::super::studies::DepthStudy;
use super::{per_device, Figure};
use crate::outcome::DeviceSummary;
use crate::record::Record;
use crate::units::ParamCount;

/// Decode (`capability = false`) or capability against layers.
pub fn figure(
    study: &DepthStudy,
    capability: bool,
    devices: &[DeviceSummary],
    results: &[Record],
) -> Result<Figure, String> {
    let picks: Vec<(f64, &str)> = study.by_layers.iter().map(|(l, id)| (*l as f64, id.as_str())).collect();
    // The capability proxy does not depend on the device: one line says it.
    let max = if capability { 1 } else { devices.len() };
    let y = |r: &Record| if capability { r.capability } else { r.decode_tok_s };
    let series = per_device(devices, results, &picks, y, true, max);
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
