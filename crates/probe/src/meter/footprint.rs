//! Peak memory as Apple platforms count it: `phys_footprint`, the ledger
//! whose per-process limit jetsam enforces (xnu `doc/vm/memorystatus_kills.md`),
//! not the resident set.
//!
//! It is read with `task_info(mach_task_self(), TASK_VM_INFO, ...)`. The
//! kernel fills as much of `struct task_vm_info` (packed to 4 bytes) as the
//! caller's count allows and returns the count it filled, which names the
//! struct's revision: `phys_footprint` arrived in revision 1,
//! `ledger_phys_footprint_peak` (the process's lifetime peak) in revision 3.
//! `mach2` exports the flavor but not the struct, so the layout is kept here
//! as byte offsets, and parsed from the words the kernel wrote by a function
//! that every platform tests.

/// `TASK_VM_INFO`, the `task_info` flavor.
pub const TASK_VM_INFO: u32 = 22;

/// Offset of `phys_footprint` (revision 1), bytes: 3 sizes, 2 integers, 16
/// more sizes before it (`virtual_size` .. `compressed_lifetime`).
const PHYS_FOOTPRINT: usize = 144;
/// Offset of `ledger_phys_footprint_peak` (revision 3), bytes: after
/// `phys_footprint`, `min_address` and `max_address`.
const LEDGER_PEAK: usize = 168;

/// Words (`natural_t`, 4 bytes) filled at each revision, as xnu's
/// `TASK_VM_INFO_REVn_COUNT` defines them: revision 0 stops before
/// `phys_footprint`; 1 adds it (2 words); 2 the address range (4); 3 the 21
/// ledgers (42); 4 `limit_bytes_remaining` (2); 5 `decompressions` (1);
/// 6 `ledger_swapins` (2).
pub const REV0_COUNT: u32 = (PHYS_FOOTPRINT / 4) as u32;
/// Revision 1: `phys_footprint`.
pub const REV1_COUNT: u32 = REV0_COUNT + 2;
/// Revision 2: `min_address`, `max_address`.
pub const REV2_COUNT: u32 = REV1_COUNT + 4;
/// Revision 3: the ledgers, `ledger_phys_footprint_peak` first.
pub const REV3_COUNT: u32 = REV2_COUNT + 42;
/// The whole struct as of revision 6: what the probe asks for.
pub const FULL_COUNT: u32 = REV3_COUNT + 2 + 1 + 2;

/// What the kernel said, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// `phys_footprint` now.
    pub current: u64,
    /// `ledger_phys_footprint_peak`, where the kernel filled revision 3.
    pub peak: Option<u64>,
}

/// Parse the words `task_info` wrote, `count` of them filled. `None` when
/// the count stops before `phys_footprint` (a kernel before revision 1),
/// or the buffer is shorter than the count says.
pub fn parse_task_vm_info(words: &[u32], count: u32) -> Option<Footprint> {
    let filled = words.get(..count as usize)?;
    // An i64/u64 at a 4-byte-aligned offset: two native-endian words, the
    // low one first on the little-endian CPUs Apple ships.
    let u64_at = |offset: usize| {
        let i = offset / 4;
        let (lo, hi) = (*filled.get(i)?, *filled.get(i + 1)?);
        Some(u64::from(lo) | (u64::from(hi) << 32))
    };
    if count < REV1_COUNT {
        return None;
    }
    let current = u64_at(PHYS_FOOTPRINT)?;
    // A negative ledger (an i64) is no reading.
    let peak = (count >= REV3_COUNT).then(|| u64_at(LEDGER_PEAK)).flatten().filter(|p| (*p as i64) > 0);
    Some(Footprint { current, peak })
}

// The two system calls below are the only way to read the ledger; each
// carries its SAFETY note.
#[cfg(target_vendor = "apple")]
#[allow(unsafe_code)]
mod sys {
    extern "C" {
        /// `mach_task_self()` is a macro over this global.
        static mach_task_self_: u32;
        fn task_info(task: u32, flavor: u32, info: *mut u32, count: *mut u32) -> i32;
    }

    #[cfg(any(target_os = "ios", target_os = "tvos", target_os = "visionos"))]
    extern "C" {
        fn os_proc_available_memory() -> usize;
    }

    /// `task_info(mach_task_self(), TASK_VM_INFO, ...)`: the words filled.
    pub fn task_vm_info() -> Option<(Vec<u32>, u32)> {
        let mut words = vec![0u32; super::FULL_COUNT as usize];
        let mut count = super::FULL_COUNT;
        // SAFETY: `mach_task_self_` is the task's own port, set by the
        // runtime before `main`; `words` holds `count` writable u32s, and the
        // kernel writes at most `count` of them and stores how many it did.
        let kr = unsafe { task_info(mach_task_self_, super::TASK_VM_INFO, words.as_mut_ptr(), &mut count) };
        (kr == 0).then_some((words, count))
    }

    /// `os_proc_available_memory()`: bytes this app may still allocate
    /// before its limit (iOS 13 and later).
    #[cfg(any(target_os = "ios", target_os = "tvos", target_os = "visionos"))]
    pub fn available() -> Option<u64> {
        // SAFETY: takes no arguments and only reads the process's ledger.
        Some(unsafe { os_proc_available_memory() } as u64).filter(|v| *v > 0)
    }

    /// macOS has no per-app limit to ask about.
    #[cfg(not(any(target_os = "ios", target_os = "tvos", target_os = "visionos")))]
    pub fn available() -> Option<u64> {
        None
    }
}

/// This process's footprint, on Apple platforms.
#[cfg(target_vendor = "apple")]
pub fn current() -> Option<Footprint> {
    let (words, count) = sys::task_vm_info()?;
    parse_task_vm_info(&words, count)
}

/// This process's footprint: only Apple platforms keep one.
#[cfg(not(target_vendor = "apple"))]
pub fn current() -> Option<Footprint> {
    None
}

/// Bytes this app may still allocate before its limit, where the platform
/// says (`os_proc_available_memory`, iOS).
pub fn available() -> Option<u64> {
    #[cfg(target_vendor = "apple")]
    {
        sys::available()
    }
    #[cfg(not(target_vendor = "apple"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer as the kernel fills it: `count` words, the footprint and
    /// the ledger peak at their offsets.
    fn filled(count: u32, current: u64, peak: i64) -> Vec<u32> {
        let mut w = vec![0u32; FULL_COUNT as usize];
        let mut put = |offset: usize, v: u64| {
            w[offset / 4] = v as u32;
            w[offset / 4 + 1] = (v >> 32) as u32;
        };
        put(PHYS_FOOTPRINT, current);
        put(LEDGER_PEAK, peak as u64);
        w.truncate(count as usize);
        w.resize(FULL_COUNT as usize, 0xdead_beef);
        w
    }

    #[test]
    fn the_revisions_have_xnus_counts() {
        // TASK_VM_INFO_REV0..3_COUNT of xnu's osfmk/mach/task_info.h on a
        // 64-bit kernel, and the whole revision-6 struct (356 bytes).
        assert_eq!((REV0_COUNT, REV1_COUNT, REV2_COUNT, REV3_COUNT, FULL_COUNT), (36, 38, 42, 84, 89));
    }

    #[test]
    fn the_peak_is_read_only_from_a_revision_3_struct() {
        let big = 5 * (1u64 << 32) + 7; // above 4 GiB: both words count
        let full = parse_task_vm_info(&filled(FULL_COUNT, big, 300 << 20), FULL_COUNT).unwrap();
        assert_eq!(full, Footprint { current: big, peak: Some(300 << 20) });
        let rev3 = parse_task_vm_info(&filled(REV3_COUNT, 100, 200), REV3_COUNT).unwrap();
        assert_eq!(rev3.peak, Some(200));
        // A revision-2 kernel filled no ledger: what lies beyond is not one.
        let rev2 = parse_task_vm_info(&filled(REV2_COUNT, 100, 200), REV2_COUNT).unwrap();
        assert_eq!(rev2, Footprint { current: 100, peak: None });
        // Before revision 1 there is no footprint at all.
        assert_eq!(parse_task_vm_info(&filled(REV0_COUNT, 100, 200), REV0_COUNT), None);
        // A negative ledger is no reading; a short buffer is refused.
        assert_eq!(parse_task_vm_info(&filled(FULL_COUNT, 100, -1), FULL_COUNT).unwrap().peak, None);
        assert_eq!(parse_task_vm_info(&[0; 10], REV3_COUNT), None);
    }

    #[cfg(not(target_vendor = "apple"))]
    #[test]
    fn elsewhere_there_is_no_footprint() {
        assert_eq!((current(), available()), (None, None));
    }
}
