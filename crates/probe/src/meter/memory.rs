//! Resident memory from `/proc/PID/status` (Linux and Android): `VmRSS` is the
//! current resident set, `VmHWM` its peak ("high water mark") since the
//! process started. Values are in kB (KiB) there.

/// Resident set figures, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStatus {
    /// Current resident set.
    pub vm_rss: u64,
    /// Peak resident set.
    pub vm_hwm: u64,
}

/// Parse the text of `/proc/PID/status`.
pub fn parse_status(text: &str) -> Option<MemoryStatus> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            let kb: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
            Some(kb * 1024)
        })
    };
    Some(MemoryStatus { vm_rss: field("VmRSS")?, vm_hwm: field("VmHWM")? })
}

impl MemoryStatus {
    /// This process's figures (`None` off Linux).
    pub fn current() -> Option<Self> {
        parse_status(&std::fs::read_to_string("/proc/self/status").ok()?)
    }

    /// Another process's figures (`None` once it has exited, or off Linux).
    pub fn of(pid: u32) -> Option<Self> {
        parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    }
}

/// The process's memory as this platform's per-process limit counts it,
/// bytes: on Apple platforms `phys_footprint` (its lifetime peak where the
/// kernel keeps one, [`super::footprint`]), elsewhere the resident set
/// (`VmRSS`, and `VmHWM` for the peak).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Now.
    pub current: u64,
    /// The peak the platform kept; the current value where it keeps none
    /// (the caller samples then).
    pub peak: u64,
}

/// The meter [`usage`] reads, as results name it.
pub const METER: &str = if cfg!(target_vendor = "apple") {
    "phys_footprint (task_info TASK_VM_INFO: ledger_phys_footprint_peak where the kernel fills revision 3, else the \
     largest phys_footprint sampled after the load, the warm-up and every repetition)"
} else {
    "VmHWM (/proc/self/status)"
};

/// This process's [`Usage`], where the platform says.
pub fn usage() -> Option<Usage> {
    if cfg!(target_vendor = "apple") {
        super::footprint::current().map(|f| Usage { current: f.current, peak: f.peak.unwrap_or(f.current) })
    } else {
        MemoryStatus::current().map(|m| Usage { current: m.vm_rss, peak: m.vm_hwm })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let t = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        assert_eq!(parse_status(t), Some(MemoryStatus { vm_rss: 1024 * 1024, vm_hwm: 2048 * 1024 }));
        assert_eq!(parse_status("Name: x\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process_on_linux() {
        let now = MemoryStatus::current().unwrap();
        assert!(now.vm_hwm >= now.vm_rss && now.vm_rss > 0);
        assert!(MemoryStatus::of(std::process::id()).is_some());
    }
}
