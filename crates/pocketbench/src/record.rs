//! The result record: one configuration on one device, with the provenance of
//! every number. Sweeps store these as data; reports are rendered from them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::arch::{Accounting, Shape};
use crate::budget::{judge, Verdicts};
use crate::capability::Capability;
use crate::device::Device;
use crate::predict::{predict, PREDICTOR};
use crate::probe::{ProbeResult, Rep};
use crate::stats::{Sample, SampleError, Summary};
use crate::trust::{Latency, Output};
use crate::workload::Workload;

pub use crate::provenance::{Method, MethodKey, Methods, Provenance};

/// One configuration x device result. Field names are a contract (CI gates and
/// scripts read them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Stable configuration id ([`Shape::id`]).
    pub config_id: String,
    /// Human name of the shape.
    pub config_name: String,
    /// Device id.
    pub device: String,
    /// Engine label.
    pub engine: String,
    /// Predicted or measured.
    pub provenance: Provenance,
    /// Which model (`roofline-v1`) or measurement tool produced the numbers.
    pub produced_by: String,
    /// The calibration behind a prediction.
    pub calibration: String,
    /// How each metric was obtained.
    pub methods: Methods,
    /// The shape: hidden, layers, heads, kv_heads, head_dim, ffn, vocab,
    /// tied, qk_norm, quant, context (flattened into the record).
    #[serde(flatten)]
    pub shape: Shape,
    /// All parameters.
    pub params_total: u64,
    /// Non-embedding parameters.
    pub params_non_embedding: u64,
    /// Deployment package bytes.
    pub package_bytes: u64,
    /// Weight bytes read per decoded token.
    pub weight_bytes_per_token: u64,
    /// KV bytes per context position at the engine's KV width.
    pub kv_bytes_per_token: u64,
    /// Prompt tokens of the workload.
    pub prompt_tokens: u32,
    /// Generated tokens of the workload.
    pub gen_tokens: u32,
    /// Decode tok/s.
    pub decode_tok_s: f64,
    /// Prefill tok/s.
    pub prefill_tok_s: f64,
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// The lowest time to first token, ms, that the ranges of the device's
    /// prior parameters allow; null where the time was measured.
    #[serde(default)]
    pub ttft_ms_low: Option<f64>,
    /// The highest; see [`Record::ttft_ms_low`].
    #[serde(default)]
    pub ttft_ms_high: Option<f64>,
    /// Peak memory increase, MB (10^6 B).
    pub peak_mem_increase_mb: f64,
    /// Package, MB.
    pub package_mb: f64,
    /// Energy per run, J.
    pub energy_j_per_run: f64,
    /// The lowest energy per run, J, that the ranges of the device's prior
    /// parameters allow; null where energy was measured.
    #[serde(default)]
    pub energy_j_per_run_low: Option<f64>,
    /// The highest; see [`Record::energy_j_per_run_low`].
    #[serde(default)]
    pub energy_j_per_run_high: Option<f64>,
    /// A prediction's 90% intervals of decode, prefill and peak memory, and
    /// whether it rests on too few points ([`crate::interval`]); null where
    /// the figure was measured.
    #[serde(flatten)]
    pub bounds: PredictedBounds,
    /// The share of the run's energy spent in prefill: its share of the run's
    /// busy time (predicted, or from the measured prefill and decode times,
    /// taking power equal in both phases).
    #[serde(default)]
    pub prefill_energy_share: Option<f64>,
    /// Measured average power of a run (gross: the whole device), W; absent
    /// where energy was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_power_w: Option<f64>,
    /// Measured gross energy of a run (the whole device), J; where the idle
    /// draw was measured, `energy_j_per_run` is this minus the idle draw
    /// over the run's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_gross_j_per_run: Option<f64>,
    /// Share of the battery per run; null without a battery.
    pub battery_fraction_per_run: Option<f64>,
    /// Capability (higher is better).
    pub capability: f64,
    /// Proxy or measured, and how.
    pub capability_source: String,
    /// Per-budget verdicts.
    pub budgets: Verdicts,
    /// Every applicable budget passes.
    pub feasible: bool,
    /// On the device's Pareto frontier of feasible configurations (sweeps only).
    pub on_frontier: bool,
    /// Raw samples and statistics of a measurement; absent for predictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Box<Measurement>>,
}

/// What a measured record carries beyond its headline numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Decode tok/s over the repetitions.
    pub decode: Summary,
    /// Prefill tok/s over the repetitions.
    pub prefill: Summary,
    /// Time to first token, ms.
    pub ttft_ms: Summary,
    /// Bytes read per decoded token (model) x measured decode tok/s, GB/s.
    pub achieved_bandwidth_gb_s: f64,
    /// The device's bandwidth fact, GB/s, and where it comes from.
    pub device_bandwidth_gb_s: f64,
    /// Source of that figure.
    pub device_bandwidth_source: String,
    /// achieved / device bandwidth: the decode roofline fraction.
    pub bandwidth_efficiency: f64,
    /// Read bandwidth the probe measured right after decoding, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_bandwidth_gb_s: Option<f64>,
    /// achieved / probe bandwidth: the roofline fraction of the same moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_bandwidth_efficiency: Option<f64>,
    /// Decode's share of the same-moment bandwidth of the weights' memory
    /// (passes right before and right after each repetition) over the
    /// summarized repetitions: steady where the machine's bandwidth moves.
    /// Absent where the engine keeps its weights out of reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_efficiency: Option<Summary>,
    /// The lowest and highest same-moment bandwidth pass, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moment_bandwidth_gb_s: Option<[f64; 2]>,
    /// Some summarized repetitions ran while the bandwidth moved (no retake
    /// was left for them): see `probe.sampling`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drifted: bool,
    /// Inter-token latency percentiles over every decode step of the
    /// summarized repetitions (absent where steps were not timed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<Latency>,
    /// Whether every repetition generated the same tokens, and their
    /// fingerprint (absent where the engine hands no tokens back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Output>,
    /// How it was measured, as the gate compares it
    /// ([`crate::protocol::Protocol::of`]; absent in records of older
    /// versions, which the gate reads from the probe's result instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<crate::protocol::Protocol>,
    /// Some summarized repetitions ran on a busy machine (no retake was
    /// left for them): see `probe.sampling` for the counts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contended: bool,
    /// What the calibrated predictor said for the same configuration.
    pub predicted: Predicted,
    /// Everything the probe reported, raw samples included.
    pub probe: ProbeResult,
}

impl Measurement {
    /// Why the measurement is not to be trusted as a result, if it is not:
    /// its repetitions generated different tokens.
    pub fn invalid(&self) -> Option<String> {
        let o = self.output.as_ref()?;
        (!o.agree).then(|| {
            format!(
                "its {} repetitions generated {} different token sequences: greedy decoding of fixed weights must \
                 repeat exactly, so the engine computed something wrong",
                self.probe.reps.len(),
                o.distinct
            )
        })
    }
}

/// The prediction kept beside a measurement, for comparison and calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    /// Decode tok/s.
    pub decode_tok_s: f64,
    /// Prefill tok/s.
    pub prefill_tok_s: f64,
    /// Time to first token, ms (absent in records written before it was kept).
    #[serde(default)]
    pub ttft_ms: f64,
    /// Peak memory increase, MB.
    pub peak_mem_increase_mb: f64,
    /// Energy per run, J.
    pub energy_j_per_run: f64,
}

impl Record {
    /// What read the figure `key` names, where it was measured: as the
    /// probe's result names it (its `meters`), else as the method's words
    /// say (results from before the probe named its meters). A record read
    /// back from a file keeps its probe result, so the typed meter survives
    /// every round trip.
    pub fn meter_of(&self, key: &MethodKey) -> Option<crate::provenance::Meter> {
        let method = self.methods.get(key).filter(|m| m.is_measured())?;
        let named = self.measurement.as_ref().and_then(|m| m.probe.meters);
        let typed = named.and_then(|m| match key {
            MethodKey::PeakMemIncreaseMb => Some(m.memory),
            MethodKey::EnergyJPerRun | MethodKey::EnergyGrossJPerRun | MethodKey::AvgPowerW => m.energy,
            _ => None,
        });
        typed.or_else(|| method.meter())
    }

    /// How the record's figures were obtained, in a few words: "predicted",
    /// "measured", or "measured; energy predicted" when a device could not
    /// read energy.
    pub fn provenance_label(&self) -> &'static str {
        match self.provenance {
            Provenance::Predicted => "predicted",
            Provenance::Measured if self.methods.get(&MethodKey::EnergyJPerRun).is_some_and(Method::is_measured) => {
                "measured"
            }
            Provenance::Measured => "measured; energy predicted",
        }
    }
}

/// Build a predicted record.
/// See [`Record::bounds`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PredictedBounds {
    /// The low end of the 90% interval of decode tok/s.
    #[serde(default)]
    pub decode_tok_s_low: Option<f64>,
    /// Its high end.
    #[serde(default)]
    pub decode_tok_s_high: Option<f64>,
    /// The low end of the 90% interval of prefill tok/s.
    #[serde(default)]
    pub prefill_tok_s_low: Option<f64>,
    /// Its high end.
    #[serde(default)]
    pub prefill_tok_s_high: Option<f64>,
    /// The low end of the 90% interval of peak memory, MB.
    #[serde(default)]
    pub peak_mem_increase_mb_low: Option<f64>,
    /// Its high end.
    #[serde(default)]
    pub peak_mem_increase_mb_high: Option<f64>,
    /// The prediction rests on fewer than three fitted speed points.
    #[serde(default)]
    pub low_confidence: Option<bool>,
}

/// The record of predicting `shape` at `w` on `device`, at the profile's
/// own threads.
pub fn predicted(shape: &Shape, acct: &Accounting, device: &Device, w: &Workload, cap: &Capability) -> Record {
    predicted_at(shape, acct, device, w, cap, None)
}

/// The record of predicting `shape` at `w` on `device`; `threads` the
/// thread count it is predicted at where that is not the profile's (its
/// intervals widen with the distance).
pub fn predicted_at(
    shape: &Shape,
    acct: &Accounting,
    device: &Device,
    w: &Workload,
    cap: &Capability,
    threads: Option<u32>,
) -> Record {
    let p = predict(shape, acct, device.model(), w);
    let b = crate::interval::bounds(device, shape, w, &p, threads.map(f64::from));
    let mut budgets = judge(p.decode_tok_s, p.peak_mem_bytes, p.energy_j, device.budgets());
    budgets.energy = budgets.energy.with_range(b.energy_j);
    budgets.decode = budgets.decode.with_range(b.decode_tok_s);
    budgets.memory = budgets.memory.with_range([b.peak_mem_bytes[0] / 1e6, b.peak_mem_bytes[1] / 1e6]);
    let by = |detail: &str| Method::predicted(PREDICTOR, detail);
    let decode = match device.model().bandwidth_range {
        Some([lo, hi]) => format!(
            "bytes per token / (efficiency x bandwidth) + fixed costs; {:.1}-{:.1} tok/s over the bandwidth the machine showed, {:.1}-{:.1} GB/s",
            p.decode_tok_s_range[0],
            p.decode_tok_s_range[1],
            lo / 1e9,
            hi / 1e9
        ),
        None => "bytes per token / (efficiency x bandwidth) + fixed costs".into(),
    };
    let methods = [
        (MethodKey::DecodeTokS, by(&decode)),
        (MethodKey::PrefillTokS, by("roofline of prefill FLOPs and weight bytes")),
        (MethodKey::TtftMs, by("prefill time (ttft_ms_low/high: its 90% interval from the fit's leave-one-out error, or a prior, widened beyond the fitted range)")),
        (MethodKey::PeakMemIncreaseMb, by("weights + KV cache + scratch + engine overhead")),
        (MethodKey::PackageMb, Method::Arithmetic { detail: "quantized weights + tokenizer/graph estimate".into() }),
        (
            MethodKey::EnergyJPerRun,
            by("active power x run time (estimate, not measured; energy_j_per_run_low/high: its 90% interval, with the ranges of the profile's prior parameters)"),
        ),
    ]
    .into_iter()
    .collect();
    Record {
        config_id: shape.id(),
        config_name: shape.to_string(),
        device: device.id().to_string(),
        engine: device.profile().engine.name.clone(),
        provenance: Provenance::Predicted,
        produced_by: PREDICTOR.to_string(),
        calibration: device.calibration_label(),
        methods,
        shape: *shape,
        params_total: acct.params_total,
        params_non_embedding: acct.params_non_embedding,
        package_bytes: acct.package_bytes,
        weight_bytes_per_token: acct.weight_bytes_per_token,
        kv_bytes_per_token: crate::arch::account::kv_bytes_per_position(shape, device.model().kv_bits),
        prompt_tokens: w.prompt,
        gen_tokens: w.gen,
        decode_tok_s: p.decode_tok_s,
        prefill_tok_s: p.prefill_tok_s,
        ttft_ms: p.ttft_ms,
        ttft_ms_low: Some(b.ttft_ms[0]),
        ttft_ms_high: Some(b.ttft_ms[1]),
        bounds: PredictedBounds {
            decode_tok_s_low: Some(b.decode_tok_s[0]),
            decode_tok_s_high: Some(b.decode_tok_s[1]),
            prefill_tok_s_low: Some(b.prefill_tok_s[0]),
            prefill_tok_s_high: Some(b.prefill_tok_s[1]),
            peak_mem_increase_mb_low: Some(b.peak_mem_bytes[0] / 1e6),
            peak_mem_increase_mb_high: Some(b.peak_mem_bytes[1] / 1e6),
            low_confidence: Some(b.low_confidence),
        },
        peak_mem_increase_mb: p.peak_mem_bytes / 1e6,
        package_mb: p.package_bytes / 1e6,
        energy_j_per_run: p.energy_j,
        energy_j_per_run_low: Some(b.energy_j[0]),
        energy_j_per_run_high: Some(b.energy_j[1]),
        prefill_energy_share: Some(p.prefill_energy_share),
        avg_power_w: None,
        energy_gross_j_per_run: None,
        battery_fraction_per_run: p.battery_fraction,
        capability: cap.score,
        capability_source: cap.source.clone(),
        feasible: budgets.feasible(),
        budgets,
        on_frontier: false,
        measurement: None,
    }
}

/// A measurement failed while building its statistics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("measurement of {config} on {device}: {source}")]
pub struct MeasureError {
    /// Configuration id.
    pub config: String,
    /// Device id.
    pub device: String,
    /// The statistics error.
    pub source: SampleError,
}

/// Build a measured record from a probe result. Energy, when the device could
/// not measure it, is the predicted value, and `methods` says so.
pub fn measured(
    shape: &Shape,
    acct: &Accounting,
    device: &Device,
    probe: ProbeResult,
    cap: &Capability,
) -> Result<Record, MeasureError> {
    let w = probe.workload;
    let mut rec = predicted(shape, acct, device, &w, cap);
    let pred = Predicted {
        decode_tok_s: rec.decode_tok_s,
        prefill_tok_s: rec.prefill_tok_s,
        ttft_ms: rec.ttft_ms,
        peak_mem_increase_mb: rec.peak_mem_increase_mb,
        energy_j_per_run: rec.energy_j_per_run,
    };
    let err = |source| MeasureError { config: shape.id(), device: device.id().into(), source };
    let series = |f: fn(&Rep) -> f64| -> Result<Summary, MeasureError> {
        let v: Vec<f64> = crate::trust::kept(&probe).map(f).collect();
        if let [one] = v[..] {
            return Ok(Summary::single(one));
        }
        Ok(Sample::new(v).map_err(err)?.summary())
    };
    let decode = series(|r| r.decode_tok_s)?;
    let prefill = series(|r| r.prefill_tok_s)?;
    let ttft = series(|r| r.ttft_s * 1e3)?;
    // The probe's net figure; a result of an older probe has only each
    // repetition's gross joules.
    let energies: Vec<f64> = crate::trust::kept(&probe).filter_map(|r| r.energy.as_ref().map(|e| e.joules)).collect();
    let energy =
        probe.energy.energy_j_per_run.or_else(|| (!energies.is_empty()).then(|| crate::stats::median(&energies)));
    let bytes_per_token = crate::predict::predict(shape, acct, device.model(), &w).bytes_per_token;
    let achieved = bytes_per_token * decode.median;
    rec.provenance = Provenance::Measured;
    if let Some(t) = device.calibrated_threads().filter(|t| *t != probe.threads) {
        rec.calibration = format!(
            "{}; outside the calibration: calibrated at {t} thread(s), measured at {}",
            rec.calibration, probe.threads
        );
    }
    rec.produced_by = format!("{} {} via pocketbench probe", probe.engine, probe.engine_version);
    rec.engine = format!("{} ({})", probe.engine, probe.engine_version);
    rec.decode_tok_s = decode.median;
    rec.prefill_tok_s = prefill.median;
    rec.ttft_ms = ttft.median;
    (rec.ttft_ms_low, rec.ttft_ms_high) = (None, None);
    rec.bounds = PredictedBounds::default();
    let (prefill_s, decode_s) = (w.prompt as f64 / prefill.median, w.gen as f64 / decode.median);
    rec.prefill_energy_share = Some(prefill_s / (prefill_s + decode_s));
    rec.peak_mem_increase_mb = probe.peak_increase_bytes as f64 / 1e6;
    let package_bytes = (probe.model_file_bytes > 0).then_some(probe.model_file_bytes);
    if let Some(p) = package_bytes {
        rec.package_bytes = p;
        rec.package_mb = p as f64 / 1e6;
    }
    rec.methods = measured_methods(&probe, &rec.methods, package_bytes.is_some());
    set_energy(&mut rec, device, &probe, energy);
    rec.budgets = judge(rec.decode_tok_s, rec.peak_mem_increase_mb * 1e6, rec.energy_j_per_run, device.budgets());
    if let (Some(lo), Some(hi)) = (rec.energy_j_per_run_low, rec.energy_j_per_run_high) {
        rec.budgets.energy = rec.budgets.energy.with_range([lo, hi]);
    }
    rec.feasible = rec.budgets.feasible();
    rec.measurement = Some(Box::new(Measurement {
        decode,
        prefill,
        ttft_ms: ttft,
        achieved_bandwidth_gb_s: achieved / 1e9,
        device_bandwidth_gb_s: device.model().bandwidth / 1e9,
        device_bandwidth_source: device.profile().facts.bandwidth.source.clone(),
        bandwidth_efficiency: achieved / device.model().bandwidth,
        probe_bandwidth_gb_s: probe.read_bandwidth.map(|b| b.bytes_per_s / 1e9),
        probe_bandwidth_efficiency: probe.read_bandwidth.map(|b| achieved / b.bytes_per_s),
        decode_efficiency: crate::trust::efficiency(&probe).map_err(err)?,
        moment_bandwidth_gb_s: crate::trust::moment_bandwidth(&probe),
        drifted: probe.sampling.as_ref().is_some_and(|s| s.drifted > 0),
        itl: Latency::of(crate::trust::kept(&probe)),
        output: Output::of(&probe.reps),
        protocol: None,
        contended: crate::trust::contended(&probe),
        predicted: pred,
        probe,
    }));
    let protocol = crate::protocol::Protocol::of(&rec);
    if let Some(m) = rec.measurement.as_mut() {
        m.protocol = protocol;
    }
    Ok(rec)
}

/// A measured record's energy: the probe's figure where it read one (the
/// prediction's range then dropped), else the prediction, labelled as such.
fn set_energy(rec: &mut Record, device: &Device, probe: &ProbeResult, energy: Option<f64>) {
    let Some(j) = energy else {
        let why = probe.energy_not_measured.clone().unwrap_or_else(|| "no meter".into());
        rec.methods
            .insert(MethodKey::EnergyJPerRun, Method::NotMeasured { why, model: crate::predict::PREDICTOR.into() });
        return;
    };
    rec.energy_j_per_run = j;
    (rec.energy_j_per_run_low, rec.energy_j_per_run_high) = (None, None);
    rec.battery_fraction_per_run = device.model().battery_j.map(|b| j / b);
    rec.avg_power_w = probe.energy.avg_power_w;
    rec.energy_gross_j_per_run = probe.energy.energy_gross_j_per_run.or(Some(j));
    let meter = probe.methods.get("energy").cloned().unwrap_or_default();
    let how = probe.methods.get("energy_j_per_run").cloned().unwrap_or_else(|| "gross".into());
    let m = &mut rec.methods;
    // A result that names its energy meter is read as it says.
    let by = |detail: String| match probe.meters.and_then(|x| x.energy) {
        Some(kind) => Method::measured_by(kind, detail),
        None => Method::measured(detail),
    };
    m.insert(MethodKey::EnergyJPerRun, by(format!("{meter}; {how}")));
    m.insert(MethodKey::EnergyGrossJPerRun, by(format!("{meter}; median of the repetitions")));
    if rec.avg_power_w.is_some() {
        m.insert(MethodKey::AvgPowerW, by(format!("{meter}; gross joules / seconds of each run, median")));
    }
}

/// The methods of a measured record's speeds, memory, file size and
/// thermal conditions (energy is added by the caller, which knows whether
/// it was read); `predicted` holds the prediction's methods, for a file
/// size that was not measured.
fn measured_methods(probe: &ProbeResult, predicted: &Methods, file_measured: bool) -> Methods {
    let n = crate::trust::kept(probe).count();
    let mut methods = BTreeMap::new();
    let how = sampling_note(probe);
    methods.insert(
        MethodKey::DecodeTokS,
        Method::measured(format!("timer, median of {n} repetitions after warm-up ({} threads){how}", probe.threads)),
    );
    if probe.reps.iter().any(|r| !r.itl_us.is_empty()) {
        methods.insert(
            MethodKey::Itl,
            Method::measured(format!("timer after every decode step, nearest-rank percentiles over {n} repetitions")),
        );
    }
    methods.insert(MethodKey::PrefillTokS, Method::measured(format!("timer, median of {n} repetitions")));
    methods.insert(MethodKey::TtftMs, Method::measured(format!("timer, median of {n} repetitions")));
    // The probe names its memory meter: VmHWM on Linux and Android,
    // phys_footprint in the iOS app.
    let memory = probe
        .methods
        .get("peak_increase_bytes")
        .cloned()
        .unwrap_or_else(|| "VmHWM minus VmRSS before load (/proc/self/status), fresh process".into());
    // A result that names its memory meter is read as it says.
    let method = match probe.meters {
        Some(m) => Method::measured_by(m.memory, memory),
        None => Method::measured(memory),
    };
    methods.insert(MethodKey::PeakMemIncreaseMb, method);
    let package = if file_measured {
        Method::measured("size of the GGUF file run")
    } else {
        predicted.get(&MethodKey::PackageMb).cloned().unwrap_or(Method::Arithmetic { detail: "no file size".into() })
    };
    methods.insert(MethodKey::PackageMb, package);
    if let Some(t) = probe.methods.get("thermal") {
        methods.insert(MethodKey::Thermal, Method::measured(t.clone()));
    }
    methods
}

/// ", widened for neighbours correlating 0.62" where the repetitions'
/// lag-1 autocorrelation widened the median's interval
/// ([`crate::probe::timing::relative_half_width`]).
pub fn widened(autocorrelation: Option<f64>) -> String {
    autocorrelation
        .filter(|r| *r > 0.0)
        .map_or(String::new(), |r| format!(", widened for neighbours correlating {r:.2}"))
}

/// How the repetitions were taken, for the decode method: the contention
/// counts where the probe judged windows, and the precision of automatic
/// repetitions.
fn sampling_note(probe: &ProbeResult) -> String {
    let Some(s) = &probe.sampling else { return String::new() };
    let mut parts = Vec::new();
    if let (Some(target), Some(reached)) = (s.precision_target, s.precision_reached) {
        parts.push(format!(
            "repeated until the median's 95% interval was within ±{:.1}% (reached ±{:.1}%{}, stopped by {})",
            target * 100.0,
            reached * 100.0,
            widened(s.autocorrelation),
            s.stopped_by
        ));
    }
    if s.retaken > 0 || s.contended > 0 {
        parts.push(format!("{} clean, {} contended kept, {} retaken", s.clean, s.contended, s.retaken));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::{Meter, Meters};

    #[test]
    fn a_meter_the_probe_names_wins_over_the_words_and_survives_a_round_trip() {
        let devices = crate::device::Devices::built_in().unwrap();
        let host = devices.get("host").unwrap();
        let shape = crate::arch::Shape { context: 24, ..crate::arch::presets::s(128, 2, 4, 2, 32, 256, 512, true) };
        let acct = shape.accounting();
        let w = crate::workload::Workload::new(16, 8, None).unwrap();
        let cap = crate::capability::Capability { score: 1.0, source: "test".into() };
        let pred = predicted(&shape, &acct, host, &w, &cap);
        let mut probe = crate::testing::probe_for(&pred, &[100.0, 101.0, 99.0]);
        // Words that name no meter; the result names phys_footprint.
        probe.methods.insert("peak_increase_bytes".into(), "the app's own reading".into());
        probe.meters = Some(Meters { memory: Meter::PhysFootprint, energy: None });
        let rec = measured(&shape, &acct, host, probe, &cap).unwrap();
        assert_eq!(rec.meter_of(&MethodKey::PeakMemIncreaseMb), Some(Meter::PhysFootprint));
        let back: Record = serde_json::from_str(&serde_json::to_string(&rec).unwrap()).unwrap();
        assert_eq!(back.meter_of(&MethodKey::PeakMemIncreaseMb), Some(Meter::PhysFootprint));
        // A predicted figure has no meter.
        assert_eq!(back.meter_of(&MethodKey::EnergyJPerRun), None);
    }
}
