//! Sustained load: the workload run back to back, without a pause, for a
//! set time, its decode speed read per window of wall time with the
//! temperature and clock of that window. A phone that throttles shows it
//! as a falling curve: the tenth minute, not the first second.
//!
//! Each run of the workload (a prefill of the prompt, `gen` decode steps)
//! is one cycle; every complete cycle is also a repetition of the result
//! (timed steps, token hash, energy where metered), so a soak's figures,
//! latency tail and output check are the same as a `run`'s. A window
//! closes between two decode steps (or after a prefill) once its time is
//! up: its tok/s is its decode tokens over the time of those steps, and
//! at its close the probe reads the hottest thermal zone (else hwmon
//! sensor), the clock of its threads' CPUs and the window's covariates.
//! The closing reads are not inside any step's time.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::thermal::{self, RepThermal};
use crate::timing::Trace;
use crate::window::{self, Contention, Window};
use crate::{energy, Engine, ProbeError, ProbeSpec, Rep};

/// The longest soak accepted, seconds: an hour. A phone's throttling
/// settles within minutes; a longer run is a different test (battery drain).
pub const MAX_SECONDS: f64 = 3600.0;

/// The shortest window accepted, seconds: shorter ones read the sensors
/// faster than most zones update (a phone's refresh at 100-1000 ms).
pub const MIN_WINDOW_S: f64 = 0.25;

/// The default share by which the last window's decode speed must fall
/// below the first's for the result to be `throttled`.
pub const DEFAULT_THROTTLE_DROP: f64 = 0.15;

/// A soak: run the workload back to back for `seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SoakSpec {
    /// Seconds to keep running (rounded up to whole windows).
    pub seconds: f64,
    /// Seconds of wall time per window.
    pub window_s: f64,
    /// `throttled` when the last window's decode tok/s is below the first's
    /// by more than this share (0.15: 15%).
    pub throttle_drop: f64,
}

impl SoakSpec {
    /// Check it; the message names the flag a user gave.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.seconds > 0.0 && self.seconds <= MAX_SECONDS) {
            return Err(format!(
                "--seconds must be above 0 and at most {MAX_SECONDS:.0} (an hour), got {}",
                self.seconds
            ));
        }
        if !(self.window_s >= MIN_WINDOW_S && self.window_s <= self.seconds) {
            return Err(format!(
                "--window must be at least {MIN_WINDOW_S} s and at most --seconds ({}), got {}",
                self.seconds, self.window_s
            ));
        }
        if !(self.throttle_drop > 0.0 && self.throttle_drop < 1.0) {
            return Err(format!(
                "--throttle-drop must be above 0 and below 1 (0.15 for 15%), got {}",
                self.throttle_drop
            ));
        }
        Ok(())
    }

    /// Windows planned: the seconds rounded up to whole windows. The soak
    /// runs for that many windows' time; a window closes at the first step
    /// after its time is up, so one holding a prefill runs longer, and
    /// there may be fewer.
    pub fn windows(&self) -> u32 {
        (self.seconds / self.window_s - 1e-9).ceil().max(1.0) as u32
    }
}

/// One window of a soak. It closes at the first decode step (or prefill)
/// that ends after its time is up, so its `seconds` may exceed the window
/// asked: by up to one prefill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakWindow {
    /// Seconds from the soak's start to the window's start.
    pub start_s: f64,
    /// Wall seconds of the window.
    pub seconds: f64,
    /// Decode steps completed in it.
    pub decode_tokens: u32,
    /// Seconds of those steps (the timer around each).
    pub decode_s: f64,
    /// decode_tokens / decode_s; absent when a prefill filled the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_tok_s: Option<f64>,
    /// Prompt tokens prefilled in it.
    pub prefill_tokens: u32,
    /// Seconds of those prefills.
    pub prefill_s: f64,
    /// The hottest sensor at the window's end, degrees C, where readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub celsius: Option<f64>,
    /// Which sensor that was: "sysfs thermal_zone3 (cpu-1-0-usr)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensor: Option<String>,
    /// The window's covariates: steal, others' CPU time, the threads' CPUs
    /// and their mean clock (`mhz`, where cpufreq is readable), contended.
    pub window: Window,
}

/// What a soak saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Soak {
    /// What was asked.
    pub spec: SoakSpec,
    /// Wall seconds from the first prefill to the last window's end.
    pub seconds_run: f64,
    /// Complete cycles (each a repetition of the result); a cycle cut off
    /// by the end is timed in its windows but is no repetition.
    pub cycles: u32,
    /// The cool-down before the soak (the device's `[thermal]`), where the
    /// device has a thermal zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooled: Option<RepThermal>,
    /// Every window, in order.
    pub windows: Vec<SoakWindow>,
    /// Decode tok/s of the first and the last window that decoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tok_s: Option<f64>,
    /// See `first_tok_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tok_s: Option<f64>,
    /// 1 - last / first: the share the speed fell by (negative: it rose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop: Option<f64>,
    /// The last window fell more than `spec.throttle_drop` below the first.
    pub throttled: bool,
    /// The sensor every temperature came from, or "temperature not readable".
    pub temperature: String,
    /// Whether any window read a temperature.
    pub temperature_readable: bool,
    /// Whether any window read a clock (cpufreq).
    pub clock_readable: bool,
}

/// What the soak says when no sensor answered.
pub const NOT_READABLE: &str = "temperature not readable";

impl Soak {
    /// The summary of `windows`: first and last speeds, drop, throttled.
    pub fn new(
        spec: SoakSpec,
        seconds_run: f64,
        cycles: u32,
        cooled: Option<RepThermal>,
        windows: Vec<SoakWindow>,
    ) -> Soak {
        let decoded: Vec<f64> = windows.iter().filter_map(|w| w.decode_tok_s).collect();
        let (first, last) = (decoded.first().copied(), decoded.last().copied());
        let drop = first.zip(last).filter(|_| decoded.len() >= 2).map(|(f, l)| 1.0 - l / f);
        let sensor = windows.iter().find_map(|w| w.sensor.clone());
        Soak {
            spec,
            seconds_run,
            cycles,
            cooled,
            first_tok_s: first,
            last_tok_s: last,
            drop,
            throttled: drop.is_some_and(|d| d > spec.throttle_drop),
            temperature_readable: sensor.is_some(),
            temperature: sensor.unwrap_or_else(|| NOT_READABLE.into()),
            clock_readable: windows.iter().any(|w| w.window.mhz.is_some()),
            windows,
        }
    }

    /// One line: "18 windows of 5 s over 90.2 s (41 cycles): 212 -> 150
    /// tok/s (-29.2%), THROTTLED (more than 15% down); 38.0-47.5 C (sysfs
    /// thermal_zone0 (cpu-1-0-usr))".
    pub fn describe(&self) -> String {
        let speeds = match (self.first_tok_s, self.last_tok_s, self.drop) {
            (Some(f), Some(l), Some(d)) => format!("{f:.1} -> {l:.1} tok/s ({:+.1}%)", -d * 100.0),
            (Some(f), _, _) => format!("{f:.1} tok/s in the one window that decoded"),
            _ => "no window decoded (each was filled by a prefill: lengthen --window)".into(),
        };
        let verdict = if self.throttled {
            format!(", THROTTLED (more than {:.0}% down)", self.spec.throttle_drop * 100.0)
        } else if self.drop.is_some() {
            format!(", not throttled (within {:.0}%)", self.spec.throttle_drop * 100.0)
        } else {
            String::new()
        };
        let temps: Vec<f64> = self.windows.iter().filter_map(|w| w.celsius).collect();
        let heat = if temps.is_empty() {
            NOT_READABLE.to_string()
        } else {
            let lo = temps.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{lo:.1}-{hi:.1} C ({})", self.temperature)
        };
        format!(
            "{} windows of {} s over {:.1} s ({} cycles): {speeds}{verdict}; {heat}",
            self.windows.len(),
            self.spec.window_s,
            self.seconds_run,
            self.cycles
        )
    }
}

/// A window being filled.
struct Open {
    at: Instant,
    start_s: f64,
    covariates: window::Start,
    decode_tokens: u32,
    decode_s: f64,
    prefill_tokens: u32,
    prefill_s: f64,
}

impl Open {
    fn new(t0: Instant) -> Open {
        Open {
            at: Instant::now(),
            start_s: t0.elapsed().as_secs_f64(),
            covariates: window::start(),
            decode_tokens: 0,
            decode_s: 0.0,
            prefill_tokens: 0,
            prefill_s: 0.0,
        }
    }

    fn close(self, sys_class: &Path, rule: Option<&Contention>) -> SoakWindow {
        let seconds = self.at.elapsed().as_secs_f64();
        let heat = thermal::hottest_sensor(sys_class);
        SoakWindow {
            start_s: self.start_s,
            seconds,
            decode_tokens: self.decode_tokens,
            decode_s: self.decode_s,
            decode_tok_s: (self.decode_tokens > 0 && self.decode_s > 0.0)
                .then(|| self.decode_tokens as f64 / self.decode_s),
            prefill_tokens: self.prefill_tokens,
            prefill_s: self.prefill_s,
            celsius: heat.as_ref().map(|t| t.celsius),
            sensor: heat.map(|t| t.source),
            window: self.covariates.end(rule),
        }
    }
}

/// The windows of a soak as it runs.
struct Windows<'a> {
    t0: Instant,
    open: Option<Open>,
    done: Vec<SoakWindow>,
    spec: SoakSpec,
    sys_class: &'a Path,
    rule: Option<&'a Contention>,
}

impl Windows<'_> {
    /// Close the open window if its time is up and open the next; true when
    /// the last window has closed.
    fn tick(&mut self) -> bool {
        let open = self.open.as_ref().expect("an open window");
        if open.at.elapsed().as_secs_f64() < self.spec.window_s {
            return false;
        }
        let w = self.open.take().expect("an open window").close(self.sys_class, self.rule);
        self.done.push(w);
        // The soak ends with the first window that closes after its whole
        // windows' time: a window holding a prefill runs long, and the
        // soak keeps its wall time rather than its count of windows.
        if self.t0.elapsed().as_secs_f64() >= self.spec.windows() as f64 * self.spec.window_s {
            return true;
        }
        self.open = Some(Open::new(self.t0));
        false
    }

    fn open(&mut self) -> &mut Open {
        self.open.as_mut().expect("an open window")
    }
}

/// Run the soak: cool down where the spec asks, then cycles of the
/// workload until the last window closes. Returns the complete cycles as
/// repetitions, and what the soak saw.
pub(crate) fn run(
    spec: &ProbeSpec,
    soak: SoakSpec,
    m: &mut dyn Engine,
    first_load_s: f64,
    energy: &mut energy::Session,
) -> Result<(Vec<Rep>, Soak), ProbeError> {
    run_in(spec, soak, m, first_load_s, energy, &crate::meter::sysfs_root().join("sys/class"))
}

/// [`run`] reading the sensors under `sys_class` (`/sys/class`).
fn run_in(
    spec: &ProbeSpec,
    soak: SoakSpec,
    m: &mut dyn Engine,
    first_load_s: f64,
    energy: &mut energy::Session,
    sys_class: &Path,
) -> Result<(Vec<Rep>, Soak), ProbeError> {
    let tokens = crate::prompt(spec, spec.workload.prompt);
    let sys_class = sys_class.to_path_buf();
    let cooled = thermal::before_rep(&sys_class.join("thermal"), spec.cooling, thermal::POLL);
    let t0 = Instant::now();
    let mut w = Windows {
        t0,
        open: Some(Open::new(t0)),
        done: Vec::new(),
        spec: soak,
        sys_class: &sys_class,
        rule: spec.contention.as_ref(),
    };
    let mut reps = Vec::new();
    'cycles: loop {
        let mut trace = Trace::default();
        let heat = thermal::hottest_sensor(&sys_class);
        m.reset()?;
        energy.start();
        let started = Instant::now();
        let mut next = m.step(&tokens, 0)?;
        let prefill_s = started.elapsed().as_secs_f64();
        trace.tokens.push(next);
        let open = w.open();
        open.prefill_tokens += spec.workload.prompt;
        open.prefill_s += prefill_s;
        if w.tick() {
            let _ = energy.stop();
            break 'cycles;
        }
        let mut prev = Instant::now();
        let mut decode_s = 0.0;
        for i in 0..spec.workload.gen as usize {
            if crate::timing::cancelled() {
                return Err(ProbeError::Cancelled);
            }
            next = m.step(&[next], tokens.len() + i)?;
            let now = Instant::now();
            let step = now - prev;
            trace.steps_us.push(step.as_micros().min(u32::MAX as u128) as u32);
            trace.tokens.push(next);
            decode_s += step.as_secs_f64();
            let open = w.open();
            open.decode_tokens += 1;
            open.decode_s += step.as_secs_f64();
            if w.tick() {
                let _ = energy.stop();
                break 'cycles;
            }
            // The window's closing reads are no step's time.
            prev = Instant::now();
        }
        let reading = energy.stop();
        let end = thermal::hottest_sensor(&sys_class);
        let thermal = heat.map(|h| RepThermal {
            start_c: h.celsius,
            end_c: end.map_or(h.celsius, |e| e.celsius),
            source: h.source,
            waited_s: 0.0,
            hot: false,
        });
        let tokens_hash = Some(trace.hash());
        reps.push(Rep {
            load_s: Some(first_load_s),
            prefill_s,
            ttft_s: prefill_s,
            decode_s,
            prefill_tok_s: spec.workload.prompt as f64 / prefill_s,
            decode_tok_s: spec.workload.gen as f64 / decode_s,
            energy: reading,
            thermal,
            tokens_hash,
            tokens: if reps.is_empty() { trace.tokens } else { Vec::new() },
            itl_us: trace.steps_us,
            window: None,
            drift: None,
            app_thermal: None,
            retaken: false,
        });
    }
    let seconds_run = t0.elapsed().as_secs_f64();
    let cycles = reps.len() as u32;
    Ok((reps, Soak::new(soak, seconds_run, cycles, cooled, w.done)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineError;

    /// An engine that spins `base_us` a step, and `slow` times that once
    /// `after` has passed since its first step: a phone that throttles.
    struct Throttling {
        base_us: f64,
        slow: f64,
        after: std::time::Duration,
        started: Option<Instant>,
    }

    impl Engine for Throttling {
        fn reset(&mut self) -> Result<(), EngineError> {
            Ok(())
        }
        fn step(&mut self, tokens: &[u32], _: usize) -> Result<u32, EngineError> {
            let started = *self.started.get_or_insert_with(Instant::now);
            let f = if started.elapsed() >= self.after { self.slow } else { 1.0 };
            let until = Instant::now() + std::time::Duration::from_micros((self.base_us * f) as u64);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            Ok(tokens[tokens.len() - 1].wrapping_mul(31).wrapping_add(7) % 1000)
        }
    }

    fn spec(soak: SoakSpec) -> ProbeSpec {
        let mut s = crate::timing::tests::spec(1, None);
        s.soak = Some(soak);
        s
    }

    fn window(start_s: f64, tok_s: Option<f64>) -> SoakWindow {
        SoakWindow {
            start_s,
            seconds: 1.0,
            decode_tokens: tok_s.map_or(0, |t| t as u32),
            decode_s: tok_s.map_or(0.0, |_| 1.0),
            decode_tok_s: tok_s,
            prefill_tokens: 0,
            prefill_s: 0.0,
            celsius: None,
            sensor: None,
            window: window::start().end(None),
        }
    }

    #[test]
    fn the_last_window_against_the_first_decides_throttled() {
        let spec = SoakSpec { seconds: 4.0, window_s: 1.0, throttle_drop: 0.15 };
        let soak = |speeds: &[Option<f64>]| {
            let w = speeds.iter().enumerate().map(|(i, t)| window(i as f64, *t)).collect();
            Soak::new(spec, 4.0, 3, None, w)
        };
        let steady = soak(&[Some(200.0), Some(150.0), Some(190.0), Some(180.0)]);
        assert!(!steady.throttled && (steady.drop.unwrap() - 0.1).abs() < 1e-12, "{steady:?}");
        assert!(steady.describe().contains("200.0 -> 180.0 tok/s (-10.0%), not throttled (within 15%)"));
        // A prefill-only window at either end is passed over.
        let fell = soak(&[None, Some(200.0), Some(120.0), Some(160.0), None]);
        assert!(fell.throttled && (fell.drop.unwrap() - 0.2).abs() < 1e-12, "{fell:?}");
        assert!(fell.describe().contains("THROTTLED (more than 15% down)"), "{}", fell.describe());
        let one = soak(&[None, Some(90.0)]);
        assert!(!one.throttled && one.drop.is_none());
        assert_eq!((one.temperature.as_str(), one.temperature_readable), (NOT_READABLE, false));
        assert!(one.describe().ends_with("; temperature not readable"), "{}", one.describe());
    }

    #[test]
    fn bad_soaks_are_refused_with_the_flag_named() {
        let ok = SoakSpec { seconds: 10.0, window_s: 2.5, throttle_drop: 0.15 };
        assert_eq!((ok.validate(), ok.windows()), (Ok(()), 4));
        assert_eq!(SoakSpec { seconds: 10.5, ..ok }.windows(), 5, "rounded up to whole windows");
        for (bad, says) in [
            (SoakSpec { seconds: 0.0, ..ok }, "--seconds must be above 0 and at most 3600"),
            (SoakSpec { seconds: 3601.0, ..ok }, "--seconds must be above 0 and at most 3600"),
            (SoakSpec { seconds: f64::NAN, ..ok }, "--seconds"),
            (SoakSpec { window_s: 0.1, ..ok }, "--window must be at least 0.25 s"),
            (SoakSpec { window_s: 11.0, ..ok }, "at most --seconds (10)"),
            (SoakSpec { throttle_drop: 1.0, ..ok }, "--throttle-drop must be above 0 and below 1"),
        ] {
            let e = bad.validate().unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    fn zone(root: &Path, milli: u32) {
        let z = root.join("thermal/thermal_zone0");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("type"), "cpu-1-0-usr").unwrap();
        std::fs::write(z.join("temp.tmp"), milli.to_string()).unwrap();
        std::fs::rename(z.join("temp.tmp"), z.join("temp")).unwrap();
    }

    #[test]
    fn a_device_that_slows_as_it_heats_is_drawn_window_by_window_and_flagged() {
        let d = tempfile::tempdir().unwrap();
        zone(d.path(), 35_000);
        // The zone warms by a degree every 50 ms while the soak runs.
        let (root, stop) = (d.path().to_path_buf(), std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)));
        let warming = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut milli = 35_000;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    milli += 1000;
                    zone(&root, milli);
                }
            })
        };
        let soak = SoakSpec { seconds: 1.2, window_s: 0.3, throttle_drop: 0.15 };
        let spec = spec(soak);
        // Four times slower after half a second.
        let after = std::time::Duration::from_millis(500);
        let mut m = Throttling { base_us: 400.0, slow: 4.0, after, started: None };
        let mut energy = energy::Session::new(None, Some("test".into()));
        let (reps, got) = run_in(&spec, soak, &mut m, 0.0, &mut energy, d.path()).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        warming.join().unwrap();
        // Four windows' time: four windows, or three where one ran long (a
        // loaded machine preempting the soak).
        assert!((3..=4).contains(&got.windows.len()), "{got:?}");
        assert!(got.seconds_run >= 1.2, "{got:?}");
        assert!(got.throttled && got.drop.unwrap() > 0.5, "{}", got.describe());
        assert!(got.temperature_readable && got.temperature == "sysfs thermal_zone0 (cpu-1-0-usr)", "{got:?}");
        let temps: Vec<f64> = got.windows.iter().map(|w| w.celsius.unwrap()).collect();
        assert!(temps.windows(2).all(|t| t[1] > t[0]), "{temps:?}");
        for w in &got.windows {
            assert!(w.seconds >= 0.3 && w.decode_tokens > 0, "{w:?}");
            let sum: f64 = w.decode_tokens as f64 / w.decode_s;
            assert!((sum - w.decode_tok_s.unwrap()).abs() < 1e-9);
        }
        assert!((got.windows[1].start_s - got.windows[0].seconds).abs() < 0.05, "{got:?}");
        // Every complete cycle is a repetition, its steps timed and its
        // tokens the same as the others'.
        assert_eq!(reps.len() as u32, got.cycles);
        assert!(got.cycles >= 2, "{got:?}");
        for r in &reps {
            assert_eq!(r.itl_us.len(), spec.workload.gen as usize);
            assert_eq!(r.tokens_hash, reps[0].tokens_hash);
            assert!(r.thermal.is_some());
        }
    }

    #[test]
    fn without_a_sensor_the_curve_is_speed_alone_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        let soak = SoakSpec { seconds: 0.5, window_s: 0.25, throttle_drop: 0.15 };
        let mut m = Throttling { base_us: 300.0, slow: 1.0, after: std::time::Duration::ZERO, started: None };
        let mut energy = energy::Session::new(None, Some("test".into()));
        let (_, got) = run_in(&spec(soak), soak, &mut m, 0.0, &mut energy, d.path()).unwrap();
        assert!((1..=2).contains(&got.windows.len()), "{got:?}");
        assert!(got.windows.iter().all(|w| w.celsius.is_none() && w.decode_tok_s.is_some()), "{got:?}");
        assert_eq!(got.temperature, NOT_READABLE);
        assert!(got.cooled.is_none());
    }
}
