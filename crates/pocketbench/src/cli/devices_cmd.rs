//! `pocketbench devices`.

use clap::{Args, Subcommand};
use pocketbench::device::{Devices, Transport};
use pocketbench::runner::attached::{Asked, Attached};
use pocketbench::units::{Bandwidth, Energy};
use serde::Serialize;

use super::Code;

/// Arguments of `devices`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DevicesArgs {
    /// Without one: list every profile.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Do not ask adb and devicectl which phones and tablets are attached
    /// (asking starts adb's server when none runs, as `adb devices` does).
    #[arg(long)]
    pub offline: bool,
}

/// What `devices` does besides listing.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// One profile whole: every fact and parameter with its source, and
    /// what it inherits from the profile it is `based-on`.
    Show(super::devices_show::ShowArgs),
    /// Write a profile of your own device from a few facts (chip, memory,
    /// bandwidth, battery, engine class), based on the built-in profile of
    /// its engine class, whose engine, budgets and model parameters are its
    /// priors.
    Add(Box<super::devices_add::AddArgs>),
}

#[derive(Serialize)]
struct Row {
    id: String,
    name: String,
    engine: String,
    origin: String,
    calibration: String,
    /// The command that calibrates it, when it is not calibrated as it is now.
    calibration_fix: Option<String>,
    bandwidth_gb_s: f64,
    bandwidth_source: String,
    battery_wh: Option<f64>,
    budget_decode_tok_s: f64,
    budget_memory_mb: f64,
    budget_energy_j: Option<f64>,
    reference_prompt: u32,
    reference_gen: u32,
    /// For an adb or iOS profile: the attached device it measures, and its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    attached_serial: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attached_model: Option<String>,
    /// For an adb or iOS profile: why it cannot measure now (not attached,
    /// not authorized, several devices and no serial, adb or xcrun missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    attached_why_not: Option<String>,
}

/// Run `devices`.
pub fn run(a: &DevicesArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let Asked { android: attached, apple } = pocketbench::runner::attached::ask(devices, a.offline);
    let rows = rows(devices, &attached, &apple);
    if a.json {
        outln!("{}", super::pretty(&rows)?);
        return Ok(Code::Ok);
    }
    let wid = rows.iter().fold(6, |w, r| w.max(r.id.len()));
    print_table(&rows)?;
    print_attached("phones over adb", &attached, wid)?;
    print_attached("iPhones and iPads over devicectl", &apple, wid)?;
    print_machine(devices)?;
    Ok(Code::Ok)
}

type Answer = Option<Result<Attached, pocketbench::Error>>;

/// One row per profile, with what adb or devicectl said of it where it
/// was asked.
fn rows(devices: &Devices, attached: &Answer, apple: &Answer) -> Vec<Row> {
    let attachment = |id: &str| {
        [attached, apple].into_iter().find_map(|asked| match asked {
            Some(Ok(a)) => a.devices.iter().find(|d| d.device == id).cloned(),
            _ => None,
        })
    };
    devices
        .all()
        .iter()
        .map(|d| (d, attachment(d.id())))
        .map(|(d, at)| Row {
            id: d.id().to_string(),
            name: d.profile().device.name.clone(),
            engine: d.profile().engine.name.clone(),
            origin: d.origin().to_string(),
            calibration: d.state().to_string(),
            calibration_fix: d.state().fix(d.id(), d.is_local()),
            bandwidth_gb_s: d.model().bandwidth / 1e9,
            bandwidth_source: d.profile().facts.bandwidth.source.clone(),
            battery_wh: d.model().battery_j.map(|j| j / 3600.0),
            budget_decode_tok_s: d.budgets().decode_tok_s,
            budget_memory_mb: d.budgets().memory_bytes / 1e6,
            budget_energy_j: d.budgets().energy_j,
            reference_prompt: d.reference_workload().prompt,
            reference_gen: d.reference_workload().gen,
            attached_why_not: match (attached, apple, &d.profile().transport) {
                (Some(Err(e)), _, Transport::Adb { .. }) | (_, Some(Err(e)), Transport::Ios { .. }) => {
                    Some(e.to_string())
                }
                _ => at.as_ref().and_then(|a| a.why_not.clone()),
            },
            attached_serial: at.as_ref().and_then(|a| a.serial.clone()),
            attached_model: at.and_then(|a| a.model),
        })
        .collect()
}

fn print_table(rows: &[Row]) -> pocketbench::Result<()> {
    let (wid, weng) = rows.iter().fold((6, 6), |(a, b), r| (a.max(r.id.len()), b.max(r.engine.len())));
    outln!(
        "{:<wid$} {:<weng$} {:>10} {:>9} {:>10}  {:<10} calibration",
        "device",
        "engine",
        "bandwidth",
        "battery",
        "energy/run",
        "workload"
    );
    for r in rows {
        outln!(
            "{:<wid$} {:<weng$} {:>10} {:>9} {:>10}  {:<10} {}",
            r.id,
            r.engine,
            Bandwidth(r.bandwidth_gb_s * 1e9).to_string(),
            r.battery_wh.map_or("none".into(), |w| format!("{w:.1} Wh")),
            r.budget_energy_j.map_or("n/a".into(), |j| Energy(j).to_string()),
            format!("{}+{}", r.reference_prompt, r.reference_gen),
            match &r.calibration_fix {
                Some(fix) => format!("{}: run `{fix}`", r.calibration),
                None => r.calibration.clone(),
            }
        );
    }
    Ok(())
}

/// The devices a tool (adb, devicectl) lists, and which profile measures
/// which (or why not).
fn print_attached(what: &str, attached: &Answer, wid: usize) -> pocketbench::Result<()> {
    match attached {
        None => {}
        Some(Err(e)) => outln!("\n{what}: not asked ({e})"),
        Some(Ok(a)) => {
            let listed: Vec<String> = a
                .listed
                .iter()
                .map(|(serial, state, model)| match model {
                    Some(m) => format!("{serial} ({m}, {state})"),
                    None => format!("{serial} ({state})"),
                })
                .collect();
            outln!("\n{what}: {}", if listed.is_empty() { "none attached".to_string() } else { listed.join(", ") });
            for d in &a.devices {
                match (&d.serial, &d.why_not) {
                    (Some(serial), _) => outln!(
                        "  {:<wid$} measures {serial}{}",
                        d.device,
                        d.model.as_ref().map_or(String::new(), |m| format!(" ({m})"))
                    ),
                    (None, Some(why)) => outln!("  {:<wid$} {why}", d.device),
                    (None, None) => {}
                }
            }
        }
    }
    Ok(())
}

/// This machine, and where its own profiles are.
fn print_machine(devices: &Devices) -> pocketbench::Result<()> {
    if let Some(here) = devices.here() {
        outln!("\nthis machine: {} (fingerprint {})", here.describe(), here.fingerprint);
        match devices.home() {
            Some(home) if home.is_dir() => outln!("its own profiles: {}", home.display()),
            Some(home) => outln!("its own profiles: none yet ({} once calibrated)", home.display()),
            None => {}
        }
    }
    Ok(())
}
