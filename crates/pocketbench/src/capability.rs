//! A capability **proxy** for configurations that were never trained, and
//! user-supplied measured scores that replace it.
//!
//! The proxy is the reducible part of the Chinchilla parametric loss
//! (Hoffmann et al., arXiv 2203.15556): `A / N^alpha` with A = 406.4,
//! alpha = 0.34, where N is the **non-embedding** parameter count (which
//! tracks perplexity closely at small sizes: LiteTransformerSearch, arXiv
//! 2203.02094). The data term `B / D^beta` is the same for every configuration
//! trained on the same data, so it is left out. The score is
//! `100 · exp(−A / N_eff^alpha)`: higher is better, 100 is the limit of
//! infinite size.
//!
//! **Depth rule.** MobileLLM (arXiv 2402.14905) finds deep-and-thin better
//! below 1B; the reference study gained up to 28 layers and nothing at 36. So
//! `N_eff = N · exp(−penalty · ln(L*/L)²)` for `L < L*` and `N_eff = N` for
//! `L ≥ L*`: depth helps up to `L*` (default 28) and not beyond, and at equal
//! size a deeper model is never worse, only slower. `penalty` defaults to 0.5
//! (16 layers then count as 85% of their parameters). It is a proxy, not a
//! score: every output labels it so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::arch::{Accounting, Shape};

/// Chinchilla's A (arXiv 2203.15556, eq. 10).
pub const CHINCHILLA_A: f64 = 406.4;
/// Chinchilla's alpha.
pub const CHINCHILLA_ALPHA: f64 = 0.34;

/// Proxy settings, as written under `[capability]` in a sweep file.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProxySettings {
    /// Depth beyond which more layers stop helping (L*).
    #[serde(default = "default_optimal_layers")]
    pub optimal_layers: u32,
    /// Strength of the shallow-model penalty.
    #[serde(default = "default_penalty", deserialize_with = "crate::config::finite")]
    pub depth_penalty: f64,
}

fn default_optimal_layers() -> u32 {
    28
}
fn default_penalty() -> f64 {
    0.5
}

impl Default for ProxySettings {
    fn default() -> Self {
        ProxySettings { optimal_layers: default_optimal_layers(), depth_penalty: default_penalty() }
    }
}

/// A capability value and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capability {
    /// Higher is better.
    pub score: f64,
    /// "proxy: …" or "measured: …".
    pub source: String,
}

/// The proxy score of a shape.
pub fn proxy(shape: &Shape, acct: &Accounting, s: &ProxySettings) -> f64 {
    let n = acct.params_non_embedding as f64;
    let l = shape.layers as f64;
    let lstar = s.optimal_layers as f64;
    let factor = if l < lstar { (-s.depth_penalty * (lstar / l).ln().powi(2)).exp() } else { 1.0 };
    100.0 * (-CHINCHILLA_A / (n * factor).powf(CHINCHILLA_ALPHA)).exp()
}

/// The label carried by every proxy value.
pub fn proxy_label(s: &ProxySettings) -> String {
    format!(
        "proxy: 100*exp(-A/N_eff^alpha), Chinchilla A=406.4 alpha=0.34 on non-embedding params, depth rule L*={} penalty={}",
        s.optimal_layers, s.depth_penalty
    )
}

/// Measured scores per configuration id, from a CSV file with a header
/// `config_id,score[,source]`.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    map: HashMap<String, (f64, String)>,
    file: PathBuf,
}

/// A scores file is invalid.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ScoresError {
    /// File.
    pub file: String,
    /// 1-based line.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreRow {
    config_id: String,
    score: f64,
    #[serde(default)]
    source: Option<String>,
}

impl Scores {
    /// Read a scores CSV.
    pub fn load(path: &Path) -> Result<Self, ScoresError> {
        let file = path.display().to_string();
        let mut rdr = csv::Reader::from_path(path).map_err(|e| ScoresError {
            file: file.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        let mut map = HashMap::new();
        for row in rdr.deserialize::<ScoreRow>() {
            let row = row.map_err(|e| ScoresError {
                file: file.clone(),
                line: e.position().map_or(0, |p| p.line()),
                message: e.to_string(),
            })?;
            if !row.score.is_finite() {
                return Err(ScoresError {
                    file: file.clone(),
                    line: 0,
                    message: format!("score of {} is not finite", row.config_id),
                });
            }
            let source = row.source.unwrap_or_else(|| format!("scores file {file}"));
            map.insert(row.config_id, (row.score, source));
        }
        Ok(Scores { map, file: path.to_path_buf() })
    }

    /// The measured score of a configuration, if listed.
    pub fn get(&self, id: &str) -> Option<Capability> {
        self.map.get(id).map(|(s, src)| Capability { score: *s, source: format!("measured: {src}") })
    }

    /// Number of scores.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The file read.
    pub fn file(&self) -> &Path {
        &self.file
    }
}

/// Capability of a configuration: the measured score when given, else the proxy.
pub fn capability(shape: &Shape, acct: &Accounting, settings: &ProxySettings, scores: Option<&Scores>) -> Capability {
    scores
        .and_then(|s| s.get(&shape.id()))
        .unwrap_or_else(|| Capability { score: proxy(shape, acct, settings), source: proxy_label(settings) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::preset;

    #[test]
    fn bigger_is_better_and_depth_helps_up_to_lstar() {
        let s = ProxySettings::default();
        let pocket = preset("mnn-pocket-0.3b").unwrap().shape;
        let qwen = preset("qwen3-0.6b").unwrap().shape;
        assert!(proxy(&qwen, &qwen.accounting(), &s) > proxy(&pocket, &pocket.accounting(), &s));
        // Same non-embedding count, 16 vs 28 layers: shallow loses.
        let a = pocket.accounting();
        let mut shallow = pocket;
        shallow.layers = 16;
        assert!(proxy(&shallow, &a, &s) < proxy(&pocket, &a, &s));
        let mut deep = pocket;
        deep.layers = 36;
        assert_eq!(proxy(&deep, &a, &s), proxy(&pocket, &a, &s));
        // Pinned value: 244.1M non-embedding -> 56.4.
        assert!((proxy(&pocket, &a, &s) - 56.4).abs() < 0.1, "{}", proxy(&pocket, &a, &s));
    }

    #[test]
    fn scores_file_replaces_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let pocket = preset("mnn-pocket-0.3b").unwrap().shape;
        let f = dir.path().join("s.csv");
        std::fs::write(&f, format!("config_id,score,source\n{},50.0,11-benchmark average\n", pocket.id())).unwrap();
        let scores = Scores::load(&f).unwrap();
        let c = capability(&pocket, &pocket.accounting(), &ProxySettings::default(), Some(&scores));
        assert_eq!(c.score, 50.0);
        assert_eq!(c.source, "measured: 11-benchmark average");
        std::fs::write(&f, "config_id,score\nabc,high\n").unwrap();
        let e = Scores::load(&f).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }
}
