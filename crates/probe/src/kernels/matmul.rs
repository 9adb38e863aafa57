//! The parallel matrix × activations product.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use super::layout::GROUP;
use super::qmatrix::RowKernel;
use super::{BlockQ8, Pool, QMatrix, BLOCK};

/// The share of `0..total` that thread `t` of `n` takes: contiguous and
/// balanced to within one item.
pub fn span(total: usize, t: usize, n: usize) -> Range<usize> {
    let (q, r) = (total / n, total % n);
    let start = t * q + t.min(r);
    start..start + q + usize::from(t < r)
}

/// Items `0..total` of one parallel region, shared out over `n` threads:
/// each thread takes chunks from the front of its own [`span`] (so, when
/// all keep pace, each reads the rows it read last token), then from the
/// other threads' spans. A thread the OS deschedules mid-region leaves its
/// remaining chunks to the others instead of stalling every region until it
/// runs again (on two cores under another load, fixed spans made decode
/// collapse).
pub struct Shares {
    /// Per thread: the next unclaimed item of its span (may run past the
    /// end). Inline for up to [`INLINE`] threads: a region must not allocate.
    next: Cursors,
    threads: usize,
    total: usize,
    chunk: usize,
}

/// Threads whose cursors live inline in [`Shares`].
const INLINE: usize = 4;

#[allow(clippy::large_enum_variant)] // inline on purpose: a region must not allocate
enum Cursors {
    Inline([Cursor; INLINE]),
    Heap(Vec<Cursor>),
}

/// A claim cursor on a cache line of its own, so two threads' claims never
/// share one.
#[repr(align(64))]
struct Cursor(AtomicUsize);

impl Shares {
    /// `total` items over `n` threads, claimed `chunk` at a time (at least 1).
    pub fn new(total: usize, n: usize, chunk: usize) -> Shares {
        let n = n.max(1);
        let at = |t: usize| Cursor(AtomicUsize::new(span(total, t, n).start));
        let next = if n <= INLINE {
            Cursors::Inline(std::array::from_fn(at))
        } else {
            Cursors::Heap((0..n).map(at).collect())
        };
        Shares { next, threads: n, total, chunk: chunk.max(1) }
    }

    fn cursor(&self, t: usize) -> &AtomicUsize {
        match &self.next {
            Cursors::Inline(c) => &c[t].0,
            Cursors::Heap(c) => &c[t].0,
        }
    }

    /// Call `f(item)` for every item thread `t` claims; across all threads of
    /// the region every item is claimed exactly once.
    pub fn each(&self, t: usize, mut f: impl FnMut(usize)) {
        self.each_run(t, |items| items.for_each(&mut f));
    }

    /// As [`Shares::each`], a claimed chunk at a time: `f(items)` for every
    /// run of consecutive items thread `t` claims (at most `chunk` long).
    pub fn each_run(&self, t: usize, mut f: impl FnMut(Range<usize>)) {
        let n = self.threads;
        for k in 0..n {
            let owner = (t + k) % n;
            let (end, cursor) = (span(self.total, owner, n).end, self.cursor(owner));
            // Another thread's span is read before it is claimed from: an
            // exhausted one (the usual case when the threads keep pace) then
            // costs a shared read, not a write to the owner's cache line.
            while k == 0 || cursor.load(Relaxed) < end {
                let start = cursor.fetch_add(self.chunk, Relaxed);
                if start >= end {
                    break;
                }
                f(start..(start + self.chunk).min(end));
            }
        }
    }
}

/// Chunks of about a quarter of a thread's share: few enough claims to cost
/// nothing next to the work, small enough to rebalance a region.
fn chunk_for(total: usize, n: usize) -> usize {
    total.div_ceil(4 * n.max(1))
}

/// A shared output buffer that threads write at disjoint indices.
struct Out(*mut f32, usize);
// SAFETY: threads write disjoint indices (each item, so each row, is
// claimed by one thread: `Shares`), and the buffer outlives the `Pool::share`
// call that uses it.
unsafe impl Sync for Out {}

impl Out {
    fn ptr(&self) -> *mut f32 {
        self.0
    }

    fn set(&self, i: usize, v: f32) {
        assert!(i < self.1, "output index out of range");
        // SAFETY: in bounds (checked), and no other thread writes index `i`.
        unsafe { self.0.add(i).write(v) }
    }

    /// Indices `range` as a slice.
    ///
    /// # Safety
    /// No other thread may read or write `range` while the slice lives
    /// (the caller claimed its items through [`Shares`]).
    #[allow(clippy::mut_from_ref)] // disjoint claims, as the contract says
    unsafe fn slice(&self, range: Range<usize>) -> &mut [f32] {
        assert!(range.start <= range.end && range.end <= self.1, "output range out of bounds");
        // SAFETY: in bounds (checked); exclusive as the caller guarantees.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(range.start), range.len()) }
    }
}

/// For each `(w, out)` pair: `out[b * w.rows + r] = w.row(r) · x[b]` for
/// every row `r` and each of the `tokens` activation vectors. The
/// activations come twice: as f32 (`x`, `tokens × cols` values, which float
/// weights read) and as Q8 blocks (`xq`, which quantized weights read). All
/// matrices share the column count. Rows are split across the pool's
/// threads, so several small matrices (Q, K, V) make one parallel region.
pub fn matmul<const N: usize>(
    pool: &Pool,
    ws: [&QMatrix; N],
    outs: [&mut [f32]; N],
    x: &[f32],
    xq: &[BlockQ8],
    tokens: usize,
) {
    let tokens = tokens.max(1);
    let (cols, nb) = (x.len() / tokens, xq.len() / tokens);
    for (w, out) in ws.iter().zip(outs.iter()) {
        assert_eq!(w.cols, cols, "matmul: columns do not match the activations");
        assert_eq!(w.cols / BLOCK, nb, "matmul: columns do not match the quantized activations");
        assert_eq!(out.len(), w.rows * tokens, "matmul: output size");
    }
    let outs = outs.map(|o| Out(o.as_mut_ptr(), o.len()));
    let n = pool.threads();
    // Prompt chunks run whole tiles of tokens through the prefill kernel
    // (over `per` groups a call), the remaining tokens (and decode's one)
    // through the per-token one. A work item is `per` groups, or one tail row.
    let tile = super::tile_tokens();
    let tiled = if tile > 1 { tokens / tile * tile } else { 0 };
    let per = if tiled > 0 { super::tile_groups() } else { 1 };
    let units = |w: &QMatrix| w.groups().div_ceil(per);
    let shares = ws.map(|w| {
        let items = w.items() - w.groups() + units(w);
        Shares::new(items, n, chunk_for(items, n))
    });
    pool.share(&|t| {
        for ((w, out), shares) in ws.iter().zip(&outs).zip(&shares) {
            let (groups, kernel) = (w.groups(), w.kind.row_kernel());
            let l = w.layout().unwrap_or(super::layout::Q40);
            let mut lanes = [0f32; GROUP];
            let mut tiles = [[0f32; GROUP]; 16];
            let units = units(w);
            shares.each_run(t, |mut items| {
                // Decode (one token, no tiles): the claimed groups go to the
                // kernel as one run, each writing its eight rows in place.
                if tokens == 1 && tiled == 0 && items.start < units {
                    let gs = items.start..items.end.min(units);
                    // SAFETY: rows `gs` x 8 belong to the groups this thread claimed.
                    let out = unsafe { out.slice(gs.start * GROUP..gs.end * GROUP) };
                    super::dot_q4x8_run(l, w.group_run(gs.start, gs.len()), xq, out);
                    items.start = gs.end;
                }
                for item in items {
                    if item < units {
                        let groups = item * per..(item * per + per).min(groups);
                        let tiling = Tiling { tile, tiled, nb };
                        group_item(w, l, out, xq, groups, tiling, &mut tiles, &mut lanes);
                    } else {
                        plain_row(w, kernel, out, (x, cols), (xq, nb), groups * GROUP + item - units);
                    }
                }
            });
        }
    });
}

/// How a prompt chunk's tokens go through the kernels: the first `tiled`
/// in tiles of `tile` tokens, the rest one at a time; `nb` blocks a token.
#[derive(Clone, Copy)]
struct Tiling {
    tile: usize,
    tiled: usize,
    nb: usize,
}

/// One work item of interleaved groups: its tiles of tokens through the
/// prefill kernel, the remaining tokens through the per-token one, each
/// writing the groups' eight rows.
#[inline]
#[allow(clippy::too_many_arguments)]
fn group_item(
    w: &QMatrix,
    l: u8,
    out: &Out,
    xq: &[BlockQ8],
    groups: std::ops::Range<usize>,
    Tiling { tile, tiled, nb }: Tiling,
    tiles: &mut [[f32; GROUP]; 16],
    lanes: &mut [f32; GROUP],
) {
    let (g0, k) = (groups.start, groups.len());
    let run = w.group_run(g0, k);
    for t0 in (0..tiled).step_by(tile.max(1)) {
        let tiles = &mut tiles[..k * tile];
        super::dot_q4x8_tile(l, run, &xq[t0 * nb..(t0 + tile) * nb], nb, tiles);
        for (i, lanes) in tiles.iter().enumerate() {
            let (g, j) = (g0 + i / tile, i % tile);
            for (lane, v) in lanes.iter().enumerate() {
                out.set((t0 + j) * w.rows + g * GROUP + lane, *v);
            }
        }
    }
    for g in groups {
        for (b, xb) in xq.chunks_exact(nb).enumerate().skip(tiled) {
            super::dot_q4x8(l, w.group(g), xb, lanes);
            for (lane, v) in lanes.iter().enumerate() {
                out.set(b * w.rows + g * GROUP + lane, *v);
            }
        }
    }
}

/// One row-major row `r` (a tail row, or a row of a type with no
/// interleaved layout) against every token.
#[inline]
fn plain_row(
    w: &QMatrix,
    kernel: RowKernel,
    out: &Out,
    (x, cols): (&[f32], usize),
    (xq, nb): (&[BlockQ8], usize),
    r: usize,
) {
    let row = w.plain_row(r);
    match kernel {
        RowKernel::Q8(dot) => {
            for (b, xb) in xq.chunks_exact(nb).enumerate() {
                out.set(b * w.rows + r, dot(row, xb));
            }
        }
        RowKernel::F(dot) => {
            for (b, xb) in x.chunks_exact(cols).enumerate() {
                out.set(b * w.rows + r, dot(row, xb));
            }
        }
    }
}

/// Split `data` into chunks of `len` values and call `f(thread, index,
/// chunk)` for every chunk, the chunks shared out over the pool's threads
/// as [`Shares`] of one (attention heads, for instance).
pub fn for_each_chunk(pool: &Pool, data: &mut [f32], len: usize, f: &(dyn Fn(usize, usize, &mut [f32]) + Sync)) {
    assert!(len > 0 && data.len().is_multiple_of(len), "for_each_chunk: {} values in chunks of {len}", data.len());
    let count = data.len() / len;
    let base = Out(data.as_mut_ptr(), data.len());
    let shares = Shares::new(count, pool.threads(), 1);
    pool.share(&|t| {
        shares.each(t, |i| {
            // SAFETY: chunk `i` lies inside `data` (i < count), and every
            // index is claimed by one thread only, so no two `&mut` alias;
            // `data` stays borrowed until `run` returns.
            let chunk = unsafe { std::slice::from_raw_parts_mut(base.ptr().add(i * len), len) };
            f(t, i, chunk);
        });
    });
}

/// Index of the largest value (the first of equals); 0 for an empty slice.
/// Greedy sampling runs this over the whole vocabulary every token, so the
/// maximum is found with SIMD first and then its first position.
pub fn argmax(xs: &[f32]) -> usize {
    match super::isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 detected by `isa()`.
        super::Isa::Avx2 => unsafe { super::x86::position(xs, super::x86::max(xs)) }.unwrap_or(0),
        _ => {
            let max = xs.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b));
            xs.iter().position(|v| *v == max).unwrap_or(0)
        }
    }
}
