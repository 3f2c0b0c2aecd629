//! Every real PostgreSQL log under tests/fixtures/ is imported and compared
//! with its truth.json, event by event: same events at the same file, line
//! and byte offset, same counts by trigger, same timestamps, and forged
//! lines never counted.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use support::{fixture_dirs as fixtures, fixture_logs as log_files};

fn walwatch(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "walwatch {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Imports a fixture run into a fresh store; returns the store path.
fn import(dir: &Path, tmp: &Path, timezone: Option<&str>) -> PathBuf {
    let db = tmp.join("w.db");
    let name = dir.file_name().unwrap().to_str().unwrap();
    let mut args =
        vec!["import".to_string(), "--db".into(), db.to_str().unwrap().into(), "--cluster".into(), name.into()];
    if let Some(tz) = timezone {
        args.extend(["--timezone".to_string(), tz.to_string()]);
    }
    args.extend(log_files(dir).iter().map(|f| f.to_str().unwrap().to_string()));
    walwatch(&args.iter().map(String::as_str).collect::<Vec<_>>());
    db
}

fn truth(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap()
}

const EVENT_KINDS: [&str; 7] = [
    "checkpoint_start",
    "checkpoint_complete",
    "restartpoint_start",
    "restartpoint_complete",
    "recovery_restart_point",
    "too_frequent",
    "parameter_changed",
];

/// (file name, line, offset, kind) of every event in the store.
fn stored_events(db: &Path) -> BTreeSet<(String, u64, u64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT s.path, e.line, e.offset, e.kind FROM event e JOIN source s ON s.id = e.source_id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let path: String = r.get(0)?;
            let name = Path::new(&path).file_name().unwrap().to_str().unwrap().to_string();
            Ok((name, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64, r.get::<_, String>(3)?))
        })
        .unwrap();
    rows.map(Result::unwrap).filter(|e| EVENT_KINDS.contains(&e.3.as_str())).collect()
}

fn truth_events(t: &Value) -> BTreeSet<(String, u64, u64, String)> {
    t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| EVENT_KINDS.contains(&e["type"].as_str().unwrap()))
        .map(|e| {
            (
                e["file"].as_str().unwrap().to_string(),
                e["line"].as_u64().unwrap(),
                e["offset"].as_u64().unwrap(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn trigger_of(flags: &str) -> &'static str {
    let has = |w: &str| flags.split_whitespace().any(|f| f == w || (w == "wal" && f == "xlog"));
    ["shutdown", "end-of-recovery", "wal", "time"].into_iter().find(|w| has(w)).unwrap_or("manual")
}

fn check_summary(name: &str, summary: &Value, t: &Value) {
    let c = &t["counts"];
    for (key, start, complete) in [
        ("checkpoints", "checkpoint_start", "checkpoint_complete"),
        ("restartpoints", "restartpoint_start", "restartpoint_complete"),
    ] {
        assert_eq!(summary[key]["started"], c[start]["total"], "{name}: {key} started");
        assert_eq!(summary[key]["completed"], c[complete], "{name}: {key} completed");
        let mut want = serde_json::Map::new();
        for trig in ["shutdown", "end-of-recovery", "wal", "time", "manual"] {
            want.insert(trig.into(), 0.into());
        }
        for (flags, n) in c[start]["by_flags"].as_object().unwrap() {
            let slot = want.get_mut(trigger_of(flags)).unwrap();
            *slot = (slot.as_i64().unwrap() + n.as_i64().unwrap()).into();
        }
        assert_eq!(summary[key]["by_trigger"], Value::Object(want), "{name}: {key} by trigger");
    }
    assert_eq!(summary["too_frequent"], c["too_frequent"], "{name}: too_frequent");
    assert_eq!(summary["parameter_changes"], c["parameter_changed"], "{name}: parameter changes");
    let forged = c["forged_lines"]["total"].as_i64().unwrap();
    let rejected = summary["rejected"].as_i64().unwrap();
    assert_eq!(forged > 0, rejected > 0, "{name}: forged lines {forged}, rejected {rejected}");
}

/// Checks the stored details of each event against truth.json.
fn check_details(name: &str, db: &Path, t: &Value) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tz = jiff::tz::TimeZone::get(t["log_timezone"].as_str().unwrap()).unwrap();
    for e in t["events"].as_array().unwrap() {
        let kind = e["type"].as_str().unwrap();
        if !EVENT_KINDS.contains(&kind) {
            continue;
        }
        let (at, data): (i64, String) = conn
            .query_row(
                "SELECT e.at, e.data FROM event e JOIN source s ON s.id = e.source_id WHERE e.offset = ?1 AND e.kind = ?2 AND s.path LIKE ?3",
                rusqlite::params![e["offset"].as_i64().unwrap(), kind, format!("%{}", e["file"].as_str().unwrap())],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap_or_else(|err| panic!("{name}: {kind} at offset {} not stored: {err}", e["offset"]));
        let ts = e["ts"].as_str().unwrap();
        let civil = ts.rsplit_once(' ').unwrap().0;
        let fmt = if civil.contains('.') { "%Y-%m-%d %H:%M:%S%.f" } else { "%Y-%m-%d %H:%M:%S" };
        let want = jiff::civil::DateTime::strptime(fmt, civil).unwrap().to_zoned(tz.clone()).unwrap().timestamp();
        assert_eq!(at, want.as_microsecond(), "{name}: time of {kind} at line {}", e["line"]);
        let data: Value = serde_json::from_str(&data).unwrap();
        match kind {
            "checkpoint_start" | "restartpoint_start" => {
                let want = e["flags"].as_str().unwrap().replace("xlog", "wal");
                let got: Vec<&str> = data["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
                assert_eq!(got.join(" "), want, "{name}: flags at line {}", e["line"]);
            }
            "too_frequent" => assert_eq!(data["hint"], e["hint_ok"], "{name}: hint at line {}", e["line"]),
            _ => {}
        }
    }
}

#[test]
fn every_fixture_matches_its_truth_event_by_event() {
    let mut failures = Vec::new();
    for dir in fixtures() {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let t = truth(&dir);
        let tmp = tempfile::tempdir().unwrap();
        let db = import(&dir, tmp.path(), t["log_timezone"].as_str());
        let result = std::panic::catch_unwind(|| {
            let got = stored_events(&db);
            let want = truth_events(&t);
            let missing: Vec<_> = want.difference(&got).take(5).collect();
            let extra: Vec<_> = got.difference(&want).take(5).collect();
            assert!(missing.is_empty() && extra.is_empty(), "{name}: missing {missing:?}, extra {extra:?}");
            let summary: Value =
                serde_json::from_str(&walwatch(&["summary", "--db", db.to_str().unwrap(), "--format", "json"]))
                    .unwrap();
            check_summary(&name, &summary, &t);
            check_details(&name, &db, &t);
        });
        if let Err(e) = result {
            failures.push(e.downcast_ref::<String>().cloned().unwrap_or_else(|| name.clone()));
        }
    }
    assert!(failures.is_empty(), "{} fixture(s) failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn unambiguous_zones_import_without_timezone() {
    // UTC, CET (Europe/Berlin in November), EST, JST need no --timezone.
    for run in ["15-stderr-default-std", "16-stderr-default-std", "15-stderr-pgbadger-std", "15-stderr-default-i18n-ja"]
    {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run);
        let t = truth(&dir);
        let tmp = tempfile::tempdir().unwrap();
        let db = import(&dir, tmp.path(), None);
        check_details(run, &db, &t);
    }
}
