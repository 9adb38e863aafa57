//! The workload a configuration is judged on: one run = prefill of `prompt`
//! tokens, then `gen` generated tokens, with a KV cache sized for `context`.

use serde::{Deserialize, Serialize};

/// Prompt tokens in the reference run (`published.md`: 1024 in / 128 out).
pub const DEFAULT_PROMPT: u32 = 1024;
/// Generated tokens in the reference run.
pub const DEFAULT_GEN: u32 = 128;
/// Largest token count accepted for either phase.
pub const MAX_TOKENS: u32 = 1 << 20;
/// Prompts shorter than this give no prefill figure worth fitting or
/// gating: their prefill is a memory-bound pass over the weights, not the
/// compute branch of the roofline.
pub const MIN_PREFILL_PROMPT: u32 = 64;

/// A validated workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Prompt tokens prefilled.
    pub prompt: u32,
    /// Tokens generated one at a time.
    pub gen: u32,
    /// KV-cache capacity in positions (at least prompt + gen).
    pub context: u32,
}

/// The workload as written in TOML (every field optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkloadSpec {
    /// Prompt tokens (default 1024).
    pub prompt: Option<u32>,
    /// Generated tokens (default 128).
    pub gen: Option<u32>,
    /// KV capacity (default prompt + gen).
    pub context: Option<u32>,
}

/// Why a workload is impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// Zero tokens in a phase.
    #[error("{0} tokens must be at least 1")]
    Zero(&'static str),
    /// Too many tokens.
    #[error("{what} = {value} tokens is beyond the limit of {MAX_TOKENS}")]
    TooMany {
        /// Which phase.
        what: &'static str,
        /// The count.
        value: u32,
    },
    /// The cache cannot hold the run.
    #[error("context ({context}) must hold prompt + gen = {need} tokens")]
    ContextTooSmall {
        /// Given context.
        context: u32,
        /// prompt + gen.
        need: u32,
    },
}

impl WorkloadSpec {
    /// Fill defaults and validate.
    pub fn resolve(&self) -> Result<Workload, WorkloadError> {
        Workload::new(self.prompt.unwrap_or(DEFAULT_PROMPT), self.gen.unwrap_or(DEFAULT_GEN), self.context)
    }

    /// Values set in `over` replace those in `self`.
    pub fn overridden_by(&self, over: &WorkloadSpec) -> WorkloadSpec {
        WorkloadSpec {
            prompt: over.prompt.or(self.prompt),
            gen: over.gen.or(self.gen),
            context: over.context.or(self.context),
        }
    }

    /// Resolve with unset fields taken from `base` (a workload spec itself).
    pub fn resolve_over(&self, base: &WorkloadSpec) -> Result<Workload, WorkloadError> {
        base.overridden_by(self).resolve()
    }
}

impl Workload {
    /// Validate a workload; `context` defaults to prompt + gen.
    pub fn new(prompt: u32, gen: u32, context: Option<u32>) -> Result<Self, WorkloadError> {
        for (what, v) in [("prompt", prompt), ("gen", gen)] {
            if v == 0 {
                return Err(WorkloadError::Zero(what));
            }
            if v > MAX_TOKENS {
                return Err(WorkloadError::TooMany { what, value: v });
            }
        }
        let need = prompt + gen;
        let context = context.unwrap_or(need);
        if context < need {
            return Err(WorkloadError::ContextTooSmall { context, need });
        }
        Ok(Workload { prompt, gen, context })
    }

    /// The reference run: 1024 prompt + 128 generated.
    pub fn reference() -> Self {
        Workload { prompt: DEFAULT_PROMPT, gen: DEFAULT_GEN, context: DEFAULT_PROMPT + DEFAULT_GEN }
    }

    /// Mean context length seen by the decode steps: step i (0-based) attends
    /// over prompt + i positions, so the mean is prompt + (gen - 1) / 2.
    pub fn mean_decode_context(&self) -> f64 {
        self.prompt as f64 + (self.gen as f64 - 1.0) / 2.0
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{} prompt + {} generated", self.prompt, self.gen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors() {
        let w = WorkloadSpec::default().resolve().unwrap();
        assert_eq!(w, Workload::reference());
        assert_eq!(w.context, 1152);
        assert_eq!(Workload::new(0, 1, None).unwrap_err().to_string(), "prompt tokens must be at least 1");
        assert_eq!(
            Workload::new(512, 128, Some(600)).unwrap_err().to_string(),
            "context (600) must hold prompt + gen = 640 tokens"
        );
        assert!(Workload::new(MAX_TOKENS + 1, 1, None).is_err());
    }
}
