//! Measuring this host's memory bandwidth: the roofline every measured decode
//! speed is compared against.
//!
//! Read: a sum over a buffer far larger than the last-level cache; copy: a
//! buffer-to-buffer copy (counted as bytes read + bytes written). Each is the
//! best of several passes, with one thread and with every core, each thread
//! on its own contiguous slice.

use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;

/// Default buffer size: 1 GiB, far beyond any current L3 (the host's is 32 MiB).
pub const DEFAULT_BYTES: usize = 1 << 30;
/// Passes per figure; the best is kept.
pub const PASSES: usize = 5;

/// Bandwidth figures, bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bandwidth {
    /// Threads used for the `*_all` figures.
    pub threads: usize,
    /// Buffer size, bytes.
    pub buffer_bytes: usize,
    /// Read, one thread.
    pub read_1: f64,
    /// Read, all threads.
    pub read_all: f64,
    /// Copy (read + write bytes), one thread.
    pub copy_1: f64,
    /// Copy, all threads.
    pub copy_all: f64,
}

fn sum(chunk: &[u64]) -> u64 {
    // AVX2 where the CPU has it: the compiler's SSE2 loop topped out near
    // 30 GB/s per thread even inside the cache, under what decode streams.
    crate::kernels::stream_sum(chunk)
}

fn best(passes: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..passes).map(|_| f()).fold(0.0, f64::max)
}

fn read_bw(buf: &[u64], threads: usize, passes: usize) -> f64 {
    let bytes = std::mem::size_of_val(buf) as f64;
    best(passes, || {
        let t = Instant::now();
        let per = buf.len().div_ceil(threads);
        let total = std::thread::scope(|s| {
            let hs: Vec<_> = buf.chunks(per).map(|c| s.spawn(move || sum(c))).collect();
            hs.into_iter().map(|h| h.join().unwrap_or(0)).fold(0u64, u64::wrapping_add)
        });
        black_box(total);
        bytes / t.elapsed().as_secs_f64()
    })
}

fn copy_bw(src: &[u64], dst: &mut [u64], threads: usize, passes: usize) -> f64 {
    let bytes = 2.0 * std::mem::size_of_val(src) as f64;
    best(passes, || {
        let t = Instant::now();
        let per = src.len().div_ceil(threads);
        std::thread::scope(|s| {
            for (a, b) in src.chunks(per).zip(dst.chunks_mut(per)) {
                s.spawn(move || b.copy_from_slice(a));
            }
        });
        black_box(&dst[0]);
        bytes / t.elapsed().as_secs_f64()
    })
}

/// Read bandwidth, bytes per second, over a fresh buffer of `bytes` with
/// `threads` threads, best of `passes`: the figure a probe records beside
/// its own decode speed, so its roofline is of the same moment.
pub fn read_bandwidth(bytes: usize, threads: usize, passes: usize) -> f64 {
    let src = filled(bytes);
    read_bw(src.words(), threads.max(1), passes)
}

/// `bytes` of memory in the kind the weights live in (an anonymous mapping
/// advised for huge pages, [`crate::kernels::WeightBuf`]), every word
/// written non-zero so every page is really backed. With 4 KiB pages a
/// 256 MiB buffer took 65536 page faults, about 0.1 s of every probe, and
/// measured a TLB the weights do not pay.
fn filled(bytes: usize) -> crate::kernels::WeightBuf {
    let mut buf = crate::kernels::WeightBuf::zeroed(bytes);
    for (i, w) in buf.words_mut().iter_mut().enumerate() {
        *w = i as u64 + 1;
    }
    buf
}

/// Measure with a buffer of `bytes` (two for the copy) and `passes` passes.
pub fn measure(bytes: usize, passes: usize) -> Bandwidth {
    let src = filled(bytes);
    let mut dst = filled(bytes);
    let (src, dst) = (src.words(), dst.words_mut());
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
    Bandwidth {
        threads,
        buffer_bytes: bytes,
        read_1: read_bw(src, 1, passes),
        read_all: read_bw(src, threads, passes),
        copy_1: copy_bw(src, dst, 1, passes),
        copy_all: copy_bw(src, dst, threads, passes),
    }
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock (Howard Hinnant's
/// `civil_from_days`, <http://howardhinnant.github.io/date_algorithms.html>).
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    date_of(secs)
}

/// Now (UTC) as RFC 3339 to the second: `2026-12-01T08:35:44Z`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let t = secs.rem_euclid(86_400);
    format!("{}T{:02}:{:02}:{:02}Z", date_of(secs), t / 3600, t / 60 % 60, t % 60)
}

/// The UTC date of `secs` seconds after the Unix epoch, as YYYY-MM-DD.
pub fn date_of(secs: i64) -> String {
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_reports_positive_figures_for_its_buffer() {
        // An 8 MiB buffer sits in cache: this checks the plumbing (every
        // figure measured, the buffer and threads recorded), not memory
        // bandwidth, which only a buffer far past the last-level cache shows.
        let b = measure(8 << 20, 2);
        assert!(b.read_1 > 1e8 && b.read_all > 1e8 && b.copy_1 > 1e8 && b.copy_all > 1e8, "{b:?}");
        assert_eq!(b.buffer_bytes, 8 << 20);
        assert_eq!(b.threads, std::thread::available_parallelism().map_or(1, |p| p.get()));
    }

    #[test]
    fn best_keeps_the_largest_pass() {
        let mut passes = [3.0, 9.0, 4.0].into_iter();
        assert_eq!(best(3, || passes.next().unwrap()), 9.0);
    }

    #[test]
    fn dates_of_known_instants() {
        for (secs, date) in [
            (0, "1970-01-01"),
            (-86_400, "1969-12-31"),
            (951_782_400, "2000-02-29"),
            (951_782_400 + 86_399, "2000-02-29"),
            (1_796_083_200, "2026-12-01"),
            (4_107_542_400, "2100-03-01"),
        ] {
            assert_eq!(date_of(secs), date, "{secs}");
        }
        assert_eq!(today().len(), 10);
    }
}
