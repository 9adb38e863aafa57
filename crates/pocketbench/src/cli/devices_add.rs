//! `pocketbench devices add ID ...`: a profile of one's own device from a
//! few facts, based on the built-in profile of its engine class.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use pocketbench::device::add::{self, NewDevice, Reach};
use pocketbench::device::{Backend, Devices};
use pocketbench::units::{Bandwidth, ByteSize, Charge, Compute, Energy, Voltage};

use super::Code;

/// The engine classes `devices add` has priors for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Class {
    // MNN (the reference study's engine; CPU or Metal/OpenCL GPU).
    Mnn,
    // llama.cpp (CPU).
    #[value(name = "llama.cpp")]
    LlamaCpp,
    // pocketbench's own engine (the probe pushed to the phone).
    Native,
}

/// How the device is reached.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Transport {
    // An Android phone over adb.
    Adb,
    // An iPhone or iPad over devicectl.
    Ios,
    // This machine.
    Local,
}

/// Arguments of `devices add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The new device's id (`my-phone`).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Its name (`Xiaomi 15`).
    #[arg(long)]
    pub name: String,
    /// Its chip (`Snapdragon 8 Elite`).
    #[arg(long)]
    pub chip: Option<String>,
    /// Peak memory bandwidth (`84.8 GB/s`).
    #[arg(long, value_name = "RATE")]
    pub bandwidth: Bandwidth,
    /// Installed memory (`12 GiB`).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<ByteSize>,
    /// Battery capacity (`5240 mAh`; with --voltage).
    #[arg(long, value_name = "CHARGE", requires = "voltage")]
    pub battery: Option<Charge>,
    /// Battery nominal voltage (`3.87 V`).
    #[arg(long, value_name = "VOLTS", requires = "battery")]
    pub voltage: Option<Voltage>,
    /// Battery energy instead of capacity and voltage (`20 Wh`).
    #[arg(long, value_name = "ENERGY", conflicts_with = "battery")]
    pub battery_energy: Option<Energy>,
    /// Peak arithmetic rate of the engine's compute (`2 TFLOPS`; default:
    /// the parent profile's, marked inherited).
    #[arg(long, value_name = "RATE")]
    pub compute: Option<Compute>,
    /// Where these facts come from (a spec sheet's address, a teardown).
    #[arg(long, value_name = "TEXT")]
    pub source: Option<String>,
    /// The engine class whose priors it starts from.
    #[arg(long, value_enum)]
    pub engine_class: Class,
    /// The engine runs on the GPU (default: CPU).
    #[arg(long)]
    pub gpu: bool,
    /// Threads of a CPU engine (default: the parent profile's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: Option<u32>,
    /// How it is reached (default: the parent profile's way).
    #[arg(long, value_enum)]
    pub transport: Option<Transport>,
    /// adb serial or iOS UDID (default: the only one attached).
    #[arg(long, value_name = "ID", requires = "transport")]
    pub serial: Option<String>,
    /// Where to write it (default: devices/ID.toml, or ID.toml in
    /// --devices-dir).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace the file when it exists.
    #[arg(long)]
    pub force: bool,
}

/// Run `devices add`.
pub fn run(a: &AddArgs, devices: &Devices, devices_dir: Option<&std::path::Path>) -> pocketbench::Result<Code> {
    let new = NewDevice {
        id: a.id.clone(),
        name: a.name.clone(),
        chip: a.chip.clone(),
        memory: a.memory,
        bandwidth: a.bandwidth,
        compute: a.compute,
        battery: a.battery,
        voltage: a.voltage,
        battery_energy: a.battery_energy,
        source: a.source.clone(),
        class: match a.engine_class {
            Class::Mnn => "mnn",
            Class::LlamaCpp => "llama.cpp",
            Class::Native => "native",
        }
        .into(),
        backend: if a.gpu { Backend::Gpu } else { Backend::Cpu },
        threads: a.threads,
        reach: a.transport.map(|t| match t {
            Transport::Adb => Reach::Adb,
            Transport::Ios => Reach::Ios,
            Transport::Local => Reach::Local,
        }),
        serial: a.serial.clone(),
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| devices_dir.unwrap_or(std::path::Path::new("devices")).join(format!("{}.toml", a.id)));
    let d = add::write(devices, &new, &out, a.force)?;
    let b = d.based_on().expect("a profile devices add writes is based on another");
    outln!("wrote {} (`{}`, based on `{}`: {})", out.display(), d.id(), b.parent, d.state());
    outln!("see what it inherits: pocketbench devices show {}", d.id());
    Ok(Code::Ok)
}
