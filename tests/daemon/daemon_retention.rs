//! The daemon's daily prune (`[store] keep`, issue 12 §1) in a real daemon
//! process: due at start on a store never pruned, logged, shown by status.
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
