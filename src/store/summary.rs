//! What `walwatch summary` counts: checkpoints and restartpoints by
//! trigger, events by kind, the log's first and last event — over a
//! [`Filter`] (see [`super::filter`]) that `walwatch checkpoints` shares.
//!
//! **Events dated ahead.** An event whose log time was more than a tolerance
//! ahead of walwatch's clock when it was read (`event.ahead_us`, see
//! migrations/0007_event_ahead.sql) is kept and counted, but its time is
//! not believed: it is never a log's first or last event here.

use std::time::Duration;

use jiff::Timestamp;
use rusqlite::{params_from_iter, types::Value};
use serde::Serialize;

use super::columns::{opt_from_micros, to_micros};
use super::filter::{not_ahead, times, tolerance_us, Filter, POINT_TIME, RECOGNISED};
use super::{Store, StoreError};
use crate::model::event::Trigger;

/// Counts for one kind of point (checkpoints or restartpoints).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PointCounts {
    pub started: i64,
    pub completed: i64,
    pub by_trigger: ByTrigger,
}

impl PointCounts {
    fn add(&mut self, trigger: Option<Trigger>, started: i64, completed: i64) {
        self.started += started;
        self.completed += completed;
        if let Some(t) = trigger {
            self.by_trigger.add(t, started);
        }
    }
}

/// One UTC day in µs: the tally's bucket.
const DAY_US: i64 = 86_400_000_000;

/// The whole UTC days `[first, end)` inside the window `[since, until)`
/// (µs), None when it holds none.
fn whole_days(since: Option<i64>, until: Option<i64>) -> Option<(i64, i64)> {
    let first = since.map_or(i64::MIN, |s| s.div_euclid(DAY_US) + i64::from(s.rem_euclid(DAY_US) != 0));
    let end = until.map_or(i64::MAX, |u| u.div_euclid(DAY_US));
    (first < end).then_some((first, end))
}

/// Started points by trigger, in the documented order (`summary`'s and
/// `history`'s keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ByTrigger {
    pub shutdown: i64,
    #[serde(rename = "end-of-recovery")]
    pub end_of_recovery: i64,
    pub wal: i64,
    pub time: i64,
    pub manual: i64,
}

impl ByTrigger {
    pub fn get(&self, trigger: Trigger) -> i64 {
        match trigger {
            Trigger::Shutdown => self.shutdown,
            Trigger::EndOfRecovery => self.end_of_recovery,
            Trigger::Wal => self.wal,
            Trigger::Time => self.time,
            Trigger::Manual => self.manual,
        }
    }

    pub fn total(&self) -> i64 {
        self.shutdown + self.end_of_recovery + self.wal + self.time + self.manual
    }

    /// Both counts added, trigger by trigger.
    pub fn plus(&self, o: &ByTrigger) -> ByTrigger {
        ByTrigger {
            shutdown: self.shutdown + o.shutdown,
            end_of_recovery: self.end_of_recovery + o.end_of_recovery,
            wal: self.wal + o.wal,
            time: self.time + o.time,
            manual: self.manual + o.manual,
        }
    }

    pub(crate) fn add(&mut self, trigger: Trigger, n: i64) {
        let slot = match trigger {
            Trigger::Shutdown => &mut self.shutdown,
            Trigger::EndOfRecovery => &mut self.end_of_recovery,
            Trigger::Wal => &mut self.wal,
            Trigger::Time => &mut self.time,
            Trigger::Manual => &mut self.manual,
        };
        *slot += n;
    }
}

/// What `walwatch summary` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub checkpoints: PointCounts,
    pub restartpoints: PointCounts,
    pub too_frequent: i64,
    pub parameter_changes: i64,
    /// Records the trust rule proved a client session wrote.
    pub rejected: i64,
    /// Lines that look like events but that their file's format or prefix
    /// did not fit (who wrote them cannot be said), in the files read for
    /// the clusters chosen: such a line has no time, so --since/--until do
    /// not apply.
    pub unmatched: i64,
    /// First and last event, leaving out those dated ahead.
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub first_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub last_at: Option<Timestamp>,
    /// Events dated more than the tolerance ahead of walwatch's clock when read (counted above, no first/last).
    pub dated_ahead: i64,
}

impl Store {
    /// The counts cover every stored record; first and last event leave out
    /// those dated more than `tolerance` ahead, which `dated_ahead` counts.
    pub fn summary(&self, filter: &Filter, tolerance: Duration) -> Result<Summary, StoreError> {
        Ok(Summary {
            checkpoints: self.point_counts(filter, "checkpoint")?,
            restartpoints: self.point_counts(filter, "restartpoint")?,
            too_frequent: self.count_events(filter, "too_frequent")?,
            parameter_changes: self.count_events(filter, "parameter_changed")?,
            rejected: self.count_events(filter, "rejected")? + self.count_per_source(filter, "rejected_lines")?,
            unmatched: self.count_per_source(filter, "unmatched")?,
            first_at: self.event_time(filter, "MIN", tolerance)?,
            last_at: self.event_time(filter, "MAX", tolerance)?,
            dated_ahead: self.count_dated_ahead(filter, tolerance)?,
        })
    }

    /// A count kept per source (lines without a time), over the filter's clusters.
    fn count_per_source(&self, filter: &Filter, column: &str) -> Result<i64, StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT COALESCE(SUM(s.{column}), 0) FROM source s JOIN cluster c ON c.id = s.cluster_id
                     WHERE ?1 IS NULL OR c.name = ?1"
                ),
                [filter.cluster.as_deref()],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    /// Counted from the tally (migrations/0009_scale.sql) for the whole
    /// UTC days of the window and from the rows themselves for the partial
    /// days at its ends: a million rows are never read one by one.
    fn point_counts(&self, filter: &Filter, kind: &str) -> Result<PointCounts, StoreError> {
        let (since, until) = (filter.since.map(to_micros), filter.until.map(to_micros));
        let mut counts = PointCounts::default();
        match whole_days(since, until) {
            Some((first, end)) => {
                self.tally_counts(filter, kind, first, end, &mut counts)?;
                if let Some(since) = since {
                    self.row_counts(filter, kind, Some(since), Some(first.saturating_mul(DAY_US)), &mut counts)?;
                }
                if let Some(until) = until {
                    self.row_counts(filter, kind, Some(end.saturating_mul(DAY_US)), Some(until), &mut counts)?;
                }
            }
            None => self.row_counts(filter, kind, since, until, &mut counts)?,
        }
        Ok(counts)
    }

    /// Adds the tallied rows of days `[first, end)`.
    fn tally_counts(
        &self,
        filter: &Filter,
        kind: &str,
        first: i64,
        end: i64,
        counts: &mut PointCounts,
    ) -> Result<(), StoreError> {
        let (cond, cluster) = filter.cluster_condition();
        let mut values = vec![Value::Text(kind.into()), Value::Integer(first), Value::Integer(end)];
        values.extend(cluster);
        let sql = format!(
            "SELECT t.trigger, sum(t.started), sum(t.completed)
             FROM point_tally t JOIN cluster c ON c.id = t.cluster_id
             WHERE t.kind = ? AND t.day >= ? AND t.day < ? {cond} GROUP BY t.trigger"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params_from_iter(values), |r| {
                Ok((Trigger::parse(&r.get::<_, String>(0)?), r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .map_err(|e| self.sql(e))?;
        for row in rows {
            let (trigger, started, completed) = row.map_err(|e| self.sql(e))?;
            counts.add(trigger, started, completed);
        }
        Ok(())
    }

    /// Adds the rows themselves with time in `[since, until)`.
    fn row_counts(
        &self,
        filter: &Filter,
        kind: &str,
        since: Option<i64>,
        until: Option<i64>,
        counts: &mut PointCounts,
    ) -> Result<(), StoreError> {
        let (mut cond, cluster) = filter.cluster_condition();
        let (time, bounds) = times(POINT_TIME, since, until);
        cond.push_str(&time);
        let mut values = vec![Value::Text(kind.into())];
        values.extend(cluster);
        values.extend(bounds);
        let sql = format!(
            "SELECT k.trigger, count(k.start_event_id), count(k.complete_event_id)
             FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
             WHERE k.kind = ? {cond} GROUP BY k.trigger"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params_from_iter(values), |r| {
                Ok((r.get::<_, Option<Trigger>>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .map_err(|e| self.sql(e))?;
        for row in rows {
            let (trigger, started, completed) = row.map_err(|e| self.sql(e))?;
            counts.add(trigger, started, completed);
        }
        Ok(())
    }

    /// Counted cluster by cluster, each a range of the event_cluster_kind_at
    /// index (an event index without the cluster first would cost a
    /// second copy of the event table's keys).
    fn count_events(&self, filter: &Filter, kind: &str) -> Result<i64, StoreError> {
        let (time, mut values) = filter.time_conditions("e.at");
        values.insert(0, Value::Text(kind.into()));
        let (cond, cluster) = filter.cluster_condition();
        values.extend(cluster);
        let sql = format!(
            "SELECT IFNULL(sum((SELECT count(*) FROM event e WHERE e.cluster_id = c.id AND e.kind = ? {time})), 0)
             FROM cluster c WHERE 1 = 1 {cond}"
        );
        self.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.sql(e))
    }

    /// The first (`MIN`) or last (`MAX`) recognised event not dated ahead:
    /// the first or last such event of each cluster and kind, each found at
    /// one end of an index range, the kinds themselves found by skipping
    /// from one to the next in the same index.
    fn event_time(&self, filter: &Filter, agg: &str, tolerance: Duration) -> Result<Option<Timestamp>, StoreError> {
        let order = if agg == "MIN" { "ASC" } else { "DESC" };
        let (cond, mut values) = filter.cluster_condition();
        values.push(Value::Integer(tolerance_us(tolerance)));
        let (time, bounds) = filter.time_conditions("e.at");
        values.extend(bounds);
        let sql = format!(
            "WITH RECURSIVE kinds(cluster_id, kind) AS (
                 SELECT c.id, (SELECT min(e.kind) FROM event e WHERE e.cluster_id = c.id)
                 FROM cluster c WHERE 1 = 1 {cond}
                 UNION ALL
                 SELECT cluster_id, (SELECT min(e.kind) FROM event e WHERE e.cluster_id = kinds.cluster_id AND e.kind > kinds.kind)
                 FROM kinds WHERE kind IS NOT NULL
             )
             SELECT {agg}((SELECT e.at FROM event e
                           WHERE e.cluster_id = kinds.cluster_id AND e.kind = kinds.kind AND {} AND {RECOGNISED} {time}
                           ORDER BY e.at {order} LIMIT 1))
             FROM kinds WHERE kind IS NOT NULL",
            not_ahead("?")
        );
        let v: Option<i64> =
            self.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.sql(e))?;
        Ok(opt_from_micros(v))
    }

    fn count_dated_ahead(&self, filter: &Filter, tolerance: Duration) -> Result<i64, StoreError> {
        let (cond, mut values) = filter.conditions("e.at");
        values.insert(0, Value::Integer(tolerance_us(tolerance)));
        let sql = format!(
            "SELECT count(*) FROM event e JOIN cluster c ON c.id = e.cluster_id
             WHERE e.ahead_us > ? AND {RECOGNISED} {cond}"
        );
        self.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.sql(e))
    }

    /// Names of all clusters in the store.
    pub fn clusters(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT name FROM cluster ORDER BY name").map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
pub(crate) mod test_store {
    use std::path::Path;

    use jiff::Timestamp;

    use crate::frame::Pos;
    use crate::model::event::{Event, EventBody, PointKind};
    use crate::store::{SourceSpec, Store};

    /// One event: its log time, what it is, and how far ahead of walwatch's
    /// clock (µs) it is recorded as having been when read.
    pub struct Line {
        pub at: Timestamp,
        pub body: EventBody,
        pub ahead_us: Option<i64>,
    }

    pub fn start(at: &str, flag: &str, ahead_us: Option<i64>) -> Line {
        let body = EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec![flag.into()] };
        Line { at: at.parse().unwrap(), body, ahead_us }
    }

    /// Cluster "main" with `lines`, stored through the writers' own path
    /// (commit_batch); `ahead_us` is then set exactly, as no test can read
    /// a line at a chosen instant of the real clock.
    pub fn store(dir: &Path, lines: Vec<Line>) -> Store {
        let mut store = Store::open(&dir.join("w.db")).unwrap();
        let cluster_id = store.cluster_id("main").unwrap();
        let spec =
            SourceSpec { path: "/log/postgresql.log", meta: None, format: crate::frame::Format::Stderr, prefix: None };
        let (mut row, _) = store.source_for(cluster_id, b"2026-11-22 10:00:00.000 UTC [7] LOG:  a\n", &spec).unwrap();
        let events: Vec<Event> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| Event {
                at: l.at,
                pid: Some(7),
                offset: i as u64,
                line: i as u64 + 1,
                nth: 0,
                body: l.body.clone(),
            })
            .collect();
        let end = Pos { offset: lines.len() as u64, line: lines.len() as u64 + 1 };
        store.commit_batch(&mut row, &spec, &events, end).unwrap();
        for (i, l) in lines.iter().enumerate() {
            store
                .conn
                .execute("UPDATE event SET ahead_us = ?1 WHERE offset = ?2", rusqlite::params![l.ahead_us, i as i64])
                .unwrap();
        }
        store
    }
}

#[cfg(test)]
mod tests {
    use super::test_store::{start, store, Line};
    use super::*;
    use jiff::SignedDuration;

    use crate::model::event::EventBody;
    use crate::store::{DatedAhead, LogTimes};

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
                Line {
                    at: at("2026-11-22T10:01:00Z"),
                    body: EventBody::ServerReady { read_only: false },
                    ahead_us: None,
                },
                start("2026-11-22T10:02:00Z", "wal", Some(EXACTLY)),
                start("2099-01-01T00:00:00Z", "wal", Some(EXACTLY + 1)),
            ],
        );
        let times = s.log_times("main", TOLERANCE).unwrap();
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
        let ahead = s.dated_ahead("main", TOLERANCE, read).unwrap().unwrap();
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
        assert_eq!(s.dated_ahead("main", TOLERANCE, read + SignedDuration::from_micros(1)).unwrap(), None);
        // A larger tolerance takes it back; a smaller one flags the other one too.
        assert_eq!(s.log_times("main", TOLERANCE * 2).unwrap().newest, Some(at("2099-01-01T00:00:00Z")));
        let small = s.dated_ahead("main", Duration::from_secs(1), Timestamp::MIN).unwrap().unwrap();
        assert_eq!((small.count, small.most_ahead_at), (2, at("2099-01-01T00:00:00Z")));
        assert_eq!(s.log_times("main", Duration::from_secs(1)).unwrap().newest, Some(at("2026-11-22T10:01:00Z")));
        assert_eq!(s.log_times("other", TOLERANCE).unwrap(), LogTimes::default());
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
        let sum = s.summary(&Filter::default(), TOLERANCE).unwrap();
        assert_eq!((sum.checkpoints.started, sum.checkpoints.by_trigger.wal), (3, 2));
        assert_eq!(sum.first_at, Some(at("2026-11-22T10:00:00Z")));
        assert_eq!(sum.last_at, Some(at("2026-11-22T10:05:00Z")));
        assert_eq!(sum.dated_ahead, 1);
        let until = Filter { until: Some(at("2030-01-01T00:00:00Z")), ..Filter::default() };
        assert_eq!(s.summary(&until, TOLERANCE).unwrap().dated_ahead, 0);
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
               (1, 1, 0, 1, 1799999999000000, 'checkpoint_start'),
               (1, 1, 1, 2, 4070908800000000, 'checkpoint_start');",
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
        assert_eq!(s.log_times("main", TOLERANCE).unwrap().newest, Some(at("2027-01-15T07:59:59Z")));
    }

    #[test]
    fn a_line_read_as_it_is_written_is_not_ahead() {
        // The writers' own measure: an event dated in the past gets no ahead_us.
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path(), vec![start("2026-11-22T10:00:00Z", "time", None)]);
        let cluster_id = s.cluster_id("main").unwrap();
        let spec = crate::store::SourceSpec {
            path: "/log/b.log",
            meta: None,
            format: crate::frame::Format::Stderr,
            prefix: None,
        };
        let (mut row, _) = s.source_for(cluster_id, b"2026-11-22 10:00:00.000 UTC [7] LOG:  b\n", &spec).unwrap();
        let soon = Timestamp::now() + SignedDuration::from_hours(1);
        let body = EventBody::ServerReady { read_only: false };
        let events = [
            crate::model::event::Event { at: soon, pid: None, offset: 0, line: 1, nth: 0, body: body.clone() },
            crate::model::event::Event { at: Timestamp::now(), pid: None, offset: 1, line: 2, nth: 0, body },
        ];
        s.commit_batch(&mut row, &spec, &events, crate::frame::Pos { offset: 2, line: 3 }).unwrap();
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
}

/// The tally (migrations/0009_scale.sql) against the rows it counts, on
/// stores imported from real PostgreSQL logs.
#[cfg(test)]
mod tally_tests {
    use jiff::Timestamp;

    use super::{whole_days, Filter, DAY_US};
    use crate::store::Store;

    const NOISE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
    const CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log";
    const AFTER_CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log";

    /// Imports each `(cluster, file)` in the order given into a new store.
    fn import(files: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        for (cluster, path) in files {
            let cluster = store.cluster_id(cluster).unwrap();
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
            ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
        }
        (dir, store)
    }

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
                    count(start_event_id), count(complete_event_id)
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
        let sum = store.summary(&Filter::default(), std::time::Duration::from_secs(300)).unwrap();
        let started: i64 = rows.iter().filter(|r| r.2 == "checkpoint").map(|r| r.4).sum();
        assert_eq!(sum.checkpoints.started, started);
    }

    /// An import commits its batches without foreign-key checks (see
    /// `Store::use_import_settings`): what it stored still satisfies them,
    /// and its connection has them back on for whatever it does next.
    #[test]
    fn an_import_keeps_its_references_and_turns_the_checks_back_on() {
        let (_dir, store) = import(&[("a", AFTER_CRASH), ("a", CRASH), ("b", NOISE)]);
        let on: i64 = store.conn.pragma_query_value(None, "foreign_keys", |r| r.get(0)).unwrap();
        assert_eq!(on, 1);
        let broken: i64 =
            store.conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).unwrap();
        assert_eq!(broken, 0);
        assert!(store.conn.query_row("SELECT count(*) FROM checkpoint", [], |r| r.get::<_, i64>(0)).unwrap() > 0);
    }

    #[test]
    fn forgetting_a_source_takes_its_rows_out_of_the_tally() {
        let (_dir, mut store) = import(&[("a", CRASH), ("a", AFTER_CRASH)]);
        let first = store.known_sources(Some("a")).unwrap()[0].id;
        store.forget_sources(&[first]).unwrap();
        let (tally, rows) = recount(&store);
        assert_eq!(tally, rows);
        // Every row left has a half from the other file only.
        assert!(!rows.is_empty());
    }

    /// The event figures (found cluster by cluster and kind by kind) equal
    /// the plain queries they replace, for every window and cluster.
    #[test]
    fn event_figures_equal_the_plain_queries() {
        use rusqlite::params_from_iter;
        let (_dir, store) = import(&[("a", CRASH), ("a", AFTER_CRASH), ("b", NOISE)]);
        // One event dated ahead, one rejected record: neither is a first or last event.
        store
            .conn
            .execute_batch("UPDATE event SET ahead_us = 400000000 WHERE id = (SELECT max(id) FROM event)")
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
                    let plain = |select: &str, pre: Option<i64>| -> Option<i64> {
                        let sql = format!(
                            "SELECT {select} FROM event e JOIN cluster c ON c.id = e.cluster_id WHERE 1 = 1 {cond}"
                        );
                        let mut v = values.clone();
                        if let Some(p) = pre {
                            v.insert(0, rusqlite::types::Value::Integer(p));
                        }
                        store.conn.query_row(&sql, params_from_iter(v), |r| r.get(0)).unwrap()
                    };
                    for kind in ["checkpoint_start", "too_frequent", "rejected", "server_start"] {
                        let want = plain(&format!("count(*) FILTER (WHERE e.kind = '{kind}')"), None).unwrap();
                        assert_eq!(
                            store.count_events(&filter, kind).unwrap(),
                            want,
                            "{kind} {cluster:?} {since:?} {until:?}"
                        );
                        seen += want;
                    }
                    for agg in ["MIN", "MAX"] {
                        let select = format!(
                            "{agg}(e.at) FILTER (WHERE e.kind <> 'rejected' AND e.id NOT IN (SELECT a.id FROM event a WHERE a.ahead_us > ?))"
                        );
                        let want = plain(&select, Some(300_000_000)).map(|us| Timestamp::from_microsecond(us).unwrap());
                        assert_eq!(
                            store.event_time(&filter, agg, tolerance).unwrap(),
                            want,
                            "{agg} {cluster:?} {since:?} {until:?}"
                        );
                    }
                }
            }
        }
        assert!(seen > 0);
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
                        let got = store.point_counts(&filter, kind).unwrap();
                        let mut want = super::PointCounts::default();
                        let (lo, hi) = (since.map(|t| t.as_microsecond()), until.map(|t| t.as_microsecond()));
                        store.row_counts(&filter, kind, lo, hi, &mut want).unwrap();
                        assert_eq!(got, want, "{cluster:?} {since:?} {until:?} {kind}");
                    }
                }
            }
        }
    }
}
