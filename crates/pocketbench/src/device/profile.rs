//! The device profile file format (`devices/*.toml`), as written by people.
//! [`super::Device`] is the validated form.

use serde::{Deserialize, Serialize};

use crate::arch::ShapeSpec;
use crate::units::{
    Bandwidth, ByteSize, BytesPerParam, Charge, Compute, Duration, Energy, Fraction, Frequency, Power, Quantity,
    TokRate, Voltage,
};
use crate::workload::WorkloadSpec;

/// A whole profile file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProfileToml {
    /// Identity.
    pub device: Meta,
    /// Hardware facts, each with a source.
    pub facts: Facts,
    /// Budget overrides (defaults: 200 tok/s, 300 MB, battery / 10000).
    #[serde(default)]
    pub budgets: BudgetsToml,
    /// How a runner reaches the device.
    pub transport: Transport,
    /// The inference engine the profile describes.
    pub engine: Engine,
    /// The workload the device's published figures were measured at.
    #[serde(default)]
    pub reference_workload: WorkloadSpec,
    /// Predictor parameters: priors, or values fitted by `calibrate`.
    pub model: ModelToml,
    /// Calibration points: published or measured figures.
    #[serde(default)]
    pub calibration: Vec<PointToml>,
    /// Cooling between repetitions where the device reads its temperature
    /// (`gate --measure`); absent: 37 C, 180 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal: Option<Thermal>,
}

/// How cool a device must be before a repetition counts.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Thermal {
    /// Start a repetition only at or below this, degrees C.
    #[serde(default = "Thermal::default_cool_to")]
    pub cool_to_c: f64,
    /// Wait at most this long, seconds, before not counting the repetition.
    #[serde(default = "Thermal::default_timeout")]
    pub cool_timeout_s: u64,
}

impl Thermal {
    fn default_cool_to() -> f64 {
        37.0
    }
    fn default_timeout() -> u64 {
        180
    }
}

impl Default for Thermal {
    fn default() -> Self {
        Thermal { cool_to_c: Thermal::default_cool_to(), cool_timeout_s: Thermal::default_timeout() }
    }
}

/// Device identity.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Meta {
    /// Short id used on the command line (`iphone-18-pro`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Free text shown in `devices`.
    #[serde(default)]
    pub notes: Option<String>,
}

/// A value with where it comes from.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Fact<T> {
    /// The value, with its unit.
    pub value: T,
    /// For a predictor parameter: the plausible range, low and high, in the
    /// value's unit (a prior no measurement fixes). Predictions carry the
    /// time to first token and the energy this range allows beside the point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[T; 2]>,
    /// Source; "E:" marks an estimate, "R:" a rumour, "measured:" a measurement.
    pub source: String,
}

/// Hardware facts.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Facts {
    /// Peak memory bandwidth.
    pub bandwidth: Fact<Bandwidth>,
    /// Peak arithmetic rate of the compute the engine uses.
    pub compute: Fact<Compute>,
    /// Installed memory.
    #[serde(default)]
    pub memory: Option<Fact<ByteSize>>,
    /// Battery, absent on mains-powered hosts.
    #[serde(default)]
    pub battery: Option<Battery>,
    /// The CPU's clusters, where a CPU engine's thread count and placement
    /// are predicted ([`crate::cores`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuFacts>,
}

/// A CPU of several core kinds (big.LITTLE): each cluster's cores, clock
/// and the read bandwidth one of its cores pulls on its own.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CpuFacts {
    /// Clusters, in any order.
    pub clusters: Vec<ClusterToml>,
    /// Source; "E:" marks an estimate.
    pub source: String,
}

/// One cluster of cores alike.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClusterToml {
    /// "prime", "performance", "efficiency".
    pub name: String,
    /// Cores in it.
    pub cores: u32,
    /// Their highest clock.
    pub clock: Frequency,
    /// The read bandwidth one of its cores pulls on its own.
    pub core_bandwidth: Bandwidth,
}

/// A battery: either its energy, or capacity and nominal voltage.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Battery {
    /// Capacity in mAh.
    #[serde(default)]
    pub capacity: Option<Charge>,
    /// Nominal voltage.
    #[serde(default)]
    pub voltage: Option<Voltage>,
    /// Energy (Wh), when published directly.
    #[serde(default)]
    pub energy: Option<Energy>,
    /// Source.
    pub source: String,
}

/// Budget overrides.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BudgetsToml {
    /// Minimum decode speed (default 200 tok/s).
    #[serde(default)]
    pub decode: Option<TokRate>,
    /// Maximum peak memory increase (default 300 MB).
    #[serde(default)]
    pub memory: Option<ByteSize>,
    /// Maximum energy per run, absolute.
    #[serde(default)]
    pub energy: Option<Energy>,
    /// Maximum energy per run as a share of the battery (default 1/10000).
    #[serde(default)]
    pub energy_battery_fraction: Option<Fraction>,
}

/// The pocketbench app's bundle id (the runner's contract with the app).
pub use pocketbench_runner_ios::contract::DEFAULT_BUNDLE_ID;

fn default_bundle_id() -> String {
    DEFAULT_BUNDLE_ID.into()
}

/// How a runner reaches the device.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", rename_all_fields = "kebab-case", deny_unknown_fields)]
pub enum Transport {
    /// This machine.
    Local,
    /// Android over adb.
    Adb {
        /// `adb -s` serial or `host:port`; empty means the only device.
        #[serde(default)]
        serial: String,
        /// The probe executable pushed to the phone (a static AArch64 Linux
        /// build); `$POCKETBENCH_ANDROID_PROBE` wins over it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        probe: Option<std::path::PathBuf>,
        /// `taskset` CPU mask (hex) the probe runs pinned to, for instance
        /// the prime cores; absent: not pinned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu_mask: Option<String>,
        /// With an empty serial: measure whichever single phone is attached
        /// (`android-any`). A named phone's profile needs its serial instead,
        /// so it never measures another phone under its name.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        any: bool,
    },
    /// iOS over `xcrun devicectl`: the pocketbench app (the probe through
    /// its C ABI) launched with a spec copied into its data container.
    Ios {
        /// The device's CoreDevice identifier, UDID or name; empty with
        /// `any`: the only reachable iPhone or iPad.
        #[serde(default)]
        udid: String,
        /// The app's bundle id.
        #[serde(default = "default_bundle_id")]
        bundle_id: String,
        /// An `.app` to install before the first job (absent: the app is
        /// already installed); `$POCKETBENCH_IOS_APP` wins over it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        app: Option<std::path::PathBuf>,
        /// With an empty `udid`: measure whichever single device is
        /// reachable (`ios-any`). A named device's profile needs its udid.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        any: bool,
        /// How a run's energy is read from the Mac (no app can read it);
        /// `$POCKETBENCH_IOS_ENERGY` wins over it.
        #[serde(default, skip_serializing_if = "IosEnergy::is_none")]
        energy: IosEnergy,
    },
}

/// How the iOS runner reads a run's energy: an app has no energy counter,
/// so it is read on the Mac around the launch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IosEnergy {
    /// Not read: the record shows the prediction, labelled "not measured".
    #[default]
    None,
    /// Instruments' Power Profiler (`xcrun xctrace record`), integrated
    /// over the launch net of the idle power before it; a device charging
    /// over its cable reads no power.
    Xctrace,
    /// The battery gauge before and after the launch (`pymobiledevice3
    /// diagnostics battery single`), over the launch's runs: whole mAh, so
    /// it needs many repetitions, and the device must not be charging.
    Battery,
}

impl IosEnergy {
    /// Not read.
    pub fn is_none(&self) -> bool {
        *self == IosEnergy::None
    }
}

impl std::str::FromStr for IosEnergy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(IosEnergy::None),
            "xctrace" => Ok(IosEnergy::Xctrace),
            "battery" => Ok(IosEnergy::Battery),
            other => Err(format!("unknown iOS energy method `{other}` (none, xctrace or battery)")),
        }
    }
}

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// CPU threads.
    Cpu,
    /// GPU (Metal, OpenCL, Vulkan).
    Gpu,
    /// A neural processor (Hexagon HTP through QNN, Apple's Neural Engine):
    /// published points only, no runner drives one.
    Npu,
}

impl Backend {
    /// Its name as profiles write it.
    pub fn key(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
            Backend::Npu => "npu",
        }
    }
}

/// The engine whose behaviour the profile describes.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Engine {
    /// Label shown in results ("MNN Metal").
    pub name: String,
    /// CPU or GPU.
    pub backend: Backend,
    /// Threads, for CPU engines.
    #[serde(default)]
    pub threads: Option<u32>,
    /// KV-cache element width in bits (default 16).
    #[serde(default = "sixteen")]
    pub kv_bits: u32,
    /// Activation element width in bits (default 16: W4A16).
    #[serde(default = "sixteen")]
    pub act_bits: u32,
    /// Prefill chunk in tokens (default: the whole prompt at once).
    #[serde(default)]
    pub prefill_chunk: Option<u32>,
    /// The engine pocketbench's probe measures this profile through, on a
    /// device it can reach (default `candle`).
    #[serde(default)]
    pub probe: crate::probe::EngineKind,
    /// The engine class the profile's figures describe (`native`,
    /// `llama.cpp`, `mnn`, `candle-transformers`); default: the probe's
    /// class. A published MNN profile measured through the native probe
    /// names `mnn` here. `calibrate --import` takes rows of this class only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// How the engine splits decode attention over its threads (default: not
    /// modelled). `kv-heads`: one task per KV head, so with fewer KV heads
    /// than threads, or a count that does not divide evenly, the critical
    /// path is `ceil(kv / threads)` heads (the native engine's schedule).
    #[serde(default)]
    pub attention_split: Option<AttentionSplit>,
    /// What the engine holds of the prefill's attention scores (default
    /// `chunk`). `chunk`: the whole score matrix of a prompt chunk, every
    /// query head x chunk token x context position, at the activation width
    /// (llama.cpp's compute graph, candle-transformers). `per-thread`: each
    /// thread one KV head's query group of f32 score rows over the context,
    /// reused for every row (the native engine).
    #[serde(default)]
    pub attention_scratch: Option<AttentionScratch>,
}

impl Engine {
    /// The engine class its figures describe: [`Engine::class`], else the
    /// probe's.
    pub fn class(&self) -> &str {
        self.class.as_deref().unwrap_or(self.probe.class())
    }
}

/// See [`Engine::attention_scratch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttentionScratch {
    /// The chunk's whole score matrix.
    Chunk,
    /// One query group's f32 score rows per thread.
    PerThread,
}

/// See [`Engine::attention_split`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttentionSplit {
    /// One task per KV head (its whole query group).
    KvHeads,
}

fn sixteen() -> u32 {
    16
}

/// Predictor parameters as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ModelToml {
    /// Achieved share of peak bandwidth in decode.
    pub bandwidth_efficiency: Fact<Fraction>,
    /// Fixed cost per layer per step (kernel dispatch, synchronisation).
    pub layer_cost: Fact<Duration>,
    /// Fixed cost per step (sampling, graph launch).
    pub token_cost: Fact<Duration>,
    /// Achieved share of peak compute in prefill.
    pub compute_efficiency: Fact<Fraction>,
    /// Memory the engine adds beyond weights, KV cache and activations.
    pub engine_overhead: Fact<ByteSize>,
    /// Average device power while running inference.
    pub active_power: Fact<Power>,
    /// Bytes the engine holds per embedding parameter beyond the quantized
    /// table (default 0; candle keeps an f32 copy).
    #[serde(default)]
    pub embedding_extra: Option<Fact<BytesPerParam>>,
    /// Extra resident bytes per byte of layer weights (default 0; llama.cpp's
    /// CPU repack keeps a second, interleaved copy of the matrices beside the
    /// mapped file).
    #[serde(default)]
    pub weight_extra: Option<Fact<Fraction>>,
    /// Time per decode attention score of 64 dimensions, layer x query head x
    /// cached position x head_dim/64 (default: not modelled, its cost hidden
    /// behind memory traffic).
    #[serde(default)]
    pub attention_cost: Option<Fact<Duration>>,
    /// Time per byte of KV cache that decode attention reads, on top of
    /// that byte's transfer at the bandwidth (default: not modelled). A CPU
    /// engine converts every f16 key and value of the context and takes its
    /// dot products with the group of query heads sharing it, work that the
    /// memory traffic does not hide: on the Zen 4 VM at one thread
    /// Qwen3-0.6B's decode grew by 13.9 ms a token from tg128 to 1024 +
    /// 128, for 117 MB more KV (8.5 GB/s, a third of the weights' rate),
    /// and the kernels alone read its whole 125 MB at 10-12 GB/s (the
    /// `attention-*-streamed` bench). Per byte rather than per
    /// score: the conversion is done once for the whole group.
    #[serde(default)]
    pub kv_cost: Option<Fact<Duration>>,
    /// Time per prefill attention FLOP on top of its share of the compute
    /// rate (default: not modelled, attention FLOPs run at the matmuls'
    /// rate). A CPU engine's prefill attention (f16 keys and values, a
    /// softmax per row) runs far below its int8 matmuls: on the Zen 4 VM
    /// fits without it predicted narrow shapes' 1024-token prefill 25-76%
    /// too fast, where attention is a quarter of the FLOPs, and wide ones
    /// within 10%.
    #[serde(default)]
    pub prefill_attention_cost: Option<Fact<Duration>>,
    /// Decode working sets (weights and KV read per token) up to this size
    /// are served from the CPU's caches at [`ModelToml::cache_efficiency`],
    /// and a share falling linearly to none of those up to twice it
    /// (default 0: no cache term; a phone's caches are far smaller than any
    /// model). `calibrate --measure` fits it on a host.
    #[serde(default)]
    pub cache_size: Option<Fact<ByteSize>>,
    /// Achieved share of the bandwidth fact for a working set within
    /// [`ModelToml::cache_size`] (may exceed 100%: the caches are faster
    /// than memory).
    #[serde(default)]
    pub cache_efficiency: Option<Fact<Fraction>>,
    /// Parameters `calibrate` fits; the others stay at their priors.
    #[serde(default)]
    pub fit: Vec<FreeParam>,
    /// Digest of the calibration points the stored fit was made from.
    #[serde(default)]
    pub fitted_digest: Option<String>,
    /// How the calibration that wrote the fit judged this machine's noise
    /// (`calibrate --measure`): a `noisy` profile's predictions say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::calibrate::Noise>,
}

impl ModelToml {
    /// The parameters given a `range`, each with its low and high end in
    /// base units.
    pub fn ranges(&self) -> Vec<(FreeParam, [f64; 2])> {
        fn r<T: Quantity>(p: FreeParam, f: Option<&Fact<T>>) -> Option<(FreeParam, [f64; 2])> {
            f?.range.map(|[a, b]| (p, [a.base(), b.base()]))
        }
        [
            r(FreeParam::BandwidthEfficiency, Some(&self.bandwidth_efficiency)),
            r(FreeParam::LayerCost, Some(&self.layer_cost)),
            r(FreeParam::TokenCost, Some(&self.token_cost)),
            r(FreeParam::ComputeEfficiency, Some(&self.compute_efficiency)),
            r(FreeParam::EngineOverhead, Some(&self.engine_overhead)),
            r(FreeParam::ActivePower, Some(&self.active_power)),
            r(FreeParam::EmbeddingExtra, self.embedding_extra.as_ref()),
            r(FreeParam::AttentionCost, self.attention_cost.as_ref()),
            r(FreeParam::KvCost, self.kv_cost.as_ref()),
            r(FreeParam::PrefillAttentionCost, self.prefill_attention_cost.as_ref()),
            r(FreeParam::WeightExtra, self.weight_extra.as_ref()),
            r(FreeParam::CacheSize, self.cache_size.as_ref()),
            r(FreeParam::CacheEfficiency, self.cache_efficiency.as_ref()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A predictor parameter that calibration may fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FreeParam {
    /// See [`ModelToml::bandwidth_efficiency`].
    BandwidthEfficiency,
    /// See [`ModelToml::layer_cost`].
    LayerCost,
    /// See [`ModelToml::token_cost`].
    TokenCost,
    /// See [`ModelToml::compute_efficiency`].
    ComputeEfficiency,
    /// See [`ModelToml::engine_overhead`].
    EngineOverhead,
    /// See [`ModelToml::active_power`].
    ActivePower,
    /// See [`ModelToml::embedding_extra`].
    EmbeddingExtra,
    /// See [`ModelToml::attention_cost`].
    AttentionCost,
    /// See [`ModelToml::kv_cost`].
    KvCost,
    /// See [`ModelToml::prefill_attention_cost`].
    PrefillAttentionCost,
    /// See [`ModelToml::weight_extra`].
    WeightExtra,
    /// See [`ModelToml::cache_size`].
    CacheSize,
    /// See [`ModelToml::cache_efficiency`].
    CacheEfficiency,
}

impl FreeParam {
    /// Every parameter.
    pub const ALL: [FreeParam; 13] = [
        FreeParam::BandwidthEfficiency,
        FreeParam::LayerCost,
        FreeParam::TokenCost,
        FreeParam::ComputeEfficiency,
        FreeParam::EngineOverhead,
        FreeParam::ActivePower,
        FreeParam::EmbeddingExtra,
        FreeParam::AttentionCost,
        FreeParam::WeightExtra,
        FreeParam::CacheSize,
        FreeParam::CacheEfficiency,
        FreeParam::KvCost,
        FreeParam::PrefillAttentionCost,
    ];

    /// The TOML key.
    pub fn key(self) -> &'static str {
        match self {
            FreeParam::BandwidthEfficiency => "bandwidth-efficiency",
            FreeParam::LayerCost => "layer-cost",
            FreeParam::TokenCost => "token-cost",
            FreeParam::ComputeEfficiency => "compute-efficiency",
            FreeParam::EngineOverhead => "engine-overhead",
            FreeParam::ActivePower => "active-power",
            FreeParam::EmbeddingExtra => "embedding-extra",
            FreeParam::AttentionCost => "attention-cost",
            FreeParam::KvCost => "kv-cost",
            FreeParam::PrefillAttentionCost => "prefill-attention-cost",
            FreeParam::WeightExtra => "weight-extra",
            FreeParam::CacheSize => "cache-size",
            FreeParam::CacheEfficiency => "cache-efficiency",
        }
    }
}

/// One calibration point: a model at a workload, with the figures measured for it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PointToml {
    /// The configuration (a preset, optionally with overrides).
    pub model: ShapeSpec,
    /// The workload it was measured at (default: the reference workload).
    #[serde(default)]
    pub workload: Option<WorkloadSpec>,
    /// Measured decode speed.
    #[serde(default)]
    pub decode: Option<TokRate>,
    /// Measured prefill speed.
    #[serde(default)]
    pub prefill: Option<TokRate>,
    /// Measured peak memory increase.
    #[serde(default)]
    pub peak_memory: Option<ByteSize>,
    /// Measured deployment package size.
    #[serde(default)]
    pub package: Option<ByteSize>,
    /// Measured energy per run.
    #[serde(default)]
    pub energy: Option<Energy>,
    /// Where the figures come from.
    pub source: String,
    /// Held out: reported against the fit, never fitted to.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub holdout: bool,
    /// The fingerprint of the machine a host point was measured on
    /// (`pocketbench host-info` prints this machine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// That machine in words, for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The engine build that measured it (for the native engine, the digest
    /// of its source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_build: Option<String>,
    /// Threads it was measured with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The machine's bandwidth at the moment of its repetitions (the
    /// median of the weights' own read passes around them): decode is
    /// fitted and checked against it, not the profile's fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
    /// How far two independent halves of its measurement lay apart
    /// (larger / smaller - 1 of its rounds' medians): the noise it saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Fraction>,
    /// Imported from another tool's output (`calibrate --import`): which
    /// file, which row, and the engine class the row implies. Absent for a
    /// point pocketbench measured or a published figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportedFrom>,
    /// `published`: quoted from a public source, which `citation` names.
    /// Absent for a point pocketbench measured or imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<PointProvenance>,
    /// Where a published point's figures are printed, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation: Option<Citation>,
    /// The engine class that produced the figures (default: the profile's,
    /// [`Engine::class`]). A point of another class, or on another
    /// `backend`, calibrates that class on this device and leaves the
    /// profile's own model alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_class: Option<String>,
    /// The backend it ran on (default: the profile's `engine.backend`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// The phone it ran on, where that is not this device: this device's
    /// chip in another product, or the nearest chip to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_on: Option<RanOn>,
    /// What the source leaves unsaid (`prompt`, `gen`, `threads`, `quant`):
    /// where the workload is among them the point can only be held out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unstated: Vec<Unstated>,
}

/// See [`PointToml::provenance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointProvenance {
    /// Quoted from a public source.
    Published,
}

/// Where a published figure is printed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Citation {
    /// The document: repository and issue, PR or file, or a page's title.
    #[serde(rename = "where")]
    pub place: String,
    /// When it was written or committed: `YYYY-MM-DD` or `YYYY-MM`.
    pub date: String,
    /// Its address, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The source's own words for the figures, as it prints them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
}

/// See [`PointToml::ran_on`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RanOn {
    /// The product ("Honor Magic7").
    pub device: String,
    /// Its chip ("Snapdragon 8 Elite (SM8750)").
    pub chip: String,
    /// `same-chip`: this device's chip in another product (fitted like this
    /// device's own points); `nearest-chip`: another chip, only ever held
    /// out.
    pub relation: ChipRelation,
}

/// See [`RanOn::relation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChipRelation {
    /// The same chip in another product.
    SameChip,
    /// The nearest chip, not this one.
    NearestChip,
}

/// See [`PointToml::unstated`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unstated {
    /// The prompt length.
    Prompt,
    /// The generated length.
    Gen,
    /// The thread count.
    Threads,
    /// The quantization.
    Quant,
}

impl Unstated {
    /// Its name as profiles write it.
    pub fn key(self) -> &'static str {
        match self {
            Unstated::Prompt => "prompt",
            Unstated::Gen => "gen",
            Unstated::Threads => "threads",
            Unstated::Quant => "quant",
        }
    }
}

/// Where an imported calibration point came from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ImportedFrom {
    /// The tool and its output format (`llama-bench -o json`).
    pub format: String,
    /// The file, as it was given.
    pub file: String,
    /// The row: the file's n-th test, from 1.
    pub row: usize,
    /// The line the row starts on, where the format has lines to count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The engine class the row implies (`llama.cpp`, `mnn`).
    pub engine: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Wrapper {
        transport: Transport,
    }

    fn transport(text: &str) -> Result<Transport, toml::de::Error> {
        toml::from_str::<Wrapper>(text).map(|w| w.transport)
    }

    #[test]
    fn transport_keys_are_kebab_case_as_the_book_writes_them() {
        let adb = transport("[transport]\nkind = \"adb\"\nserial = \"R5CT\"\ncpu-mask = \"f0\"\n").unwrap();
        assert!(matches!(adb, Transport::Adb { cpu_mask: Some(ref m), .. } if m == "f0"), "{adb:?}");
        let ios = transport("[transport]\nkind = \"ios\"\nudid = \"\"\nany = true\n").unwrap();
        assert_eq!(
            ios,
            Transport::Ios {
                udid: String::new(),
                bundle_id: DEFAULT_BUNDLE_ID.into(),
                app: None,
                any: true,
                energy: IosEnergy::None
            }
        );
        let named = transport("[transport]\nkind = \"ios\"\nudid = \"Lab iPhone\"\nbundle-id = \"org.lab.probe\"\n");
        assert!(matches!(named, Ok(Transport::Ios { ref bundle_id, .. }) if bundle_id == "org.lab.probe"));
        let e = transport("[transport]\nkind = \"ios\"\nbundle_id = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `bundle_id`"), "{e}");
    }
}
