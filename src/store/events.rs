//! Events (table event): the classified log events of each source, stored
//! in batches, each batch with the source's read position in one
//! transaction ([`EventBatch`]); and reading them back: the log's times,
//! counts by kind, warnings, server starts and crashes, parameter changes,
//! crash-recovery replays, the records refused as forged.
//!
//! **Events dated ahead.** An event whose log time was more than a tolerance
//! ahead of walwatch's clock when it was read (`event.ahead_us`, see
//! migrations/0007_event_ahead.sql) is kept and counted, but its time is
//! not believed: it is never a log's first, last or newest event.

use std::ops::Deref;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rusqlite::{params, params_from_iter, types::Value, OptionalExtension, Transaction};

use super::columns::{from_micros, opt_from_micros, to_micros};
use super::filter::{not_ahead, tolerance_us, Filter, CLUSTER, LINES_AHEAD, RECOGNISED};
use super::{Store, StoreError};

#[cfg(test)]
mod tests;

/// The events' handle: [`Store::events`], [`Store::events_mut`].
pub struct Events<S>(pub(super) S);

/// Deletes the events of `source` at `from` or later (its checkpoint
/// lines are taken out first: `checkpoints::release_lines_from`).
pub(super) fn delete_from(tx: &Transaction<'_>, source: i64, from: u64) -> rusqlite::Result<u64> {
    let events = tx.execute("DELETE FROM event WHERE source_id = ?1 AND offset >= ?2", params![source, from as i64])?;
    Ok(events as u64)
}

// --- Read back: the log's times ---

/// The log times the alert rules use, leaving out the events dated ahead.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct LogTimes {
    pub(crate) oldest: Option<Timestamp>,
    pub(crate) newest: Option<Timestamp>,
    /// The newest checkpoint or restartpoint line (start or complete).
    pub(crate) last_point_line: Option<Timestamp>,
    /// The newest server start (`starting PostgreSQL`, `ready to accept connections`).
    pub(crate) last_start: Option<Timestamp>,
}

/// Events dated more than the tolerance ahead of walwatch's clock when it read them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DatedAhead {
    pub(crate) count: i64,
    /// The event most ahead: its log time and when it was read.
    pub(crate) most_ahead_at: Timestamp,
    pub(crate) most_ahead_read_at: Timestamp,
    /// When the last of them was read.
    pub(crate) latest_read_at: Timestamp,
}

/// The earlier of two times, either of which may be missing.
fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl DatedAhead {
    /// How far the event most ahead was ahead.
    pub(crate) fn max_ahead(&self) -> SignedDuration {
        self.most_ahead_at.duration_since(self.most_ahead_read_at)
    }
}

/// The event kinds `history` counts or reads (besides the points).
const COUNTED_KINDS: [&str; 6] =
    ["too_frequent", "parameter_changed", "server_start", "server_ready", "crash_reinit", "redo_start"];

impl<S: Deref<Target = Store>> Events<S> {
    /// `cluster`'s oldest and newest events (checkpoint lines included),
    /// last checkpoint line and last server start, leaving out the events
    /// dated more than `tolerance` ahead.
    pub(crate) fn log_times(&self, cluster: &str, tolerance: Duration) -> Result<LogTimes, StoreError> {
        let mut times = self.event_times(cluster, tolerance)?;
        let only = Filter { cluster: Some(cluster.into()), ..Filter::default() };
        let (first, last) = self.0.checkpoints().line_ends(&only, tolerance_us(tolerance))?;
        let (first, last) = (first.map(from_micros), last.map(from_micros));
        times.oldest = earliest(times.oldest, first);
        times.newest = times.newest.max(last);
        times.last_point_line = last;
        Ok(times)
    }

    /// [`Events::log_times`] of the events alone (no checkpoint line).
    fn event_times(&self, cluster: &str, tolerance: Duration) -> Result<LogTimes, StoreError> {
        // Each kind's first and last event are the ends of a range of the
        // index event_cluster_kind_at, the kinds found by skipping from one
        // to the next in it: a few dozen seeks, where MIN/MAX over the
        // cluster read every one of its events (100 000 in half a year).
        let sql = format!(
            "WITH RECURSIVE kinds(cluster_id, kind) AS (
                 SELECT c.id, (SELECT min(e.kind) FROM event e WHERE e.cluster_id = c.id)
                 FROM cluster c WHERE c.name = ?2
                 UNION ALL
                 SELECT cluster_id, (SELECT min(e.kind) FROM event e WHERE e.cluster_id = kinds.cluster_id AND e.kind > kinds.kind)
                 FROM kinds WHERE kind IS NOT NULL
             ),
             ends(kind, first, last) AS (
                 SELECT kinds.kind,
                        (SELECT e.at FROM event e WHERE e.cluster_id = kinds.cluster_id AND e.kind = kinds.kind AND {ok}
                         ORDER BY e.at ASC LIMIT 1),
                        (SELECT e.at FROM event e WHERE e.cluster_id = kinds.cluster_id AND e.kind = kinds.kind AND {ok}
                         ORDER BY e.at DESC LIMIT 1)
                 FROM kinds WHERE kinds.kind IS NOT NULL
             )
             SELECT MIN(first), MAX(last),
                    MAX(CASE WHEN kind IN ('server_start', 'server_ready') THEN last END)
             FROM ends",
            ok = format!("{} AND {RECOGNISED}", not_ahead("?1"))
        );
        let q = || -> rusqlite::Result<LogTimes> {
            self.0.conn.prepare_cached(&sql)?.query_row(params![tolerance_us(tolerance), cluster], |r| {
                Ok(LogTimes {
                    oldest: opt_from_micros(r.get(0)?),
                    newest: opt_from_micros(r.get(1)?),
                    last_point_line: None,
                    last_start: opt_from_micros(r.get(2)?),
                })
            })
        };
        q().map_err(|e| self.0.sql(e))
    }

    /// `cluster`'s events dated more than `tolerance` ahead of walwatch's
    /// clock that were read at `read_since` or later; None when there are none.
    pub(crate) fn dated_ahead(
        &self,
        cluster: &str,
        tolerance: Duration,
        read_since: Timestamp,
    ) -> Result<Option<DatedAhead>, StoreError> {
        let store = &*self.0;
        // An event's read time is at - ahead_us; the partial indexes
        // event_ahead and checkpoint_ahead hold every candidate.
        let from = format!(
            "FROM (SELECT e.at, e.ahead_us FROM event e
                   WHERE e.cluster_id = {CLUSTER} AND e.ahead_us > ?2 AND {RECOGNISED}
                   UNION ALL
                   SELECT l.at, l.ahead_us FROM ({LINES_AHEAD}) l WHERE l.cluster_id = {CLUSTER} AND l.ahead_us > ?2) e
             WHERE e.at - e.ahead_us >= ?3"
        );
        let values = params![cluster, tolerance_us(tolerance), to_micros(read_since)];
        let counted = || {
            let sql = format!("SELECT count(*), MAX(e.at - e.ahead_us) {from}");
            store.conn.prepare_cached(&sql)?.query_row(values, |r| Ok((r.get(0)?, r.get(1)?)))
        };
        let (count, latest_read): (i64, Option<i64>) = counted().map_err(|e| store.sql(e))?;
        let Some(latest_read_at) = opt_from_micros(latest_read) else {
            return Ok(None);
        };
        let most_ahead = format!("SELECT e.at, e.at - e.ahead_us {from} ORDER BY e.ahead_us DESC, e.at LIMIT 1");
        let (at, read) = store
            .conn
            .query_row(&most_ahead, values, |r| Ok((opt_from_micros(r.get(0)?), opt_from_micros(r.get(1)?))))
            .map_err(|e| store.sql(e))?;
        Ok(Some(DatedAhead {
            count,
            most_ahead_at: at.unwrap_or(Timestamp::MAX),
            most_ahead_read_at: read.unwrap_or(latest_read_at),
            latest_read_at,
        }))
    }

    /// The first (`MIN`) or last (`MAX`) recognised event or checkpoint
    /// line over `filter` not dated more than `tolerance` ahead: the first or
    /// last such event of each cluster and kind, each found at one end of an
    /// index range, the kinds themselves found by skipping from one to the
    /// next in the same index; and the lines' (`Checkpoints::line_ends`).
    fn end_time(&self, filter: &Filter, agg: &str, tolerance: Duration) -> Result<Option<Timestamp>, StoreError> {
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
            self.0.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.0.sql(e))?;
        let (first, last) = self.0.checkpoints().line_ends(filter, tolerance_us(tolerance))?;
        let end = if agg == "MIN" { earliest(v, first) } else { v.max(last) };
        Ok(opt_from_micros(end))
    }

    /// The first recognised event over `filter` not dated more than `tolerance` ahead.
    pub(crate) fn first_time(&self, filter: &Filter, tolerance: Duration) -> Result<Option<Timestamp>, StoreError> {
        self.end_time(filter, "MIN", tolerance)
    }

    /// The last recognised event over `filter` not dated more than `tolerance` ahead.
    pub(crate) fn last_time(&self, filter: &Filter, tolerance: Duration) -> Result<Option<Timestamp>, StoreError> {
        self.end_time(filter, "MAX", tolerance)
    }

    /// The first or last time (`order` "ASC" or "DESC") of each kind
    /// `history` counts, of `cluster`, leaving out the events dated more
    /// than `tolerance_us` ahead: one index lookup per kind.
    pub(super) fn history_ends(&self, cluster: &str, tolerance_us: i64, order: &str) -> Result<Vec<i64>, StoreError> {
        let mut ends = Vec::new();
        for kind in COUNTED_KINDS {
            let event = format!(
                "SELECT e.at FROM event e
                 WHERE e.cluster_id = {CLUSTER} AND e.kind = ?3 AND (e.ahead_us IS NULL OR e.ahead_us <= ?2)
                 ORDER BY e.at {order} LIMIT 1"
            );
            ends.extend(
                self.0
                    .conn
                    .query_row(&event, params![cluster, tolerance_us, kind], |r| r.get::<_, i64>(0))
                    .optional()
                    .map_err(|e| self.0.sql(e))?,
            );
        }
        Ok(ends)
    }
}

// --- Read back: counts ---

impl<S: Deref<Target = Store>> Events<S> {
    /// The events of `kind` over `filter` (rejected records are of kind
    /// "rejected"). Counted cluster by cluster, each a range of the
    /// event_cluster_kind_at index (an event index without the cluster
    /// first would cost a second copy of the event table's keys).
    pub(crate) fn count(&self, filter: &Filter, kind: &str) -> Result<i64, StoreError> {
        let (time, mut values) = filter.time_conditions("e.at");
        values.insert(0, Value::Text(kind.into()));
        let (cond, cluster) = filter.cluster_condition();
        values.extend(cluster);
        let sql = format!(
            "SELECT IFNULL(sum((SELECT count(*) FROM event e WHERE e.cluster_id = c.id AND e.kind = ? {time})), 0)
             FROM cluster c WHERE 1 = 1 {cond}"
        );
        self.0.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.0.sql(e))
    }

    /// Recognised events and checkpoint lines over `filter` dated more than
    /// `tolerance` ahead of walwatch's clock when read (counted, but never a
    /// first or last time).
    pub(crate) fn count_dated_ahead(&self, filter: &Filter, tolerance: Duration) -> Result<i64, StoreError> {
        let (cond, values) = filter.conditions("e.at");
        let mut values = [vec![Value::Integer(tolerance_us(tolerance))], values].concat();
        values.extend(values.clone());
        let sql = format!(
            "SELECT (SELECT count(*) FROM event e JOIN cluster c ON c.id = e.cluster_id
                     WHERE e.ahead_us > ? AND {RECOGNISED} {cond})
                  + (SELECT count(*) FROM ({LINES_AHEAD}) e JOIN cluster c ON c.id = e.cluster_id
                     WHERE e.ahead_us > ? {cond})"
        );
        self.0.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.0.sql(e))
    }

    /// Every cluster's number of events of `kind`, each a range of the
    /// event_cluster_kind_at index.
    pub(crate) fn totals(&self, kind: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let store = &*self.0;
        let sql = "SELECT c.name, (SELECT count(*) FROM event e WHERE e.cluster_id = c.id AND e.kind = ?1)
                   FROM cluster c ORDER BY c.name";
        let mut stmt = store.conn.prepare(sql).map_err(|e| store.sql(e))?;
        let rows = stmt.query_map([kind], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// The lowest event id: it moves up only when events are deleted.
    pub(crate) fn first_id(&self) -> Result<Option<i64>, StoreError> {
        self.0.conn.query_row("SELECT min(id) FROM event", [], |r| r.get(0)).map_err(|e| self.0.sql(e))
    }

    /// The highest event id (None: no event): below what was read, the
    /// newest events were deleted (`forget` of the file read last).
    pub(crate) fn last_id(&self) -> Result<Option<i64>, StoreError> {
        self.0.conn.query_row("SELECT max(id) FROM event", [], |r| r.get(0)).map_err(|e| self.0.sql(e))
    }

    /// For each cluster with events stored after event `after`: the
    /// highest such id and the newest log time among them of a recognised
    /// event not dated more than `tolerance_us` ahead (the rule of
    /// `log_times`), read as a range of the primary key.
    pub(crate) fn newest_after(
        &self,
        after: i64,
        tolerance_us: i64,
    ) -> Result<Vec<(String, i64, Option<i64>)>, StoreError> {
        let store = &*self.0;
        let sql = "SELECT c.name, max(e.id),
                          max(CASE WHEN e.kind <> 'rejected' AND (e.ahead_us IS NULL OR e.ahead_us <= ?2)
                                   THEN e.at END)
                   FROM event e JOIN cluster c ON c.id = e.cluster_id WHERE e.id > ?1 GROUP BY c.name";
        let mut stmt = store.conn.prepare(sql).map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params![after, tolerance_us], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }
}

// --- Read back: warnings, restarts, replays ---

/// One recovery: WAL replayed, how long it took, and whether it was a
/// crash recovery or a standby's (or archive) replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Replay {
    pub(crate) bytes: u64,
    pub(crate) seconds: f64,
    /// The time of its `redo done` line.
    pub(crate) at: Timestamp,
    /// A crash recovery: an end-of-recovery checkpoint follows its `redo
    /// done`, no read-only ready line lies between its two lines and no
    /// `archive recovery complete` follows. A standby replays WAL as it
    /// arrives, waiting between, and is promoted without that checkpoint; a
    /// point-in-time recovery reads WAL from an archive: neither speed says
    /// anything of a crash's.
    pub(crate) crash: bool,
}

/// A `redo starts at` or `redo done at` line: its kind, time, LSN and elapsed seconds.
type RedoLine = (String, i64, Option<String>, Option<f64>);

/// The crash recoveries whose replay speed `suggest` reads (the newest).
const REPLAYS_KEPT: i64 = 100;

/// Markers of a server (re)start in the event table.
const RESTART_KINDS: &str = "'server_start', 'server_ready', 'crash_reinit', 'redo_start'";

/// Whether the replay from ?2 to ?3 (µs) was a crash recovery: PostgreSQL
/// ends one with an end-of-recovery checkpoint (`StartupXLOG`: only a
/// promoted standby skips it), and a standby opens for read-only queries
/// while it replays. An archive recovery (point-in-time recovery, a standby
/// promoted at its target) ends with that checkpoint too, closed or not
/// while it replayed: its `archive recovery complete` between the `redo
/// done` and the checkpoint tells it apart. Restartpoints are no mark: from
/// PostgreSQL 15 the checkpointer runs during crash recovery too.
const CRASH_RECOVERY: &str =
    "SELECT EXISTS (SELECT 1 FROM checkpoint k WHERE k.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
       AND COALESCE(k.started_at, k.completed_at) >= ?3 AND COALESCE(k.started_at, k.completed_at) <= ?3 + 60000000
       AND k.trigger = 'end-of-recovery' AND k.started_at >= ?3 AND k.started_at <= ?3 + 60000000)
   AND NOT EXISTS (SELECT 1 FROM event e WHERE e.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
       AND e.kind = 'server_ready' AND e.at >= ?2 AND e.at <= ?3 AND json_extract(e.data, '$.read_only') IS 1)
   AND NOT EXISTS (SELECT 1 FROM event e WHERE e.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
       AND e.kind = 'archive_recovery_done' AND e.at >= ?3 AND e.at <= ?3 + 60000000)";

impl<S: Deref<Target = Store>> Events<S> {
    /// Too-frequent warnings of `cluster` with log time in `[since, until]`: (time, seconds apart).
    pub(crate) fn too_frequent(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<(Timestamp, i64)>, StoreError> {
        let store = &*self.0;
        let mut stmt = store
            .conn
            .prepare_cached(
                "SELECT e.at, e.data FROM event e JOIN cluster c ON c.id = e.cluster_id
                 WHERE c.name = ?1 AND e.kind = 'too_frequent' AND e.at >= ?2 AND e.at <= ?3 ORDER BY e.at, e.id",
            )
            .map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params![cluster, to_micros(since), to_micros(until)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| store.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (at, data) = row.map_err(|e| store.sql(e))?;
            let seconds = serde_json::from_str::<serde_json::Value>(&data).ok().and_then(|d| d["seconds"].as_i64());
            // A warning without its figure still counts; it just cannot be the smallest.
            out.push((from_micros(at), seconds.unwrap_or(i64::MAX)));
        }
        Ok(out)
    }

    /// Too-frequent warnings of `cluster` with log time in `[since, until)` (µs).
    pub(super) fn count_too_frequent(&self, cluster: &str, since: i64, until: i64) -> Result<i64, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT count(*) FROM event e JOIN cluster c ON c.id = e.cluster_id
                 WHERE c.name = ?1 AND e.kind = 'too_frequent' AND e.at >= ?2 AND e.at < ?3",
                params![cluster, since, until],
                |r| r.get(0),
            )
            .map_err(|e| self.0.sql(e))
    }

    /// Server (re)starts of `cluster` before `until` (µs) from 30 days
    /// before `since` on, in time order: a cycle of the sizing model that
    /// spans one is no measure of the WAL rate.
    pub(super) fn restarts_from_month_before(
        &self,
        cluster: &str,
        since: i64,
        until: i64,
    ) -> Result<Vec<Timestamp>, StoreError> {
        let sql = format!(
            "SELECT e.at FROM event e JOIN cluster c ON c.id = e.cluster_id
             WHERE c.name = ?1 AND e.kind IN ({RESTART_KINDS}) AND e.at < ?3 AND e.at >= ?2 - 86400000000 * 30
             ORDER BY e.at"
        );
        let q = || -> rusqlite::Result<Vec<Timestamp>> {
            let mut stmt = self.0.conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![cluster, since, until], |r| Ok(from_micros(r.get(0)?)))?;
            rows.collect()
        };
        q().map_err(|e| self.0.sql(e))
    }

    /// Every `redo starts at` followed by its `redo done at`: the time from
    /// the `elapsed` PostgreSQL 14+ logs with it, else from the two lines'
    /// log times (the replay lies between them; before 14 nothing else
    /// times it).
    pub(crate) fn replays(&self, cluster: &str) -> Result<Vec<Replay>, StoreError> {
        // The newest recoveries only: a replay speed is a property of today's
        // hardware, and a store of years with a crash a day would otherwise
        // read (and JSON-decode) thousands of rows at every suggestion.
        let q = || -> rusqlite::Result<Vec<RedoLine>> {
            let mut stmt = self.0.conn.prepare_cached(
                "SELECT e.kind, e.at, json_extract(e.data, '$.lsn'), json_extract(e.data, '$.elapsed_s')
                 FROM event e JOIN cluster c ON c.id = e.cluster_id
                 WHERE c.name = ?1 AND e.kind IN ('redo_start', 'redo_done') ORDER BY e.at DESC, e.id DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![cluster, 2 * REPLAYS_KEPT], |r| {
                Ok((r.get::<_, String>(0)?, r.get(1)?, r.get::<_, Option<String>>(2)?, r.get::<_, Option<f64>>(3)?))
            })?;
            rows.collect()
        };
        let mut newest_first = q().map_err(|e| self.0.sql(e))?;
        newest_first.reverse();
        let mut replays = Vec::new();
        let mut start: Option<(i64, u64)> = None;
        for (kind, at, lsn, elapsed) in newest_first {
            let lsn = lsn.as_deref().and_then(parse_lsn);
            match (kind.as_str(), start, lsn) {
                ("redo_start", _, _) => start = lsn.map(|l| (at, l)),
                ("redo_done", Some((from_at, from)), Some(to)) => {
                    let seconds = elapsed.unwrap_or((at - from_at) as f64 / 1e6);
                    if to > from && seconds > 0.0 {
                        let crash = self.crash_recovery(cluster, from_at, at)?;
                        replays.push(Replay { bytes: to - from, seconds, at: from_micros(at), crash });
                    }
                    start = None;
                }
                _ => start = None,
            }
        }
        Ok(replays)
    }

    /// Whether the replay from `from` to `to` (µs) was a crash recovery.
    fn crash_recovery(&self, cluster: &str, from: i64, to: i64) -> Result<bool, StoreError> {
        let q = || -> rusqlite::Result<bool> {
            self.0.conn.prepare_cached(CRASH_RECOVERY)?.query_row(params![cluster, from, to], |r| r.get(0))
        };
        q().map_err(|e| self.0.sql(e))
    }

    /// Server (re)starts in `[since, until)`, in time order (few: held whole).
    pub(crate) fn restart_times(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<Timestamp>, StoreError> {
        let sql = format!(
            "SELECT e.at FROM event e WHERE e.cluster_id = {CLUSTER} AND e.kind IN ({RESTART_KINDS})
               AND e.at >= ?2 AND e.at < ?3 ORDER BY e.at"
        );
        let q = || -> rusqlite::Result<Vec<Timestamp>> {
            let mut stmt = self.0.conn.prepare_cached(&sql)?;
            let rows =
                stmt.query_map(params![cluster, to_micros(since), to_micros(until)], |r| Ok(from_micros(r.get(0)?)))?;
            rows.collect()
        };
        q().map_err(|e| self.0.sql(e))
    }

    /// The time of every event of `kind` in `[since, until)`, streamed.
    pub(crate) fn times(
        &self,
        cluster: &str,
        kind: &str,
        since: Timestamp,
        until: Timestamp,
        each: impl FnMut(Timestamp),
    ) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT e.at FROM event e WHERE e.cluster_id = {CLUSTER} AND e.kind = ?4 AND e.at >= ?2 AND e.at < ?3"
        );
        self.0.each_time(&sql, params![cluster, to_micros(since), to_micros(until), kind], each)
    }

    /// Server starts in `[since, until)`, in time order: each `starting
    /// PostgreSQL` line (12+), and each `ready to accept connections` line
    /// that no start line announced since the ready before it — the only
    /// trace of a start before PostgreSQL 12 — unless the postmaster never
    /// stopped: a crash restart (`reinitializing`) or a promotion (read-only,
    /// then read-write, with no shutdown between) is no start.
    pub(crate) fn server_starts(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
        mut each: impl FnMut(Timestamp),
    ) -> Result<(), StoreError> {
        // From the ready before the range on: what happened since it decides
        // whether the first ready in the range was a start.
        let sql = format!(
            "SELECT e.at, e.kind, json_extract(e.data, '$.read_only') IS 1 FROM event e
             WHERE e.cluster_id = {CLUSTER}
               AND e.kind IN ('server_start', 'server_ready', 'crash_reinit', 'server_shutdown')
               AND e.at >= COALESCE((SELECT max(r.at) FROM event r WHERE r.cluster_id = {CLUSTER}
                                     AND r.kind = 'server_ready' AND r.at < ?2), -9223372036854775808)
               AND e.at < ?3
             ORDER BY e.at, e.id"
        );
        let (from, to) = (to_micros(since), to_micros(until));
        let mut starts = StartMarks::default();
        let mut q = || -> rusqlite::Result<()> {
            let mut stmt = self.0.conn.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![cluster, from, to])?;
            while let Some(r) = rows.next()? {
                let at: i64 = r.get(0)?;
                let kind: String = r.get(1)?;
                let read_only = r.get::<_, Option<bool>>(2)?.unwrap_or(false);
                if starts.is_start(&kind, read_only) && at >= from {
                    each(from_micros(at));
                }
            }
            Ok(())
        };
        q().map_err(|e| self.0.sql(e))
    }

    /// Crash restarts (`all server processes terminated; reinitializing`)
    /// in `[since, until)` whose recovery logged no end-of-recovery
    /// checkpoint before the server was ready again (a standby's, or a log
    /// cut short): the others are counted once, at that checkpoint.
    pub(crate) fn crashes_without_end_of_recovery(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
        each: impl FnMut(Timestamp),
    ) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT e.at FROM event e
             WHERE e.cluster_id = {CLUSTER} AND e.kind = 'crash_reinit' AND e.at >= ?2 AND e.at < ?3
               AND NOT EXISTS (
                 SELECT 1 FROM checkpoint k
                 WHERE k.cluster_id = e.cluster_id AND k.trigger = 'end-of-recovery'
                   AND COALESCE(k.started_at, k.completed_at) >= e.at
                   AND COALESCE(k.started_at, k.completed_at) <= COALESCE(
                     (SELECT min(r.at) FROM event r
                      WHERE r.cluster_id = e.cluster_id AND r.kind = 'server_ready' AND r.at > e.at),
                     9223372036854775807))"
        );
        self.0.each_time(&sql, params![cluster, to_micros(since), to_micros(until)], each)
    }
}

/// What the lifecycle lines since the last `ready` say, to tell a start
/// from a crash restart or a promotion ([`Events::server_starts`]).
#[derive(Debug, Default)]
struct StartMarks {
    /// The last ready line's read_only (None: none seen yet).
    ready_read_only: Option<bool>,
    start_line: bool,
    crash_reinit: bool,
    shutdown: bool,
}

impl StartMarks {
    /// Takes the next lifecycle event; true when it is a server start.
    fn is_start(&mut self, kind: &str, read_only: bool) -> bool {
        match kind {
            "server_start" => {
                self.start_line = true;
                true
            }
            "crash_reinit" => {
                self.crash_reinit = true;
                false
            }
            "server_shutdown" => {
                self.shutdown = true;
                false
            }
            "server_ready" => {
                let promotion = self.ready_read_only == Some(true) && !read_only && !self.shutdown;
                let start = !self.start_line && !self.crash_reinit && !promotion;
                *self = StartMarks { ready_read_only: Some(read_only), ..StartMarks::default() };
                start
            }
            _ => false,
        }
    }
}

/// "1A/4F1A2B60" -> the 64-bit WAL position.
pub(crate) fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

// --- Read back: what the server says of its settings ---

/// A `parameter "X" changed to "Y"` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogChange {
    pub(crate) at: Timestamp,
    pub(crate) name: String,
    pub(crate) value: String,
}

/// What a `parameter_changed` event's data holds.
#[derive(serde::Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

impl<S: Deref<Target = Store>> Events<S> {
    /// The log's `parameter "X" changed to "Y"` lines, oldest first; rows
    /// whose data is not the expected JSON are skipped.
    pub(crate) fn parameter_changes(&self, cluster_id: i64) -> Result<Vec<LogChange>, StoreError> {
        let store = &*self.0;
        let mut stmt = store
            .conn
            .prepare_cached(
                "SELECT at, data FROM event WHERE cluster_id = ?1 AND kind = 'parameter_changed' ORDER BY at, id",
            )
            .map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params![cluster_id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| store.sql(e))?;
        let mut changes = Vec::new();
        for row in rows {
            let (at, data) = row.map_err(|e| store.sql(e))?;
            // The two strings only, no document tree: a digest reads every
            // change of each cluster.
            let Ok(NameValue { name, value }) = serde_json::from_str::<NameValue>(&data) else { continue };
            changes.push(LogChange { at: from_micros(at), name: name.to_ascii_lowercase(), value });
        }
        Ok(changes)
    }

    /// The version of the latest server start in the log ("15.18"), if any said it.
    pub(crate) fn latest_server_version(&self, cluster_id: i64) -> Result<Option<String>, StoreError> {
        let data: Option<String> = self
            .0
            .conn
            .query_row(
                "SELECT data FROM event WHERE cluster_id = ?1 AND kind = 'server_start'
                 AND json_extract(data, '$.version') IS NOT NULL ORDER BY at DESC, id DESC LIMIT 1",
                [cluster_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.0.sql(e))?;
        Ok(data
            .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
            .and_then(|v| v["version"].as_str().map(String::from)))
    }
}

// --- Read back: the records refused as forged ---

/// Lines refused as forged (see `classify::trust`), for `status`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused {
    pub(crate) count: i64,
    /// Where the last of them is: file and line (0 when only lines inside
    /// failed logins' prefixes were refused: they are counted per file).
    pub(crate) path: String,
    pub(crate) line: u64,
    pub(crate) reason: String,
}

impl<S: Deref<Target = Store>> Events<S> {
    /// Records refused as forged in the files read `since` or later, and
    /// the lines inside failed logins' prefixes (counted per source, see
    /// migrations/0010_rejected_lines.sql). (Not by their log time: a
    /// forged line carries the time its author chose.)
    pub(crate) fn refused_since(&self, cluster: &str, since: Timestamp) -> Result<Option<Refused>, StoreError> {
        let in_names = self
            .0
            .conn
            .query_row(
                "SELECT COALESCE(SUM(s.rejected_lines), 0), MAX(s.path) FILTER (WHERE s.rejected_lines > 0)
                 FROM source s JOIN cluster c ON c.id = s.cluster_id WHERE c.name = ?1 AND s.last_read >= ?2",
                params![cluster, to_micros(since)],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)),
            )
            .map_err(|e| self.0.sql(e))?;
        let records = self.refused_records_since(cluster, since)?;
        Ok(match (records, in_names) {
            (Some(r), (n, _)) => Some(Refused { count: r.count + n, ..r }),
            (None, (n, Some(path))) if n > 0 => {
                Some(Refused { count: n, path, line: 0, reason: crate::frame::formats::stderr::SPLICED.to_string() })
            }
            (None, _) => None,
        })
    }

    fn refused_records_since(&self, cluster: &str, since: Timestamp) -> Result<Option<Refused>, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT count(*) OVER () AS count, s.path, e.line, json_extract(e.data, '$.reason') AS reason
                 FROM event e JOIN source s ON s.id = e.source_id JOIN cluster c ON c.id = e.cluster_id
                 WHERE c.name = ?1 AND e.kind = 'rejected' AND s.last_read >= ?2
                 ORDER BY s.last_read DESC, s.id DESC, e.offset DESC LIMIT 1",
                params![cluster, to_micros(since)],
                |r| {
                    Ok(Refused {
                        count: r.get("count")?,
                        path: r.get("path")?,
                        line: r.get::<_, i64>("line")? as u64,
                        reason: r.get::<_, Option<String>>("reason")?.unwrap_or_default(),
                    })
                },
            )
            .optional()
            .map_err(|e| self.0.sql(e))
    }
}
