//! Device profiles: hardware facts with sources, budgets, transport, engine,
//! calibration points and the predictor parameters fitted to them.
//!
//! Profiles live in `devices/*.toml`; the shipped ones are also compiled into
//! the binary so that `pocketbench` works from any directory.

pub mod add;
pub mod based_on;
mod build;
pub mod home;
mod profile;
mod registry;

pub use based_on::BasedOn;
pub use profile::*;
pub use registry::{Devices, Origin, Writable, BUILT_IN};

use std::path::Path;

use crate::arch::Shape;
use crate::config::ConfigError;
use crate::workload::Workload;

/// Default minimum decode speed (the reference study's budget).
pub const DEFAULT_DECODE_BUDGET: f64 = 200.0;
/// Default maximum peak memory increase, bytes (300 MB, MB = 10^6 B).
pub const DEFAULT_MEMORY_BUDGET: f64 = 300e6;
/// Default energy budget per run as a share of the battery.
pub const DEFAULT_BATTERY_FRACTION: f64 = 1e-4;

/// The predictor's numeric parameters (base SI units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelParams {
    /// Share of peak bandwidth achieved in decode, (0, 1].
    pub bandwidth_efficiency: f64,
    /// Seconds per layer per step.
    pub layer_cost: f64,
    /// Seconds per step.
    pub token_cost: f64,
    /// Share of peak compute achieved in prefill, (0, 1].
    pub compute_efficiency: f64,
    /// Bytes.
    pub engine_overhead: f64,
    /// Bytes held per embedding parameter beyond the quantized table.
    pub embedding_extra: f64,
    /// Seconds per decode attention score (layer x head x position); 0 = not modelled.
    pub attention_cost: f64,
    /// Seconds per byte of KV cache decode attention reads, beyond its
    /// transfer at the bandwidth; 0 = not modelled.
    pub kv_cost: f64,
    /// Seconds per prefill attention FLOP beyond its share of the compute
    /// rate; 0 = not modelled.
    pub prefill_attention_cost: f64,
    /// Extra resident bytes per byte of layer weights.
    pub weight_extra: f64,
    /// Watts.
    pub active_power: f64,
    /// Bytes: decode working sets up to this size come from the caches, and
    /// part of those up to twice it (0: no cache term).
    pub cache_size: f64,
    /// Share of the bandwidth fact achieved from the caches (0: unset).
    pub cache_efficiency: f64,
}

impl ModelParams {
    /// Read a parameter by name.
    pub fn get(&self, p: FreeParam) -> f64 {
        match p {
            FreeParam::BandwidthEfficiency => self.bandwidth_efficiency,
            FreeParam::LayerCost => self.layer_cost,
            FreeParam::TokenCost => self.token_cost,
            FreeParam::ComputeEfficiency => self.compute_efficiency,
            FreeParam::EngineOverhead => self.engine_overhead,
            FreeParam::EmbeddingExtra => self.embedding_extra,
            FreeParam::AttentionCost => self.attention_cost,
            FreeParam::KvCost => self.kv_cost,
            FreeParam::PrefillAttentionCost => self.prefill_attention_cost,
            FreeParam::WeightExtra => self.weight_extra,
            FreeParam::ActivePower => self.active_power,
            FreeParam::CacheSize => self.cache_size,
            FreeParam::CacheEfficiency => self.cache_efficiency,
        }
    }

    /// Set a parameter by name.
    pub fn set(&mut self, p: FreeParam, v: f64) {
        match p {
            FreeParam::BandwidthEfficiency => self.bandwidth_efficiency = v,
            FreeParam::LayerCost => self.layer_cost = v,
            FreeParam::TokenCost => self.token_cost = v,
            FreeParam::ComputeEfficiency => self.compute_efficiency = v,
            FreeParam::EngineOverhead => self.engine_overhead = v,
            FreeParam::EmbeddingExtra => self.embedding_extra = v,
            FreeParam::AttentionCost => self.attention_cost = v,
            FreeParam::KvCost => self.kv_cost = v,
            FreeParam::PrefillAttentionCost => self.prefill_attention_cost = v,
            FreeParam::WeightExtra => self.weight_extra = v,
            FreeParam::ActivePower => self.active_power = v,
            FreeParam::CacheSize => self.cache_size = v,
            FreeParam::CacheEfficiency => self.cache_efficiency = v,
        }
    }

    /// The share of a decode working set of `bytes` per token served from
    /// the caches: all of it up to [`ModelParams::cache_size`], none from
    /// twice that, linear in between (a shared last-level cache with
    /// adaptive replacement keeps part of a set somewhat larger than it);
    /// 0 without a cache term.
    pub fn cache_share(&self, bytes: f64) -> f64 {
        if self.cache_size <= 0.0 || self.cache_efficiency <= 0.0 {
            return 0.0;
        }
        ((2.0 * self.cache_size - bytes) / self.cache_size).clamp(0.0, 1.0)
    }

    /// The bandwidth efficiency for a decode working set of `bytes`: the
    /// time-weighted mix of the memory and cache efficiencies.
    pub fn efficiency_for(&self, bytes: f64) -> f64 {
        let s = self.cache_share(bytes);
        if s == 0.0 {
            return self.bandwidth_efficiency;
        }
        1.0 / (s / self.cache_efficiency + (1.0 - s) / self.bandwidth_efficiency)
    }
}

/// Budgets a configuration is judged against on one device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budgets {
    /// Minimum decode tok/s.
    pub decode_tok_s: f64,
    /// Maximum peak memory increase, bytes.
    pub memory_bytes: f64,
    /// Maximum joules per run; `None` where the device has no battery.
    pub energy_j: Option<f64>,
}

/// Everything the predictor needs of a device, numeric and `Copy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceModel {
    /// Peak bandwidth, B/s.
    pub bandwidth: f64,
    /// Peak compute, op/s.
    pub compute: f64,
    /// Battery energy, J.
    pub battery_j: Option<f64>,
    /// KV element bits.
    pub kv_bits: u32,
    /// Activation element bits.
    pub act_bits: u32,
    /// Prefill chunk.
    pub prefill_chunk: Option<u32>,
    /// Threads decode attention is split over by KV head (see
    /// [`Engine::attention_split`]); `None`: not modelled.
    pub attention_threads: Option<u32>,
    /// Threads that each hold one query group's f32 attention score rows
    /// (see [`Engine::attention_scratch`]); `None`: the chunk's whole score
    /// matrix.
    pub score_row_threads: Option<u32>,
    /// Fitted or prior parameters.
    pub params: ModelParams,
    /// The plausible range of each parameter that has one (`range` in the
    /// profile), low and high, indexed as [`FreeParam::ALL`].
    pub ranges: [Option<[f64; 2]>; FreeParam::ALL.len()],
    /// The point a fitted active power was fitted to (its shape and
    /// workload): across the ranges of the other parameters the power is
    /// taken to keep that point's energy, as a refit would.
    pub power_anchor: Option<(Shape, Workload)>,
    /// The lowest and highest bandwidth the machine showed (the bandwidth
    /// fact's `range`, B/s): predictions carry the decode it allows as their
    /// interval.
    pub bandwidth_range: Option<[f64; 2]>,
}

/// Whether the stored parameters match the calibration points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalibrationState {
    /// Fitted to the current points.
    Calibrated {
        /// Points fitted.
        points: usize,
        /// Points held out of the fit.
        held_out: usize,
    },
    /// Fitted, but the points changed since: run `calibrate`.
    Stale,
    /// No points: every parameter is a documented prior.
    Priors,
    /// Points exist but were never fitted.
    Unfitted,
    /// A local device whose points were measured on another machine.
    OtherMachine {
        /// That machine, in words.
        cpu: String,
    },
    /// A local device whose points were measured through another build of
    /// the engine than this binary's.
    OtherEngine {
        /// The build that measured them.
        build: String,
    },
}

impl CalibrationState {
    /// The one command that brings a device in this state to
    /// "calibrated", if there is one. Only a local device can be measured
    /// by `calibrate --measure`.
    pub fn fix(&self, device: &str, local: bool) -> Option<String> {
        match self {
            CalibrationState::Calibrated { .. } => None,
            // The points are there: fitting them again is enough.
            CalibrationState::Stale | CalibrationState::Unfitted => {
                Some(format!("pocketbench calibrate --device {device}"))
            }
            _ if local => Some(format!("pocketbench calibrate --device {device} --measure")),
            _ => None,
        }
    }
}

impl std::fmt::Display for CalibrationState {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            CalibrationState::Calibrated { points, held_out } => {
                write!(f, "calibrated ({points} point{}", if *points == 1 { "" } else { "s" })?;
                if *held_out > 0 {
                    write!(f, ", {held_out} held out")?;
                }
                f.write_str(")")
            }
            CalibrationState::Stale => f.write_str("stale (points, facts or fixed parameters changed since the fit)"),
            CalibrationState::Priors => f.write_str("priors only (no calibration points)"),
            CalibrationState::Unfitted => f.write_str("not fitted yet"),
            CalibrationState::OtherMachine { cpu } => write!(f, "calibrated on another machine ({cpu})"),
            CalibrationState::OtherEngine { build } => {
                write!(f, "calibrated with another engine build ({build})")
            }
        }
    }
}

/// A calibration point, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct CalPoint {
    /// Index in the file (0-based), for messages.
    pub index: usize,
    /// The configuration.
    pub shape: Shape,
    /// Short description of the configuration (preset name or shape).
    pub label: String,
    /// Its workload.
    pub workload: Workload,
    /// Measured figures, in base units.
    pub decode_tok_s: Option<f64>,
    /// Prefill tok/s.
    pub prefill_tok_s: Option<f64>,
    /// Peak memory increase, bytes.
    pub peak_memory: Option<f64>,
    /// Package bytes.
    pub package: Option<f64>,
    /// Joules per run.
    pub energy_j: Option<f64>,
    /// Source text.
    pub source: String,
    /// Held out of the fit.
    pub holdout: bool,
    /// Fingerprint of the machine it was measured on (host points).
    pub machine: Option<String>,
    /// That machine in words.
    pub cpu: Option<String>,
    /// The engine build that measured it.
    pub engine_build: Option<String>,
    /// Threads it was measured with.
    pub threads: Option<u32>,
    /// The same-moment bandwidth it was measured at, bytes/s.
    pub bandwidth: Option<f64>,
    /// Its split-half noise (a fraction).
    pub noise: Option<f64>,
    /// Where it was imported from (`calibrate --import`).
    pub imported: Option<ImportedFrom>,
    /// Where a published point is printed.
    pub citation: Option<profile::Citation>,
    /// The engine class and backend that produced it, as "mnn on cpu".
    pub class: String,
    /// The product it ran on, where not this device.
    pub ran_on: Option<profile::RanOn>,
    /// What its source leaves unsaid.
    pub unstated: Vec<profile::Unstated>,
}

impl CalPoint {
    /// Whether it was quoted from a public source.
    pub fn published(&self) -> bool {
        self.citation.is_some()
    }
}

/// A validated device profile.
#[derive(Debug, Clone)]
pub struct Device {
    profile: ProfileToml,
    origin: Origin,
    model: DeviceModel,
    budgets: Budgets,
    reference_workload: Workload,
    points: Vec<CalPoint>,
    class_points: Vec<CalPoint>,
    digest: String,
    state: CalibrationState,
    based_on: Option<Box<BasedOn>>,
    /// Its fit's own error, computed when a prediction first needs it.
    basis: crate::interval::BasisCell,
    /// What the profile holds that does not stop it loading: points that
    /// contradict each other (`(key, message)`).
    warnings: Vec<(String, String)>,
}

/// An engine class on a backend, as points and predictions name it.
pub fn class_label(class: &str, backend: Backend) -> String {
    format!("{class} on {}", backend.key())
}

/// Why a profile is invalid (beyond TOML syntax and types): every problem
/// found, one line each, with the line and column its key is written at
/// where the text was at hand.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ProfileError {
    /// File or built-in name.
    pub file: String,
    /// Key path and what is wrong, for each problem.
    pub problems: Vec<(String, String)>,
    /// Where each problem's key is written (line, column); empty, or None
    /// for a key, where that is not known.
    pub positions: Vec<Option<(usize, usize)>>,
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (key, message)) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match self.positions.get(i).copied().flatten() {
                Some((line, column)) => write!(f, "{}:{line}:{column}: {key}: {message}", self.file)?,
                None => write!(f, "{}: {key}: {message}", self.file)?,
            }
        }
        Ok(())
    }
}

impl ProfileError {
    /// The same error with each key's position in the profile's `text`.
    pub fn located(mut self, text: &str) -> ProfileError {
        self.positions = self.problems.iter().map(|(k, _)| crate::config::position_of(text, k)).collect();
        self
    }
}

impl Device {
    /// The profile as written (kept for rendering facts and sources).
    pub fn profile(&self) -> &ProfileToml {
        &self.profile
    }

    /// Where it was loaded from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The numeric model the predictor reads, derived from the profile.
    pub fn model(&self) -> &DeviceModel {
        &self.model
    }

    /// Where the profile's own threads run: `[engine] threads` (else every
    /// core), pinned; `None` without `[facts.cpu]` clusters.
    pub fn reference_placement(&self) -> Option<crate::cores::Placement> {
        let cpu = self.profile.facts.cpu.as_ref()?;
        let all: u32 = cpu.clusters.iter().map(|c| c.cores).sum();
        let threads = self.profile.engine.threads.unwrap_or(all).min(all);
        crate::cores::place(self.id(), cpu, threads, true, self.model.bandwidth).ok()
    }

    /// This device with its engine on `threads` threads (pinned or not):
    /// the bandwidth and compute efficiencies scaled by what that placement
    /// reads and computes against the profile's own ([`crate::cores`]),
    /// each at most 100%; everything else as fitted.
    pub fn at_threads(
        &self,
        threads: u32,
        pinned: bool,
    ) -> Result<(Device, crate::cores::Placement), crate::cores::PlaceError> {
        let none = || crate::cores::PlaceError::NoClusters(self.id().to_string());
        let cpu = self.profile.facts.cpu.as_ref().ok_or_else(none)?;
        let from = self.reference_placement().ok_or_else(none)?;
        let to = crate::cores::place(self.id(), cpu, threads, pinned, self.model.bandwidth)?;
        let mut d = self.clone();
        let (bw, hz) = (to.bandwidth / from.bandwidth, to.core_hz / from.core_hz);
        let p = &mut d.model.params;
        p.bandwidth_efficiency = (p.bandwidth_efficiency * bw).min(1.0);
        p.compute_efficiency = (p.compute_efficiency * hz).min(1.0);
        for (param, ratio) in [(FreeParam::BandwidthEfficiency, bw), (FreeParam::ComputeEfficiency, hz)] {
            let i = FreeParam::ALL.iter().position(|q| *q == param).expect("a free parameter");
            if let Some(r) = d.model.ranges[i].as_mut() {
                *r = [(r[0] * ratio).min(1.0), (r[1] * ratio).min(1.0)];
            }
        }
        d.model.attention_threads = d.model.attention_threads.map(|_| threads);
        d.model.score_row_threads = d.model.score_row_threads.map(|_| threads);
        Ok((d, to))
    }

    /// The budgets, with the profile's defaults filled in.
    pub fn budgets(&self) -> &Budgets {
        &self.budgets
    }

    /// The workload its published figures were measured at.
    pub fn reference_workload(&self) -> Workload {
        self.reference_workload
    }

    /// Its calibration points of its own engine class and backend, as
    /// resolved from the profile: the points its model is fitted to and
    /// checked against.
    pub fn points(&self) -> &[CalPoint] {
        &self.points
    }

    /// Its points of other engine classes or backends, each calibrating its
    /// own class on this device ([`crate::calibrate::classes`]).
    pub fn class_points(&self) -> &[CalPoint] {
        &self.class_points
    }

    /// This device predicting for another engine class (`label`, "llama.cpp
    /// on npu") with `model`: that class's points become its own, the
    /// profile's the others, its engine named for the class
    /// ([`crate::calibrate::classes::for_class`]).
    pub(crate) fn as_class(&self, label: &str, model: DeviceModel) -> Device {
        let mut d = self.with_model(model);
        let (class, backend) = label.split_once(" on ").unwrap_or((label, ""));
        let backend = match backend {
            "gpu" => Backend::Gpu,
            "npu" => Backend::Npu,
            _ => Backend::Cpu,
        };
        let own = std::mem::take(&mut d.points);
        let (mine, others): (Vec<CalPoint>, Vec<CalPoint>) =
            std::mem::take(&mut d.class_points).into_iter().partition(|p| p.class == label);
        d.points = mine;
        d.class_points = others.into_iter().chain(own).collect();
        let e = &mut d.profile.engine;
        e.name = format!("{class} on {} (relative to {})", backend.key(), e.name);
        e.class = Some(class.to_string());
        e.backend = backend;
        d
    }

    /// What its profile holds that does not stop it loading (points that
    /// contradict each other), each at its key's line where the text can
    /// be read.
    pub fn warnings(&self) -> Option<ProfileError> {
        if self.warnings.is_empty() {
            return None;
        }
        let e = ProfileError { file: self.origin.to_string(), problems: self.warnings.clone(), positions: Vec::new() };
        Some(match home::text_of(&self.origin) {
            Ok(text) => e.located(&text),
            Err(_) => e,
        })
    }

    /// This device under another id (a sweep's `ID@CLASS`), named for its
    /// engine.
    pub(crate) fn renamed(mut self, id: &str) -> Device {
        let class = self.class_label();
        let m = &mut self.profile.device;
        m.name = format!("{} ({class})", m.name);
        m.id = id.to_string();
        self
    }

    /// The engine class and backend of its own figures, as "mnn on cpu".
    pub fn class_label(&self) -> String {
        class_label(self.profile.engine.class(), self.profile.engine.backend)
    }

    /// The digest of every input of its fit ([`Device::state`] compares it
    /// with the profile's `fitted-digest`).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Its calibration state.
    pub fn state(&self) -> &CalibrationState {
        &self.state
    }

    /// The same device with point `index` held out of its fit (a
    /// leave-one-out refit), its derived state kept as it was.
    pub fn with_held_out(&self, index: usize) -> Device {
        let mut d = self.clone();
        for p in d.points.iter_mut().filter(|p| p.index == index) {
            p.holdout = true;
        }
        d.basis = Default::default();
        d
    }

    /// The [`crate::interval::Basis`] of this device, computed by `f` the
    /// first time it is asked for.
    pub(crate) fn interval_basis(&self, f: impl FnOnce() -> crate::interval::Basis) -> &crate::interval::Basis {
        self.basis.get_or_init(f)
    }

    /// The same device predicting with `model` instead of its own (a
    /// calibration's trial parameters, or a test's known truth).
    pub fn with_model(&self, model: DeviceModel) -> Device {
        Device { model, basis: Default::default(), ..self.clone() }
    }

    /// This device with its profile, model and points changed by `f`, its
    /// derived state kept as it was: for tests that build a device of known
    /// truth.
    #[cfg(test)]
    pub(crate) fn changed(mut self, f: impl FnOnce(&mut ProfileToml, &mut DeviceModel, &mut Vec<CalPoint>)) -> Device {
        f(&mut self.profile, &mut self.model, &mut self.points);
        self.basis = Default::default();
        self
    }

    /// The profile it is based on, and what it took from it.
    pub fn based_on(&self) -> Option<&BasedOn> {
        self.based_on.as_deref()
    }

    /// `text` read as this device's profile now reads (over the same
    /// parent, for a profile based on another): a profile about to be
    /// written, or changed in memory.
    pub fn reparse(&self, origin: Origin, text: &str) -> Result<Device, crate::Error> {
        based_on::reparse(self, origin, text)
    }

    /// The id used on the command line.
    pub fn id(&self) -> &str {
        &self.profile.device.id
    }

    /// Validate a parsed profile and build the device from it: every
    /// problem reported at once ([`build::validate`]), then the numeric
    /// model, budgets, points and calibration state ([`build::build`]).
    pub fn from_profile(profile: ProfileToml, origin: Origin) -> Result<Self, ProfileError> {
        let checked = build::validate(&profile).map_err(|problems| ProfileError {
            file: origin.to_string(),
            problems,
            positions: Vec::new(),
        })?;
        Ok(build::build(profile, origin, checked))
    }

    /// Whether this is the machine pocketbench runs on.
    pub fn is_local(&self) -> bool {
        self.profile.transport == Transport::Local
    }

    /// One line naming the calibration behind this device's predictions,
    /// and the command that fixes it when it is not a fit of this device.
    pub fn calibration_label(&self) -> String {
        let fix = self.state.fix(self.id(), self.is_local()).map_or(String::new(), |c| format!(": run `{c}`"));
        format!("profile `{}` from {}, {}{}{fix}", self.id(), self.origin, self.state, self.noise_note())
    }

    /// How the calibration that wrote the fit judged the machine's noise,
    /// when it did.
    pub fn noise(&self) -> Option<&crate::calibrate::Noise> {
        self.profile.model.noise.as_ref()
    }

    /// `, NOISY: ...` for a calibrated profile its calibration marked noisy.
    fn noise_note(&self) -> String {
        match (self.noise(), &self.state) {
            (Some(n), CalibrationState::Calibrated { .. }) if n.verdict == crate::calibrate::Verdict::Noisy => {
                format!(", NOISY ({})", n.reasons.join("; "))
            }
            _ => String::new(),
        }
    }

    /// What a sweep says once about a device whose predictions do not rest
    /// on a fit of it as it is now (`None` when they do, or when a remote
    /// device carries documented priors).
    pub fn calibration_warning(&self) -> Option<String> {
        let id = self.id();
        match (&self.state, self.is_local()) {
            (CalibrationState::Calibrated { .. }, _) if !self.noise_note().is_empty() => Some(format!(
                "device `{id}`: its calibration marked this machine noisy{}: its predictions carry wider uncertainty than the fit prints; calibrate again on a quieter machine",
                self.noise_note().trim_start_matches(", NOISY")
            )),
            (CalibrationState::Calibrated { .. }, _) | (CalibrationState::Priors, false) => None,
            (state @ (CalibrationState::OtherMachine { .. } | CalibrationState::OtherEngine { .. }), true) => Some(format!(
                "device `{id}` is {state}: its predictions on this machine are priors, not a calibration of it (measured results are unaffected); calibrate this machine with `pocketbench calibrate --device {id} --measure --quick` (about 3 minutes) or `--measure` (under 10)"
            )),
            (CalibrationState::Priors, true) => Some(format!(
                "device `{id}` has no calibration of this machine: its predictions are documented priors (measured results are unaffected); calibrate it with `pocketbench calibrate --device {id} --measure --quick` (about 3 minutes) or `--measure` (under 10)"
            )),
            (state, _) => Some(format!("device `{id}`: calibration {state}")),
        }
    }

    /// The thread count the fitted points were measured at, when they name
    /// one and agree on it.
    pub fn calibrated_threads(&self) -> Option<u32> {
        let mut t = self.points.iter().filter(|p| !p.holdout).map(|p| p.threads);
        let first = t.next()??;
        t.all(|x| x == Some(first)).then_some(first)
    }

    /// For a local device: whether its points were measured on `here` and
    /// through this binary's engine build; sets [`CalibrationState::OtherMachine`]
    /// or [`CalibrationState::OtherEngine`] when not. A point without a
    /// recorded machine counts as another machine's. Held-out points do not
    /// decide (they are not fitted to).
    pub fn assess_on(&mut self, here: &crate::probe::HostFacts) {
        if !self.is_local() || self.points.is_empty() {
            return;
        }
        let fitted = || self.points.iter().filter(|p| !p.holdout);
        if let Some(p) = fitted().find(|p| p.machine.as_deref() != Some(here.fingerprint.as_str())) {
            let cpu = p.cpu.clone().unwrap_or_else(|| "an unrecorded machine".into());
            self.state = CalibrationState::OtherMachine { cpu };
            return;
        }
        let build = self.profile.engine.probe.build();
        if let Some(p) = fitted().find(|p| p.engine_build.as_deref() != Some(build.as_str())) {
            let build = p.engine_build.clone().unwrap_or_else(|| "an unrecorded build".into());
            self.state = CalibrationState::OtherEngine { build };
        }
    }
}

/// Parse and validate one profile file.
pub fn load_file(path: &Path) -> Result<Device, crate::Error> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::new(path, None, format!("cannot read: {e}")))?;
    parse(Origin::File(path.to_path_buf()), &text)
}

/// Parse and validate profile text. A profile based on another is read by
/// [`Devices`], which has its parent.
pub fn parse(origin: Origin, text: &str) -> Result<Device, crate::Error> {
    if let Some(parent) = based_on::parent_of(text) {
        return Err(based_on::unresolved(Path::new(&origin.to_string()), text, &parent, None, &[]));
    }
    let profile: ProfileToml = crate::config::parse(Path::new(&origin.to_string()), text)
        .map_err(|e: ConfigError| crate::Error::Config(Box::new(e)))?;
    Ok(Device::from_profile(profile, origin).map_err(|e| e.located(text))?)
}
