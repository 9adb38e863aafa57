//! Facts about the machine and the binary, recorded with every measurement.

use serde::{Deserialize, Serialize};

/// The machine a measurement ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// CPU brand string.
    pub cpu: String,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// Physical cores, when known.
    pub physical_cores: Option<usize>,
    /// Installed memory, bytes.
    pub memory_bytes: u64,
    /// Memory available at the start, bytes.
    pub available_bytes: u64,
    /// OS description.
    pub os: String,
    /// Kernel version.
    pub kernel: String,
}

impl HostFacts {
    /// Read them now (sysinfo).
    pub fn collect() -> Self {
        let mut sys = sysinfo::System::new().ok();
        if let Some(s) = sys.as_mut() {
            s.refresh_cpu_all();
            s.refresh_memory();
        }
        HostFacts {
            cpu: sys.as_ref().and_then(|s| s.cpus().first().map(|c| c.brand().to_string())).unwrap_or_default(),
            logical_cpus: sys.as_ref().map_or(0, |s| s.cpus().len()),
            physical_cores: sysinfo::System::physical_core_count().ok(),
            memory_bytes: sys.as_ref().map_or(0, |s| s.total_memory()),
            available_bytes: sys.as_ref().map_or(0, |s| s.available_memory()),
            os: sysinfo::System::long_os_version().unwrap_or_default(),
            kernel: sysinfo::System::kernel_version().unwrap_or_default(),
        }
    }
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
        }
    }
}
