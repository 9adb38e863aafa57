//! Time for the energy sampler, behind a seam (hyperfine's `MockExecutor`
//! idea): the system clock in use, a manual clock in tests, so that a meter
//! test checks exact joules over exact seconds instead of sleeping multiples
//! of the sampling interval and allowing for scheduler noise.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A monotonic clock the sampler reads and waits on.
pub trait Clock: Send + Sync {
    /// Seconds since a fixed origin of this clock.
    fn now(&self) -> f64;
    /// Wait `d`, or less when `stop` receives (or its sender is gone).
    /// Returns true when stopped.
    fn wait(&self, d: Duration, stop: &Receiver<()>) -> bool;
}

/// The machine's monotonic clock.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    fn wait(&self, d: Duration, stop: &Receiver<()>) -> bool {
        !matches!(stop.recv_timeout(d), Err(RecvTimeoutError::Timeout))
    }
}

type Tick = Box<dyn FnMut(f64) + Send>;

/// A clock that moves only when the sampler waits: each wait advances it by
/// the interval and calls `on_tick(t)` (a test updates its fake counters
/// there) until `until` seconds, after which a wait blocks until stopped.
/// The readings a meter takes are then at exactly known instants.
pub struct ManualClock {
    state: Mutex<(f64, Tick)>,
    until: f64,
}

impl ManualClock {
    /// A clock at 0 s that runs to `until` seconds.
    pub fn new(until: f64, on_tick: impl FnMut(f64) + Send + 'static) -> Self {
        ManualClock { state: Mutex::new((0.0, Box::new(on_tick))), until }
    }
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock").field("now", &self.now()).field("until", &self.until).finish()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    fn wait(&self, d: Duration, stop: &Receiver<()>) -> bool {
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let next = s.0 + d.as_secs_f64();
            // A millionth of a step of slack for the float sum of the steps.
            if next <= self.until + 1e-6 * d.as_secs_f64() {
                s.0 = next;
                (s.1)(next);
                return false;
            }
        }
        let _ = stop.recv();
        true
    }
}
