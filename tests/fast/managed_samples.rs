//! Managed services' logs: public samples of their formats
//! (tests/fixtures/managed/README.md), imported with `--format auto` and
//! read back. Every expected value was read off the samples by hand.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn managed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/managed").join(name)
}

fn ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "walwatch {args:?}: {text}");
    text
}

/// Imports `file` into a fresh store; returns the report and the store.
fn import(file: &Path, dir: &Path) -> (String, String) {
    let db = dir.join("w.db").to_str().unwrap().to_string();
    (ok(&["import", "--db", &db, "--cluster", "c", file.to_str().unwrap()]), db)
}

fn json_of(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap();
    assert!(out.status.success(), "walwatch {args:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn checkpoints(db: &str) -> Value {
    json_of(&["checkpoints", "--db", db, "--format", "json"])
}

fn summary_counts(db: &str) -> (i64, i64, i64) {
    let s = json_of(&["summary", "--db", db, "--cluster", "c", "--format", "json"]);
    let n = |p: &str| p.split('.').fold(&s, |v, k| &v[k]).as_i64().unwrap();
    (n("checkpoints.started"), n("checkpoints.completed"), n("rejected"))
}

/// A complete line's row without its start (the sample has none).
#[allow(clippy::too_many_arguments)]
fn complete_row(
    completed: &str,
    buffers: (i64, f64),
    wal_files: (i64, i64, i64),
    times: (f64, f64, f64),
    sync: (i64, f64, f64),
    distance: (i64, i64),
    lsn: Option<(&str, &str)>,
) -> Value {
    json!({
        "cluster": "c", "kind": "checkpoint", "trigger": null, "flags": [], "started_at": null, "completed_at": completed,
        "buffers_written": buffers.0, "buffers_pct": buffers.1, "slru_buffers_written": null,
        "wal_files_added": wal_files.0, "wal_files_removed": wal_files.1, "wal_files_recycled": wal_files.2,
        "write_s": times.0, "sync_s": times.1, "total_s": times.2,
        "sync_files": sync.0, "sync_longest_s": sync.1, "sync_average_s": sync.2,
        "distance_kb": distance.0, "estimate_kb": distance.1,
        "lsn": lsn.map(|l| l.0), "redo_lsn": lsn.map(|l| l.1), "truncated": false,
        // The write storm: 8 kB buffers over the write time; no pace
        // without a known checkpoint_timeout.
        "write_mb_s": write_mb_s(buffers.0, times.0), "pace_ratio": null,
    })
}

/// CloudNativePG (PostgreSQL 17, from two issue reports): the checkpointer's
/// `shutting down` and `checkpoint complete` records, and two client
/// backends' FATAL records, whose user and database go along.
#[test]
fn cloudnative_pg_records_from_public_issues() {
    let dir = tempfile::tempdir().unwrap();
    let (report, db) = import(&managed("cnpg-7714-605.json"), dir.path());
    assert!(report.contains("(cluster c, cnpg, prefix"), "{report}");
    assert!(report.contains("lines 4, entries 4"), "{report}");
    assert!(report.contains("events: checkpoint_complete 1\n"), "{report}");
    assert!(report.contains("rejected 0, unmatched 0, unparsed 0, new in store 1"), "{report}");
    let want = complete_row(
        "2025-06-03T08:30:23.203+00:00",
        (10, 0.1),
        (0, 0, 0),
        (0.002, 0.005, 0.566),
        (6, 0.005, 0.001),
        (16384, 16384),
        Some(("0/D000028", "0/D000028")),
    );
    assert_eq!(checkpoints(&db), json!([want]));
    assert_eq!(summary_counts(&db), (0, 1, 0));
}

/// The same checkpointer record with a client's user and database (the
/// FATAL records' values): through the envelope, a session's record is
/// rejected, never an event. Built from the public sample.
#[test]
fn a_cnpg_record_of_a_session_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(managed("cnpg-7714-605.json")).unwrap();
    let forged = sample.lines().nth(2).unwrap().replace(
        r#""process_id":"24""#,
        r#""user_name":"postgres","database_name":"postgres","process_id":"2738","connection_from":"[local]""#,
    );
    let file = dir.path().join("forged.json");
    std::fs::write(&file, format!("{forged}\n")).unwrap();
    let db = dir.path().join("w.db").to_str().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch"))
        .args(["import", "--db", &db, "--cluster", "c", file.to_str().unwrap()])
        .output()
        .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Its only event-like line refused: the import says so and fails.
    assert!(!out.status.success(), "{report}");
    assert!(report.contains("events: none\n"), "{report}");
    assert!(report.contains("rejected 1, unmatched 0, unparsed 0"), "{report}");
    assert!(report.contains("1 were refused as forged"), "{report}");
    // Nothing of such a file is recorded as read.
    assert_eq!(checkpoints(&db), json!([]));
    assert_eq!(summary_counts(&db), (0, 0, 0));
}

/// Azure Database for PostgreSQL Single Server (PostgreSQL 11): the
/// diagnostic records with `%t-%c-` in `prefix`; its complete line prints
/// the checkpoint's flags, `checkpoint complete (212):`.
#[test]
fn azure_single_server_records() {
    let dir = tempfile::tempdir().unwrap();
    let (report, db) = import(&managed("azure-single.json"), dir.path());
    assert!(report.contains("(cluster c, azure, prefix '%t-%c-')"), "{report}");
    // 5 records; the bind's DETAIL is a line of its own.
    assert!(report.contains("lines 5, entries 6"), "{report}");
    assert!(report.contains("events: checkpoint_complete 1\n"), "{report}");
    assert!(report.contains("rejected 0, unmatched 0, unparsed 0, new in store 1"), "{report}");
    let want = complete_row(
        "2023-02-27T23:26:18.000+00:00",
        (0, 0.0),
        (0, 1, 0),
        (0.016, 0.0, 0.063),
        (0, 0.0, 0.0),
        (4512, 1741524),
        None,
    );
    assert_eq!(checkpoints(&db), json!([want]));
}

/// Azure Flexible Server: whole stderr lines in `message`; sessions'
/// lines, no checkpoint, nothing read as one.
#[test]
fn azure_flexible_server_records() {
    let dir = tempfile::tempdir().unwrap();
    let (report, db) = import(&managed("azure-flexible.json"), dir.path());
    assert!(report.contains("(cluster c, azure, prefix '%m [%p] %q[user=%u,db=%d,app=%a] ')"), "{report}");
    assert!(report.contains("lines 4, entries 5"), "{report}");
    assert!(report.contains("events: none"), "{report}");
    assert!(report.contains("rejected 0, unmatched 0, unparsed 0, new in store 0"), "{report}");
    assert_eq!(summary_counts(&db), (0, 0, 0));
}

/// Cloud Logging's download (`gcloud logging read --format=json`): one
/// pretty-printed array, newest entry first, of a real PostgreSQL 15's
/// stderr lines (tests/fixtures/15-stderr-default-std) as Cloud SQL's
/// LogEntries, each dated by its line's own time. Read like the raw log:
/// the counts are the fixture's truth.json, the start times its lines'.
#[test]
fn a_cloud_logging_download_reads_like_the_servers_log() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-std");
    let log = std::fs::read_to_string(run.join("log/postgresql-2026-11-22_080420.log")).unwrap();
    let truth: Value = serde_json::from_str(&std::fs::read_to_string(run.join("truth.json")).unwrap()).unwrap();
    // `2026-11-22 08:04:20.708 UTC [..` → 2026-11-22T08:04:20.708Z; a TAB
    // line is its entry's, at the same time.
    let mut time = String::new();
    let mut entries: Vec<Value> = Vec::new();
    for (i, line) in log.lines().enumerate() {
        if !line.starts_with('\t') {
            time = format!("{}T{}Z", &line[..10], &line[11..23]);
        }
        entries.push(json!({
            "insertId": format!("s={i}"), "logName": "projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log",
            "resource": {"type": "cloudsql_database", "labels": {"database_id": "p:pg15", "region": "europe-west1"}},
            "severity": "INFO", "textPayload": line, "timestamp": time, "receiveTimestamp": time,
        }));
    }
    entries.reverse();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("downloaded-logs.json");
    std::fs::write(&file, serde_json::to_string_pretty(&entries).unwrap()).unwrap();

    let (report, db) = import(&file, dir.path());
    assert!(report.contains("(cluster c, cloudsql, prefix '%m [%p] %q%u@%d ')"), "{report}");
    let counts = &truth["counts"];
    let want =
        (counts["checkpoint_start"]["total"].as_i64().unwrap(), counts["checkpoint_complete"].as_i64().unwrap(), 0);
    assert_eq!(summary_counts(&db), want);
    let summary = json_of(&["summary", "--db", &db, "--format", "json"]);
    assert_eq!(summary["too_frequent"], counts["too_frequent"]);
    // One checkpointer: each complete line ends the start before it.
    let at = |l: &str| format!("{}T{}+00:00", &l[..10], &l[11..23]);
    let mut logged: Vec<(String, Option<String>)> = Vec::new();
    for l in log.lines() {
        if l.contains("LOG:  checkpoint starting: ") {
            logged.push((at(l), None));
        } else if l.contains("LOG:  checkpoint complete: ") {
            logged.last_mut().unwrap().1 = Some(at(l));
        }
    }
    let stored: Vec<(String, Option<String>)> = checkpoints(&db)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["started_at"].as_str().unwrap().to_string(), c["completed_at"].as_str().map(String::from)))
        .collect();
    assert_eq!(stored, logged);
}

/// CloudNativePG's log pipe test rows: checkpoint lines whose csvlog
/// `backend_type` is `postmaster`, a process that never logs checkpoints.
/// Refused, and said once, with the field and what was expected; the way
/// out is not another --format (the rows fit csvlog).
#[test]
fn rows_from_a_process_that_does_not_log_checkpoints_are_refused_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").to_str().unwrap().to_string();
    let file = managed("cnpg-logpipe-two-lines.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch"))
        .args(["import", "--db", &db, "--cluster", "c", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("walwatch: created")).collect();
    let name = file.to_str().unwrap();
    assert_eq!(
        said,
        [
            format!("walwatch: {name}: 2 line(s) look like PostgreSQL events but none could be read as one (0 did not fit the csvlog format, 2 were refused as forged, 0 could not be read); nothing of it was recorded as read").as_str(),
            "walwatch:   first line refused (line 1): its backend_type is not checkpointer, startup or standalone backend, the processes that log checkpoints",
            "walwatch:   every such line fit the csvlog format and was refused: only the process that logs an event may write it (docs/guide/logs.md, Trusting what the log says)",
        ]
    );
    assert_eq!(checkpoints(&db), json!([]));
}

/// MB/s written: `buffers` of 8 kB over `write_s`, to one decimal; null
/// when the write took no measurable time.
fn write_mb_s(buffers: i64, write_s: f64) -> Option<f64> {
    (write_s > 0.0).then(|| (buffers as f64 * 8192.0 / 1048576.0 / write_s * 10.0).round() / 10.0)
}
