//! What else the machine did while a repetition ran: the covariates every
//! sample records, so a slow number can be told from a busy machine.
//!
//! Over each repetition's own window the probe reads, where Linux offers
//! them (hosts and Android phones alike, the probe being the process on the
//! device):
//! - `/proc/stat`'s first line: the whole machine's busy and steal time
//!   (USER_HZ ticks, 100 a second on every Linux ABI pocketbench targets);
//! - `/proc/self/task/*/schedstat`: this process's own CPU time and the
//!   time its threads waited on a run queue, in ns;
//! - `/proc/pressure/cpu`'s `some total=` (µs some task waited for a CPU);
//! - each thread's involuntary context switches (`/proc/self/task/*/status`)
//!   and migrations (`se.nr_migrations` of `/proc/self/task/*/sched`, on
//!   kernels built with scheduler debugging), and the CPU it was last on;
//! - the cores' clocks (`cpufreq/scaling_cur_freq`) where readable.
//!
//! Other processes' CPU time is the machine's busy time minus this
//! process's: a share of all CPUs' time over the window. A repetition is
//! [`Window::contended`] when the steal share or that share (in windows
//! long enough for ticks to tell), the CPU pressure, or the share of its
//! threads' runnable time spent waiting for a CPU passes the
//! [`Contention`] rule's threshold; the probe then retakes it (a bounded
//! number of times) in the same process and minutes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// USER_HZ: the unit of `/proc/stat`'s times.
const TICKS_PER_S: f64 = 100.0;

/// Ticks of all CPUs a window needs before its steal and others' shares
/// are judged: at 50 a tick is 2% of the window. Shorter windows (a tiny
/// model's repetition takes milliseconds) are judged by CPU pressure
/// alone, which the kernel counts in microseconds.
const MIN_JUDGED_TICKS: u64 = 50;

/// When a repetition counts as contended, and how often it is retaken.
/// The scheduler's policy sets it in the spec; the probe applies it,
/// because only the probe sees a window while it can still be retaken.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Contention {
    /// Steal (time the hypervisor gave this VM's CPUs to others) above this
    /// share of all CPUs' time in the window.
    pub max_steal_share: f64,
    /// Other processes' CPU time above this share of all CPUs' time.
    pub max_other_share: f64,
    /// Some task waited for a CPU during more than this share of the
    /// window (`/proc/pressure/cpu`), where the kernel has PSI.
    #[serde(default = "default_pressure")]
    pub max_cpu_pressure: f64,
    /// This process's threads waited on a run queue for more than this
    /// share of the time they were runnable (`schedstat`, in ns, so short
    /// windows are judged too).
    #[serde(default = "default_run_delay")]
    pub max_run_delay: f64,
    /// The same-moment bandwidth passes right before and right after a
    /// repetition ([`crate::drift`]) differ by more than this share of
    /// their mean: the machine's bandwidth moved under it (`drifted`).
    #[serde(default = "default_drift")]
    pub max_drift: f64,
    /// Contended repetitions retaken, at most, over the whole probe.
    pub retakes: u32,
}

fn default_pressure() -> f64 {
    0.10
}

fn default_run_delay() -> f64 {
    0.05
}

fn default_drift() -> f64 {
    DEFAULT_MAX_DRIFT
}

/// The default [`Contention::max_drift`]: see its measurement in
/// [`Contention::default`].
pub const DEFAULT_MAX_DRIFT: f64 = 0.10;

impl Default for Contention {
    /// 5% steal, 10% others, 10% CPU pressure or 5% run delay: on a quiet
    /// 2-vCPU VM all stay under 1% (others 0-0.9% and pressure 0.1-0.6% in
    /// the windows of a 2-thread MNN-Pocket decode), and one busy-loop
    /// process alongside takes 34-38% others and 50% pressure (Zen 4 VM,
    /// 2026-12-05).
    fn default() -> Self {
        Contention {
            max_steal_share: 0.05,
            max_other_share: 0.10,
            max_cpu_pressure: 0.10,
            max_run_delay: 0.05,
            max_drift: DEFAULT_MAX_DRIFT,
            retakes: 10,
        }
    }
}

/// The covariates of one repetition's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Wall seconds of the window.
    pub seconds: f64,
    /// CPUs of the machine (`/proc/stat`'s per-CPU lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Steal time / all CPUs' time over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_share: Option<f64>,
    /// Other processes' CPU time / all CPUs' time over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_share: Option<f64>,
    /// This process's CPU time / all CPUs' time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_share: Option<f64>,
    /// Share of the window in which some task waited for a CPU
    /// (`/proc/pressure/cpu`, `some`), where the kernel has PSI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure: Option<f64>,
    /// Time this process's threads waited on a run queue / that plus their
    /// CPU time: how much of the time they could run they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay_share: Option<f64>,
    /// Involuntary context switches of this process's threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_switches: Option<u64>,
    /// Migrations between CPUs of this process's threads, where the kernel
    /// reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// The CPU each thread was last on at the end, by thread (main first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_cpus: Vec<u32>,
    /// Mean clock of those CPUs at the end, MHz, where cpufreq is readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mhz: Option<f64>,
    /// Steal or others above the spec's [`Contention`] thresholds.
    #[serde(default)]
    pub contended: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Ticks {
    busy: u64,
    steal: u64,
    all: u64,
    cpus: u32,
}

#[derive(Debug, Clone, Default)]
struct Threads {
    own_ns: Option<u64>,
    wait_ns: Option<u64>,
    involuntary: Option<u64>,
    migrations: Option<u64>,
}

/// The readings at a window's start.
#[derive(Debug, Clone)]
pub struct Start {
    at: Instant,
    ticks: Option<Ticks>,
    threads: Threads,
    pressure_us: Option<u64>,
}

/// Where the probe reads `/proc`: `/`, or `POCKETBENCH_PROC_ROOT` (tests).
fn proc_root() -> PathBuf {
    std::env::var_os("POCKETBENCH_PROC_ROOT").filter(|v| !v.is_empty()).map_or_else(|| "/proc".into(), Into::into)
}

/// The first line of `/proc/stat` and the number of `cpuN` lines.
fn parse_stat(text: &str) -> Option<Ticks> {
    let mut lines = text.lines();
    let first = lines.next()?;
    let mut f = first.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice]:
    // guest time is already inside user.
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let (user, nice, system, idle, iowait, irq, softirq, steal) =
        (at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7));
    let cpus = lines.filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)).count();
    Some(Ticks {
        busy: user + nice + system + irq + softirq,
        steal,
        all: user + nice + system + idle + iowait + irq + softirq + steal,
        cpus: cpus as u32,
    })
}

/// `some ... total=N` of `/proc/pressure/cpu`, µs.
fn parse_pressure(text: &str) -> Option<u64> {
    let some = text.lines().find(|l| l.starts_with("some"))?;
    some.split_whitespace().find_map(|f| f.strip_prefix("total=")).and_then(|t| t.parse().ok())
}

fn field_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

fn tasks(root: &Path) -> Vec<PathBuf> {
    let mut t: Vec<(u64, PathBuf)> = std::fs::read_dir(root.join("self/task"))
        .map(|d| d.flatten().filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path()))).collect())
        .unwrap_or_default();
    t.sort();
    t.into_iter().map(|(_, p)| p).collect()
}

fn sum<I: Iterator<Item = Option<u64>>>(mut it: I) -> Option<u64> {
    it.try_fold(0u64, |acc, v| v.map(|v| acc + v))
}

fn read_threads(root: &Path) -> Threads {
    let tasks = tasks(root);
    if tasks.is_empty() {
        return Threads::default();
    }
    let read = |p: &PathBuf, f: &str| std::fs::read_to_string(p.join(f)).ok();
    Threads {
        own_ns: sum(tasks.iter().map(|t| read(t, "schedstat")?.split_whitespace().next()?.parse().ok())),
        wait_ns: sum(tasks.iter().map(|t| read(t, "schedstat")?.split_whitespace().nth(1)?.parse().ok())),
        involuntary: sum(tasks
            .iter()
            .map(|t| field_after(&read(t, "status")?, "nonvoluntary_ctxt_switches")?.parse().ok())),
        migrations: sum(tasks.iter().map(|t| field_after(&read(t, "sched")?, "se.nr_migrations")?.parse().ok())),
    }
}

/// The CPU each task was last on: field 39 of `stat`, after the `(comm)`.
fn thread_cpus(root: &Path) -> Vec<u32> {
    tasks(root)
        .iter()
        .filter_map(|t| {
            let s = std::fs::read_to_string(t.join("stat")).ok()?;
            let after = &s[s.rfind(')')? + 1..];
            // Fields from 3 (state) on; the processor is field 39.
            after.split_whitespace().nth(39 - 3).and_then(|c| c.parse().ok())
        })
        .collect()
}

/// Mean `scaling_cur_freq` of `cpus`, MHz, where every one is readable.
fn mean_mhz(cpus: &[u32]) -> Option<f64> {
    if cpus.is_empty() {
        return None;
    }
    let root = crate::meter::sysfs_root().join("sys/devices/system/cpu");
    let khz: Option<Vec<f64>> = cpus
        .iter()
        .map(|c| {
            std::fs::read_to_string(root.join(format!("cpu{c}/cpufreq/scaling_cur_freq")))
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
        })
        .collect();
    khz.map(|k| k.iter().sum::<f64>() / k.len() as f64 / 1e3)
}

/// Start a window now.
pub fn start() -> Start {
    let root = proc_root();
    Start {
        at: Instant::now(),
        ticks: std::fs::read_to_string(root.join("stat")).ok().as_deref().and_then(parse_stat),
        threads: read_threads(&root),
        pressure_us: std::fs::read_to_string(root.join("pressure/cpu")).ok().as_deref().and_then(parse_pressure),
    }
}

impl Start {
    /// End the window now and judge it by `rule` (none: never contended).
    pub fn end(&self, rule: Option<&Contention>) -> Window {
        let root = proc_root();
        let seconds = self.at.elapsed().as_secs_f64();
        let ticks = std::fs::read_to_string(root.join("stat")).ok().as_deref().and_then(parse_stat);
        let threads = read_threads(&root);
        let pressure = std::fs::read_to_string(root.join("pressure/cpu")).ok().as_deref().and_then(parse_pressure);
        let d = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        let span = self.ticks.zip(ticks).filter(|(a, b)| b.all > a.all);
        let all_s = span.map(|(a, b)| (b.all - a.all) as f64 / TICKS_PER_S);
        let own_s = d(self.threads.own_ns, threads.own_ns).map(|ns| ns as f64 / 1e9);
        let steal_share = span.map(|(a, b)| b.steal.saturating_sub(a.steal) as f64 / TICKS_PER_S / all_s.unwrap());
        let busy_s = span.map(|(a, b)| b.busy.saturating_sub(a.busy) as f64 / TICKS_PER_S);
        let other_share = busy_s.zip(own_s).zip(all_s).map(|((busy, own), all)| ((busy - own) / all).clamp(0.0, 1.0));
        let own_share = own_s.zip(all_s).map(|(own, all)| (own / all).min(1.0));
        let cpus = thread_cpus(&root);
        let cpu_pressure = d(self.pressure_us, pressure).map(|us| (us as f64 / 1e6 / seconds).min(1.0));
        let own_ns = d(self.threads.own_ns, threads.own_ns);
        let run_delay_share = d(self.threads.wait_ns, threads.wait_ns)
            .zip(own_ns)
            .filter(|(w, o)| w + o > 0)
            .map(|(w, o)| w as f64 / (w + o) as f64);
        let judged = span.is_some_and(|(a, b)| b.all - a.all >= MIN_JUDGED_TICKS);
        let contended = rule.is_some_and(|r| {
            (judged
                && (steal_share.is_some_and(|s| s > r.max_steal_share)
                    || other_share.is_some_and(|s| s > r.max_other_share)))
                || cpu_pressure.is_some_and(|p| p > r.max_cpu_pressure)
                || run_delay_share.is_some_and(|p| p > r.max_run_delay)
        });
        Window {
            seconds,
            cpus: ticks.map(|t| t.cpus).filter(|c| *c > 0),
            steal_share,
            other_share,
            own_share,
            cpu_pressure,
            run_delay_share,
            involuntary_switches: d(self.threads.involuntary, threads.involuntary),
            migrations: d(self.threads.migrations, threads.migrations),
            mhz: mean_mhz(&cpus),
            thread_cpus: cpus,
            contended,
        }
    }
}

/// What the process holds for the whole run: the share of its anonymous
/// memory on transparent huge pages, and the CPUs it may run on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessCovariates {
    /// `AnonHugePages` of `/proc/self/smaps_rollup` after the load, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_huge_bytes: Option<u64>,
    /// That / the bytes of weights held (the file's size where the engine
    /// does not say), capped at 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_page_share: Option<f64>,
    /// CPUs the process may run on (`sched_getaffinity`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_cpus: Vec<u32>,
    /// Whether the pool's threads were pinned one to a CPU.
    #[serde(default)]
    pub pinned: bool,
}

/// `AnonHugePages` of an smaps_rollup text, bytes.
fn parse_anon_huge(text: &str) -> Option<u64> {
    let v = field_after(text, "AnonHugePages")?;
    v.strip_suffix("kB").unwrap_or(v).trim().parse::<u64>().ok().map(|kb| kb * 1024)
}

impl ProcessCovariates {
    /// Read now, with `weights` bytes held by the engine.
    pub fn read(weights: u64, pinned: bool) -> ProcessCovariates {
        let anon =
            std::fs::read_to_string(proc_root().join("self/smaps_rollup")).ok().as_deref().and_then(parse_anon_huge);
        ProcessCovariates {
            anon_huge_bytes: anon,
            huge_page_share: anon.filter(|_| weights > 0).map(|a| (a as f64 / weights as f64).min(1.0)),
            allowed_cpus: crate::kernels::allowed_cpus(),
            pinned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_machine_line_and_counts_cpus() {
        let t = parse_stat(
            "cpu  100 5 20 800 3 1 2 9 0 0\ncpu0 50 0 10 400 1 0 1 4 0 0\ncpu1 50 5 10 400 2 1 1 5 0 0\nintr 1\n",
        )
        .unwrap();
        assert_eq!((t.busy, t.steal, t.all, t.cpus), (128, 9, 940, 2));
        assert!(parse_stat("intr 5\n").is_none());
    }

    #[test]
    fn reads_pressure_huge_pages_and_status_fields() {
        let psi =
            "some avg10=0.00 avg60=0.25 avg300=1.06 total=14252642\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_pressure(psi), Some(14252642));
        assert_eq!(parse_anon_huge("Rss:  177396 kB\nAnonHugePages:    165888 kB\n"), Some(165888 * 1024));
        assert_eq!(
            field_after("voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t7\n", "nonvoluntary_ctxt_switches"),
            Some("7")
        );
        assert_eq!(
            field_after("se.nr_migrations                             :                    3\n", "se.nr_migrations"),
            Some("3")
        );
    }

    #[test]
    fn this_process_window_is_read_and_a_busy_machine_is_judged_by_the_rule() {
        let s = start();
        let t = Instant::now();
        while t.elapsed().as_millis() < 50 {
            std::hint::black_box(0u64);
        }
        let w = s.end(Some(&Contention::default()));
        assert!(w.seconds >= 0.05);
        if cfg!(target_os = "linux") {
            assert!(w.own_share.is_some() && w.steal_share.is_some(), "{w:?}");
            assert!(!w.thread_cpus.is_empty());
        }
        let strict = Contention {
            max_steal_share: -1.0,
            max_other_share: -1.0,
            max_cpu_pressure: -1.0,
            max_run_delay: -1.0,
            max_drift: 1.0,
            retakes: 0,
        };
        let judged = s.end(Some(&strict));
        if judged.cpu_pressure.is_some() {
            assert!(judged.contended, "{judged:?}");
        }
        assert!(!s.end(None).contended);
    }
}
