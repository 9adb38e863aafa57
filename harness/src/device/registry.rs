//! Finding device profiles: a directory of `*.toml` files, or the built-in set.

use std::fmt;
use std::path::{Path, PathBuf};

use super::Device;
use crate::Error;

/// The shipped profiles, compiled in.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("iphone-18-pro", include_str!("../../../devices/iphone-18-pro.toml")),
    ("ipad-pro-m5", include_str!("../../../devices/ipad-pro-m5.toml")),
    ("snapdragon-8-gen-5", include_str!("../../../devices/snapdragon-8-gen-5.toml")),
    ("oneplus-13", include_str!("../../../devices/oneplus-13.toml")),
    ("host", include_str!("../../../devices/host.toml")),
    ("host-llama", include_str!("../../../devices/host-llama.toml")),
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
}

impl Devices {
    /// Load every `*.toml` in `dir`, in order of device id. Every profile is
    /// validated, and every error of every file is returned, not the first.
    pub fn from_dir(dir: &Path) -> Result<Self, Error> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        let (mut list, mut errors) = (Vec::new(), Vec::new());
        for p in &paths {
            match super::load_file(p) {
                Ok(d) => list.push(d),
                Err(e) => errors.push(e),
            }
        }
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

    /// `dir` when given; otherwise `./devices` when it exists; otherwise the built-ins.
    pub fn discover(dir: Option<&Path>) -> Result<Self, Error> {
        match dir {
            Some(d) => Self::from_dir(d),
            None if Path::new("devices").is_dir() => Self::from_dir(Path::new("devices")),
            None => Self::built_in(),
        }
    }

    fn new(list: Vec<Device>) -> Result<Self, Error> {
        for (i, d) in list.iter().enumerate() {
            if list[..i].iter().any(|o| o.id() == d.id()) {
                return Err(Error::DuplicateDevice(d.id().to_string()));
            }
        }
        Ok(Devices { list })
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

    /// Several by id, in the order given.
    pub fn select(&self, ids: &[String]) -> Result<Vec<&Device>, Error> {
        ids.iter().map(|id| self.get(id)).collect()
    }
}
