//! Real store files: rows written through the writers' own path, pruned,
//! and counted with SQL.

use std::cell::Cell;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::model::event::{CompleteStats, EventBody, PointKind};
use crate::store::shared_tests::{store, Line};

const T0: &str = "2026-01-01T00:00:00Z";

fn t0() -> Timestamp {
    T0.parse().unwrap()
}

fn line(at: Timestamp, body: EventBody) -> Line {
    Line { at, body, ahead_us: None }
}

/// `days` days of checkpoints every `every_min` minutes (start, complete 30 s
/// later; every fourth one forced by WAL), a parameter change and a server
/// start each day.
fn history(days: i64, every_min: i64) -> Vec<Line> {
    let mut lines = Vec::new();
    for day in 0..days {
        let midnight = t0() + SignedDuration::from_hours(24 * day);
        lines.push(line(midnight, EventBody::ServerStart { version: Some(format!("15.{day}")) }));
        let value = format!("{}MB", 1024 + day);
        lines.push(line(midnight, EventBody::ParameterChanged { name: "max_wal_size".into(), value }));
        for n in 0..(24 * 60 / every_min) {
            let at = midnight + SignedDuration::from_mins(n * every_min + 1);
            let flag = if n % 4 == 0 { "wal" } else { "time" };
            let kind = PointKind::Checkpoint;
            lines.push(line(at, EventBody::PointStart { kind, flags: vec![flag.into()] }));
            let stats = Box::new(CompleteStats { distance_kb: Some(1000), ..CompleteStats::default() });
            lines.push(line(at + SignedDuration::from_secs(30), EventBody::PointComplete { kind, stats }));
        }
    }
    lines
}

fn count(store: &Store, sql: &str) -> i64 {
    store.conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn day(n: i64) -> Timestamp {
    t0() + SignedDuration::from_hours(24 * n)
}

const NEVER: &dyn Fn() -> bool = &|| false;

#[test]
fn deletes_exactly_the_rows_older_than_the_cutoff() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(40, 60));
    assert_eq!(count(&store, "SELECT count(*) FROM checkpoint"), 40 * 24);
    let cutoff = day(10);
    let pruned = store.retention_mut().prune(cutoff, BATCH, NEVER).unwrap();
    assert_eq!(pruned.checkpoints, 10 * 24);
    // Of the daily parameter change and server start, the newest before the
    // cutoff stays (the checkpoint lines went with their rows).
    assert_eq!(pruned.events, 9 + 9);
    assert_eq!(count(&store, "SELECT count(*) FROM checkpoint"), 30 * 24);
    let micros = to_micros(cutoff);
    let older = format!("SELECT count(*) FROM checkpoint WHERE COALESCE(started_at, completed_at) < {micros}");
    assert_eq!(count(&store, &older), 0);
    let old_events =
        format!("SELECT group_concat(kind) FROM (SELECT kind FROM event WHERE at < {micros} ORDER BY kind)");
    let kept: String = store.conn.query_row(&old_events, [], |r| r.get(0)).unwrap();
    assert_eq!(kept, "parameter_changed,server_start", "what is in effect at the cutoff stays");
    assert_eq!(count(&store, "SELECT count(*) FROM line WHERE kind LIKE 'checkpoint%'"), 30 * 24 * 2);
    assert_eq!(count(&store, "SELECT count(*) FROM event WHERE kind LIKE 'checkpoint%'"), 0);
    assert!(!pruned.stopped);
    // A second prune to the same cutoff finds nothing.
    assert_eq!(store.retention_mut().prune(cutoff, BATCH, NEVER).unwrap().own_rows(), 0);
}

/// The tallies `summary` adds up stay equal to a recount of the rows.
#[test]
fn point_tally_equals_a_recount_after_a_prune() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(20, 30));
    // Cut inside a day: the tally of that day loses part of its rows.
    store.retention_mut().prune(day(7) + SignedDuration::from_hours(13), 100, NEVER).unwrap();
    let tally = "SELECT group_concat(cluster_id || ':' || day || ':' || kind || ':' || trigger || ':' || started
                 || ':' || completed, ' ') FROM (SELECT * FROM point_tally WHERE started <> 0 OR completed <> 0
                 ORDER BY cluster_id, day, kind, trigger)";
    let recount = "SELECT group_concat(cluster_id || ':' || d || ':' || kind || ':' || t || ':' || s || ':' || c, ' ')
                   FROM (SELECT cluster_id, COALESCE(started_at, completed_at) / 86400000000 AS d, kind,
                                IFNULL(trigger, '') AS t, count(start_source_id) AS s, count(complete_source_id) AS c
                         FROM checkpoint GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4)";
    let (a, b): (String, String) = (
        store.conn.query_row(tally, [], |r| r.get(0)).unwrap(),
        store.conn.query_row(recount, [], |r| r.get(0)).unwrap(),
    );
    assert_eq!(a, b);
    assert!(a.starts_with(&format!("1:{}:", day(7).as_second() / 86_400)), "{a}");
    assert_eq!(count(&store, "SELECT count(*) FROM point_tally WHERE started = 0 AND completed = 0"), 0);
}

#[test]
fn batches_are_bounded_and_a_stop_ends_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(10, 60));
    let pruned = store.retention_mut().prune(day(5), 50, NEVER).unwrap();
    assert_eq!(pruned.checkpoints, 5 * 24);
    assert_eq!(pruned.largest_batch, 50);
    // 120 checkpoint rows (and their lines) in 3 batches; 4 parameter
    // changes and 4 server starts in 1 each.
    assert_eq!(pruned.batches, 3 + 1 + 1);

    let asked = Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 2
    };
    let pruned = store.retention_mut().prune(day(8), 20, &stop).unwrap();
    assert!(pruned.stopped);
    assert_eq!((pruned.checkpoints, pruned.batches), (40, 2), "two batches, then the stop");
}

fn exec(store: &Store, sql: &str) {
    store.conn.execute_batch(sql).unwrap();
}

#[test]
fn open_alerts_queued_notices_and_current_settings_stay() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(2, 60));
    let (old, new) = (to_micros(day(-100)), to_micros(day(1)));
    exec(
        &store,
        &format!(
            "INSERT INTO alert(id, cluster_id, rule, key, severity, state, summary, fired_at, updated_at, resolved_at) VALUES
               (1, 1, 'r', 'a', 'warning', 'resolved', 's', {old}, {old}, {old}),  -- old, resolved, its notice sent
               (2, 1, 'r', 'b', 'warning', 'firing', 's', {old}, {old}, NULL),     -- open: stays
               (3, 1, 'r', 'c', 'warning', 'resolved', 's', {old}, {old}, {old}),  -- its notice still queued: stays
               (4, 1, 'r', 'd', 'warning', 'resolved', 's', {old}, {new}, {new});  -- resolved after the cutoff
             INSERT INTO outbox(alert_id, notice, channel, message_id, payload, created_at, next_attempt_at, sent_at) VALUES
               (1, 'firing', 'mail', 'm1', 'p', {old}, {old}, {old}),
               (3, 'firing', 'mail', 'm3', 'p', {old}, {old}, NULL),
               (NULL, 'test', 'mail', 'm5', 'p', {old}, {old}, {old});
             INSERT INTO silence(cluster_id, rule, until, created_at) VALUES (1, 'r', {old}, {old}), (1, 'r', {new}, {old});
             INSERT INTO setting(cluster_id, name, value, source, since) VALUES
               (1, 'max_wal_size', '1GB', 'config', {old} - 1), (1, 'max_wal_size', '2GB', 'config', {old}),
               (1, 'max_wal_size', '4GB', 'config', {new}), (1, 'shared_buffers', '1GB', 'conf_file', {old});"
        ),
    );
    let pruned = store.retention_mut().prune(day(0), BATCH, NEVER).unwrap();
    assert_eq!((pruned.alerts, pruned.outbox, pruned.silences, pruned.settings), (1, 2, 1, 1));
    let alerts: String = store
        .conn
        .query_row("SELECT group_concat(id) FROM (SELECT id FROM alert ORDER BY id)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(alerts, "2,3,4");
    let settings = "SELECT group_concat(value) FROM (SELECT value FROM setting ORDER BY name, since)";
    let values: String = store.conn.query_row(settings, [], |r| r.get(0)).unwrap();
    assert_eq!(values, "2GB,4GB,1GB", "the value in effect at the cutoff stays");
}

fn pragma(store: &Store, name: &str) -> i64 {
    store.conn.pragma_query_value(None, name, |r| r.get(0)).unwrap()
}

/// A new store gives the pages of deleted rows back: the freelist empties
/// and the page count drops, in steps of at most VACUUM_STEP_PAGES.
#[test]
fn incremental_vacuum_shrinks_the_file_after_a_large_prune() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(60, 10));
    assert!(store.retention().incremental().unwrap(), "a new store is created with auto_vacuum = INCREMENTAL");
    let before = pragma(&store, "page_count");
    let pruned = store.retention_mut().prune(day(45), BATCH, NEVER).unwrap();
    assert_eq!(pruned.checkpoints, 45 * 144);
    let free = pragma(&store, "freelist_count");
    assert!(free > before / 2, "{free} of {before} pages free after deleting three quarters");
    let reclaimed = store.retention_mut().reclaim(NEVER).unwrap();
    assert_eq!(pragma(&store, "freelist_count"), 0);
    assert_eq!(reclaimed.pages, free as u64);
    assert_eq!(reclaimed.steps, (free as u64).div_ceil(VACUUM_STEP_PAGES));
    let after = pragma(&store, "page_count");
    assert!(after <= before - free, "{before} pages -> {after}");
    drop(store);
    let size = std::fs::metadata(dir.path().join("w.db")).unwrap().len();
    assert!(size <= (after * 4096) as u64, "the file itself shrank: {size} bytes");
}

/// A store created before auto_vacuum was set keeps its size; said, not hidden.
#[test]
fn an_old_store_reuses_the_space_without_shrinking() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t(x);").unwrap();
    let mut store = Store::open(&path).unwrap();
    assert!(!store.retention().incremental().unwrap());
    let reclaimed = store.retention_mut().reclaim(NEVER).unwrap();
    assert_eq!(reclaimed, Reclaimed { incremental: false, pages: 0, steps: 0 });
    assert!(!store.retention().recorded().unwrap().incremental);
}

/// The daemon's daily step with an injected clock: due at first, not again
/// within a day, due after; what it did is recorded for status and history.
#[test]
fn prune_if_due_runs_once_a_day_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(30, 60));
    let keep = Duration::from_secs(20 * 86_400);
    assert!(store.retention().recorded().unwrap().pruned_before().is_none());
    let now = day(30) + SignedDuration::from_hours(3);
    let outcome = store.retention_mut().prune_if_due(keep, now, NEVER).unwrap().expect("due: never pruned");
    assert_eq!(outcome.cutoff, day(10) + SignedDuration::from_hours(3));
    assert_eq!(outcome.pruned.checkpoints, 10 * 24 + 3);
    let r = store.retention().recorded().unwrap();
    assert_eq!((r.pruned_at, r.rows, r.pruned_total, r.keep), (Some(now), outcome.pruned.rows(), r.rows, Some(keep)));
    assert_eq!(r.pruned_before(), Some(outcome.cutoff));
    assert!(store.retention_mut().prune_if_due(keep, now + SignedDuration::from_hours(23), NEVER).unwrap().is_none());
    let later = now + SignedDuration::from_hours(24);
    let second = store.retention_mut().prune_if_due(keep, later, NEVER).unwrap().expect("due a day later");
    assert_eq!(second.pruned.checkpoints, 24);
    let r = store.retention().recorded().unwrap();
    assert_eq!(r.pruned_total, outcome.pruned.rows() + second.pruned.rows());
    let note = r.note_for_range(day(0), "buckets before it are empty").unwrap();
    assert_eq!(
        note,
        "note: the store keeps 20 days; rows before 2026-01-12 03:00 UTC were pruned, so buckets before it are empty"
    );
    assert!(r.note_for_range(day(12), "x").is_none(), "a range after the cutoff gets no note");
}

/// A prune that ends between two batches without recording its result (a
/// stop here; kill -9 leaves the store the same) has its committed
/// deletions reported by the next one, with that one's own.
#[test]
fn the_rows_of_an_unrecorded_prune_are_reported_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(30, 60));
    let keep = Duration::from_secs(20 * 86_400);
    let now = day(30) + SignedDuration::from_hours(3);
    let before = count(&store, "SELECT count(*) FROM checkpoint") + count(&store, "SELECT count(*) FROM event");
    // Stopped after its second batch of 100 rows.
    let asked = Cell::new(0);
    let after_two = || {
        asked.set(asked.get() + 1);
        asked.get() > 2
    };
    let span = SignedDuration::try_from(keep).unwrap();
    let stopped = store.retention_mut().prune(now - span, 100, &after_two).unwrap();
    assert_eq!((stopped.stopped, stopped.own_rows(), stopped.earlier), (true, 200, 0));
    assert_eq!(store.retention().recorded().unwrap().pruned_at, None, "a stopped prune is not recorded");
    let outcome = store.retention_mut().prune_if_due(keep, now, NEVER).unwrap().expect("due: never recorded");
    let after = count(&store, "SELECT count(*) FROM checkpoint") + count(&store, "SELECT count(*) FROM event");
    assert_eq!(outcome.pruned.earlier, 200);
    assert_eq!(outcome.pruned.rows(), (before - after) as u64, "every row gone, by either prune");
    let r = store.retention().recorded().unwrap();
    assert_eq!((r.rows, r.pruned_total), (outcome.pruned.rows(), outcome.pruned.rows()));
    // Reported once: the next prune has nothing earlier to add.
    let next = store.retention_mut().prune_if_due(keep, now + SignedDuration::from_hours(24), NEVER).unwrap().unwrap();
    assert_eq!(next.pruned.earlier, 0);
    assert_eq!(store.retention().recorded().unwrap().pruned_total, outcome.pruned.rows() + next.pruned.rows());
}

/// A failing prune is recorded (status shows it) and the error returned
/// (the daemon logs it); the next try is a day later.
#[test]
fn a_failed_prune_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path(), history(3, 60));
    // A trigger that refuses deletes stands in for a failing disk.
    exec(
        &store,
        "CREATE TRIGGER no_delete BEFORE DELETE ON checkpoint BEGIN SELECT RAISE(ABORT, 'disk on fire'); END;",
    );
    let now = day(10);
    let err = store.retention_mut().prune_if_due(Duration::from_secs(86_400), now, NEVER).unwrap_err();
    assert!(err.to_string().contains("disk on fire"), "{err}");
    let r = store.retention().recorded().unwrap();
    assert_eq!(r.failed_at, Some(now));
    assert!(r.error.as_deref().unwrap().contains("disk on fire"));
    assert!(r.pruned_before().is_none());
    assert!(!store.retention().due(now + SignedDuration::from_hours(1)).unwrap());
    exec(&store, "DROP TRIGGER no_delete");
    assert!(store.retention_mut().prune_if_due(Duration::from_secs(86_400), day(11), NEVER).unwrap().is_some());
    let r = store.retention().recorded().unwrap();
    assert_eq!((r.failed_at, r.error), (None, None), "a success clears the failure");
}
