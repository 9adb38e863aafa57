//! Where host calibrations live. A calibration of this machine belongs to
//! this machine, not to a repository: it is kept in the user's data
//! directory under the machine's fingerprint,
//! `$POCKETBENCH_DATA_DIR` or `$XDG_DATA_HOME/pocketbench` (the platform's
//! data directory elsewhere), then `devices/<fingerprint>/<id>.toml`.
//!
//! Profiles are looked up in this order: `--devices-dir` alone when given;
//! otherwise this machine's profiles first, then `./devices`, then the
//! built-in copies.

use std::path::{Path, PathBuf};

use super::{Device, Origin};
use crate::probe::HostFacts;
use crate::units::{ByteSize, Compute};

/// Overrides the data directory (tests, CI, a shared machine).
pub const DATA_DIR_ENV: &str = "POCKETBENCH_DATA_DIR";

/// pocketbench's data directory, when the platform has one.
pub fn data_dir() -> Option<PathBuf> {
    std::env::var_os(DATA_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("pocketbench")))
}

/// The folder of one machine's profiles under `data`.
pub fn machine_dir(data: &Path, fingerprint: &str) -> PathBuf {
    data.join("devices").join(fingerprint)
}

/// The text of a profile as loaded: its file, or its built-in copy.
pub fn text_of(origin: &Origin) -> std::io::Result<String> {
    match origin {
        Origin::File(p) => std::fs::read_to_string(p),
        Origin::BuiltIn(name) => super::BUILT_IN
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| (*t).to_string())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, format!("no built-in profile {name}"))),
    }
}

/// This machine's copy of local profile `d` (its text `text`): the same
/// engine, budgets and fixed parameters, without `d`'s calibration points;
/// its fitted parameters kept as priors and labelled as such; its facts
/// those of this machine where they can be read (memory, an estimated
/// compute rate) and labelled as copied where they cannot (bandwidth, until
/// it is measured).
pub fn fork(d: &Device, text: &str, here: &HostFacts) -> Result<String, toml_edit::TomlError> {
    use toml_edit::value;
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    doc.remove("calibration");
    if let Some(m) = doc.get_mut("model").and_then(|m| m.as_table_like_mut()) {
        m.remove("fitted-digest");
    }
    let id = d.id();
    for p in &d.profile.model.fit {
        doc["model"][p.key()]["source"] = value(format!(
            "prior: the value in {} ({}), until `pocketbench calibrate --device {id} --measure` fits this machine",
            d.origin, d.state
        ));
    }
    doc["device"]["name"] = value(format!("this host ({}, {} logical CPUs)", here.cpu, here.logical_cpus));
    doc["facts"]["bandwidth"]["source"] = value(format!(
        "E: copied from {}, another machine's, until `pocketbench host-info` or `calibrate --measure` reads this one",
        d.origin
    ));
    if here.memory_bytes > 0 {
        doc["facts"]["memory"]["value"] = value(ByteSize(here.memory_bytes as f64).to_string());
        doc["facts"]["memory"]["source"] = value("measured: total memory (sysinfo)");
    }
    if let Some((flops, source)) = compute_estimate(here) {
        doc["facts"]["compute"]["value"] = value(Compute(flops).to_string());
        doc["facts"]["compute"]["source"] = value(source);
    }
    if let Some(t) = doc.get_mut("device").and_then(|t| t.as_table_mut()) {
        t.decor_mut().set_prefix(format!(
            "# This machine's `{id}` profile, made by pocketbench {} on {} from {}.\n# Machine {}: {}\n# `pocketbench calibrate --device {id} --measure` measures and fits it.\n\n",
            env!("CARGO_PKG_VERSION"),
            crate::hostinfo::today(),
            d.origin,
            here.fingerprint,
            here.describe()
        ));
    }
    Ok(doc.to_string())
}

/// An estimate of the peak int8 dot-product rate, the arithmetic the
/// engines' prefill runs on a CPU (8-bit activations against 4- or 8-bit
/// weights widened to 8 bits: the native engine's tiles and llama.cpp's
/// `vec_dot` alike): cores x int8 ops per cycle x clock. Compute efficiency
/// is fitted against it, so it only has to be labelled, not exact.
fn compute_estimate(here: &HostFacts) -> Option<(f64, String)> {
    let has = |f: &str| here.features.iter().any(|x| x == f);
    let (per_cycle, why) = if has("avx512vnni") {
        (256.0, "2 x 512-bit VPDPBUSD, 64 multiply-adds each")
    } else if has("avxvnni") {
        (128.0, "2 x 256-bit VPDPBUSD")
    } else if has("avx2") {
        (64.0, "VPMADDUBSW + VPMADDWD, about half the VNNI rate")
    } else if has("dotprod") {
        (64.0, "2 x 128-bit SDOT")
    } else if has("neon") {
        (32.0, "2 x 128-bit SMLAL pairs")
    } else {
        return None;
    };
    let (mhz, clock) = clock_mhz(here)?;
    let cores = here.physical_cores.unwrap_or(here.logical_cpus).max(1);
    Some((
        cores as f64 * per_cycle * mhz * 1e6,
        format!(
            "E: {cores} cores x {per_cycle} int8 ops/cycle ({why}, assumed from the CPU's features) x {:.2} GHz ({clock})",
            mhz / 1e3
        ),
    ))
}

/// The clock a compute estimate uses, MHz, and where it comes from: the
/// boost clock (`cpuinfo_max_freq`, the highest core's) where cpufreq is
/// readable, since a short prefill runs at it; else `/proc/cpuinfo`'s
/// `cpu MHz`, which on a VM is the base clock (a fit that finds prefill
/// faster than it allows says so, and raises the fact to what the
/// measurements imply).
fn clock_mhz(here: &HostFacts) -> Option<(f64, &'static str)> {
    if let Some(khz) = here.cpu_max_khz.iter().copied().max().filter(|k| *k > 0) {
        return Some((khz as f64 / 1e3, "boost clock: the highest cpufreq/cpuinfo_max_freq"));
    }
    let mhz: f64 = std::fs::read_to_string("/proc/cpuinfo").ok()?.lines().find_map(|l| {
        l.split_once(':').filter(|(k, _)| k.trim() == "cpu MHz").and_then(|(_, v)| v.trim().parse().ok())
    })?;
    Some((mhz, "/proc/cpuinfo `cpu MHz`: the base clock on a VM; no cpufreq here, so the boost clock is unknown"))
}
