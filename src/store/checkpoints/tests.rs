//! Checkpoint rows read back, on stores imported from real PostgreSQL logs:
//! the columns each query reads, the indexes it walks, and the day tally
//! against the rows it counts (migrations/0009_scale.sql).

use jiff::Timestamp;

use super::{
    whole_days, CompleteStats, CHECKPOINT_COLUMNS, DAY_US, LAST_CHECKPOINT_BEFORE, POINT_STARTS, RECENT_STARTS,
    TRUNCATED,
};
use crate::store::shared_tests::{import, AFTER_CRASH, CRASH, NOISE};
use crate::store::{Filter, Store};

/// (cluster id, day, kind, trigger, started, completed).
type TallyRow = (i64, i64, String, String, i64, i64);

/// The tally, zero rows left out, and the same recounted from the checkpoint rows.
fn recount(store: &Store) -> (Vec<TallyRow>, Vec<TallyRow>) {
    let read = |sql: &str| {
        let mut stmt = store.conn.prepare(sql).unwrap();
        let rows =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))).unwrap();
        rows.collect::<Result<Vec<_>, _>>().unwrap()
    };
    let tally = read(
        "SELECT cluster_id, day, kind, trigger, started, completed FROM point_tally
         WHERE started <> 0 OR completed <> 0 ORDER BY 1, 2, 3, 4",
    );
    let rows = read(
        "SELECT cluster_id, COALESCE(started_at, completed_at) / 86400000000, kind, IFNULL(trigger, ''),
                count(start_source_id), count(complete_source_id)
         FROM checkpoint GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
    );
    (tally, rows)
}

#[test]
fn the_tally_counts_what_the_rows_hold_whatever_the_import_order() {
    // Newest file first: completes wait for their starts, which then
    // claim them (the update trigger moves counts between days/triggers).
    let (_dir, store) = import(&[("a", AFTER_CRASH), ("a", CRASH), ("b", NOISE)]);
    let (tally, rows) = recount(&store);
    assert!(!rows.is_empty());
    assert_eq!(tally, rows);
    let counted = store.checkpoints().counts(&Filter::default(), "checkpoint").unwrap();
    let started: i64 = rows.iter().filter(|r| r.2 == "checkpoint").map(|r| r.4).sum();
    assert_eq!(counted.started, started);
}

/// An import commits its batches without foreign-key checks (see
/// `Store::use_import_settings`): what it stored still satisfies them,
/// and its connection has them back on for whatever it does next.
#[test]
fn an_import_keeps_its_references_and_turns_the_checks_back_on() {
    let (_dir, store) = import(&[("a", AFTER_CRASH), ("a", CRASH), ("b", NOISE)]);
    let on: i64 = store.conn.pragma_query_value(None, "foreign_keys", |r| r.get(0)).unwrap();
    assert_eq!(on, 1);
    let broken: i64 = store.conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).unwrap();
    assert_eq!(broken, 0);
    assert!(store.conn.query_row("SELECT count(*) FROM checkpoint", [], |r| r.get::<_, i64>(0)).unwrap() > 0);
}

#[test]
fn forgetting_a_source_takes_its_rows_out_of_the_tally() {
    let (_dir, mut store) = import(&[("a", CRASH), ("a", AFTER_CRASH)]);
    let first = store.sources().known(Some("a")).unwrap()[0].id;
    store.sources_mut().forget(&[first]).unwrap();
    let (tally, rows) = recount(&store);
    assert_eq!(tally, rows);
    // Every row left has a half from the other file only.
    assert!(!rows.is_empty());
}

#[test]
fn whole_days_are_those_inside_the_window() {
    let d = DAY_US;
    assert_eq!(whole_days(None, None), Some((i64::MIN, i64::MAX)));
    assert_eq!(whole_days(Some(0), Some(2 * d)), Some((0, 2)));
    assert_eq!(whole_days(Some(1), Some(2 * d)), Some((1, 2)));
    assert_eq!(whole_days(Some(1), Some(2 * d - 1)), None);
    assert_eq!(whole_days(Some(d), Some(2 * d)), Some((1, 2)));
    assert_eq!(whole_days(Some(-1), None), Some((0, i64::MAX)));
    assert_eq!(whole_days(None, Some(-1)), Some((i64::MIN, -1)));
    assert_eq!(whole_days(Some(5), Some(5)), None);
}

/// Windows that end inside a day, span days, or hold none whole: the
/// summary's counts equal the rows counted one by one.
#[test]
fn summary_counts_equal_the_rows_for_any_window() {
    let (_dir, store) = import(&[("a", CRASH), ("a", AFTER_CRASH), ("b", NOISE)]);
    // Spread the rows over days so that windows cut through several.
    store
        .conn
        .execute_batch(
            "UPDATE checkpoint SET started_at = started_at + (id % 5) * 86400000000 - 43200000000,
                                   completed_at = completed_at + (id % 5) * 86400000000 - 43200000000",
        )
        .unwrap();
    let t = |s: &str| s.parse::<Timestamp>().unwrap();
    let bounds = [
        None,
        Some(t("2026-11-21T00:00:00Z")),
        Some(t("2026-11-22T08:15:00Z")),
        Some(t("2026-11-23T00:00:00Z")),
        Some(t("2026-11-24T13:00:00.000001Z")),
        Some(t("2026-11-27T00:00:00Z")),
    ];
    for cluster in [None, Some("a"), Some("b")] {
        for since in bounds {
            for until in bounds {
                let filter = Filter { cluster: cluster.map(String::from), since, until, trigger: None };
                for kind in ["checkpoint", "restartpoint"] {
                    let got = store.checkpoints().counts(&filter, kind).unwrap();
                    let mut want = super::PointCounts::default();
                    let (lo, hi) = (since.map(|t| t.as_microsecond()), until.map(|t| t.as_microsecond()));
                    store.checkpoints().row_counts(&filter, kind, lo, hi, &mut want).unwrap();
                    assert_eq!(got, want, "{cluster:?} {since:?} {until:?} {kind}");
                }
            }
        }
    }
}

#[test]
fn the_checkpoint_columns_are_read_where_they_are_selected() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("c.db")).unwrap();
    let sql = format!("SELECT {} FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id", *CHECKPOINT_COLUMNS);
    let stmt = store.conn.prepare(&sql).unwrap();
    let names: Vec<&str> = stmt.column_names();
    let head = ["name", "kind", "trigger", "flags", "started_at", "completed_at"];
    assert_eq!(names, [&head[..], CompleteStats::FIGURES, &["truncated"]].concat());
    assert_eq!(CompleteStats::FIGURES.len(), 16);
    assert_eq!((CompleteStats::FIGURES[0], CompleteStats::FIGURES[15]), ("buffers_written", "redo_lsn"));
}

/// A start line's search for a complete waiting for it is a range of
/// the few waiting rows, not a read of every row of its pid.
#[test]
fn a_start_finds_a_waiting_complete_through_the_partial_index() {
    let (_dir, store) = import(&[("b", NOISE)]);
    let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {}", super::WAITING_COMPLETE)).unwrap();
    let plan: Vec<String> = stmt
        .query_map(rusqlite::params![1, "checkpoint", 7, 0, 1, 1, 0], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(plan.iter().any(|step| step.contains("checkpoint_waiting")), "{plan:?}");
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
}

/// point_start reads its columns by position: both queries must name
/// them in that order.
#[test]
fn the_start_queries_select_the_columns_point_start_reads_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(&dir.path().join("w.db")).unwrap();
    for sql in [POINT_STARTS, RECENT_STARTS] {
        let stmt = store.conn.prepare(sql).unwrap();
        assert_eq!(stmt.column_names(), ["kind", "started_at", "trigger", "distance_kb", "wal_files_added"], "{sql}");
    }
}

/// The cycles the model reads, on a store imported from a real log:
/// the same starts as the definition (the start before the window, then
/// every start in it, in time order), read through the index of
/// the point time (checkpoint_cluster_time, migrations/0021_compact.sql),
/// never a scan.
#[test]
fn point_starts_are_the_window_and_the_start_before_it_through_the_index() {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    use crate::store::Store;
    use jiff::Timestamp;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    for (cluster, file) in [
        ("a", "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log"),
        ("a", "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log"),
        ("b", "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log"),
    ] {
        let id = store.clusters_mut().find_or_create(cluster).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        ingest::import(&mut store, id, path.to_str().unwrap(), &opts, &time).unwrap();
    }
    let all = |cluster: &str| -> Vec<(i64, i64)> {
        let mut stmt = store
            .conn
            .prepare(
                "SELECT k.started_at, k.id FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
                 WHERE c.name = ?1 AND k.started_at IS NOT NULL",
            )
            .unwrap();
        let mut v: Vec<(i64, i64)> =
            stmt.query_map([cluster], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
        v.sort();
        v
    };
    let t = |s: &str| s.parse::<Timestamp>().unwrap().as_microsecond();
    let mut checked = 0;
    for cluster in ["a", "b", "none"] {
        let starts = all(cluster);
        for (since, until) in [
            (t("2026-11-22T00:00:00Z"), t("2026-11-23T00:00:00Z")),
            (t("2026-11-22T08:14:00Z"), t("2026-11-22T08:18:00Z")),
            (t("2026-11-22T08:09:05Z"), t("2026-11-22T08:09:30Z")),
            (t("2026-11-23T00:00:00Z"), t("2026-11-24T00:00:00Z")),
        ] {
            let lo = starts.iter().map(|s| s.0).filter(|&s| s < since).max().unwrap_or(since);
            let want: Vec<i64> = starts.iter().filter(|s| s.0 >= lo && s.0 < until).map(|s| s.0).collect();
            let got: Vec<i64> = store
                .checkpoints()
                .point_starts(cluster, since, until)
                .unwrap()
                .iter()
                .map(|p| p.started_at.as_microsecond())
                .collect();
            assert_eq!(got, want, "{cluster} {since} {until}");
            checked += got.len();
        }
    }
    assert!(checked > 50, "{checked}");
    let plan: Vec<String> = {
        let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {POINT_STARTS}")).unwrap();
        let rows = stmt.query_map(rusqlite::params!["a", 0, 1], |r| r.get::<_, String>(3)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert!(plan.iter().all(|step| !step.starts_with("SCAN k")), "{plan:?}");
    assert!(plan.iter().any(|step| step.contains("checkpoint_cluster_time")), "{plan:?}");
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
    let plan: Vec<String> = {
        let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {RECENT_STARTS}")).unwrap();
        let rows = stmt.query_map(rusqlite::params!["a", 0, 10], |r| r.get::<_, String>(3)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert!(plan.iter().any(|step| step.contains("checkpoint_cluster_time")), "{plan:?}");
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
    // The newest starts, oldest first, as the settings inference reads them.
    let recent = store.checkpoints().recent_starts("b", None, 5).unwrap();
    let newest: Vec<i64> = all("b").iter().rev().take(5).rev().map(|s| s.0).collect();
    assert_eq!(recent.points.iter().map(|p| p.started_at.as_microsecond()).collect::<Vec<_>>(), newest);
}

/// A store from before migrations/0020_truncated.sql keeps its rows, each
/// read back as a whole complete line's (truncated = 0), and counts none.
#[test]
fn the_migration_marks_every_older_row_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    for sql in &crate::store::MIGRATIONS[..19] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 19).unwrap();
    conn.execute_batch(
        "INSERT INTO cluster(id, name) VALUES (1, 'main');
         INSERT INTO checkpoint(cluster_id, kind, pid, pairable, started_at, completed_at, trigger, flags,
                                buffers_written, write_s)
           VALUES (1, 'checkpoint', 7, 0, 1795335338417000, 1795335338715000, 'wal', 'wal', 25, 0.192);",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    let mut rows = Vec::new();
    store
        .checkpoints()
        .each_marked(&Filter::default(), |row, truncated| {
            rows.push((row.buffers_written, row.write_s, truncated));
            Ok::<(), crate::store::StoreError>(())
        })
        .unwrap();
    assert_eq!(rows, [(Some(25), Some(0.192), false)]);
    assert_eq!(store.checkpoints().truncated(&Filter::default()).unwrap(), 0);
}

/// `summary`'s count of rows read from a cut line reads the partial index
/// of those rows, with or without a cluster and a time range, never every
/// checkpoint row (migrations/0021_compact.sql).
#[test]
fn the_truncated_rows_are_read_through_their_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).unwrap();
    for cond in ["", " AND c.name = ?", " AND COALESCE(k.started_at, k.completed_at) >= ?"] {
        let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {TRUNCATED} {cond}")).unwrap();
        let values: Vec<rusqlite::types::Value> = if cond.is_empty() { vec![] } else { vec![0.into()] };
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(values), |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(plan.iter().any(|step| step.contains("checkpoint_truncated")), "{cond}: {plan:?}");
    }
}

/// The checkpoint a what-if replay starts from: the last one with a start
/// line before the window, as the whole listing before it would end, found
/// by one backward step of checkpoint_cluster_time.
#[test]
fn the_last_checkpoint_before_is_the_listings_last() {
    let (_dir, store) = import(&[("a", CRASH), ("a", AFTER_CRASH), ("b", NOISE)]);
    let mut checked = 0;
    for cluster in ["a", "b", "none"] {
        let all = store.checkpoints().list(&Filter { cluster: Some(cluster.into()), ..Filter::default() }).unwrap();
        let mut untils: Vec<Timestamp> = all.iter().filter_map(|r| r.started_at.or(r.completed_at)).collect();
        untils.extend(["2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"].map(|t| t.parse::<Timestamp>().unwrap()));
        for until in untils {
            let want = all
                .iter()
                .filter(|r| r.kind == crate::model::event::PointKind::Checkpoint && r.started_at.is_some())
                .rfind(|r| r.started_at.or(r.completed_at).is_some_and(|t| t < until));
            let got = store.checkpoints().last_checkpoint_before(cluster, until).unwrap();
            assert_eq!(got.as_ref(), want, "{cluster} {until}");
            checked += usize::from(got.is_some());
        }
    }
    assert!(checked > 30, "{checked}");
    let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {}", *LAST_CHECKPOINT_BEFORE)).unwrap();
    let plan: Vec<String> =
        stmt.query_map(rusqlite::params!["a", 0], |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect();
    assert!(plan.iter().any(|step| step.contains("checkpoint_cluster_time")), "{plan:?}");
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
}

/// A start stored in one batch and its complete in a later one (the daemon
/// reads them minutes apart): the row completed is above every id read
/// before, so the metrics reading completions by id find it, once; and
/// each line keeps its own place.
#[test]
fn a_row_completed_later_is_read_as_completed_after_any_earlier_id() {
    use crate::frame::Pos;
    use crate::model::event::{Event, EventBody, PointKind};
    use crate::store::SourceSpec;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let cluster_id = store.clusters_mut().find_or_create("main").unwrap();
    let spec = SourceSpec { path: "/log/pg.log", meta: None, format: crate::frame::Format::Stderr, prefix: None };
    let (mut row, _) =
        store.sources_mut().find_or_create(cluster_id, b"2026-11-22 10:00:00.000 UTC [7] LOG:  a\n", &spec).unwrap();
    let at = |s: &str| s.parse::<Timestamp>().unwrap();
    let line = |offset: u64, at: Timestamp, body: EventBody| Event {
        at,
        pid: Some(7),
        offset,
        line: offset + 1,
        nth: 0,
        body,
    };
    let start = |offset, t| {
        line(offset, at(t), EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec!["time".into()] })
    };
    let stats = CompleteStats { write_s: 1.5, distance_kb: Some(4096), ..CompleteStats::default() };
    let complete = |offset, t| {
        line(offset, at(t), EventBody::PointComplete { kind: PointKind::Checkpoint, stats: Box::new(stats.clone()) })
    };
    let commit = |store: &mut Store, row: &mut crate::store::SourceRow, events: &[Event], end: u64| {
        crate::ingest::pairing::commit(store, row, &spec, events, Pos { offset: end, line: end + 1 }).unwrap()
    };
    assert_eq!(
        commit(&mut store, &mut row, &[start(0, "2026-11-22T10:00:00Z"), complete(100, "2026-11-22T10:00:02Z")], 200),
        2
    );
    assert_eq!(commit(&mut store, &mut row, &[start(200, "2026-11-22T10:05:00Z")], 300), 1);
    let read_before = store.checkpoints().last_row().unwrap().unwrap();
    let first: Vec<i64> = store.checkpoints().completed_after(0).unwrap().iter().map(|c| c.id).collect();
    assert_eq!(first.len(), 1, "the start-only row is not completed: {first:?}");

    assert_eq!(commit(&mut store, &mut row, &[complete(300, "2026-11-22T10:05:03Z")], 400), 1);
    let after = store.checkpoints().completed_after(read_before).unwrap();
    assert_eq!(after.len(), 1);
    assert!(after[0].id > read_before);
    assert_eq!((after[0].write_s, after[0].distance_kb), (Some(1.5), Some(4096)));
    let places: Vec<(i64, i64, i64, i64, i64)> = store
        .conn
        .prepare("SELECT id, start_offset, start_line, complete_offset, complete_line FROM checkpoint ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(places, [(first[0], 0, 1, 100, 101), (after[0].id, 200, 201, 300, 301)]);
    // The tally counts two starts and two completes, not the row twice.
    assert_eq!(recount(&store).0.iter().map(|r| (r.4, r.5)).collect::<Vec<_>>(), [(2, 2)]);
    // Read again (a rewind, another process): nothing is stored twice.
    assert_eq!(
        commit(&mut store, &mut row, &[start(200, "2026-11-22T10:05:00Z"), complete(300, "2026-11-22T10:05:03Z")], 400),
        0
    );
}
