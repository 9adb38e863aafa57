//! Where a number comes from: measured by which meter, predicted by which
//! model, computed from the shape, or a note on the conditions of a
//! measurement. A record keeps one [`Method`] per metric (its `methods`).
//!
//! A method serializes as the one line of text it always has (the JSON,
//! the store and the reports show that text, and CI scripts read it):
//! `measured: …`, `predicted by MODEL: …`, `not measured (WHY); the value
//! is predicted by MODEL`, `arithmetic: …`, `published: …`. Reading a text
//! back gives the same method, so a record survives a round trip through
//! every file format unchanged; a text in none of these forms (a note such
//! as a repetition's temperature) is a [`Method::Note`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a record's metrics were obtained, as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// From the calibrated physical model.
    Predicted,
    /// Run on the device.
    Measured,
}

pub use pocketbench_types::meter::{Meter, Meters};

/// How one metric of a record was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// Measured on the device.
    Measured {
        /// What read it.
        meter: Meter,
        /// How, in words, beginning with the meter ("timer, median of 5
        /// repetitions after warm-up (2 threads)").
        detail: String,
    },
    /// Predicted by a model (the record's `calibration` names its
    /// parameters).
    Predicted {
        /// The model (`roofline-v1`).
        model: String,
        /// Its formula in words.
        detail: String,
    },
    /// Not measured where the rest was: the value shown is a prediction.
    NotMeasured {
        /// Why it could not be measured.
        why: String,
        /// The model that predicted the value.
        model: String,
    },
    /// Computed from the configuration alone.
    Arithmetic {
        /// How.
        detail: String,
    },
    /// Taken from a published source.
    Published {
        /// Where, and when.
        source: String,
    },
    /// A note on the conditions of a measurement, not a metric's source.
    Note(String),
}

impl Method {
    /// Measured by the meter the detail begins with.
    pub fn measured(detail: impl Into<String>) -> Method {
        let detail = detail.into();
        Method::Measured { meter: Meter::of(&detail), detail }
    }

    /// Measured by `meter` (named by what read it, not guessed from words).
    pub fn measured_by(meter: Meter, detail: impl Into<String>) -> Method {
        Method::Measured { meter, detail: detail.into() }
    }

    /// Predicted by `model`.
    pub fn predicted(model: &str, detail: impl Into<String>) -> Method {
        Method::Predicted { model: model.into(), detail: detail.into() }
    }

    /// Whether the value was measured.
    pub fn is_measured(&self) -> bool {
        matches!(self, Method::Measured { .. })
    }

    /// The meter of a measured value.
    pub fn meter(&self) -> Option<Meter> {
        match self {
            Method::Measured { meter, .. } => Some(*meter),
            _ => None,
        }
    }

    /// Read a method's text back (the inverse of its `Display`).
    pub fn parse(text: &str) -> Method {
        if let Some(d) = text.strip_prefix("measured: ") {
            return Method::measured(d);
        }
        if let Some(rest) = text.strip_prefix("predicted by ") {
            if let Some((model, detail)) = rest.split_once(": ") {
                return Method::predicted(model, detail);
            }
        }
        if let Some(rest) = text.strip_prefix("not measured (") {
            if let Some((why, model)) = rest.rsplit_once("); the value is predicted by ") {
                return Method::NotMeasured { why: why.into(), model: model.into() };
            }
        }
        if let Some(d) = text.strip_prefix("arithmetic: ") {
            return Method::Arithmetic { detail: d.into() };
        }
        if let Some(s) = text.strip_prefix("published: ") {
            return Method::Published { source: s.into() };
        }
        Method::Note(text.into())
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Measured { detail, .. } => write!(f, "measured: {detail}"),
            Method::Predicted { model, detail } => write!(f, "predicted by {model}: {detail}"),
            Method::NotMeasured { why, model } => write!(f, "not measured ({why}); the value is predicted by {model}"),
            Method::Arithmetic { detail } => write!(f, "arithmetic: {detail}"),
            Method::Published { source } => write!(f, "published: {source}"),
            Method::Note(text) => f.write_str(text),
        }
    }
}

/// Which of a record's figures a [`Method`] describes: the key of a
/// record's `methods`. It serializes as the figure's JSON field name
/// (`decode_tok_s`, ...), and orders by that name, so a record's methods
/// serialize exactly as the string-keyed map they were. A key this build
/// does not know (a newer store's) is kept as [`MethodKey::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MethodKey {
    /// `avg_power_w`.
    AvgPowerW,
    /// `decode_tok_s`.
    DecodeTokS,
    /// `energy_gross_j_per_run`.
    EnergyGrossJPerRun,
    /// `energy_j_per_run`.
    EnergyJPerRun,
    /// `itl`: the inter-token latency percentiles.
    Itl,
    /// `package_mb`.
    PackageMb,
    /// `peak_mem_increase_mb`.
    PeakMemIncreaseMb,
    /// `prefill_tok_s`.
    PrefillTokS,
    /// `source`: where an imported record came from (a note).
    Source,
    /// `thermal`: the device's temperature around the measurement (a note).
    Thermal,
    /// `ttft_ms`.
    TtftMs,
    /// A key this build does not know.
    Other(String),
}

impl MethodKey {
    /// Every known key, in the order their names sort.
    pub const KNOWN: [MethodKey; 11] = [
        MethodKey::AvgPowerW,
        MethodKey::DecodeTokS,
        MethodKey::EnergyGrossJPerRun,
        MethodKey::EnergyJPerRun,
        MethodKey::Itl,
        MethodKey::PackageMb,
        MethodKey::PeakMemIncreaseMb,
        MethodKey::PrefillTokS,
        MethodKey::Source,
        MethodKey::Thermal,
        MethodKey::TtftMs,
    ];

    /// Its name: the record's JSON field it describes.
    pub fn name(&self) -> &str {
        match self {
            MethodKey::AvgPowerW => "avg_power_w",
            MethodKey::DecodeTokS => "decode_tok_s",
            MethodKey::EnergyGrossJPerRun => "energy_gross_j_per_run",
            MethodKey::EnergyJPerRun => "energy_j_per_run",
            MethodKey::Itl => "itl",
            MethodKey::PackageMb => "package_mb",
            MethodKey::PeakMemIncreaseMb => "peak_mem_increase_mb",
            MethodKey::PrefillTokS => "prefill_tok_s",
            MethodKey::Source => "source",
            MethodKey::Thermal => "thermal",
            MethodKey::TtftMs => "ttft_ms",
            MethodKey::Other(name) => name,
        }
    }

    /// The key named `name`.
    pub fn named(name: &str) -> MethodKey {
        MethodKey::KNOWN.into_iter().find(|k| k.name() == name).unwrap_or_else(|| MethodKey::Other(name.into()))
    }
}

impl fmt::Display for MethodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Ord for MethodKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for MethodKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for MethodKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for MethodKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(MethodKey::named(&text))
    }
}

/// A record's methods: one per figure, keyed by [`MethodKey`].
pub type Methods = std::collections::BTreeMap<MethodKey, Method>;

impl Serialize for Method {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(Method::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_key_is_its_field_name_and_sorts_as_it() {
        let names: Vec<&str> = MethodKey::KNOWN.iter().map(MethodKey::name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "KNOWN is in name order");
        for k in MethodKey::KNOWN {
            assert_eq!(MethodKey::named(k.name()), k);
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{}\"", k.name()));
        }
        let other: MethodKey = serde_json::from_str("\"kernels_v9\"").unwrap();
        assert_eq!(other, MethodKey::Other("kernels_v9".into()));
        // Ordered by name, as the string-keyed map was.
        let m: Methods = [(MethodKey::TtftMs, Method::Note("a".into())), (other, Method::Note("b".into()))].into();
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"kernels_v9":"b","ttft_ms":"a"}"#);
    }

    #[test]
    fn every_form_reads_back_as_the_method_it_was() {
        let all = [
            Method::measured("timer, median of 5 repetitions after warm-up (2 threads)"),
            Method::measured("VmHWM minus VmRSS before load (/proc/self/status), fresh process"),
            Method::measured("size of the GGUF file run"),
            Method::measured("RAPL package energy (/sys/class/powercap/intel-rapl:0); net of idle"),
            Method::predicted("roofline-v1", "roofline of prefill FLOPs and weight bytes"),
            Method::NotMeasured { why: "no meter (RAPL unreadable)".into(), model: "roofline-v1".into() },
            Method::Arithmetic { detail: "quantized weights + tokenizer/graph estimate".into() },
            Method::Published { source: "MNN docs, 2025-03".into() },
            Method::Note("36.0 C before the repetition, cooled to at most 37.0 C".into()),
        ];
        for m in all {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<Method>(&text).unwrap(), m, "{text}");
        }
    }

    #[test]
    fn the_meter_is_the_one_the_text_begins_with() {
        assert_eq!(Method::parse("measured: timer, median of 3").meter(), Some(Meter::Timer));
        assert_eq!(Method::parse("measured: VmHWM minus VmRSS").meter(), Some(Meter::VmHwm));
        assert_eq!(
            Method::parse("measured: phys_footprint (task_info TASK_VM_INFO) minus phys_footprint before the load")
                .meter(),
            Some(Meter::PhysFootprint)
        );
        assert_eq!(Method::parse("predicted by roofline-v1: x").meter(), None);
        assert!(!Method::parse("not measured (no meter); the value is predicted by roofline-v1").is_measured());
        assert!(!Method::parse("measuredish").is_measured(), "a prefix needs its colon");
    }

    #[test]
    fn a_text_serializes_exactly_as_it_was_read() {
        for text in [
            "measured: timer, median of 5 repetitions after warm-up (2 threads)",
            "predicted by roofline-v1: bytes per token / (efficiency x bandwidth) + fixed costs",
            "not measured (no meter); the value is predicted by roofline-v1",
            "arithmetic: quantized weights + tokenizer/graph estimate",
            "anything else at all",
        ] {
            assert_eq!(Method::parse(text).to_string(), text);
        }
    }
}
