//! Reading the log's history: checkpoints and their summary (the CLI), and
//! what the alert rules look at — the log times their windows come from,
//! the points and too-frequent warnings in a window, the log's growth.
//!
//! **Events dated ahead.** An event whose log time was more than a tolerance
//! ahead of walwatch's clock when it was read (`event.ahead_us`, see
//! migrations/0007_event_ahead.sql) is kept and counted, but its time is
//! not believed: it is never a log's first, last or newest event here.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rusqlite::{params, params_from_iter, types::Value, Row};
use serde::Serialize;

use super::columns::{from_micros, opt_from_micros, to_micros};
use super::{Store, StoreError};
use crate::model::event::{PointKind, Trigger};

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
    fn conditions(&self, time: &str) -> (String, Vec<Value>) {
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

/// One checkpoint or restartpoint, as `walwatch checkpoints` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointRow {
    pub cluster: String,
    pub kind: PointKind,
    pub trigger: Option<Trigger>,
    pub flags: Vec<String>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub started_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub completed_at: Option<Timestamp>,
    pub buffers_written: Option<i64>,
    pub buffers_pct: Option<f64>,
    pub slru_buffers_written: Option<i64>,
    pub wal_files_added: Option<i64>,
    pub wal_files_removed: Option<i64>,
    pub wal_files_recycled: Option<i64>,
    pub write_s: Option<f64>,
    pub sync_s: Option<f64>,
    pub total_s: Option<f64>,
    pub sync_files: Option<i64>,
    pub sync_longest_s: Option<f64>,
    pub sync_average_s: Option<f64>,
    pub distance_kb: Option<i64>,
    pub estimate_kb: Option<i64>,
    pub lsn: Option<String>,
    pub redo_lsn: Option<String>,
}

const CHECKPOINT_COLUMNS: &str = "c.name, k.kind, k.trigger, k.flags, k.started_at, k.completed_at,
    k.buffers_written, k.buffers_pct, k.slru_buffers_written, k.wal_files_added, k.wal_files_removed,
    k.wal_files_recycled, k.write_s, k.sync_s, k.total_s, k.sync_files, k.sync_longest_s, k.sync_average_s,
    k.distance_kb, k.estimate_kb, k.lsn, k.redo_lsn";

fn checkpoint_row(r: &Row<'_>) -> rusqlite::Result<CheckpointRow> {
    let flags: Option<String> = r.get("flags")?;
    Ok(CheckpointRow {
        cluster: r.get("name")?,
        kind: r.get("kind")?,
        trigger: r.get("trigger")?,
        flags: flags.map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default(),
        started_at: opt_from_micros(r.get("started_at")?),
        completed_at: opt_from_micros(r.get("completed_at")?),
        buffers_written: r.get("buffers_written")?,
        buffers_pct: r.get("buffers_pct")?,
        slru_buffers_written: r.get("slru_buffers_written")?,
        wal_files_added: r.get("wal_files_added")?,
        wal_files_removed: r.get("wal_files_removed")?,
        wal_files_recycled: r.get("wal_files_recycled")?,
        write_s: r.get("write_s")?,
        sync_s: r.get("sync_s")?,
        total_s: r.get("total_s")?,
        sync_files: r.get("sync_files")?,
        sync_longest_s: r.get("sync_longest_s")?,
        sync_average_s: r.get("sync_average_s")?,
        distance_kb: r.get("distance_kb")?,
        estimate_kb: r.get("estimate_kb")?,
        lsn: r.get("lsn")?,
        redo_lsn: r.get("redo_lsn")?,
    })
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
    pub rejected: i64,
    /// First and last event, leaving out those dated ahead.
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub first_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub last_at: Option<Timestamp>,
    /// Events dated more than the tolerance ahead of walwatch's clock when read (counted above, no first/last).
    pub dated_ahead: i64,
}

/// The log times the alert rules use, leaving out the events dated ahead.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LogTimes {
    pub oldest: Option<Timestamp>,
    pub newest: Option<Timestamp>,
    /// The newest checkpoint or restartpoint line (start or complete).
    pub last_point_line: Option<Timestamp>,
    /// The newest server start (`starting PostgreSQL`, `ready to accept connections`).
    pub last_start: Option<Timestamp>,
}

/// Events dated more than the tolerance ahead of walwatch's clock when it read them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DatedAhead {
    pub count: i64,
    /// The event most ahead: its log time and when it was read.
    pub most_ahead_at: Timestamp,
    pub most_ahead_read_at: Timestamp,
    /// When the last of them was read.
    pub latest_read_at: Timestamp,
}

impl DatedAhead {
    /// How far the event most ahead was ahead.
    pub(crate) fn max_ahead(&self) -> SignedDuration {
        self.most_ahead_at.duration_since(self.most_ahead_read_at)
    }
}

/// Recognised events only: a rejected record (a client's look-alike line)
/// never counts as an event, here as in the summary.
const RECOGNISED: &str = "e.kind <> 'rejected'";

/// The condition leaving out the events dated ahead, with the tolerance in
/// µs as `param`. (Not `ahead_us <= ?`: the id list comes from the small
/// partial index event_ahead, and the time queries stay on the covering
/// event index.)
fn not_ahead(param: &str) -> String {
    format!("e.id NOT IN (SELECT a.id FROM event a WHERE a.ahead_us > {param})")
}

const POINT_LINE_KINDS: &str =
    "('checkpoint_start', 'checkpoint_complete', 'restartpoint_start', 'restartpoint_complete')";

fn tolerance_us(tolerance: Duration) -> i64 {
    i64::try_from(tolerance.as_micros()).unwrap_or(i64::MAX)
}

const POINT_TIME: &str = "COALESCE(k.started_at, k.completed_at)";

/// What walwatch has read of a cluster's log files (table source), in wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LogGrowth {
    /// When walwatch first read any of the cluster's files.
    pub first_read: Option<Timestamp>,
    /// When walwatch last read new bytes from them (a commit happens only when the offset moves).
    pub last_read: Option<Timestamp>,
    /// Bytes read so far, all files together.
    pub bytes_read: i64,
}

impl Store {
    /// Too-frequent warnings of `cluster` with log time in `[since, until]`: (time, seconds apart).
    pub(crate) fn too_frequent_between(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<(Timestamp, i64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.at, e.data FROM event e JOIN cluster c ON c.id = e.cluster_id
                 WHERE c.name = ?1 AND e.kind = 'too_frequent' AND e.at >= ?2 AND e.at <= ?3 ORDER BY e.at, e.id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![cluster, to_micros(since), to_micros(until)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (at, data) = row.map_err(|e| self.sql(e))?;
            let seconds = serde_json::from_str::<serde_json::Value>(&data).ok().and_then(|d| d["seconds"].as_i64());
            // A warning without its figure still counts; it just cannot be the smallest.
            out.push((from_micros(at), seconds.unwrap_or(i64::MAX)));
        }
        Ok(out)
    }

    /// Checkpoints and restartpoints of `cluster` that started (or, with no
    /// start line, completed) in `[since, until]`.
    pub(crate) fn points_between(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<CheckpointRow>, StoreError> {
        // Filter's until is exclusive; the window's end is the newest evidence itself.
        let until = until.checked_add(jiff::SignedDuration::from_micros(1)).unwrap_or(until);
        self.checkpoints(&Filter {
            cluster: Some(cluster.into()),
            since: Some(since),
            until: Some(until),
            trigger: None,
        })
    }

    /// What walwatch has read of `cluster`'s files.
    pub(crate) fn log_growth(&self, cluster: &str) -> Result<LogGrowth, StoreError> {
        self.conn
            .query_row(
                "SELECT MIN(s.first_read), MAX(s.last_read), COALESCE(SUM(s.read_to), 0)
                 FROM source s JOIN cluster c ON c.id = s.cluster_id WHERE c.name = ?1",
                [cluster],
                |r| {
                    Ok(LogGrowth {
                        first_read: opt_from_micros(r.get(0)?),
                        last_read: opt_from_micros(r.get(1)?),
                        bytes_read: r.get(2)?,
                    })
                },
            )
            .map_err(|e| self.sql(e))
    }

    /// Checkpoints and restartpoints in time order.
    pub fn checkpoints(&self, filter: &Filter) -> Result<Vec<CheckpointRow>, StoreError> {
        let (mut cond, mut values) = filter.conditions(POINT_TIME);
        if let Some(t) = &filter.trigger {
            cond.push_str(" AND k.trigger = ?");
            values.push(Value::Text(t.as_str().to_string()));
        }
        let sql = format!(
            "SELECT {CHECKPOINT_COLUMNS} FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
             WHERE 1 = 1 {cond} ORDER BY {POINT_TIME}, k.id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt.query_map(params_from_iter(values), checkpoint_row).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The counts cover every stored record; first and last event leave out
    /// those dated more than `tolerance` ahead, which `dated_ahead` counts.
    pub fn summary(&self, filter: &Filter, tolerance: Duration) -> Result<Summary, StoreError> {
        Ok(Summary {
            checkpoints: self.point_counts(filter, "checkpoint")?,
            restartpoints: self.point_counts(filter, "restartpoint")?,
            too_frequent: self.count_events(filter, "too_frequent")?,
            parameter_changes: self.count_events(filter, "parameter_changed")?,
            rejected: self.count_events(filter, "rejected")?,
            first_at: self.event_time(filter, "MIN", tolerance)?,
            last_at: self.event_time(filter, "MAX", tolerance)?,
            dated_ahead: self.count_dated_ahead(filter, tolerance)?,
        })
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

    /// `cluster`'s oldest and newest events, last checkpoint line and last
    /// server start, leaving out the events dated more than `tolerance` ahead.
    pub(crate) fn log_times(&self, cluster: &str, tolerance: Duration) -> Result<LogTimes, StoreError> {
        let sql = format!(
            "SELECT MIN(e.at), MAX(e.at),
                    MAX(CASE WHEN e.kind IN {POINT_LINE_KINDS} THEN e.at END),
                    MAX(CASE WHEN e.kind IN ('server_start', 'server_ready') THEN e.at END)
             FROM event e WHERE e.cluster_id = (SELECT id FROM cluster WHERE name = ?2)
               AND {} AND {RECOGNISED}",
            not_ahead("?1")
        );
        self.conn
            .query_row(&sql, params![tolerance_us(tolerance), cluster], |r| {
                Ok(LogTimes {
                    oldest: opt_from_micros(r.get(0)?),
                    newest: opt_from_micros(r.get(1)?),
                    last_point_line: opt_from_micros(r.get(2)?),
                    last_start: opt_from_micros(r.get(3)?),
                })
            })
            .map_err(|e| self.sql(e))
    }

    /// `cluster`'s events dated more than `tolerance` ahead of walwatch's
    /// clock that were read at `read_since` or later; None when there are none.
    pub fn dated_ahead(
        &self,
        cluster: &str,
        tolerance: Duration,
        read_since: Timestamp,
    ) -> Result<Option<DatedAhead>, StoreError> {
        // An event's read time is at - ahead_us; the partial index event_ahead holds every candidate.
        let from = format!(
            "FROM event e WHERE e.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
               AND e.ahead_us > ?2 AND e.at - e.ahead_us >= ?3 AND {RECOGNISED}"
        );
        let values = params![cluster, tolerance_us(tolerance), to_micros(read_since)];
        let (count, latest_read): (i64, Option<i64>) = self
            .conn
            .query_row(&format!("SELECT count(*), MAX(e.at - e.ahead_us) {from}"), values, |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(|e| self.sql(e))?;
        let Some(latest_read_at) = opt_from_micros(latest_read) else {
            return Ok(None);
        };
        let most_ahead = format!("SELECT e.at, e.at - e.ahead_us {from} ORDER BY e.ahead_us DESC, e.id LIMIT 1");
        let (at, read) = self
            .conn
            .query_row(&most_ahead, values, |r| Ok((opt_from_micros(r.get(0)?), opt_from_micros(r.get(1)?))))
            .map_err(|e| self.sql(e))?;
        Ok(Some(DatedAhead {
            count,
            most_ahead_at: at.unwrap_or(Timestamp::MAX),
            most_ahead_read_at: read.unwrap_or(latest_read_at),
            latest_read_at,
        }))
    }

    /// Names of all clusters in the store.
    pub fn clusters(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT name FROM cluster ORDER BY name").map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}

/// A real store file with hand-made events, for the tests of the queries
/// and of the rules that read them.
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
    use crate::model::event::EventBody;

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
