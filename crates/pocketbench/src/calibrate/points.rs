//! The profile-writing commands, whole: measured records added to a
//! profile as calibration points (`calibrate --add`, `run --save-point`),
//! a fit written back (`calibrate`), and this host's bandwidth recorded
//! (`host-info`). Each checks everything before it writes, and writes whole
//! files.

use std::path::{Path, PathBuf};

use super::{calibrate, point_from_record, with_points_added, write_back, write_profile, Calibration};
use crate::device::{Device, Devices, Origin, PointToml};
use crate::error::Context as _;
use crate::record::Record;
use crate::Error;

/// How `calibrate --add` takes its records.
#[derive(Debug, Clone, Copy, Default)]
pub struct AddOptions {
    /// Hold the points out of the fit.
    pub holdout: bool,
    /// Add a local device's points measured on another machine.
    pub force: bool,
    /// Check and fit, write nothing.
    pub dry_run: bool,
}

/// The profile after `calibrate --add`, and which measurement each point is.
#[derive(Debug)]
pub struct Added {
    /// The device as its profile now reads (or would, with `dry_run`).
    pub device: Device,
    /// Each point: "CONFIG (P+G) from FILE".
    pub added: Vec<String>,
}

fn record_from(file: &Path) -> Result<Record, Error> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::usage(format!("{}: {e}", file.display())))?;
    serde_json::from_str(&text).map_err(|e| Error::usage(format!("{}: not a result record: {e}", file.display())))
}

/// The point of one record file, checked: measured, on `device`, and (for
/// this machine's own profile, unless `force`) on this machine.
fn point_of(devices: &Devices, device: &Device, file: &Path, o: &AddOptions) -> Result<(PointToml, String), Error> {
    let rec = record_from(file)?;
    let point = point_of_record(devices, device, &rec, &file.display().to_string(), o)?;
    let what = format!("{} ({}+{}) from {}", rec.config_name, rec.prompt_tokens, rec.gen_tokens, file.display());
    Ok((point, what))
}

/// The point of one record (`from` names it in errors), checked: measured,
/// on `device`, and (for this machine's own profile, unless `force`) on
/// this machine.
pub fn point_of_record(
    devices: &Devices,
    device: &Device,
    rec: &Record,
    from: &str,
    o: &AddOptions,
) -> Result<PointToml, Error> {
    let id = device.id();
    if rec.device != id {
        return Err(Error::usage(format!("{from}: measured on `{}`, not `{id}`", rec.device)));
    }
    let point = point_from_record(rec, o.holdout)
        .ok_or_else(|| Error::usage(format!("{from}: a predicted record, not a measurement")))?;
    if let (true, false, Some(here)) = (device.is_local(), o.force, devices.here()) {
        if point.machine.as_deref() != Some(here.fingerprint.as_str()) {
            return Err(Error::usage(format!(
                "{from}: measured on another machine ({}, fingerprint {}), not this one ({}, fingerprint {}); a calibration of `{id}` describes this machine: pass --force to add it anyway",
                point.cpu.as_deref().unwrap_or("unrecorded"),
                point.machine.as_deref().unwrap_or("unrecorded"),
                here.describe(),
                here.fingerprint
            )));
        }
    }
    Ok(point)
}

/// `calibrate --add`: every record read and checked first, then the points
/// added together and fitted before anything is written, so a bad third
/// file or a fit that fails leaves the profile as it was.
pub fn add_records(devices: &Devices, id: &str, files: &[PathBuf], o: &AddOptions) -> Result<Added, Error> {
    let device = devices.get(id)?;
    let mut points = Vec::with_capacity(files.len());
    let mut added = Vec::with_capacity(files.len());
    for f in files {
        let (point, what) = point_of(devices, device, f, o)?;
        points.push(point);
        added.push(what);
    }
    let device = add_points(devices, device, &points, o.dry_run)
        .with_context(|| format!("adding calibration points to the profile of `{id}`"))?;
    Ok(Added { device, added })
}

/// `points` added to `device`'s profile (this machine's own copy for a
/// local device) and fitted, then written unless `dry_run`: a fit that
/// fails writes nothing. The device as its profile then reads.
pub fn add_points(devices: &Devices, device: &Device, points: &[PointToml], dry_run: bool) -> Result<Device, Error> {
    let (device, target) = with_points_added(devices, device, points)?;
    calibrate(&device).context("the points were not added (nothing was written)")?;
    if !dry_run {
        write_profile(&target.path, target.text.as_bytes())?;
    }
    Ok(device)
}

/// `run --save-point`: a measured record appended to its device's profile
/// (this machine's own copy for a local device). Returns the profile's origin.
pub fn save_point(devices: &Devices, device: &Device, record: &Record, holdout: bool) -> Result<String, Error> {
    let point = point_from_record(record, holdout)
        .ok_or_else(|| Error::usage(format!("{}: a predicted record, not a measurement", record.config_name)))?;
    let (saved, target) = with_points_added(devices, device, std::slice::from_ref(&point))?;
    write_profile(&target.path, target.text.as_bytes())?;
    Ok(saved.origin().to_string())
}

/// A device's fit, and whether it was written into its profile.
#[derive(Debug)]
pub struct Fitted {
    /// The fit.
    pub calibration: Calibration,
    /// Written (a profile file, not `dry_run`).
    pub written: bool,
}

/// The devices `calibrate` fits: the one named, else every one with points.
pub fn targets<'a>(devices: &'a Devices, id: Option<&str>) -> Result<Vec<&'a Device>, Error> {
    Ok(match id {
        Some(id) => vec![devices.get(id)?],
        None => devices.all().iter().filter(|d| !d.points().is_empty()).collect(),
    })
}

/// `calibrate --device D` (or every device with points): fit each and
/// write it back unless `dry_run`. A device without points is refused.
pub fn fit_devices(targets: &[&Device], dry_run: bool) -> Result<Vec<Fitted>, Error> {
    let mut all = Vec::with_capacity(targets.len());
    for &device in targets {
        if device.points().is_empty() {
            return Err(Error::usage(format!(
                "device `{}` has no calibration points: its parameters are documented priors",
                device.id()
            )));
        }
        let calibration = calibrate(device)?;
        let written = !dry_run && matches!(device.origin(), Origin::File(_));
        if !dry_run {
            write_back(device, &calibration)?;
        }
        all.push(Fitted { calibration, written });
    }
    Ok(all)
}

/// This host's bandwidth, measured, and the profile it was written into.
#[derive(Debug)]
pub struct HostInfo {
    /// This machine.
    pub facts: crate::probe::HostFacts,
    /// Its bandwidth.
    pub bandwidth: crate::hostinfo::Bandwidth,
    /// The profile written (`None` with `dry_run`).
    pub written: Option<PathBuf>,
}

/// `host-info`: measure this host's bandwidth (`buffer_mib`, best of
/// `passes`) and record it in the local device `id`'s profile.
pub fn host_info(
    devices: &Devices,
    id: &str,
    buffer_mib: usize,
    passes: usize,
    dry_run: bool,
) -> Result<HostInfo, Error> {
    let device = devices.get(id)?;
    if device.profile().transport != crate::device::Transport::Local {
        return Err(Error::usage(format!("device `{id}` is not this host (transport is not `local`)")));
    }
    if buffer_mib < 64 || passes == 0 {
        return Err(Error::usage("--buffer-mib must be at least 64 and --passes at least 1"));
    }
    let facts = crate::probe::HostFacts::collect();
    let bandwidth = crate::hostinfo::measure(buffer_mib << 20, passes);
    let written = if dry_run {
        None
    } else {
        // This machine's own profile (made from the loaded one when it has none).
        let target = devices.writable(device)?;
        let text = super::host::with_bandwidth(&target.text, &target.path, &facts, &bandwidth, buffer_mib, passes)?;
        write_profile(&target.path, text.as_bytes())?;
        Some(target.path)
    };
    Ok(HostInfo { facts, bandwidth, written })
}
