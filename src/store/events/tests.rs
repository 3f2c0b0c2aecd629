//! Events on real store files: what a batch may rely on, the times the
//! alert rules read (and the events dated ahead they leave out), counts
//! against the plain queries they replace, and the server's lifecycle.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::{parse_lsn, StartMarks};
use crate::frame::Format;
use crate::model::event::{Event, EventBody};
use crate::store::batch::nothing_stored_from;
use crate::store::shared_tests::{import, start, store, Line, AFTER_CRASH, CRASH, NOISE};
use crate::store::{DatedAhead, Filter, LogTimes, SourceSpec, Store};

/// A batch is fresh (its starts may be held for their completes) only
/// when it begins past every event stored of its source: a read on from
/// where the last one stopped, or of a source never read; not a read
/// again from the start (a file rewritten in place), nor one beginning
/// at the offset of the last stored event. The stored events: a real
/// start and complete of fixture 15-stderr-default-noise (lines 1554
/// and 1577), imported.
#[test]
fn a_batch_is_fresh_only_past_every_stored_event_of_its_source() {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log"),
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (start, complete) = (format!("{}\n", lines[1553]), format!("{}\n", lines[1576]));
    assert!(start.contains("checkpoint starting: wal") && complete.contains("checkpoint complete: "));
    let dir = tempfile::tempdir().unwrap();
    let (read, unread) = (dir.path().join("read.log"), dir.path().join("unread.log"));
    std::fs::write(&read, format!("{start}{complete}")).unwrap();
    std::fs::write(&unread, &complete).unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    let report = ingest::import(&mut store, cluster, read.to_str().unwrap(), &opts, &time).unwrap();
    assert_eq!(report.stored, 2);
    let source = store.sources().find(cluster, std::fs::read(&read).unwrap().as_slice()).unwrap().unwrap();
    let spec = SourceSpec { path: unread.to_str().unwrap(), meta: None, format: Format::Stderr, prefix: None };
    let (unread_source, _) = store.sources_mut().find_or_create(cluster, complete.as_bytes(), &spec).unwrap();

    let last = start.len() as u64; // the complete line's offset
    let batch = |offset| {
        vec![Event {
            at: Timestamp::UNIX_EPOCH,
            pid: Some(25162),
            offset,
            line: 2,
            nth: 0,
            body: EventBody::ConfigReload,
        }]
    };
    let tx = store.conn.transaction().unwrap();
    // As the pairing asks it: a batch without events is fresh.
    let is_fresh =
        |source, events: &[Event]| events.first().is_none_or(|e| nothing_stored_from(&tx, source, e.offset).unwrap());
    assert!(is_fresh(&source, &[]), "no events");
    assert!(is_fresh(&source, &batch(last + 1)), "past the last stored event");
    assert!(!is_fresh(&source, &batch(last)), "at the last stored event");
    assert!(!is_fresh(&source, &batch(0)), "read again from the start");
    assert!(is_fresh(&unread_source, &batch(0)), "a source of which nothing is stored");
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const TOLERANCE: Duration = Duration::from_secs(300);
const EXACTLY: i64 = 300_000_000;

#[test]
fn an_event_ahead_by_the_tolerance_counts_one_microsecond_more_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(
        dir.path(),
        vec![
            start("2026-11-22T10:00:00Z", "time", None),
            Line { at: at("2026-11-22T10:01:00Z"), body: EventBody::ServerReady { read_only: false }, ahead_us: None },
            start("2026-11-22T10:02:00Z", "wal", Some(EXACTLY)),
            start("2099-01-01T00:00:00Z", "wal", Some(EXACTLY + 1)),
        ],
    );
    let times = s.events().log_times("main", TOLERANCE).unwrap();
    assert_eq!(
        times,
        LogTimes {
            oldest: Some(at("2026-11-22T10:00:00Z")),
            newest: Some(at("2026-11-22T10:02:00Z")),
            last_point_line: Some(at("2026-11-22T10:02:00Z")),
            last_start: Some(at("2026-11-22T10:01:00Z")),
        }
    );
    let read = at("2099-01-01T00:00:00Z") - SignedDuration::from_micros(EXACTLY + 1);
    let ahead = s.events().dated_ahead("main", TOLERANCE, read).unwrap().unwrap();
    assert_eq!(
        ahead,
        DatedAhead {
            count: 1,
            most_ahead_at: at("2099-01-01T00:00:00Z"),
            most_ahead_read_at: read,
            latest_read_at: read
        }
    );
    assert_eq!(ahead.max_ahead(), SignedDuration::from_micros(EXACTLY + 1));
    // Read before the rule's window: not reported.
    assert_eq!(s.events().dated_ahead("main", TOLERANCE, read + SignedDuration::from_micros(1)).unwrap(), None);
    // A larger tolerance takes it back; a smaller one flags the other one too.
    assert_eq!(s.events().log_times("main", TOLERANCE * 2).unwrap().newest, Some(at("2099-01-01T00:00:00Z")));
    let small = s.events().dated_ahead("main", Duration::from_secs(1), Timestamp::MIN).unwrap().unwrap();
    assert_eq!((small.count, small.most_ahead_at), (2, at("2099-01-01T00:00:00Z")));
    assert_eq!(s.events().log_times("main", Duration::from_secs(1)).unwrap().newest, Some(at("2026-11-22T10:01:00Z")));
    assert_eq!(s.events().log_times("other", TOLERANCE).unwrap(), LogTimes::default());
}

#[test]
fn summary_counts_events_dated_ahead_but_not_as_first_or_last() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(
        dir.path(),
        vec![
            start("2026-11-22T10:00:00Z", "time", None),
            start("2026-11-22T10:05:00Z", "wal", None),
            start("2099-01-01T00:00:00Z", "wal", Some(EXACTLY + 1)),
        ],
    );
    let all = Filter::default();
    let counts = s.checkpoints().counts(&all, "checkpoint").unwrap();
    assert_eq!((counts.started, counts.by_trigger.wal), (3, 2));
    assert_eq!(s.events().first_time(&all, TOLERANCE).unwrap(), Some(at("2026-11-22T10:00:00Z")));
    assert_eq!(s.events().last_time(&all, TOLERANCE).unwrap(), Some(at("2026-11-22T10:05:00Z")));
    assert_eq!(s.events().count_dated_ahead(&all, TOLERANCE).unwrap(), 1);
    let until = Filter { until: Some(at("2030-01-01T00:00:00Z")), ..Filter::default() };
    assert_eq!(s.events().count_dated_ahead(&until, TOLERANCE).unwrap(), 0);
}

#[test]
fn the_migration_flags_what_an_older_store_read_ahead_of_its_last_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    // The schema before 0007.
    for sql in &super::super::MIGRATIONS[..6] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 6).unwrap();
    conn.execute_batch(
        "INSERT INTO cluster(id, name) VALUES (1, 'main');
         INSERT INTO source(id, cluster_id, path, fp_len, fp_hash, format, first_read, last_read)
           VALUES (1, 1, '/log', 0, 0, 'stderr', 1000000000000000, 1800000000000000);
         INSERT INTO event(cluster_id, source_id, offset, line, at, kind) VALUES
           (1, 1, 0, 1, 1799999999000000, 'config_reload'),
           (1, 1, 1, 2, 4070908800000000, 'config_reload');",
    )
    .unwrap();
    drop(conn);
    let s = Store::open(&path).unwrap();
    let ahead: Vec<Option<i64>> = s
        .conn
        .prepare("SELECT ahead_us FROM event ORDER BY offset")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ahead, [None, Some(4_070_908_800_000_000 - 1_800_000_000_000_000)]);
    assert_eq!(s.events().log_times("main", TOLERANCE).unwrap().newest, Some(at("2027-01-15T07:59:59Z")));
}

#[test]
fn a_line_read_as_it_is_written_is_not_ahead() {
    // The writers' own measure: an event dated in the past gets no ahead_us.
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path(), vec![start("2026-11-22T10:00:00Z", "time", None)]);
    let cluster_id = s.clusters_mut().find_or_create("main").unwrap();
    let spec =
        crate::store::SourceSpec { path: "/log/b.log", meta: None, format: crate::frame::Format::Stderr, prefix: None };
    let (mut row, _) =
        s.sources_mut().find_or_create(cluster_id, b"2026-11-22 10:00:00.000 UTC [7] LOG:  b\n", &spec).unwrap();
    let soon = Timestamp::now() + SignedDuration::from_hours(1);
    let body = EventBody::ServerReady { read_only: false };
    let events = [
        crate::model::event::Event { at: soon, pid: None, offset: 0, line: 1, nth: 0, body: body.clone() },
        crate::model::event::Event { at: Timestamp::now(), pid: None, offset: 1, line: 2, nth: 0, body },
    ];
    crate::ingest::pairing::commit(&mut s, &mut row, &spec, &events, crate::frame::Pos { offset: 2, line: 3 }).unwrap();
    let ahead: Vec<Option<i64>> = s
        .conn
        .prepare("SELECT ahead_us FROM event WHERE source_id = ?1 ORDER BY offset")
        .unwrap()
        .query_map([row.id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ahead[1], None);
    let hour = 3_600_000_000;
    let first = ahead[0].unwrap();
    assert!(first <= hour && first > hour - 60_000_000, "ahead by {first} µs");
}

/// The event figures (found cluster by cluster and kind by kind) equal
/// the plain queries they replace, for every window and cluster.
#[test]
fn event_figures_equal_the_plain_queries() {
    use rusqlite::params_from_iter;
    let (_dir, store) = import(&[("a", CRASH), ("a", AFTER_CRASH), ("b", NOISE)]);
    // One event and one checkpoint line dated ahead, one rejected record:
    // none is a first or last event.
    store.conn.execute_batch("UPDATE event SET ahead_us = 400000000 WHERE id = (SELECT max(id) FROM event)").unwrap();
    let newest_line = "SELECT id FROM checkpoint WHERE cluster_id = (SELECT id FROM cluster WHERE name = 'b')
                       ORDER BY completed_at DESC LIMIT 1";
    store
        .conn
        .execute(&format!("UPDATE checkpoint SET complete_ahead_us = 400000000 WHERE id = ({newest_line})"), [])
        .unwrap();
    store.conn.execute_batch("UPDATE event SET kind = 'rejected' WHERE id = (SELECT min(id) FROM event)").unwrap();
    let tolerance = std::time::Duration::from_secs(300);
    let t = |s: &str| s.parse::<Timestamp>().unwrap();
    let bounds =
        [None, Some(t("2026-11-22T08:10:00Z")), Some(t("2026-11-22T08:17:00Z")), Some(t("2030-01-01T00:00:00Z"))];
    let mut seen = 0;
    for cluster in [None, Some("a"), Some("b"), Some("none")] {
        for since in bounds {
            for until in bounds {
                let filter = Filter { cluster: cluster.map(String::from), since, until, trigger: None };
                let (cond, values) = filter.conditions("e.at");
                // Counts of events; first and last times of the lines
                // (events and checkpoint lines: the view `line`).
                let plain = |select: &str, pre: Option<i64>| -> Option<i64> {
                    let table = if pre.is_some() { "line" } else { "event" };
                    let sql = format!(
                        "SELECT {select} FROM {table} e JOIN cluster c ON c.id = e.cluster_id WHERE 1 = 1 {cond}"
                    );
                    let mut v = values.clone();
                    if let Some(p) = pre {
                        v.insert(0, rusqlite::types::Value::Integer(p));
                    }
                    store.conn.query_row(&sql, params_from_iter(v), |r| r.get(0)).unwrap()
                };
                for kind in ["parameter_changed", "too_frequent", "rejected", "server_start"] {
                    let want = plain(&format!("count(*) FILTER (WHERE e.kind = '{kind}')"), None).unwrap();
                    assert_eq!(
                        store.events().count(&filter, kind).unwrap(),
                        want,
                        "{kind} {cluster:?} {since:?} {until:?}"
                    );
                    seen += want;
                }
                for agg in ["MIN", "MAX"] {
                    let select =
                        format!("{agg}(e.at) FILTER (WHERE e.kind <> 'rejected' AND IFNULL(e.ahead_us, 0) <= ?)");
                    let want = plain(&select, Some(300_000_000)).map(|us| Timestamp::from_microsecond(us).unwrap());
                    assert_eq!(
                        store.events().end_time(&filter, agg, tolerance).unwrap(),
                        want,
                        "{agg} {cluster:?} {since:?} {until:?}"
                    );
                }
            }
        }
    }
    assert!(seen > 0);
}

/// The sequences no fixture log holds (a crash restart: the
/// postmaster survives, `reinitializing`, then ready again), next to
/// those real logs test in tests/fast/history.rs, as a PostgreSQL 11
/// server logs them: no start lines.
#[test]
fn a_ready_is_a_start_unless_a_start_line_a_crash_restart_or_a_promotion_explains_it() {
    let mut m = StartMarks::default();
    let seq = [
        ("server_ready", false, true),     // the first in the log
        ("crash_reinit", false, false),    // a backend crashed
        ("server_ready", false, false),    // the same postmaster again
        ("server_shutdown", false, false), // a clean stop
        ("server_ready", true, true),      // a standby started
        ("server_ready", false, false),    // promoted
        ("server_ready", true, true),      // a standby again: a new postmaster
        ("server_shutdown", false, false),
        ("server_ready", false, true), // read-write after a stop: a start, no promotion
        ("server_start", false, true), // PostgreSQL 12+: the line is the start
        ("server_ready", false, false),
        ("redo_start", false, false),
    ];
    for (i, (kind, read_only, start)) in seq.into_iter().enumerate() {
        assert_eq!(m.is_start(kind, read_only), start, "step {i}: {kind}");
    }
}

#[test]
fn lsn_halves_are_hex() {
    assert_eq!(parse_lsn("1A/4F1A2B60"), Some((0x1A << 32) | 0x4F1A2B60));
    assert_eq!(parse_lsn("0/0"), Some(0));
    assert_eq!(parse_lsn("xyz"), None);
    assert_eq!(parse_lsn("1/G"), None);
}
