//! A metric's trend across commits: each input is one commit's results (a
//! store, or an export of one), each series one configuration x device x
//! engine x workload x metric, its points the median of each input's raw
//! samples. Change points are found by e-divisive means
//! ([`changepoint`]), each named by the commit where the shift began and
//! sized as the ratio of the medians after and before it.

pub mod changepoint;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::gate::{Described, Loaded};
use crate::gate::{Key, Metric};
use crate::record::Provenance;

/// One input's figure of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Which input (0-based, in history order).
    pub input: usize,
    /// Median of its samples.
    pub value: f64,
    /// Samples behind it.
    pub n: usize,
}

/// A shift in a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    /// The input where it began (the first point after it).
    pub input: usize,
    /// That input's commit, or its path when it has none.
    pub commit: String,
    /// Median of the segment before.
    pub before: f64,
    /// Median of the segment after.
    pub after: f64,
    /// after / before.
    pub ratio: f64,
    /// Permutation p-value.
    pub p: f64,
    /// Whether the shift makes the metric worse.
    pub worse: bool,
}

/// One series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What it is.
    #[serde(flatten)]
    pub key: Key,
    /// Shape name.
    pub config_name: String,
    /// The metric.
    pub metric: Metric,
    /// Its points, in history order (inputs without the series are absent).
    pub points: Vec<Point>,
    /// Shifts found.
    pub shifts: Vec<Shift>,
}

/// The history (`history --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The inputs, in history order, with their commits.
    pub inputs: Vec<Described>,
    /// How they were ordered: `time` (by their first run's start) or `given`.
    pub order: String,
    /// Detection settings.
    pub settings: changepoint::Settings,
    /// Every series with at least one point.
    pub series: Vec<Series>,
}

/// Put the inputs in history order: by the start of their first run when
/// every input has one, else as given. Returns the order's name.
pub fn order(inputs: &mut [Loaded]) -> &'static str {
    if inputs.iter().all(|i| i.described.started_at.is_some()) {
        inputs.sort_by(|a, b| a.described.started_at.cmp(&b.described.started_at));
        "time"
    } else {
        "given"
    }
}

/// Build every series of the inputs (already in history order) and find
/// their shifts.
pub fn history(inputs: &[Loaded], order: &str, s: &changepoint::Settings) -> History {
    let mut series: BTreeMap<(Key, Metric), (String, Vec<Point>)> = BTreeMap::new();
    for (i, input) in inputs.iter().enumerate() {
        let mut samples: BTreeMap<(Key, Metric), (String, Vec<f64>)> = BTreeMap::new();
        for r in input.records.iter().filter(|r| r.provenance == Provenance::Measured) {
            for m in Metric::ALL {
                let v = m.samples(r);
                if !v.is_empty() {
                    let e = samples.entry((Key::of(r), m)).or_insert_with(|| (r.config_name.clone(), Vec::new()));
                    e.1.extend(v);
                }
            }
        }
        for (k, (name, v)) in samples {
            let e = series.entry(k).or_insert_with(|| (name, Vec::new()));
            e.1.push(Point { input: i, value: crate::stats::median(&v), n: v.len() });
        }
    }
    let label = |i: usize| {
        let d = &inputs[i].described;
        d.commit.clone().unwrap_or_else(|| d.path.clone())
    };
    let series = series
        .into_iter()
        .map(|((key, metric), (config_name, points))| {
            let values: Vec<f64> = points.iter().map(|p| p.value).collect();
            let changes = changepoint::e_divisive(&values, s);
            let mut bounds: Vec<usize> = vec![0];
            bounds.extend(changes.iter().map(|c| c.index));
            bounds.push(values.len());
            let shifts = changes
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let before = crate::stats::median(&values[bounds[j]..bounds[j + 1]]);
                    let after = crate::stats::median(&values[bounds[j + 1]..bounds[j + 2]]);
                    let ratio = after / before;
                    let input = points[c.index].input;
                    Shift {
                        input,
                        commit: label(input),
                        before,
                        after,
                        ratio,
                        p: c.p,
                        worse: if metric.higher_is_better() { ratio < 1.0 } else { ratio > 1.0 },
                    }
                })
                .collect();
            Series { key, config_name, metric, points, shifts }
        })
        .collect();
    History { inputs: inputs.iter().map(|i| i.described.clone()).collect(), order: order.into(), settings: *s, series }
}

#[cfg(test)]
mod tests;
