//! A persistent thread pool for the decode loop.
//!
//! A decode step runs about five parallel regions per layer (a hundred and
//! more per token), each a few tens of microseconds long, so handing work out
//! must cost well under a microsecond. Workers spin on the region state while
//! work keeps coming and sleep on a condition variable after a pause, so an
//! idle pool costs nothing. The calling thread does the first share.
//!
//! Two kinds of region. [`Pool::run`] calls the job once for every thread
//! index and waits for all of them. [`Pool::share`] waits only for the
//! caller's own call and for workers already inside the job: a worker that
//! has not joined by then (descheduled by the OS: on two cores under another
//! load, waiting for it made every region last a time slice) skips the
//! region. Its jobs must let any set of calls that includes index 0 do all the
//! work ([`super::Shares`]).

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
    /// The running job; only valid while a region is open.
    job: UnsafeCell<*const Job>,
    /// `2 * generation`, plus 1 once that region is closed: workers enter
    /// only an open region they have not run yet.
    state: AtomicU64,
    /// Workers inside (or deciding whether to enter) the job.
    active: AtomicUsize,
    done: AtomicUsize,
    sleepers: AtomicUsize,
    quit: AtomicBool,
    panicked: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    /// Tests: microseconds a worker waits between seeing a region open and
    /// joining it, as a descheduled worker would.
    #[cfg(test)]
    join_delay_us: AtomicU64,
}

// SAFETY: `job` is written only in `Pool::region`, while no region is open and
// no worker is active (the previous region waited for `active` to reach 0
// after closing), and read by a worker only after it has announced itself in
// `active` and seen, afterwards, that the region it observed is still open
// (see `worker`): the closing caller then waits for it. Only one thread can
// open regions because `Pool` is `!Sync` (its `_not_sync:
// PhantomData<Cell<()>>` field), so `job` is never written concurrently.
unsafe impl Sync for Shared {}
// SAFETY: the raw job pointer is the only non-Send field; it is only
// dereferenced under the protocol above, on the worker threads that `Pool`
// joins before it is dropped.
unsafe impl Send for Shared {}

/// A fixed set of worker threads plus the caller.
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Regions must not be opened from two threads at once: keep `Pool` !Sync.
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("threads", &self.threads()).finish()
    }
}

fn noop(_: usize) {}

fn spin(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if *spins < SPINS {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Pin each new pool's threads one to a CPU ([`set_pinning`]).
static PIN: AtomicBool = AtomicBool::new(false);

/// Whether pools made from now on pin their threads: thread `i` (the
/// caller is 0) to the `i`-th CPU the process may run on. Off by default;
/// the probe turns it on when its spec asks (`pin`).
pub fn set_pinning(on: bool) {
    PIN.store(on, SeqCst);
}

/// Whether pools pin their threads.
pub fn pinning() -> bool {
    PIN.load(SeqCst)
}

/// The CPUs this process may run on, ascending (empty where unknown).
pub fn allowed_cpus() -> Vec<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        if let Ok(set) = rustix::thread::sched_getaffinity(None) {
            return (0..rustix::thread::CpuSet::MAX_CPU).filter(|c| set.is_set(*c)).map(|c| c as u32).collect();
        }
    }
    Vec::new()
}

/// Pin the calling thread to the `index`-th allowed CPU (wrapping).
fn pin_current(index: usize, cpus: &[u32]) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(&cpu) = cpus.get(index % cpus.len().max(1)) {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu as usize);
        // A refused pin (a cgroup that moved the CPU away) leaves the
        // thread where the scheduler puts it; the record says `pinned`
        // from the setting, the covariates say where threads ran.
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = (index, cpus);
}

impl Pool {
    /// A pool of `threads` (at least 1) including the calling thread.
    pub fn new(threads: usize) -> Pool {
        let pin = pinning().then(allowed_cpus).filter(|c| !c.is_empty());
        if let Some(cpus) = &pin {
            pin_current(0, cpus);
        }
        let noop: &'static Job = &noop;
        let shared = Arc::new(Shared {
            job: UnsafeCell::new(noop as *const Job),
            state: AtomicU64::new(1),
            active: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            quit: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            #[cfg(test)]
            join_delay_us: AtomicU64::new(0),
        });
        let workers = (1..threads.max(1))
            .map(|index| {
                let sh = Arc::clone(&shared);
                let pin = pin.clone();
                std::thread::Builder::new()
                    .name(format!("pocketbench-worker-{index}"))
                    .spawn(move || {
                        if let Some(cpus) = &pin {
                            pin_current(index, cpus);
                        }
                        worker(&sh, index)
                    })
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
        self.region(f, true)
    }

    /// Call `f(0)` here and `f(i)` on each worker that joins while it runs;
    /// return once `f(0)` and every joined call have returned. `f` must
    /// finish the region's work whichever calls (index 0 among them) are
    /// made. A panic in any call is re-raised here.
    pub fn share(&self, f: &(dyn Fn(usize) + Sync)) {
        self.region(f, false)
    }

    /// Tests: make the workers join every region `us` microseconds late.
    #[cfg(test)]
    pub(super) fn delay_joins(&self, us: u64) {
        self.shared.join_delay_us.store(us, SeqCst);
    }

    fn region(&self, f: &(dyn Fn(usize) + Sync), every: bool) {
        if self.workers.is_empty() {
            return f(0);
        }
        let sh = &*self.shared;
        // SAFETY: no region is open and no worker is active (the previous
        // region waited for `active == 0` after closing), so no worker reads
        // `job` now. The lifetime is erased because this function does not
        // return until no worker is inside `f`, even when `f` panics.
        unsafe {
            *sh.job.get() = std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const Job>(f);
        }
        sh.done.store(0, Relaxed);
        let open = sh.state.load(Relaxed) + 1;
        // A store and then a load of another atomic is the store-buffering
        // (Dekker) pattern: the read-modify-write is a full barrier on every
        // target and emulator, where a SeqCst store followed by a SeqCst load
        // was not under qemu-aarch64 (its x86 store buffer let the load pass
        // the store, and a late worker ran a closed region's job).
        sh.state.swap(open, SeqCst);
        if sh.sleepers.load(SeqCst) > 0 {
            let _guard = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
            sh.wake.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| f(0)));
        let mut spins = 0u32;
        if every {
            while sh.done.load(Acquire) < self.workers.len() {
                spin(&mut spins);
            }
        }
        // Close the region, then wait for the workers inside it. A worker
        // that announces itself after this load sees the region closed (a
        // read-modify-write, for the reason above).
        sh.state.swap(open + 1, SeqCst);
        while sh.active.load(SeqCst) > 0 {
            spin(&mut spins);
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
    // The last region this worker ran or passed over.
    let mut seen = 0u64;
    loop {
        let mut spins = 0u32;
        let open = loop {
            if sh.quit.load(Acquire) {
                return;
            }
            let s = sh.state.load(Acquire);
            if s.is_multiple_of(2) && s != seen {
                break s;
            }
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
                continue;
            }
            let guard = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
            sh.sleepers.fetch_add(1, SeqCst);
            // Re-check under the lock: a region is opened before the
            // caller looks for sleepers, and it notifies under this lock.
            let s = sh.state.load(SeqCst);
            let guard = if (!s.is_multiple_of(2) || s == seen) && !sh.quit.load(SeqCst) {
                sh.wake.wait(guard).unwrap_or_else(|e| e.into_inner())
            } else {
                guard
            };
            sh.sleepers.fetch_sub(1, SeqCst);
            drop(guard);
            spins = 0;
        };
        seen = open;
        #[cfg(test)]
        std::thread::sleep(std::time::Duration::from_micros(sh.join_delay_us.load(Relaxed)));
        // Announce, then check the region is still the open one: if the
        // caller closed it before seeing this worker in `active`, it has
        // moved on and `job` may already be another region's.
        sh.active.fetch_add(1, SeqCst);
        if sh.state.load(SeqCst) == open {
            // SAFETY: the region that published `job` is still open and this
            // worker is counted in `active`, so the caller keeps `job` alive
            // and unchanged until this worker leaves.
            let job = unsafe { &**sh.job.get() };
            if catch_unwind(AssertUnwindSafe(|| job(index))).is_err() {
                sh.panicked.store(true, SeqCst);
            }
            sh.done.fetch_add(1, Release);
        }
        sh.active.fetch_sub(1, SeqCst);
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
