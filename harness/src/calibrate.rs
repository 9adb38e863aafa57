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
    /// The point was held out of the fit.
    pub holdout: bool,
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

/// One term of a stage: a parameter, the range of θ (the parameter, or its
/// inverse for efficiencies, which enter the time as a divisor).
struct Term {
    param: FreeParam,
    bounds: (f64, f64),
    inverse: bool,
}

impl Term {
    fn theta(&self, p: &ModelParams) -> f64 {
        let v = p.get(self.param);
        if self.inverse {
            1.0 / v
        } else {
            v
        }
    }
}

/// An observation of a stage: the coefficient of each term's θ, the part of
/// the prediction no term touches, and the measured value.
struct Obs {
    coef: Vec<f64>,
    offset: f64,
    target: f64,
}

/// Terms with their position in the stage.
type Indexed<'a> = Vec<(usize, &'a Term)>;

type ObsFn<'a> = &'a dyn Fn(&CalPoint, &DeviceModel) -> Option<Obs>;

/// A calibration stage: the metric it fits, its terms, and how a point
/// becomes an observation (`None` when the point does not measure the metric).
struct Stage<'a> {
    metric: &'static str,
    terms: Vec<Term>,
    obs: ObsFn<'a>,
}

fn term(param: FreeParam, bounds: (f64, f64), inverse: bool) -> Term {
    Term { param, bounds, inverse }
}

/// Fit `device`'s free parameters to its points. Parameters not listed in
/// `model.fit` keep their stored values.
pub fn calibrate(device: &Device) -> Result<Calibration, CalibrationError> {
    let free = &device.profile.model.fit;
    let mut model = device.model;
    let id = device.id().to_string();
    let mut at_bound = Vec::new();
    let fit_points: Vec<&CalPoint> = device.points.iter().filter(|p| !p.holdout).collect();

    // decode: t_step = transfer / eb + L·cl + c0.
    let decode = |pt: &CalPoint, m: &DeviceModel| {
        let t = decode_terms(&pt.shape, &pt.shape.accounting(), m, &pt.workload);
        Some(Obs {
            coef: vec![t.transfer_s, t.attention_scores, t.layers, 1.0],
            offset: 0.0,
            target: 1.0 / pt.decode_tok_s?,
        })
    };
    // prefill: the compute branch of the roofline, t = FLOPs / (ec·C) + L·cl + c0.
    let prefill = |pt: &CalPoint, m: &DeviceModel| {
        let flops = prefill_flops(&pt.shape, &pt.shape.accounting(), pt.workload.prompt as f64);
        Some(Obs {
            coef: vec![flops / m.compute],
            offset: pt.shape.layers as f64 * m.params.layer_cost + m.params.token_cost,
            target: pt.workload.prompt as f64 / pt.prefill_tok_s?,
        })
    };
    // peak memory: weights + KV + scratch + overhead + e·V·d.
    let memory = |pt: &CalPoint, m: &DeviceModel| {
        let a = pt.shape.accounting();
        Some(Obs {
            coef: vec![1.0, a.output_params as f64, crate::predict::matmul_weight_bytes(&pt.shape, &a)],
            offset: memory_without_overhead(&pt.shape, &a, m, &pt.workload),
            target: pt.peak_memory?,
        })
    };
    // energy: P_active x the run time the fitted speed model predicts.
    let energy = |pt: &CalPoint, m: &DeviceModel| {
        let p = predict(&pt.shape, &pt.shape.accounting(), m, &pt.workload);
        Some(Obs { coef: vec![p.prefill_s + p.decode_s], offset: 0.0, target: pt.energy_j? })
    };
    let stages = [
        Stage {
            metric: "decode",
            terms: vec![
                term(FreeParam::BandwidthEfficiency, (1.0, 100.0), true),
                term(FreeParam::AttentionCost, (0.0, 1e-6), false),
                term(FreeParam::LayerCost, (0.0, 1e-2), false),
                term(FreeParam::TokenCost, (0.0, 1.0), false),
            ],
            obs: &decode,
        },
        Stage {
            metric: "prefill",
            terms: vec![term(FreeParam::ComputeEfficiency, (1.0, 1000.0), true)],
            obs: &prefill,
        },
        Stage {
            metric: "peak-memory",
            terms: vec![
                term(FreeParam::EngineOverhead, (0.0, 1e10), false),
                term(FreeParam::EmbeddingExtra, (0.0, 16.0), false),
                term(FreeParam::WeightExtra, (0.0, 4.0), false),
            ],
            obs: &memory,
        },
        Stage { metric: "energy", terms: vec![term(FreeParam::ActivePower, (0.0, 1000.0), false)], obs: &energy },
    ];
    for stage in &stages {
        let (free_terms, fixed_terms): (Indexed, Indexed) =
            stage.terms.iter().enumerate().partition(|(_, t)| free.contains(&t.param));
        if free_terms.is_empty() {
            continue;
        }
        let rows: Vec<Row> = fit_points
            .iter()
            .filter_map(|pt| (stage.obs)(pt, &model))
            .map(|o| Row {
                x: free_terms.iter().map(|(i, _)| o.coef[*i]).collect(),
                offset: o.offset + fixed_terms.iter().map(|(i, t)| o.coef[*i] * t.theta(&model.params)).sum::<f64>(),
                target: o.target,
            })
            .collect();
        if rows.is_empty() {
            return Err(CalibrationError::Uninformed {
                device: id.clone(),
                param: free_terms[0].1.param.key(),
                metric: stage.metric,
            });
        }
        let bounds: Vec<(f64, f64)> = free_terms.iter().map(|(_, t)| t.bounds).collect();
        let f = fit(&rows, &bounds).map_err(|source| CalibrationError::Fit { device: id.clone(), source })?;
        for (((_, t), theta), bound) in free_terms.iter().zip(&f.theta).zip(&f.at_bound) {
            model.params.set(t.param, if t.inverse { 1.0 / theta } else { *theta });
            if *bound {
                at_bound.push(t.param.key().to_string());
            }
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
                    holdout: pt.holdout,
                });
            }
        }
    }
    out
}

/// A parameter value in the unit its TOML key takes.
pub fn display_param(p: FreeParam, v: f64) -> String {
    match p {
        FreeParam::BandwidthEfficiency | FreeParam::ComputeEfficiency | FreeParam::WeightExtra => {
            Fraction(v).to_string()
        }
        FreeParam::LayerCost | FreeParam::TokenCost | FreeParam::AttentionCost => Duration(v).to_string(),
        FreeParam::EngineOverhead => ByteSize(v).to_string(),
        FreeParam::ActivePower => Power(v).to_string(),
        FreeParam::EmbeddingExtra => crate::units::BytesPerParam(v).to_string(),
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
/// The temporary name keeps the whole file name (`results.json.tmp~`), so two
/// files that differ only in extension can be written at once.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp~");
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Append calibration points to a profile file (each a new `[[calibration]]`
/// table at the end, leaving the rest of the file untouched), in one atomic
/// write: either every point lands or none. The fit is stale afterwards
/// until `calibrate` runs.
pub fn append_points(device: &Device, points: &[crate::device::PointToml]) -> Result<(), CalibrationError> {
    let (path, text) = with_points(device, points)?;
    write_atomic(&path, text.as_bytes())
        .map_err(|e| CalibrationError::Write { path: path.display().to_string(), message: e.to_string() })
}

/// The profile file's path and its text with `points` appended, unwritten
/// (what `calibrate --add --dry-run` fits to). The file is read once, so
/// every point is in the text, whether or not anything is written.
pub fn with_points(
    device: &Device,
    points: &[crate::device::PointToml],
) -> Result<(std::path::PathBuf, String), CalibrationError> {
    let path = match &device.origin {
        Origin::File(p) => p.clone(),
        Origin::BuiltIn(_) => return Err(CalibrationError::NotAFile(device.id().into())),
    };
    let werr = |message: String| CalibrationError::Write { path: path.display().to_string(), message };
    #[derive(serde::Serialize)]
    struct Wrapper<'a> {
        calibration: &'a [crate::device::PointToml],
    }
    let tables = toml::to_string(&Wrapper { calibration: points }).map_err(|e| werr(e.to_string()))?;
    let mut text = std::fs::read_to_string(&path).map_err(|e| werr(e.to_string()))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&tables);
    Ok((path, text))
}

/// A calibration point from a measured record: every shape field written out,
/// the workload, and the measured decode, prefill and peak memory (and energy
/// when it was measured).
pub fn point_from_record(rec: &crate::record::Record, holdout: bool) -> Option<crate::device::PointToml> {
    use crate::units::{ByteSize, Energy, TokRate};
    let m = rec.measurement.as_ref()?;
    let s = rec.shape;
    let energy_measured = rec.methods.get("energy_j_per_run").is_some_and(|v| v.starts_with("measured"));
    Some(crate::device::PointToml {
        model: crate::arch::ShapeSpec {
            preset: None,
            hidden: Some(s.hidden),
            layers: Some(s.layers),
            heads: Some(s.heads),
            kv_heads: Some(s.kv_heads),
            head_dim: Some(s.head_dim),
            ffn: Some(s.ffn),
            vocab: Some(s.vocab),
            tied: Some(s.tied),
            qk_norm: Some(s.qk_norm),
            quant: Some(s.quant),
            context: Some(s.context),
        },
        workload: Some(crate::workload::WorkloadSpec {
            prompt: Some(rec.prompt_tokens),
            gen: Some(rec.gen_tokens),
            context: None,
        }),
        decode: Some(TokRate(rec.decode_tok_s)),
        prefill: Some(TokRate(rec.prefill_tok_s)),
        peak_memory: Some(ByteSize(rec.peak_mem_increase_mb * 1e6)),
        package: None,
        energy: energy_measured.then_some(Energy(rec.energy_j_per_run)),
        source: format!(
            "measured {} by `pocketbench run`: {} {}, {} threads, median of {} repetitions (timer; VmHWM)",
            crate::hostinfo::today(),
            m.probe.engine,
            m.probe.engine_version,
            m.probe.threads,
            m.decode.n
        ),
        holdout,
    })
}
