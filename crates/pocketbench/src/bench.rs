//! `bench repeatability`: how far one job's result moves between fresh
//! processes, and how much of that is the machine.
//!
//! A measurement is only as good as the next one agrees with it. This runs
//! one job in N fresh probe processes (each loads, warms up and repeats as
//! the job says) and reports each process's median decode speed, its
//! median efficiency (decode's share of the same-moment bandwidth of the
//! weights' memory, [`crate::probe::drift`]) and the bandwidth its passes
//! saw; then the coefficient of variation of the medians across processes,
//! and of the medians taken to one reference bandwidth through a fit of
//! every repetition's time against its same-moment bandwidth
//! ([`crate::trust::BandwidthFit`]): what is left when the machine's moves
//! are taken out.
//! Where a reference engine is given (llama.cpp's `llama-bench` on the
//! same exported GGUF), its processes run in turns with ours, in the same
//! minutes, so the two CVs describe the same machine.

use serde::Serialize;

use crate::device::Device;
use crate::event::{Event, Reporter};
use crate::record::Record;
use crate::runner::{Job, Runner};
use crate::schedule::{Attempted, Policy, Retry, Scheduler};
use crate::trust::BandwidthFit;

/// One process of one engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessRow {
    /// The engine that ran (name and version).
    pub engine: String,
    /// Median decode tok/s of the process's summarized repetitions.
    pub decode_tok_s: f64,
    /// Repetitions summarized.
    pub reps: usize,
    /// Half-width of the median's 95% interval / median, where known.
    pub precision: Option<f64>,
    /// Median efficiency, where the engine's weights could be read.
    pub efficiency: Option<f64>,
    /// Lowest and highest same-moment bandwidth pass, GB/s.
    pub bandwidth_gb_s: Option<[f64; 2]>,
    /// Kept contended repetitions.
    pub contended: bool,
    /// Kept drifted repetitions.
    pub drifted: bool,
    /// Median decode tok/s at the series' reference bandwidth
    /// ([`crate::trust::BandwidthFit`]), where a fit could be made.
    pub adjusted_tok_s: Option<f64>,
    /// The kernels the process chose at start-up (the head of its
    /// `methods.kernels`, without the timings), where the engine records
    /// them: processes that chose differently are not one engine.
    pub kernels: Option<String>,
    /// (tok/s, same-moment GB/s) of the summarized repetitions.
    #[serde(skip)]
    kept: Vec<(f64, f64)>,
    /// The same of every repetition, retaken ones included.
    #[serde(skip)]
    all: Vec<(f64, f64)>,
}

impl ProcessRow {
    fn of(r: &Record) -> Option<ProcessRow> {
        let m = r.measurement.as_ref()?;
        Some(ProcessRow {
            engine: r.engine.clone(),
            decode_tok_s: m.decode.median,
            reps: m.decode.n,
            precision: m.probe.sampling.as_ref().and_then(|s| s.precision_reached),
            efficiency: m.decode_efficiency.map(|e| e.median),
            bandwidth_gb_s: m.moment_bandwidth_gb_s,
            contended: m.contended,
            drifted: m.drifted,
            adjusted_tok_s: None,
            kernels: m.probe.methods.get("kernels").map(|k| kernels_head(k).to_string()),
            kept: crate::trust::decode_and_bandwidth(&m.probe, false),
            all: crate::trust::decode_and_bandwidth(&m.probe, true),
        })
    }
}

/// The choice in a `methods.kernels` line, without how it was made (the
/// parenthesis of timings that follows it).
pub fn kernels_head(line: &str) -> &str {
    line.split_once(" (").map_or(line, |(head, _)| head)
}

/// One engine's processes and their spread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Each process, in the order run.
    pub processes: Vec<ProcessRow>,
    /// CV of the processes' median decode tok/s (sample standard deviation
    /// over the mean), where 2 or more finished.
    pub cv_decode: Option<f64>,
    /// CV of their median efficiency.
    pub cv_efficiency: Option<f64>,
    /// The lowest and highest bandwidth pass over every process, GB/s.
    pub bandwidth_gb_s: Option<[f64; 2]>,
    /// How decode time followed the same-moment bandwidth over every
    /// repetition of every process, where it could be fitted.
    pub bandwidth_fit: Option<BandwidthFit>,
    /// CV of the processes' median decode at the fit's reference bandwidth.
    pub cv_adjusted: Option<f64>,
    /// Processes that failed, with why.
    pub failed: Vec<String>,
    /// Each start-up kernel choice the processes made and how many made
    /// it, most common first, where they made more than one.
    pub kernel_choices: Vec<(String, usize)>,
}

impl Series {
    fn new() -> Series {
        Series {
            processes: Vec::new(),
            cv_decode: None,
            cv_efficiency: None,
            bandwidth_gb_s: None,
            bandwidth_fit: None,
            cv_adjusted: None,
            failed: Vec::new(),
            kernel_choices: Vec::new(),
        }
    }

    fn finish(&mut self) {
        self.cv_decode = cv(&self.processes.iter().map(|p| p.decode_tok_s).collect::<Vec<_>>());
        let eff: Vec<f64> = self.processes.iter().filter_map(|p| p.efficiency).collect();
        self.cv_efficiency = (eff.len() == self.processes.len()).then(|| cv(&eff)).flatten();
        let bw: Vec<f64> = self.processes.iter().filter_map(|p| p.bandwidth_gb_s).flatten().collect();
        self.bandwidth_gb_s = crate::trust::range(&bw);
        let every: Vec<(f64, f64)> = self.processes.iter().flat_map(|p| p.all.iter().copied()).collect();
        self.bandwidth_fit = BandwidthFit::of(&every);
        let mut choices: Vec<(String, usize)> = Vec::new();
        for k in self.processes.iter().filter_map(|p| p.kernels.as_ref()) {
            match choices.iter_mut().find(|(c, _)| c == k) {
                Some((_, n)) => *n += 1,
                None => choices.push((k.clone(), 1)),
            }
        }
        choices.sort_by_key(|c| std::cmp::Reverse(c.1));
        self.kernel_choices = if choices.len() > 1 { choices } else { Vec::new() };
        if let Some(f) = self.bandwidth_fit {
            for p in &mut self.processes {
                let at: Vec<f64> = p.kept.iter().map(|(t, bw)| f.adjust(*t, *bw)).collect();
                p.adjusted_tok_s = (!at.is_empty()).then(|| crate::stats::median(&at));
            }
            let adj: Vec<f64> = self.processes.iter().filter_map(|p| p.adjusted_tok_s).collect();
            self.cv_adjusted = (adj.len() == self.processes.len()).then(|| cv(&adj)).flatten();
        }
    }
}

/// What `bench repeatability` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeatability {
    /// Device id.
    pub device: String,
    /// Configuration name.
    pub config: String,
    /// Workload ("1+128").
    pub workload: String,
    /// Threads.
    pub threads: u32,
    /// The job's engine.
    pub ours: Series,
    /// The reference engine in turns with it, where one was given.
    pub reference: Option<Series>,
}

/// The coefficient of variation (sample standard deviation / mean) of
/// `v`; `None` below 2 values.
pub fn cv(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean)
}

/// Run `job` in `processes` fresh processes on `runner`, each followed by
/// `reference` (the same job through another engine) where given. A
/// process that fails is retried once, then recorded and skipped.
pub fn repeatability(
    runner: &dyn Runner,
    device: &Device,
    job: &Job,
    reference: Option<&Job>,
    processes: usize,
    reporter: &mut dyn Reporter,
) -> Repeatability {
    let policy = Policy { retries: 1, retry: Retry::Any, backoff: false, ..Policy::sweep(0) };
    let scheduler = Scheduler::new(runner, device, policy);
    let acct = job.shape.accounting();
    let cap = crate::capability::capability(&job.shape, &acct, &crate::capability::ProxySettings::default(), None);
    let (mut ours, mut theirs) = (Series::new(), reference.map(|_| Series::new()));
    for i in 0..processes {
        let arms = std::iter::once(("ours", job, &mut ours))
            .chain(reference.zip(theirs.as_mut()).map(|(j, s)| ("reference", j, s)));
        for (arm, j, series) in arms {
            match scheduler.run(j, &cap, reporter) {
                Attempted::Measured { record, .. } => {
                    if let Some(row) = ProcessRow::of(&record) {
                        reporter.report(&Event::ProcessMeasured {
                            device: device.id().into(),
                            arm: arm.into(),
                            index: i + 1,
                            total: processes,
                            engine: row.engine.clone(),
                            decode_tok_s: row.decode_tok_s,
                            efficiency: row.efficiency,
                            bandwidth_gb_s: row.bandwidth_gb_s,
                        });
                        series.processes.push(row);
                    }
                }
                Attempted::Failed { failure, attempts } => {
                    reporter.report(&Event::Failed {
                        device: device.id().into(),
                        config: j.shape.to_string(),
                        reason: failure.to_string(),
                        attempts,
                    });
                    series.failed.push(failure.to_string());
                }
                Attempted::TooHot { celsius } => series.failed.push(format!("too hot to start ({celsius:.1} C)")),
            }
        }
    }
    ours.finish();
    if let Some(t) = theirs.as_mut() {
        t.finish();
    }
    Repeatability {
        device: device.id().into(),
        config: job.shape.to_string(),
        workload: job.workload.to_string(),
        threads: job.threads,
        ours,
        reference: theirs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cv_is_the_sample_deviation_over_the_mean() {
        assert_eq!(cv(&[1.0]), None);
        let c = cv(&[9.0, 10.0, 11.0]).unwrap();
        assert!((c - 0.1).abs() < 1e-12, "{c}");
        assert_eq!(cv(&[5.0, 5.0]), Some(0.0));
    }

    #[test]
    fn a_kernels_line_is_cut_before_its_timings() {
        let line = "avx512-vnni matrix-vector, prefetch off, avx512-vnni-16row prefill tiles, 512-bit attention \
                    (timed at start-up, the default unless another was 3% faster on 2 thread(s): per 8x32 block avx2 1.00 ns)";
        assert_eq!(
            kernels_head(line),
            "avx512-vnni matrix-vector, prefetch off, avx512-vnni-16row prefill tiles, 512-bit attention"
        );
        assert_eq!(kernels_head("avx2"), "avx2");
    }

    fn row(tok_s: f64, kernels: &str) -> ProcessRow {
        ProcessRow {
            engine: "candle".into(),
            decode_tok_s: tok_s,
            reps: 5,
            precision: None,
            efficiency: None,
            bandwidth_gb_s: None,
            contended: false,
            drifted: false,
            adjusted_tok_s: None,
            kernels: Some(kernels.into()),
            kept: Vec::new(),
            all: Vec::new(),
        }
    }

    #[test]
    fn processes_that_chose_other_kernels_are_counted_most_common_first() {
        let mut s = Series::new();
        s.processes =
            vec![row(330.0, "a, prefetch off"), row(280.0, "a, prefetch 9216 B ahead"), row(331.0, "a, prefetch off")];
        s.finish();
        assert_eq!(
            s.kernel_choices,
            vec![("a, prefetch off".to_string(), 2), ("a, prefetch 9216 B ahead".to_string(), 1)]
        );
        s.processes.remove(1);
        s.finish();
        assert!(s.kernel_choices.is_empty(), "one choice is not worth a line");
    }
}
