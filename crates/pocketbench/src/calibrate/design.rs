//! The shapes and workloads `calibrate --measure` measures: a built-in
//! design (full or quick) or a TOML file of the user's own.
//!
//! The built-in designs span depth (4 to 36 layers), width (256 to 1152),
//! head dim (64 and 128), KV heads (1 to 8), query heads per KV head (1 to
//! 7) and vocabulary (32k to 152k),
//! each fitted shape at tg128 (1 + 128), 256 + 64 and the study's 1024 + 128
//! (the quick design leaves 256 + 64 out). Working sets from 6 to 310 MB
//! place the caches' edge (the predictor's `cache-size`).
//! A part of the design is held out: shapes of other depth, width and
//! vocabulary together, measured at 1024 + 128 and tg128, predicted from
//! the fit of the rest and compared.

use std::path::Path;

use serde::Deserialize;

use crate::arch::{Shape, ShapeSpec};
use crate::workload::{Workload, WorkloadSpec};

/// One shape of a design and the workloads it is measured at.
#[derive(Debug, Clone, PartialEq)]
pub struct DesignPoint {
    /// The configuration.
    pub shape: Shape,
    /// Its workloads.
    pub workloads: Vec<Workload>,
    /// Held out of the fit, to check it.
    pub holdout: bool,
}

/// A calibration design.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// `full`, `quick` or the file's name.
    pub name: String,
    /// Round-robin rounds: every job once per round, so drift of the host
    /// over the calibration hits every point alike.
    pub rounds: u32,
    /// The shapes.
    pub points: Vec<DesignPoint>,
    /// The time its measuring keeps within, where it has one (the quick
    /// design's, [`QUICK_BUDGET`]): past it, rounds are shortened
    /// ([`super::pace`]).
    pub budget: Option<std::time::Duration>,
}

/// The quick design's measuring budget: with the bandwidth pass and the
/// fit, a quick calibration within 3 minutes on 2 cores. On the Zen 4 VM
/// its rounds took 148-192 s in slow stretches, retakes included.
pub const QUICK_BUDGET: std::time::Duration = std::time::Duration::from_secs(165);

/// A design file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DesignToml {
    #[serde(default)]
    name: Option<String>,
    #[serde(default = "three")]
    rounds: u32,
    /// Seconds of measuring to keep within; later rounds are shortened
    /// past it (none: every round measured whole).
    #[serde(default, rename = "budget-seconds")]
    budget_seconds: Option<f64>,
    point: Vec<PointToml>,
}

fn three() -> u32 {
    3
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointToml {
    model: ShapeSpec,
    workloads: Vec<WorkloadSpec>,
    #[serde(default)]
    holdout: bool,
}

/// Why a design cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DesignError {
    /// The file is malformed.
    #[error(transparent)]
    Config(#[from] Box<crate::config::ConfigError>),
    /// A point is impossible.
    #[error("{file}: point {index}: {message}")]
    Point {
        /// File.
        file: String,
        /// 1-based.
        index: usize,
        /// Why.
        message: String,
    },
    /// The design as a whole cannot be fitted.
    #[error("{file}: {message}")]
    Degenerate {
        /// File.
        file: String,
        /// Why.
        message: String,
    },
}

/// The fewest distinct fitted shapes a design may have: the decode stage
/// alone fits four parameters.
pub const MIN_FITTED_SHAPES: usize = 4;

const TG128: (u32, u32) = (1, 128);
const SHORT: (u32, u32) = (256, 64);
const STUDY: (u32, u32) = (1024, 128);

/// `(layers, hidden, heads, kv_heads, head_dim, ffn, vocab)`.
type Row = (u32, u32, u32, u32, u32, u32, u32);

/// Fitted shapes of the full design.
const FIT: &[Row] = &[
    (4, 256, 4, 1, 64, 768, 32000),
    (8, 512, 8, 2, 64, 1536, 32000),
    (36, 384, 6, 2, 64, 1024, 32000),
    (24, 512, 8, 2, 64, 1536, 49152),
    // Eight KV heads of 128, one query head each: the most KV read per
    // score (53 MB a token at 1024 + 128), so the fit can tell the KV cost
    // from the score cost; Qwen3-0.6B (two query heads per KV head of 128,
    // 125 MB) lay beyond every fitted shape's KV before (40 MB at most).
    (12, 1024, 8, 8, 128, 2816, 32000),
    (16, 768, 12, 4, 64, 2048, 65536),
    (32, 640, 10, 2, 64, 1792, 65536),
    (10, 1024, 8, 2, 128, 3072, 65536),
    (28, 576, 9, 3, 64, 1536, 100352),
    (20, 896, 14, 2, 64, 2560, 151936),
    (16, 640, 10, 5, 64, 1792, 151936),
    (24, 768, 12, 2, 64, 2048, 32000),
    (20, 576, 9, 3, 64, 1536, 65536),
    (8, 1024, 16, 4, 64, 2816, 49152),
    // The largest, 268 MB read per token at q4_0: without it Qwen3-0.6B
    // (335 MB) lay beyond every fitted shape (the largest then 175 MB), and
    // one-thread fits predicted it 13-24% too fast.
    (24, 1152, 9, 3, 128, 3328, 100352),
];

/// Held-out shapes of the full design.
const HELD: &[Row] = &[
    (20, 640, 10, 2, 64, 1792, 49152),
    (14, 768, 12, 4, 64, 2304, 100352),
    (30, 512, 8, 4, 64, 1408, 151936),
    (18, 960, 15, 3, 64, 2560, 32000),
    (6, 1024, 16, 4, 64, 2816, 65536),
    (28, 896, 14, 2, 64, 2560, 65536),
];

/// Shapes of the built-in check (`calibrate --check`), in none of the
/// designs' fitted lists: two presets the study names, a Llama-style one
/// (no QK-norm), and three of other depth, width, KV heads and
/// vocabulary together, one of them with a single KV head.
const CHECK_PRESETS: &[&str] = &["mnn-pocket-0.3b", "qwen3-0.6b", "smollm2-135m"];
const CHECK: &[Row] =
    &[(22, 704, 11, 1, 64, 1920, 81920), (12, 896, 14, 2, 64, 2432, 100352), (26, 512, 8, 2, 64, 1408, 65536)];

/// Shapes of [`FIT`] the built-in check measures again: both designs fit
/// them at tg128 and 1024 + 128, so their decode now against the profile's
/// says how far the machine itself has moved since it was calibrated
/// ([`super::drift`]). A mid-sized and a large vocabulary, 92 and 191 MB
/// read a token.
const ANCHORS: &[usize] = &[5, 9];

/// The quick design fits every shape of [`FIT`] (seven of them left the fit
/// too loose to predict decode within 10%) at fewer workloads, and holds
/// out these of [`HELD`].
const QUICK_HELD: &[usize] = &[0, 2, 4];

fn shape(r: &Row) -> Shape {
    let &(layers, hidden, heads, kv_heads, head_dim, ffn, vocab) = r;
    // Context 2048 covers every workload of the design (at most 1152 positions).
    Shape { context: 2048, ..crate::arch::presets::s(hidden, layers, heads, kv_heads, head_dim, ffn, vocab, true) }
}

fn workloads(list: &[(u32, u32)]) -> Vec<Workload> {
    list.iter().map(|&(prompt, gen)| Workload { prompt, gen, context: prompt + gen }).collect()
}

impl Design {
    /// The built-in design: `quick` (the 15 fitted shapes at tg128 and
    /// 1024 + 128, 3 held out, two rounds) or full (15 fitted at tg128,
    /// 256 + 64 and 1024 + 128, 6 held out, three rounds).
    ///
    /// The quick design's third round was cut for time: with it, one
    /// thread on the Zen 4 VM took 209-217 s, past the 3 minutes `--quick`
    /// is for. Refitting that calibration's own measurements from each pair
    /// of its rounds moved the held-out decode error from a mean 6.2% to
    /// 6.5-9.0% and its check from 8 of 12 within 10% to 6-8, inside the
    /// machine's own spread (a job's rounds lay a median 18% apart). In
    /// two rounds it took 132 s at one thread and 98 s at two there.
    pub fn built_in(quick: bool) -> Design {
        let mut points: Vec<DesignPoint> = FIT
            .iter()
            .map(|r| DesignPoint {
                shape: shape(r),
                workloads: workloads(if quick { &[TG128, STUDY] } else { &[TG128, SHORT, STUDY] }),
                holdout: false,
            })
            .collect();
        let held: Vec<Row> = if quick { QUICK_HELD.iter().map(|&i| HELD[i]).collect() } else { HELD.to_vec() };
        points.extend(held.iter().map(|r| DesignPoint {
            shape: shape(r),
            workloads: workloads(&[TG128, STUDY]),
            holdout: true,
        }));
        Design {
            name: if quick { "quick" } else { "full" }.into(),
            rounds: if quick { 2 } else { 3 },
            points,
            budget: quick.then_some(QUICK_BUDGET),
        }
    }

    /// The built-in check of a calibration: six shapes of none of the
    /// designs' fitted lists at tg128 and 1024 + 128, every one held out,
    /// and two the designs fit, to tell the machine's drift; three rounds.
    pub fn check_built_in() -> Design {
        let presets = CHECK_PRESETS.iter().map(|n| crate::arch::presets::preset(n).expect("a built-in preset").shape);
        let points = presets
            .chain(CHECK.iter().map(shape))
            .chain(ANCHORS.iter().map(|&i| shape(&FIT[i])))
            .map(|shape| DesignPoint { shape, workloads: workloads(&[TG128, STUDY]), holdout: true })
            .collect();
        Design { name: "check".into(), rounds: 3, points, budget: None }
    }

    /// The design measured in `rounds` rounds where given (`calibrate
    /// --rounds`), else in its own. Rounds asked for are measured whole:
    /// the time budget goes.
    pub fn with_rounds(self, rounds: Option<u32>) -> Design {
        match rounds {
            Some(rounds) => Design { rounds, budget: None, ..self },
            None => self,
        }
    }

    /// The design without its time budget (a precision asked for is
    /// measured whole).
    pub fn unhurried(self) -> Design {
        Design { budget: None, ..self }
    }

    /// The design with every point held out: a check measures without fitting.
    pub fn all_held_out(mut self) -> Design {
        for p in &mut self.points {
            p.holdout = true;
        }
        self
    }

    /// Read a design file to calibrate with: its fitted points must
    /// determine the fit ([`Design::check`]).
    pub fn from_file(path: &Path) -> Result<Design, DesignError> {
        let d = Design::read(path)?;
        d.check().map_err(|message| DesignError::Degenerate { file: path.display().to_string(), message })?;
        Ok(d)
    }

    /// Read a design file to check a calibration with (`calibrate
    /// --check FILE`): every point is held out, so no fit needs determining.
    pub fn check_file(path: &Path) -> Result<Design, DesignError> {
        Ok(Design::read(path)?.all_held_out())
    }

    fn read(path: &Path) -> Result<Design, DesignError> {
        let t: DesignToml = crate::config::load(path).map_err(Box::new)?;
        let file = path.display().to_string();
        let mut points = Vec::with_capacity(t.point.len());
        for (i, p) in t.point.iter().enumerate() {
            let err = |message: String| DesignError::Point { file: file.clone(), index: i + 1, message };
            let shape = p.model.resolve().map_err(|e| err(e.to_string()))?;
            if p.workloads.is_empty() {
                return Err(err("names no workload".into()));
            }
            let mut ws = Vec::with_capacity(p.workloads.len());
            for w in &p.workloads {
                let w = w.resolve().map_err(|e| err(e.to_string()))?;
                if w.context > shape.context {
                    return Err(err(format!(
                        "a workload needs {} positions; the shape is built for {}",
                        w.context, shape.context
                    )));
                }
                ws.push(w);
            }
            points.push(DesignPoint { shape, workloads: ws, holdout: p.holdout });
        }
        if !(1..=100).contains(&t.rounds) {
            return Err(DesignError::Degenerate {
                file,
                message: format!("rounds must be 1 to 100, got {}", t.rounds),
            });
        }
        let budget = match t.budget_seconds {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => Some(std::time::Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(DesignError::Degenerate {
                    file,
                    message: format!("budget-seconds must be a number of seconds, at least 0, got {s}"),
                })
            }
        };
        let name = t.name.unwrap_or_else(|| path.file_stem().unwrap_or_default().to_string_lossy().into_owned());
        Ok(Design { name, rounds: t.rounds, points, budget })
    }

    /// Whether the fit can be determined: enough distinct fitted shapes, of
    /// more than one depth and more than one size.
    pub(crate) fn check(&self) -> Result<(), String> {
        let fitted: Vec<&Shape> = self.points.iter().filter(|p| !p.holdout).map(|p| &p.shape).collect();
        let mut ids: Vec<String> = fitted.iter().map(|s| s.id()).collect();
        ids.sort();
        ids.dedup();
        if ids.len() < MIN_FITTED_SHAPES {
            return Err(format!(
                "a degenerate design: {} distinct fitted shape(s), the fit needs at least {MIN_FITTED_SHAPES} (the decode stage alone has four parameters)",
                ids.len()
            ));
        }
        let all_same = |f: &dyn Fn(&Shape) -> u64| fitted.windows(2).all(|w| f(w[0]) == f(w[1]));
        if all_same(&|s| s.layers as u64) {
            return Err("a degenerate design: every fitted shape has the same depth, so per-layer cost cannot be told from bandwidth".into());
        }
        if all_same(&|s| s.accounting().weight_bytes_per_token) {
            return Err("a degenerate design: every fitted shape reads the same bytes per token".into());
        }
        Ok(())
    }

    /// Jobs per round.
    pub fn jobs_per_round(&self) -> usize {
        self.points.iter().map(|p| p.workloads.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_designs_span_what_the_issue_asks_and_can_be_fitted() {
        for quick in [true, false] {
            let d = Design::built_in(quick);
            d.check().unwrap();
            let fitted: Vec<&Shape> = d.points.iter().filter(|p| !p.holdout).map(|p| &p.shape).collect();
            let span = |f: fn(&Shape) -> u32| {
                (fitted.iter().map(|s| f(s)).min().unwrap(), fitted.iter().map(|s| f(s)).max().unwrap())
            };
            assert!(span(|s| s.vocab).0 <= 32000 && span(|s| s.vocab).1 >= 151936, "{quick}");
            assert!(span(|s| s.layers).1 >= 36, "{quick}");
            assert_eq!(span(|s| s.head_dim), (64, 128));
            assert!(d.points.iter().any(|p| p.holdout));
            for p in &d.points {
                p.shape.validate().unwrap();
                crate::probe::gguf::tensor_plan(&p.shape).unwrap();
                // Held-out shapes are not fitted shapes.
                if p.holdout {
                    assert!(fitted.iter().all(|f| f.id() != p.shape.id()));
                }
            }
        }
    }

    #[test]
    fn the_built_in_check_measures_six_shapes_no_design_fits_and_two_both_fit() {
        let check = Design::check_built_in();
        assert_eq!(check.points.len(), 8);
        let fitted = |quick| -> Vec<(String, Vec<Workload>)> {
            Design::built_in(quick)
                .points
                .into_iter()
                .filter(|p| !p.holdout)
                .map(|p| (p.shape.id(), p.workloads))
                .collect()
        };
        let (quick, full) = (fitted(true), fitted(false));
        let (anchors, checked): (Vec<_>, Vec<_>) =
            check.points.iter().partition(|p| quick.iter().any(|(id, _)| *id == p.shape.id()));
        assert_eq!((anchors.len(), checked.len()), (2, 6));
        // The anchors are fitted by both designs at every workload the check measures.
        for p in &anchors {
            for design in [&quick, &full] {
                let (_, ws) = design.iter().find(|(id, _)| *id == p.shape.id()).unwrap();
                assert!(p.workloads.iter().all(|w| ws.contains(w)), "{}", p.shape);
            }
        }
        for p in &check.points {
            assert!(p.holdout);
            assert!(anchors.iter().any(|a| a.shape == p.shape) || !full.iter().any(|(id, _)| *id == p.shape.id()));
            p.shape.validate().unwrap();
            assert!(p.workloads.iter().all(|w| w.context <= p.shape.context));
        }
        assert!(checked.iter().any(|p| p.shape.kv_heads == 1), "a single KV head");
        assert!(checked.iter().any(|p| !p.shape.qk_norm), "a Llama-style shape (no QK-norm)");
    }

    #[test]
    fn degenerate_designs_say_why() {
        let mut d = Design::built_in(true);
        d.points.retain(|p| p.holdout);
        assert!(d.check().unwrap_err().contains("0 distinct fitted shape(s)"));
        let mut d = Design::built_in(true);
        for p in &mut d.points {
            p.shape.layers = 8;
        }
        assert!(d.check().unwrap_err().contains("same depth"), "{:?}", d.check());
    }
}
