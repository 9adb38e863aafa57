//! Facts about the machine and the binary, recorded with every measurement,
//! and the machine's fingerprint: a short id of the parts that change
//! performance, which host calibrations are keyed by.

use serde::{Deserialize, Serialize};

/// The machine a measurement ran on: its fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Short stable id of the parts that change performance (see
    /// [`HostFacts::fingerprint_of`]); empty in results of older versions.
    #[serde(default)]
    pub fingerprint: String,
    /// CPU vendor (`GenuineIntel`, `AuthenticAMD`, an ARM implementer).
    #[serde(default)]
    pub vendor: String,
    /// CPU brand string.
    pub cpu: String,
    /// x86 family, or the ARM implementer.
    #[serde(default)]
    pub family: Option<String>,
    /// x86 model, or the ARM part.
    #[serde(default)]
    pub model: Option<String>,
    /// x86 stepping, or the ARM variant and revision (`r1p0`).
    #[serde(default)]
    pub stepping: Option<String>,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// Physical cores, when known.
    pub physical_cores: Option<usize>,
    /// The caches of the first CPU (sysfs).
    #[serde(default)]
    pub caches: Vec<Cache>,
    /// Each CPU's highest frequency, kHz, in CPU order (sysfs
    /// `cpufreq/cpuinfo_max_freq`): a phone's clusters, prime core first
    /// or last. Empty where the kernel has no cpufreq (most VMs). Not part
    /// of the fingerprint: a governor may cap it without the machine
    /// changing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_max_khz: Vec<u64>,
    /// Installed memory, bytes.
    pub memory_bytes: u64,
    /// Memory available at the start, bytes.
    pub available_bytes: u64,
    /// The kernel ISA the engine dispatches to (`avx2`, `neon`, `portable`).
    #[serde(default)]
    pub isa: String,
    /// CPU features that decide which kernels could run (detected at run time).
    #[serde(default)]
    pub features: Vec<String>,
    /// OS description.
    pub os: String,
    /// Kernel version.
    pub kernel: String,
}

/// One CPU cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// 1, 2, 3...
    pub level: u32,
    /// Data, Instruction or Unified.
    pub kind: String,
    /// Bytes.
    pub bytes: u64,
}

impl HostFacts {
    /// Read them now (/proc/cpuinfo and sysfs where they exist, sysinfo
    /// otherwise), fingerprint included.
    pub fn collect() -> Self {
        let mut sys = sysinfo::System::new().ok();
        if let Some(s) = sys.as_mut() {
            s.refresh_cpu_all();
            s.refresh_memory();
        }
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |keys: &[&str]| {
            keys.iter().find_map(|k| {
                cpuinfo.lines().find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    (name.trim() == *k).then(|| value.trim().to_string())
                })
            })
        };
        let brand = sys.as_ref().and_then(|s| s.cpus().first().map(|c| c.brand().to_string())).unwrap_or_default();
        let vendor = field(&["vendor_id", "CPU implementer"])
            .or_else(|| sys.as_ref().and_then(|s| s.cpus().first().map(|c| c.vendor_id().to_string())))
            .unwrap_or_default();
        let stepping = match (field(&["stepping"]), field(&["CPU variant"]), field(&["CPU revision"])) {
            (Some(s), _, _) => Some(s),
            (None, Some(v), Some(r)) => Some(format!("r{}p{r}", v.trim_start_matches("0x"))),
            _ => None,
        };
        let mut facts = HostFacts {
            fingerprint: String::new(),
            vendor,
            cpu: field(&["model name"]).filter(|b| !b.is_empty()).unwrap_or(brand),
            family: field(&["cpu family", "CPU implementer"]),
            model: field(&["model", "CPU part"]),
            stepping,
            logical_cpus: sys.as_ref().map_or(0, |s| s.cpus().len()),
            physical_cores: sysinfo::System::physical_core_count().ok(),
            caches: caches(),
            cpu_max_khz: max_frequencies(&crate::meter::sysfs_root().join("sys/devices/system/cpu")),
            memory_bytes: sys.as_ref().map_or(0, |s| s.total_memory()),
            available_bytes: sys.as_ref().map_or(0, |s| s.available_memory()),
            isa: crate::kernels::isa().name().into(),
            features: features(),
            os: sysinfo::System::long_os_version().unwrap_or_default(),
            kernel: sysinfo::System::kernel_version().unwrap_or_default(),
        };
        facts.fingerprint = facts.fingerprint_of();
        facts
    }

    /// The fingerprint: 12 hex digits of FNV-1a over vendor, model name,
    /// family/model/stepping, logical and physical cores, caches, installed
    /// memory in whole GiB, kernel ISA and features. The OS, the kernel and
    /// the memory free at the moment are left out (they change without the
    /// machine changing), and so is the engine build, which a calibration
    /// tracks on its own: a new build of the same machine is "calibrated
    /// with another engine build", not another machine.
    pub fn fingerprint_of(&self) -> String {
        let gib = (self.memory_bytes as f64 / (1u64 << 30) as f64).round() as u64;
        let parts = serde_json::json!([
            self.vendor,
            self.cpu,
            self.family,
            self.model,
            self.stepping,
            self.logical_cpus,
            self.physical_cores,
            self.caches,
            gib,
            self.isa,
            self.features,
        ]);
        format!("{:012x}", pocketbench_types::fnv1a(parts.to_string().as_bytes()) >> 16)
    }

    /// One line naming the machine: `Intel(R) Xeon(R) Processor (family 6
    /// model 207 stepping 2), 2 logical CPUs, 24 GiB, avx2 kernels`.
    pub fn describe(&self) -> String {
        let id = match (&self.family, &self.model, &self.stepping) {
            (Some(f), Some(m), Some(s)) if self.isa == "neon" => format!(" (implementer {f} part {m} {s})"),
            (Some(f), Some(m), Some(s)) => format!(" (family {f} model {m} stepping {s})"),
            _ => String::new(),
        };
        format!(
            "{}{id}, {} logical CPUs, {:.0} GiB, {} kernels",
            if self.cpu.is_empty() { "unknown CPU" } else { &self.cpu },
            self.logical_cpus,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            if self.isa.is_empty() { "unknown" } else { &self.isa }
        )
    }
}

/// The caches of CPU 0 from sysfs (empty where there is none).
fn caches() -> Vec<Cache> {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else { return Vec::new() };
    let mut out: Vec<Cache> = dir
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok().map(|s| s.trim().to_string());
            Some(Cache { level: read("level")?.parse().ok()?, kind: read("type")?, bytes: parse_size(&read("size")?)? })
        })
        .collect();
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    out
}

/// Each `cpuN/cpufreq/cpuinfo_max_freq` under `root`, by N; empty when any
/// CPU lacks one (a partial list would misplace the clusters).
fn max_frequencies(root: &std::path::Path) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(root) else { return Vec::new() };
    let mut cpus: Vec<(u32, std::path::PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().strip_prefix("cpu")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    cpus.sort();
    let freqs: Option<Vec<u64>> = cpus
        .iter()
        .map(|(_, p)| std::fs::read_to_string(p.join("cpufreq/cpuinfo_max_freq")).ok()?.trim().parse().ok())
        .collect();
    freqs.unwrap_or_default()
}

/// `48K`, `2048K`, `32M` as sysfs writes cache sizes.
fn parse_size(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok().map(|v| v * scale)
}

/// The CPU features that decide which kernels could run here.
fn features() -> Vec<String> {
    #[allow(unused_mut)]
    let mut out: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! detect {
            ($($f:tt),*) => { $( if std::arch::is_x86_feature_detected!($f) { out.push($f); } )* };
        }
        detect!("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avxvnni");
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! detect {
            ($($f:tt),*) => { $( if std::arch::is_aarch64_feature_detected!($f) { out.push($f); } )* };
        }
        detect!("neon", "dotprod", "i8mm", "fp16", "sve", "sve2");
    }
    out.into_iter().map(String::from).collect()
}

/// How the binary was built (from build.rs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// pocketbench version.
    pub pocketbench: String,
    /// Target triple.
    pub target: String,
    /// Cargo profile (debug/release).
    pub profile: String,
    /// opt-level.
    pub opt_level: String,
    /// rustc --version.
    pub rustc: String,
    /// RUSTFLAGS.
    pub rustflags: String,
    /// Digest of the native engine's source (its kernels and model code):
    /// it changes exactly when the code that decides the engine's speed does.
    #[serde(default)]
    pub engine_source: String,
}

impl BuildInfo {
    /// This binary.
    pub fn current() -> Self {
        BuildInfo {
            pocketbench: env!("CARGO_PKG_VERSION").into(),
            target: env!("PB_TARGET").into(),
            profile: env!("PB_PROFILE").into(),
            opt_level: env!("PB_OPT_LEVEL").into(),
            rustc: env!("PB_RUSTC").into(),
            rustflags: env!("PB_RUSTFLAGS").into(),
            engine_source: env!("PB_ENGINE_SOURCE").into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_what_changes_without_the_machine_changing() {
        let a = HostFacts::collect();
        assert_eq!(a.fingerprint, a.fingerprint_of());
        assert_eq!(a.fingerprint.len(), 12);
        let mut b = a.clone();
        b.os = "another OS".into();
        b.kernel = "9.9".into();
        b.available_bytes /= 2;
        b.memory_bytes += 100 << 20;
        assert_eq!(b.fingerprint_of(), a.fingerprint);
        for change in [
            |f: &mut HostFacts| f.cpu.push('X'),
            |f: &mut HostFacts| f.logical_cpus += 2,
            |f: &mut HostFacts| f.isa = "portable".into(),
            |f: &mut HostFacts| f.features.push("avx512vnni".into()),
            |f: &mut HostFacts| f.caches.push(Cache { level: 4, kind: "Unified".into(), bytes: 1 << 30 }),
            |f: &mut HostFacts| f.memory_bytes += 8 << 30,
        ] {
            let mut c = a.clone();
            change(&mut c);
            assert_ne!(c.fingerprint_of(), a.fingerprint, "{c:?}");
        }
    }

    #[test]
    fn max_frequencies_in_cpu_order_and_none_when_one_is_missing() {
        let d = tempfile::tempdir().unwrap();
        assert!(max_frequencies(d.path()).is_empty());
        for (n, khz) in [(0, "3532800"), (1, "3532800"), (10, "4320000"), (2, "4320000")] {
            let f = d.path().join(format!("cpu{n}/cpufreq"));
            std::fs::create_dir_all(&f).unwrap();
            std::fs::write(f.join("cpuinfo_max_freq"), format!("{khz}\n")).unwrap();
        }
        std::fs::create_dir_all(d.path().join("cpufreq")).unwrap(); // not a CPU
        assert_eq!(max_frequencies(d.path()), [3532800, 3532800, 4320000, 4320000]);
        std::fs::create_dir_all(d.path().join("cpu3")).unwrap();
        assert!(max_frequencies(d.path()).is_empty(), "a CPU without cpufreq");
        let a = HostFacts::collect();
        let mut b = a.clone();
        b.cpu_max_khz = vec![1];
        assert_eq!(b.fingerprint_of(), a.fingerprint, "frequencies are not the machine");
    }

    #[test]
    fn sysfs_cache_sizes() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("307200K"), Some(300 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }
}
