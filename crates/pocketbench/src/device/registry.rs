//! Finding device profiles: a directory of `*.toml` files, or the built-in set.

use std::fmt;
use std::path::{Path, PathBuf};

use super::Device;
use crate::Error;

/// The shipped profiles, compiled in.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("iphone-18-pro", include_str!("../../../../devices/iphone-18-pro.toml")),
    ("ipad-pro-m5", include_str!("../../../../devices/ipad-pro-m5.toml")),
    ("snapdragon-8-gen-5", include_str!("../../../../devices/snapdragon-8-gen-5.toml")),
    ("oneplus-13", include_str!("../../../../devices/oneplus-13.toml")),
    ("android-any", include_str!("../../../../devices/android-any.toml")),
    ("ios-any", include_str!("../../../../devices/ios-any.toml")),
    ("host", include_str!("../../../../devices/host.toml")),
    ("host-llama", include_str!("../../../../devices/host-llama.toml")),
];

/// Where a profile came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file on disk (`calibrate` can write it back).
    File(PathBuf),
    /// Compiled into the binary.
    BuiltIn(&'static str),
}

impl Origin {
    /// "file" or "built-in".
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::File(_) => "file",
            Origin::BuiltIn(_) => "built-in",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::BuiltIn(name) => write!(f, "built-in devices/{name}.toml"),
        }
    }
}

/// A set of validated profiles, in a stable order.
#[derive(Debug, Clone)]
pub struct Devices {
    list: Vec<Device>,
    /// This machine's profile folder, when profiles were discovered (not
    /// given with `--devices-dir`) and the platform has a data directory.
    home: Option<PathBuf>,
    /// This machine, when the profiles were assessed against it.
    here: Option<crate::probe::HostFacts>,
}

/// Where a calibration of a local device is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Writable {
    /// The file.
    pub path: PathBuf,
    /// Its text now, or the text of this machine's new copy of the profile.
    pub text: String,
    /// The file does not exist yet: it is this machine's first copy.
    pub new: bool,
}

impl Devices {
    /// Load every `*.toml` in `dir`, in order of device id. Every profile is
    /// validated, and every error of every file is returned, not the first.
    /// A profile `based-on` another takes its parent from the same folder,
    /// else from the built-in profiles.
    pub fn from_dir(dir: &Path) -> Result<Self, Error> {
        Self::from_dir_over(dir, &[])
    }

    /// [`Devices::from_dir`], with `outside` (the profiles this folder
    /// overlays) also parents a profile of it can be based on.
    fn from_dir_over(dir: &Path, outside: &[Device]) -> Result<Self, Error> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        let (mut list, mut errors, mut children) = (Vec::new(), Vec::new(), Vec::new());
        for p in &paths {
            let text = match std::fs::read_to_string(p) {
                Ok(t) => t,
                Err(e) => {
                    errors.push(crate::config::ConfigError::new(p, None, format!("cannot read: {e}")).into());
                    continue;
                }
            };
            match super::based_on::parent_of(&text) {
                Some(parent) => children.push(Child { path: p.clone(), text, parent }),
                None => match super::parse(Origin::File(p.clone()), &text) {
                    Ok(d) => list.push(d),
                    Err(e) => errors.push(e),
                },
            }
        }
        resolve(children, &mut list, &mut errors, outside);
        match errors.len() {
            0 => {}
            1 => return Err(errors.remove(0)),
            _ => return Err(Error::Profiles(errors)),
        }
        list.sort_by(|a, b| a.id().cmp(b.id()));
        Self::new(list)
    }

    /// The profiles compiled into the binary.
    pub fn built_in() -> Result<Self, Error> {
        let list = BUILT_IN
            .iter()
            .map(|(name, text)| super::parse(Origin::BuiltIn(name), text))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(list)
    }

    /// `dir` alone when given; otherwise this machine's profiles (see
    /// [`super::home`]) over `./devices` when it exists, else over the
    /// built-ins. Local profiles are then assessed against this machine
    /// ([`Device::assess_on`]).
    pub fn discover(dir: Option<&Path>) -> Result<Self, Error> {
        let here = crate::probe::HostFacts::collect();
        let home = super::home::data_dir().map(|d| super::home::machine_dir(&d, &here.fingerprint));
        Self::discover_with(dir, home.as_deref(), here)
    }

    /// [`Devices::discover`] with this machine's folder and facts given.
    pub fn discover_with(
        dir: Option<&Path>,
        home: Option<&Path>,
        here: crate::probe::HostFacts,
    ) -> Result<Self, Error> {
        let mut devices = match dir {
            Some(d) if !d.is_dir() => {
                return Err(Error::usage(format!(
                    "--devices-dir {}: no such folder (it should hold device profiles, *.toml)",
                    d.display()
                )))
            }
            Some(d) => Self::from_dir(d)?,
            None if Path::new("devices").is_dir() => Self::from_dir(Path::new("devices"))?,
            None => Self::built_in()?,
        };
        if dir.is_none() {
            if let Some(home) = home {
                devices.overlay(home)?;
                devices.home = Some(home.to_path_buf());
            }
        }
        devices.assess(here);
        Ok(devices)
    }

    /// Assess every local profile against `here` ([`Device::assess_on`]).
    pub fn assess(&mut self, here: crate::probe::HostFacts) {
        for d in &mut self.list {
            d.assess_on(&here);
        }
        self.here = Some(here);
    }

    /// Put the profiles of `dir` (when it exists) in place of those of the
    /// same id.
    fn overlay(&mut self, dir: &Path) -> Result<(), Error> {
        if !dir.is_dir() {
            return Ok(());
        }
        for d in Self::from_dir_over(dir, &self.list)?.list {
            match self.list.iter_mut().find(|o| o.id() == d.id()) {
                Some(slot) => *slot = d,
                None => self.list.push(d),
            }
        }
        self.list.sort_by(|a, b| a.id().cmp(b.id()));
        Ok(())
    }

    fn new(list: Vec<Device>) -> Result<Self, Error> {
        for (i, d) in list.iter().enumerate() {
            if list[..i].iter().any(|o| o.id() == d.id()) {
                return Err(Error::DuplicateDevice(d.id().to_string()));
            }
        }
        Ok(Devices { list, home: None, here: None })
    }

    /// This machine, when the profiles were discovered on it.
    pub fn here(&self) -> Option<&crate::probe::HostFacts> {
        self.here.as_ref()
    }

    /// This machine's profile folder (which need not exist yet).
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The profile `text` as it reads from `path` on this machine: parsed,
    /// validated and assessed against this machine (a profile about to be
    /// written, or just changed in memory).
    pub fn reread(&self, path: &Path, text: &str) -> Result<Device, Error> {
        let origin = Origin::File(path.to_path_buf());
        let mut d = match super::based_on::parent_of(text) {
            Some(parent) => {
                let built_in = Self::built_in_list();
                let found = self.list.iter().chain(&built_in).find(|d| d.id() == parent);
                match found {
                    Some(p) => super::based_on::parse(origin, text, p)?,
                    None => return Err(super::based_on::unresolved(path, text, &parent, None, &self.ids())),
                }
            }
            None => super::parse(origin, text)?,
        };
        if let Some(here) = &self.here {
            d.assess_on(here);
        }
        Ok(d)
    }

    /// Where a calibration of `d` is written: `d`'s own file when it is
    /// this machine's already, or when profiles came from `--devices-dir`
    /// (which wins) or the platform has no data directory; otherwise a new
    /// file in this machine's folder, made from `d` by [`super::home::fork`].
    /// Devices that are not local are written where they were loaded from.
    pub fn writable(&self, d: &Device) -> Result<Writable, Error> {
        let own = |path: &Path| -> Result<Writable, Error> {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            Ok(Writable { path: path.to_path_buf(), text, new: false })
        };
        let (Some(home), Some(here), true) = (&self.home, &self.here, d.is_local()) else {
            return match &d.origin {
                Origin::File(p) => own(p),
                Origin::BuiltIn(_) => Err(Error::BuiltIn(d.id().into())),
            };
        };
        if let Origin::File(p) = &d.origin {
            if p.starts_with(home) {
                return own(p);
            }
        }
        let base = match d.based_on() {
            // This machine's copy stands on its own: the profile as it reads.
            Some(b) => toml::to_string(d.profile())
                .map(|t| format!("# `{}` as it read over `{}` ({}).\n{t}", d.id(), b.parent, b.parent_origin))
                .map_err(|e| Error::ProfileWrite { path: d.origin.to_string(), message: e.to_string() })?,
            None => super::home::text_of(&d.origin).map_err(|e| Error::io(Path::new(&d.origin.to_string()), e))?,
        };
        let text = super::home::fork(d, &base, here)
            .map_err(|e| Error::ProfileWrite { path: d.origin.to_string(), message: e.to_string() })?;
        Ok(Writable { path: home.join(format!("{}.toml", d.id())), text, new: true })
    }

    fn ids(&self) -> Vec<String> {
        self.list.iter().map(|d| d.id().to_string()).collect()
    }

    /// The built-in profiles (none if one of them did not load, which
    /// [`Devices::built_in`] reports).
    fn built_in_list() -> Vec<Device> {
        Self::built_in().map(|d| d.list).unwrap_or_default()
    }

    /// All profiles.
    pub fn all(&self) -> &[Device] {
        &self.list
    }

    /// One profile by id.
    pub fn get(&self, id: &str) -> Result<&Device, Error> {
        self.list.iter().find(|d| d.id() == id).ok_or_else(|| Error::UnknownDevice {
            id: id.to_string(),
            known: self.list.iter().map(|d| d.id().to_string()).collect::<Vec<_>>().join(", "),
        })
    }

    /// One profile by id, else the built-in one of that id (the parent of a
    /// profile written for a folder of others).
    pub fn get_or_built_in(&self, id: &str) -> Result<Device, Error> {
        match self.get(id) {
            Ok(d) => Ok(d.clone()),
            Err(e) => Self::built_in_list().into_iter().find(|d| d.id() == id).ok_or(e),
        }
    }

    /// Several by id, in the order given.
    pub fn select(&self, ids: &[String]) -> Result<Vec<&Device>, Error> {
        ids.iter().map(|id| self.get(id)).collect()
    }

    /// These devices and, for every id of `ids` written `ID@CLASS` or
    /// `ID@CLASS/BACKEND` (a sweep's device list), device `ID` predicting
    /// for that engine class ([`crate::calibrate::classes::for_class`]),
    /// under that very id.
    pub fn with_classes(&self, ids: &[String]) -> Result<Devices, Error> {
        let mut out = self.clone();
        for id in ids {
            let Some((base, class)) = id.split_once('@') else { continue };
            if out.list.iter().any(|d| d.id() == id) {
                continue;
            }
            let d = crate::calibrate::classes::for_class(self.get(base)?, class)
                .map_err(|e| Error::usage(format!("device `{id}`: {e}")))?;
            out.list.push(d.renamed(id));
        }
        Ok(out)
    }
}

/// A profile based on another, waiting for its parent.
struct Child {
    path: PathBuf,
    text: String,
    parent: String,
}

/// Read every profile based on another once its parent is read: a parent
/// of the same folder first, then of `outside`, then built in. What is left
/// names a parent that is not there, or is part of a loop.
fn resolve(mut pending: Vec<Child>, list: &mut Vec<Device>, errors: &mut Vec<Error>, outside: &[Device]) {
    let built_in = if pending.is_empty() { Vec::new() } else { Devices::built_in_list() };
    loop {
        let before = pending.len();
        let mut waiting = Vec::new();
        for c in pending {
            let parent = list.iter().chain(outside).chain(&built_in).find(|d| d.id() == c.parent).cloned();
            match parent {
                Some(p) => match super::based_on::parse(Origin::File(c.path.clone()), &c.text, &p) {
                    Ok(d) => list.push(d),
                    Err(e) => errors.push(e),
                },
                None => waiting.push(c),
            }
        }
        pending = waiting;
        if pending.is_empty() || pending.len() == before {
            break;
        }
    }
    let mut known: Vec<String> = list.iter().chain(outside).chain(&built_in).map(|d| d.id().to_string()).collect();
    known.sort();
    known.dedup();
    let ids: Vec<(String, String)> =
        pending.iter().map(|c| (super::based_on::id_of(&c.text).unwrap_or_default(), c.parent.clone())).collect();
    for c in &pending {
        // Follow the parents through the waiting profiles: back to one seen is a loop.
        let mut chain = vec![super::based_on::id_of(&c.text).unwrap_or_default()];
        let mut next = c.parent.clone();
        let looped = loop {
            if chain.contains(&next) {
                chain.push(next);
                break true;
            }
            chain.push(next.clone());
            match ids.iter().find(|(id, _)| *id == next) {
                Some((_, parent)) => next = parent.clone(),
                None => break false,
            }
        };
        errors.push(super::based_on::unresolved(&c.path, &c.text, &c.parent, looped.then_some(chain), &known));
    }
}
