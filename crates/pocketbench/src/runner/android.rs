//! The Android runner: each configuration measured on a phone over the real
//! adb client (`pocketbench-runner-android`). Per job: check the phone is
//! attached and ready, push the probe (once) and the model, push the spec,
//! run the probe under the device shell (pinned with `taskset` where the
//! profile names a mask), pull its result, clean up.
//!
//! The probe writes `result.json.part` and renames it only when complete, so
//! a killed run never leaves a file the runner would take for a result. Every
//! argument that reaches the device shell is quoted. Paths in the spec are
//! relative to the job's folder, so the same spec runs wherever the folder
//! is.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use pocketbench_runner_android::{choose, devices::DevicesError, facts, quote, Adb, AdbError, Output};

use super::{Failure, Job, Runner};
use crate::probe::{self, ProbeResult};

/// The phone-side folder everything lives in.
pub const REMOTE_ROOT: &str = "/data/local/tmp/pocketbench";

/// Limit for the short adb calls (list, push of a spec, cleanup).
const SHORT: Duration = Duration::from_secs(60);

/// Runs the probe on an Android phone.
pub struct AndroidRunner {
    device: String,
    adb: Adb,
    probe: PathBuf,
    cpu_mask: Option<String>,
    cache: PathBuf,
    /// The probe is pushed once per runner.
    pushed: Mutex<bool>,
    /// The probe's digest, read once.
    digest: std::sync::OnceLock<String>,
}

/// The probe executable for a phone: `$POCKETBENCH_ANDROID_PROBE`, else the
/// profile's `transport.probe`. It must exist; whether it suits the phone's
/// ABI is checked against the phone before anything is pushed.
pub fn probe_path(profile: Option<&Path>) -> Result<PathBuf, crate::Error> {
    let p = std::env::var_os("POCKETBENCH_ANDROID_PROBE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| profile.map(Path::to_path_buf))
        .ok_or_else(|| {
            crate::Error::usage("no probe for the phone: set POCKETBENCH_ANDROID_PROBE (or the profile's transport.probe) to a static AArch64 build of pocketbench-probe (`cargo build -p pocketbench-probe --profile phone --no-default-features --target aarch64-unknown-linux-musl`; README: \"Measuring on an Android phone\")")
        })?;
    if p.is_file() {
        Ok(p)
    } else {
        Err(crate::Error::usage(format!("the Android probe {} does not exist", p.display())))
    }
}

/// The ELF machine of an executable, as Android names its ABI.
pub fn elf_abi(path: &Path) -> Option<&'static str> {
    let mut head = [0u8; 20];
    let mut f = std::fs::File::open(path).ok()?;
    std::io::Read::read_exact(&mut f, &mut head).ok()?;
    if &head[..4] != b"\x7fELF" {
        return None;
    }
    match u16::from_le_bytes([head[18], head[19]]) {
        0xB7 => Some("arm64-v8a"),
        0x3E => Some("x86_64"),
        0x28 => Some("armeabi-v7a"),
        0x03 => Some("x86"),
        _ => None,
    }
}

impl AndroidRunner {
    /// A runner for `device` over `adb` (serial empty: the only phone).
    pub fn new(device: &str, adb: Adb, probe: PathBuf, cpu_mask: Option<String>, cache: PathBuf) -> Self {
        AndroidRunner {
            device: device.into(),
            adb,
            probe,
            cpu_mask,
            cache,
            pushed: Mutex::new(false),
            digest: std::sync::OnceLock::new(),
        }
    }

    fn call(&self, args: &[OsString], timeout: Duration) -> Result<Output, Failure> {
        let out = self.adb.call(args, timeout).map_err(|e| match e {
            AdbError::Timeout { secs, .. } => Failure::Timeout { seconds: secs },
            e => Failure::Unavailable { reason: e.to_string() },
        })?;
        // adb's own failures (the phone went away) are not the command's:
        // adb says them as `error: …` with nothing on stdout.
        let lost = ["device offline", "not found", "no devices/emulators", "device unauthorized", "closed"];
        let adb_said = out.stderr.trim_start().starts_with("error: ");
        if out.code != 0 && out.stdout.is_empty() && adb_said && lost.iter().any(|l| out.stderr.contains(l)) {
            return Err(Failure::Unavailable { reason: format!("adb: {}", out.stderr.trim()) });
        }
        Ok(out)
    }

    fn shell(&self, line: &str, timeout: Duration) -> Result<Output, Failure> {
        self.call(&self.adb.shell(&["sh", "-c", line]), timeout)
    }

    fn checked(&self, what: &str, out: Output) -> Result<Output, Failure> {
        if out.code == 0 {
            Ok(out)
        } else {
            Err(Failure::Unavailable {
                reason: format!("{what} failed on the phone (exit {}): {}", out.code, out.stderr.trim()),
            })
        }
    }

    /// The phone is listed and ready, and runs the probe's ABI; what a
    /// result records of it (its serial and `getprop` facts).
    fn ready(&self) -> Result<BTreeMap<String, String>, Failure> {
        let list = || {
            self.adb
                .devices(SHORT)
                .map_err(|e| Failure::Unavailable { reason: e.to_string() })?
                .map_err(|e: DevicesError| Failure::Unavailable { reason: e.to_string() })
        };
        let mut listed = list()?;
        // A remote phone (a farm session, wireless debugging) named by its
        // HOST:PORT is connected first when adb does not list it yet.
        let remote = self.adb.serial.rsplit_once(':').is_some_and(|(_, port)| port.parse::<u16>().is_ok());
        if remote && !listed.iter().any(|l| l.serial == self.adb.serial) {
            self.adb
                .connect(&self.adb.serial, SHORT)
                .map_err(|e| Failure::Unavailable { reason: e.to_string() })?
                .map_err(|said| Failure::Unavailable { reason: format!("adb connect {}: {said}", self.adb.serial) })?;
            listed = list()?;
        }
        let serial =
            choose(&listed, &self.adb.serial).map_err(|e| Failure::Unavailable { reason: e.0 })?.serial.clone();
        let props = self.checked("getprop", self.shell("getprop", SHORT)?)?;
        let props = facts::Props::from_map(&facts::parse_getprop(&props.stdout));
        match (elf_abi(&self.probe), props.abi.as_deref()) {
            (Some(probe), Some(phone)) if probe != phone => Err(Failure::Refused {
                reason: format!(
                    "the probe {} is built for {probe}, the phone runs {phone}: point POCKETBENCH_ANDROID_PROBE at a {phone} build",
                    self.probe.display()
                ),
            }),
            (None, _) => Err(Failure::Refused {
                reason: format!("the probe {} is not an executable for Android (no ELF header)", self.probe.display()),
            }),
            _ => {
                let sdk = props.sdk.map(|v| v.to_string());
                let known = [
                    ("serial", Some(serial)),
                    ("manufacturer", props.manufacturer),
                    ("model", props.model),
                    ("soc", props.soc),
                    ("android", props.android),
                    ("sdk", sdk),
                    ("abi", props.abi),
                ];
                Ok(known.into_iter().filter_map(|(k, v)| Some((format!("android.{k}"), v?))).collect())
            }
        }
    }

    fn push(&self, local: &Path, remote: &str, timeout: Duration) -> Result<(), Failure> {
        let out = self.call(&self.adb.push(&local.to_string_lossy(), remote), timeout)?;
        self.checked(&format!("adb push {}", local.display()), out).map(drop)
    }
}

impl Runner for AndroidRunner {
    fn device(&self) -> &str {
        &self.device
    }

    fn build(&self, engine: probe::EngineKind) -> String {
        let serial = if self.adb.serial.is_empty() { "the only attached phone" } else { self.adb.serial.as_str() };
        let digest = self.digest.get_or_init(|| {
            std::fs::read(&self.probe).map(|b| format!("{:016x}", crate::fnv1a(&b))).unwrap_or_default()
        });
        format!("{} via the pushed probe {} (digest {digest}) on {serial}", engine.name(), self.probe.display())
    }

    /// The hottest of the phone's thermal zones, read over adb with the
    /// same rule the probe reads them on the phone
    /// ([`probe::thermal::hottest`]): what `gate --measure` and `soak` cool
    /// the phone down by. `None` where the phone cannot be reached or has no
    /// readable zone.
    fn temperature(&self) -> Option<probe::thermal::Temperature> {
        let out = self.shell(probe::thermal::ZONES_SHELL, SHORT).ok().filter(|o| o.code == 0)?;
        probe::thermal::hottest(probe::thermal::parse_zone_lines(&out.stdout))
    }

    fn measure(&self, job: &Job) -> Result<ProbeResult, Failure> {
        let device_props = self.ready()?;
        let model = match &job.engine_model {
            Some(m) => m.clone(),
            None => probe::model_file(&job.shape, &self.cache).map_err(|e| Failure::Build { reason: e.to_string() })?,
        };
        let push_limit = job.timeout.max(SHORT);
        let mkdir = format!("mkdir -p {}", quote(&format!("{REMOTE_ROOT}/models")));
        self.checked("mkdir", self.shell(&mkdir, SHORT)?)?;
        {
            let mut pushed = self.pushed.lock().unwrap_or_else(|e| e.into_inner());
            if !*pushed {
                let remote = format!("{REMOTE_ROOT}/probe");
                self.push(&self.probe, &remote, push_limit)?;
                self.checked("chmod", self.shell(&format!("chmod 755 {}", quote(&remote)), SHORT)?)?;
                *pushed = true;
            }
        }
        let name = model.file_name().map_or_else(|| "model.gguf".into(), |n| n.to_string_lossy().into_owned());
        let remote_model = format!("{REMOTE_ROOT}/models/{name}");
        // The same model file is pushed once: adb push skips nothing itself,
        // so the size on the phone decides.
        let size = std::fs::metadata(&model).map(|m| m.len()).unwrap_or(0);
        let on_phone = self.shell(&format!("wc -c < {}", quote(&remote_model)), SHORT)?;
        if on_phone.stdout.trim().parse::<u64>().ok() != Some(size) {
            self.push(&model, &remote_model, push_limit)?;
        }

        let job_dir = format!("{REMOTE_ROOT}/job-{}-{}", job.shape.id(), std::process::id());
        let spec = job.spec(PathBuf::from(format!("../models/{name}")));
        let local = tempfile::tempdir().map_err(|e| Failure::Build { reason: e.to_string() })?;
        let spec_path = local.path().join("spec.json");
        let text = serde_json::to_string(&spec).map_err(|e| Failure::Build { reason: e.to_string() })?;
        std::fs::write(&spec_path, text).map_err(|e| Failure::Build { reason: e.to_string() })?;
        self.checked("mkdir", self.shell(&format!("mkdir -p {}", quote(&job_dir)), SHORT)?)?;
        self.push(&spec_path, &format!("{job_dir}/spec.json"), SHORT)?;

        let pin = self.cpu_mask.as_ref().map_or(String::new(), |m| format!("taskset {} ", quote(m)));
        // The probe runs as a background job whose pid is kept, so a run
        // that outlives its limit can be killed on the phone: killing the
        // local adb client ends the stream, not the phone's process, which
        // would otherwise run on beside the next job's measurement.
        let run = format!(
            "cd {} && {{ RAYON_NUM_THREADS={} {pin}{} probe --spec spec.json --out result.json.part & echo $! > probe.pid; wait $!; }} && mv result.json.part result.json",
            quote(&job_dir),
            job.threads,
            quote(&format!("{REMOTE_ROOT}/probe")),
        );
        let outcome = self.shell(&run, backstop(job));
        if matches!(outcome, Err(Failure::Timeout { .. })) {
            let pid = quote(&format!("{job_dir}/probe.pid"));
            let _ = self.shell(&format!("kill -9 \"$(cat {pid})\" 2>/dev/null"), SHORT);
        }
        let result = match outcome {
            Err(f) => Err(f),
            Ok(out) if out.code == 0 => {
                let back = local.path().join("result.json");
                let pulled =
                    self.call(&self.adb.pull(&format!("{job_dir}/result.json"), &back.to_string_lossy()), SHORT)?;
                self.checked("adb pull", pulled)?;
                let text = std::fs::read_to_string(&back).map_err(|e| Failure::BadOutput { reason: e.to_string() })?;
                let mut r = crate::probe::ProbeResult::from_json(&text)
                    .map_err(|e| Failure::BadOutput { reason: e.to_string() })?;
                r.device_props = device_props;
                Ok(r)
            }
            // The device shell reports a signal as 128 + its number.
            Ok(out) if out.code == 137 => {
                Err(Failure::Killed { signal: 9, hint: ", probably by Android's low-memory killer (lmkd)".into() })
            }
            Ok(out) if out.code > 128 && out.code < 160 => {
                Err(Failure::Killed { signal: out.code - 128, hint: String::new() })
            }
            Ok(out) => Err(Failure::Crashed { code: out.code, stderr: last_lines(&out.stderr, 5) }),
        };
        // Clean up whatever happened; a phone that went away keeps its folder
        // until the next run's cleanup.
        let _ = self.shell(&format!("rm -rf {}", quote(&job_dir)), SHORT);
        result
    }
}

/// How long the runner waits for the probe on the phone (or the app on an
/// iPhone). The probe enforces
/// the job's own limit; this is a backstop past it, for a probe that hangs:
/// adb's margin, but no more than the limit itself for a short job (and at
/// least 10 s for adb).
pub(super) fn backstop(job: &Job) -> Duration {
    job.limit() + SHORT.min(job.limit().max(Duration::from_secs(10)))
}

fn last_lines(text: &str, n: usize) -> String {
    let v: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(n)..].join(" | ")
}
