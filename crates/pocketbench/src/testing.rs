//! Builders the unit tests share: measured records of tiny shapes with the
//! repetitions a test asks for.

use crate::probe::{BuildInfo, HostFacts, ProbeResult, Rep};
use crate::record::Record;

/// A probe result for `rec`'s workload: one repetition per decode speed.
pub fn probe_for(rec: &Record, reps: &[f64]) -> ProbeResult {
    ProbeResult {
        schema: crate::probe::SCHEMA,
        energy: Default::default(),
        config_id: rec.config_id.clone(),
        engine: "native".into(),
        engine_version: "test".into(),
        workload: crate::workload::Workload::new(rec.prompt_tokens, rec.gen_tokens, None).unwrap(),
        threads: 1,
        warmup: 1,
        reps: reps
            .iter()
            .map(|d| Rep {
                load_s: Some(0.01),
                prefill_s: 0.1,
                ttft_s: 0.11,
                decode_s: rec.gen_tokens as f64 / d,
                prefill_tok_s: 160.0,
                decode_tok_s: *d,
                energy: None,
                thermal: None,
                ..Default::default()
            })
            .collect(),
        baseline_rss_bytes: 1 << 20,
        peak_hwm_bytes: 3 << 20,
        peak_increase_bytes: 2 << 20,
        model_file_bytes: 1 << 20,
        energy_not_measured: Some("no meter here".into()),
        read_bandwidth: None,
        host: HostFacts::collect(),
        device_props: Default::default(),
        build: BuildInfo::current(),
        covariates: None,
        sampling: None,
        methods: Default::default(),
        meters: None,
        soak: None,
    }
}

/// A measured record of a small shape on the built-in `host` profile,
/// `prompt` + `gen` tokens, with these decode speeds.
pub fn measured_record(layers: u32, prompt: u32, gen: u32, decode: &[f64]) -> Record {
    let devices = crate::device::Devices::built_in().unwrap();
    let host = devices.get("host").unwrap();
    let shape =
        crate::arch::Shape { context: prompt + gen, ..crate::arch::presets::s(128, layers, 4, 2, 32, 256, 512, true) };
    let acct = shape.accounting();
    let w = crate::workload::Workload::new(prompt, gen, None).unwrap();
    let cap = crate::capability::Capability { score: 1.0, source: "test".into() };
    let pred = crate::record::predicted(&shape, &acct, host, &w, &cap);
    crate::record::measured(&shape, &acct, host, probe_for(&pred, decode), &cap).unwrap()
}

/// A runner whose every measurement fails with `failure`, counting the
/// calls: a device that went away, or a probe that crashes.
pub struct Failing {
    /// Calls made.
    pub calls: std::sync::atomic::AtomicU32,
    /// What each call fails with.
    pub failure: crate::runner::Failure,
}

impl Failing {
    /// A runner failing with `failure`.
    pub fn new(failure: crate::runner::Failure) -> Self {
        Failing { calls: Default::default(), failure }
    }

    /// Calls made so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl crate::runner::Runner for Failing {
    fn device(&self) -> &str {
        "host"
    }
    fn build(&self, _: crate::probe::EngineKind) -> String {
        "test".into()
    }
    fn measure(&self, _: &crate::runner::Job) -> Result<ProbeResult, crate::runner::Failure> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Err(self.failure.clone())
    }
}
