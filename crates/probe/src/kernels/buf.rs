//! The memory a weight matrix lives in.
//!
//! Decode streams every weight once a token, hundreds of megabytes, so with
//! 4 KiB pages it takes a TLB miss every 4 KiB. A model's matrices are
//! carved one after another out of one anonymous mapping ([`Arena`])
//! advised `MADV_HUGEPAGE` before anything is written (Linux), so where
//! transparent huge pages are `madvise` (Debian's and Ubuntu's default) or
//! `always` the kernel backs them with 2 MiB pages as they are first
//! touched; a matrix of its own smaller than 2 MiB could not hold one.
//! Pages are touched only as matrices are written, so the reservation's
//! unused end costs no memory. The native engine's KV cache, which decode
//! attention streams whole every token, lives in the same kind of memory
//! ([`HalfBuf`]). `methods.weights_memory` records the machine's setting.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// Matrices at least this large are mapped; smaller ones stay on the heap.
const HUGE: usize = 2 << 20;

/// `len` bytes of anonymous memory advised `MADV_HUGEPAGE` (Linux), or
/// `None` where the mapping fails. A kernel without transparent huge pages
/// refuses the advice; the mapping still works with small pages.
fn map_advised(len: usize) -> Option<memmap2::MmapMut> {
    let m = memmap2::MmapMut::map_anon(len).ok()?;
    #[cfg(target_os = "linux")]
    let _ = m.advise(memmap2::Advice::HugePage);
    Some(m)
}

/// A weight matrix's bytes: on the heap, in an anonymous mapping of its
/// own, or a slice of an [`Arena`].
pub struct WeightBuf(Inner);

enum Inner {
    /// A plain vector (small matrices; matrices built from a `Vec`).
    Heap(Vec<u8>),
    /// An anonymous mapping advised for huge pages.
    Mapped(memmap2::MmapMut),
    /// `len` bytes at `ptr` inside an arena's mapping, which `_map` keeps
    /// alive; no other buffer covers them.
    Carved { _map: Arc<memmap2::MmapMut>, ptr: *mut u8, len: usize },
}

// SAFETY: a `Carved` buffer is the only handle to its bytes (the arena hands
// out disjoint ranges and never reads them), like a `Vec`'s; the mapping
// outlives it through the `Arc`.
unsafe impl Send for WeightBuf {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for WeightBuf {}

/// One anonymous mapping advised for huge pages, handed out front to back
/// as slices (64-byte aligned); a request past its end
/// gets a buffer of its own.
pub struct Arena {
    map: Option<Arc<memmap2::MmapMut>>,
    base: *mut u8,
    size: usize,
    next: usize,
    /// Where the last buffer handed out starts.
    last: usize,
}

impl Arena {
    /// Reserve `size` bytes (address space only until written).
    pub fn new(size: usize) -> Arena {
        match (size >= HUGE).then(|| map_advised(size)).flatten() {
            Some(mut m) => {
                let base = m.as_mut_ptr();
                Arena { map: Some(Arc::new(m)), base, size, next: 0, last: 0 }
            }
            None => Arena { map: None, base: std::ptr::null_mut(), size: 0, next: 0, last: 0 },
        }
    }

    /// `len` zero bytes: the arena's next ones, or a buffer of their own.
    pub fn take(&mut self, len: usize) -> WeightBuf {
        let start = self.next.next_multiple_of(64);
        match (&self.map, start.checked_add(len)) {
            (Some(map), Some(end)) if end <= self.size && len > 0 => {
                (self.last, self.next) = (start, end);
                // SAFETY: `start..end` lies inside the mapping (checked), and
                // every buffer handed out ends at or before `next` (`reclaim`
                // moves it back only past bytes no buffer covers), so no two
                // buffers overlap.
                let ptr = unsafe { self.base.add(start) };
                WeightBuf(Inner::Carved { _map: Arc::clone(map), ptr, len })
            }
            _ => WeightBuf::zeroed(len),
        }
    }

    /// Take back the end of the last buffer handed out that `buf`, that
    /// buffer after [`WeightBuf::truncate`], no longer covers, zeroed, so the
    /// next buffer starts there (pages already touched are used again, not
    /// left resident and idle). Any other buffer is left alone.
    pub fn reclaim(&mut self, buf: &WeightBuf) {
        if let Inner::Carved { ptr, len, .. } = buf.0 {
            // SAFETY: `last` is inside the mapping (it started a buffer).
            if self.map.is_some() && ptr == unsafe { self.base.add(self.last) } && self.last + len <= self.next {
                // SAFETY: `last + len..next` was the end of the last buffer,
                // which `buf`, now shorter, no longer covers: no buffer does.
                unsafe { self.base.add(self.last + len).write_bytes(0, self.next - self.last - len) };
                self.next = self.last + len;
            }
        }
    }
}

impl WeightBuf {
    /// Keep the first `len` bytes (no more than there are); a buffer of its
    /// own mapping keeps the mapping whole.
    pub fn truncate(&mut self, len: usize) {
        let len = len.min(self.len());
        match &mut self.0 {
            Inner::Heap(v) => v.truncate(len),
            Inner::Carved { len: l, .. } => *l = len,
            Inner::Mapped(_) => {
                let Inner::Mapped(mut m) = std::mem::replace(&mut self.0, Inner::Heap(Vec::new())) else {
                    unreachable!("matched above")
                };
                let ptr = m.as_mut_ptr();
                self.0 = Inner::Carved { _map: Arc::new(m), ptr, len };
            }
        }
    }

    /// `len` zero bytes, mapped and advised for huge pages when `len` is at
    /// least 2 MiB (the heap if the mapping fails: the advice is a hint).
    pub fn zeroed(len: usize) -> WeightBuf {
        if len < HUGE {
            return WeightBuf(Inner::Heap(vec![0; len]));
        }
        match map_advised(len) {
            Some(m) => WeightBuf(Inner::Mapped(m)),
            None => WeightBuf(Inner::Heap(vec![0; len])),
        }
    }

    /// Whether the bytes are in a mapping advised for huge pages.
    pub fn mapped(&self) -> bool {
        !matches!(self.0, Inner::Heap(_))
    }

    /// The bytes as 64-bit words: all of them for a mapping (page-aligned),
    /// the aligned middle of a heap buffer.
    pub fn words(&self) -> &[u64] {
        // SAFETY: every bit pattern is a valid `u64`; `align_to` hands back
        // only the part that is aligned for it.
        let (_, words, _) = unsafe { self.align_to::<u64>() };
        words
    }

    /// As [`WeightBuf::words`], to write.
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `words`; writing any `u64` leaves valid bytes.
        let (_, words, _) = unsafe { self.align_to_mut::<u64>() };
        words
    }
}

/// The machine's transparent huge page setting (`always`, `madvise` or
/// `never`), where the kernel says.
pub fn transparent_huge_pages() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let chosen = s.split_whitespace().find(|w| w.starts_with('['))?;
    Some(chosen.trim_matches(|c| c == '[' || c == ']').to_string())
}

/// f16 bits in one anonymous mapping advised for huge pages when they take
/// 2 MiB or more (the heap otherwise, or if the mapping fails): the native
/// engine's KV cache. Decode reads all of it every token; over Qwen3-0.6B's
/// 125 MB at 1088 positions the attention bench took 10.9-11.5 ms a token
/// with 4 KiB pages and 7.9-8.7 ms advised (Zen 4 VM, one thread).
pub struct HalfBuf(Halves);

enum Halves {
    Heap(Vec<u16>),
    /// `len` values at the start of the mapping (page-aligned, so aligned for `u16`).
    Mapped(memmap2::MmapMut, usize),
}

impl HalfBuf {
    /// `len` zero values.
    pub fn zeroed(len: usize) -> HalfBuf {
        let bytes = len.checked_mul(2).expect("HalfBuf: length overflows");
        match (bytes >= HUGE).then(|| map_advised(bytes)).flatten() {
            Some(m) => HalfBuf(Halves::Mapped(m, len)),
            None => HalfBuf(Halves::Heap(vec![0; len])),
        }
    }

    /// Whether the values are in a mapping advised for huge pages.
    pub fn mapped(&self) -> bool {
        matches!(self.0, Halves::Mapped(..))
    }
}

impl Deref for HalfBuf {
    type Target = [u16];
    fn deref(&self) -> &[u16] {
        match &self.0 {
            Halves::Heap(v) => v,
            // SAFETY: the mapping is page-aligned and `2 * len` bytes long,
            // and any bits are a valid `u16`.
            Halves::Mapped(m, len) => unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<u16>(), *len) },
        }
    }
}

impl DerefMut for HalfBuf {
    fn deref_mut(&mut self) -> &mut [u16] {
        match &mut self.0 {
            Halves::Heap(v) => v,
            // SAFETY: as in `deref`; `&mut self` makes this the only access.
            Halves::Mapped(m, len) => unsafe { std::slice::from_raw_parts_mut(m.as_mut_ptr().cast::<u16>(), *len) },
        }
    }
}

impl fmt::Debug for HalfBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HalfBuf({} values{})", self.len(), if self.mapped() { ", mapped" } else { "" })
    }
}

impl From<Vec<u8>> for WeightBuf {
    fn from(v: Vec<u8>) -> WeightBuf {
        WeightBuf(Inner::Heap(v))
    }
}

impl Deref for WeightBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Inner::Heap(v) => v,
            Inner::Mapped(m) => m,
            // SAFETY: `ptr..ptr + len` is inside the live mapping and no
            // other buffer covers it.
            Inner::Carved { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl DerefMut for WeightBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Inner::Heap(v) => v,
            Inner::Mapped(m) => m,
            // SAFETY: as in `deref`; `&mut self` makes this the only access.
            Inner::Carved { ptr, len, .. } => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
        }
    }
}

impl Clone for WeightBuf {
    fn clone(&self) -> WeightBuf {
        let mut b = WeightBuf::zeroed(self.len());
        b.copy_from_slice(self);
        b
    }
}

impl fmt::Debug for WeightBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WeightBuf({} bytes{})", self.len(), if self.mapped() { ", mapped" } else { "" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_last_buffer_gives_its_end_back_zeroed() {
        let mut arena = Arena::new(8 << 20);
        let mut a = arena.take(3 << 20);
        a.fill(7);
        a.truncate(1 << 20);
        arena.reclaim(&a);
        let b = arena.take(2 << 20);
        // `b` starts where `a` now ends, on bytes `a` wrote: zeroed again.
        assert_eq!(b.as_ptr(), a.as_ptr().wrapping_add(1 << 20));
        assert!(b.iter().all(|v| *v == 0));
        // An earlier buffer is not the last one: nothing moves.
        let mut a = a;
        a.truncate(10);
        arena.reclaim(&a);
        assert_eq!(arena.take(64).as_ptr(), b.as_ptr().wrapping_add(2 << 20));
        // A buffer of its own mapping, and a heap one, truncate too.
        let (mut m, mut h) = (WeightBuf::zeroed(4 << 20), WeightBuf::from(vec![1u8; 100]));
        m.truncate(5);
        h.truncate(3);
        assert_eq!((m.len(), m.mapped(), h.len()), (5, true, 3));
    }

    #[test]
    fn large_buffers_are_mapped_zeroed_and_writable_small_ones_are_not() {
        let mut big = WeightBuf::zeroed(HUGE + 100);
        assert!(big.mapped());
        assert!(big.iter().all(|b| *b == 0));
        big[HUGE + 99] = 7;
        assert_eq!(big.clone()[HUGE + 99], 7);
        assert!(!WeightBuf::zeroed(100).mapped());
        assert!(!WeightBuf::from(vec![1u8; HUGE]).mapped());
        let mut halves = HalfBuf::zeroed(HUGE / 2 + 3);
        assert!(halves.mapped() && halves.len() == HUGE / 2 + 3 && halves.iter().all(|h| *h == 0));
        halves[HUGE / 2 + 2] = 0x3c00;
        assert_eq!(halves[HUGE / 2 + 2], 0x3c00);
        assert!(!HalfBuf::zeroed(100).mapped() && HalfBuf::zeroed(100).len() == 100);
        let mut arena = Arena::new(HUGE * 2);
        let (mut a, mut b) = (arena.take(100), arena.take(HUGE));
        assert!(a.mapped() && b.mapped() && a.len() == 100 && b.len() == HUGE);
        a[99] = 1;
        b[0] = 2;
        assert_eq!((a[99], b[0], a[0]), (1, 2, 0), "disjoint and zeroed");
        let past = arena.take(HUGE);
        assert!(past.mapped() && past.len() == HUGE, "past the end: a mapping of its own");
        drop(arena);
        assert_eq!(b[0], 2, "a slice keeps the mapping alive");
        if let Some(mode) = transparent_huge_pages() {
            assert!(["always", "madvise", "never"].contains(&mode.as_str()), "{mode}");
        }
    }
}
