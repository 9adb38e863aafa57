//! The probe as a phone runs it: the static AArch64 executable a runner
//! pushes over adb, run end to end (spec in, result JSON out) under
//! `qemu-aarch64` on a tiny shape.
//!
//! `.ci/run` builds it (`cargo build -p pocketbench-probe --release
//! --no-default-features --target aarch64-unknown-linux-musl`) and points
//! `POCKETBENCH_STATIC_PROBE` at it, with `POCKETBENCH_STATIC_PROBE_RUNNER`
//! naming the emulator (`qemu-aarch64`). Without them the test says so and
//! passes: a developer machine need not have the target or qemu.

use std::path::Path;
use std::process::Command;

use pocketbench_probe::{EngineKind, ProbeResult, ProbeSpec, SCHEMA};
use pocketbench_types::workload::Workload;

#[path = "../../pocketbench/tests/common/mod.rs"]
mod common;

/// Whether an ELF executable names a program interpreter (a dynamic loader):
/// a static one has no `PT_INTERP` program header.
fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let p = phoff + i * size;
        u32::from_le_bytes(elf[p..p + 4].try_into().unwrap()) == 3 // PT_INTERP
    })
}

#[test]
#[ignore = "needs the static AArch64 probe in POCKETBENCH_STATIC_PROBE: .ci/run builds it and runs this"]
fn the_static_aarch64_probe_measures_a_tiny_shape_under_qemu() {
    let probe = std::env::var_os("POCKETBENCH_STATIC_PROBE")
        .expect("POCKETBENCH_STATIC_PROBE names the static AArch64 probe (.ci/run builds it and sets it)");
    let probe = Path::new(&probe);
    let elf = std::fs::read(probe).expect("the static probe");
    assert_eq!(u16::from_le_bytes([elf[0x12], elf[0x13]]), 0xb7, "not an AArch64 executable");
    assert!(!has_interpreter(&elf), "{} is dynamically linked: a phone has no glibc loader", probe.display());

    let runner = std::env::var("POCKETBENCH_STATIC_PROBE_RUNNER").unwrap_or_default();
    let command = |args: &[&str]| {
        let mut words = runner.split_whitespace();
        let mut c = match words.next() {
            Some(emulator) => {
                let mut c = Command::new(emulator);
                c.args(words).arg(probe);
                c
            }
            None => Command::new(probe),
        };
        c.args(args);
        c
    };

    let version = command(&["--version"]).output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout);
    assert!(version.contains(&format!("schema {SCHEMA}")) && version.contains("aarch64"), "{version}");

    let dir = tempfile::tempdir().unwrap();
    let shape = common::tiny();
    let model = dir.path().join("tiny.gguf");
    pocketbench_probe::gguf::write_model(&shape, pocketbench_probe::seed_of(&shape), &model).unwrap();
    let spec = ProbeSpec {
        schema: SCHEMA,
        shape,
        model,
        workload: Workload::new(16, 8, None).unwrap(),
        reps: 2,
        threads: 1,
        seed: 3,
        engine: EngineKind::Native,
        timeout_s: None,
        cooling: None,
        contention: None,
        auto: None,
        pin: false,
        bandwidth_pass: true,
        timed_reloads: true,
        soak: None,
    };
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, serde_json::to_string(&spec).unwrap()).unwrap();
    let out = dir.path().join("result.json");
    // The Android runner's command line: `probe --spec ... --out ...`.
    let run =
        command(&["probe", "--spec", spec_path.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let result = ProbeResult::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(result.config_id, spec.shape.id());
    assert_eq!(result.build.target, "aarch64-unknown-linux-musl");
    assert_eq!(result.host.isa, "neon");
    assert_eq!(result.reps.len(), 2);
    for rep in &result.reps {
        assert!(rep.decode_tok_s > 0.0 && rep.prefill_tok_s > 0.0, "{rep:?}");
    }
    assert!(result.peak_increase_bytes > 0, "VmHWM was not read: {result:?}");
    let kernels = &result.methods["kernels"];
    assert!(kernels.contains("neon"), "{kernels}");
    // Under `qemu-aarch64 -cpu max` the CPU has the dot-product extension:
    // the sdot variant is timed against the baseline at start-up.
    if result.host.features.iter().any(|f| f == "dotprod") {
        assert!(kernels.contains("neon-dotprod"), "{kernels}");
    }

    // A spec of another schema is refused by the phone's probe with exit 2.
    let mut v = serde_json::to_value(&spec).unwrap();
    v["schema"] = (SCHEMA + 1).into();
    std::fs::write(&spec_path, v.to_string()).unwrap();
    let refused = command(&["--spec", spec_path.to_str().unwrap()]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains(&format!("schema {}", SCHEMA + 1)));
}
