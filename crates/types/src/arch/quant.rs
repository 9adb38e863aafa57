//! Weight quantization formats and their storage cost.
//!
//! Bits per weight follow ggml's block layouts (`ggml-common.h`): Q4_0 stores
//! 32 weights in 18 bytes (16 bytes of nibbles + one f16 scale) = 4.5 bpw;
//! Q4_1 adds an f16 minimum (20 bytes / 32 = 5.0 bpw); Q8_0 is 34/32 = 8.5;
//! Q4_K is 144/256 = 4.5; Q6_K is 210/256 = 6.5625. The generic form
//! `intB group=G [zero]` stores B bits per weight plus one f16 scale (and, with
//! `zero`, one f16 zero point) per group of G weights.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A weight storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quant {
    /// ggml Q4_0: 4-bit, f16 scale per 32.
    Q4_0,
    /// ggml Q4_1: 4-bit, f16 scale and min per 32.
    Q4_1,
    /// ggml Q8_0: 8-bit, f16 scale per 32.
    Q8_0,
    /// ggml Q4_K super-blocks of 256.
    Q4K,
    /// ggml Q6_K super-blocks of 256.
    Q6K,
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// Generic group quantizer.
    Int {
        /// Bits per stored weight (2..=8).
        bits: u8,
        /// Weights per group sharing a scale.
        group: u32,
        /// Whether each group also stores an f16 zero point.
        zero_point: bool,
    },
}

/// A quantization name did not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown quantization `{0}`: expected one of q4_0, q4_1, q8_0, q4_k, q6_k, f16, f32, or `intB group=G [zero]` (B in 2..=8, G a power of two from 8 to 1024)")]
pub struct QuantError(pub String);

impl Quant {
    /// Storage bits per weight, scales included.
    pub fn bits_per_weight(self) -> f64 {
        match self {
            Quant::Q4_0 => 18.0 * 8.0 / 32.0,
            Quant::Q4_1 => 20.0 * 8.0 / 32.0,
            Quant::Q8_0 => 34.0 * 8.0 / 32.0,
            Quant::Q4K => 144.0 * 8.0 / 256.0,
            Quant::Q6K => 210.0 * 8.0 / 256.0,
            Quant::F16 => 16.0,
            Quant::F32 => 32.0,
            Quant::Int { bits, group, zero_point } => {
                let side = if zero_point { 32.0 } else { 16.0 };
                bits as f64 + side / group as f64
            }
        }
    }

    /// Bytes to store `n` weights (rounded up to whole bytes).
    pub fn bytes_for(self, n: u64) -> u64 {
        (n as f64 * self.bits_per_weight() / 8.0).ceil() as u64
    }
}

impl fmt::Display for Quant {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Quant::Q4_0 => f.write_str("q4_0"),
            Quant::Q4_1 => f.write_str("q4_1"),
            Quant::Q8_0 => f.write_str("q8_0"),
            Quant::Q4K => f.write_str("q4_k"),
            Quant::Q6K => f.write_str("q6_k"),
            Quant::F16 => f.write_str("f16"),
            Quant::F32 => f.write_str("f32"),
            Quant::Int { bits, group, zero_point } => {
                write!(f, "int{bits} group={group}")?;
                if *zero_point {
                    f.write_str(" zero")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for Quant {
    type Err = QuantError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || QuantError(s.to_string());
        let t = s.trim().to_ascii_lowercase();
        Ok(match t.as_str() {
            "q4_0" => Quant::Q4_0,
            "q4_1" => Quant::Q4_1,
            "q8_0" => Quant::Q8_0,
            "q4_k" | "q4_k_m" | "q4_k_s" => Quant::Q4K,
            "q6_k" => Quant::Q6K,
            "f16" | "fp16" => Quant::F16,
            "f32" | "fp32" => Quant::F32,
            _ => {
                let mut words = t.split_whitespace();
                let bits: u8 = words
                    .next()
                    .and_then(|w| w.strip_prefix("int"))
                    .and_then(|b| b.parse().ok())
                    .filter(|b| (2..=8).contains(b))
                    .ok_or_else(err)?;
                let group: u32 = words
                    .next()
                    .and_then(|w| w.strip_prefix("group="))
                    .and_then(|g| g.parse().ok())
                    .filter(|g: &u32| g.is_power_of_two() && (8..=1024).contains(g))
                    .ok_or_else(err)?;
                let zero_point = match words.next() {
                    None => false,
                    Some("zero") => true,
                    Some(_) => return Err(err()),
                };
                if words.next().is_some() {
                    return Err(err());
                }
                Quant::Int { bits, group, zero_point }
            }
        })
    }
}

impl<'de> Deserialize<'de> for Quant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for Quant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ggml_bits_per_weight() {
        assert_eq!(Quant::Q4_0.bits_per_weight(), 4.5);
        assert_eq!(Quant::Q4_1.bits_per_weight(), 5.0);
        assert_eq!(Quant::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(Quant::Q4K.bits_per_weight(), 4.5);
        assert_eq!(Quant::Q6K.bits_per_weight(), 6.5625);
        assert_eq!(Quant::F16.bits_per_weight(), 16.0);
    }

    #[test]
    fn generic_group_form() {
        let q: Quant = "int4 group=32".parse().unwrap();
        assert_eq!(q.bits_per_weight(), 4.5);
        let q: Quant = "int4 group=64 zero".parse().unwrap();
        assert_eq!(q.bits_per_weight(), 4.5);
        assert_eq!(q.to_string(), "int4 group=64 zero");
        assert!("int4 group=48".parse::<Quant>().is_err());
        assert!("int9 group=32".parse::<Quant>().is_err());
        assert!("q5_0".parse::<Quant>().is_err());
    }

    #[test]
    fn display_round_trips() {
        for q in ["q4_0", "q4_1", "q8_0", "q4_k", "q6_k", "f16", "f32", "int3 group=128"] {
            assert_eq!(q.parse::<Quant>().unwrap().to_string(), q);
        }
    }
}
