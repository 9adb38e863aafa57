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
