//! The write storm of each checkpoint (`write_mb_s`, `pace_ratio`), from
//! the raw figures of a real PostgreSQL 15 log: 8 kB buffers over the
//! write time, and a timed checkpoint's spread (checkpoint_timeout ×
//! checkpoint_completion_target) over the write time for the checkpoints
//! PostgreSQL paces.

use std::path::Path;

use serde_json::Value;

use crate::support::walwatch_json;

/// A PostgreSQL 15 server with checkpoint_timeout 30 s (its settings.txt)
/// and the version's checkpoint_completion_target, 0.9: a forced-checkpoint
/// storm, time checkpoints, a SIGHUP, an immediate shutdown and a crash.
const CRASHIMM: &str = "tests/fixtures/15-stderr-default-crashimm/log";
const SPREAD_S: f64 = 30.0 * 0.9;

fn import(dir: &Path, cluster: &str, logs: &str) -> String {
    let db = dir.join("w.db").to_str().unwrap().to_string();
    let logs = Path::new(env!("CARGO_MANIFEST_DIR")).join(logs);
    let mut files: Vec<String> =
        std::fs::read_dir(logs).unwrap().map(|e| e.unwrap().path().to_str().unwrap().to_string()).collect();
    files.sort();
    let mut args = vec!["import", "--db", &db, "--cluster", cluster, "--prefix", "%m [%p] %q%u@%d "];
    args.extend(files.iter().map(String::as_str));
    let out = crate::support::walwatch().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    db
}

fn r1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[test]
fn every_checkpoint_carries_its_write_rate_and_pace() {
    let dir = tempfile::tempdir().unwrap();
    let db = import(dir.path(), "c", CRASHIMM);
    let settings = walwatch_json(&["settings", "--db", &db, "--cluster", "c", "--format", "json"]);
    let timeout = &settings[0]["current"]["checkpoint_timeout"];
    assert_eq!(timeout["value"], "30s", "{settings:#}");
    assert_eq!(timeout["source"]["kind"], "inferred");
    let rows = walwatch_json(&["checkpoints", "--db", &db, "--format", "json"]);
    let rows = rows.as_array().unwrap();
    let (mut rated, mut paced) = (0, 0);
    for row in rows {
        let write = row["write_s"].as_f64();
        let want_rate = match (row["buffers_written"].as_i64(), write) {
            (Some(b), Some(w)) if w > 0.0 => Some(r1(b as f64 * 8192.0 / 1048576.0 / w)),
            _ => None,
        };
        let timed_or_wal = matches!(row["trigger"].as_str(), Some("wal" | "time"));
        let want_pace = write.filter(|w| *w > 0.0 && timed_or_wal).map(|w| r1(SPREAD_S / w));
        assert_eq!(row["write_mb_s"].as_f64(), want_rate, "{row:#}");
        assert_eq!(row["pace_ratio"].as_f64(), want_pace, "{row:#}");
        rated += usize::from(want_rate.is_some());
        paced += usize::from(want_pace.is_some());
    }
    // What the fixture holds, so that the loop compared something.
    assert_eq!((rows.len(), rated, paced), (73, 72, 68));
    // A forced checkpoint of the storm, by hand: "wrote 2096 buffers …
    // write=2.670 s" is 16.4 MB at 6.1 MB/s, 27 s / 2.67 s = 10.1 times
    // the pace of a timed checkpoint.
    let storm = rows.iter().find(|r| r["buffers_written"] == 2096).unwrap();
    assert_eq!((storm["trigger"].as_str(), storm["write_s"].as_f64()), (Some("wal"), Some(2.67)));
    assert_eq!((storm["write_mb_s"].as_f64(), storm["pace_ratio"].as_f64()), (Some(6.1), Some(10.1)));
}

/// A standby whose log does not tell checkpoint_timeout: rates, no pace.
#[test]
fn no_pace_without_a_known_checkpoint_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let db = import(dir.path(), "s", "tests/fixtures/15-stderr-default-standby/log");
    let rows = walwatch_json(&["checkpoints", "--db", &db, "--format", "json"]);
    let rows = rows.as_array().unwrap();
    assert!(rows.iter().filter(|r| r["write_mb_s"].is_f64()).count() >= 10);
    assert!(rows.iter().all(|r| r["pace_ratio"] == Value::Null));
}
