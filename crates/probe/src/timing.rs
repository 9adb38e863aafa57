//! The timing loop: warm-up, then repetitions of prefill and greedy decode,
//! each step timed and each generated token kept (hashed into the
//! repetition's output fingerprint), each window's covariates read, a
//! contended repetition retaken where the spec's rule allows, and with
//! `auto` repetitions until the median's interval is as tight as asked.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::drift::{self, Drift};
use crate::engine::EngineError;
use crate::window::{self, Contention, ProcessCovariates};
use crate::{energy, thermal, Engine, ProbeError, ProbeSpec, Rep};

/// Repeat until the 95% interval of the median decode speed is within
/// ±`precision` of it, or a cap is hit (hyperfine's `--min-runs` and
/// `--max-runs`, criterion's measurement time). The spec's `reps` is the
/// minimum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoReps {
    /// Half-width of the interval / median to reach: 0.02 for ±2%.
    pub precision: f64,
    /// Repetitions at most (counting only those summarized).
    pub max_reps: u32,
    /// Seconds of repetitions at most.
    pub max_seconds: f64,
}

impl Default for AutoReps {
    fn default() -> Self {
        AutoReps { precision: 0.02, max_reps: 30, max_seconds: 60.0 }
    }
}

/// How the repetitions were taken: counts, and where repetitions were
/// automatic, the precision reached and what stopped them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Repetitions whose window was clean (and kept).
    pub clean: u32,
    /// Contended repetitions kept because no retake was left.
    pub contended: u32,
    /// Contended or drifted repetitions retaken (kept in `reps`, not
    /// summarized).
    pub retaken: u32,
    /// Drifted repetitions (the bandwidth moved under them) kept because
    /// no retake was left.
    #[serde(default)]
    pub drifted: u32,
    /// The target half-width of the median's 95% interval, with `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_target: Option<f64>,
    /// The half-width reached / median, where 2 or more were kept, widened
    /// for the repetitions' [`lag1`] autocorrelation (see
    /// [`relative_half_width`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_reached: Option<f64>,
    /// The lag-1 autocorrelation of the kept repetitions' decode speeds in
    /// the order taken, where [`MIN_LAG1_REPS`] were kept: how far each
    /// repetition told the next one's stretch of the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autocorrelation: Option<f64>,
    /// What ended the repetitions: "reps" (the fixed count), "precision",
    /// "max reps" or "time cap".
    pub stopped_by: String,
}

/// One run's decode: the time of each step, the tokens generated.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    /// Microseconds of each decode step (the inter-token latencies).
    pub steps_us: Vec<u32>,
    /// Every generated token, the prefill's first included.
    pub tokens: Vec<u32>,
}

impl Trace {
    /// The output fingerprint: FNV-1a of the tokens' little-endian bytes.
    pub fn hash(&self) -> String {
        let bytes: Vec<u8> = self.tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        format!("{:016x}", pocketbench_types::fnv1a(&bytes))
    }
}

/// Set by an embedding app ([`request_cancel`]); the decode loop checks it
/// between tokens.
static CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ask a running probe to stop: it returns [`ProbeError::Cancelled`] before
/// its next token. Safe from any thread.
pub fn request_cancel() {
    CANCEL.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Forget an earlier cancel request (a new run starts).
pub fn clear_cancel() {
    CANCEL.store(false, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn cancelled() -> bool {
    CANCEL.load(std::sync::atomic::Ordering::Relaxed)
}

/// The timed decode loop: `gen` greedy steps from position `offset`, each
/// fed the previous token; returns seconds. One clock read per token, the
/// token kept, and one virtual call per token are all it adds to the
/// engine's own work (the `decode` benchmark times it around an engine
/// that does nothing).
pub fn decode_loop(
    m: &mut dyn Engine,
    next: &mut u32,
    offset: usize,
    gen: u32,
    trace: &mut Trace,
) -> Result<f64, ProbeError> {
    let t0 = Instant::now();
    let mut prev = t0;
    for i in 0..gen as usize {
        if cancelled() {
            return Err(ProbeError::Cancelled);
        }
        *next = m.step(&[*next], offset + i)?;
        let now = Instant::now();
        trace.steps_us.push((now - prev).as_micros().min(u32::MAX as u128) as u32);
        trace.tokens.push(*next);
        prev = now;
    }
    Ok((prev - t0).as_secs_f64())
}

/// A test hook: `POCKETBENCH_INJECT_WRONG_TOKEN=R` replaces the first
/// decode step's token of repetition R (0-based) by the next id, as one
/// changed logit would, so the tests can see that a wrong output is
/// caught. The result's methods say when it was set.
pub const INJECT_WRONG_TOKEN: &str = "POCKETBENCH_INJECT_WRONG_TOKEN";

struct Faulty<'a> {
    inner: &'a mut dyn Engine,
    armed: bool,
    vocab: u32,
}

impl Engine for Faulty<'_> {
    fn reset(&mut self) -> Result<(), EngineError> {
        self.inner.reset()
    }
    fn step(&mut self, tokens: &[u32], offset: usize) -> Result<u32, EngineError> {
        let t = self.inner.step(tokens, offset)?;
        if self.armed && tokens.len() == 1 {
            self.armed = false;
            return Ok((t + 1) % self.vocab);
        }
        Ok(t)
    }
}

/// The repetition to inject a wrong token into, if asked.
pub fn injected_rep() -> Option<u32> {
    std::env::var(INJECT_WRONG_TOKEN).ok()?.trim().parse().ok()
}

/// Run the workload once; returns (prefill, ttft, decode) seconds.
fn run_once(m: &mut dyn Engine, tokens: &[u32], gen: u32, trace: &mut Trace) -> Result<(f64, f64, f64), ProbeError> {
    m.reset()?;
    let t0 = Instant::now();
    let mut next = m.step(tokens, 0)?;
    let prefill = t0.elapsed().as_secs_f64();
    let ttft = prefill; // the first token is the argmax of the prefill's logits
    trace.tokens.push(next);
    let decode = decode_loop(m, &mut next, tokens.len(), gen, trace)?;
    Ok((prefill, ttft, decode))
}

/// The half-width of the 95% interval of the median of `v`, over it,
/// widened where the repetitions, in the order taken, follow one another
/// ([`lag1`]).
///
/// The interval of a median assumes independent samples. On a shared VM
/// they are not: the machine's bandwidth moves over seconds, longer than a
/// repetition, so neighbours read alike (lag-1 autocorrelation 0.6 over
/// 320 repetitions of MNN-Pocket at 1+128, Zen 4, 2026-12-07), and six
/// repetitions caught in one stretch looked ±2% precise while fresh
/// processes lay 10% apart. A series whose neighbours correlate by `rho`
/// holds about `n (1 - rho) / (1 + rho)` independent samples (the AR(1)
/// variance inflation, as in simulation output analysis), so the interval
/// is widened by `sqrt((1 + rho) / (1 - rho))`: the rule then repeats
/// until the repetitions have seen the machine move, and stops as soon as
/// before on a steady one (there `rho` is about zero and no widening is
/// made).
pub fn relative_half_width(v: &[f64]) -> Option<f64> {
    let s = pocketbench_types::stats::Sample::new(v.to_vec()).ok()?;
    let (lo, hi) = s.median_ci95();
    let rho = lag1(v).unwrap_or(0.0).clamp(0.0, MAX_LAG1);
    Some((hi - lo) / 2.0 / s.median() * ((1.0 + rho) / (1.0 - rho)).sqrt())
}

/// The fewest repetitions a lag-1 autocorrelation is estimated from (the
/// default `--min-reps`); below it the interval is not widened.
pub const MIN_LAG1_REPS: usize = 6;

/// The largest autocorrelation the interval is widened for (a factor of
/// 4.4): beyond it one stretch of the machine is all the series holds, and
/// the caps, not the interval, end it.
pub const MAX_LAG1: f64 = 0.9;

/// The lag-1 autocorrelation of `v` in the order taken (the sum of
/// neighbours' products about the mean over the sum of squares), where it
/// has [`MIN_LAG1_REPS`] values that are not all equal.
pub fn lag1(v: &[f64]) -> Option<f64> {
    if v.len() < MIN_LAG1_REPS {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let c0: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
    let c1: f64 = v.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    (c0 > 0.0).then(|| c1 / c0)
}

/// When to stop: the repetitions kept (summarized) so far decide.
fn stop(spec: &ProbeSpec, kept: &[f64], started: Instant) -> Option<&'static str> {
    let n = kept.len() as u32;
    let Some(auto) = spec.auto else { return (n >= spec.reps).then_some("reps") };
    if n < spec.reps.max(2) {
        return None;
    }
    if relative_half_width(kept).is_some_and(|w| w <= auto.precision) {
        Some("precision")
    } else if n >= auto.max_reps {
        Some("max reps")
    } else if started.elapsed().as_secs_f64() >= auto.max_seconds {
        Some("time cap")
    } else {
        None
    }
}

/// The engine-independent part of a probe: warm-up, the idle draw, timed
/// repetitions (each after cooling down where the spec asks, with energy,
/// temperatures and the window's covariates around it; a contended one
/// retaken while the rule allows) until [`stop`] says so, the peak read
/// before any reload, then the timed reloads that give the later
/// repetitions their load time.
pub(crate) fn measure(
    spec: &ProbeSpec,
    m: &mut dyn Engine,
    first_load_s: f64,
    reload: &mut dyn FnMut() -> Result<f64, EngineError>,
    energy: &mut energy::Session,
) -> Result<Measured, ProbeError> {
    let tokens = crate::prompt(spec, spec.workload.prompt);
    if let Some(soak) = spec.soak {
        return soak_measure(spec, soak, m, first_load_s, energy, &tokens);
    }
    // Warm up with one short run so first-touch page faults and lazy
    // initialisation are not timed.
    run_once(m, &tokens[..tokens.len().min(16)], spec.workload.gen.min(4), &mut Trace::default())?;
    let weights = std::fs::metadata(&spec.model).map_or(0, |m| m.len());
    let covariates = ProcessCovariates::read(weights, crate::kernels::pinning());
    // Where the platform keeps no peak of its own (an Apple kernel before
    // revision 3 of task_vm_info), the largest reading after the load, the
    // warm-up and every repetition stands for it.
    let mut sampled_peak = crate::meter::usage().map_or(0, |u| u.current);
    energy.idle(energy::IDLE_WINDOW);
    let zones = thermal::zones_root();
    let rule: Option<Contention> = spec.contention;
    let mut retakes_left = rule.map_or(0, |r| r.retakes);
    let inject = injected_rep();
    let mut reps: Vec<Rep> = Vec::with_capacity(spec.reps as usize);
    let mut kept: Vec<f64> = Vec::new();
    let threads = spec.threads as usize;
    let weight_bytes: u64 = m.weights().iter().map(|w| std::mem::size_of_val(*w) as u64).sum();
    // Weights the caches hold are not read: their passes would time the
    // caches and the threads' start, not the machine's memory (and the
    // threads' wake-up would skew the short window that follows).
    let read_drift = weight_bytes >= drift::MIN_READ_BYTES;
    let max_drift = rule.map(|r| r.max_drift);
    let mut counts = Sampling::default();
    let started = Instant::now();
    let stopped_by = loop {
        if let Some(why) = stop(spec, &kept, started) {
            break why;
        }
        if reps.len() as u32 >= crate::MAX_REPS {
            break "max reps";
        }
        let mut heat = thermal::before_rep(&zones, spec.cooling, thermal::POLL);
        let app_start = thermal::app_state();
        let mut trace = Trace::default();
        let bw_before = if read_drift { drift::read(&m.weights(), threads, drift::PASSES) } else { 0.0 };
        let win = window::start();
        energy.start();
        let (prefill_s, ttft_s, decode_s) = {
            let mut faulty = Faulty { inner: m, armed: inject == Some(reps.len() as u32), vocab: spec.shape.vocab };
            run_once(&mut faulty, &tokens, spec.workload.gen, &mut trace)?
        };
        let reading = energy.stop();
        let window = win.end(rule.as_ref());
        let bw_after = if read_drift { drift::read(&m.weights(), threads, drift::PASSES) } else { 0.0 };
        thermal::after_rep(&zones, &mut heat);
        let app_thermal = app_start.zip(thermal::app_state()).map(|(start, end)| thermal::AppThermal { start, end });
        let decode_tok_s = spec.workload.gen as f64 / decode_s;
        let drift = (bw_before > 0.0 && bw_after > 0.0)
            .then(|| Drift::new(bw_before, bw_after, decode_tok_s, weight_bytes, max_drift));
        let drifted = drift.is_some_and(|d| d.drifted);
        let bad = window.contended || drifted;
        sampled_peak = sampled_peak.max(crate::meter::usage().map_or(0, |u| u.current));
        let retaken = bad && retakes_left > 0;
        if retaken {
            counts.retaken += 1;
            retakes_left -= 1;
        } else {
            counts.clean += u32::from(!bad);
            counts.contended += u32::from(window.contended);
            counts.drifted += u32::from(drifted);
        }
        if !retaken {
            kept.push(decode_tok_s);
        }
        let tokens_hash = Some(trace.hash());
        let tokens = if reps.is_empty() { trace.tokens } else { Vec::new() };
        reps.push(Rep {
            load_s: Some(first_load_s),
            prefill_s,
            ttft_s,
            decode_s,
            prefill_tok_s: spec.workload.prompt as f64 / prefill_s,
            decode_tok_s,
            energy: reading,
            thermal: heat,
            tokens_hash,
            tokens,
            itl_us: trace.steps_us,
            window: Some(window),
            drift,
            app_thermal,
            retaken,
        });
    };
    // The peak is read before any reload: a second model in the process, or
    // the allocator's reuse of a freed one, is not what an app pays.
    let peak = crate::meter::usage().map_or(0, |u| u.peak).max(sampled_peak);
    // One timed reload for each summarized repetition after the first; a
    // retaken one keeps the first load's time (it is no figure's sample).
    if spec.timed_reloads {
        for rep in reps.iter_mut().filter(|r| !r.retaken).skip(1) {
            rep.load_s = Some(reload()?);
        }
    }
    let sampling = Sampling {
        precision_target: spec.auto.map(|a| a.precision),
        precision_reached: relative_half_width(&kept),
        autocorrelation: lag1(&kept),
        stopped_by: stopped_by.into(),
        ..counts
    };
    Ok(Measured { reps, peak, sampling, covariates, soak: None })
}

/// [`measure`] for a soak: the same warm-up, then the soak's cycles in
/// place of repetitions (none retaken: a soak's point is that it does not
/// stop), the peak read after them.
fn soak_measure(
    spec: &ProbeSpec,
    soak: crate::soak::SoakSpec,
    m: &mut dyn Engine,
    first_load_s: f64,
    energy: &mut energy::Session,
    tokens: &[u32],
) -> Result<Measured, ProbeError> {
    run_once(m, &tokens[..tokens.len().min(16)], spec.workload.gen.min(4), &mut Trace::default())?;
    let weights = std::fs::metadata(&spec.model).map_or(0, |m| m.len());
    let covariates = ProcessCovariates::read(weights, crate::kernels::pinning());
    energy.idle(energy::IDLE_WINDOW);
    let (reps, soaked) = crate::soak::run(spec, soak, m, first_load_s, energy)?;
    if reps.is_empty() {
        return Err(ProbeError::Spec(format!(
            "the soak ended after {:.1} s before one run of the workload ({}) was complete: give it more --seconds",
            soaked.seconds_run, spec.workload
        )));
    }
    let peak = crate::meter::usage().map_or(0, |u| u.peak.max(u.current));
    let sampling = Sampling { clean: reps.len() as u32, stopped_by: "soak".into(), ..Sampling::default() };
    Ok(Measured { reps, peak, sampling, covariates, soak: Some(soaked) })
}

/// What [`measure`] took.
pub(crate) struct Measured {
    pub reps: Vec<Rep>,
    /// VmHWM after the repetitions, bytes.
    pub peak: u64,
    pub sampling: Sampling,
    /// Read after the warm-up, before any reload.
    pub covariates: ProcessCovariates,
    /// A soak's windows, where the spec asked for one.
    pub soak: Option<crate::soak::Soak>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An engine whose decode speed is drawn from a noisy source: each step
    /// spins a base time times a factor that `noise` draws.
    struct Noisy {
        base_us: u64,
        rng: rand::rngs::StdRng,
        spread: f64,
    }

    impl Engine for Noisy {
        fn reset(&mut self) -> Result<(), EngineError> {
            Ok(())
        }
        fn step(&mut self, tokens: &[u32], _: usize) -> Result<u32, EngineError> {
            use rand::Rng;
            let f = 1.0 + self.spread * (self.rng.random::<f64>() - 0.5);
            // Spun, not slept: a sleep's wake-up lands tens of microseconds
            // late by the scheduler's whim, which made the "quiet" source
            // noisy enough under a loaded machine to miss ±2% in 12
            // repetitions.
            let until = std::time::Instant::now() + std::time::Duration::from_micros((self.base_us as f64 * f) as u64);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            Ok(tokens[tokens.len() - 1].wrapping_mul(31).wrapping_add(7) % 1000)
        }
    }

    pub(crate) fn spec(reps: u32, auto: Option<AutoReps>) -> ProbeSpec {
        let shape = pocketbench_types::arch::preset("smollm2-135m").unwrap().shape;
        ProbeSpec {
            schema: crate::SCHEMA,
            shape,
            model: "unused.gguf".into(),
            workload: pocketbench_types::workload::Workload::new(4, 8, None).unwrap(),
            reps,
            threads: 1,
            seed: 3,
            engine: crate::EngineKind::Native,
            timeout_s: None,
            cooling: None,
            contention: None,
            auto,
            pin: false,
            bandwidth_pass: true,
            timed_reloads: true,
            soak: None,
        }
    }

    fn run(spec: &ProbeSpec, spread: f64) -> (Vec<Rep>, Sampling) {
        use rand::SeedableRng;
        let mut m = Noisy { base_us: 2000, rng: rand::rngs::StdRng::seed_from_u64(9), spread };
        let mut energy = energy::Session::new(None, Some("test".into()));
        let got = measure(spec, &mut m, 0.0, &mut || Ok(0.0), &mut energy).unwrap();
        (got.reps, got.sampling)
    }

    #[test]
    fn every_step_is_timed_and_every_token_hashed() {
        let (reps, s) = run(&spec(3, None), 0.0);
        assert_eq!((reps.len(), s.clean + s.contended, s.stopped_by.as_str()), (3, 3, "reps"));
        for r in &reps {
            assert_eq!(r.itl_us.len(), 8);
            assert!(r.itl_us.iter().all(|us| *us >= 2000), "{:?}", r.itl_us);
            let sum: f64 = r.itl_us.iter().map(|u| *u as f64).sum::<f64>() / 1e6;
            assert!((sum - r.decode_s).abs() < 8e-6 * 2.0, "{sum} vs {}", r.decode_s);
        }
        let hashes: Vec<_> = reps.iter().map(|r| r.tokens_hash.clone().unwrap()).collect();
        assert!(hashes.windows(2).all(|w| w[0] == w[1]), "{hashes:?}");
    }

    #[test]
    fn auto_repetitions_stop_at_the_precision_on_a_quiet_source() {
        // The rule itself on synthetic samples: a wall-clock "quiet" engine
        // is only as quiet as the machine running the tests, and a loaded
        // CI machine made it miss ±2%.
        let auto = AutoReps { precision: 0.02, max_reps: 12, max_seconds: 60.0 };
        let s = spec(3, Some(auto));
        let now = Instant::now();
        let quiet = [1.000, 1.004, 0.998, 1.002, 1.001];
        assert_eq!(stop(&s, &quiet[..2], now), None, "fewer than the minimum");
        assert_eq!(stop(&s, &quiet, now), Some("precision"));
        let wide = [1.0, 1.3, 0.8, 1.2, 0.9];
        assert_eq!(stop(&s, &wide, now), None, "{:?}", relative_half_width(&wide));
        assert_eq!(stop(&s, &[wide.as_slice(); 3].concat()[..12], now), Some("max reps"));
        assert_eq!(stop(&spec(3, None), &wide[..3], now), Some("reps"));
    }

    #[test]
    fn repetitions_that_follow_one_another_are_not_taken_for_precision() {
        // The same eight speeds, ±1.5% about 1: taken in alternation they
        // are independent-looking and precise enough; taken as a slow
        // stretch then a fast one (a machine that moved once) their
        // neighbours correlate, so they hold fewer independent samples
        // and the rule repeats on.
        let auto = AutoReps { precision: 0.02, max_reps: 30, max_seconds: 60.0 };
        let s = spec(6, Some(auto));
        let now = Instant::now();
        let alternating = [0.985, 1.008, 0.988, 1.010, 0.990, 1.012, 0.992, 1.015];
        let stretches = [0.985, 0.988, 0.990, 0.992, 1.008, 1.010, 1.012, 1.015];
        assert!(lag1(&alternating).unwrap() < 0.0);
        let rho = lag1(&stretches).unwrap();
        assert!((rho - 696.0 / 1066.0).abs() < 1e-9, "{rho}");
        assert_eq!(stop(&s, &alternating, now), Some("precision"), "{:?}", relative_half_width(&alternating));
        assert_eq!(stop(&s, &stretches, now), None, "{:?}", relative_half_width(&stretches));
        let widened = relative_half_width(&stretches).unwrap() / relative_half_width(&alternating).unwrap();
        assert!((widened - ((1.0 + rho) / (1.0 - rho)).sqrt()).abs() < 1e-9, "{widened}");
        assert_eq!(lag1(&stretches[..5]), None, "too few to estimate");
        assert_eq!(lag1(&[1.0; 8]), None, "no spread");
    }

    #[test]
    fn auto_repetitions_stop_at_the_cap_on_a_noisy_source() {
        let auto = AutoReps { precision: 0.02, max_reps: 12, max_seconds: 60.0 };
        let (noisy, s) = run(&spec(3, Some(auto)), 3.0);
        assert_eq!((noisy.len(), s.stopped_by.as_str()), (12, "max reps"), "{s:?}");
        assert!(s.precision_reached.unwrap() > 0.02, "{s:?}");
        let capped = AutoReps { max_seconds: 0.0, ..auto };
        assert_eq!(run(&spec(3, Some(capped)), 3.0).1.stopped_by, "time cap");
    }

    #[test]
    fn a_contended_window_is_retaken_within_the_bound_and_counted() {
        // A rule every window breaks: each repetition is contended.
        let mut s = spec(2, None);
        s.contention = Some(Contention {
            max_steal_share: -1.0,
            max_other_share: -1.0,
            max_cpu_pressure: -1.0,
            max_run_delay: -1.0,
            max_drift: 1.0,
            retakes: 3,
        });
        let (reps, got) = run(&s, 0.0);
        // Windows this short are judged by CPU pressure, where PSI exists.
        if !std::path::Path::new("/proc/pressure/cpu").exists() {
            return;
        }
        assert_eq!((got.clean, got.contended, got.retaken), (0, 2, 3), "{got:?}");
        assert_eq!(reps.len(), 5);
        assert_eq!(reps.iter().filter(|r| r.retaken).count(), 3);
        assert!(reps[..3].iter().all(|r| r.retaken) && !reps[3].retaken);
    }
}
