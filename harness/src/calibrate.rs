//! Fitting a device's free predictor parameters to its calibration points
//! (least squares on relative error, [`crate::fit`]), and writing the fit back
//! into the profile file.
//!
//! The fit runs in dependency order, each stage linear in its parameters:
//! decode (bandwidth efficiency as its inverse, per-layer and per-step cost) →
//! prefill (compute efficiency, assuming the measured prefill was
//! compute-bound) → peak memory (engine overhead) → energy (active power,
//! using the times the fitted speed model predicts).

use std::path::Path;

use serde::Serialize;

use crate::arch::account::prefill_flops;
use crate::device::{CalPoint, Device, DeviceModel, FreeParam, ModelParams, Origin};
use crate::fit::{fit, Row};
use crate::predict::{decode_terms, memory_without_overhead, predict};
use crate::units::{ByteSize, Duration, Fraction, Power};

/// Calibration failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    /// A free parameter is not informed by any point.
    #[error(
        "device `{device}`: parameter `{param}` is listed in model.fit but no calibration point measures {metric}"
    )]
    Uninformed {
        /// Device id.
        device: String,
        /// Parameter key.
        param: &'static str,
        /// The metric that would inform it.
        metric: &'static str,
    },
    /// The least-squares solver found nothing.
    #[error("device `{device}`: fit failed: {source}")]
    Fit {
        /// Device id.
        device: String,
        /// Solver error.
        source: crate::fit::FitError,
    },
    /// The profile is not a file.
    #[error(
        "device `{0}` is a built-in profile; run from a directory with devices/ or pass --devices-dir to write the fit"
    )]
    NotAFile(String),
    /// Writing failed.
    #[error("cannot update {path}: {message}")]
    Write {
        /// File.
        path: String,
        /// Reason.
        message: String,
    },
}

/// One measured figure against its prediction after the fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Residual {
    /// Point index in the profile.
    pub point: usize,
    /// The configuration.
    pub model: String,
    /// Its workload, e.g. "512+128".
    pub workload: String,
    /// decode, prefill, peak-memory, package or energy.
    pub metric: &'static str,
    /// Unit of the two values.
    pub unit: &'static str,
    /// What was measured or published.
    pub measured: f64,
    /// What the fitted model predicts.
    pub predicted: f64,
    /// predicted / measured − 1.
    pub rel_error: f64,
    /// The point's source.
    pub source: String,
}

/// The outcome of a calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Device id.
    pub device: String,
    /// Parameters that were fitted, with their new values (display form).
    pub fitted: Vec<(String, String)>,
    /// Fitted parameters that ended on a bound of their range.
    pub at_bound: Vec<String>,
    /// Every point's residuals.
    pub residuals: Vec<Residual>,
    /// The digest recorded with the fit.
    pub digest: String,
    #[serde(skip)]
    /// The fitted parameters.
    pub params: ModelParams,
}

/// One scalar calibration stage: which parameter, the metric that informs it,
/// its bounds (on θ, which is the parameter or its inverse) and how a point
/// becomes an observation.
struct Stage<'a> {
    param: FreeParam,
    metric: &'static str,
    bounds: (f64, f64),
    inverse: bool,
    row: &'a dyn Fn(&CalPoint, &DeviceModel) -> Option<Row>,
}

/// Fit `device`'s free parameters to its points. Parameters not listed in
/// `model.fit` keep their stored values.
pub fn calibrate(device: &Device) -> Result<Calibration, CalibrationError> {
    let free = &device.profile.model.fit;
    let is_free = |p: FreeParam| free.contains(&p);
    let mut model = device.model;
    let id = device.id().to_string();
    let uninformed = |param: FreeParam, metric: &'static str| CalibrationError::Uninformed {
        device: id.clone(),
        param: param.key(),
        metric,
    };
    let fit_err = |source| CalibrationError::Fit { device: id.clone(), source };
    let mut at_bound = Vec::new();

    // Stage 1: decode. θ = [1/eb, cl, c0].
    let speed = [FreeParam::BandwidthEfficiency, FreeParam::LayerCost, FreeParam::TokenCost];
    let decode_pts: Vec<_> = device.points.iter().filter(|p| p.decode_tok_s.is_some()).collect();
    let free_speed: Vec<FreeParam> = speed.iter().copied().filter(|p| is_free(*p)).collect();
    if !free_speed.is_empty() {
        if decode_pts.is_empty() {
            return Err(uninformed(free_speed[0], "decode"));
        }
        let bounds_of = |p: FreeParam| match p {
            FreeParam::BandwidthEfficiency => (1.0, 100.0),
            FreeParam::LayerCost => (0.0, 1e-2),
            _ => (0.0, 1.0),
        };
        let rows: Vec<Row> = decode_pts
            .iter()
            .map(|pt| {
                let t = decode_terms(&pt.shape, &pt.shape.accounting(), &model, &pt.workload);
                let coef = |p: FreeParam| match p {
                    FreeParam::BandwidthEfficiency => t.transfer_s,
                    FreeParam::LayerCost => t.layers,
                    _ => 1.0,
                };
                let cur = |p: FreeParam| match p {
                    FreeParam::BandwidthEfficiency => 1.0 / model.params.bandwidth_efficiency,
                    other => model.params.get(other),
                };
                Row {
                    x: free_speed.iter().map(|p| coef(*p)).collect(),
                    offset: speed.iter().filter(|p| !is_free(**p)).map(|p| coef(*p) * cur(*p)).sum(),
                    target: 1.0 / pt.decode_tok_s.unwrap_or(f64::NAN),
                }
            })
            .collect();
        let bounds: Vec<_> = free_speed.iter().map(|p| bounds_of(*p)).collect();
        let f = fit(&rows, &bounds).map_err(fit_err)?;
        for ((p, v), b) in free_speed.iter().zip(&f.theta).zip(&f.at_bound) {
            let v = if *p == FreeParam::BandwidthEfficiency { 1.0 / v } else { *v };
            model.params.set(*p, v);
            if *b {
                at_bound.push(p.key().to_string());
            }
        }
    }

    // Stages 2-4: one scalar each, fitted to the points that measure it.
    // Stage 2: prefill, θ = 1/ec (the compute branch of the roofline).
    let prefill_row = |pt: &CalPoint, m: &DeviceModel| {
        let flops = prefill_flops(&pt.shape, &pt.shape.accounting(), pt.workload.prompt as f64);
        Some(Row {
            x: vec![flops / m.compute],
            offset: pt.shape.layers as f64 * m.params.layer_cost + m.params.token_cost,
            target: pt.workload.prompt as f64 / pt.prefill_tok_s?,
        })
    };
    // Stage 3: memory, θ = overhead.
    let memory_row = |pt: &CalPoint, m: &DeviceModel| {
        Some(Row {
            x: vec![1.0],
            offset: memory_without_overhead(&pt.shape, &pt.shape.accounting(), m, &pt.workload),
            target: pt.peak_memory?,
        })
    };
    // Stage 4: energy, θ = P_active, using the times the fitted speed model predicts.
    let energy_row = |pt: &CalPoint, m: &DeviceModel| {
        let p = predict(&pt.shape, &pt.shape.accounting(), m, &pt.workload);
        Some(Row { x: vec![p.prefill_s + p.decode_s], offset: 0.0, target: pt.energy_j? })
    };
    let stages: [Stage; 3] = [
        Stage {
            param: FreeParam::ComputeEfficiency,
            metric: "prefill",
            bounds: (1.0, 1000.0),
            inverse: true,
            row: &prefill_row,
        },
        Stage {
            param: FreeParam::EngineOverhead,
            metric: "peak-memory",
            bounds: (0.0, 1e10),
            inverse: false,
            row: &memory_row,
        },
        Stage {
            param: FreeParam::ActivePower,
            metric: "energy",
            bounds: (0.0, 1000.0),
            inverse: false,
            row: &energy_row,
        },
    ];
    for Stage { param, metric, bounds, inverse, row } in stages {
        if !is_free(param) {
            continue;
        }
        let rows: Vec<Row> = device.points.iter().filter_map(|pt| row(pt, &model)).collect();
        if rows.is_empty() {
            return Err(uninformed(param, metric));
        }
        let f = fit(&rows, &[bounds]).map_err(fit_err)?;
        model.params.set(param, if inverse { 1.0 / f.theta[0] } else { f.theta[0] });
        if f.at_bound[0] {
            at_bound.push(param.key().to_string());
        }
    }

    let fitted = free.iter().map(|p| (p.key().to_string(), display_param(*p, model.params.get(*p)))).collect();
    Ok(Calibration {
        device: device.id().to_string(),
        fitted,
        at_bound,
        residuals: residuals(device, &model),
        digest: device.digest.clone(),
        params: model.params,
    })
}

/// Residuals of every point's figures under `model`.
pub fn residuals(device: &Device, model: &DeviceModel) -> Vec<Residual> {
    let mut out = Vec::new();
    for pt in &device.points {
        let p = predict(&pt.shape, &pt.shape.accounting(), model, &pt.workload);
        let figures: [(&'static str, &'static str, Option<f64>, f64, f64); 5] = [
            ("decode", "tok/s", pt.decode_tok_s, p.decode_tok_s, 1.0),
            ("prefill", "tok/s", pt.prefill_tok_s, p.prefill_tok_s, 1.0),
            ("peak-memory", "MB", pt.peak_memory, p.peak_mem_bytes, 1e6),
            ("package", "MB", pt.package, p.package_bytes, 1e6),
            ("energy", "J", pt.energy_j, p.energy_j, 1.0),
        ];
        for (metric, unit, measured, predicted, scale) in figures {
            if let Some(m) = measured {
                out.push(Residual {
                    point: pt.index,
                    model: pt.label.clone(),
                    workload: format!("{}+{}", pt.workload.prompt, pt.workload.gen),
                    metric,
                    unit,
                    measured: m / scale,
                    predicted: predicted / scale,
                    rel_error: predicted / m - 1.0,
                    source: pt.source.clone(),
                });
            }
        }
    }
    out
}

/// A parameter value in the unit its TOML key takes.
pub fn display_param(p: FreeParam, v: f64) -> String {
    match p {
        FreeParam::BandwidthEfficiency | FreeParam::ComputeEfficiency => Fraction(v).to_string(),
        FreeParam::LayerCost | FreeParam::TokenCost => Duration(v).to_string(),
        FreeParam::EngineOverhead => ByteSize(v).to_string(),
        FreeParam::ActivePower => Power(v).to_string(),
    }
}

/// Write the fitted values, their source and the digest into the profile
/// file, keeping its comments and layout (`toml_edit`).
pub fn write_back(device: &Device, cal: &Calibration) -> Result<(), CalibrationError> {
    let path = match &device.origin {
        Origin::File(p) => p.clone(),
        Origin::BuiltIn(_) => return Err(CalibrationError::NotAFile(device.id().into())),
    };
    let werr = |message: String| CalibrationError::Write { path: path.display().to_string(), message };
    let text = std::fs::read_to_string(&path).map_err(|e| werr(e.to_string()))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| werr(e.to_string()))?;
    let n = device.points.len();
    for p in &device.profile.model.fit {
        let item = &mut doc["model"][p.key()];
        item["value"] = toml_edit::value(display_param(*p, cal.params.get(*p)));
        let bound = if cal.at_bound.iter().any(|k| k == p.key()) { "; ended on the bound of its range" } else { "" };
        item["source"] =
            toml_edit::value(format!("fitted by `pocketbench calibrate` to the {n} calibration point(s) below{bound}"));
    }
    doc["model"]["fitted-digest"] = toml_edit::value(cal.digest.clone());
    write_atomic(&path, doc.to_string().as_bytes()).map_err(|e| werr(e.to_string()))
}

/// Write via a temporary file and rename, so a crash never leaves half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
