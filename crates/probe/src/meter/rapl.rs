//! Linux RAPL through powercap: `/sys/class/powercap/intel-rapl:N/energy_uj`
//! (Intel and AMD), a counter in microjoules that wraps at
//! `max_energy_range_uj`. Only top-level (package) domains are summed:
//! sub-domains (`intel-rapl:0:0`, cores, uncore) are parts of their package.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::clock::{Clock, SystemClock};
use super::sampler::{Reading, Sampler};
use super::{read_number, EnergyMeter, EnergyReading, MeterError};

/// Energy of every RAPL package domain.
pub struct RaplMeter {
    domains: Vec<PathBuf>,
    running: Option<Sampler>,
    clock: Arc<dyn Clock>,
}

impl RaplMeter {
    /// Find readable package domains under `root`.
    pub fn discover(root: &Path) -> Result<Self, MeterError> {
        let entries = std::fs::read_dir(root)
            .map_err(|_| MeterError::Unavailable(format!("no RAPL powercap at {}", root.display())))?;
        let mut domains: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("intel-rapl:") && n.matches(':').count() == 1)
            })
            .filter(|p| read_number(&p.join("energy_uj")).is_ok())
            .collect();
        domains.sort();
        if domains.is_empty() {
            return Err(MeterError::Unavailable(format!("no readable RAPL package domain under {}", root.display())));
        }
        Ok(RaplMeter { domains, running: None, clock: Arc::new(SystemClock::new()) })
    }
}

impl RaplMeter {
    /// Time readings with `clock` instead of the system clock (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

impl EnergyMeter for RaplMeter {
    fn kind(&self) -> pocketbench_types::meter::Meter {
        pocketbench_types::meter::Meter::Rapl
    }

    fn name(&self) -> String {
        let names: Vec<String> =
            self.domains.iter().filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned())).collect();
        format!("RAPL powercap energy_uj ({})", names.join(", "))
    }

    fn start(&mut self) -> Result<(), MeterError> {
        // One sampler per domain would need one thread each; domains are summed as
        // separate counters instead, each with its own wrap handling.
        let domains = self.domains.clone();
        let mut last: Vec<Option<f64>> = vec![None; domains.len()];
        let mut total = 0.0;
        let source = Box::new(move || {
            // Report the sum as a non-wrapping counter: wrap is resolved per domain here.
            for (i, d) in domains.iter().enumerate() {
                let e = read_number(&d.join("energy_uj"))? / 1e6;
                let range = read_number(&d.join("max_energy_range_uj"))? / 1e6;
                if let Some(prev) = last[i] {
                    total += if e >= prev { e - prev } else { e + range - prev };
                }
                last[i] = Some(e);
            }
            Ok(Reading::Counter { joules: total, range: f64::INFINITY })
        });
        self.running = Some(Sampler::start(source, self.name(), self.clock.clone())?);
        Ok(())
    }

    fn stop(&mut self) -> Result<EnergyReading, MeterError> {
        self.running.take().ok_or(MeterError::NotStarted)?.stop()
    }
}
