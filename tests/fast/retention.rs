//! Retention (`[store] keep`) on a real fixture log: imported
//! with `walwatch import`, pruned through the daemon's own daily step with
//! an injected clock, then counted against the log's own lines and read
//! back with `history`, `summary` and `status`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rusqlite::Connection;
use walwatch::store::Store;

use crate::import_behaviour::{ok, walwatch};

const RUN: &str = "15-stderr-default-std";

fn log_file() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(RUN).join("log");
    std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path()
}

/// The fixture's lines whose message starts with `head`, by their log time.
fn lines_at(head: &str) -> Vec<Timestamp> {
    std::fs::read_to_string(log_file())
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("] LOG:  {head}")))
        .map(|l| format!("{}Z", l[..23].replacen(' ', "T", 1)).parse().unwrap())
        .collect()
}

fn imported(dir: &Path) -> PathBuf {
    let db = dir.join("w.db");
    ok(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", log_file().to_str().unwrap()]);
    db
}

fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db).unwrap().query_row(sql, [], |r| r.get(0)).unwrap()
}

const NEVER: &dyn Fn() -> bool = &|| false;

/// The cutoff lies between a checkpoint's complete line (08:05:52.078) and
/// the next start (08:05:55.081), so every row is on one side of it.
#[test]
fn a_prune_keeps_exactly_the_log_after_the_cutoff() {
    let tmp = tempfile::tempdir().unwrap();
    let db = imported(tmp.path());
    let cutoff: Timestamp = "2026-11-22T08:05:54Z".parse().unwrap();
    let starts = lines_at("checkpoint starting:");
    let completes = lines_at("checkpoint complete:");
    let too_frequent = lines_at("checkpoints are occurring too frequently");
    assert_eq!((starts.len(), completes.len()), (28, 28), "the fixture as read here");
    assert_eq!(count(&db, "SELECT count(*) FROM checkpoint"), 28);
    let after = |times: &[Timestamp]| times.iter().filter(|t| **t >= cutoff).count() as i64;

    let mut store = Store::open(&db).unwrap();
    let now = cutoff + SignedDuration::from_hours(24);
    let outcome = store.retention_mut().prune_if_due(Duration::from_secs(86_400), now, NEVER).unwrap().unwrap();
    assert_eq!(outcome.cutoff, cutoff);
    assert_eq!(outcome.pruned.checkpoints as usize, starts.len() - after(&starts) as usize);
    drop(store);

    assert_eq!(count(&db, "SELECT count(*) FROM checkpoint"), after(&starts));
    assert_eq!(count(&db, "SELECT count(*) FROM line WHERE kind = 'checkpoint_start'"), after(&starts));
    assert_eq!(count(&db, "SELECT count(*) FROM line WHERE kind = 'checkpoint_complete'"), after(&completes));
    assert_eq!(count(&db, "SELECT count(*) FROM event WHERE kind = 'too_frequent'"), after(&too_frequent));
    // Older than the cutoff but what the settings and the version are read from.
    assert_eq!(count(&db, "SELECT count(*) FROM event WHERE kind = 'server_start'"), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM source"), 1, "the read position stays");
    assert_tally_is_a_recount(&db);

    // history: the note on stderr, never in the JSON.
    let db_arg = db.to_str().unwrap();
    let out = walwatch(&[
        "history",
        "--db",
        db_arg,
        "--tz",
        "UTC",
        "--since",
        "2026-11-21",
        "--by",
        "day",
        "--format",
        "json",
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "note: the store keeps 1 day; rows before 2026-11-22 08:05 UTC were pruned, so buckets before it are empty"
        ),
        "{stderr}"
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("note"));
    assert_eq!(rows.as_array().unwrap().len(), 2, "two days asked for: {rows}");
    // status shows the prune.
    let status = ok(&["status", "--db", db_arg, "--config", "/dev/null", "--utc"]);
    let rows = outcome.pruned.rows();
    assert!(
        status.contains(&format!("store: keeps 400 days; last pruned 2026-11-23 08:05:54.000 +00:00, {rows} rows")),
        "{status}"
    );
}

/// With a clock far after the fixture, everything goes but what must stay.
#[test]
fn a_prune_long_after_the_log_keeps_only_what_must_survive() {
    let tmp = tempfile::tempdir().unwrap();
    let db = imported(tmp.path());
    let events = count(&db, "SELECT count(*) FROM event");
    // Never pruned: no note, whatever the range.
    let out = walwatch(&["history", "--db", db.to_str().unwrap(), "--tz", "UTC", "--since", "2020-01-01"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("were pruned"), "{stderr}");
    let mut store = Store::open(&db).unwrap();
    let now: Timestamp = "2028-06-01T00:00:00Z".parse().unwrap();
    let outcome = store.retention_mut().prune_if_due(Duration::from_secs(400 * 86_400), now, NEVER).unwrap().unwrap();
    drop(store);
    assert_eq!(count(&db, "SELECT count(*) FROM checkpoint"), 0);
    assert_eq!(count(&db, "SELECT count(*) FROM point_tally"), 0);
    // The server's version and the log's one setting change.
    let kept = "SELECT group_concat(kind) FROM (SELECT kind FROM event ORDER BY at)";
    let kinds: String = Connection::open(&db).unwrap().query_row(kept, [], |r| r.get(0)).unwrap();
    assert_eq!(kinds, "server_start,parameter_changed");
    assert_eq!(outcome.pruned.events as i64, events - 2);
    assert_eq!(outcome.pruned.checkpoints, 28);
    assert_eq!(count(&db, "SELECT count(*) FROM source"), 1);
}

/// `point_tally` (kept by triggers, migration 0009) equals a recount.
fn assert_tally_is_a_recount(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let rows = |sql: &str| -> Vec<(i64, i64, String, String, i64, i64)> {
        let mut stmt = conn.prepare(sql).unwrap();
        let mapped =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))).unwrap();
        mapped.map(Result::unwrap).collect()
    };
    let tally = rows(
        "SELECT cluster_id, day, kind, trigger, started, completed FROM point_tally
         WHERE started <> 0 OR completed <> 0 ORDER BY 1, 2, 3, 4",
    );
    let recount = rows(
        "SELECT cluster_id, COALESCE(started_at, completed_at) / 86400000000, kind, IFNULL(trigger, ''),
                count(start_source_id), count(complete_source_id)
         FROM checkpoint GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
    );
    assert_eq!(tally, recount);
    assert!(!tally.is_empty());
}
