//! Energy meters against fake sysfs trees whose counters a thread advances at
//! a known power: the integrated joules must match within 2%.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use pocketbench::meter::{detect_in, EnergyMeter, MeterError, PowerSupplyMeter, RaplMeter};

/// Write via rename so the meter never reads a half-written file.
fn put(path: &Path, value: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, value).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Advance `f(elapsed)` into a file every 5 ms until stopped.
fn driver(stop: Arc<AtomicBool>, mut f: impl FnMut(f64) + Send + 'static) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let t0 = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            f(t0.elapsed().as_secs_f64());
            thread::sleep(Duration::from_millis(5));
        }
    })
}

fn measure(meter: &mut dyn EnergyMeter, seconds: f64) -> (f64, f64) {
    meter.start().unwrap();
    thread::sleep(Duration::from_secs_f64(seconds));
    let r = meter.stop().unwrap();
    assert!(r.samples >= 10, "{} samples", r.samples);
    (r.joules, r.seconds)
}

#[test]
fn rapl_counter_with_wrap_integrates_known_power() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    const WATTS: f64 = 7.0;
    // Two packages; the sub-domain must not be double counted; a 1.5 J wrap range
    // wraps several times a second at 7 W.
    for d in ["intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        put(&root.join(d).join("max_energy_range_uj"), "1500000");
        put(&root.join(d).join("energy_uj"), "0");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let r = root.to_path_buf();
    let h = driver(stop.clone(), move |t| {
        // Each package draws half the power; the sub-domain reports nonsense that must be ignored.
        let uj = ((WATTS / 2.0) * t * 1e6) as u64 % 1_500_000;
        put(&r.join("intel-rapl:0/energy_uj"), &uj.to_string());
        put(&r.join("intel-rapl:1/energy_uj"), &uj.to_string());
        put(&r.join("intel-rapl:0:0/energy_uj"), &((t * 1e9) as u64 % 1_500_000).to_string());
    });
    thread::sleep(Duration::from_millis(20));
    let mut m = RaplMeter::discover(root).unwrap();
    assert_eq!(m.name(), "RAPL powercap energy_uj (intel-rapl:0, intel-rapl:1)");
    let (j, s) = measure(&mut m, 1.2);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let expect = WATTS * s;
    assert!((j / expect - 1.0).abs() < 0.02, "measured {j:.3} J, expected {expect:.3} J over {s:.3} s");
}

#[test]
fn power_supply_power_now_integrates_known_power() {
    let dir = tempfile::tempdir().unwrap();
    let bat = dir.path().join("BAT0");
    std::fs::create_dir_all(&bat).unwrap();
    put(&bat.join("type"), "Battery\n");
    put(&bat.join("status"), "Discharging\n");
    put(&bat.join("power_now"), "3500000\n"); // 3.5 W
    let mut m = PowerSupplyMeter::discover(dir.path()).unwrap();
    let (j, s) = measure(&mut m, 1.0);
    assert!((j / (3.5 * s) - 1.0).abs() < 0.02, "{j} J over {s} s");
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
    let stop = Arc::new(AtomicBool::new(false));
    let b = bat.clone();
    // Current ramps 0.5 A -> 1.5 A over 1 s: mean power 3.87 W x 1.0 A.
    let h =
        driver(stop.clone(), move |t| put(&b.join("current_now"), &format!("-{}", ((0.5 + t.min(1.0)) * 1e6) as i64)));
    let mut m = PowerSupplyMeter::discover(dir.path()).unwrap();
    m.start().unwrap();
    thread::sleep(Duration::from_millis(1000));
    let r = m.stop().unwrap();
    let elapsed = r.seconds;
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    // Expected: integral of 3.87 x (0.5 + t) dt over the meter's window (the ramp started just before).
    let expect = 3.87 * (0.5 * elapsed + elapsed * elapsed / 2.0);
    assert!((r.joules / expect - 1.0).abs() < 0.02, "{} J, expected {expect}", r.joules);
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
