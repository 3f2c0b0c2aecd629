//! The daemon's daily prune (`[store] keep`) in a real daemon
//! process: due at start on a store never pruned, logged, shown by status;
//! killed with SIGKILL in the middle of a prune, its rows reported by the next.
//! (When it is due and what it deletes are tested with an injected clock in
//! store/prune/tests.rs and tests/fast/retention.rs.)

use std::fs;
use std::time::{Duration, Instant};

use crate::support;
use support::daemon::{fixture, status, walwatch, Workspace};

#[test]
fn the_daemon_prunes_at_start_logs_it_and_status_shows_it() {
    let ws = Workspace::new();
    let log = ws.dir("logs").join("postgresql.log");
    // A real server's log of 2026-11-22: more than a day old whenever this runs.
    fs::write(&log, fixture("15-stderr-default-std")).unwrap();
    let (db, log_s) = (ws.db(), log.to_str().unwrap().to_string());
    let out = walwatch().args(["import", "--db", db.to_str().unwrap(), "--cluster", "main", &log_s]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config = format!(
        "[store]\npath = {:?}\nkeep = \"1d\"\n\n[daemon]\npoll_interval = \"200ms\"\n\n[[cluster]]\nname = \"main\"\nlogs = [{:?}]\n",
        db.to_str().unwrap(),
        log_s
    );
    fs::write(ws.config_path(), config).unwrap();
    let mut daemon = ws.start();
    let started = Instant::now();
    let pruned = loop {
        let st = status(&db).unwrap_or_default();
        if !st["store"]["last_pruned_at"].is_null() {
            break st;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no prune within 30 s: {}", daemon.full_log());
        std::thread::sleep(Duration::from_millis(200));
    };
    daemon.terminate_within(Duration::from_secs(10));
    assert!(pruned["store"]["last_pruned_rows"].as_u64().unwrap() > 0, "{pruned}");
    assert_eq!(pruned["store"]["shrinks"], true, "a store walwatch created vacuums incrementally");
    assert_eq!(pruned["store"]["prune_error"], serde_json::Value::Null);
    let log = daemon.full_log();
    assert!(log.contains("Pruned the store: it keeps 1 day; rows before"), "{log}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let left: i64 = conn.query_row("SELECT count(*) FROM checkpoint", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0, "every checkpoint of the fixture is older than a day");
}

/// The tables of the store's history the prune deletes from. (The alert
/// tables hold nothing old here; the daemon adds alerts of its own as it
/// runs, which a count of them would mix in.)
const PRUNED_TABLES: [&str; 3] = ["checkpoint", "event", "setting"];

fn rows(conn: &rusqlite::Connection) -> i64 {
    PRUNED_TABLES
        .iter()
        .map(|t| conn.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get::<_, i64>(0)).unwrap())
        .sum()
}

/// The imported rows again `copies` times, each copy a day further back
/// (SQLite reads the rows to copy before it inserts any): a store old
/// enough for a prune of many batches (5,000 rows each).
fn age(conn: &rusqlite::Connection, copies: i64) {
    let columns = |table: &str| -> Vec<String> {
        let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid")).unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    };
    let copy = |table: &str, shift: &dyn Fn(&str) -> Option<String>| {
        let names = columns(table);
        let values: Vec<String> = names.iter().map(|c| shift(c).unwrap_or_else(|| c.clone())).collect();
        let sql = format!(
            "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < {copies})
             INSERT INTO {table}({}) SELECT {} FROM {table}, n",
            names.join(", "),
            values.join(", ")
        );
        conn.execute_batch(&sql).unwrap();
    };
    const DAY_US: &str = "86400000000";
    copy("event", &|c| match c {
        "id" => Some("NULL".into()),
        "offset" => Some("offset + k * 1000000000".into()),
        "at" => Some(format!("at - k * {DAY_US}")),
        _ => None,
    });
    copy("checkpoint", &|c| match c {
        "id" => Some("NULL".into()),
        "start_offset" | "complete_offset" => Some(format!("{c} + k * 1000000000")),
        "started_at" | "completed_at" => Some(format!("{c} - k * {DAY_US}")),
        _ => None,
    });
}

/// kill -9 in the middle of a prune, then a prune that finishes: it reports
/// every row gone since the store was last pruned — the killed one's
/// (committed batch by batch) as well as its own — not only its own.
#[test]
fn a_prune_after_a_killed_one_reports_the_rows_the_killed_one_deleted() {
    let ws = Workspace::new();
    let log = ws.dir("logs").join("postgresql.log");
    fs::write(&log, fixture("15-stderr-default-std")).unwrap();
    let (db, log_s) = (ws.db(), log.to_str().unwrap().to_string());
    let out = walwatch().args(["import", "--db", db.to_str().unwrap(), "--cluster", "main", &log_s]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let conn = rusqlite::Connection::open(&db).unwrap();
    age(&conn, 3000);
    let before = rows(&conn);
    println!("{before} rows before the prunes");
    let config = format!(
        "[store]\npath = {:?}\nkeep = \"1d\"\n\n[daemon]\npoll_interval = \"200ms\"\n\n[[cluster]]\nname = \"main\"\nlogs = [{:?}]\n",
        db.to_str().unwrap(),
        log_s
    );
    fs::write(ws.config_path(), config).unwrap();

    // The prune is due at start; killed once it has committed some batches
    // and has many left.
    let mut daemon = ws.start();
    let started = Instant::now();
    let killed_at = loop {
        let now = rows(&conn);
        if now < before - 20_000 {
            daemon.kill9();
            break now;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no prune progress within 60 s: {}", daemon.full_log());
        std::thread::sleep(Duration::from_millis(5));
    };
    let after_kill = rows(&conn);
    println!("killed with {killed_at} rows seen, {after_kill} left");
    assert!(after_kill < before && after_kill > 20_000, "killed mid-prune: {after_kill} of {before} left");
    assert_eq!(
        status(&db).unwrap()["store"]["last_pruned_at"],
        serde_json::Value::Null,
        "the killed prune recorded nothing"
    );

    let mut daemon = ws.start();
    let started = Instant::now();
    let pruned = loop {
        let st = status(&db).unwrap_or_default();
        if !st["store"]["last_pruned_at"].is_null() {
            break st;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no prune within 60 s: {}", daemon.full_log());
        std::thread::sleep(Duration::from_millis(200));
    };
    daemon.terminate_within(Duration::from_secs(10));
    let left = rows(&conn);
    println!("{left} rows left; status: {}", pruned["store"]);
    assert_eq!(pruned["store"]["last_pruned_rows"].as_i64(), Some(before - left), "{pruned}");
    let log = daemon.full_log();
    let earlier = format!("earlier={}", before - after_kill);
    assert!(log.contains(&earlier), "the daemon's log says how many rows the killed prune deleted ({earlier}): {log}");
}
