//! A soak's throttle curve: decode tok/s window by window over the soak's
//! seconds, and beside it the temperature of each window, so a fall in
//! speed is seen against the heat that caused it (or, where no sensor is
//! readable, against nothing: the curve is then speed alone).

use super::super::scatter::{render, Guide, Marker, Point, Scatter, Series};
use super::{Figure, PALETTE};
use crate::probe::soak::{Soak, SoakWindow};

/// The tooltip of a window: everything read at its end.
fn tip(i: usize, w: &SoakWindow) -> String {
    let speed = w.decode_tok_s.map_or("no decode step (a prefill filled it)".into(), |t| format!("{t:.1} tok/s"));
    let heat = match (w.celsius, &w.sensor) {
        (Some(c), Some(s)) => format!("{c:.1} C ({s})"),
        _ => crate::probe::soak::NOT_READABLE.into(),
    };
    let clock = w.window.mhz.map_or("clock not readable".into(), |m| format!("{m:.0} MHz"));
    let contended = if w.window.contended { ", contended" } else { "" };
    format!(
        "window {} at {:.1}-{:.1} s\n{speed} over {} decode steps\n{heat}, {clock}{contended}",
        i + 1,
        w.start_s,
        w.start_s + w.seconds,
        w.decode_tokens
    )
}

/// The middle of a window, seconds from the soak's start.
fn mid(w: &SoakWindow) -> f64 {
    w.start_s + w.seconds / 2.0
}

/// Decode speed by window, with the first window's speed and the throttle
/// line (`throttle_drop` below it) drawn as guides.
pub fn speed(soak: &Soak, name: &str) -> Result<Option<Figure>, String> {
    let points: Vec<Point> = soak
        .windows
        .iter()
        .enumerate()
        .filter_map(|(i, w)| Some(Point { x: mid(w), y: w.decode_tok_s?, r: 4.0, tip: tip(i, w) }))
        .collect();
    if points.is_empty() {
        return Ok(None);
    }
    let mut guides = Vec::new();
    if let Some(first) = soak.first_tok_s {
        guides.push(Guide::Horizontal(first, "first window".into()));
        let line = first * (1.0 - soak.spec.throttle_drop);
        guides.push(Guide::Horizontal(line, format!("throttled below (-{:.0}%)", soak.spec.throttle_drop * 100.0)));
    }
    let verdict = if soak.throttled { "throttled" } else { "not throttled" };
    Ok(Some(Figure {
        title: "Throttle curve: decode speed under sustained load".into(),
        note: format!(
            "{name}: decode tokens over the timer of their steps, per {} s window of the workload run back to back \
             (measured); {verdict}. {}",
            soak.spec.window_s,
            soak.describe()
        ),
        svg: render(&Scatter {
            x_label: "seconds of sustained load".into(),
            y_label: "decode (tok/s)".into(),
            x_log: false,
            y_log: false,
            series: vec![Series {
                name: "decode tok/s".into(),
                color: PALETTE[if soak.throttled { 5 } else { 0 }],
                marker: Marker::Filled,
                line: true,
                points,
            }],
            guides,
        })?,
    }))
}

/// The temperature at each window's end; `None` where no sensor was read.
pub fn temperature(soak: &Soak) -> Result<Option<Figure>, String> {
    let points: Vec<Point> = soak
        .windows
        .iter()
        .enumerate()
        .filter_map(|(i, w)| Some(Point { x: w.start_s + w.seconds, y: w.celsius?, r: 4.0, tip: tip(i, w) }))
        .collect();
    if points.is_empty() {
        return Ok(None);
    }
    let guides =
        soak.cooled.as_ref().map(|c| vec![Guide::Horizontal(c.start_c, "at the start".into())]).unwrap_or_default();
    Ok(Some(Figure {
        title: "Temperature under sustained load".into(),
        note: format!(
            "The hottest sensor at the end of each window: {} (read by the probe on the device, sysfs). Each \
             point's tooltip has the window's clock where cpufreq is readable.",
            soak.temperature
        ),
        svg: render(&Scatter {
            x_label: "seconds of sustained load".into(),
            y_label: "temperature (C)".into(),
            x_log: false,
            y_log: false,
            series: vec![Series {
                // Legends are our own words: the sensor's name (device
                // input) is in the note and the tooltips, escaped.
                name: "hottest sensor".into(),
                color: PALETTE[5],
                marker: Marker::Filled,
                line: true,
                points,
            }],
            guides,
        })?,
    }))
}
