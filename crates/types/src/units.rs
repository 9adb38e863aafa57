//! Quantities with units: one newtype per unit, parsed from strings such as
//! `"300MB"`, `"1.3B"`, `"200 tok/s"`, so that a wrong unit is a parse error and
//! not a silent factor of 1000.
//!
//! Decimal prefixes throughout: **MB means 10^6 bytes**, GB 10^9 (binary
//! `MiB`/`GiB` are accepted and spelled as such). Parameter counts use
//! K = 10^3, M = 10^6, B = 10^9.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A string did not parse as the quantity it was meant to be.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{input}` is not a valid {what}: {why} (accepted units: {units})")]
pub struct UnitError {
    /// What was written.
    pub input: String,
    /// The quantity expected, e.g. "byte size".
    pub what: &'static str,
    /// Why it was refused.
    pub why: String,
    /// The accepted unit spellings.
    pub units: String,
}

/// A physical quantity stored as an `f64` in its base unit.
pub trait Quantity: Sized + Copy {
    /// Human name for messages ("byte size").
    const WHAT: &'static str;
    /// Accepted unit suffixes and their factor to the base unit. The first
    /// entry with factor 1 is the canonical display unit. Matching is
    /// case-sensitive where case matters (`MB` vs `mb` are both accepted only
    /// if listed).
    const UNITS: &'static [(&'static str, f64)];
    /// Whether a bare number (no unit) is accepted, meaning the base unit.
    const BARE_OK: bool;
    /// Wrap a value in base units.
    fn from_base(v: f64) -> Self;
    /// The value in base units.
    fn base(self) -> f64;
}

/// Parse `s` as quantity `Q`.
pub fn parse<Q: Quantity>(s: &str) -> Result<Q, UnitError> {
    let err = |why: String| UnitError {
        input: s.to_string(),
        what: Q::WHAT,
        why,
        units: Q::UNITS.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", "),
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    // An exponent marker directly followed by a unit letter is ambiguous; we only
    // treat `e` as part of the number when a digit or sign follows it.
    let (num, unit) = t.split_at(split);
    let (num, unit) = match num.rfind('e') {
        Some(i) if i + 1 == num.len() => (&num[..i], &t[i..]),
        _ => (num, unit),
    };
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(err("no number".into()));
    }
    let v: f64 = num.parse().map_err(|_| err(format!("`{num}` is not a number")))?;
    if !v.is_finite() {
        return Err(err("not a finite number".into()));
    }
    let unit = unit.trim();
    if unit.is_empty() {
        return if Q::BARE_OK { Ok(Q::from_base(v)) } else { Err(err("a unit is required".into())) };
    }
    match Q::UNITS.iter().find(|(u, _)| *u == unit) {
        Some((_, f)) => Ok(Q::from_base(v * f)),
        None => Err(err(format!("unknown unit `{unit}`"))),
    }
}

macro_rules! quantity {
    ($(#[$m:meta])* $name:ident, $what:literal, bare = $bare:literal, [$(($u:literal, $f:expr)),+ $(,)?]) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
        pub struct $name(pub f64);

        impl Quantity for $name {
            const WHAT: &'static str = $what;
            const UNITS: &'static [(&'static str, f64)] = &[$(($u, $f)),+];
            const BARE_OK: bool = $bare;
            fn from_base(v: f64) -> Self { $name(v) }
            fn base(self) -> f64 { self.0 }
        }

        impl FromStr for $name {
            type Err = UnitError;
            fn from_str(s: &str) -> Result<Self, Self::Err> { parse(s) }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(QuantityVisitor::<$name>(std::marker::PhantomData))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
    };
}

struct QuantityVisitor<Q>(std::marker::PhantomData<Q>);

impl<Q: Quantity> Visitor<'_> for QuantityVisitor<Q> {
    type Value = Q;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} such as \"{}{}\"", Q::WHAT, 1, Q::UNITS[0].0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Q, E> {
        parse(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Q, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Q, E> {
        self.visit_f64(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Q, E> {
        // TOML has `nan` and `inf`; a quantity is a finite number.
        if !v.is_finite() {
            return Err(E::custom(format!("`{v}` is not a finite number (a {} must be one)", Q::WHAT)));
        }
        if Q::BARE_OK {
            Ok(Q::from_base(v))
        } else {
            Err(E::custom(format!(
                "a bare number `{v}` is ambiguous for a {}: write it with a unit ({})",
                Q::WHAT,
                Q::UNITS.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", ")
            )))
        }
    }
}

quantity!(
    /// A size in bytes. `MB` = 10^6 bytes.
    ByteSize, "byte size", bare = false,
    [("B", 1.0), ("kB", 1e3), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("KiB", 1024.0), ("MiB", 1048576.0), ("GiB", 1073741824.0)]
);
quantity!(
    /// A count of model parameters. `M` = 10^6, `B` = 10^9.
    ParamCount, "parameter count", bare = true,
    [("", 1.0), ("K", 1e3), ("M", 1e6), ("B", 1e9)]
);
quantity!(
    /// A token rate in tokens per second.
    TokRate, "token rate", bare = false,
    [("tok/s", 1.0), ("tokens/s", 1.0)]
);
quantity!(
    /// Energy in joules.
    Energy, "energy", bare = false,
    [("J", 1.0), ("mJ", 1e-3), ("kJ", 1e3), ("Wh", 3600.0), ("mWh", 3.6)]
);
quantity!(
    /// Power in watts.
    Power, "power", bare = false,
    [("W", 1.0), ("mW", 1e-3)]
);
quantity!(
    /// Time in seconds.
    Duration, "duration", bare = false,
    [("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)]
);
quantity!(
    /// Memory bandwidth in bytes per second. `GB/s` = 10^9 B/s.
    Bandwidth, "bandwidth", bare = false,
    [("B/s", 1.0), ("MB/s", 1e6), ("GB/s", 1e9)]
);
quantity!(
    /// Arithmetic throughput in operations (FLOP or integer ops) per second.
    Compute, "compute rate", bare = false,
    [("FLOPS", 1.0), ("GFLOPS", 1e9), ("TFLOPS", 1e12), ("GOPS", 1e9), ("TOPS", 1e12)]
);
quantity!(
    /// Bytes per model parameter.
    BytesPerParam, "bytes per parameter", bare = false,
    [("B/param", 1.0)]
);
quantity!(
    /// A fraction, written as a percentage ("5%") or a bare fraction (0.05).
    Fraction, "fraction", bare = true,
    [("", 1.0), ("%", 0.01)]
);
quantity!(
    /// Electric charge in milliamp-hours (battery capacity).
    Charge, "charge", bare = false,
    [("mAh", 1.0), ("Ah", 1000.0)]
);
quantity!(
    /// A clock frequency in hertz. `GHz` = 10^9 Hz.
    Frequency, "frequency", bare = false,
    [("Hz", 1.0), ("MHz", 1e6), ("GHz", 1e9)]
);
quantity!(
    /// Voltage in volts.
    Voltage, "voltage", bare = false,
    [("V", 1.0), ("mV", 1e-3)]
);

fn sig(v: f64) -> String {
    // Four significant digits, trailing zeros trimmed: stable across platforms.
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        if v >= 1e9 {
            write!(f, "{}GB", sig(v / 1e9))
        } else if v >= 1e6 {
            write!(f, "{}MB", sig(v / 1e6))
        } else if v >= 1e3 {
            write!(f, "{}kB", sig(v / 1e3))
        } else {
            write!(f, "{}B", sig(v))
        }
    }
}

impl fmt::Display for ParamCount {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        if v >= 1e9 {
            write!(f, "{}B", sig(v / 1e9))
        } else if v >= 1e6 {
            write!(f, "{}M", sig(v / 1e6))
        } else if v >= 1e3 {
            write!(f, "{}K", sig(v / 1e3))
        } else {
            write!(f, "{}", sig(v))
        }
    }
}

macro_rules! display_in {
    ($name:ident, $unit:literal, $scale:expr) => {
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, concat!("{}", $unit), sig(self.0 / $scale))
            }
        }
    };
}
display_in!(TokRate, " tok/s", 1.0);
display_in!(Energy, " J", 1.0);
display_in!(Power, " W", 1.0);
display_in!(Bandwidth, " GB/s", 1e9);
display_in!(Charge, " mAh", 1.0);
display_in!(Voltage, " V", 1.0);
display_in!(Frequency, " GHz", 1e9);
display_in!(Fraction, "%", 0.01);
display_in!(BytesPerParam, " B/param", 1.0);

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        if v >= 1.0 {
            write!(f, "{} s", sig(v))
        } else if v >= 1e-3 {
            write!(f, "{} ms", sig(v * 1e3))
        } else if v >= 1e-6 || v == 0.0 {
            write!(f, "{} us", sig(v * 1e6))
        } else {
            write!(f, "{} ns", sig(v * 1e9))
        }
    }
}

impl fmt::Display for Compute {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.0 >= 1e12 {
            write!(f, "{} TFLOPS", sig(self.0 / 1e12))
        } else {
            write!(f, "{} GFLOPS", sig(self.0 / 1e9))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_decimal() {
        assert_eq!("300MB".parse::<ByteSize>().unwrap().0, 300e6);
        assert_eq!("300 MB".parse::<ByteSize>().unwrap().0, 300e6);
        assert_eq!("1 MiB".parse::<ByteSize>().unwrap().0, 1048576.0);
        assert_eq!(ByteSize(173e6).to_string(), "173MB");
    }

    #[test]
    fn params_with_suffix() {
        assert_eq!("1.3B".parse::<ParamCount>().unwrap().0, 1.3e9);
        assert_eq!("50M".parse::<ParamCount>().unwrap().0, 50e6);
        assert_eq!("302.8M".parse::<ParamCount>().unwrap().0, 302.8e6);
        assert_eq!("1000".parse::<ParamCount>().unwrap().0, 1000.0);
        assert_eq!(ParamCount(302_776_320.0).to_string(), "302.8M");
    }

    #[test]
    fn unit_mistakes_are_errors() {
        let e = "300Mb".parse::<ByteSize>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "`300Mb` is not a valid byte size: unknown unit `Mb` (accepted units: B, kB, KB, MB, GB, KiB, MiB, GiB)"
        );
        assert!("300".parse::<ByteSize>().unwrap_err().why.contains("unit is required"));
        assert!("200 tok".parse::<TokRate>().is_err());
        assert!("1.3T".parse::<ParamCount>().is_err());
        assert!("MB".parse::<ByteSize>().is_err());
    }

    #[test]
    fn rates_energy_time() {
        assert_eq!("200 tok/s".parse::<TokRate>().unwrap().0, 200.0);
        assert_eq!("8.4 J".parse::<Energy>().unwrap().0, 8.4);
        assert_eq!("31.29 Wh".parse::<Energy>().unwrap().0, 31.29 * 3600.0);
        assert!(("30 us".parse::<Duration>().unwrap().0 - 30e-6).abs() < 1e-15);
        assert_eq!("153 GB/s".parse::<Bandwidth>().unwrap().0, 153e9);
        assert_eq!("5%".parse::<Fraction>().unwrap().0, 0.05);
        assert_eq!("1e3 J".parse::<Energy>().unwrap().0, 1000.0);
    }
}
