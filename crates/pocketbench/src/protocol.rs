//! How a measurement was taken, as one comparable object: workload,
//! threads, engine and its build, quantization, warm-up, repetition policy
//! and the machine. Two measurements compare like with like only under the
//! same protocol; the gate refuses other pairs unless told
//! (`--allow-protocol-mismatch`), and then names every difference.
//!
//! The engine's build is part of the protocol (the fingerprint covers it),
//! but is not a mismatch: what a gate compares is usually two builds.

use serde::{Deserialize, Serialize};

use crate::record::Record;

/// The protocol of one measurement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protocol {
    /// `P+G` (context `C` when it is not P+G).
    pub workload: String,
    /// Threads the engine ran.
    pub threads: u32,
    /// The engine (`native`, `llama.cpp`, `llama-bench`, ...).
    pub engine: String,
    /// Its version and build as the probe reported them.
    pub engine_build: String,
    /// The weights' storage.
    pub quant: String,
    /// Warm-up runs before the measured ones.
    pub warmup: u32,
    /// `fixed` repetitions, `auto` to a precision (`auto ±2%`), or a soak
    /// (`soak 600 s in 10 s windows`).
    pub reps: String,
    /// The fingerprint of the machine it ran on (the phone's, for a phone).
    pub machine: String,
    /// FNV-1a of every field above.
    pub fingerprint: String,
}

/// One field in which two protocols differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// The field (`threads`).
    pub field: String,
    /// The baseline's value.
    pub baseline: String,
    /// The candidate's value.
    pub candidate: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{} {} vs {}", self.field, self.baseline, self.candidate)
    }
}

impl Protocol {
    /// The protocol of a measured record (`None` for a prediction).
    pub fn of(r: &Record) -> Option<Protocol> {
        let m = r.measurement.as_ref()?;
        let p = &m.probe;
        let w = p.workload;
        let workload = if w.context == w.prompt + w.gen {
            format!("{}+{}", w.prompt, w.gen)
        } else {
            format!("{}+{} (context {})", w.prompt, w.gen, w.context)
        };
        let reps = match (&p.soak, p.sampling.as_ref().and_then(|s| s.precision_target)) {
            // A soak's cycles run hot and back to back: never like a run's.
            (Some(s), _) => format!("soak {} s in {} s windows", s.spec.seconds, s.spec.window_s),
            (None, Some(t)) => format!("auto ±{:.0}%", t * 100.0),
            (None, None) => "fixed".to_string(),
        };
        let mut out = Protocol {
            workload,
            threads: p.threads,
            engine: p.engine.clone(),
            engine_build: match p.engine.parse::<crate::probe::EngineKind>() {
                Ok(kind) => format!("{} ({})", p.engine_version, kind.build_of(&p.build)),
                Err(_) => p.engine_version.clone(),
            },
            quant: r.shape.quant.to_string(),
            warmup: p.warmup,
            reps,
            machine: p.host.fingerprint.clone(),
            fingerprint: String::new(),
        };
        out.fingerprint = format!("{:012x}", crate::fnv1a(out.canonical().as_bytes()) >> 16);
        Some(out)
    }

    fn fields(&self) -> [(&'static str, String); 8] {
        [
            ("workload", self.workload.clone()),
            ("threads", self.threads.to_string()),
            ("engine", self.engine.clone()),
            ("engine build", self.engine_build.clone()),
            ("quantization", self.quant.clone()),
            ("warm-up", self.warmup.to_string()),
            ("repetitions", self.reps.clone()),
            ("machine", if self.machine.is_empty() { "unrecorded".into() } else { self.machine.clone() }),
        ]
    }

    fn canonical(&self) -> String {
        self.fields().iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";")
    }

    /// Every field in which `candidate` differs from `self`, the engine's
    /// build left out: a gate compares builds.
    pub fn differences(&self, candidate: &Protocol) -> Vec<Difference> {
        self.fields()
            .into_iter()
            .zip(candidate.fields())
            .filter(|((k, a), (_, b))| *k != "engine build" && a != b)
            .map(|((k, a), (_, b))| Difference { field: k.into(), baseline: a, candidate: b })
            .collect()
    }
}

/// The differences between the protocols of two sides' measured records,
/// each named once: every protocol of the baseline against every one of
/// the candidate for the same configuration and device.
pub fn between(baseline: &[Record], candidate: &[Record]) -> Vec<Difference> {
    let mut out: Vec<Difference> = Vec::new();
    for b in baseline {
        let Some(pb) = Protocol::of(b) else { continue };
        for c in candidate.iter().filter(|c| c.config_id == b.config_id && c.device == b.device) {
            let Some(pc) = Protocol::of(c) else { continue };
            for d in pb.differences(&pc) {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(threads: u32, warmup: u32) -> Record {
        let mut r = crate::testing::measured_record(4, 64, 32, &[100.0, 101.0, 99.0]);
        let m = r.measurement.as_mut().unwrap();
        m.probe.threads = threads;
        m.probe.warmup = warmup;
        r
    }

    #[test]
    fn like_with_like_has_no_differences_and_one_fingerprint() {
        let (a, b) = (Protocol::of(&rec(2, 1)).unwrap(), Protocol::of(&rec(2, 1)).unwrap());
        assert_eq!(a, b);
        assert_eq!(a.fingerprint.len(), 12);
        assert!(a.differences(&b).is_empty());
        assert_eq!(a.workload, "64+32");
    }

    #[test]
    fn every_difference_is_named_and_the_build_is_not_one() {
        let (a, mut c) = (Protocol::of(&rec(2, 1)).unwrap(), Protocol::of(&rec(1, 0)).unwrap());
        let d: Vec<String> = a.differences(&c).iter().map(ToString::to_string).collect();
        assert_eq!(d, ["threads 2 vs 1", "warm-up 1 vs 0"]);
        c.engine_build = "another build".into();
        assert_eq!(a.differences(&c).len(), 2);
        let both = between(&[rec(2, 1), rec(2, 1)], &[rec(1, 1)]);
        assert_eq!(both.len(), 1, "{both:?}");
        assert!(between(&[rec(2, 1)], &[rec(2, 1)]).is_empty());
    }
}
