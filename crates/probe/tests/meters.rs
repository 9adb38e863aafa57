//! Energy meters against fake sysfs trees whose counters advance at a known
//! power with each tick of a manual clock: the integrated joules and the
//! window's seconds must be exact.

use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use pocketbench_probe::meter::{detect_in, Clock, EnergyMeter, ManualClock, MeterError, PowerSupplyMeter, RaplMeter};

/// Write via rename so the meter never reads a half-written file.
fn put(path: &Path, value: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, value).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Measure `seconds` on a manual clock whose ticks call `tick(t)` (which
/// updates the fake sysfs files for time t): every reading is at a known
/// instant, so joules are exact, not within a scheduler-noise tolerance.
fn measure<M: EnergyMeter>(
    meter: impl FnOnce(Arc<dyn Clock>) -> M,
    seconds: f64,
    tick: impl FnMut(f64) + Send + 'static,
) -> (f64, f64, usize) {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(seconds, tick));
    let mut m = meter(clock);
    m.start().unwrap();
    // The manual clock runs to `seconds` at once; then its waits block until stopped.
    thread::sleep(Duration::from_millis(30));
    let r = m.stop().unwrap();
    (r.joules, r.seconds, r.samples)
}

#[test]
fn rapl_counter_with_wrap_integrates_known_power() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    const WATTS: f64 = 7.0;
    // Two packages; the sub-domain must not be double counted; a 1.5 J wrap range
    // wraps several times a second at 7 W.
    for d in ["intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        put(&root.join(d).join("max_energy_range_uj"), "1500000");
        put(&root.join(d).join("energy_uj"), "0");
    }
    let r = root.clone();
    let tick = move |t: f64| {
        // Each package draws half the power; the sub-domain reports nonsense that must be ignored.
        let uj = ((WATTS / 2.0) * t * 1e6).round() as u64 % 1_500_000;
        put(&r.join("intel-rapl:0/energy_uj"), &uj.to_string());
        put(&r.join("intel-rapl:1/energy_uj"), &uj.to_string());
        put(&r.join("intel-rapl:0:0/energy_uj"), &((t * 1e9) as u64 % 1_500_000).to_string());
    };
    let name = RaplMeter::discover(&root).unwrap().name();
    assert_eq!(name, "RAPL powercap energy_uj (intel-rapl:0, intel-rapl:1)");
    let (j, s, n) = measure(|c| RaplMeter::discover(&root).unwrap().with_clock(c), 1.2, tick);
    assert_eq!(n, 26, "a reading at 0 s, every 50 ms to 1.2 s, and one on stop");
    assert!((s - 1.2).abs() < 1e-9, "{s}");
    assert!((j - WATTS * 1.2).abs() < 1e-5, "measured {j} J, expected {} J", WATTS * 1.2);
}

#[test]
fn power_supply_power_now_integrates_known_power() {
    let dir = tempfile::tempdir().unwrap();
    let bat = dir.path().join("BAT0");
    std::fs::create_dir_all(&bat).unwrap();
    put(&bat.join("type"), "Battery\n");
    put(&bat.join("status"), "Discharging\n");
    put(&bat.join("power_now"), "3500000\n"); // 3.5 W
    let (j, s, _) = measure(|c| PowerSupplyMeter::discover(dir.path()).unwrap().with_clock(c), 1.0, |_| {});
    assert!((s - 1.0).abs() < 1e-9 && (j - 3.5).abs() < 1e-9, "{j} J over {s} s");
}

#[test]
fn power_supply_negative_current_times_voltage() {
    // Android-style: no power_now, current negative while discharging.
    let dir = tempfile::tempdir().unwrap();
    let bat = dir.path().join("battery");
    std::fs::create_dir_all(&bat).unwrap();
    put(&bat.join("type"), "Battery");
    put(&bat.join("status"), "Discharging");
    put(&bat.join("voltage_now"), "3870000");
    put(&bat.join("current_now"), "-500000");
    let b = bat.clone();
    // Current ramps 0.5 A -> 1.5 A over 1 s: the trapezoid rule is exact on a
    // ramp, so the integral is 3.87 V x 1.0 A x 1 s.
    let tick = move |t: f64| put(&b.join("current_now"), &format!("-{}", ((0.5 + t) * 1e6).round() as i64));
    let (j, s, _) = measure(|c| PowerSupplyMeter::discover(dir.path()).unwrap().with_clock(c), 1.0, tick);
    assert!((s - 1.0).abs() < 1e-9, "{s}");
    assert!((j - 3.87).abs() < 1e-9, "{j} J, expected 3.87");
}

#[test]
fn charging_battery_and_missing_trees_are_typed_absence() {
    let dir = tempfile::tempdir().unwrap();
    let bat = dir.path().join("BAT0");
    std::fs::create_dir_all(&bat).unwrap();
    put(&bat.join("type"), "Battery");
    put(&bat.join("status"), "Charging");
    put(&bat.join("power_now"), "1000000");
    let e = PowerSupplyMeter::discover(dir.path()).err().unwrap();
    assert!(e.to_string().contains("not discharging"), "{e}");
    let e = detect_in(&dir.path().join("no-powercap"), dir.path()).err().unwrap();
    assert!(matches!(e, MeterError::Unavailable(_)));
    assert!(e.to_string().starts_with("no RAPL powercap at"), "{e}");
}

/// A discharging battery reporting `current_now` and `voltage_now` as given.
fn rail(current: &str, voltage: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let bat = dir.path().join("battery");
    std::fs::create_dir_all(&bat).unwrap();
    put(&bat.join("type"), "Battery");
    put(&bat.join("status"), "Discharging");
    put(&bat.join("voltage_now"), voltage);
    put(&bat.join("current_now"), current);
    dir
}

#[test]
fn milliamp_and_millivolt_drivers_and_positive_discharge_are_detected_not_assumed() {
    // 2.5 W four ways: uA/uV negative (the kernel ABI since 2020), uA/uV
    // positive (most phones), mA/uV and mA/mV (vendor fuel gauges).
    for (current, voltage, says) in [
        ("-625000", "4000000", "read as uA and uV, detected from the values; current negative while discharging"),
        ("625000", "4000000", "read as uA and uV, detected from the values; current positive while discharging"),
        ("625", "4000000", "read as mA and uV"),
        ("-625", "4000", "read as mA and mV"),
    ] {
        let dir = rail(current, voltage);
        let name = PowerSupplyMeter::discover(dir.path()).unwrap().name();
        assert!(name.contains(says), "{current} {voltage}: {name}");
        let (j, s, _) = measure(|c| PowerSupplyMeter::discover(dir.path()).unwrap().with_clock(c), 1.0, |_| {});
        assert!((s - 1.0).abs() < 1e-9 && (j - 2.5).abs() < 1e-9, "{current} {voltage}: {j} J over {s} s");
    }
}

#[test]
fn a_charger_connected_mid_run_loses_the_reading_and_says_why() {
    for (file, value, says) in [
        ("status", "Charging", "status became `Charging` during the run"),
        ("current_now", "450000", "the battery current reversed during the run"),
    ] {
        let dir = rail("-625000", "4000000");
        let bat = dir.path().join("battery");
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(1.0, move |t: f64| {
            if t >= 0.5 {
                put(&bat.join(file), value);
            }
        }));
        let mut m = PowerSupplyMeter::discover(dir.path()).unwrap().with_clock(clock);
        m.start().unwrap();
        thread::sleep(Duration::from_millis(30));
        let e = m.stop().unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
    // A reversed reading within 10 mA of zero is noise, not a charger.
    let dir = rail("-625000", "4000000");
    let bat = dir.path().join("battery");
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(1.0, move |_| put(&bat.join("current_now"), "5000")));
    let mut m = PowerSupplyMeter::discover(dir.path()).unwrap().with_clock(clock);
    m.start().unwrap();
    thread::sleep(Duration::from_millis(30));
    assert!(m.stop().is_ok());
}
