//! Whether a calibration of this machine is sound, judged against the
//! machine's own noise (issue 41, item 5): its points' two halves must
//! agree, its held-out shapes must be predicted within the tolerances, and
//! no point may rest on contended repetitions. Where the machine cannot get
//! there, the calibration says so plainly and marks the profile `noisy`
//! (`[model.noise]`), and every prediction from it carries the mark.

use serde::{Deserialize, Serialize};

use super::{Accuracy, Repeatability};

/// The least share of points whose halves agree within the split-half
/// tolerance for a sound calibration.
pub const MIN_SPLIT_HALF_SHARE: f64 = 0.90;
/// The least share of held-out figures within their tolerance.
pub const MIN_HELD_OUT_SHARE: f64 = 0.95;

/// The judgement, as written into the profile (`[model.noise]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Noise {
    /// `sound` or `noisy`.
    pub verdict: Verdict,
    /// What the calibration saw, one clause each: the split-half, the
    /// held-out accuracy, the bandwidth's range.
    pub saw: Vec<String>,
    /// Why it is noisy (empty when sound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Who judged it, when.
    pub source: String,
}

/// A calibration's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every criterion held.
    Sound,
    /// The machine was too noisy for the fit to be trusted as printed.
    Noisy,
}

/// What the judgement reads.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// How the points' halves agreed.
    pub repeatability: Option<&'a Repeatability>,
    /// Held-out accuracy per metric (decode, peak memory).
    pub held_out: &'a [Accuracy],
    /// The lowest and highest same-moment bandwidth of the points, B/s.
    pub bandwidth: Option<[f64; 2]>,
    /// Points whose measurement kept contended repetitions.
    pub contended: usize,
    /// Points measured.
    pub points: usize,
}

impl Noise {
    /// Judge `e`.
    pub fn judge(e: &Evidence) -> Noise {
        let mut saw = Vec::new();
        let mut reasons = Vec::new();
        match e.repeatability {
            Some(r) => {
                let clause = format!(
                    "split-half: {} of {} job(s) within {:.0}%{}",
                    r.halves_agree,
                    r.jobs,
                    r.split_half_tolerance * 100.0,
                    match r.halves_at_bandwidth {
                        0 => String::new(),
                        n => format!(" ({n} at one bandwidth; {} as measured)", r.halves_agree_raw),
                    }
                );
                if (r.halves_agree as f64) < MIN_SPLIT_HALF_SHARE * r.jobs as f64 {
                    reasons.push(format!("{clause}, below {:.0}%", MIN_SPLIT_HALF_SHARE * 100.0));
                }
                saw.push(clause);
            }
            None => saw.push("split-half: not measured (one round)".into()),
        }
        for a in e.held_out.iter().filter(|a| a.metric == "decode" || a.metric == "peak-memory") {
            let clause = format!(
                "held-out {}: {} of {} within {:.0}% (worst {:.1}%)",
                a.metric,
                a.within,
                a.points,
                a.tolerance * 100.0,
                a.worst_abs_error * 100.0
            );
            if (a.within as f64) < MIN_HELD_OUT_SHARE * a.points as f64 {
                reasons.push(format!("{clause}, below {:.0}%", MIN_HELD_OUT_SHARE * 100.0));
            }
            saw.push(clause);
        }
        if let Some([lo, hi]) = e.bandwidth {
            saw.push(format!(
                "bandwidth {:.1}-{:.1} GB/s across the points (x{:.2}), carried as the predictions' interval",
                lo / 1e9,
                hi / 1e9,
                hi / lo
            ));
        }
        if e.contended > 0 {
            reasons.push(format!(
                "{} of {} point(s) kept contended repetitions (no retake was left)",
                e.contended, e.points
            ));
        }
        Noise {
            verdict: if reasons.is_empty() { Verdict::Sound } else { Verdict::Noisy },
            saw,
            reasons,
            source: format!("judged by `pocketbench calibrate --measure` {}", crate::hostinfo::today()),
        }
    }

    /// One line: `sound (...)` or `NOISY: ...`.
    pub fn line(&self) -> String {
        match self.verdict {
            Verdict::Sound => format!("sound ({})", self.saw.join("; ")),
            Verdict::Noisy => format!("NOISY: {}", self.reasons.join("; ")),
        }
    }

    /// Write into a profile document as `[model.noise]`.
    pub fn set(&self, doc: &mut toml_edit::DocumentMut) {
        let mut t = toml_edit::Table::new();
        t["verdict"] = toml_edit::value(match self.verdict {
            Verdict::Sound => "sound",
            Verdict::Noisy => "noisy",
        });
        let list = |v: &[String]| toml_edit::value(v.iter().map(String::as_str).collect::<toml_edit::Array>());
        t["saw"] = list(&self.saw);
        if !self.reasons.is_empty() {
            t["reasons"] = list(&self.reasons);
        }
        t["source"] = toml_edit::value(self.source.clone());
        doc["model"]["noise"] = toml_edit::Item::Table(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(metric: &str, within: usize, points: usize) -> Accuracy {
        Accuracy { metric: metric.into(), points, tolerance: 0.1, within, mean_abs_error: 0.05, worst_abs_error: 0.12 }
    }

    #[test]
    fn a_calibration_is_noisy_when_its_halves_disagree_or_held_out_shapes_miss() {
        let rep = |agree| Repeatability {
            jobs: 36,
            tolerance: 0.1,
            wider: 0,
            median_spread: 0.02,
            worst_spread: 0.1,
            halves_agree: agree,
            halves_at_bandwidth: 0,
            halves_agree_raw: agree,
            elasticity: None,
            split_half_tolerance: 0.05,
        };
        let good = rep(33);
        let held = [acc("decode", 6, 6), acc("peak-memory", 6, 6)];
        let e = Evidence { repeatability: Some(&good), held_out: &held, bandwidth: None, contended: 0, points: 36 };
        let n = Noise::judge(&e);
        assert_eq!(n.verdict, Verdict::Sound, "{n:?}");
        assert!(n.line().starts_with("sound (split-half: 33 of 36"), "{}", n.line());
        // 32 of 36 is 88.9%: below 90%.
        let bad = rep(32);
        let n = Noise::judge(&Evidence { repeatability: Some(&bad), ..e });
        assert_eq!(n.verdict, Verdict::Noisy);
        assert!(n.line().contains("split-half: 32 of 36 job(s) within 5%, below 90%"), "{}", n.line());
        let missed = [acc("decode", 5, 6), acc("peak-memory", 6, 6)];
        let n = Noise::judge(&Evidence { held_out: &missed, ..e });
        assert!(n.reasons.iter().any(|r| r.starts_with("held-out decode: 5 of 6")), "{n:?}");
        let n = Noise::judge(&Evidence { contended: 2, ..e });
        assert_eq!(n.verdict, Verdict::Noisy);
        // Written and read back as the profile holds it.
        let mut doc: toml_edit::DocumentMut = "[model]\nfit = []\n".parse().unwrap();
        n.set(&mut doc);
        #[derive(Deserialize)]
        struct M {
            model: Inner,
        }
        #[derive(Deserialize)]
        struct Inner {
            noise: Noise,
        }
        let back: M = toml::from_str(&doc.to_string()).unwrap();
        assert_eq!(back.model.noise, n);
    }
}
