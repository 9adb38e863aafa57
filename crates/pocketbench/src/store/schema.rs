//! The store's tables, as SQL, and the forward migrations between versions.
//! `PRAGMA user_version` holds the version a file is at; [`MIGRATIONS`]`[i]`
//! takes a file from version `i` to `i + 1`. A released migration is never
//! edited: a change is a new entry.

/// The schema version this build writes.
pub const VERSION: i64 = 7;

/// Migration `i` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7];

/// Version 7: each device's published points counted, its other engine
/// classes, and what its predictions' intervals rest on (one line each),
/// for its card in the report; and how sure a prediction's decode and
/// memory verdicts are over their intervals. Rows stored before read them
/// as unknown (null).
const V7: &str = r#"
ALTER TABLE devices ADD COLUMN published TEXT;
ALTER TABLE devices ADD COLUMN intervals TEXT;
ALTER TABLE results ADD COLUMN decode_certainty TEXT;
ALTER TABLE results ADD COLUMN memory_certainty TEXT;
"#;

/// Version 6: a prediction's 90% intervals of decode, prefill and peak
/// memory, and whether it rests on too few points (issue 44). Rows written
/// before read them as unknown (null).
const V6: &str = r#"
ALTER TABLE results ADD COLUMN decode_tok_s_low REAL;
ALTER TABLE results ADD COLUMN decode_tok_s_high REAL;
ALTER TABLE results ADD COLUMN prefill_tok_s_low REAL;
ALTER TABLE results ADD COLUMN prefill_tok_s_high REAL;
ALTER TABLE results ADD COLUMN peak_mem_increase_mb_low REAL;
ALTER TABLE results ADD COLUMN peak_mem_increase_mb_high REAL;
ALTER TABLE results ADD COLUMN low_confidence INTEGER;
"#;

/// Version 5: each device's leave-one-out check of its calibration points
/// (one line, [`crate::calibrate::loo::LeaveOneOut::describe`]), for its
/// card in the report. Devices stored before read it as unknown (null).
const V5: &str = r#"
ALTER TABLE devices ADD COLUMN leave_one_out TEXT;
"#;

/// Version 4: what a measurement's samples say beside its medians, as
/// columns to query (the measurement's JSON holds them too): the
/// inter-token latency tails, the output fingerprint and whether every
/// repetition agreed on it, whether contended repetitions were kept; and
/// each sample's fingerprint, contention and retake, and its p99 step.
/// Rows written before read them as unknown (null).
const V4: &str = r#"
ALTER TABLE results ADD COLUMN itl_p50_ms REAL;
ALTER TABLE results ADD COLUMN itl_p90_ms REAL;
ALTER TABLE results ADD COLUMN itl_p99_ms REAL;
ALTER TABLE results ADD COLUMN itl_max_ms REAL;
ALTER TABLE results ADD COLUMN tokens_hash TEXT;
ALTER TABLE results ADD COLUMN output_agrees INTEGER;
ALTER TABLE results ADD COLUMN contended INTEGER;
ALTER TABLE samples ADD COLUMN tokens_hash TEXT;
ALTER TABLE samples ADD COLUMN contended INTEGER;
ALTER TABLE samples ADD COLUMN retaken INTEGER;
ALTER TABLE samples ADD COLUMN itl_p99_ms REAL;
"#;

/// Version 3: a measured run's average power and gross energy (the net
/// figure stays `energy_j_per_run`). Rows written before read them as
/// unknown (null).
const V3: &str = r#"
ALTER TABLE results ADD COLUMN avg_power_w REAL;
ALTER TABLE results ADD COLUMN energy_gross_j_per_run REAL;
"#;

/// Version 2: the range of a prediction's time to first token and energy
/// that the device's prior parameters allow, the share of the run's energy
/// spent in prefill, and how sure the energy verdict is. Rows written by
/// version 1 read them as unknown (null).
const V2: &str = r#"
ALTER TABLE results ADD COLUMN ttft_ms_low REAL;
ALTER TABLE results ADD COLUMN ttft_ms_high REAL;
ALTER TABLE results ADD COLUMN energy_j_per_run_low REAL;
ALTER TABLE results ADD COLUMN energy_j_per_run_high REAL;
ALTER TABLE results ADD COLUMN prefill_energy_share REAL;
ALTER TABLE results ADD COLUMN energy_certainty TEXT;
"#;

const V1: &str = r#"
-- The one sweep a store holds: what it is, so a resume can tell whether the
-- same sweep is being run again.
CREATE TABLE sweep (
    id                 INTEGER PRIMARY KEY CHECK (id = 1),
    name               TEXT NOT NULL,
    file               TEXT NOT NULL,
    file_hash          TEXT NOT NULL,
    options            TEXT NOT NULL,
    harness            TEXT NOT NULL,
    shard              TEXT,
    description        TEXT,
    prompt_tokens      INTEGER NOT NULL,
    gen_tokens         INTEGER NOT NULL,
    objectives         TEXT NOT NULL,
    skipped            TEXT NOT NULL,
    configs            INTEGER NOT NULL,
    predicted_complete INTEGER NOT NULL DEFAULT 0
);

-- Each invocation that worked on the store.
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    command_line    TEXT NOT NULL,
    harness_version TEXT NOT NULL,
    git_commit      TEXT,
    host            TEXT NOT NULL,
    started_at      TEXT NOT NULL,
    ended_at        TEXT,
    status          TEXT NOT NULL
);

-- The sweep's devices, in plan order, with what their records were judged by.
CREATE TABLE devices (
    id                  TEXT PRIMARY KEY,
    position            INTEGER NOT NULL,
    name                TEXT NOT NULL,
    engine              TEXT NOT NULL,
    profile_digest      TEXT NOT NULL,
    calibration         TEXT NOT NULL,
    budget_decode_tok_s REAL NOT NULL,
    budget_memory_mb    REAL NOT NULL,
    budget_energy_j     REAL
);

-- The calibration behind predictions: the profile digest and the fitted
-- (or prior) parameters each prediction used, and its method texts.
CREATE TABLE calibrations (
    id             INTEGER PRIMARY KEY,
    device         TEXT NOT NULL,
    profile_digest TEXT NOT NULL,
    label          TEXT NOT NULL,
    params         TEXT NOT NULL,
    methods        TEXT NOT NULL,
    UNIQUE (device, profile_digest, label, methods)
);

-- The plan's configurations. Plan order is (params_total, id), so a shard's
-- store and a merge of shards list them as the unsharded plan does.
CREATE TABLE configurations (
    id           TEXT PRIMARY KEY,
    params_total INTEGER NOT NULL,
    name     TEXT NOT NULL,
    hidden   INTEGER NOT NULL,
    layers   INTEGER NOT NULL,
    heads    INTEGER NOT NULL,
    kv_heads INTEGER NOT NULL,
    head_dim INTEGER NOT NULL,
    ffn      INTEGER NOT NULL,
    vocab    INTEGER NOT NULL,
    tied     INTEGER NOT NULL,
    qk_norm  INTEGER NOT NULL,
    quant    TEXT NOT NULL,
    context  INTEGER NOT NULL
);

-- One configuration x device x engine x workload x provenance (and, for a
-- measurement, x what ran it): every metric of the record, its verdicts and
-- methods. Predicted records take their method texts from their calibration.
CREATE TABLE results (
    id                       INTEGER PRIMARY KEY,
    run_id                   INTEGER REFERENCES runs (id),
    config_id                TEXT NOT NULL REFERENCES configurations (id),
    device                   TEXT NOT NULL,
    engine                   TEXT NOT NULL,
    prompt_tokens            INTEGER NOT NULL,
    gen_tokens               INTEGER NOT NULL,
    provenance               TEXT NOT NULL,
    job_key                  TEXT NOT NULL DEFAULT '',
    produced_by              TEXT NOT NULL,
    calibration_id           INTEGER NOT NULL REFERENCES calibrations (id),
    methods                  TEXT,
    params_total             INTEGER NOT NULL,
    params_non_embedding     INTEGER NOT NULL,
    package_bytes            INTEGER NOT NULL,
    weight_bytes_per_token   INTEGER NOT NULL,
    kv_bytes_per_token       INTEGER NOT NULL,
    decode_tok_s             REAL NOT NULL,
    prefill_tok_s            REAL NOT NULL,
    ttft_ms                  REAL NOT NULL,
    peak_mem_increase_mb     REAL NOT NULL,
    package_mb               REAL NOT NULL,
    energy_j_per_run         REAL NOT NULL,
    battery_fraction_per_run REAL,
    capability               REAL NOT NULL,
    capability_source        TEXT NOT NULL,
    decode_status TEXT NOT NULL, decode_value REAL NOT NULL, decode_limit REAL, decode_margin REAL,
    memory_status TEXT NOT NULL, memory_value REAL NOT NULL, memory_limit REAL, memory_margin REAL,
    energy_status TEXT NOT NULL, energy_value REAL NOT NULL, energy_limit REAL, energy_margin REAL,
    feasible                 INTEGER NOT NULL,
    on_frontier              INTEGER NOT NULL,
    measurement              TEXT,
    UNIQUE (config_id, device, engine, prompt_tokens, gen_tokens, provenance, job_key)
);
CREATE INDEX results_by_device ON results (device, provenance);

-- The raw per-repetition samples of measured results.
CREATE TABLE samples (
    result_id     INTEGER NOT NULL REFERENCES results (id),
    rep           INTEGER NOT NULL,
    load_s        REAL,
    prefill_s     REAL NOT NULL,
    ttft_s        REAL NOT NULL,
    decode_s      REAL NOT NULL,
    prefill_tok_s REAL NOT NULL,
    decode_tok_s  REAL NOT NULL,
    energy_j      REAL,
    energy_s      REAL,
    PRIMARY KEY (result_id, rep)
);

-- Measurements that produced no result.
CREATE TABLE failures (
    id        INTEGER PRIMARY KEY,
    run_id    INTEGER REFERENCES runs (id),
    config_id TEXT NOT NULL,
    name      TEXT NOT NULL,
    device    TEXT NOT NULL,
    job_key   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    reason    TEXT NOT NULL,
    attempts  INTEGER NOT NULL,
    failure   TEXT NOT NULL,
    UNIQUE (config_id, device, job_key)
);
"#;
