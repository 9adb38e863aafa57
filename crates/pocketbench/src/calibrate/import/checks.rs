//! A row made a point: its model mapped to a shape, and the row held against
//! the target device (engine class, CPU or GPU, this machine's CPU).

use std::path::{Path, PathBuf};

use crate::arch::Shape;
use crate::device::{Backend, Device, Devices, ImportedFrom, PointToml};
use crate::probe::gguf::{GgufFile, SHAPE_KEY};
use crate::probe::EngineKind;
use crate::units::TokRate;
use crate::workload::WorkloadSpec;

use super::rows::{ImportError, Row, Speeds};
use super::{Format, ImportedPoint, Options};

/// llama.cpp counts every tensor element; pocketbench's accounting the
/// same tensors. Beyond this they are not one model.
const PARAMS_TOLERANCE: f64 = 0.01;

/// The point of `row`: its shape, checked against the row's own record of
/// the model, and the row checked against `device`.
pub fn point(
    devices: &Devices,
    device: &Device,
    row: &Row,
    format: Format,
    o: &Options,
) -> Result<ImportedPoint, ImportError> {
    let machine = check_device(devices, device, row, format, o.force)?;
    let (shape, mapped_by) = shape_of(row, format, o)?;
    let (workload, decode, prefill) = match row.speeds {
        Speeds::Prefill { prompt, rate } => ((prompt, 1), None, Some(rate.mean)),
        // llama-bench's tg at depth 0 starts from an empty cache, a
        // workload's decode after its one-token prompt: one token apart.
        Speeds::Decode { depth, gen, rate } => ((depth.max(1), gen), Some(rate.mean), None),
        Speeds::Both { prompt, gen, prefill, decode } => ((prompt, gen), Some(decode.mean), Some(prefill.mean)),
    };
    let test = row.speeds.name();
    let figures = row.speeds.describe();
    let reps = row.reps.map(|n| format!(" over {n} repetitions")).unwrap_or_default();
    let settings: String = row.settings.iter().map(|s| format!(", {s}")).collect();
    let line = row.at.line.map(|l| format!(" (line {l})")).unwrap_or_default();
    let probe = device.profile().engine.probe;
    let point = PointToml {
        model: crate::calibrate::spec_of(&shape),
        workload: Some(WorkloadSpec { prompt: Some(workload.0), gen: Some(workload.1), context: None }),
        decode: decode.map(TokRate),
        prefill: prefill.map(TokRate),
        peak_memory: None,
        package: None,
        energy: None,
        source: format!(
            "imported {} from {} `{}` row {}{line}: {test}, {figures}{reps}; {}, {} thread(s), {}{settings}; model `{}`, shape {mapped_by}",
            crate::hostinfo::today(),
            format.describe(),
            row.at.file.display(),
            row.at.row,
            row.build.as_deref().unwrap_or("build not recorded"),
            row.threads.map_or("?".into(), |t| t.to_string()),
            row.backend,
            row.model.label,
        ),
        holdout: o.holdout,
        machine,
        cpu: row.cpu.clone(),
        // A device that measures through the same external tool takes its
        // rows as its own build (the build is in the source); any other
        // device of the class sees another build, and says so.
        engine_build: match probe {
            EngineKind::LlamaBench | EngineKind::MnnLlmBench => Some(probe.build()),
            _ => row.build.clone(),
        },
        threads: row.threads,
        bandwidth: None,
        noise: None,
        imported: Some(ImportedFrom {
            format: format.describe().into(),
            file: row.at.file.display().to_string(),
            row: row.at.row,
            line: row.at.line,
            engine: format.engine_class().unwrap_or_default().into(),
        }),
        provenance: None,
        citation: None,
        engine_class: None,
        backend: None,
        ran_on: None,
        unstated: Vec::new(),
    };
    Ok(ImportedPoint { at: row.at.clone(), format, test, figures, shape, mapped_by, point })
}

/// The engine class, CPU or GPU, and (for this machine's own profile) the
/// CPU. Returns the machine fingerprint the point is recorded under: this
/// machine's when the row's CPU is this machine's.
fn check_device(
    devices: &Devices,
    device: &Device,
    row: &Row,
    format: Format,
    force: bool,
) -> Result<Option<String>, ImportError> {
    let id = device.id();
    let engine = &device.profile().engine;
    let llama = format.engine_class() == Some("llama.cpp");
    let class = format.engine_class().unwrap_or_default();
    if engine.class() != class {
        let suggest = if llama { EngineKind::LlamaBench } else { EngineKind::MnnLlmBench };
        return Err(row.at.error(
            llama.then_some("build_commit"),
            format!(
                "measured by {class} ({}); device `{id}` describes the {} engine class ([engine] of {}): import into a device of the {class} class, such as a profile with `based-on = \"{id}\"` and `[engine] probe = \"{}\"`",
                row.build.as_deref().unwrap_or("build not recorded"),
                engine.class(),
                device.origin(),
                suggest.name()
            ),
        ));
    }
    let device_gpu = engine.backend == Backend::Gpu;
    if row.gpu != device_gpu {
        let on = |gpu: bool| if gpu { "a GPU" } else { "the CPU" };
        return Err(row.at.error(
            Some(if llama { "backends" } else { "backend" }),
            format!("ran on {} (`{}`); device `{id}`'s engine runs on {}", on(row.gpu), row.backend, on(device_gpu)),
        ));
    }
    let (true, Some(here)) = (device.is_local(), devices.here()) else {
        return Ok(None);
    };
    let same = |cpu: &str| cpu.trim().eq_ignore_ascii_case(here.cpu.trim());
    match row.cpu.as_deref() {
        Some(cpu) if same(cpu) => Ok(Some(here.fingerprint.clone())),
        _ if force => Ok(None),
        Some(cpu) => Err(row.at.error(
            Some("cpu_info"),
            format!(
                "measured on `{cpu}`, not this machine (`{}`); a calibration of `{id}` describes this machine: pass --force to import it as another machine's",
                here.cpu
            ),
        )),
        None => Err(row.at.error(
            None,
            format!(
                "the output does not record its CPU, so it cannot be held against this machine; a calibration of `{id}` describes this machine: pass --force to import it as another machine's"
            ),
        )),
    }
}

/// The shape a row measured: given by hand, or read from its GGUF.
fn shape_of(row: &Row, format: Format, o: &Options) -> Result<(Shape, String), ImportError> {
    let llama = format.engine_class() == Some("llama.cpp");
    if let Some(spec) = &o.model {
        let shape = spec.resolve().map_err(|e| row.at.error(None, format!("--preset/--shape: {e}")))?;
        check_against_row(row, &shape)?;
        return Ok((shape, "given with --preset/--shape".into()));
    }
    if let Some(name) = &row.model.file {
        if let Some(path) = gguf_path(&row.at.file, name) {
            let bad = |e: crate::probe::gguf::GgufError| row.at.error(Some("model_filename"), e.to_string());
            let file = GgufFile::open(&path).map_err(bad)?;
            let shape = file.shape().map_err(bad)?;
            let how = if file.has(SHAPE_KEY) { "pocketbench.shape" } else { "llama.cpp metadata and tensor types" };
            check_against_row(row, &shape)?;
            return Ok((shape, format!("read from the GGUF's {how} ({})", path.display())));
        }
    }
    let records = if llama {
        "llama-bench records the model's file, type and parameter count"
    } else {
        "MNN llm_bench records the model's name and size"
    };
    let gguf = match &row.model.file {
        Some(f) => format!(", and `{f}` is not readable here (nor beside the imported file)"),
        None => String::new(),
    };
    Err(row.at.error(
        Some(if llama { "model_filename" } else { "model" }),
        format!(
            "cannot map `{}` to a shape: {records}, not its layers, hidden size, heads, KV heads, head size, FFN size or vocabulary{gguf}; pass --preset NAME (see `pocketbench presets`) or --shape with its fields (`hidden=896,layers=28,heads=14,kv-heads=2,head-dim=64,ffn=4864,vocab=151936,quant=q4_0`)",
            row.model.label
        ),
    ))
}

/// The GGUF a row names: as written, else beside the imported file.
fn gguf_path(imported: &Path, name: &str) -> Option<PathBuf> {
    let dir = imported.parent().unwrap_or(Path::new("."));
    [PathBuf::from(name), dir.join(name), dir.join(Path::new(name).file_name()?)].into_iter().find(|p| p.is_file())
}

/// The shape against what the row itself records of the model: llama.cpp's
/// parameter count and storage type.
fn check_against_row(row: &Row, shape: &Shape) -> Result<(), ImportError> {
    if let Some(params) = row.model.params {
        let ours = shape.accounting().params_total;
        if (params as f64 - ours as f64).abs() > PARAMS_TOLERANCE * ours as f64 {
            return Err(row.at.error(
                Some("model_n_params"),
                format!("the model has {params} parameters, the shape {shape} has {ours}: they are not one model"),
            ));
        }
    }
    if let (Some(storage), Some(ours)) = (&row.model.storage, crate::probe::gguf::type_name(shape.quant)) {
        if *storage != ours {
            return Err(row.at.error(
                Some("model_type"),
                format!(
                    "the model's weights are {storage} (`{}`), the shape's {} (stored as {ours}): give its quantization (`--shape ...,quant={storage}`)",
                    row.model.label, shape.quant
                ),
            ));
        }
    }
    Ok(())
}
