//! A sweep axis: one value, a list, or an inclusive range with a step.
//!
//! ```toml
//! layers = 28                               # one value
//! vocab = [65536, 151936]                   # a list
//! hidden = { from = 512, to = 1536, step = 128 }  # a range, both ends included
//! ```

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// Largest number of values one axis may expand to.
pub const MAX_AXIS_LEN: usize = 100_000;

/// Values an axis may take; numbers also support ranges.
pub trait AxisValue: Sized + Clone + DeserializeOwned + fmt::Display {
    /// Expand `from..=to` by `step`, or explain why not.
    fn range(from: &Self, to: &Self, step: &Self) -> Result<Vec<Self>, String>;
    /// Why the value is outside the axis's domain, if it is: every count
    /// of a configuration (layers, widths, heads, vocabulary, context) is
    /// at least 1, and every multiplier a finite number above 0 (TOML
    /// allows `nan` and `inf`).
    fn out_of_domain(&self) -> Option<String> {
        None
    }
}

impl AxisValue for u32 {
    fn out_of_domain(&self) -> Option<String> {
        (*self == 0).then(|| "`0`: a count of a configuration must be at least 1".to_string())
    }

    fn range(from: &u32, to: &u32, step: &u32) -> Result<Vec<u32>, String> {
        if *step == 0 {
            return Err("step must be at least 1".into());
        }
        if from > to {
            return Err(format!("from ({from}) is greater than to ({to})"));
        }
        let n = ((to - from) / step) as usize + 1;
        if n > MAX_AXIS_LEN {
            return Err(format!("range has {n} values (at most {MAX_AXIS_LEN})"));
        }
        Ok((0..n as u32).map(|i| from + i * step).collect())
    }
}

impl AxisValue for f64 {
    fn out_of_domain(&self) -> Option<String> {
        if !self.is_finite() {
            Some(format!("`{self}` is not a finite number"))
        } else if *self <= 0.0 {
            Some(format!("`{self}`: a multiplier must be above 0"))
        } else {
            None
        }
    }

    fn range(from: &f64, to: &f64, step: &f64) -> Result<Vec<f64>, String> {
        if step.is_nan() || *step <= 0.0 {
            return Err("step must be positive".into());
        }
        if from > to {
            return Err(format!("from ({from}) is greater than to ({to})"));
        }
        let n = ((to - from) / step + 1e-9).floor() as usize + 1;
        if n > MAX_AXIS_LEN {
            return Err(format!("range has {n} values (at most {MAX_AXIS_LEN})"));
        }
        Ok((0..n).map(|i| from + i as f64 * step).collect())
    }
}

macro_rules! no_range {
    ($($t:ty),*) => {$(
        impl AxisValue for $t {
            fn range(_: &Self, _: &Self, _: &Self) -> Result<Vec<Self>, String> {
                Err("this axis takes a value or a list, not a range".into())
            }
        }
    )*};
}
no_range!(bool, crate::arch::Quant);

/// An axis, expanded to its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis<T>(pub Vec<T>);

impl<T> Axis<T> {
    /// The values.
    pub fn values(&self) -> &[T] {
        &self.0
    }
}

impl<'de, T: AxisValue> Deserialize<'de> for Axis<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let axis: Axis<T> = d.deserialize_any(AxisVisitor(PhantomData))?;
        match axis.0.iter().find_map(AxisValue::out_of_domain) {
            Some(why) => Err(de::Error::custom(why)),
            None => Ok(axis),
        }
    }
}

struct AxisVisitor<T>(PhantomData<T>);

impl<T: AxisValue> AxisVisitor<T> {
    fn one<E: de::Error, V: IntoDeserializer<'static, E>>(v: V) -> Result<Axis<T>, E> {
        T::deserialize(v.into_deserializer()).map(|x| Axis(vec![x]))
    }
}

impl<'de, T: AxisValue> Visitor<'de> for AxisVisitor<T> {
    type Value = Axis<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value, a list of values, or a range { from, to, step }")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Axis<T>, E> {
        Self::one(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Axis<T>, E> {
        Self::one(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Axis<T>, E> {
        Self::one(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Axis<T>, E> {
        Self::one(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Axis<T>, E> {
        Self::one(v.to_string())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Axis<T>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<T>()? {
            out.push(v);
        }
        if out.is_empty() {
            return Err(de::Error::custom("an axis list must not be empty"));
        }
        Ok(Axis(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Axis<T>, A::Error> {
        let (mut from, mut to, mut step) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "from" => &mut from,
                "to" => &mut to,
                "step" => &mut step,
                other => return Err(de::Error::unknown_field(other, &["from", "to", "step"])),
            };
            *slot = Some(map.next_value::<T>()?);
        }
        let (Some(from), Some(to), Some(step)) = (from, to, step) else {
            return Err(de::Error::custom("a range needs `from`, `to` and `step`"));
        };
        T::range(&from, &to, &step).map(Axis).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        a: Axis<u32>,
        b: Axis<f64>,
        c: Axis<bool>,
    }

    #[test]
    fn forms() {
        let t: T = toml::from_str("a = { from = 16, to = 36, step = 4 }\nb = [2.5, 3.0]\nc = true\n").unwrap();
        assert_eq!(t.a.0, vec![16, 20, 24, 28, 32, 36]);
        assert_eq!(t.b.0, vec![2.5, 3.0]);
        assert_eq!(t.c.0, vec![true]);
        let t: T = toml::from_str("a = 7\nb = { from = 1.0, to = 2.0, step = 0.5 }\nc = [true, false]\n").unwrap();
        assert_eq!(t.a.0, vec![7]);
        assert_eq!(t.b.0, vec![1.0, 1.5, 2.0]);
    }

    #[test]
    fn errors() {
        let e = toml::from_str::<T>("a = { from = 36, to = 16, step = 4 }\nb = 1.0\nc = true\n").err().unwrap();
        assert!(e.to_string().contains("from (36) is greater than to (16)"), "{e}");
        let e = toml::from_str::<T>("a = { from = 1, to = 2 }\nb = 1.0\nc = true\n").err().unwrap();
        assert!(e.to_string().contains("needs `from`, `to` and `step`"), "{e}");
        let e = toml::from_str::<T>("a = 1\nb = 1.0\nc = { from = true, to = true, step = true }\n").err().unwrap();
        assert!(e.to_string().contains("not a range"), "{e}");
        // Out of the domain: a zero count, a multiplier not above 0, nan.
        let e = toml::from_str::<T>("a = [4, 0]\nb = 1.0\nc = true\n").err().unwrap();
        assert!(e.to_string().contains("must be at least 1"), "{e}");
        let e = toml::from_str::<T>("a = 1\nb = -2.0\nc = true\n").err().unwrap();
        assert!(e.to_string().contains("must be above 0"), "{e}");
        let e = toml::from_str::<T>("a = 1\nb = nan\nc = true\n").err().unwrap();
        assert!(e.to_string().contains("not a finite number"), "{e}");
    }
}
