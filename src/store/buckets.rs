//! What `walwatch history` reads, streamed: one cluster's checkpoints and
//! restartpoints in time order, and the times of the events and alerts it
//! counts. Each query walks one index range once (checkpoint_cluster_time,
//! event_cluster_kind_at, alert_cluster_fired) and hands rows to a callback,
//! so a year of a busy cluster is never held in memory; the bucketing is the
//! caller's (analyze/history.rs), in its time zone.

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::columns::{from_micros, opt_from_micros, to_micros};
use super::history::PointStart;
use super::{Store, StoreError};
use crate::model::event::{PointKind, Trigger};

/// One checkpoint or restartpoint row, as history aggregates it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub kind: PointKind,
    /// Its time: the start, or the completion when the start was not read
    /// (as `checkpoints` and `summary` place it).
    pub at: Timestamp,
    pub started_at: Option<Timestamp>,
    /// A start line was read (what `summary` counts by trigger).
    pub has_start: bool,
    pub trigger: Option<Trigger>,
    pub distance_kb: Option<i64>,
    pub buffers_written: Option<i64>,
    pub write_s: Option<f64>,
    pub sync_s: Option<f64>,
    pub sync_longest_s: Option<f64>,
    pub wal_files_added: Option<i64>,
    pub wal_files_removed: Option<i64>,
    pub wal_files_recycled: Option<i64>,
}

impl HistoryPoint {
    /// The start the sizing model's cycles are made of, when it has one.
    pub fn start(&self) -> Option<PointStart> {
        Some(PointStart {
            kind: self.kind,
            started_at: self.started_at?,
            trigger: self.trigger,
            distance_kb: self.distance_kb,
            wal_files_added: self.wal_files_added,
        })
    }
}

/// Markers of a server (re)start; the same list as store/history.rs, whose
/// cycles spanning one are not a WAL rate.
const RESTART_KINDS: &str = "'server_start', 'server_ready', 'crash_reinit', 'redo_start'";

const CLUSTER: &str = "(SELECT id FROM cluster WHERE name = ?1)";

/// The event kinds `history` counts or reads (besides the points).
const COUNTED_KINDS: [&str; 6] =
    ["too_frequent", "parameter_changed", "server_start", "server_ready", "crash_reinit", "redo_start"];

impl Store {
    /// The first and last time of what `history` shows for `cluster`: its
    /// points and the events it counts, leaving out those dated more than
    /// `tolerance` ahead (see migrations/0007_event_ahead.sql). A few
    /// index lookups at each end, where `log_times` reads every event of the
    /// cluster (a tenth of a second on a year of a busy server).
    pub(crate) fn history_span(
        &self,
        cluster: &str,
        tolerance: std::time::Duration,
    ) -> Result<(Option<Timestamp>, Option<Timestamp>), StoreError> {
        let tolerance_us = super::filter::tolerance_us(tolerance);
        let mut ends: Vec<i64> = Vec::new();
        for order in ["ASC", "DESC"] {
            let point = format!(
                "SELECT COALESCE(k.started_at, k.completed_at) FROM checkpoint k
                 WHERE k.cluster_id = {CLUSTER} AND COALESCE(k.started_at, k.completed_at) IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM event e
                                   WHERE e.id IN (k.start_event_id, k.complete_event_id) AND e.ahead_us > ?2)
                 ORDER BY COALESCE(k.started_at, k.completed_at) {order} LIMIT 1"
            );
            ends.extend(self.first_time(&point, params![cluster, tolerance_us])?);
            for kind in COUNTED_KINDS {
                let event = format!(
                    "SELECT e.at FROM event e
                     WHERE e.cluster_id = {CLUSTER} AND e.kind = ?3 AND (e.ahead_us IS NULL OR e.ahead_us <= ?2)
                     ORDER BY e.at {order} LIMIT 1"
                );
                ends.extend(self.first_time(&event, params![cluster, tolerance_us, kind])?);
            }
        }
        let span = |t: Option<&i64>| t.copied().map(from_micros);
        Ok((span(ends.iter().min()), span(ends.iter().max())))
    }

    fn first_time(&self, sql: &str, values: impl rusqlite::Params) -> Result<Option<i64>, StoreError> {
        self.conn.query_row(sql, values, |r| r.get(0)).optional().map_err(|e| self.sql(e))
    }

    /// Every point of `cluster` whose time is in `[since, until)`, in time order.
    pub(crate) fn history_points(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
        mut each: impl FnMut(HistoryPoint),
    ) -> Result<(), StoreError> {
        // Ordered by the expression checkpoint_cluster_time holds (and its
        // rowid): an index range scan, no sort.
        let sql = format!(
            "SELECT k.kind, COALESCE(k.started_at, k.completed_at), k.started_at, k.start_event_id IS NOT NULL,
                    k.trigger, k.distance_kb, k.buffers_written, k.write_s, k.sync_s, k.sync_longest_s,
                    k.wal_files_added, k.wal_files_removed, k.wal_files_recycled
             FROM checkpoint k
             WHERE k.cluster_id = {CLUSTER}
               AND COALESCE(k.started_at, k.completed_at) >= ?2 AND COALESCE(k.started_at, k.completed_at) < ?3
             ORDER BY COALESCE(k.started_at, k.completed_at), k.id"
        );
        let mut q = || -> rusqlite::Result<()> {
            let mut stmt = self.conn.prepare(&sql)?;
            let mut rows = stmt.query(params![cluster, to_micros(since), to_micros(until)])?;
            while let Some(r) = rows.next()? {
                each(HistoryPoint {
                    kind: r.get(0)?,
                    at: from_micros(r.get(1)?),
                    started_at: opt_from_micros(r.get(2)?),
                    has_start: r.get(3)?,
                    trigger: r.get(4)?,
                    distance_kb: r.get(5)?,
                    buffers_written: r.get(6)?,
                    write_s: r.get(7)?,
                    sync_s: r.get(8)?,
                    sync_longest_s: r.get(9)?,
                    wal_files_added: r.get(10)?,
                    wal_files_removed: r.get(11)?,
                    wal_files_recycled: r.get(12)?,
                });
            }
            Ok(())
        };
        q().map_err(|e| self.sql(e))
    }

    /// The last start before `since`: where the first cycle of the range begins.
    pub(crate) fn start_before(&self, cluster: &str, since: Timestamp) -> Result<Option<PointStart>, StoreError> {
        let sql = format!(
            "SELECT k.kind, k.started_at, k.trigger, k.distance_kb, k.wal_files_added
             FROM checkpoint k
             WHERE k.cluster_id = {CLUSTER} AND COALESCE(k.started_at, k.completed_at) < ?2
               AND k.started_at IS NOT NULL
             ORDER BY COALESCE(k.started_at, k.completed_at) DESC, k.id DESC LIMIT 1"
        );
        let row = self.conn.query_row(&sql, params![cluster, to_micros(since)], |r| {
            Ok(PointStart {
                kind: r.get(0)?,
                started_at: from_micros(r.get(1)?),
                trigger: r.get(2)?,
                distance_kb: r.get(3)?,
                wal_files_added: r.get(4)?,
            })
        });
        row.optional().map_err(|e| self.sql(e))
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
            let mut stmt = self.conn.prepare(&sql)?;
            let rows =
                stmt.query_map(params![cluster, to_micros(since), to_micros(until)], |r| Ok(from_micros(r.get(0)?)))?;
            rows.collect()
        };
        q().map_err(|e| self.sql(e))
    }

    /// The time of every event of `kind` in `[since, until)`.
    pub(crate) fn event_times(
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
        self.times(&sql, params![cluster, to_micros(since), to_micros(until), kind], each)
    }

    /// Server starts in `[since, until)`, in time order: each `starting
    /// PostgreSQL` line (12+), and each `ready to accept connections` line
    /// that no start line announced since the ready before it — the only
    /// trace of a start before PostgreSQL 12 — unless the postmaster never
    /// stopped: a crash restart (`reinitializing`) or a promotion (read-only,
    /// then read-write, with no shutdown between) is no start.
    pub(crate) fn server_start_times(
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
            let mut stmt = self.conn.prepare(&sql)?;
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
        q().map_err(|e| self.sql(e))
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
        self.times(&sql, params![cluster, to_micros(since), to_micros(until)], each)
    }

    /// When each alert of `cluster` fired (walwatch's clock) in `[since, until)`.
    pub(crate) fn alert_fired_times(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
        each: impl FnMut(Timestamp),
    ) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT a.fired_at FROM alert a WHERE a.cluster_id = {CLUSTER} AND a.fired_at >= ?2 AND a.fired_at < ?3"
        );
        self.times(&sql, params![cluster, to_micros(since), to_micros(until)], each)
    }

    fn times(
        &self,
        sql: &str,
        values: impl rusqlite::Params,
        mut each: impl FnMut(Timestamp),
    ) -> Result<(), StoreError> {
        let q = move || -> rusqlite::Result<()> {
            let mut stmt = self.conn.prepare(sql)?;
            let mut rows = stmt.query(values)?;
            while let Some(r) = rows.next()? {
                each(from_micros(r.get(0)?));
            }
            Ok(())
        };
        q().map_err(|e| self.sql(e))
    }
}

/// What the lifecycle lines since the last `ready` say, to tell a start
/// from a crash restart or a promotion ([`Store::server_start_times`]).
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

#[cfg(test)]
mod tests {
    use super::StartMarks;

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
}
