//! Fitting a device's free predictor parameters to its calibration points
//! (least squares on relative error, [`crate::fit`]), and writing the fit back
//! into the profile file.
//!
//! The fit runs in dependency order, each stage linear in its parameters:
//! decode (bandwidth efficiency as its inverse, per-layer and per-step cost) →
//! prefill (compute efficiency, assuming the measured prefill was
//! compute-bound) → peak memory (engine overhead) → energy (active power,
//! using the times the fitted speed model predicts).
//!
//! [`design`] and [`session`] measure a local device for `calibrate
//! --measure`; `residuals` compares a fit with measurements, and `write`
//! puts fits and points into profile text.

pub mod again;
mod check;
pub mod classes;
pub mod design;
mod drift;
pub mod host;
pub mod import;
pub mod loo;
pub mod noise;
mod pace;
pub mod points;
pub mod published;
mod residuals;
pub mod session;
mod write;

pub use check::{check, Checked};
pub use drift::{summarize as summarize_drift, Drift, DriftSummary};
pub use noise::{Noise, Verdict};
pub use residuals::{accuracy, repeatability, residuals, Accuracy, Repeatability, Residual};
pub use write::{
    display_param, fitted_text, point_from_record, spec_of, with_points, with_points_added, write_atomic, write_back,
    write_profile,
};

use serde::Serialize;

use crate::device::{CalPoint, Device, DeviceModel, FreeParam, ModelParams};
use crate::fit::{fit, Row};
use crate::predict::{decode_terms, memory_without_overhead, predict, prefill_time};

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
    /// Every measurement of a calibration or check failed.
    #[error("{0}")]
    NothingMeasured(String),
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
    /// What the fit could not settle honestly: points of different engine
    /// builds fitted into one parameter, a prefill implying more compute
    /// than the device's compute fact.
    pub warnings: Vec<String>,
    /// The compute fact the fit used where it raised the profile's (prefill
    /// points implied more): written into the profile with its label.
    pub compute_fact: Option<ComputeFact>,
    /// Each prefill point above the compute fact (`--verbose`).
    pub compute_details: Vec<String>,
    /// The digest recorded with the fit.
    pub digest: String,
    #[serde(skip)]
    /// The fitted parameters.
    pub params: ModelParams,
}

/// A compute fact a calibration set: FLOP/s and its source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeFact {
    /// FLOP/s.
    pub flops: f64,
    /// Where it comes from.
    pub source: String,
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
        match (self.inverse, v == 0.0) {
            // An unset efficiency (the cache's) multiplies only zeros.
            (true, true) => 0.0,
            (true, false) => 1.0 / v,
            (false, _) => v,
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
    /// Fits at most this many times, until the parameters settle (a stage
    /// whose observations depend on its own parameters needs more than one).
    rounds: usize,
}

fn term(param: FreeParam, bounds: (f64, f64), inverse: bool) -> Term {
    Term { param, bounds, inverse }
}

/// Fit `device`'s free parameters to its points. Parameters not listed in
/// `model.fit` keep their stored values.
pub fn calibrate(device: &Device) -> Result<Calibration, CalibrationError> {
    let free = &device.profile().model.fit;
    let mut model = *device.model();
    let id = device.id().to_string();
    let mut at_bound = Vec::new();
    let fit_points: Vec<&CalPoint> = device.points().iter().filter(|p| !p.holdout).collect();

    let stages = stages();
    if free.contains(&FreeParam::CacheSize) {
        model.params.cache_size = cache_size(&stages[0], free, &fit_points, &model, &id)?;
        if model.params.cache_efficiency == 0.0 {
            model.params.cache_efficiency = model.params.bandwidth_efficiency;
        }
    }
    let mut warnings = Vec::new();
    for stage in &stages {
        warnings.extend(mixed_builds(stage, free, &fit_points, &model));
        at_bound.extend(fit_rounds(stage, free, &fit_points, &mut model, &id)?);
    }

    let above = compute_above_fact(device, &model);
    let (compute_fact, warning, compute_details) = settle_compute(device, &mut model, &above);
    warnings.extend(warning);
    if compute_fact.is_some() {
        // Fitted again against the raised fact.
        at_bound.clear();
        for stage in &stages {
            at_bound.extend(fit_rounds(stage, free, &fit_points, &mut model, &id)?);
        }
    }
    let fitted = free.iter().map(|p| (p.key().to_string(), display_param(*p, model.params.get(*p)))).collect();
    Ok(Calibration {
        device: device.id().to_string(),
        fitted,
        at_bound,
        warnings,
        residuals: residuals(device, &model),
        digest: device.digest().to_string(),
        params: model.params,
        compute_fact,
        compute_details,
    })
}

/// `m` at the bandwidth `pt` was measured at, where it carries one: a
/// point is fitted and checked against the machine of its own moment.
pub fn at_moment(pt: &CalPoint, m: &DeviceModel) -> DeviceModel {
    DeviceModel { bandwidth: pt.bandwidth.unwrap_or(m.bandwidth), ..*m }
}

/// decode: t_step = transfer / eb (or / e_cache within the cache size)
/// + scores·ca + kv·ck + L·cl + c0.
///
/// The transfer is at the point's own same-moment bandwidth where it has one.
fn decode_obs(pt: &CalPoint, m: &DeviceModel) -> Option<Obs> {
    let t = decode_terms(&pt.shape, &pt.shape.accounting(), &at_moment(pt, m), &pt.workload);
    let (memory, cache) = (t.transfer_s * (1.0 - t.cache_share), t.transfer_s * t.cache_share);
    Some(Obs {
        coef: vec![memory, cache, t.attention_scores, t.kv_bytes, t.layers, 1.0],
        offset: 0.0,
        target: 1.0 / pt.decode_tok_s?,
    })
}

/// prefill: the chunked roofline; the chunks whose compute branch binds
/// (at the current compute efficiency) carry FLOPs / (ec·C), the others
/// their transfer time, every chunk its fixed cost. The branches depend on
/// the efficiency, so the stage is refitted until they settle.
fn prefill_obs(pt: &CalPoint, m: &DeviceModel) -> Option<Obs> {
    let t = prefill_time(&pt.shape, &pt.shape.accounting(), &at_moment(pt, m), pt.workload.prompt);
    Some(Obs {
        coef: vec![t.compute_bound_flops / m.compute, t.compute_bound_attention_flops],
        offset: t.memory_bound_s + t.fixed_s,
        target: pt.workload.prompt as f64 / pt.prefill_tok_s?,
    })
}

/// peak memory: weights + KV + scratch + overhead + e·V·d.
fn memory_obs(pt: &CalPoint, m: &DeviceModel) -> Option<Obs> {
    let a = pt.shape.accounting();
    Some(Obs {
        coef: vec![1.0, a.output_params as f64, crate::predict::matmul_weight_bytes(&pt.shape, &a)],
        offset: memory_without_overhead(&pt.shape, &a, m, &pt.workload),
        target: pt.peak_memory?,
    })
}

/// energy: P_active x the run time the fitted speed model predicts.
fn energy_obs(pt: &CalPoint, m: &DeviceModel) -> Option<Obs> {
    let p = predict(&pt.shape, &pt.shape.accounting(), &at_moment(pt, m), &pt.workload);
    Some(Obs { coef: vec![p.prefill_s + p.decode_s], offset: 0.0, target: pt.energy_j? })
}

/// The stages, in the order they are fitted: each later one reads the
/// parameters the earlier ones fitted.
fn stages() -> [Stage<'static>; 4] {
    [
        Stage {
            metric: "decode",
            terms: vec![
                term(FreeParam::BandwidthEfficiency, (1.0, 100.0), true),
                term(FreeParam::CacheEfficiency, (0.1, 100.0), true),
                term(FreeParam::AttentionCost, (0.0, 1e-6), false),
                term(FreeParam::KvCost, (0.0, 1e-8), false),
                term(FreeParam::LayerCost, (0.0, 1e-2), false),
                term(FreeParam::TokenCost, (0.0, 1.0), false),
            ],
            obs: &decode_obs,
            rounds: 1,
        },
        Stage {
            metric: "prefill",
            terms: vec![
                term(FreeParam::ComputeEfficiency, (1.0, 1000.0), true),
                term(FreeParam::PrefillAttentionCost, (0.0, 1e-9), false),
            ],
            obs: &prefill_obs,
            rounds: 8,
        },
        Stage {
            metric: "peak-memory",
            terms: vec![
                term(FreeParam::EngineOverhead, (0.0, 1e10), false),
                term(FreeParam::EmbeddingExtra, (0.0, 16.0), false),
                term(FreeParam::WeightExtra, (0.0, 4.0), false),
            ],
            obs: &memory_obs,
            rounds: 1,
        },
        Stage {
            metric: "energy",
            terms: vec![term(FreeParam::ActivePower, (0.0, 1000.0), false)],
            obs: &energy_obs,
            rounds: 1,
        },
    ]
}

/// Fit one stage into `model`, refitting until its parameters settle (at
/// most its rounds); the keys of the parameters that ended on a bound.
fn fit_rounds(
    stage: &Stage,
    free: &[FreeParam],
    points: &[&CalPoint],
    model: &mut DeviceModel,
    id: &str,
) -> Result<Vec<String>, CalibrationError> {
    let mut bounds = Vec::new();
    for _ in 0..stage.rounds {
        let before = model.params;
        let Some(f) = fit_stage(stage, free, points, model, id)? else { break };
        bounds.clear();
        for ((t, theta), bound) in f.terms.iter().zip(&f.fit.theta).zip(&f.fit.at_bound) {
            model.params.set(t.param, if t.inverse { 1.0 / theta } else { *theta });
            if *bound {
                bounds.push(t.param.key().to_string());
            }
        }
        if model.params == before {
            break;
        }
    }
    Ok(bounds)
}

/// The engine builds of the points a stage with free terms fits, when there
/// is more than one: its parameters then average engines, and the fit says so.
/// A point that names no build counts as the profile's own.
fn mixed_builds(stage: &Stage, free: &[FreeParam], points: &[&CalPoint], model: &DeviceModel) -> Option<String> {
    if !stage.terms.iter().any(|t| free.contains(&t.param)) {
        return None;
    }
    let mut builds: Vec<&str> = points
        .iter()
        .filter(|pt| (stage.obs)(pt, model).is_some())
        .map(|pt| pt.engine_build.as_deref().unwrap_or("the profile's engine (unnamed build)"))
        .collect();
    builds.sort_unstable();
    builds.dedup();
    (builds.len() > 1).then(|| {
        format!(
            "the {} fit mixes points of {} engine builds ({}): its parameters average them; give each build's points their own profile, or hold the other build's out",
            stage.metric,
            builds.len(),
            builds.join("; ")
        )
    })
}

/// A prefill point whose measured time, less the fitted fixed costs,
/// implies more FLOP/s than the device's compute fact: the fact is too low
/// (or the engine does less work than the model counts), and an efficiency
/// of 100% would hide it.
struct ComputeAbove {
    /// The point's index.
    index: usize,
    /// The point's label.
    label: String,
    /// FLOP/s it implies (infinite where the fixed costs alone exceed its
    /// time).
    implied: f64,
    /// The whole finding, for `--verbose`.
    text: String,
}

fn compute_above_fact(device: &Device, model: &DeviceModel) -> Vec<ComputeAbove> {
    let mut out = Vec::new();
    for pt in device.points() {
        let Some(rate) = pt.prefill_tok_s else { continue };
        let a = pt.shape.accounting();
        let t = prefill_time(&pt.shape, &a, model, pt.workload.prompt);
        // The time the attention FLOPs take beyond the compute rate is no
        // time of the compute fact's: left in, it would hide a fact too low.
        let extra = t.compute_bound_attention_flops * model.params.prefill_attention_cost;
        let busy = pt.workload.prompt as f64 / rate - t.fixed_s - extra;
        let flops = crate::arch::account::prefill_flops(&pt.shape, &a, pt.workload.prompt as f64);
        let implied = if busy > 0.0 { flops / busy } else { f64::INFINITY };
        if implied > model.compute {
            out.push(ComputeAbove {
                index: pt.index,
                label: pt.label.clone(),
                implied,
                text: format!(
                    "calibration[{}] ({}, prefill {:.1} tok/s at {}+{}) implies {} of compute, above the compute fact {} ({})",
                    pt.index,
                    pt.label,
                    rate,
                    pt.workload.prompt,
                    pt.workload.gen,
                    crate::units::Compute(implied),
                    crate::units::Compute(model.compute),
                    device.profile().facts.compute.source
                ),
            });
        }
    }
    out
}

/// What to do about prefill points above the compute fact: on this
/// machine, raise the fact to the highest compute they imply (labelled as
/// such) so compute-efficiency is fitted against a rate the hardware
/// reaches; elsewhere (a phone's published fact), say so. Returns the new
/// fact where it was raised, one warning line, and the points one by one.
fn settle_compute(
    device: &Device,
    model: &mut DeviceModel,
    above: &[ComputeAbove],
) -> (Option<ComputeFact>, Option<String>, Vec<String>) {
    if above.is_empty() {
        return (None, None, Vec::new());
    }
    let details: Vec<String> = above.iter().map(|a| a.text.clone()).collect();
    let fact = crate::units::Compute(model.compute);
    let highest = above.iter().filter(|a| a.implied.is_finite()).max_by(|a, b| a.implied.total_cmp(&b.implied));
    let n = above.len();
    match highest.filter(|_| device.is_local()) {
        Some(top) => {
            // A hair above the highest, so the fact as printed (four
            // significant digits) is not below what a point implies.
            let flops = top.implied * 1.001;
            let raised = ComputeFact {
                flops,
                source: format!(
                    "M: the highest compute the calibration's prefill points imply (calibration[{}], {}), above the \
                     estimate {fact} ({})",
                    top.index,
                    top.label,
                    device.profile().facts.compute.source
                ),
            };
            model.compute = flops;
            let warning = format!(
                "{n} prefill point(s) implied more compute than the fact {fact}: the fact is raised to {}, the highest \
                 the measurements imply, and compute-efficiency fitted against it (--verbose lists them)",
                crate::units::Compute(flops)
            );
            (Some(raised), Some(warning), details)
        }
        None => {
            let warning = format!(
                "{n} prefill point(s) imply more compute than the fact {fact}: the fact is too low for the hardware \
                 that runs prefill (--verbose lists them)"
            );
            (None, Some(warning), details)
        }
    }
}

/// A stage's fit: the free terms it fitted, in the order of `fit.theta`.
struct StageFit<'a> {
    terms: Vec<&'a Term>,
    fit: crate::fit::Fit,
}

/// Fit one stage's free terms to the points (`None` when it has none). A
/// free term that no point informs (its coefficient zero everywhere: the
/// cache efficiency when nothing fits in the cache) keeps its value.
fn fit_stage<'a>(
    stage: &'a Stage,
    free: &[FreeParam],
    points: &[&CalPoint],
    model: &DeviceModel,
    id: &str,
) -> Result<Option<StageFit<'a>>, CalibrationError> {
    let obs: Vec<Obs> = points.iter().filter_map(|pt| (stage.obs)(pt, model)).collect();
    let informed = |i: usize| obs.iter().any(|o| o.coef[i] != 0.0);
    let (free_terms, fixed_terms): (Indexed, Indexed) =
        stage.terms.iter().enumerate().partition(|(i, t)| free.contains(&t.param) && (obs.is_empty() || informed(*i)));
    if free_terms.is_empty() {
        return Ok(None);
    }
    if obs.is_empty() {
        return Err(CalibrationError::Uninformed {
            device: id.into(),
            param: free_terms[0].1.param.key(),
            metric: stage.metric,
        });
    }
    let rows: Vec<Row> = obs
        .iter()
        .map(|o| Row {
            x: free_terms.iter().map(|(i, _)| o.coef[*i]).collect(),
            offset: o.offset + fixed_terms.iter().map(|(i, t)| o.coef[*i] * t.theta(&model.params)).sum::<f64>(),
            target: o.target,
        })
        .collect();
    let bounds: Vec<(f64, f64)> = free_terms.iter().map(|(_, t)| t.bounds).collect();
    let fit = fit(&rows, &bounds).map_err(|source| CalibrationError::Fit { device: id.into(), source })?;
    Ok(Some(StageFit { terms: free_terms.into_iter().map(|(_, t)| t).collect(), fit }))
}

/// The cache size that fits the decode points best: a geometric grid from
/// half the smallest working set of the points to the largest, and "no
/// cache term", each fitted; the best objective wins (no cache term on a tie).
fn cache_size(
    decode: &Stage,
    free: &[FreeParam],
    points: &[&CalPoint],
    model: &DeviceModel,
    id: &str,
) -> Result<f64, CalibrationError> {
    let sets: Vec<f64> = points
        .iter()
        .filter(|p| p.decode_tok_s.is_some())
        .map(|p| decode_terms(&p.shape, &p.shape.accounting(), model, &p.workload).transfer_s * model.bandwidth)
        .collect();
    let objective = |size: f64| -> Result<f64, CalibrationError> {
        let mut m = *model;
        m.params.cache_size = size;
        if m.params.cache_efficiency == 0.0 {
            m.params.cache_efficiency = m.params.bandwidth_efficiency;
        }
        Ok(fit_stage(decode, free, points, &m, id)?.map_or(f64::INFINITY, |f| f.fit.objective))
    };
    let mut best = (objective(0.0)?, 0.0);
    let (lo, hi) = sets.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &s| (a.min(s), b.max(s)));
    if sets.len() >= 4 && hi > lo {
        const STEPS: usize = 64;
        for i in 0..=STEPS {
            let size = lo / 2.0 * (2.0 * hi / lo).powf(i as f64 / STEPS as f64);
            let o = objective(size)?;
            if o < best.0 {
                best = (o, size);
            }
        }
    }
    Ok(best.1)
}

#[cfg(test)]
mod tests;
