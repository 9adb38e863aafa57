//! `devices add`: a profile of one's own device written from a few facts,
//! `based-on` the built-in profile of its engine class, whose engine,
//! budgets and model parameters it takes as priors.

use std::path::Path;

use toml_edit::{value, DocumentMut, Item, Table};

use super::{Backend, Device, Devices};
use crate::units::{Bandwidth, ByteSize, Charge, Compute, Energy, Voltage};
use crate::Error;

/// How a new device is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// An Android phone over adb.
    Adb,
    /// An iPhone or iPad over devicectl.
    Ios,
    /// This machine.
    Local,
}

/// The facts `devices add` is given.
#[derive(Debug, Clone)]
pub struct NewDevice {
    /// Its id.
    pub id: String,
    /// Its name (`Xiaomi 15`).
    pub name: String,
    /// Its chip (`Snapdragon 8 Elite`).
    pub chip: Option<String>,
    /// Installed memory.
    pub memory: Option<ByteSize>,
    /// Peak memory bandwidth.
    pub bandwidth: Bandwidth,
    /// Peak arithmetic rate of the engine's compute (default: the parent's).
    pub compute: Option<Compute>,
    /// Battery capacity.
    pub battery: Option<Charge>,
    /// Battery nominal voltage (with a capacity).
    pub voltage: Option<Voltage>,
    /// Battery energy (instead of capacity and voltage).
    pub battery_energy: Option<Energy>,
    /// Where these facts come from (a spec sheet, a teardown).
    pub source: Option<String>,
    /// Engine class: `mnn`, `llama.cpp` or `native`.
    pub class: String,
    /// CPU or GPU.
    pub backend: Backend,
    /// Threads of a CPU engine (default: the parent's).
    pub threads: Option<u32>,
    /// How it is reached (default: the parent's way).
    pub reach: Option<Reach>,
    /// adb serial or iOS UDID (default: the only one attached).
    pub serial: Option<String>,
}

/// The built-in profile whose engine, budgets and parameters a new device
/// of `class` on `backend` starts from, reached as `reach`.
pub fn parent_for(class: &str, backend: Backend, reach: Option<Reach>) -> Result<&'static str, Error> {
    Ok(match (class, backend, reach) {
        ("mnn", Backend::Cpu, _) => "oneplus-13",
        ("mnn", Backend::Gpu, _) => "iphone-18-pro",
        ("llama.cpp", Backend::Cpu, _) => "host-llama",
        ("native", Backend::Cpu, Some(Reach::Local)) => "host",
        ("native", Backend::Cpu, Some(Reach::Ios)) => "ios-any",
        ("native", Backend::Cpu, _) => "android-any",
        (class, backend, _) => {
            return Err(Error::usage(format!(
                "no built-in profile of the {class} engine class on {} to take priors from (there are: mnn on cpu or gpu, llama.cpp on cpu, native on cpu)",
                match backend {
                    Backend::Cpu => "a CPU",
                    Backend::Gpu => "a GPU",
                    Backend::Npu => "an NPU",
                }
            )))
        }
    })
}

fn fact(v: String, source: &str) -> Item {
    let mut t = Table::new();
    t["value"] = value(v);
    t["source"] = value(source);
    Item::Table(t)
}

/// The profile text of `new`, based on `parent`.
pub fn text(new: &NewDevice, parent: &Device) -> String {
    let given = match &new.source {
        Some(s) => format!("given to `pocketbench devices add`: {s}"),
        None => "given to `pocketbench devices add` (no source given: check it)".into(),
    };
    let mut doc = DocumentMut::new();
    doc["based-on"] = value(parent.id());
    let header = format!(
        "# `{id}`: made by `pocketbench devices add` on {}.\n\
         # Based on `{}`, the built-in profile of the {} engine class on a {}:\n\
         # its engine, budgets and model parameters are this device's priors until\n\
         # points of its own are fitted (`pocketbench calibrate --device {id}\n\
         # --import FILE`, or measured ones). `pocketbench devices show {id}` marks\n\
         # what is inherited.\n",
        crate::hostinfo::today(),
        parent.id(),
        new.class,
        new.backend.key().to_uppercase(),
        id = new.id,
    );
    let mut device = Table::new();
    device["id"] = value(&new.id);
    device["name"] = value(match &new.chip {
        Some(chip) => format!("{} ({chip})", new.name),
        None => new.name.clone(),
    });
    if let Some(chip) = &new.chip {
        device["notes"] = value(format!("chip: {chip}"));
    }
    doc["device"] = Item::Table(device);
    let mut facts = Table::new();
    facts.set_implicit(true);
    facts["bandwidth"] = fact(new.bandwidth.to_string(), &given);
    if let Some(c) = new.compute {
        facts["compute"] = fact(c.to_string(), &given);
    }
    if let Some(m) = new.memory {
        facts["memory"] = fact(m.to_string(), &given);
    }
    if new.battery.is_some() || new.battery_energy.is_some() {
        let mut b = Table::new();
        if let Some(c) = new.battery {
            b["capacity"] = value(c.to_string());
        }
        if let Some(v) = new.voltage {
            b["voltage"] = value(v.to_string());
        }
        if let Some(e) = new.battery_energy {
            b["energy"] = value(e.to_string());
        }
        b["source"] = value(given.as_str());
        facts["battery"] = Item::Table(b);
    }
    doc["facts"] = Item::Table(facts);
    if let Some(reach) = new.reach {
        let mut t = Table::new();
        match reach {
            Reach::Adb => {
                t["kind"] = value("adb");
                if let Some(s) = &new.serial {
                    t["serial"] = value(s);
                }
            }
            Reach::Ios => {
                t["kind"] = value("ios");
                t["udid"] = value(new.serial.clone().unwrap_or_default());
                if new.serial.is_none() {
                    t["any"] = value(true);
                }
            }
            Reach::Local => t["kind"] = value("local"),
        }
        doc["transport"] = Item::Table(t);
    }
    if let Some(threads) = new.threads {
        let mut t = Table::new();
        t["threads"] = value(i64::from(threads));
        doc["engine"] = Item::Table(t);
    }
    format!("{header}{doc}")
}

/// Write `new` to `out` (refusing to replace a file unless `force`), after
/// reading it back as the profile loader will: the file passes validation
/// as it is written. Returns the device as it reads.
pub fn write(devices: &Devices, new: &NewDevice, out: &Path, force: bool) -> Result<Device, Error> {
    let replaced = |d: &Device| force && *d.origin() == super::Origin::File(out.to_path_buf());
    if let Some(d) = devices.all().iter().find(|d| d.id() == new.id && !replaced(d)) {
        return Err(Error::usage(format!("a device `{}` exists already ({}): choose another id", new.id, d.origin())));
    }
    if out.exists() && !force {
        return Err(Error::usage(format!("{} exists: pass --force to replace it", out.display())));
    }
    let parent = devices.get_or_built_in(parent_for(&new.class, new.backend, new.reach)?)?;
    let text = text(new, &parent);
    let device = devices.reread(out, &text)?;
    crate::calibrate::write_profile(out, text.as_bytes())?;
    Ok(device)
}
