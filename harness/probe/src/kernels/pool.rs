//! A persistent thread pool for the decode loop.
//!
//! A decode step runs about five parallel regions per layer (a hundred and
//! more per token), each a few tens of microseconds long, so handing work out
//! must cost well under a microsecond. Workers spin on a generation counter
//! while work keeps coming and sleep on a condition variable after a pause,
//! so an idle pool costs nothing. The calling thread does the first share.

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Spins before a waiting worker goes to sleep (about a millisecond).
const SPINS: u32 = 1 << 15;

type Job = dyn Fn(usize) + Sync;

struct Shared {
    /// The running job; only valid while a generation is in flight.
    job: UnsafeCell<*const Job>,
    generation: AtomicU64,
    done: AtomicUsize,
    sleepers: AtomicUsize,
    quit: AtomicBool,
    panicked: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

// SAFETY: `job` is written only in `Pool::run` while no generation is in
// flight (every worker has reported `done`), and read by workers only after
// they observe the generation that published it. Only one thread can be in
// `run` at a time because `Pool` is `!Sync`: its `_not_sync:
// PhantomData<Cell<()>>` field enforces that, so two threads can never share
// a `&Pool` and write `job` concurrently.
unsafe impl Sync for Shared {}
// SAFETY: the raw job pointer is the only non-Send field; it is only
// dereferenced under the protocol above, on the worker threads that `Pool`
// joins before it is dropped.
unsafe impl Send for Shared {}

/// A fixed set of worker threads plus the caller.
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// `run` must not be called from two threads at once: keep `Pool` !Sync.
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("threads", &self.threads()).finish()
    }
}

fn noop(_: usize) {}

impl Pool {
    /// A pool of `threads` (at least 1) including the calling thread.
    pub fn new(threads: usize) -> Pool {
        let noop: &'static Job = &noop;
        let shared = Arc::new(Shared {
            job: UnsafeCell::new(noop as *const Job),
            generation: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            quit: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let workers = (1..threads.max(1))
            .map(|index| {
                let sh = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("pocketbench-worker-{index}"))
                    .spawn(move || worker(&sh, index))
                    .expect("spawn a pool worker")
            })
            .collect();
        Pool { shared, workers, _not_sync: PhantomData }
    }

    /// Threads taking part in `run`, the caller included.
    pub fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Call `f(i)` once for every thread index `i` in `0..threads()`, in
    /// parallel, and return when all calls have returned. A panic in any
    /// call is re-raised here.
    pub fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        if self.workers.is_empty() {
            return f(0);
        }
        let sh = &*self.shared;
        // SAFETY: no generation is in flight (the previous `run` waited for
        // every worker), so no worker reads `job` now. The lifetime is erased
        // because this function does not return until every worker is done
        // with `f`, even when `f` panics.
        unsafe {
            *sh.job.get() = std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const Job>(f);
        }
        sh.done.store(0, Relaxed);
        sh.generation.fetch_add(1, SeqCst);
        if sh.sleepers.load(SeqCst) > 0 {
            let _guard = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
            sh.wake.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| f(0)));
        let mut spins = 0u32;
        while sh.done.load(Acquire) < self.workers.len() {
            spins = spins.wrapping_add(1);
            if spins < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if sh.panicked.swap(false, SeqCst) {
            panic!("a thread-pool worker panicked");
        }
    }
}

fn worker(sh: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let mut spins = 0u32;
        loop {
            if sh.quit.load(Acquire) {
                return;
            }
            let g = sh.generation.load(Acquire);
            if g != seen {
                seen = g;
                break;
            }
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
                continue;
            }
            let guard = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
            sh.sleepers.fetch_add(1, SeqCst);
            // Re-check under the lock: `run` bumps the generation before it
            // looks for sleepers, and notifies under this lock.
            let guard = if sh.generation.load(SeqCst) == seen && !sh.quit.load(SeqCst) {
                sh.wake.wait(guard).unwrap_or_else(|e| e.into_inner())
            } else {
                guard
            };
            sh.sleepers.fetch_sub(1, SeqCst);
            drop(guard);
            spins = 0;
        }
        // SAFETY: the generation just observed was published after `job` was
        // written, and `run` keeps `job` alive until this worker reports done.
        let job = unsafe { &**sh.job.get() };
        if catch_unwind(AssertUnwindSafe(|| job(index))).is_err() {
            sh.panicked.store(true, SeqCst);
        }
        sh.done.fetch_add(1, Release);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.quit.store(true, SeqCst);
        {
            let _guard = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
