//! From a parsed profile to a device: [`validate`] checks every value and
//! collects every problem with its key (so a profile with three mistakes
//! says all three); [`build`] turns the checked values into the numeric
//! model the predictor reads, the budgets, the calibration points and the
//! calibration state.

use super::{
    AttentionScratch, Budgets, CalPoint, CalibrationState, Device, DeviceModel, FreeParam, ModelParams, ModelToml,
    Origin, PointToml, ProfileToml, DEFAULT_BATTERY_FRACTION, DEFAULT_DECODE_BUDGET, DEFAULT_MEMORY_BUDGET,
};
use crate::arch::{Shape, SpecError};
use crate::units::Fraction;
use crate::workload::Workload;

/// What [`validate`] found to hold, ready to build from.
pub(super) struct Checked {
    params: ModelParams,
    ranges: [Option<[f64; 2]>; FreeParam::ALL.len()],
    battery_j: Option<f64>,
    reference_workload: Workload,
    points: Vec<CalPoint>,
    class_points: Vec<CalPoint>,
}

/// `(key, message)` of each problem.
type Problems = Vec<(String, String)>;

fn problem(problems: &mut Problems, key: &str, message: impl Into<String>) {
    problems.push((key.to_string(), message.into()));
}

/// Check every value of `p`; every problem, with its key, when any.
pub(super) fn validate(p: &ProfileToml) -> Result<Checked, Problems> {
    let mut problems = Vec::new();
    let battery_j = battery_joules(p, &mut problems);
    for (key, v) in
        [("facts.bandwidth.value", p.facts.bandwidth.value.0), ("facts.compute.value", p.facts.compute.value.0)]
    {
        if v.is_nan() || v <= 0.0 {
            problem(&mut problems, key, "must be positive");
        }
    }
    let params = params(&p.model);
    check_params(&params, &mut problems);
    let ranges = ranges(&p.model, &mut problems);
    for (key, v) in [("engine.threads", p.engine.threads), ("engine.prefill-chunk", p.engine.prefill_chunk)] {
        if v == Some(0) {
            problem(&mut problems, key, "must be at least 1");
        }
    }
    budgets(p, &mut problems);
    cpu(p, &mut problems);
    if let Some(c) = &p.engine.class {
        if !ENGINE_CLASSES.contains(&c.as_str()) {
            problem(
                &mut problems,
                "engine.class",
                format!("unknown engine class `{c}`: expected {}", ENGINE_CLASSES.join(", ")),
            );
        }
    }
    if let Some(t) = &p.thermal {
        if !t.cool_to_c.is_finite() {
            problem(&mut problems, "thermal.cool-to-c", "must be a finite temperature");
        }
    }
    for (key, bits) in [("engine.kv-bits", p.engine.kv_bits), ("engine.act-bits", p.engine.act_bits)] {
        if ![4, 8, 16, 32].contains(&bits) {
            problem(&mut problems, key, format!("must be 4, 8, 16 or 32, got {bits}"));
        }
    }
    let reference_workload = p.reference_workload.resolve();
    if let Err(e) = &reference_workload {
        problem(&mut problems, "reference-workload", e.to_string());
    }
    let (points, class_points) = points(p, &mut problems).into_iter().partition(|pt| pt.class == own_class(p));
    match reference_workload {
        Ok(reference_workload) if problems.is_empty() => {
            Ok(Checked { params, ranges, battery_j, reference_workload, points, class_points })
        }
        _ => Err(problems),
    }
}

/// Every budget a profile sets is a positive, finite figure: a zero or
/// negative one would judge every configuration by an infinite margin.
fn budgets(p: &ProfileToml, problems: &mut Problems) {
    let b = &p.budgets;
    for (key, v) in [
        ("budgets.decode", b.decode.map(|x| x.0)),
        ("budgets.memory", b.memory.map(|x| x.0)),
        ("budgets.energy", b.energy.map(|x| x.0)),
    ] {
        if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
            problem(problems, key, "must be above 0");
        }
    }
    if let Some(f) = b.energy_battery_fraction {
        if !(f.0 > 0.0 && f.0 <= 1.0) {
            problem(problems, "budgets.energy-battery-fraction", format!("must be in (0, 100%], got {f}"));
        }
    }
}

/// The CPU's clusters: at least one, each named once, with cores, a clock
/// and a core bandwidth above zero.
fn cpu(p: &ProfileToml, problems: &mut Problems) {
    let Some(cpu) = &p.facts.cpu else { return };
    if cpu.clusters.is_empty() {
        problem(problems, "facts.cpu.clusters", "needs at least one cluster");
    }
    for (i, c) in cpu.clusters.iter().enumerate() {
        let key = |k: &str| format!("facts.cpu.clusters[{i}].{k}");
        if cpu.clusters[..i].iter().any(|d| d.name == c.name) {
            problem(problems, &key("name"), format!("cluster `{}` is named twice", c.name));
        }
        if c.cores == 0 {
            problem(problems, &key("cores"), "must be at least 1");
        }
        for (k, v) in [("clock", c.clock.0), ("core-bandwidth", c.core_bandwidth.0)] {
            if v.is_nan() || v <= 0.0 {
                problem(problems, &key(k), "must be positive");
            }
        }
    }
}

/// The battery's energy, J: its own figure, or capacity x voltage; each
/// figure above 0 (a zero battery makes every run an infinite share of it).
fn battery_joules(p: &ProfileToml, problems: &mut Problems) -> Option<f64> {
    let b = p.facts.battery.as_ref()?;
    for (key, v) in [
        ("facts.battery.energy", b.energy.map(|x| x.0)),
        ("facts.battery.capacity", b.capacity.map(|x| x.0)),
        ("facts.battery.voltage", b.voltage.map(|x| x.0)),
    ] {
        if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
            problem(problems, key, "must be above 0");
            return None;
        }
    }
    p.facts.battery.as_ref().and_then(|b| match (b.energy, b.capacity, b.voltage) {
        (Some(e), _, _) => Some(e.0),
        (None, Some(c), Some(v)) => Some(c.0 / 1000.0 * v.0 * 3600.0),
        _ => {
            problem(problems, "facts.battery", "needs `energy`, or `capacity` and `voltage`");
            None
        }
    })
}

/// The predictor's parameters as the profile gives them (an absent
/// optional term is 0: not modelled).
fn params(m: &ModelToml) -> ModelParams {
    ModelParams {
        bandwidth_efficiency: m.bandwidth_efficiency.value.0,
        layer_cost: m.layer_cost.value.0,
        token_cost: m.token_cost.value.0,
        compute_efficiency: m.compute_efficiency.value.0,
        engine_overhead: m.engine_overhead.value.0,
        embedding_extra: m.embedding_extra.as_ref().map_or(0.0, |f| f.value.0),
        attention_cost: m.attention_cost.as_ref().map_or(0.0, |f| f.value.0),
        kv_cost: m.kv_cost.as_ref().map_or(0.0, |f| f.value.0),
        prefill_attention_cost: m.prefill_attention_cost.as_ref().map_or(0.0, |f| f.value.0),
        weight_extra: m.weight_extra.as_ref().map_or(0.0, |f| f.value.0),
        active_power: m.active_power.value.0,
        cache_size: m.cache_size.as_ref().map_or(0.0, |f| f.value.0),
        cache_efficiency: m.cache_efficiency.as_ref().map_or(0.0, |f| f.value.0),
    }
}

fn check_params(params: &ModelParams, problems: &mut Problems) {
    for (key, v) in [
        ("model.bandwidth-efficiency", params.bandwidth_efficiency),
        ("model.compute-efficiency", params.compute_efficiency),
    ] {
        if !(v > 0.0 && v <= 1.0) {
            problem(problems, key, format!("must be in (0, 100%], got {}", Fraction(v)));
        }
    }
    for (key, v) in [
        ("model.layer-cost", params.layer_cost),
        ("model.token-cost", params.token_cost),
        ("model.engine-overhead", params.engine_overhead),
        ("model.embedding-extra", params.embedding_extra),
        ("model.attention-cost", params.attention_cost),
        ("model.kv-cost", params.kv_cost),
        ("model.prefill-attention-cost", params.prefill_attention_cost),
        ("model.weight-extra", params.weight_extra),
        ("model.cache-size", params.cache_size),
        ("model.cache-efficiency", params.cache_efficiency),
        ("model.active-power", params.active_power),
    ] {
        if v < 0.0 {
            problem(problems, key, "must not be negative");
        }
    }
}

/// The `range` of each prior parameter that has one, checked.
fn ranges(m: &ModelToml, problems: &mut Problems) -> [Option<[f64; 2]>; FreeParam::ALL.len()] {
    let mut ranges = [None; FreeParam::ALL.len()];
    for (param, [lo, hi]) in m.ranges() {
        let key = format!("model.{}.range", param.key());
        let efficiency = matches!(param, FreeParam::BandwidthEfficiency | FreeParam::ComputeEfficiency);
        let ordered = lo.is_finite() && hi.is_finite() && lo <= hi && lo >= 0.0;
        if !ordered || (efficiency && (lo <= 0.0 || hi > 1.0)) {
            problem(problems, &key, "must be [low, high] with low <= high, within the parameter's own bounds");
        }
        ranges[FreeParam::ALL.iter().position(|q| *q == param).unwrap_or(0)] = Some([lo, hi]);
    }
    ranges
}

/// Every calibration point that resolves and names a positive figure.
fn points(p: &ProfileToml, problems: &mut Problems) -> Vec<CalPoint> {
    let mut points = Vec::with_capacity(p.calibration.len());
    for (i, pt) in p.calibration.iter().enumerate() {
        let key = format!("calibration[{i}]");
        let shape =
            pt.model.resolve().map_err(|e: SpecError| problem(problems, &format!("{key}.model"), e.to_string()));
        let workload = pt
            .workload
            .unwrap_or_default()
            .resolve_over(&p.reference_workload)
            .map_err(|e| problem(problems, &format!("{key}.workload"), e.to_string()));
        published(pt, &key, problems);
        let (Ok(shape), Ok(workload)) = (shape, workload) else { continue };
        let point = point(i, pt, shape, workload, p);
        let values = [point.decode_tok_s, point.prefill_tok_s, point.peak_memory, point.package, point.energy_j];
        if values.iter().all(Option::is_none) {
            problem(problems, &key, "names no measured figure (decode, prefill, peak-memory, package or energy)");
        } else if values.iter().flatten().any(|v| v.is_nan() || *v <= 0.0) {
            problem(problems, &key, "measured figures must be positive");
        } else {
            points.push(point);
        }
    }
    points
}

/// The engine class and backend of a profile's own figures.
fn own_class(p: &ProfileToml) -> String {
    super::class_label(p.engine.class(), p.engine.backend)
}

/// A published point names its source and date; a point of another chip,
/// or whose source leaves its workload unsaid, is only ever held out; an
/// engine class is one pocketbench knows.
fn published(pt: &PointToml, key: &str, problems: &mut Problems) {
    use super::{ChipRelation, PointProvenance, Unstated};
    match (&pt.provenance, &pt.citation) {
        (Some(PointProvenance::Published), None) => problem(
            problems,
            &format!("{key}.citation"),
            "a published point needs a citation: { where = \"...\", date = \"YYYY-MM-DD\" }",
        ),
        (None, Some(_)) => problem(
            problems,
            &format!("{key}.provenance"),
            "a point with a citation is published: add provenance = \"published\"",
        ),
        _ => {}
    }
    if let Some(c) = &pt.citation {
        if c.place.trim().is_empty() {
            problem(problems, &format!("{key}.citation.where"), "names no source");
        }
        if !is_date(&c.date) {
            problem(
                problems,
                &format!("{key}.citation.date"),
                format!("must be YYYY-MM-DD or YYYY-MM, got `{}`", c.date),
            );
        }
    }
    if let Some(c) = &pt.engine_class {
        if !POINT_CLASSES.contains(&c.as_str()) {
            problem(
                problems,
                &format!("{key}.engine-class"),
                format!("unknown engine class `{c}`: expected {}", POINT_CLASSES.join(", ")),
            );
        }
    }
    if !pt.holdout {
        if pt.ran_on.as_ref().is_some_and(|r| r.relation == ChipRelation::NearestChip) {
            problem(
                problems,
                &format!("{key}.holdout"),
                "a point from the nearest chip, not this device's, can only be held out: add holdout = true",
            );
        }
        if let Some(u) = pt.unstated.iter().find(|u| matches!(u, Unstated::Prompt | Unstated::Gen)) {
            problem(
                problems,
                &format!("{key}.holdout"),
                format!("its source does not state its {} length, so it cannot be fitted: add holdout = true", u.key()),
            );
        }
    }
}

/// `YYYY-MM-DD` or `YYYY-MM`, digits where digits go.
fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        [y, m] => digits(y, 4) && digits(m, 2),
        [y, m, d] => digits(y, 4) && digits(m, 2) && digits(d, 2),
        _ => false,
    }
}

fn point(index: usize, pt: &PointToml, shape: Shape, workload: Workload, p: &ProfileToml) -> CalPoint {
    CalPoint {
        index,
        shape,
        label: point_label(&pt.model, &shape),
        workload,
        decode_tok_s: pt.decode.map(|v| v.0),
        prefill_tok_s: pt.prefill.map(|v| v.0),
        peak_memory: pt.peak_memory.map(|v| v.0),
        package: pt.package.map(|v| v.0),
        energy_j: pt.energy.map(|v| v.0),
        source: pt.source.clone(),
        holdout: pt.holdout,
        machine: pt.machine.clone(),
        cpu: pt.cpu.clone(),
        engine_build: pt.engine_build.clone(),
        threads: pt.threads,
        bandwidth: pt.bandwidth.map(|b| b.0),
        noise: pt.noise.map(|n| n.0),
        imported: pt.imported.clone(),
        citation: pt.citation.clone(),
        class: super::class_label(
            pt.engine_class.as_deref().unwrap_or(p.engine.class()),
            pt.backend.unwrap_or(p.engine.backend),
        ),
        ran_on: pt.ran_on.clone(),
        unstated: pt.unstated.clone(),
    }
}

/// The engine classes a profile can describe (see [`crate::probe::EngineKind::class`]).
pub const ENGINE_CLASSES: &[&str] = &["native", "candle-transformers", "llama.cpp", "mnn"];

/// The engine classes a published point can name: the profile's, and
/// engines pocketbench does not drive.
pub const POINT_CLASSES: &[&str] =
    &["native", "candle-transformers", "llama.cpp", "mnn", "executorch", "litert-lm", "mlc-llm", "mlx"];

/// The device of a checked profile.
pub(super) fn build(profile: ProfileToml, origin: Origin, c: Checked) -> Device {
    let p = &profile;
    let b = &p.budgets;
    let budgets = Budgets {
        decode_tok_s: b.decode.map_or(DEFAULT_DECODE_BUDGET, |r| r.0),
        memory_bytes: b.memory.map_or(DEFAULT_MEMORY_BUDGET, |m| m.0),
        energy_j: match b.energy {
            Some(e) => Some(e.0),
            None => c.battery_j.map(|j| j * b.energy_battery_fraction.map_or(DEFAULT_BATTERY_FRACTION, |f| f.0)),
        },
    };
    let power_anchor = p
        .model
        .fit
        .contains(&FreeParam::ActivePower)
        .then(|| c.points.iter().find(|pt| !pt.holdout && pt.energy_j.is_some()).map(|pt| (pt.shape, pt.workload)))
        .flatten();
    let model = DeviceModel {
        ranges: c.ranges,
        power_anchor,
        bandwidth: p.facts.bandwidth.value.0,
        bandwidth_range: p.facts.bandwidth.range.map(|[lo, hi]| [lo.0, hi.0]),
        compute: p.facts.compute.value.0,
        battery_j: c.battery_j,
        kv_bits: p.engine.kv_bits,
        act_bits: p.engine.act_bits,
        prefill_chunk: p.engine.prefill_chunk,
        attention_threads: p.engine.attention_split.and(p.engine.threads),
        score_row_threads: (p.engine.attention_scratch == Some(AttentionScratch::PerThread))
            .then(|| p.engine.threads.unwrap_or(1)),
        params: c.params,
    };
    let own = own_class(p);
    let fitted: Vec<PointToml> = p
        .calibration
        .iter()
        .filter(|pt| {
            let class = super::class_label(
                pt.engine_class.as_deref().unwrap_or(p.engine.class()),
                pt.backend.unwrap_or(p.engine.backend),
            );
            class == own
        })
        .map(fit_inputs)
        .collect();
    let digest = digest(&fitted, &p.model.fit, &model);
    let state = match (&p.model.fitted_digest, c.points.is_empty()) {
        (_, true) => CalibrationState::Priors,
        (None, false) => CalibrationState::Unfitted,
        (Some(d), false) if *d == digest => CalibrationState::Calibrated {
            points: c.points.iter().filter(|p| !p.holdout).count(),
            held_out: c.points.iter().filter(|p| p.holdout).count(),
        },
        (Some(_), false) => CalibrationState::Stale,
    };
    let warnings = contradictions(c.points.iter().chain(&c.class_points));
    let (reference_workload, points, class_points) = (c.reference_workload, c.points, c.class_points);
    Device {
        profile,
        origin,
        model,
        budgets,
        reference_workload,
        points,
        class_points,
        digest,
        state,
        based_on: None,
        basis: Default::default(),
        warnings,
    }
}

fn point_label(spec: &crate::arch::ShapeSpec, shape: &Shape) -> String {
    let mut overrides = Vec::new();
    let s = serde_json::to_value(spec).unwrap_or_default();
    if let Some(map) = s.as_object() {
        for (k, v) in map {
            if k != "preset" && !v.is_null() {
                overrides.push(format!("{k}={v}"));
            }
        }
    }
    match (&spec.preset, overrides.is_empty()) {
        (Some(p), true) => p.clone(),
        (Some(p), false) => format!("{p} ({})", overrides.join(", ")),
        (None, _) => shape.to_string(),
    }
}

/// Two points of one engine class, configuration and workload whose
/// figure differs by more than this factor contradict each other: no
/// interval of either would hold the other.
pub const CONTRADICTION: f64 = 1.5;

/// `(key, message)` for each figure two points of the same class,
/// configuration and workload give more than [`CONTRADICTION`] apart: the
/// profile carries a warning, never a silent average.
fn contradictions<'a>(points: impl Iterator<Item = &'a CalPoint>) -> Vec<(String, String)> {
    let points: Vec<&CalPoint> = points.collect();
    let mut out = Vec::new();
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if a.class != b.class || a.shape != b.shape || a.workload != b.workload {
                continue;
            }
            let figures = [
                ("decode", a.decode_tok_s, b.decode_tok_s),
                ("prefill", a.prefill_tok_s, b.prefill_tok_s),
                ("peak-memory", a.peak_memory, b.peak_memory),
                ("energy", a.energy_j, b.energy_j),
            ];
            for (key, x, y) in figures {
                let (Some(x), Some(y)) = (x, y) else { continue };
                if x.max(y) / x.min(y) > CONTRADICTION {
                    out.push((
                        format!("calibration[{}].{key}", b.index),
                        format!(
                            "contradicts calibration[{}] ({x} against {y} for {} at the same workload, x{:.2} apart): check both sources; a fit of both lands between them",
                            a.index,
                            a.label,
                            x.max(y) / x.min(y)
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// A point as the fit reads it: where it is printed, and what its source
/// leaves unsaid, is no input (so citing a point keeps its profile's fit).
fn fit_inputs(pt: &PointToml) -> PointToml {
    PointToml {
        provenance: None,
        citation: None,
        engine_class: None,
        backend: None,
        ran_on: None,
        unstated: Vec::new(),
        ..pt.clone()
    }
}

/// FNV-1a over every input of the fit: the points, the free-parameter list,
/// the facts and engine settings the predictor reads (bandwidth, compute,
/// KV and activation widths, prefill chunk) and the values of the parameters
/// that are not fitted. A fit is stale when any of them changed since (for
/// instance `host-info` rewriting the bandwidth fact).
pub(super) fn digest(points: &[PointToml], fit: &[FreeParam], m: &DeviceModel) -> String {
    // The cache parameters and the two attention costs came later: left
    // out while unset, so the digests of profiles written before them
    // still hold.
    let later = [FreeParam::CacheSize, FreeParam::CacheEfficiency, FreeParam::KvCost, FreeParam::PrefillAttentionCost];
    let fixed: Vec<(&str, f64)> = FreeParam::ALL
        .iter()
        .filter(|p| !fit.contains(p))
        .filter(|p| !(later.contains(p) && m.params.get(**p) == 0.0))
        .map(|p| (p.key(), m.params.get(*p)))
        .chain(m.attention_threads.map(|t| ("attention-threads", t as f64)))
        .chain(m.score_row_threads.map(|t| ("score-row-threads", t as f64)))
        .collect();
    let facts = (m.bandwidth, m.compute, m.kv_bits, m.act_bits, m.prefill_chunk);
    let text = serde_json::to_string(&(points, fit, facts, fixed)).unwrap_or_default();
    format!("{:016x}", crate::fnv1a(text.as_bytes()))
}
