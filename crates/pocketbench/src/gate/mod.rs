//! The CI regression gate: a candidate's measured results against a
//! baseline's, configuration x device x metric, with a verdict that fails a
//! build only on a real regression or a broken budget.
//!
//! For each matched configuration x device x engine x workload and each
//! metric (decode tok/s, prefill tok/s, peak memory increase, energy per run):
//! 1. validity: a side with device errors, no repetitions, or a metric the
//!    device did not measure is reported as such and never compared;
//! 2. budgets: the candidate's figure against the device's budget, as its
//!    record judged it (and whether that figure was measured or predicted);
//! 3. regression: a one-sided Mann-Whitney U test on the raw repetitions
//!    (p Holm-corrected across the suite) and a bootstrap interval of the
//!    ratio of medians. A regression needs p < alpha AND a change beyond the
//!    minimum effect: by default the ratio of medians beyond it
//!    ([`EffectRule::Estimate`]); [`EffectRule::Interval`] asks for the whole
//!    interval beyond it (the stricter rule: see its docs for what it costs);
//! 4. improvements the same way, the other direction.
//!
//! Too few samples is "inconclusive", never "pass". Peak memory is one
//! VmHWM reading per measured run: with fewer readings than `min_samples`
//! a side it is judged on its difference against the minimum effect, which is
//! larger than the reading's noise (see the README), and says so.

pub mod power;
mod side;
pub mod stats;
pub mod trust;
mod verdict;

pub use side::{Described, Loaded};
pub use verdict::*;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::budget;
use crate::outcome::FailedMeasurement;
use crate::record::{Provenance, Record};
use stats::Side;

/// Prompts shorter than this have no prefill figure worth gating (one token
/// or a few is a memory-bound pass, not prefill).
pub const MIN_PREFILL_PROMPT: u32 = crate::workload::MIN_PREFILL_PROMPT;

/// What a regression must exceed beyond significance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EffectRule {
    /// The ratio of medians lies beyond the minimum effect. With 10
    /// samples a side at 2% noise this catches a 5% slowdown in at least 95%
    /// of trials (the simulation tests).
    #[default]
    Estimate,
    /// The whole bootstrap interval lies beyond the minimum effect. At 10
    /// samples a side and 2% noise the interval's half-width (~2%) equals the
    /// room between a 5% slowdown and a 3% minimum effect, so it catches a
    /// 5% slowdown only about half the time (measured in the simulation
    /// tests); even 30 samples a side catch it in only ~91%.
    Interval,
}

impl EffectRule {
    /// Its name in sweep files, flags and outputs.
    pub fn name(self) -> &'static str {
        match self {
            EffectRule::Estimate => "estimate",
            EffectRule::Interval => "interval",
        }
    }
}

/// The gate's settings. Every field is a flag of `pocketbench gate` and a key
/// of a sweep file's `[gate]` table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Settings {
    /// Family-wise significance level (Holm-corrected across the suite).
    pub alpha: f64,
    /// Minimum effect on decode and prefill speed (0.03 = 3%).
    pub min_effect_speed: f64,
    /// Minimum effect on energy per run.
    pub min_effect_energy: f64,
    /// Minimum effect on peak memory, relative...
    pub min_effect_memory: f64,
    /// ...or absolute, MB: the larger of the two.
    pub min_effect_memory_mb: f64,
    /// Fewer samples on a side than this is inconclusive.
    pub min_samples: usize,
    /// Level of the ratio's interval (0.95).
    pub confidence: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// What the change must exceed.
    pub effect_rule: EffectRule,
    /// Compare a side with contended repetitions against a clean one
    /// (refused by default: a busy machine's slowdown is not a regression).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_contended: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.01,
            min_effect_speed: 0.03,
            min_effect_energy: 0.05,
            min_effect_memory: 0.01,
            min_effect_memory_mb: 1.0,
            min_samples: 6,
            confidence: 0.95,
            resamples: 2000,
            effect_rule: EffectRule::Estimate,
            allow_contended: false,
        }
    }
}

impl Settings {
    /// Check the values make sense; the error names the key.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.problem().map_err(SettingsError)
    }

    fn problem(&self) -> Result<(), String> {
        let frac = |name: &str, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && v > lo && v < hi {
                Ok(())
            } else {
                Err(format!("{name} must be between {lo} and {hi} (exclusive), got {v}"))
            }
        };
        frac("alpha", self.alpha, 0.0, 1.0)?;
        frac("confidence", self.confidence, 0.0, 1.0)?;
        for (n, v) in [
            ("min-effect-speed", self.min_effect_speed),
            ("min-effect-energy", self.min_effect_energy),
            ("min-effect-memory", self.min_effect_memory),
        ] {
            if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                return Err(format!("{n} must be at least 0 and below 1 (a fraction: 0.03 is 3%), got {v}"));
            }
        }
        if !(self.min_effect_memory_mb.is_finite() && self.min_effect_memory_mb >= 0.0) {
            return Err(format!("min-effect-memory-mb must be at least 0, got {}", self.min_effect_memory_mb));
        }
        if self.min_samples < 2 {
            return Err(format!("min-samples must be at least 2, got {}", self.min_samples));
        }
        if !(100..=1_000_000).contains(&self.resamples) {
            return Err(format!("resamples must be 100 to 1000000, got {}", self.resamples));
        }
        Ok(())
    }
}

/// A gate setting out of its range: the message starts with the setting's
/// key (`alpha must be ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

/// A gated metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Decode tok/s (higher is better).
    DecodeTokS,
    /// Prefill tok/s (higher is better).
    PrefillTokS,
    /// Peak memory increase, MB (lower is better).
    PeakMemIncreaseMb,
    /// Energy per run, J (lower is better).
    EnergyJPerRun,
    /// The 99th percentile of the inter-token latency, ms (lower is
    /// better): one sample a repetition, the p99 of its decode steps.
    /// Gated when asked (`--metric p99_itl_ms`).
    P99ItlMs,
    /// Decode's share of the same-moment bandwidth of the weights' memory
    /// (higher is better): one sample a repetition, its decode tok/s times
    /// the bytes a token reads over the mean of the passes right before and
    /// right after it. Where the machine's bandwidth moves (a shared VM),
    /// a change in the engine shows here and a change in the machine does
    /// not. Gated when asked (`--metric decode_efficiency`).
    DecodeEfficiency,
    /// Decode tok/s with the machine's bandwidth moves taken out (higher
    /// is better): every repetition of both sides taken to one reference
    /// bandwidth along a line of time against 1 / same-moment bandwidth
    /// whose slope is fitted within each side
    /// ([`crate::trust::BandwidthFit::within`]), as an analysis of
    /// covariance does. Gated when asked
    /// (`--metric decode_at_bandwidth`).
    DecodeAtBandwidth,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 4] =
        [Metric::DecodeTokS, Metric::PrefillTokS, Metric::PeakMemIncreaseMb, Metric::EnergyJPerRun];

    /// Every metric that can be gated, the default four first.
    pub const EVERY: [Metric; 7] = [
        Metric::DecodeTokS,
        Metric::PrefillTokS,
        Metric::PeakMemIncreaseMb,
        Metric::EnergyJPerRun,
        Metric::P99ItlMs,
        Metric::DecodeEfficiency,
        Metric::DecodeAtBandwidth,
    ];

    /// The metric of a name ([`Metric::name`]).
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::EVERY.into_iter().find(|m| m.name() == name)
    }

    /// The record's field name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::DecodeTokS => "decode_tok_s",
            Metric::PrefillTokS => "prefill_tok_s",
            Metric::PeakMemIncreaseMb => "peak_mem_increase_mb",
            Metric::EnergyJPerRun => "energy_j_per_run",
            Metric::P99ItlMs => "p99_itl_ms",
            Metric::DecodeEfficiency => "decode_efficiency",
            Metric::DecodeAtBandwidth => "decode_at_bandwidth",
        }
    }

    /// Unit.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::DecodeTokS | Metric::PrefillTokS | Metric::DecodeAtBandwidth => "tok/s",
            Metric::PeakMemIncreaseMb => "MB",
            Metric::EnergyJPerRun => "J",
            Metric::P99ItlMs => "ms",
            Metric::DecodeEfficiency => "share",
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::DecodeTokS | Metric::PrefillTokS | Metric::DecodeEfficiency | Metric::DecodeAtBandwidth)
    }

    /// The raw samples of one measured record: one per repetition, or the
    /// one VmHWM reading for peak memory. Empty when the record did not
    /// measure it.
    pub fn samples(self, r: &Record) -> Vec<f64> {
        let Some(m) = r.measurement.as_ref() else { return Vec::new() };
        // Retaken repetitions (contended, taken again) are not samples.
        let reps = || crate::trust::kept(&m.probe);
        match self {
            Metric::DecodeTokS => reps().map(|x| x.decode_tok_s).collect(),
            Metric::PrefillTokS => reps().map(|x| x.prefill_tok_s).collect(),
            Metric::PeakMemIncreaseMb => vec![m.probe.peak_increase_bytes as f64 / 1e6],
            Metric::EnergyJPerRun => reps().filter_map(|x| x.energy.as_ref().map(|e| e.joules)).collect(),
            Metric::P99ItlMs => {
                reps().filter_map(|x| crate::trust::Latency::of(std::iter::once(x)).map(|l| l.p99_ms)).collect()
            }
            Metric::DecodeEfficiency => reps().filter_map(|x| x.drift.map(|d| d.efficiency)).collect(),
            // One record alone: fitted over its own repetitions.
            Metric::DecodeAtBandwidth => at_bandwidth(std::slice::from_ref(r), std::slice::from_ref(r)).0,
        }
        .into_iter()
        .filter(|v| v.is_finite())
        .collect()
    }

    fn budget(self, r: &Record) -> Option<budget::Verdict> {
        match self {
            Metric::DecodeTokS => Some(r.budgets.decode),
            Metric::PeakMemIncreaseMb => Some(r.budgets.memory),
            Metric::EnergyJPerRun => Some(r.budgets.energy),
            Metric::PrefillTokS | Metric::P99ItlMs | Metric::DecodeEfficiency | Metric::DecodeAtBandwidth => None,
        }
    }
}

/// (tok/s, same-moment GB/s) of every repetition of `records`, retaken
/// ones included: what a [`crate::trust::BandwidthFit`] learns from.
fn bandwidth_points<'a>(records: impl Iterator<Item = &'a Record>) -> Vec<(f64, f64)> {
    records
        .filter_map(|r| r.measurement.as_ref())
        .flat_map(|m| crate::trust::decode_and_bandwidth(&m.probe, true))
        .collect()
}

/// The line of decode time against bandwidth, its slope fitted within each
/// side (each side keeps its own intercept, which is what is compared).
fn side_fit(baseline: &[Record], candidate: &[Record]) -> Option<crate::trust::BandwidthFit> {
    let (b, c) = (bandwidth_points(baseline.iter()), bandwidth_points(candidate.iter()));
    crate::trust::BandwidthFit::within(&[&b, &c])
}

/// Both sides' summarized repetitions taken to one reference bandwidth
/// along a line whose slope is fitted within each side; empty when no
/// fit can be made (too few repetitions, one bandwidth regime, or a
/// bandwidth that does not explain the time).
fn at_bandwidth(baseline: &[Record], candidate: &[Record]) -> (Vec<f64>, Vec<f64>) {
    let Some(f) = side_fit(baseline, candidate) else { return (Vec::new(), Vec::new()) };
    let side = |rs: &[Record]| -> Vec<f64> {
        rs.iter()
            .filter_map(|r| r.measurement.as_ref())
            .flat_map(|m| crate::trust::decode_and_bandwidth(&m.probe, false))
            .map(|(t, bw)| f.adjust(t, bw))
            .collect()
    };
    (side(baseline), side(candidate))
}

/// What the results are matched on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    /// Configuration id.
    pub config_id: String,
    /// Device id.
    pub device: String,
    /// Engine label.
    pub engine: String,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Generated tokens.
    pub gen_tokens: u32,
}

impl Key {
    /// A measured record's key: its engine is the engine kind the probe ran
    /// (`native`, `llama.cpp`...), not the version label, which changes with
    /// the very builds a gate compares; an old name (`candle`) is read as
    /// the engine's name today, so a baseline from before a rename still
    /// matches.
    pub fn of(r: &Record) -> Key {
        let engine = r.measurement.as_ref().map_or_else(|| r.engine.clone(), |m| m.probe.engine.clone());
        let engine = crate::probe::EngineKind::of_result(&engine).map_or(engine, |e| e.name().to_string());
        Key {
            config_id: r.config_id.clone(),
            device: r.device.clone(),
            engine,
            prompt_tokens: r.prompt_tokens,
            gen_tokens: r.gen_tokens,
        }
    }

    /// `config on device (engine, prompt+gen)`.
    pub fn label(&self, name: &str) -> String {
        format!("{name} on {} ({}, {}+{})", self.device, self.engine, self.prompt_tokens, self.gen_tokens)
    }
}

/// Measured records and failures of one side, grouped by key.
struct Grouped {
    records: BTreeMap<Key, Vec<Record>>,
    failures: Vec<FailedMeasurement>,
}

fn group(records: &[Record], failures: &[FailedMeasurement]) -> Grouped {
    let mut map: BTreeMap<Key, Vec<Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.provenance == Provenance::Measured) {
        map.entry(Key::of(r)).or_default().push(r.clone());
    }
    Grouped { records: map, failures: failures.to_vec() }
}

/// Compare two sides on the default metrics ([`Metric::ALL`]). Pure: the
/// same inputs give the same verdict.
pub fn evaluate(baseline: &Loaded, candidate: &Loaded, settings: &Settings) -> Verdict {
    evaluate_metrics(baseline, candidate, settings, &Metric::ALL)
}

/// [`evaluate`] on `metrics`.
pub fn evaluate_metrics(baseline: &Loaded, candidate: &Loaded, settings: &Settings, metrics: &[Metric]) -> Verdict {
    let b = group(&baseline.records, &baseline.failures);
    let c = group(&candidate.records, &candidate.failures);
    let unmatched = |from: &Grouped, other: &Grouped| -> Vec<Unmatched> {
        from.records
            .iter()
            .filter(|(k, _)| !other.records.contains_key(*k))
            .map(|(k, v)| Unmatched { key: k.clone(), config_name: v[0].config_name.clone() })
            .collect()
    };
    let only_in_baseline = unmatched(&b, &c);
    let only_in_candidate = unmatched(&c, &b);
    let mut comparisons = Vec::new();
    for (key, brecs) in &b.records {
        let Some(crecs) = c.records.get(key) else { continue };
        for &metric in metrics {
            comparisons.push(compare(key, brecs, crecs, &b, &c, metric, settings));
        }
    }
    correct(&mut comparisons, settings);
    let mut counts = Counts { comparisons: comparisons.len(), ..Counts::default() };
    for x in &comparisons {
        *counts.by_status.entry(x.status.name().to_owned()).or_default() += 1;
        counts.budget_failures += usize::from(x.budget_failed());
    }
    let outcome = if comparisons.iter().any(Comparison::fails) {
        Outcome::Fail
    } else if comparisons.is_empty()
        || comparisons.iter().any(|x| matches!(x.status, Status::Inconclusive | Status::Invalid))
        || !only_in_baseline.is_empty()
    {
        Outcome::Inconclusive
    } else {
        Outcome::Pass
    };
    Verdict {
        tool: format!("pocketbench {}", env!("CARGO_PKG_VERSION")),
        outcome,
        settings: *settings,
        baseline: baseline.described.clone(),
        candidate: candidate.described.clone(),
        counts,
        comparisons,
        only_in_baseline,
        only_in_candidate,
        protocol_differences: crate::protocol::between(&baseline.records, &candidate.records),
    }
}

fn min_effect(metric: Metric, s: &Settings) -> f64 {
    match metric {
        Metric::DecodeTokS
        | Metric::PrefillTokS
        | Metric::P99ItlMs
        | Metric::DecodeEfficiency
        | Metric::DecodeAtBandwidth => s.min_effect_speed,
        Metric::EnergyJPerRun => s.min_effect_energy,
        Metric::PeakMemIncreaseMb => s.min_effect_memory,
    }
}

/// The candidate's median (of every repetition on its side) against the
/// budget's limit; a figure the device did not measure (energy with no
/// meter) is the record's own estimate.
fn budget_check(metric: Metric, last: &Record, median: Option<f64>) -> Option<BudgetCheck> {
    metric.budget(last).map(|v| {
        let measured = last
            .methods
            .get(&crate::provenance::MethodKey::named(metric.name()))
            .is_none_or(crate::provenance::Method::is_measured);
        let v = match (median.filter(|_| measured), v.limit) {
            (Some(cm), Some(limit)) if metric.higher_is_better() => budget::at_least(cm, limit),
            (Some(cm), limit) => budget::at_most(cm, limit),
            (None, _) => v,
        };
        let measured = measured && median.is_some();
        BudgetCheck { status: v.status, value: v.value, limit: v.limit, margin: v.margin, measured }
    })
}

/// Why a metric of a matched pair is not compared at all (a device error,
/// a prefill too short to gate, energy not measured), if it is not.
fn not_comparable(
    key: &Key,
    metric: Metric,
    (brecs, bs, b): (&[Record], &[f64], &Grouped),
    (last, cs, c): (&Record, &[f64], &Grouped),
) -> Option<(Status, String)> {
    let (bf, cf) = (failures_of(b, key), failures_of(c, key));
    if !cf.is_empty() || !bf.is_empty() {
        let (side, f) = if cf.is_empty() { ("baseline", bf[0]) } else { ("candidate", cf[0]) };
        let why = format!("the {side} has a device error for this configuration: {}", one_line(&f.failure.to_string()));
        return Some((Status::Invalid, why));
    }
    if metric == Metric::PrefillTokS && key.prompt_tokens < MIN_PREFILL_PROMPT {
        return Some((
            Status::NotMeasured,
            format!("a {}-token prompt has no prefill figure to gate", key.prompt_tokens),
        ));
    }
    if metric == Metric::DecodeAtBandwidth && (bs.is_empty() || cs.is_empty()) {
        return Some((
            Status::NotMeasured,
            format!(
                "no line of decode time against the same-moment bandwidth could be fitted: it needs {} repetitions \
                 with bandwidth readings (native engine, weights of 64 MiB or more) over a {:.0}% spread of \
                 bandwidth that explains the time (r >= {})",
                crate::trust::MIN_FIT_POINTS,
                (crate::trust::MIN_FIT_SPREAD - 1.0) * 100.0,
                crate::trust::MIN_FIT_R
            ),
        ));
    }
    if metric == Metric::EnergyJPerRun && (bs.is_empty() || cs.is_empty()) {
        let side = if cs.is_empty() { "candidate" } else { "baseline" };
        let est = if cs.is_empty() { last.energy_j_per_run } else { brecs[0].energy_j_per_run };
        let why = format!(
            "energy not measured on the {side}'s device (its record holds an estimate, {est:.3} J): not compared"
        );
        return Some((Status::NotMeasured, why));
    }
    None
}

/// Peak memory from single VmHWM readings a side: the difference against
/// the minimum effect, which is larger than the reading's noise.
fn memory_reading(bm: f64, cm: f64, s: &Settings) -> (Status, String) {
    let threshold = (s.min_effect_memory * bm).max(s.min_effect_memory_mb);
    let d = cm - bm;
    if d > threshold {
        (Status::Regression, format!("peak memory grew {d:+.1} MB ({bm:.1} -> {cm:.1} MB), beyond {threshold:.1} MB"))
    } else if d < -threshold {
        (Status::Improvement, format!("peak memory fell {d:+.1} MB ({bm:.1} -> {cm:.1} MB), beyond {threshold:.1} MB"))
    } else {
        (Status::Pass, format!("peak memory {d:+.1} MB ({bm:.1} -> {cm:.1} MB), within {threshold:.1} MB"))
    }
}

fn failures_of<'a>(side: &'a Grouped, key: &Key) -> Vec<&'a FailedMeasurement> {
    side.failures.iter().filter(|f| f.config_id == key.config_id && f.device == key.device).collect()
}

/// Compare one metric; the p-values are corrected later, across the suite.
fn compare(
    key: &Key,
    brecs: &[Record],
    crecs: &[Record],
    b: &Grouped,
    c: &Grouped,
    metric: Metric,
    s: &Settings,
) -> Comparison {
    let (bs, cs, fit) = if metric == Metric::DecodeAtBandwidth {
        let (bs, cs) = at_bandwidth(brecs, crecs);
        (bs, cs, side_fit(brecs, crecs))
    } else {
        let samples = |rs: &[Record]| -> Vec<f64> { rs.iter().flat_map(|r| metric.samples(r)).collect() };
        (samples(brecs), samples(crecs), None)
    };
    let fig = |v: &[f64], r: &[Record]| SideFigures {
        engine: r.last().map(|r| r.engine.clone()).unwrap_or_default(),
        n: v.len(),
        median: (!v.is_empty()).then(|| stats::median(v)),
    };
    let (baseline, candidate) = (fig(&bs, brecs), fig(&cs, crecs));
    let last = crecs.last().expect("a matched key has records");
    // The candidate's median (of every repetition on its side) against the
    // budget's limit; a figure the device did not measure (energy with no
    // meter) is the record's own estimate.
    let budget = budget_check(metric, last, candidate.median);
    let effect = min_effect(metric, s);
    let mut out = Comparison::pending(key.clone(), last.config_name.clone(), metric, [baseline, candidate], effect);
    out.budget = budget;
    // 1. Validity.
    if let Some((status, reason)) = not_comparable(key, metric, (brecs, &bs, b), (last, &cs, c))
        .or_else(|| trust::untrusted(brecs, crecs, s.allow_contended))
    {
        (out.status, out.reason) = (status, reason);
        return out;
    }
    let (Some(bm), Some(cm)) = (out.baseline.median, out.candidate.median) else {
        out.status = Status::Invalid;
        out.reason =
            format!("no {} samples on the {}", metric.name(), if cs.is_empty() { "candidate" } else { "baseline" });
        return out;
    };
    out.ratio = Some(cm / bm);
    // Peak memory from single readings: the difference against the effect.
    if metric == Metric::PeakMemIncreaseMb && (bs.len() < s.min_samples || cs.len() < s.min_samples) {
        out.method = "single reading (VmHWM) against the minimum effect".into();
        (out.status, out.reason) = memory_reading(bm, cm, s);
        return out;
    }
    let seed = crate::fnv1a(format!("{key:?}{}", metric.name()).as_bytes());
    if bs.len() < s.min_samples || cs.len() < s.min_samples {
        let r = stats::ratio_of_medians(&cs, &bs, s.confidence, s.resamples, seed);
        (out.ratio_lo, out.ratio_hi) = (Some(r.lo), Some(r.hi));
        out.status = Status::Inconclusive;
        out.reason = format!(
            "too few samples: {} baseline and {} candidate, the gate needs {} a side (ratio {:.3})",
            bs.len(),
            cs.len(),
            s.min_samples,
            r.estimate
        );
        return out;
    }
    if let (Some(cb), Some(cc)) = (stats::robust_cv(&bs), stats::robust_cv(&cs)) {
        out.se = Some(stats::relative_se([cb, cc], [bs.len(), cs.len()]));
    }
    let j = judge(&bs, &cs, metric.higher_is_better(), effect, s, seed, true);
    (out.ratio_lo, out.ratio_hi) = (Some(j.ratio.lo), Some(j.ratio.hi));
    out.p_regression = Some(j.p_regression);
    out.p_improvement = Some(j.p_improvement);
    out.method = format!("mann-whitney {}", if j.exact { "exact" } else { "normal approximation" });
    if let Some(f) = fit {
        out.method = format!(
            "{} on decode taken to {:.1} GB/s along {:.2} ms + {:.0} MB / bandwidth a token (slope fitted within each \
             side, r = {:.2}, {} repetitions, {:.1}-{:.1} GB/s)",
            out.method, f.reference_gb_s, f.fixed_ms, f.bound_mb, f.r, f.points, f.range_gb_s[0], f.range_gb_s[1]
        );
    }
    out.status = j.effect;
    out
}

/// The statistics of one comparison before the suite's correction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// The ratio of medians and its interval.
    pub ratio: stats::Ratio,
    /// One-sided p of a regression.
    pub p_regression: f64,
    /// One-sided p of an improvement.
    pub p_improvement: f64,
    /// Whether the U distribution was exact.
    pub exact: bool,
    /// What the effect part of the rule says: [`Status::Regression`],
    /// [`Status::Improvement`] or [`Status::Pass`] (significance not yet applied).
    pub effect: Status,
}

impl Judged {
    /// The verdict of a suite of one test (no correction needed).
    pub fn alone(&self, alpha: f64) -> Status {
        match self.effect {
            Status::Regression if self.p_regression < alpha => Status::Regression,
            Status::Improvement if self.p_improvement < alpha => Status::Improvement,
            _ => Status::Pass,
        }
    }
}

/// Test candidate samples `cs` against baseline samples `bs` (each at least
/// `min_samples` long) for a change beyond `effect` (a fraction).
/// The interval is bootstrapped only where it is wanted: always by
/// [`evaluate`], and by the simulations only for [`EffectRule::Interval`]
/// (elsewhere its ends are NaN).
pub fn judge(
    bs: &[f64],
    cs: &[f64],
    higher_is_better: bool,
    effect: f64,
    s: &Settings,
    seed: u64,
    interval: bool,
) -> Judged {
    let r = if interval || s.effect_rule == EffectRule::Interval {
        stats::ratio_of_medians(cs, bs, s.confidence, s.resamples, seed)
    } else {
        stats::Ratio { estimate: stats::median(cs) / stats::median(bs), lo: f64::NAN, hi: f64::NAN }
    };
    let (worse_side, better_side) =
        if higher_is_better { (Side::Less, Side::Greater) } else { (Side::Greater, Side::Less) };
    let tw = stats::mann_whitney(cs, bs, worse_side);
    let tb = stats::mann_whitney(cs, bs, better_side);
    let worse = |ratio: f64| if higher_is_better { ratio < 1.0 - effect } else { ratio > 1.0 + effect };
    let better = |ratio: f64| if higher_is_better { ratio > 1.0 + effect } else { ratio < 1.0 - effect };
    // The end of the interval nearest "no change".
    let (near_worse, near_better) = if higher_is_better { (r.hi, r.lo) } else { (r.lo, r.hi) };
    let (w, b) = match s.effect_rule {
        EffectRule::Estimate => (worse(r.estimate), better(r.estimate)),
        EffectRule::Interval => (worse(near_worse), better(near_better)),
    };
    let effect = if w {
        Status::Regression
    } else if b {
        Status::Improvement
    } else {
        Status::Pass
    };
    Judged { ratio: r, p_regression: tw.p, p_improvement: tb.p, exact: tw.exact, effect }
}

/// Holm-correct the regression and improvement p-values across the suite and
/// settle each tested comparison: a change is kept only where p < alpha.
fn correct(comparisons: &mut [Comparison], s: &Settings) {
    let tested: Vec<usize> = (0..comparisons.len()).filter(|&i| comparisons[i].p_regression.is_some()).collect();
    let pw = stats::holm(&tested.iter().map(|&i| comparisons[i].p_regression.unwrap_or(1.0)).collect::<Vec<_>>());
    let pb = stats::holm(&tested.iter().map(|&i| comparisons[i].p_improvement.unwrap_or(1.0)).collect::<Vec<_>>());
    for (j, &i) in tested.iter().enumerate() {
        let x = &mut comparisons[i];
        x.p_regression_holm = Some(pw[j]);
        x.p_improvement_holm = Some(pb[j]);
        let ratio = x.ratio.unwrap_or(1.0);
        let change = format!(
            "{} {:.1} -> {:.1} {} (ratio {ratio:.3}, {:.0}% CI {:.3}..{:.3})",
            x.metric.name(),
            x.baseline.median.unwrap_or(f64::NAN),
            x.candidate.median.unwrap_or(f64::NAN),
            x.unit,
            s.confidence * 100.0,
            x.ratio_lo.unwrap_or(f64::NAN),
            x.ratio_hi.unwrap_or(f64::NAN),
        );
        let beyond = match s.effect_rule {
            EffectRule::Estimate => "the ratio",
            EffectRule::Interval => "the whole interval",
        };
        (x.status, x.reason) = match x.status {
            Status::Regression if pw[j] < s.alpha => (
                Status::Regression,
                format!(
                    "regression: {change}; p = {:.2e} (Holm) < {}, {beyond} beyond {:.0}%",
                    pw[j],
                    s.alpha,
                    x.min_effect * 100.0
                ),
            ),
            Status::Improvement if pb[j] < s.alpha => (
                Status::Improvement,
                format!(
                    "improvement: {change}; p = {:.2e} (Holm) < {}, {beyond} beyond {:.0}%",
                    pb[j],
                    s.alpha,
                    x.min_effect * 100.0
                ),
            ),
            _ => {
                let floor = stats::smallest_p(x.baseline.n, x.candidate.n) * tested.len() as f64;
                if floor >= s.alpha {
                    (
                        Status::Inconclusive,
                        format!(
                            "inconclusive: {change}; {} and {} samples cannot reach p < {} across {} test(s)",
                            x.baseline.n,
                            x.candidate.n,
                            s.alpha,
                            tested.len()
                        ),
                    )
                } else {
                    // A pass must have been able to see the minimum effect:
                    // from the noise the samples showed, the smallest change
                    // one test at the suite's level catches with 80% power
                    // (what `gate --power` simulates).
                    let detectable = x.se.map(|se| stats::detectable_change(se, s.alpha, POWER));
                    x.detectable = detectable;
                    match detectable {
                        Some(d) if d > x.min_effect => (
                            Status::Inconclusive,
                            format!(
                                "inconclusive (underpowered: could see {:.1}% and more, not the {:.0}% minimum effect): {change}; \
                                 measure more repetitions or on a quieter machine",
                                d * 100.0,
                                x.min_effect * 100.0
                            ),
                        ),
                        Some(d) => (
                            Status::Pass,
                            format!(
                                "no change beyond {:.0}%: {change}; could see {:.1}% and more",
                                x.min_effect * 100.0,
                                d * 100.0
                            ),
                        ),
                        None => (Status::Pass, format!("no change beyond {:.0}%: {change}", x.min_effect * 100.0)),
                    }
                }
            }
        };
    }
}

/// The power a pass must have had to see the minimum effect.
pub const POWER: f64 = 0.8;

fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or_default();
    if first.chars().count() > 200 {
        format!("{}...", first.chars().take(200).collect::<String>())
    } else {
        first.to_owned()
    }
}

#[cfg(test)]
mod tests;
