//! Writing into profile text: the fitted values with their sources and
//! digest, new calibration points, and a point made from a measured record.

use std::path::Path;

use super::Calibration;
use crate::device::{Device, Devices, FreeParam, Origin};
use crate::units::{ByteSize, Duration, Fraction, Power};
use crate::Error;

/// A parameter value in the unit its TOML key takes.
pub fn display_param(p: FreeParam, v: f64) -> String {
    match p {
        FreeParam::BandwidthEfficiency
        | FreeParam::ComputeEfficiency
        | FreeParam::WeightExtra
        | FreeParam::CacheEfficiency => Fraction(v).to_string(),
        FreeParam::LayerCost
        | FreeParam::TokenCost
        | FreeParam::AttentionCost
        | FreeParam::KvCost
        | FreeParam::PrefillAttentionCost => Duration(v).to_string(),
        FreeParam::EngineOverhead | FreeParam::CacheSize => ByteSize(v).to_string(),
        FreeParam::ActivePower => Power(v).to_string(),
        FreeParam::EmbeddingExtra => crate::units::BytesPerParam(v).to_string(),
    }
}

/// Write the fitted values, their source and the digest into the profile
/// file, keeping its comments and layout (`toml_edit`).
pub fn write_back(device: &Device, cal: &Calibration) -> Result<(), Error> {
    let path = match &device.origin() {
        Origin::File(p) => p.clone(),
        Origin::BuiltIn(_) => return Err(Error::BuiltIn(device.id().into())),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| write_error(&path, e))?;
    let text = fitted_text(&text, device, cal)?;
    write_atomic(&path, text.as_bytes()).map_err(|e| write_error(&path, e))
}

/// The profile at `path` cannot be updated, because of `e`.
fn write_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::ProfileWrite { path: path.display().to_string(), message: e.to_string() }
}

/// `text` (the profile of `device`) with the fitted values, their source and
/// the digest of `cal` written in.
pub fn fitted_text(text: &str, device: &Device, cal: &Calibration) -> Result<String, Error> {
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e: toml_edit::TomlError| write_error(Path::new(&device.origin().to_string()), e))?;
    let n = device.points().iter().filter(|p| !p.holdout).count();
    let held = device.points().len() - n;
    let held = if held > 0 { format!(" ({held} more held out)") } else { String::new() };
    for p in &device.profile().model.fit {
        let item = &mut doc["model"][p.key()];
        item["value"] = toml_edit::value(display_param(*p, cal.params.get(*p)));
        let bound = if cal.at_bound.iter().any(|k| k == p.key()) { "; ended on the bound of its range" } else { "" };
        item["source"] = toml_edit::value(format!(
            "fitted by `pocketbench calibrate` to the {n} calibration point(s) below{held}{bound}"
        ));
    }
    let digest = match &cal.compute_fact {
        None => cal.digest.clone(),
        Some(c) => {
            doc["facts"]["compute"]["value"] = toml_edit::value(crate::units::Compute(c.flops).to_string());
            doc["facts"]["compute"]["source"] = toml_edit::value(c.source.clone());
            // The digest covers the facts: the fitted profile's, not the
            // one it was made from.
            device.reparse(device.origin().clone(), &doc.to_string())?.digest().to_string()
        }
    };
    doc["model"]["fitted-digest"] = toml_edit::value(digest);
    Ok(doc.to_string())
}

/// Write via a temporary file and rename (the probe's writer: one for both).
pub use crate::probe::entry::write_atomic;

/// Write `bytes` to `path` atomically, making its folder first (this
/// machine's profile folder may not exist yet).
pub fn write_profile(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let werr = |e: std::io::Error| write_error(path, e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(werr)?;
    }
    write_atomic(path, bytes).map_err(werr)
}

/// Profile text with `points` appended, each a new `[[calibration]]` table
/// at the end, the rest of the text untouched. The fit is stale afterwards
/// until `calibrate` runs.
pub fn with_points(text: &str, points: &[crate::device::PointToml]) -> Result<String, Error> {
    #[derive(serde::Serialize)]
    struct Wrapper<'a> {
        calibration: &'a [crate::device::PointToml],
    }
    let tables = toml::to_string(&Wrapper { calibration: points })
        .map_err(|e| Error::ProfileWrite { path: "the profile".into(), message: e.to_string() })?;
    let mut text = text.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&tables);
    Ok(text)
}

/// `device`'s profile with `points` added, as a calibration of it is
/// written ([`Devices::writable`]: this machine's own copy for a local
/// device): the profile as it then reads, assessed against this machine,
/// and the file with its new text. Nothing is written.
pub fn with_points_added(
    devices: &Devices,
    device: &Device,
    points: &[crate::device::PointToml],
) -> Result<(Device, crate::device::Writable), crate::Error> {
    let mut target = devices.writable(device)?;
    target.text = with_points(&target.text, points).map_err(|e| match e {
        Error::ProfileWrite { message, .. } => write_error(&target.path, message),
        e => e,
    })?;
    let d = devices.reread(&target.path, &target.text)?;
    Ok((d, target))
}

/// A shape with every field written out, as a point records it.
pub fn spec_of(s: &crate::arch::Shape) -> crate::arch::ShapeSpec {
    crate::arch::ShapeSpec {
        preset: None,
        hidden: Some(s.hidden),
        layers: Some(s.layers),
        heads: Some(s.heads),
        kv_heads: Some(s.kv_heads),
        head_dim: Some(s.head_dim),
        ffn: Some(s.ffn),
        vocab: Some(s.vocab),
        tied: Some(s.tied),
        qk_norm: Some(s.qk_norm),
        quant: Some(s.quant),
        context: Some(s.context),
    }
}

/// A calibration point from a measured record: every shape field written out,
/// the workload, and the measured decode, prefill and peak memory (and energy
/// when it was measured).
pub fn point_from_record(rec: &crate::record::Record, holdout: bool) -> Option<crate::device::PointToml> {
    use crate::units::{ByteSize, Energy, TokRate};
    let m = rec.measurement.as_ref()?;
    let s = rec.shape;
    let energy_measured = rec
        .methods
        .get(&crate::provenance::MethodKey::EnergyJPerRun)
        .is_some_and(crate::provenance::Method::is_measured);
    Some(crate::device::PointToml {
        model: spec_of(&s),
        workload: Some(crate::workload::WorkloadSpec {
            prompt: Some(rec.prompt_tokens),
            gen: Some(rec.gen_tokens),
            context: None,
        }),
        decode: Some(TokRate(rec.decode_tok_s)),
        prefill: Some(TokRate(rec.prefill_tok_s)),
        peak_memory: Some(ByteSize(rec.peak_mem_increase_mb * 1e6)),
        package: None,
        energy: energy_measured.then_some(Energy(rec.energy_j_per_run)),
        source: format!(
            "measured {} by `pocketbench run`: {} {}, {} threads, median of {} repetitions (timer; VmHWM)",
            crate::hostinfo::today(),
            m.probe.engine,
            m.probe.engine_version,
            m.probe.threads,
            m.decode.n
        ),
        holdout,
        machine: Some(m.probe.host.fingerprint.clone()).filter(|f| !f.is_empty()),
        cpu: Some(m.probe.host.describe()),
        engine_build: m.probe.engine.parse::<crate::probe::EngineKind>().ok().map(|e| e.build_of(&m.probe.build)),
        threads: Some(m.probe.threads),
        // The same-moment bandwidth of its summarized repetitions, so a
        // point added from a record is fitted at its own moment too.
        bandwidth: crate::trust::moment_median(&m.probe).map(crate::units::Bandwidth),
        noise: None,
        imported: None,
        provenance: None,
        citation: None,
        engine_class: None,
        backend: None,
        ran_on: None,
        unstated: Vec::new(),
    })
}
