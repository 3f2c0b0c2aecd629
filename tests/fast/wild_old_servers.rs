//! PostgreSQL 9.0–9.4 logs: lines real servers wrote, found in
//! public material (tests/fixtures/wild/README.md), imported and read back.
//! Every expected value was read off the lines by hand.

use std::path::{Path, PathBuf};

use super::import_behaviour::{ok, walwatch};
use serde_json::{json, Value};
use walwatch::catalog::{Catalog, Classification};
use walwatch::model::event::{CompleteStats, EventBody, PointKind};

fn wild(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wild").join(name)
}

fn import(db: &Path, cluster: &str, file: &str, extra: &[&str]) -> String {
    let file = wild(file);
    let mut args = vec!["import", "--db", db.to_str().unwrap(), "--cluster", cluster];
    args.extend_from_slice(extra);
    args.push(file.to_str().unwrap());
    ok(&args)
}

fn checkpoints(db: &Path) -> Value {
    serde_json::from_str(&ok(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap()
}

/// A checkpoints row of a 9.x complete line: nothing of 9.5+ (distance,
/// estimate), 16+ (lsn) or 18 (SLRU).
#[allow(clippy::too_many_arguments)]
fn old_row(
    cluster: &str,
    started: Option<&str>,
    completed: &str,
    buffers: (i64, f64),
    wal_files: (i64, i64, i64),
    times: (f64, f64, f64),
    sync: (i64, f64, f64),
) -> Value {
    let flags: Vec<&str> = started.map(|_| "time").into_iter().collect();
    json!({
        "cluster": cluster, "kind": "checkpoint", "trigger": started.map(|_| "time"), "flags": flags,
        "started_at": started, "completed_at": completed,
        "buffers_written": buffers.0, "buffers_pct": buffers.1, "slru_buffers_written": null,
        "wal_files_added": wal_files.0, "wal_files_removed": wal_files.1, "wal_files_recycled": wal_files.2,
        "write_s": times.0, "sync_s": times.1, "total_s": times.2,
        "sync_files": sync.0, "sync_longest_s": sync.1, "sync_average_s": sync.2,
        "distance_kb": null, "estimate_kb": null, "lsn": null, "redo_lsn": null, "truncated": false,
        // The write storm: 8 kB buffers over the write time; no pace
        // without a known checkpoint_timeout.
        "write_mb_s": write_mb_s(buffers.0, times.0), "pace_ratio": null,
    })
}

#[test]
fn rds_9_3_start_and_complete_pair_into_one_row_with_null_distance() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let report = import(&db, "rds", "rds-9.3-stderr.log", &[]);
    assert!(report.contains("prefix '%t:%r:%u@%d:[%p]:'"), "{report}");
    assert!(report.contains("events: checkpoint_complete 1, checkpoint_start 1"), "{report}");
    assert!(report.contains("rejected 0, unmatched 0, unparsed 0, new in store 2"), "{report}");
    let at = "2013-11-05T16:41:07.000+00:00";
    let expected = old_row("rds", Some(at), at, (1, 0.3), (0, 0, 1), (0.0, 0.003, 0.012), (1, 0.003, 0.003));
    assert_eq!(checkpoints(&db), json!([expected]));
}

#[test]
fn csvlog_9_x_complete_lines_without_starts_are_five_rows_with_null_distance() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let report = import(&db, "se", "dba-se-61822-csvlog.csv", &[]);
    assert!(report.contains("(cluster se, csvlog)"), "{report}");
    assert!(report.contains("events: checkpoint_complete 5"), "{report}");
    assert!(report.contains("rejected 0, unmatched 0, unparsed 0, new in store 5"), "{report}");
    // 11:51:29.341 CDT (UTC-5) is 16:51:29.341 UTC.
    let row = |at, buffers, recycled, times, sync| old_row("se", None, at, buffers, (0, 0, recycled), times, sync);
    let expected = json!([
        row("2014-03-26T16:51:29.341+00:00", (15047, 1.4), 30, (68.98, 1.542, 70.548), (925, 0.216, 0.001)),
        row("2014-03-26T16:56:05.430+00:00", (16774, 1.6), 31, (72.542, 17.164, 89.733), (885, 3.812, 0.019)),
        row("2014-03-26T17:01:21.650+00:00", (14436, 1.4), 33, (122.35, 5.212, 127.676), (924, 3.74, 0.005)),
        row("2014-03-26T17:06:25.028+00:00", (13277, 1.3), 29, (126.217, 5.733, 131.991), (894, 1.859, 0.006)),
        row("2014-03-26T17:10:41.958+00:00", (20765, 2.0), 28, (88.015, 10.818, 98.872), (881, 2.69, 0.012)),
    ]);
    assert_eq!(checkpoints(&db), expected);
}

#[test]
fn suggest_on_a_9_x_log_says_it_needs_the_distance_of_postgresql_9_5() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    import(&db, "se", "dba-se-61822-csvlog.csv", &[]);
    let db = db.to_str().unwrap();
    let out = walwatch(&["suggest", "--db", db, "--cluster", "se", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["suggested"], json!({ "max_wal_size_mb": null, "min_wal_size_mb": null }));
    assert_eq!(s["sql"], Value::Null);
    assert_eq!((&s["basis"]["samples"], &s["basis"]["checkpoints_without_distance"]), (&json!(0), &json!(5)));
    assert_eq!(
        s["explanation"][1],
        "No suggestion: walwatch needs the WAL distance since the previous checkpoint (\"distance=… kB\" in \
         \"checkpoint complete\" lines, logged by PostgreSQL 9.5 and later), and the 5 checkpoints completed in \
         this window logged none: the server is PostgreSQL 9.4 or older."
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "cluster \"se\": no suggestion: its 5 checkpoints logged no WAL distance; walwatch needs \"distance=\" \
             in \"checkpoint complete\" lines (PostgreSQL 9.5+)"
        ),
        "{stderr}"
    );
    // The table says it too.
    let text = ok(&["suggest", "--db", db, "--cluster", "se"]);
    assert!(text.contains("  suggested max_wal_size  -\n"), "{text}");
    assert!(text.contains("logged by PostgreSQL 9.5 and later"), "{text}");
}

#[test]
fn a_9_0_complete_line_has_no_sync_files_and_no_distance() {
    let text = std::fs::read_to_string(wild("pgsql-general-2011-09-07-9.0.txt")).unwrap();
    let message = text.trim_end().strip_prefix("LOG:  ").unwrap();
    let expected = EventBody::PointComplete {
        kind: PointKind::Checkpoint,
        stats: Box::new(CompleteStats {
            buffers_written: 5015,
            buffers_pct: 15.1,
            wal_files_added: Some(0),
            wal_files_removed: Some(0),
            wal_files_recycled: Some(15),
            write_s: 1004.333,
            sync_s: 0.106,
            total_s: 1004.571,
            ..CompleteStats::default()
        }),
    };
    assert_eq!(Catalog::global().classify(message), Classification::Event(expected));
}

#[test]
fn a_9_4_too_frequent_warning_keeps_its_checkpoint_segments_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let report = import(&db, "edb", "edb-kb-3595-9.4-stderr.log", &["--timezone", "Asia/Kolkata"]);
    assert!(report.contains("events: too_frequent 1"), "{report}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (at, data): (i64, String) = conn
        .query_row("SELECT at, data FROM event WHERE kind = 'too_frequent'", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    // 2019-03-13 23:52:26 IST (UTC+05:30) is 18:22:26 UTC.
    assert_eq!(at, 1_552_501_346_000_000);
    assert_eq!(serde_json::from_str::<Value>(&data).unwrap(), json!({ "seconds": 24, "hint": true }));
}

/// MB/s written: `buffers` of 8 kB over `write_s`, to one decimal; null
/// when the write took no measurable time.
fn write_mb_s(buffers: i64, write_s: f64) -> Option<f64> {
    (write_s > 0.0).then(|| (buffers as f64 * 8192.0 / 1048576.0 / write_s * 10.0).round() / 10.0)
}
