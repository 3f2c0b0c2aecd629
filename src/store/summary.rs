//! What `walwatch summary` counts: checkpoints and restartpoints by
//! trigger, events by kind, the log's first and last event — over a
//! [`Filter`] that `walwatch checkpoints` shares.
//!
//! **Events dated ahead.** An event whose log time was more than a tolerance
//! ahead of walwatch's clock when it was read (`event.ahead_us`, see
//! migrations/0007_event_ahead.sql) is kept and counted, but its time is
//! not believed: it is never a log's first or last event here.

use std::time::Duration;

use jiff::Timestamp;
use rusqlite::{params_from_iter, types::Value};
use serde::Serialize;

use super::checkpoints::POINT_TIME;
use super::columns::{opt_from_micros, to_micros};
use super::events::{not_ahead, tolerance_us, RECOGNISED};
use super::{Store, StoreError};
use crate::model::event::Trigger;

/// Which rows a query covers. Times are UTC microseconds, `until` exclusive.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub cluster: Option<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub trigger: Option<Trigger>,
}

impl Filter {
    /// SQL conditions on `cluster c` and the time expression `time`, with their values.
    pub(super) fn conditions(&self, time: &str) -> (String, Vec<Value>) {
        let mut sql = String::new();
        let mut values = Vec::new();
        if let Some(c) = &self.cluster {
            sql.push_str(" AND c.name = ?");
            values.push(Value::Text(c.clone()));
        }
        if let Some(t) = self.since {
            sql.push_str(&format!(" AND {time} >= ?"));
            values.push(Value::Integer(to_micros(t)));
        }
        if let Some(t) = self.until {
            sql.push_str(&format!(" AND {time} < ?"));
            values.push(Value::Integer(to_micros(t)));
        }
        (sql, values)
    }
}

/// Counts for one kind of point (checkpoints or restartpoints).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PointCounts {
    pub started: i64,
    pub completed: i64,
    pub by_trigger: ByTrigger,
}

/// Started points by trigger, in the documented order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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

    fn add(&mut self, trigger: Trigger, n: i64) {
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

    fn point_counts(&self, filter: &Filter, kind: &str) -> Result<PointCounts, StoreError> {
        let (cond, mut values) = filter.conditions(POINT_TIME);
        values.insert(0, Value::Text(kind.into()));
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
        let mut counts = PointCounts::default();
        for row in rows {
            let (trigger, started, completed) = row.map_err(|e| self.sql(e))?;
            counts.started += started;
            counts.completed += completed;
            if let Some(t) = trigger {
                counts.by_trigger.add(t, started);
            }
        }
        Ok(counts)
    }

    fn count_events(&self, filter: &Filter, kind: &str) -> Result<i64, StoreError> {
        let (cond, mut values) = filter.conditions("e.at");
        values.insert(0, Value::Text(kind.into()));
        let sql = format!("SELECT count(*) FROM event e JOIN cluster c ON c.id = e.cluster_id WHERE e.kind = ? {cond}");
        self.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.sql(e))
    }

    fn event_time(&self, filter: &Filter, agg: &str, tolerance: Duration) -> Result<Option<Timestamp>, StoreError> {
        let (cond, mut values) = filter.conditions("e.at");
        values.insert(0, Value::Integer(tolerance_us(tolerance)));
        let sql = format!(
            "SELECT {agg}(e.at) FROM event e JOIN cluster c ON c.id = e.cluster_id
             WHERE {} AND {RECOGNISED} {cond}",
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
