use super::*;
use crate::device::Devices;
use crate::event::Collect;
use crate::record::Provenance;
use crate::sweep::{FailedMeasurement, Plan, PlanOptions};
use crate::testing::probe_for;

fn plan() -> Plan {
    let toml = "[sweep]\nname = \"t\"\ndevices = [\"iphone-18-pro\", \"host\"]\n[workload]\nprompt = 16\ngen = 8\n\
                [space]\nlayers = [1, 2]\nhidden = 128\nhead-dim = 32\nkv-heads = 2\nffn = 256\nvocab = 512\n";
    let spec = crate::config::parse(Path::new("t.toml"), toml).unwrap();
    Plan::from_toml(Path::new("t.toml"), spec, &PlanOptions::default()).unwrap()
}

fn new_store(dir: &Path, plan: &Plan, devices: &[&crate::device::Device]) -> Store {
    let mut s = Store::open(&dir.join(FILE_NAME)).unwrap();
    let identity = Identity::new("t", "t.toml", b"", "{}".into(), None);
    let sweep = crate::sweep::sweep_row(plan, identity);
    let rows: Vec<DeviceRow> = devices
        .iter()
        .map(|d| DeviceRow { header: DeviceSummary::header(d), profile_digest: d.digest().to_string() })
        .collect();
    let shapes: Vec<_> = plan.shapes.iter().map(|(s, a)| (*s, a.params_total)).collect();
    s.create_sweep(&sweep, &rows, &shapes).unwrap();
    s.start_run("pocketbench test", None, "{}").unwrap();
    s
}

/// A new store in `dir` holding the plan's predictions, and those predictions.
fn predicted_store(dir: &Path, devices: &Devices, plan: &Plan) -> (Store, crate::outcome::Outcome) {
    let devs = devices.select(&plan.devices).unwrap();
    let outcome = crate::sweep::run(plan, &devs, None, &mut Collect::default());
    let mut store = new_store(dir, plan, &devs);
    store.insert_predicted(&outcome.results, &|d| (format!("digest-{d}"), "{}".into())).unwrap();
    (store, outcome)
}

#[test]
fn records_read_back_equal_to_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let devices = Devices::built_in().unwrap();
    let plan = plan();
    let (mut store, outcome) = predicted_store(dir.path(), &devices, &plan);
    assert_eq!(store.records(Provenance::Predicted).unwrap(), outcome.results);

    // A measurement of the host's first configuration replaces its prediction in the outcome.
    let host = devices.get("host").unwrap();
    let pred = outcome.results.iter().find(|r| r.device == "host").unwrap();
    let (shape, acct) = plan.shapes.iter().find(|(s, _)| s.id() == pred.config_id).unwrap();
    let cap = crate::capability::Capability { score: pred.capability, source: pred.capability_source.clone() };
    let m = crate::record::measured(shape, acct, host, probe_for(pred, &[100.0, 110.0, 90.0]), &cap).unwrap();
    store.insert_measured(&m, "job-a", ("digest-host".into(), "{}".into())).unwrap();
    assert_eq!(store.measured("host", &m.config_id, "job-a").unwrap().as_ref(), Some(&m));
    assert_eq!(store.measured("host", &m.config_id, "job-b").unwrap(), None);
    let o = crate::sweep::outcome(&store, true).unwrap();
    assert_eq!(o.results.len(), outcome.results.len());
    let got = o.results.iter().find(|r| r.device == "host" && r.config_id == m.config_id).unwrap();
    assert_eq!(got.provenance, Provenance::Measured);
    assert_eq!(got.decode_tok_s, 100.0);
    let samples: i64 = store.conn.query_row("SELECT count(*) FROM samples", [], |r| r.get(0)).unwrap();
    assert_eq!(samples, 3);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn a_failure_is_kept_until_the_job_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let devices = Devices::built_in().unwrap();
    let plan = plan();
    let devs = devices.select(&plan.devices).unwrap();
    let mut store = new_store(dir.path(), &plan, &devs);
    let f = FailedMeasurement {
        config_id: plan.shapes[0].0.id(),
        config_name: plan.shapes[0].0.to_string(),
        device: "host".into(),
        attempts: 3,
        failure: crate::runner::Failure::Unavailable { reason: "adb: device offline".into() },
    };
    store.insert_failure(&f, "k").unwrap();
    store.insert_failure(&f, "k").unwrap();
    assert_eq!(store.failures().unwrap(), vec![f.clone()], "recorded once");
    assert_eq!(store.failure("host", &f.config_id, "k").unwrap(), Some(f));
}

#[test]
fn newer_corrupt_and_foreign_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", schema::VERSION + 1).unwrap();
    }
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::Newer { .. }) && e.to_string().contains("upgrade pocketbench"), "{e}");

    let foreign = dir.path().join("other.db");
    Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE t (x INTEGER);").unwrap();
    let e = Store::open(&foreign).unwrap_err();
    assert!(e.to_string().contains("other.db: not a usable pocketbench store"), "{e}");

    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let e = Store::open(&garbage).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert_eq!(std::fs::read(&garbage).unwrap(), vec![0x5a; 8192], "nothing written to it");

    let e = Store::open_read_only(&dir.path().join("none.db")).unwrap_err();
    assert!(matches!(e, StoreError::Missing { .. }), "{e}");
}

#[test]
fn a_truncated_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let devices = Devices::built_in().unwrap();
    let plan = plan();
    let devs = devices.select(&plan.devices).unwrap();
    let outcome = crate::sweep::run(&plan, &devs, None, &mut Collect::default());
    let path = dir.path().join(FILE_NAME);
    {
        let mut store = new_store(dir.path(), &plan, &devs);
        store.insert_predicted(&outcome.results, &|d| (format!("digest-{d}"), "{}".into())).unwrap();
        store.conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = Store::open_read_only(&path).map(|s| crate::sweep::outcome(&s, true)).err();
    let e2 = Store::open_read_only(&path).ok().and_then(|s| crate::sweep::outcome(&s, true).err());
    assert!(e.is_some() || e2.is_some(), "a half file must not read as a store");
}

#[test]
fn a_version_1_store_is_migrated_and_its_rows_read_without_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch(schema::MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
    }
    let store = Store::open(&path).unwrap();
    let v: i64 = store.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(v, schema::VERSION);
    let cols: i64 = store
        .conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('results') \
             WHERE name IN ('ttft_ms_low', 'energy_certainty', 'avg_power_w', 'energy_gross_j_per_run', \
             'itl_p99_ms', 'tokens_hash')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(cols, 6, "every later version's columns exist");
    drop(store);

    // A row written before the ranges existed (its new columns null) reads
    // back with no range and no certainty.
    let dir = tempfile::tempdir().unwrap();
    let (store, outcome) = predicted_store(dir.path(), &Devices::built_in().unwrap(), &plan());
    store
        .conn
        .execute_batch(
            "UPDATE results SET ttft_ms_low = NULL, ttft_ms_high = NULL, energy_j_per_run_low = NULL, \
             energy_j_per_run_high = NULL, prefill_energy_share = NULL, energy_certainty = NULL",
        )
        .unwrap();
    let old: Vec<_> = outcome
        .results
        .iter()
        .cloned()
        .map(|mut r| {
            (r.ttft_ms_low, r.ttft_ms_high, r.energy_j_per_run_low, r.energy_j_per_run_high) = (None, None, None, None);
            r.prefill_energy_share = None;
            r.budgets.energy.certainty = None;
            r
        })
        .collect();
    assert!(outcome.results.iter().any(|r| r.budgets.energy.certainty.is_some()));
    assert_eq!(store.records(Provenance::Predicted).unwrap(), old);
}
