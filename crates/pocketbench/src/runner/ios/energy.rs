//! A run's energy on an iPhone or iPad. No app can read an energy counter
//! on iOS, so the runner reads it on the Mac around the launch, by the
//! profile's `[transport] energy` (or `$POCKETBENCH_IOS_ENERGY`):
//!
//! - `xctrace`: Instruments' Power Profiler recorded over every process
//!   from a little before the launch to its end (`xcrun xctrace record`),
//!   exported table by table until one has a power column, integrated over
//!   the launch net of the idle power recorded before it;
//! - `battery`: the battery gauge before and after the launch (`pymobiledevice3
//!   diagnostics battery single`), whole mAh times volts over the runs;
//! - `none`: not read, and the record shows the prediction labelled "not
//!   measured".
//!
//! Both readings cover the whole launch (the app's start and the model's
//! load with the runs), spread over the runs, and each says so with its
//! resolution. A reading that fails leaves the measurement standing and
//! says why energy was not measured.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pocketbench_runner_ios::tools::{self, Recording};
use pocketbench_runner_ios::{battery, xctrace, Xcrun};

use crate::device::IosEnergy;
use crate::probe::energy::EnergyFigures;
use crate::probe::ProbeResult;
use crate::provenance::{Meter, Meters};
use crate::Error;

/// Seconds of idle power recorded before the launch (xctrace), unless
/// `$POCKETBENCH_IOS_IDLE_S` says otherwise.
const IDLE_LEAD_S: f64 = 10.0;
/// Limit for one pymobiledevice3 or xctrace export call.
const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// What a record says where the profile reads no energy.
pub const NOT_READ: &str = "iOS gives an app no energy counter, and this profile reads none from the Mac: set its \
     [transport] energy to \"xctrace\" (Instruments' Power Profiler; the device must not be charging) or \"battery\" \
     (pymobiledevice3's battery gauge; whole mAh, so run many repetitions)";

/// The profile's method, unless `$POCKETBENCH_IOS_ENERGY` names another.
pub fn method(profile: IosEnergy) -> Result<IosEnergy, Error> {
    match std::env::var("POCKETBENCH_IOS_ENERGY") {
        Ok(v) if !v.is_empty() => v.parse().map_err(|e: String| Error::usage(format!("$POCKETBENCH_IOS_ENERGY: {e}"))),
        _ => Ok(profile),
    }
}

/// One launch's energy per run.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Net joules a run (idle taken off where it was measured).
    pub net_j: f64,
    /// Gross joules a run.
    pub gross_j: f64,
    /// The meter, in words (the result's `methods.energy`).
    pub meter: String,
    /// How the figure was made, with its resolution (`methods.energy_j_per_run`).
    pub how: String,
}

/// A reading in progress around one launch.
pub trait EnergySession: Send {
    /// The app is being launched now.
    fn launched(&mut self);
    /// The app said it is done (its console's marker), now.
    fn ended(&mut self) {}
    /// The app is done after `runs` runs (warm-up included): the energy a
    /// run, or why there is none.
    fn finish(self: Box<Self>, runs: u32) -> Result<Reading, String>;
}

/// Start reading before a launch on the device `udid`; None: not read.
pub fn begin(
    method: IosEnergy,
    xcrun: &Xcrun,
    udid: Option<&str>,
    dir: &Path,
    limit: Duration,
) -> Option<Result<Box<dyn EnergySession>, String>> {
    if method.is_none() {
        return None;
    }
    let Some(udid) = udid else {
        return Some(Err("devicectl gave no UDID for the device, which the Mac's tools need".into()));
    };
    Some(match method {
        IosEnergy::Xctrace => {
            PowerProfiler::start(xcrun, udid, dir, limit).map(|s| Box::new(s) as Box<dyn EnergySession>)
        }
        IosEnergy::Battery => Gauge::start(udid).map(|s| Box::new(s) as Box<dyn EnergySession>),
        IosEnergy::None => unreachable!("returned above"),
    })
}

/// Put a reading, or why there is none, into the app's result.
pub fn apply(r: &mut ProbeResult, method: IosEnergy, reading: Option<Result<Reading, String>>) {
    match reading {
        Some(Ok(x)) => {
            r.energy = EnergyFigures {
                energy_j_per_run: Some(x.net_j),
                energy_gross_j_per_run: Some(x.gross_j),
                ..EnergyFigures::default()
            };
            r.energy_not_measured = None;
            r.methods.insert("energy".into(), x.meter);
            r.methods.insert("energy_j_per_run".into(), x.how);
            let kind = match method {
                IosEnergy::Xctrace => Meter::PowerProfiler,
                IosEnergy::Battery => Meter::BatteryGauge,
                IosEnergy::None => Meter::Other,
            };
            let memory = r.meters.map_or(Meter::PhysFootprint, |m| m.memory);
            r.meters = Some(Meters { memory, energy: Some(kind) });
        }
        // The app reads no energy itself; its probe's reason (written for
        // Linux meters) is replaced by the Mac's.
        _ if r.energy.energy_j_per_run.is_some() => {}
        Some(Err(why)) => r.energy_not_measured = Some(format!("{}: {why}", name(method))),
        None => r.energy_not_measured = Some(NOT_READ.into()),
    }
}

fn name(method: IosEnergy) -> &'static str {
    match method {
        IosEnergy::Xctrace => "the Power Profiler (xctrace) read no energy",
        IosEnergy::Battery => "the battery gauge (pymobiledevice3) read no energy",
        IosEnergy::None => "not read",
    }
}

/// `$PYMOBILEDEVICE3`, else `pymobiledevice3` on `PATH`.
fn pymobiledevice3() -> PathBuf {
    std::env::var_os("PYMOBILEDEVICE3")
        .filter(|v| !v.is_empty())
        .map_or_else(|| "pymobiledevice3".into(), PathBuf::from)
}

/// The battery gauge before and after.
struct Gauge {
    udid: String,
    before: battery::Snapshot,
}

impl Gauge {
    fn snapshot(udid: &str) -> Result<battery::Snapshot, String> {
        let mut cmd = std::process::Command::new(pymobiledevice3());
        cmd.args(tools::battery_single(udid));
        let printed = tools::bounded(cmd, TOOL_LIMIT)?;
        let (s, _) =
            battery::parse("pymobiledevice3 diagnostics battery single", &printed.stdout).map_err(|e| e.to_string())?;
        Ok(s)
    }

    fn start(udid: &str) -> Result<Gauge, String> {
        Ok(Gauge { udid: udid.into(), before: Gauge::snapshot(udid)? })
    }
}

impl EnergySession for Gauge {
    fn launched(&mut self) {}

    fn finish(self: Box<Self>, runs: u32) -> Result<Reading, String> {
        let after = Gauge::snapshot(&self.udid)?;
        let d = battery::Drain::between("pymobiledevice3 diagnostics battery single", &self.before, &after, runs)
            .map_err(|e| e.to_string())?;
        Ok(Reading {
            net_j: d.joules_per_run,
            gross_j: d.joules_per_run,
            meter: format!(
                "pymobiledevice3 diagnostics battery single: the battery gauge's charge (AppleRawCurrentCapacity, whole \
                 mAh) times its voltage, before and after the launch ({:.0} s apart, {} mAh)",
                d.seconds, d.charge_mah
            ),
            how: format!(
                "gross: the whole device's drain over the launch's {runs} runs (the app's start and the model's load \
                 included), ±{:.2} J a run, resolution {:.2} J a run (1 mAh)",
                d.uncertainty_j, d.resolution_j
            ),
        })
    }
}

/// Instruments' Power Profiler around the launch.
struct PowerProfiler {
    xcrun: Xcrun,
    recording: Option<Recording>,
    trace: PathBuf,
    dir: PathBuf,
    idle_s: f64,
    launched_s: f64,
    ended_s: Option<f64>,
}

fn idle_lead() -> f64 {
    std::env::var("POCKETBENCH_IOS_IDLE_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s: &f64| *s >= 1.0)
        .unwrap_or(IDLE_LEAD_S)
}

impl PowerProfiler {
    fn start(xcrun: &Xcrun, udid: &str, dir: &Path, limit: Duration) -> Result<PowerProfiler, String> {
        let idle_s = idle_lead();
        let trace = dir.join("run.trace");
        let mut cmd = xcrun.tool("xctrace");
        // Long enough for the idle lead, the launch's own limit and the stop.
        cmd.args(tools::xctrace_record(udid, limit + Duration::from_secs_f64(idle_s + 60.0), &trace));
        let mut recording = Recording::start(cmd)?;
        std::thread::sleep(Duration::from_secs_f64(idle_s));
        if recording.ended() {
            return Err("`xctrace record` ended before the launch (is Instruments' Power Profiler installed?)".into());
        }
        Ok(PowerProfiler {
            xcrun: xcrun.clone(),
            recording: Some(recording),
            trace,
            dir: dir.into(),
            idle_s,
            launched_s: 0.0,
            ended_s: None,
        })
    }

    fn export(&self, args: Vec<std::ffi::OsString>, out: &Path) -> Result<String, String> {
        let mut cmd = self.xcrun.tool("xctrace");
        cmd.args(args);
        tools::bounded(cmd, TOOL_LIMIT)?;
        std::fs::read_to_string(out).map_err(|e| format!("{}: {e}", out.display()))
    }
}

impl EnergySession for PowerProfiler {
    fn launched(&mut self) {
        self.launched_s = self.recording.as_ref().map_or(0.0, |r| r.started.elapsed().as_secs_f64());
    }

    fn ended(&mut self) {
        self.ended_s = self.recording.as_ref().map(|r| r.started.elapsed().as_secs_f64());
    }

    fn finish(mut self: Box<Self>, runs: u32) -> Result<Reading, String> {
        let recording = self.recording.take().ok_or("no recording")?;
        let done_s = self.ended_s.unwrap_or_else(|| recording.started.elapsed().as_secs_f64());
        recording.stop(Duration::from_secs(60))?;
        let toc_file = self.dir.join("toc.xml");
        let toc = self.export(tools::xctrace_toc(&self.trace, &toc_file), &toc_file)?;
        let schemas = xctrace::toc_schemas("xctrace export --toc", &toc).map_err(|e| e.to_string())?;
        let run = xctrace::Window { start_s: self.launched_s, end_s: done_s };
        // The middle 80% of the lead: clear of the recording's start and of
        // the launch.
        let idle = xctrace::Window { start_s: 0.1 * self.idle_s, end_s: 0.9 * self.idle_s };
        for schema in &schemas {
            let out = self.dir.join(format!("table-{schema}.xml"));
            let label = format!("xctrace export table {schema}");
            let Ok(text) = self.export(tools::xctrace_table(&self.trace, schema, &out), &out) else { continue };
            let Ok(table) = xctrace::parse(&label, &text) else { continue };
            let Ok((column, samples)) = table.power(&label, None) else { continue };
            let e = xctrace::energy(&label, &column, &samples, run, idle).map_err(|e| e.to_string())?;
            if e.gross_j <= 0.0 {
                return Err(format!(
                    "the Power Profiler's `{column}` read no power over the launch: a device charging over its cable \
                     reads none; drive it over the network or a cable that does not charge"
                ));
            }
            let n = f64::from(runs.max(1));
            return Ok(Reading {
                net_j: e.net_j / n,
                gross_j: e.gross_j / n,
                meter: format!(
                    "xctrace Power Profiler: `{column}` of table `{schema}`, every process, integrated over the launch \
                     ({:.1} s, {} samples), net of the idle power ({:.2} W) over the {:.0} s before it, by this Mac's \
                     clock from the start of `xctrace record`",
                    run.end_s - run.start_s,
                    e.samples,
                    e.idle_w,
                    self.idle_s
                ),
                how: format!(
                    "net: the launch's energy less the idle power over its time, over its {runs} runs (the app's \
                     start and the model's load included); samples every {:.3} s",
                    e.resolution_s
                ),
            });
        }
        Err(format!("no table of the trace has a power column in W, mW or µW (tables: {})", schemas.join(", ")))
    }
}
