//! `based-on = "ID"`: a profile that takes every fact, engine setting,
//! budget and model parameter of another and overrides only what it names.
//!
//! Tables merge key by key; a fact or parameter (a table with a `value`) is
//! replaced whole, so that a value never keeps another value's source, and
//! so is a table of one kind (`[transport] kind`) and an array (`[model]
//! fit`). The parent's calibration points
//! come too only when the profile describes the same machine and engine: it
//! names no fact and keeps the engine class. Otherwise they stay with the
//! parent, whose fitted values become this profile's priors, labelled so.
//! The profile's own points come first, so an error in one is located at
//! its line.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::{Device, Origin, ProfileToml};
use crate::config::ConfigError;
use crate::Error;

/// The key.
pub const KEY: &str = "based-on";

/// What a profile took from the one it is based on.
#[derive(Debug, Clone, PartialEq)]
pub struct BasedOn {
    /// The parent's id.
    pub parent: String,
    /// Where the parent was loaded from.
    pub parent_origin: String,
    /// Every key taken from the parent as it was (`facts.memory`,
    /// `model.layer-cost`, `transport`), in the parent's order.
    pub inherited: Vec<String>,
    /// How many of the parent's calibration points were taken.
    pub points: usize,
    /// Why the parent's points were left with it, when they were.
    pub points_left: Option<String>,
    /// The parent as it reads, to read this profile's text again.
    parent_table: Table,
    /// The parent's engine class.
    parent_class: String,
}

impl BasedOn {
    /// Whether `key` (`facts.bandwidth`) was taken from the parent, whole or
    /// with the table it is in.
    pub fn inherits(&self, key: &str) -> bool {
        self.inherited.iter().any(|k| k == key || key.starts_with(&format!("{k}.")))
    }
}

/// The parent a profile's text names, when it names one.
pub fn parent_of(text: &str) -> Option<String> {
    let table: Table = toml::from_str(text).ok()?;
    table.get(KEY).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

/// The id a profile's text gives itself, when it parses.
pub fn id_of(text: &str) -> Option<String> {
    let table: Table = toml::from_str(text).ok()?;
    table.get("device")?.get("id")?.as_str().map(str::to_string)
}

/// Read `text` as a profile based on `parent`.
pub fn parse(origin: Origin, text: &str, parent: &Device) -> Result<Device, Error> {
    let path = PathBuf::from(origin.to_string());
    let table = Table::try_from(parent.profile()).map_err(|e| {
        ConfigError::new(&path, Some(KEY.into()), format!("the profile of `{}` cannot be read back: {e}", parent.id()))
    })?;
    let base = BasedOn {
        parent: parent.id().to_string(),
        parent_origin: parent.origin().to_string(),
        inherited: Vec::new(),
        points: 0,
        points_left: None,
        parent_table: table,
        parent_class: parent.profile().engine.class().to_string(),
    };
    parse_over(origin, text, base)
}

/// Read `text`, a profile about to be written or changed in memory: over
/// the parent `device` was read over when the text names one, else on its
/// own (this machine's standalone copy of a based-on profile).
pub fn reparse(device: &Device, origin: Origin, text: &str) -> Result<Device, Error> {
    match (&device.based_on, parent_of(text)) {
        (Some(b), Some(_)) => parse_over(origin, text, BasedOn { inherited: Vec::new(), ..(**b).clone() }),
        _ => super::parse(origin, text),
    }
}

fn error(path: &Path, text: &str, key: &str, message: impl Into<String>) -> Error {
    let mut e = ConfigError::new(path, Some(key.into()), message);
    if let Some((line, column)) = crate::config::position_of(text, key) {
        (e.line, e.column) = (Some(line), Some(column));
    }
    Error::Config(Box::new(e))
}

fn parse_over(origin: Origin, text: &str, mut base: BasedOn) -> Result<Device, Error> {
    let path = PathBuf::from(origin.to_string());
    let mut child: Table = crate::config::parse(&path, text)?;
    child.remove(KEY);
    let parent = base.parent.clone();
    match child.get("device").and_then(|d| d.get("id")).and_then(Value::as_str) {
        None => {
            return Err(error(
                &path,
                text,
                "device",
                format!("a profile based on `{parent}` names its own `[device] id`"),
            ))
        }
        Some(id) if id == parent => return Err(error(&path, text, KEY, format!("`{id}` cannot be based on itself"))),
        Some(_) => {}
    }
    let own_points = match child.remove("calibration") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(error(&path, text, "calibration", "must be an array of tables (`[[calibration]]`)")),
        None => Vec::new(),
    };
    let names_facts = child.get("facts").and_then(Value::as_table).is_some_and(|t| !t.is_empty());
    let mut merged = merge(&base.parent_table, &child, "", &mut base.inherited);
    let class = engine_class(&merged);
    base.points_left = if class != base.parent_class {
        Some(format!("measured by the {} engine class; this profile describes {class}", base.parent_class))
    } else if names_facts {
        Some("measured on the parent's hardware; this profile names facts of its own".into())
    } else {
        None
    };
    let parent_points = match base.parent_table.get("calibration") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let parent_points = if base.points_left.is_none() {
        parent_points
    } else {
        // Its fit stays behind with its points: the values are priors here.
        if !parent_points.is_empty() {
            label_priors(&mut merged, &base);
        }
        Vec::new()
    };
    base.points = parent_points.len();
    let all: Vec<Value> = own_points.into_iter().chain(parent_points).collect();
    if !all.is_empty() {
        merged.insert("calibration".into(), Value::Array(all));
    }
    if base.inherited.iter().any(|k| k == "device.name") {
        if let Some(Value::Table(d)) = merged.get_mut("device") {
            let name = d.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            d.insert("name".into(), Value::String(format!("{name} (as {})", child_id(&child))));
        }
    }
    let profile: ProfileToml = deserialize(merged, &path, text)?;
    let mut device = Device::from_profile(profile, origin).map_err(|e| e.located(text))?;
    device.based_on = Some(Box::new(base));
    Ok(device)
}

fn child_id(child: &Table) -> String {
    child.get("device").and_then(|d| d.get("id")).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The engine class of a merged profile table: `[engine] class`, else its
/// probe's.
fn engine_class(t: &Table) -> String {
    let engine = t.get("engine").and_then(Value::as_table);
    if let Some(c) = engine.and_then(|e| e.get("class")).and_then(Value::as_str) {
        return c.to_string();
    }
    let probe = engine.and_then(|e| e.get("probe")).and_then(Value::as_str).unwrap_or("native");
    probe.parse::<crate::probe::EngineKind>().map_or_else(|_| probe.to_string(), |k| k.class().to_string())
}

/// `child` over `parent`: tables key by key, a fact or parameter (a table
/// with a `value`) and every other value whole. Records each key taken.
fn merge(parent: &Table, child: &Table, path: &str, inherited: &mut Vec<String>) -> Table {
    let mut out = child.clone();
    for (k, pv) in parent {
        if path.is_empty() && k == "calibration" {
            continue;
        }
        let key = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
        match (out.get_mut(k), pv) {
            (None, _) => {
                out.insert(k.clone(), pv.clone());
                inherited.push(key);
            }
            (Some(Value::Table(ct)), Value::Table(pt)) if !whole(ct) && !whole(pt) => {
                *ct = merge(pt, ct, &key, inherited);
            }
            _ => {}
        }
    }
    out
}

/// A table replaced whole: a fact or parameter (`value` and its `source`),
/// or one of several kinds (`[transport] kind = ...`).
fn whole(t: &Table) -> bool {
    t.contains_key("value") || t.contains_key("kind")
}

/// The parent's fitted values, taken without the points they were fitted
/// to, are priors here: their sources say so.
fn label_priors(merged: &mut Table, base: &BasedOn) {
    let Some(Value::Table(model)) = merged.get_mut("model") else { return };
    for (k, v) in model.iter_mut() {
        let key = format!("model.{k}");
        let Value::Table(param) = v else { continue };
        if !base.inherits(&key) || !param.contains_key("value") {
            continue;
        }
        if let Some(Value::String(source)) = param.get_mut("source") {
            if source.starts_with("fitted") {
                *source = format!("prior: `{}`'s fitted value ({source})", base.parent);
            }
        }
    }
}

/// The merged table as a profile; an error is located at its key in the
/// profile's own text where it is written there.
fn deserialize(merged: Table, path: &Path, text: &str) -> Result<ProfileToml, Error> {
    serde_path_to_error::deserialize(Value::Table(merged)).map_err(|e| {
        let mut key = e.path().to_string();
        let message = e.into_inner().to_string().trim().replace('\n', ": ");
        // An unknown field is reported at its table: name the field itself.
        if let Some(field) = message.strip_prefix("unknown field `").and_then(|m| m.split('`').next()) {
            if key == "." || key.is_empty() {
                key = field.to_string();
            } else if !key.ends_with(&format!(".{field}")) && key != field {
                key = format!("{key}.{field}");
            }
        }
        error(path, text, &key, message)
    })
}

/// Why `text` (at `path`, naming `parent`) could not be read: a loop of
/// `based-on`, or a parent that is not loaded.
pub fn unresolved(path: &Path, text: &str, parent: &str, chain: Option<Vec<String>>, known: &[String]) -> Error {
    let message = match chain {
        Some(chain) => format!("a loop of `based-on`: {}", chain.join(" -> ")),
        None => format!(
            "no device `{parent}` to base it on (known: {}): `based-on` names a profile of the same folder, this machine's, or a built-in one",
            known.join(", ")
        ),
    };
    error(path, text, KEY, message)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::device::Devices;

    const LLAMA: &str =
        "based-on = \"host\"\n\n[device]\nid = \"my-llama\"\nname = \"this host through llama-bench\"\n\n\
        [engine]\nname = \"llama.cpp (llama-bench)\"\nprobe = \"llama-bench\"\n\n\
        [model]\nfit = [\"bandwidth-efficiency\", \"layer-cost\", \"compute-efficiency\"]\n";

    /// A folder with the repository's `host` and `files`.
    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../devices/host.toml");
        std::fs::copy(host, dir.path().join("host.toml")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    fn load(files: &[(&str, &str)]) -> Result<Devices, crate::Error> {
        let dir = folder(files);
        Devices::from_dir(dir.path())
    }

    #[test]
    fn a_profile_takes_what_it_does_not_name() {
        let devices = load(&[("my-llama.toml", LLAMA)]).unwrap();
        let (host, mine) = (devices.get("host").unwrap(), devices.get("my-llama").unwrap());
        assert_eq!(mine.model().bandwidth, host.model().bandwidth);
        assert_eq!(mine.budgets(), host.budgets());
        assert_eq!(mine.profile().engine.threads, host.profile().engine.threads);
        assert_eq!(mine.profile().engine.class(), "llama.cpp");
        let b = mine.based_on().unwrap();
        assert_eq!(b.parent, "host");
        assert!(b.inherits("facts.bandwidth") && b.inherits("engine.threads") && b.inherits("transport"));
        assert!(!b.inherits("engine.name") && !b.inherits("model.fit") && !b.inherits("device.id"));
        // Another engine class: the parent's points stay with it, and its
        // fitted values are labelled priors.
        assert!(mine.points().is_empty(), "{:?}", mine.points().len());
        assert!(b.points_left.as_deref().unwrap().contains("native"), "{b:?}");
        let cost = &mine.profile().model;
        let text = toml::to_string(cost).unwrap();
        assert!(text.contains("prior: `host`'s fitted value"), "{text}");
        assert_eq!(mine.profile().device.name, "this host through llama-bench");
    }

    #[test]
    fn the_same_machine_and_engine_take_the_points_too() {
        let budget = "based-on = \"host\"\n[device]\nid = \"strict-host\"\n[budgets]\ndecode = \"400 tok/s\"\n";
        let devices = load(&[("strict.toml", budget)]).unwrap();
        let (host, strict) = (devices.get("host").unwrap(), devices.get("strict-host").unwrap());
        assert_eq!(strict.points().len(), host.points().len());
        assert_eq!(strict.based_on().unwrap().points, host.points().len());
        assert_eq!(strict.budgets().decode_tok_s, 400.0);
        assert_eq!(strict.budgets().memory_bytes, host.budgets().memory_bytes);
        assert_eq!(strict.profile().device.name, format!("{} (as strict-host)", host.profile().device.name));
        // The same inputs of the fit: calibrated as the parent is.
        assert_eq!(strict.digest(), host.digest());
        // A fact of its own: another machine, whose points are its own.
        let faster = "based-on = \"host\"\n[device]\nid = \"fast-host\"\n\n[facts.bandwidth]\nvalue = \"90 GB/s\"\nsource = \"me\"\n";
        let devices = load(&[("fast.toml", faster)]).unwrap();
        let fast = devices.get("fast-host").unwrap();
        assert!(fast.points().is_empty());
        assert_eq!(fast.model().bandwidth, 90e9);
        assert!(fast.based_on().unwrap().points_left.as_deref().unwrap().contains("facts of its own"));
    }

    #[test]
    fn parents_resolve_in_any_order_and_from_the_built_ins() {
        // `a` is read before the `my-llama` it is based on; `oneplus-13` is built in.
        let chain = "based-on = \"my-llama\"\n[device]\nid = \"a\"\n[engine]\nthreads = 1\n";
        let phone = "based-on = \"oneplus-13\"\n[device]\nid = \"my-phone\"\nname = \"mine\"\n";
        let devices = load(&[("a.toml", chain), ("my-llama.toml", LLAMA), ("phone.toml", phone)]).unwrap();
        let a = devices.get("a").unwrap();
        assert_eq!(a.profile().engine.name, "llama.cpp (llama-bench)");
        assert_eq!(a.profile().engine.threads, Some(1));
        assert_eq!(devices.get("my-phone").unwrap().profile().engine.class(), "mnn");
    }

    #[test]
    fn bad_parents_and_overrides_are_located() {
        /// Files, where the error is, and what it says.
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a [&'a str]);
        let cases: &[Case] = &[
            (&[("x.toml", "based-on = \"nope\"\n[device]\nid = \"x\"\n")], "x.toml:1:12", &["no device `nope`", "host"]),
            (
                &[("a.toml", "based-on = \"b\"\n[device]\nid = \"a\"\n"), ("b.toml", "based-on = \"a\"\n[device]\nid = \"b\"\n")],
                "a.toml:1:12",
                &["a loop of `based-on`: a -> b -> a"],
            ),
            (
                &[("x.toml", "based-on = \"host\"\n[device]\nid = \"x\"\n\n[facts.bandwidthh]\nvalue = \"1 GB/s\"\nsource = \"me\"\n")],
                "x.toml:6:9",
                &["unknown field `bandwidthh`", "facts.bandwidthh"],
            ),
            (&[("x.toml", "based-on = \"host\"\n[device]\nname = \"x\"\n")], "x.toml:2:1", &["names its own `[device] id`"]),
            (&[("x.toml", "based-on = \"host\"\n[device]\nid = \"host\"\n")], "x.toml:1:12", &["based on itself"]),
            (
                &[("x.toml", "based-on = \"host\"\n[device]\nid = \"x\"\n[engine]\nclass = \"tflite\"\n")],
                "x.toml:5:9",
                &["unknown engine class `tflite`"],
            ),
        ];
        for (files, at, says) in cases {
            let e = load(files).err().unwrap_or_else(|| panic!("{files:?} loaded")).to_string();
            assert!(e.contains(at), "{at}: {e}");
            for s in *says {
                assert!(e.contains(s), "{s}: {e}");
            }
        }
    }

    #[test]
    fn a_profile_written_by_devices_add_loads_as_written() {
        use crate::device::add::{self, NewDevice, Reach};
        use crate::device::Backend;
        let dir = folder(&[]);
        let devices = Devices::from_dir(dir.path()).unwrap();
        let new = NewDevice {
            id: "my-phone".into(),
            name: "Test phone".into(),
            chip: Some("Snapdragon 8 Elite".into()),
            memory: Some(crate::units::ByteSize(12e9)),
            bandwidth: crate::units::Bandwidth(84.8e9),
            compute: None,
            battery: Some(crate::units::Charge(5000.0 * 3.6)),
            voltage: Some(crate::units::Voltage(3.87)),
            battery_energy: None,
            source: Some("a spec sheet".into()),
            class: "mnn".into(),
            backend: Backend::Cpu,
            threads: Some(6),
            reach: Some(Reach::Adb),
            serial: Some("R5CT".into()),
        };
        let out = dir.path().join("my-phone.toml");
        let written = add::write(&devices, &new, &out, false).unwrap();
        let again = Devices::from_dir(dir.path()).unwrap();
        let phone = again.get("my-phone").unwrap();
        assert_eq!(phone.based_on().unwrap().parent, "oneplus-13");
        assert_eq!(phone.model().bandwidth, 84.8e9);
        assert_eq!(phone.profile().engine.threads, Some(6));
        assert_eq!(phone.profile().engine.class(), "mnn");
        assert!(phone.based_on().unwrap().inherits("facts.compute"));
        assert_eq!(phone.digest(), written.digest());
        let e = add::write(&again, &new, &out, false).unwrap_err().to_string();
        assert!(e.contains("exists already"), "{e}");
        assert!(add::write(&again, &new, &out, true).is_ok());
        let gpu = add::parent_for("llama.cpp", Backend::Gpu, None).unwrap_err().to_string();
        assert!(gpu.contains("no built-in profile of the llama.cpp engine class on a GPU"), "{gpu}");
    }
}
