//! Predicted against measured for every measured configuration, with the
//! y = x line and a +-10% band.

use super::super::scatter::{render, Guide, Marker, Scatter, Series};
use super::{point, Figure, PALETTE};
use crate::record::Record;

/// Measured decode (`memory = false`) or peak memory against its prediction.
pub fn figure(measured: &[&Record], memory: bool) -> Result<Figure, String> {
    let mut devices: Vec<&str> = measured.iter().map(|r| r.device.as_str()).collect();
    devices.dedup();
    let series = devices
        .iter()
        .enumerate()
        .map(|(i, d)| Series {
            name: format!("measured on {d}"),
            color: PALETTE[i % PALETTE.len()],
            marker: Marker::Filled,
            line: false,
            points: measured
                .iter()
                .filter(|r| r.device == *d)
                .filter_map(|r| {
                    let m = r.measurement.as_ref()?;
                    let (p, v) = if memory {
                        (m.predicted.peak_mem_increase_mb, r.peak_mem_increase_mb)
                    } else {
                        (m.predicted.decode_tok_s, r.decode_tok_s)
                    };
                    Some(point(r, p, v, 5.0))
                })
                .collect(),
        })
        .collect();
    let (title, unit) = if memory { ("peak memory", "MB") } else { ("decode speed", "tok/s") };
    Ok(Figure {
        title: format!("Predicted against measured {title}"),
        note: format!(
            "Each measured configuration: its {title} as the calibrated model predicted it (x) and as measured (y), in {unit}. Points inside the band are within 10%."
        ),
        svg: render(&Scatter {
            x_label: format!("predicted {title} ({unit})"),
            y_label: format!("measured {title} ({unit})"),
            x_log: false,
            y_log: false,
            series,
            guides: vec![Guide::Diagonal(0.10)],
        })?,
    })
}
