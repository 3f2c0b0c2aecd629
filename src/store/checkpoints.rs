//! Checkpoints and restartpoints (table checkpoint, and its day tally
//! point_tally): one row per start line and the complete line that closes
//! it, a start without a complete and a complete without a start each a row
//! of their own. A row holds where its lines were read ([`LinePlace`]);
//! checkpoint lines are not events (migrations/0022_point_lines.sql).
//!
//! Which start a complete line closes is decided by the reader of the log
//! (`ingest::pairing`); here are the rows it asks about and writes, inside
//! the transaction of a batch of events ([`PointRows`]), and everything
//! that reads them back: `walwatch checkpoints`, the alert rules' windows,
//! the counts of `summary` and the metrics, the cycles of the max_wal_size
//! model, `history`.

use std::ops::Deref;
use std::path::Path;
use std::sync::LazyLock;

use jiff::{SignedDuration, Timestamp};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params, params_from_iter, CachedStatement, OptionalExtension, Row, ToSql, Transaction};
use serde::Serialize;

use super::columns::{from_micros, opt_from_micros, to_micros};
use super::events::Replay;
use super::filter::{times, tolerance_us, Filter, CLUSTER, POINT_TIME};
use super::{Store, StoreError};
use crate::model::event::{point_figures, CompleteStats, EventBody, Figure, PointKind, Trigger};

#[cfg(test)]
mod tests;

/// The checkpoints' handle: [`Store::checkpoints`]. Their rows are written
/// with the events that make them ([`super::batch::EventBatch`]) and
/// taken back with them ([`super::sources::Sources::forget`]).
pub struct Checkpoints<S>(pub(super) S);

// --- Written with a batch of events ---

/// The first complete line of cluster ?1, kind ?2 and pid ?3 waiting for its
/// start within ?5 µs after ?4, not earlier than offset ?7 in source ?6: a
/// range of the partial index checkpoint_waiting (migrations/0009_scale.sql).
const WAITING_COMPLETE: &str = "SELECT c.id, c.completed_at FROM checkpoint c
     WHERE c.cluster_id = ?1 AND c.kind = ?2 AND c.pid IS ?3 AND c.start_source_id IS NULL
       AND c.completed_at >= ?4 AND c.completed_at <= ?4 + ?5
       AND NOT (c.complete_source_id = ?6 AND c.complete_offset < ?7)
     ORDER BY c.completed_at, c.id LIMIT 1";

/// A start line's columns: its time, place and flags.
const START_COLUMNS: &str = "started_at, start_source_id, start_offset, start_line, start_ahead_us, flags, trigger";

/// A complete line's columns before its figures: its time and place.
const COMPLETE_COLUMNS: &str = "completed_at, complete_source_id, complete_offset, complete_line, complete_ahead_us";

/// The assignments that take a row's start line out.
const NO_START: &str = "started_at = NULL, start_source_id = NULL, start_offset = NULL, start_line = NULL,
     start_ahead_us = NULL, flags = NULL, trigger = NULL";

/// A complete line's figures and `truncated`, as columns and as the
/// parameters from ?`first` on that fill them.
fn figure_params(first: usize) -> (String, String) {
    let count = CompleteStats::COUNT + 1;
    let columns = CompleteStats::FIGURES.iter().copied().chain(["truncated"]).collect::<Vec<_>>().join(", ");
    let params = (first..first + count).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    (columns, params)
}

/// A start and its complete line in one row ([`PointRows::insert_paired`]).
///
/// OR FAIL, not the default ABORT: with the tally trigger of
/// migrations/0015_tally_insert.sql and no foreign-key checks (an import),
/// nothing in this insert may abort, so SQLite keeps no statement journal
/// for it. A failure still fails the batch, which is rolled back whole.
static INSERT_PAIRED: LazyLock<String> = LazyLock::new(|| {
    let (figures, params) = figure_params(16);
    format!(
        "INSERT OR FAIL INTO checkpoint(cluster_id, kind, pid, pairable, {START_COLUMNS}, {COMPLETE_COLUMNS}, {figures})
         VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, {params})"
    )
});

/// Row ?1 again under a new id, with a complete line (time and place
/// ?2–?6, then its figures): rows completed after id N are the rows above N
/// (see migrations/0022_point_lines.sql). The old row is deleted after.
static COMPLETE: LazyLock<String> = LazyLock::new(|| {
    let (figures, params) = figure_params(7);
    format!(
        "INSERT INTO checkpoint(cluster_id, kind, pid, pairable, {START_COLUMNS}, {COMPLETE_COLUMNS}, {figures})
         SELECT cluster_id, kind, pid, start_source_id IS NULL, {START_COLUMNS}, ?2, ?3, ?4, ?5, ?6, {params}
         FROM checkpoint WHERE id = ?1"
    )
});

/// A complete line without its start: a new row (time and place ?4–?8,
/// then its figures), waiting for its start.
static COMPLETE_ONLY: LazyLock<String> = LazyLock::new(|| {
    let (figures, params) = figure_params(9);
    format!(
        "INSERT INTO checkpoint(cluster_id, kind, pid, pairable, {COMPLETE_COLUMNS}, {figures})
         VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, {params})"
    )
});

/// Where a line was read: its source, byte offset and line number, and how
/// far (µs) its time was ahead of walwatch's clock when it was stored
/// (None when not ahead; see migrations/0007_event_ahead.sql).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LinePlace {
    pub(crate) source_id: i64,
    pub(crate) offset: i64,
    pub(crate) line: i64,
    pub(crate) ahead_us: Option<i64>,
}

/// Which line of a checkpoint row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    Start,
    Complete,
}

/// What a start line's row holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StartRow {
    pub(crate) cluster_id: i64,
    pub(crate) kind: PointKind,
    pub(crate) pid: Option<u32>,
    /// Where the start line was read.
    pub(crate) line: LinePlace,
    pub(crate) at: Timestamp,
    /// The flags as logged, separated by spaces.
    pub(crate) flags: String,
    pub(crate) trigger: Trigger,
}

/// The checkpoint rows of one batch of events, in its transaction: the
/// questions the pairing asks and the rows it writes.
///
/// It holds the two statements run for nearly every checkpoint line,
/// prepared once per batch: taken from and given back to rusqlite's cache
/// at each line, they cost a hash of their SQL text both ways and a
/// clearing of their bindings.
pub(crate) struct PointRows<'a> {
    tx: &'a Transaction<'a>,
    path: &'a Path,
    /// [`WAITING_COMPLETE`], asked for every start line.
    waiting: CachedStatement<'a>,
    /// [`INSERT_PAIRED`], run for every complete line that closes a start of its batch.
    paired: CachedStatement<'a>,
}

impl<'a> PointRows<'a> {
    pub(super) fn new(tx: &'a Transaction<'a>, path: &'a Path) -> rusqlite::Result<PointRows<'a>> {
        let waiting = tx.prepare_cached(WAITING_COMPLETE)?;
        let paired = tx.prepare_cached(&INSERT_PAIRED)?;
        Ok(PointRows { tx, path, waiting, paired })
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql { path: self.path.into(), source }
    }

    /// Whether a `kind` line of this `half` is stored at `place` (its source
    /// and offset): a line read again (a rewind, another process reading the
    /// same file) is stored once. One seek of checkpoint_start_place or
    /// checkpoint_complete_place.
    pub(crate) fn line_stored(&self, half: Half, kind: PointKind, place: &LinePlace) -> Result<bool, StoreError> {
        let sql = match half {
            Half::Start => {
                "SELECT EXISTS (SELECT 1 FROM checkpoint WHERE start_source_id = ?1 AND start_offset = ?2 AND kind = ?3)"
            }
            Half::Complete => {
                "SELECT EXISTS (SELECT 1 FROM checkpoint
                   WHERE complete_source_id = ?1 AND complete_offset = ?2 AND kind = ?3)"
            }
        };
        self.tx
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row(params![place.source_id, place.offset, kind.as_str()], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    /// Whether the same line (cluster, kind, half, pid and time) is stored
    /// from another place of `source_id`: a file rewritten in place and read
    /// again from its start has its remaining lines at other offsets (see
    /// `store::batch`). A start is a seek of checkpoint_cluster_time (whose
    /// time is the start), a complete one of checkpoint_cluster_completed.
    pub(crate) fn line_elsewhere(
        &self,
        half: Half,
        cluster_id: i64,
        kind: PointKind,
        pid: Option<u32>,
        at: Timestamp,
        source_id: i64,
    ) -> Result<bool, StoreError> {
        let sql = match half {
            Half::Start => {
                "SELECT EXISTS (SELECT 1 FROM checkpoint WHERE cluster_id = ?1
                   AND COALESCE(started_at, completed_at) = ?2 AND started_at = ?2
                   AND kind = ?3 AND pid IS ?4 AND start_source_id = ?5)"
            }
            Half::Complete => {
                "SELECT EXISTS (SELECT 1 FROM checkpoint WHERE cluster_id = ?1 AND completed_at = ?2
                   AND kind = ?3 AND pid IS ?4 AND complete_source_id = ?5)"
            }
        };
        self.tx
            .prepare_cached(sql)
            .and_then(|mut s| {
                s.query_row(params![cluster_id, to_micros(at), kind.as_str(), pid, source_id], |r| r.get(0))
            })
            .map_err(|e| self.sql(e))
    }

    /// The first complete line of `kind` and `pid` stored without its
    /// start, completed from `at` to `within` after it, that is not earlier
    /// than `offset` in source `source_id`: (its row, its completion).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn waiting_complete(
        &mut self,
        cluster_id: i64,
        kind: PointKind,
        pid: Option<u32>,
        at: Timestamp,
        within: SignedDuration,
        source_id: i64,
        offset: u64,
    ) -> Result<Option<(i64, Timestamp)>, StoreError> {
        let within = within.as_micros() as i64;
        let found: Option<(i64, i64)> = self
            .waiting
            .query_row(params![cluster_id, kind.as_str(), pid, to_micros(at), within, source_id, offset as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(found.map(|(id, completed_at)| (id, from_micros(completed_at))))
    }

    /// Whether the cluster's server started, crashed or shut down strictly
    /// between `from` and `to` (events of the table event).
    pub(crate) fn restart_between(&self, cluster_id: i64, from: Timestamp, to: Timestamp) -> Result<bool, StoreError> {
        self.tx
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM event WHERE cluster_id = ?1
                   AND kind IN ('server_start', 'crash_reinit', 'server_shutdown') AND at > ?2 AND at < ?3)",
            )
            .and_then(|mut s| s.query_row(params![cluster_id, to_micros(from), to_micros(to)], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    /// How many rows of `kind` and `pid` started strictly between `after` and `before`.
    pub(crate) fn starts_between(
        &self,
        cluster_id: i64,
        kind: PointKind,
        pid: Option<u32>,
        after: Timestamp,
        before: Timestamp,
    ) -> Result<i64, StoreError> {
        self.tx
            .prepare_cached(
                "SELECT count(*) FROM checkpoint WHERE cluster_id = ?1
               AND COALESCE(started_at, completed_at) > ?4 AND COALESCE(started_at, completed_at) < ?5
               AND started_at > ?4 AND started_at < ?5 AND kind = ?2 AND pid IS ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![cluster_id, kind.as_str(), pid, to_micros(after), to_micros(before)], |r| r.get(0))
            })
            .map_err(|e| self.sql(e))
    }

    /// The latest start of `kind` and `pid` before `offset` in source
    /// `source_id`, in the file's order: (its row, whether it still waits
    /// for a complete).
    pub(crate) fn latest_start_in_source(
        &self,
        source_id: i64,
        offset: u64,
        kind: PointKind,
        pid: Option<u32>,
    ) -> Result<Option<(i64, bool)>, StoreError> {
        self.tx
            .prepare_cached(
                "SELECT id, pairable FROM checkpoint
                 WHERE start_source_id = ?1 AND start_offset < ?2 AND kind = ?3 AND pid IS ?4
                 ORDER BY start_offset DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![source_id, offset as i64, kind.as_str(), pid], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.sql(e))
    }

    /// The latest start of `kind` and `pid` strictly before `at`, by time,
    /// and not more than `within` before it: (its row, whether it still
    /// waits for a complete, its completion). A range of
    /// checkpoint_cluster_time (whose time is the start where there is one),
    /// bounded so that a pid or kind the cluster never logged does not read
    /// its whole history.
    pub(crate) fn latest_start_before(
        &self,
        cluster_id: i64,
        kind: PointKind,
        pid: Option<u32>,
        at: Timestamp,
        within: SignedDuration,
    ) -> Result<Option<(i64, bool, Option<Timestamp>)>, StoreError> {
        let found: Option<(i64, bool, Option<i64>)> = self
            .tx
            .prepare_cached(
                "SELECT id, pairable, completed_at FROM checkpoint
                 WHERE cluster_id = ?1 AND COALESCE(started_at, completed_at) < ?4
                   AND COALESCE(started_at, completed_at) >= ?4 - ?5
                   AND started_at < ?4 AND kind = ?2 AND pid IS ?3
                 ORDER BY COALESCE(started_at, completed_at) DESC, id DESC LIMIT 1",
            )
            .and_then(|mut s| {
                let within = within.as_micros() as i64;
                s.query_row(params![cluster_id, kind.as_str(), pid, to_micros(at), within], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
            })
            .map_err(|e| self.sql(e))?;
        Ok(found.map(|(id, pairable, completed)| (id, pairable, opt_from_micros(completed))))
    }

    /// The latest start of `kind` and `pid` at `at` exactly that still waits for a complete.
    pub(crate) fn waiting_start_at(
        &self,
        cluster_id: i64,
        kind: PointKind,
        pid: Option<u32>,
        at: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        self.tx
            .prepare_cached(
                "SELECT id, pairable FROM checkpoint
                 WHERE cluster_id = ?1 AND COALESCE(started_at, completed_at) = ?4 AND started_at = ?4
                   AND kind = ?2 AND pid IS ?3 AND pairable = 1
                 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![cluster_id, kind.as_str(), pid, to_micros(at)], |r| r.get(0)).optional()
            })
            .map_err(|e| self.sql(e))
    }

    /// Whether row `id` was completed by a line of another source than `source_id`.
    pub(crate) fn completed_from_another_source(&self, id: i64, source_id: i64) -> Result<bool, StoreError> {
        self.tx
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM checkpoint WHERE id = ?1 AND complete_source_id != ?2)")
            .and_then(|mut s| s.query_row(params![id, source_id], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    /// A start line's row, waiting for its complete.
    #[inline]
    pub(crate) fn insert_start(&self, start: &StartRow) -> Result<(), StoreError> {
        let s = start;
        self.tx
            .prepare_cached(&format!(
                "INSERT INTO checkpoint(cluster_id, kind, pid, {START_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
            ))
            .and_then(|mut stmt| {
                let l = &s.line;
                stmt.execute(params![
                    s.cluster_id,
                    s.kind.as_str(),
                    s.pid,
                    to_micros(s.at),
                    l.source_id,
                    l.offset,
                    l.line,
                    l.ahead_us,
                    s.flags,
                    s.trigger.as_str()
                ])
            })
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// A start and its complete line in one insert: the row
    /// [`PointRows::insert_start`] and then [`PointRows::complete`] would
    /// have left (paired, so no longer waiting).
    #[inline]
    pub(crate) fn insert_paired(
        &mut self,
        start: &StartRow,
        line: &LinePlace,
        at: Timestamp,
        figures: &CompleteFigures<'_>,
    ) -> Result<(), StoreError> {
        let (s, l, c) = (start, &start.line, line);
        let (started_at, completed_at) = (to_micros(s.at), to_micros(at));
        let (kind, trigger) = (s.kind.as_str(), s.trigger.as_str());
        self.paired
            .execute(params_from_iter(
                params![
                    s.cluster_id,
                    kind,
                    s.pid,
                    started_at,
                    l.source_id,
                    l.offset,
                    l.line,
                    l.ahead_us,
                    s.flags,
                    trigger,
                    completed_at,
                    c.source_id,
                    c.offset,
                    c.line,
                    c.ahead_us
                ]
                .iter()
                .copied()
                .chain(figures.values.iter().map(|f| f as &dyn ToSql))
                .chain([&figures.truncated as &dyn ToSql]),
            ))
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Row `id`, a complete line waiting for its start, gets `start`: paired.
    pub(crate) fn give_start(&self, id: i64, start: &StartRow) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "UPDATE checkpoint SET started_at = ?2, start_source_id = ?3, start_offset = ?4, start_line = ?5,
                   start_ahead_us = ?6, flags = ?7, trigger = ?8, pairable = 0 WHERE id = ?1",
            )
            .and_then(|mut s| {
                let l = &start.line;
                s.execute(params![
                    id,
                    to_micros(start.at),
                    l.source_id,
                    l.offset,
                    l.line,
                    l.ahead_us,
                    start.flags,
                    start.trigger.as_str()
                ])
            })
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Moves row `id`'s start to a new row (returned), waiting for a
    /// complete again; row `id` keeps its complete line, waiting for a start.
    pub(crate) fn split_off_start(&self, id: i64) -> Result<i64, StoreError> {
        let split = || -> rusqlite::Result<i64> {
            self.tx
                .prepare_cached(&format!(
                    "INSERT INTO checkpoint(cluster_id, kind, pid, {START_COLUMNS})
                     SELECT cluster_id, kind, pid, {START_COLUMNS} FROM checkpoint WHERE id = ?1"
                ))?
                .execute(params![id])?;
            let moved = self.tx.last_insert_rowid();
            self.tx
                .prepare_cached(&format!("UPDATE checkpoint SET {NO_START}, pairable = 1 WHERE id = ?1"))?
                .execute(params![id])?;
            Ok(moved)
        };
        split().map_err(|e| self.sql(e))
    }

    /// A new row for a complete line without its start, waiting for it.
    pub(crate) fn insert_complete_only(
        &self,
        cluster_id: i64,
        kind: PointKind,
        pid: Option<u32>,
        line: &LinePlace,
        at: Timestamp,
        figures: &CompleteFigures<'_>,
    ) -> Result<(), StoreError> {
        let c = line;
        self.tx
            .prepare_cached(&COMPLETE_ONLY)
            .and_then(|mut s| {
                s.execute(params_from_iter(
                    params![cluster_id, kind.as_str(), pid, to_micros(at), c.source_id, c.offset, c.line, c.ahead_us]
                        .iter()
                        .copied()
                        .chain(figures.values.iter().map(|f| f as &dyn ToSql))
                        .chain([&figures.truncated as &dyn ToSql]),
                ))
            })
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Row `id` gets a complete line and its figures, as a new row (see [`COMPLETE`]).
    pub(crate) fn complete(
        &self,
        id: i64,
        line: &LinePlace,
        at: Timestamp,
        figures: &CompleteFigures<'_>,
    ) -> Result<(), StoreError> {
        let c = line;
        let complete = || -> rusqlite::Result<()> {
            self.tx.prepare_cached(&COMPLETE)?.execute(params_from_iter(
                params![id, to_micros(at), c.source_id, c.offset, c.line, c.ahead_us]
                    .iter()
                    .copied()
                    .chain(figures.values.iter().map(|f| f as &dyn ToSql))
                    .chain([&figures.truncated as &dyn ToSql]),
            ))?;
            self.tx.prepare_cached("DELETE FROM checkpoint WHERE id = ?1")?.execute(params![id])?;
            Ok(())
        };
        complete().map_err(|e| self.sql(e))
    }

    /// No row of the cluster from `at` back waits for its other half any more.
    pub(crate) fn stop_waiting_until(&self, cluster_id: i64, at: Timestamp) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                // The open rows are few (partial index checkpoint_open);
                // SQLite chose the cluster's whole time range instead.
                "UPDATE checkpoint INDEXED BY checkpoint_open SET pairable = 0 WHERE cluster_id = ?1 AND pairable = 1
                   AND COALESCE(started_at, completed_at) <= ?2",
            )
            .and_then(|mut s| s.execute(params![cluster_id, to_micros(at)]))
            .map(drop)
            .map_err(|e| self.sql(e))
    }
}

/// What a complete line gives its row: its figures, and whether the line
/// was cut short (the figures after the cut are None).
pub(crate) struct CompleteFigures<'a> {
    pub(crate) values: [Figure<'a>; CompleteStats::COUNT],
    pub(crate) truncated: bool,
}

impl<'a> CompleteFigures<'a> {
    /// The figures of a complete line or of one cut short, None for any other event.
    pub(crate) fn of(body: &'a EventBody) -> Option<CompleteFigures<'a>> {
        match body {
            EventBody::PointComplete { stats, .. } => {
                Some(CompleteFigures { values: stats.values(), truncated: false })
            }
            EventBody::PointCut { stats, .. } => Some(CompleteFigures { values: stats.values(), truncated: true }),
            _ => None,
        }
    }
}

/// A figure as SQLite keeps it: NULL where the line did not print it.
impl ToSql for Figure<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Figure::Int(Some(v)) => ValueRef::Integer(v),
            Figure::Real(Some(v)) => ValueRef::Real(v),
            Figure::Text(Some(v)) => ValueRef::Text(v.as_bytes()),
            Figure::Int(None) | Figure::Real(None) | Figure::Text(None) => ValueRef::Null,
        }))
    }
}

/// Takes out the lines of `source` at `from` or later from their rows;
/// returns how many lines and how many whole rows went.
///
/// A row that keeps one half (read from another file) waits for the other
/// again, as before it was paired — unless the server restarted after its
/// start, which no complete line can then belong to (see `pairable` in
/// migrations/0001_init.sql). Called before the source's events from
/// `from` on are deleted: a restart among them does not count.
pub(super) fn release_lines_from(tx: &Transaction<'_>, source: i64, from: u64) -> rusqlite::Result<(u64, u64)> {
    let args = params![source, from as i64];
    let starts = tx.execute(
        &format!("UPDATE checkpoint SET {NO_START}, pairable = 1 WHERE start_source_id = ?1 AND start_offset >= ?2"),
        args,
    )?;
    let completes = tx.execute(
        "UPDATE checkpoint SET completed_at = NULL, complete_source_id = NULL, complete_offset = NULL,
           complete_line = NULL, complete_ahead_us = NULL,
           buffers_written = NULL, buffers_pct = NULL, slru_buffers_written = NULL,
           wal_files_added = NULL, wal_files_removed = NULL, wal_files_recycled = NULL,
           write_s = NULL, sync_s = NULL, total_s = NULL, sync_files = NULL, sync_longest_s = NULL,
           sync_average_s = NULL, distance_kb = NULL, estimate_kb = NULL, lsn = NULL, redo_lsn = NULL,
           truncated = 0,
           pairable = NOT EXISTS (SELECT 1 FROM event r
             WHERE r.cluster_id = checkpoint.cluster_id AND NOT (r.source_id = ?1 AND r.offset >= ?2)
               AND r.kind IN ('server_start', 'crash_reinit', 'server_shutdown') AND r.at > checkpoint.started_at)
         WHERE complete_source_id = ?1 AND complete_offset >= ?2",
        args,
    )?;
    // The rows left with neither line are among those without a start:
    // the partial index checkpoint_waiting holds them all.
    let rows = tx.execute(
        "DELETE FROM checkpoint WHERE id IN (SELECT id FROM checkpoint INDEXED BY checkpoint_waiting
           WHERE start_source_id IS NULL AND complete_source_id IS NULL)",
        [],
    )?;
    Ok(((starts + completes) as u64, rows as u64))
}

/// The last offset of `source` holding a stored checkpoint line (two seeks).
pub(super) fn last_line_offset(tx: &Transaction<'_>, source: i64) -> rusqlite::Result<Option<i64>> {
    tx.prepare_cached(
        "SELECT max((SELECT max(start_offset) FROM checkpoint WHERE start_source_id = ?1),
                    (SELECT max(complete_offset) FROM checkpoint WHERE complete_source_id = ?1))",
    )?
    .query_row(params![source], |r| r.get(0))
}

// --- Read back: the lines' times ---

/// The first (`order` "ASC") or last ("DESC") start line and complete line
/// of cluster `c.id` (a table `cluster c` of the enclosing query) dated in
/// `[?2, ?3)` and not more than ?4 µs ahead of walwatch's clock when read,
/// as two columns `s{order}` and `k{order}`: a seek of
/// checkpoint_cluster_time (whose time is the start where there is one)
/// and one of checkpoint_cluster_completed.
fn line_ends_sql(order: &str) -> String {
    format!(
        "(SELECT l.started_at FROM checkpoint l WHERE l.cluster_id = c.id
            AND COALESCE(l.started_at, l.completed_at) >= ?2 AND COALESCE(l.started_at, l.completed_at) < ?3
            AND l.started_at >= ?2 AND l.started_at < ?3 AND IFNULL(l.start_ahead_us, 0) <= ?4
          ORDER BY COALESCE(l.started_at, l.completed_at) {order} LIMIT 1) AS s{order},
         (SELECT l.completed_at FROM checkpoint l WHERE l.cluster_id = c.id
            AND l.completed_at >= ?2 AND l.completed_at < ?3 AND IFNULL(l.complete_ahead_us, 0) <= ?4
          ORDER BY l.completed_at {order} LIMIT 1) AS k{order}"
    )
}

/// [`Checkpoints::line_ends`] of one cluster (?1) or of all.
pub(super) static LINE_ENDS: LazyLock<[String; 2]> = LazyLock::new(|| {
    let sql = |cond: &str| {
        // Scalar min() and max() of two values are NULL when either is:
        // each stands in for the other when it is missing.
        format!(
            "SELECT min(min(IFNULL(sASC, kASC), IFNULL(kASC, sASC))), max(max(IFNULL(sDESC, kDESC), IFNULL(kDESC, sDESC)))
             FROM (SELECT {}, {} FROM cluster c WHERE 1 = 1 {cond})",
            line_ends_sql("ASC"),
            line_ends_sql("DESC")
        )
    };
    [sql("AND c.name = ?1"), sql("AND ?1 IS NULL")]
});

impl<S: Deref<Target = Store>> Checkpoints<S> {
    /// The first and last checkpoint or restartpoint line (start or
    /// complete) over `filter`'s clusters and window, leaving out the lines
    /// dated more than `tolerance_us` ahead of walwatch's clock when read
    /// (see migrations/0007_event_ahead.sql): four index seeks per cluster,
    /// in a statement prepared once per connection (`status` asks it of
    /// every cluster of a fleet).
    pub(crate) fn line_ends(
        &self,
        filter: &Filter,
        tolerance_us: i64,
    ) -> Result<(Option<i64>, Option<i64>), StoreError> {
        let store = &*self.0;
        let sql = &LINE_ENDS[usize::from(filter.cluster.is_none())];
        let values = params![
            filter.cluster,
            filter.since.map_or(i64::MIN, to_micros),
            filter.until.map_or(i64::MAX, to_micros),
            tolerance_us
        ];
        let q = || store.conn.prepare_cached(sql)?.query_row(values, |r| Ok((r.get(0)?, r.get(1)?)));
        q().map_err(|e| store.sql(e))
    }
}

// --- Read back: the rows ---

/// A figure's type in a row read back: any may be NULL (a start without
/// its complete).
macro_rules! stored_type {
    (Int) => { Option<i64> };
    (Real) => { Option<f64> };
    (Text) => { Option<String> };
}

macro_rules! checkpoint_row {
    ($($name:ident: $kind:ident, $need:ident;)*) => {
        /// One checkpoint or restartpoint, as `walwatch checkpoints` shows it:
        /// what its start line says, then the figures of its complete line
        /// ([`point_figures`]).
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub(crate) struct CheckpointRow {
            pub(crate) cluster: String,
            pub(crate) kind: PointKind,
            pub(crate) trigger: Option<Trigger>,
            pub(crate) flags: Vec<String>,
            #[serde(serialize_with = "crate::timefmt::serialize_opt")]
            pub(crate) started_at: Option<Timestamp>,
            #[serde(serialize_with = "crate::timefmt::serialize_opt")]
            pub(crate) completed_at: Option<Timestamp>,
            $(pub(crate) $name: stored_type!($kind),)*
        }

        impl CheckpointRow {
            /// The figures' values, in [`CompleteStats::FIGURES`]' order.
            pub(crate) fn figures(&self) -> [Figure<'_>; CompleteStats::COUNT] {
                [$(Figure::from(&self.$name)),*]
            }
        }

        /// A row read back by position (a listing of a million rows reads
        /// by position: a lookup by name scans the column names for every
        /// value): [`HEAD`], then the figures.
        fn checkpoint_row(r: &Row<'_>) -> rusqlite::Result<CheckpointRow> {
            let flags: Option<String> = r.get(3)?;
            let mut figure = HEAD.len()..;
            let mut next = || figure.next().expect("unbounded");
            Ok(CheckpointRow {
                cluster: r.get(0)?,
                kind: r.get(1)?,
                trigger: r.get(2)?,
                flags: flags.map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default(),
                started_at: opt_from_micros(r.get(4)?),
                completed_at: opt_from_micros(r.get(5)?),
                $($name: r.get(next())?,)*
            })
        }
    };
}
point_figures!(checkpoint_row);

/// The columns before the figures, in [`checkpoint_row`]'s order.
const HEAD: [&str; 6] = ["c.name", "k.kind", "k.trigger", "k.flags", "k.started_at", "k.completed_at"];

/// What [`checkpoint_row`] reads, in its order.
static CHECKPOINT_COLUMNS: LazyLock<String> = LazyLock::new(|| {
    let figures = CompleteStats::FIGURES.iter().map(|f| format!("k.{f}"));
    let tail = std::iter::once("k.truncated".to_string());
    HEAD.iter().map(|h| h.to_string()).chain(figures).chain(tail).collect::<Vec<_>>().join(", ")
});

/// [`Checkpoints::last_checkpoint_before`]: cluster ?1, before ?2.
pub(super) static LAST_CHECKPOINT_BEFORE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
         WHERE c.name = ?1 AND {POINT_TIME} < ?2 AND k.kind = 'checkpoint' AND k.started_at IS NOT NULL
         ORDER BY {POINT_TIME} DESC, k.id DESC LIMIT 1",
        *CHECKPOINT_COLUMNS
    )
});

/// The count of [`Checkpoints::truncated`], before the filter's conditions.
/// INDEXED BY: the cut rows are few, their index is the shortest read
/// whatever the window; given a time range, SQLite chose a time index and
/// read every row of the range.
pub(super) const TRUNCATED: &str = "SELECT count(*) FROM checkpoint k INDEXED BY checkpoint_truncated
     JOIN cluster c ON c.id = k.cluster_id WHERE k.truncated = 1";

impl<S: Deref<Target = Store>> Checkpoints<S> {
    /// Checkpoints and restartpoints of `cluster` that started (or, with no
    /// start line, completed) in `[since, until]`.
    pub(crate) fn between(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<CheckpointRow>, StoreError> {
        // Filter's until is exclusive; the window's end is the newest evidence itself.
        let until = until.checked_add(jiff::SignedDuration::from_micros(1)).unwrap_or(until);
        self.list(&Filter { cluster: Some(cluster.into()), since: Some(since), until: Some(until), trigger: None })
    }

    /// Checkpoints and restartpoints in time order.
    pub(crate) fn list(&self, filter: &Filter) -> Result<Vec<CheckpointRow>, StoreError> {
        let mut rows = Vec::new();
        self.each(filter, |row| {
            rows.push(row);
            Ok::<(), StoreError>(())
        })?;
        Ok(rows)
    }

    /// Checkpoints and restartpoints in time order, handed to `f` one at a
    /// time as SQLite reads them: a listing of a million rows holds one row
    /// in memory, never the whole list. An error of `f` stops the listing.
    pub(crate) fn each<E: From<StoreError>>(
        &self,
        filter: &Filter,
        mut f: impl FnMut(CheckpointRow) -> Result<(), E>,
    ) -> Result<(), E> {
        self.each_marked(filter, |row, _| f(row))
    }

    /// The last checkpoint (not restartpoint) with a start line before
    /// `until` in `cluster`: one row read backwards from `until` along
    /// checkpoint_cluster_time, where a listing of everything before it
    /// reads the cluster's whole history.
    pub(crate) fn last_checkpoint_before(
        &self,
        cluster: &str,
        until: Timestamp,
    ) -> Result<Option<CheckpointRow>, StoreError> {
        let store = &*self.0;
        let q = || store.conn.query_row(&LAST_CHECKPOINT_BEFORE, params![cluster, to_micros(until)], checkpoint_row);
        q().optional().map_err(|e| store.sql(e))
    }

    /// How many checkpoints and restartpoints of `filter` were stored from
    /// a complete line cut short (migrations/0020_truncated.sql): the rows
    /// of the partial index checkpoint_truncated (0021_compact.sql).
    pub(crate) fn truncated(&self, filter: &Filter) -> Result<i64, StoreError> {
        let store = &*self.0;
        let (cond, values) = filter.conditions(POINT_TIME);
        let sql = format!("{TRUNCATED} {cond}");
        store.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| store.sql(e))
    }

    /// [`Checkpoints::each`], each row with whether its complete line was
    /// cut short (its figures after the cut unknown: migrations/0020_truncated.sql).
    pub(crate) fn each_marked<E: From<StoreError>>(
        &self,
        filter: &Filter,
        mut f: impl FnMut(CheckpointRow, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        let store = &*self.0;
        let (mut cond, mut values) = filter.conditions(POINT_TIME);
        if let Some(t) = &filter.trigger {
            cond.push_str(" AND k.trigger = ?");
            values.push(Value::Text(t.as_str().to_string()));
        }
        // Cluster by cluster (CROSS JOIN: SQLite keeps that order), each a
        // range of checkpoint_cluster_time, the rows of several clusters
        // merged by SQLite's sorter; one cluster's come in the index's order.
        let sql = format!(
            "SELECT {} FROM cluster c CROSS JOIN checkpoint k ON k.cluster_id = c.id
             WHERE 1 = 1 {cond} ORDER BY {POINT_TIME}, k.id",
            *CHECKPOINT_COLUMNS
        );
        let mut stmt = store.conn.prepare(&sql).map_err(|e| store.sql(e))?;
        let mut rows = stmt.query(params_from_iter(values)).map_err(|e| store.sql(e))?;
        while let Some(row) = rows.next().map_err(|e| store.sql(e))? {
            let truncated = row.get(HEAD.len() + CompleteStats::COUNT).map_err(|e| store.sql(e))?;
            f(checkpoint_row(row).map_err(|e| store.sql(e))?, truncated)?;
        }
        Ok(())
    }
}

// --- Read back: counts (`summary`, `history`, the metrics) ---

/// Counts for one kind of point (checkpoints or restartpoints).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct PointCounts {
    pub(crate) started: i64,
    pub(crate) completed: i64,
    pub(crate) by_trigger: ByTrigger,
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
pub(crate) struct ByTrigger {
    pub(crate) shutdown: i64,
    #[serde(rename = "end-of-recovery")]
    pub(crate) end_of_recovery: i64,
    pub(crate) wal: i64,
    pub(crate) time: i64,
    pub(crate) manual: i64,
}

impl ByTrigger {
    pub(crate) fn get(&self, trigger: Trigger) -> i64 {
        match trigger {
            Trigger::Shutdown => self.shutdown,
            Trigger::EndOfRecovery => self.end_of_recovery,
            Trigger::Wal => self.wal,
            Trigger::Time => self.time,
            Trigger::Manual => self.manual,
        }
    }

    pub(crate) fn total(&self) -> i64 {
        self.shutdown + self.end_of_recovery + self.wal + self.time + self.manual
    }

    /// Both counts added, trigger by trigger.
    pub(crate) fn plus(&self, o: &ByTrigger) -> ByTrigger {
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

/// Started points of one cluster, kind and trigger ("" when unknown),
/// from the tally that [`Checkpoints::counts`] reads for whole days.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PointTotal {
    pub(crate) cluster: String,
    pub(crate) kind: String,
    pub(crate) trigger: String,
    pub(crate) started: i64,
}

/// The figures of one completed checkpoint that the metrics' histograms count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Completed {
    pub(crate) cluster: String,
    /// Its row's id: a row completed later than another has a higher one
    /// (migrations/0022_point_lines.sql), and rows are read in this order.
    pub(crate) id: i64,
    pub(crate) completed_at_us: Option<i64>,
    pub(crate) write_s: Option<f64>,
    pub(crate) sync_s: Option<f64>,
    pub(crate) total_s: Option<f64>,
    pub(crate) distance_kb: Option<i64>,
    pub(crate) estimate_kb: Option<i64>,
    pub(crate) buffers_written: Option<i64>,
    pub(crate) trigger: Option<Trigger>,
}

impl<S: Deref<Target = Store>> Checkpoints<S> {
    /// The points of `kind` ("checkpoint" or "restartpoint") over `filter`,
    /// by trigger. Counted from the tally (migrations/0009_scale.sql) for
    /// the whole UTC days of the window and from the rows themselves for the
    /// partial days at its ends: a million rows are never read one by one.
    pub(crate) fn counts(&self, filter: &Filter, kind: &str) -> Result<PointCounts, StoreError> {
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
        let store = &*self.0;
        let (cond, cluster) = filter.cluster_condition();
        let mut values = vec![Value::Text(kind.into()), Value::Integer(first), Value::Integer(end)];
        values.extend(cluster);
        let sql = format!(
            "SELECT t.trigger, sum(t.started), sum(t.completed)
             FROM point_tally t JOIN cluster c ON c.id = t.cluster_id
             WHERE t.kind = ? AND t.day >= ? AND t.day < ? {cond} GROUP BY t.trigger"
        );
        let mut stmt = store.conn.prepare(&sql).map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params_from_iter(values), |r| {
                Ok((Trigger::parse(&r.get::<_, String>(0)?), r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .map_err(|e| store.sql(e))?;
        for row in rows {
            let (trigger, started, completed) = row.map_err(|e| store.sql(e))?;
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
        let store = &*self.0;
        let (mut cond, cluster) = filter.cluster_condition();
        let (time, bounds) = times(POINT_TIME, since, until);
        cond.push_str(&time);
        let mut values = vec![Value::Text(kind.into())];
        values.extend(cluster);
        values.extend(bounds);
        let sql = format!(
            "SELECT k.trigger, count(k.start_source_id), count(k.complete_source_id)
             FROM cluster c CROSS JOIN checkpoint k ON k.cluster_id = c.id
             WHERE k.kind = ? {cond} GROUP BY k.trigger"
        );
        let mut stmt = store.conn.prepare(&sql).map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params_from_iter(values), |r| {
                Ok((r.get::<_, Option<Trigger>>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .map_err(|e| store.sql(e))?;
        for row in rows {
            let (trigger, started, completed) = row.map_err(|e| store.sql(e))?;
            counts.add(trigger, started, completed);
        }
        Ok(())
    }

    /// Every cluster's started points by kind and trigger, over all time,
    /// so that a counter is the same number before and after a daemon restart.
    pub(crate) fn started_totals(&self) -> Result<Vec<PointTotal>, StoreError> {
        let store = &*self.0;
        // Grouped by id, then named: grouping by the joined name sorts
        // twice as long (a week of 50 clusters: 3.4 ms against 1.8 ms).
        let sql = "SELECT c.name, g.kind, g.trigger, g.started
                   FROM (SELECT cluster_id, kind, trigger, sum(started) AS started FROM point_tally
                         GROUP BY cluster_id, kind, trigger) g
                   JOIN cluster c ON c.id = g.cluster_id";
        let mut stmt = store.conn.prepare(sql).map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(PointTotal { cluster: r.get(0)?, kind: r.get(1)?, trigger: r.get(2)?, started: r.get(3)? })
            })
            .map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// How many stored checkpoints have a complete line, from the day
    /// tally (kept in step by triggers whatever inserts, pairs or deletes).
    pub(crate) fn completed_total(&self) -> Result<i64, StoreError> {
        self.0
            .conn
            .query_row("SELECT IFNULL(sum(completed), 0) FROM point_tally", [], |r| r.get(0))
            .map_err(|e| self.0.sql(e))
    }

    /// The highest row id: rows completed later are above it.
    pub(crate) fn last_row(&self) -> Result<Option<i64>, StoreError> {
        self.0.conn.query_row("SELECT max(id) FROM checkpoint", [], |r| r.get(0)).map_err(|e| self.0.sql(e))
    }

    /// The lowest row id: it moves up only when rows are deleted.
    pub(crate) fn first_row(&self) -> Result<Option<i64>, StoreError> {
        self.0.conn.query_row("SELECT min(id) FROM checkpoint", [], |r| r.get(0)).map_err(|e| self.0.sql(e))
    }

    /// For each cluster with rows stored after row `after` (a row gets a
    /// new id when its complete line comes): the highest such id and the
    /// newest line time among them not dated more than `tolerance_us`
    /// ahead, read as a range of the primary key. A start given later to a
    /// row stored from its complete alone (files read out of order) keeps
    /// the row's id: a start precedes its complete.
    pub(crate) fn newest_lines_after(
        &self,
        after: i64,
        tolerance_us: i64,
    ) -> Result<Vec<(String, i64, Option<i64>)>, StoreError> {
        let store = &*self.0;
        let sql = "SELECT c.name, max(r.id), max(max(IFNULL(r.s, r.k), IFNULL(r.k, r.s)))
                   FROM (SELECT k.id, k.cluster_id,
                                CASE WHEN IFNULL(k.start_ahead_us, 0) <= ?2 THEN k.started_at END AS s,
                                CASE WHEN IFNULL(k.complete_ahead_us, 0) <= ?2 THEN k.completed_at END AS k
                         FROM checkpoint k WHERE k.id > ?1) r
                   JOIN cluster c ON c.id = r.cluster_id GROUP BY c.name";
        let mut stmt = store.conn.prepare(sql).map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params![after, tolerance_us], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// Checkpoints completed after row `after` was stored, in that order
    /// (a range of row ids: a row gets a new id when its complete line
    /// comes), for reading them incrementally. A complete line gets its
    /// figures in the statement that records it, so a row read here never
    /// changes its figures later.
    pub(crate) fn completed_after(&self, after: i64) -> Result<Vec<Completed>, StoreError> {
        let store = &*self.0;
        let sql = "SELECT c.name, k.id, k.completed_at, k.write_s, k.sync_s, k.total_s,
                          k.distance_kb, k.estimate_kb, k.buffers_written, k.trigger
                   FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
                   WHERE k.id > ?1 AND k.complete_source_id IS NOT NULL ORDER BY k.id";
        let mut stmt = store.conn.prepare(sql).map_err(|e| store.sql(e))?;
        let rows = stmt
            .query_map(params![after], |r| {
                Ok(Completed {
                    cluster: r.get(0)?,
                    id: r.get(1)?,
                    completed_at_us: r.get(2)?,
                    write_s: r.get(3)?,
                    sync_s: r.get(4)?,
                    total_s: r.get(5)?,
                    distance_kb: r.get(6)?,
                    estimate_kb: r.get(7)?,
                    buffers_written: r.get(8)?,
                    trigger: r.get(9)?,
                })
            })
            .map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }
}

// --- Read back: the cycles of the max_wal_size model ---

/// One checkpoint or restartpoint that has a start time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PointStart {
    pub(crate) kind: PointKind,
    pub(crate) started_at: Timestamp,
    pub(crate) trigger: Option<Trigger>,
    pub(crate) distance_kb: Option<i64>,
    pub(crate) wal_files_added: Option<i64>,
}

/// The inputs of the sizing model, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SizingHistory {
    pub(crate) points: Vec<PointStart>,
    /// Server starts, crash restarts and recoveries: a cycle spanning one is
    /// not a measure of the WAL rate.
    pub(crate) restarts: Vec<Timestamp>,
    pub(crate) too_frequent: i64,
    pub(crate) replays: Vec<Replay>,
    /// Checkpoints and restartpoints whose complete line logged no WAL
    /// distance (PostgreSQL 9.4 and older): they cannot be sized from.
    pub(crate) without_distance: i64,
}

/// The newest checkpoint and restartpoint starts, with the server restarts
/// among them: what the settings inference reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RecentStarts {
    /// Oldest first.
    pub(crate) points: Vec<PointStart>,
    pub(crate) restarts: Vec<Timestamp>,
}

/// The starts of cluster ?1 in `[?2, ?3)` and the one before ?2, in time order.
/// The cluster and the lower bound are uncorrelated scalar subqueries,
/// computed once; as CTEs joined to the rows, bundled SQLite re-ran the
/// bound's co-routine for every row (13 ms for a week of 5-minute
/// checkpoints instead of 0.4). A row with a start has the point's time
/// COALESCE(started_at, completed_at) = started_at, so both the bound and
/// the rows are ranges of checkpoint_cluster_time in start order; an index
/// of the start alone cost 20 bytes a row for the same order
/// (migrations/0021_compact.sql).
const POINT_STARTS: &str = "SELECT k.kind, k.started_at, k.trigger, k.distance_kb, k.wal_files_added
     FROM checkpoint k
     WHERE k.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
       AND k.started_at IS NOT NULL AND COALESCE(k.started_at, k.completed_at) < ?3
       AND COALESCE(k.started_at, k.completed_at) >= COALESCE(
             (SELECT k2.started_at FROM checkpoint k2
              WHERE k2.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
                AND COALESCE(k2.started_at, k2.completed_at) < ?2 AND k2.started_at IS NOT NULL
              ORDER BY COALESCE(k2.started_at, k2.completed_at) DESC LIMIT 1), ?2)
     ORDER BY COALESCE(k.started_at, k.completed_at), k.id";

/// The newest ?3 starts of cluster ?1 at or after ?2, newest first, in the
/// order of checkpoint_cluster_time (for a row with a start, the start's
/// order): the index yields them in that order and the LIMIT stops the read.
const RECENT_STARTS: &str = "SELECT k.kind, k.started_at, k.trigger, k.distance_kb, k.wal_files_added
     FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
     WHERE c.name = ?1 AND k.started_at IS NOT NULL AND COALESCE(k.started_at, k.completed_at) >= ?2
     ORDER BY COALESCE(k.started_at, k.completed_at) DESC, k.id DESC LIMIT ?3";

impl<S: Deref<Target = Store>> Checkpoints<S> {
    /// The history of `cluster` in `[since, until)` that the sizing model
    /// reads, plus the checkpoint just before `since` so that the first
    /// cycle in the window has a start; with the events that tell a cycle
    /// apart ([`super::events::Events`]).
    pub(crate) fn sizing_history(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<SizingHistory, StoreError> {
        let (since, until) = (to_micros(since), to_micros(until));
        let events = self.0.events();
        Ok(SizingHistory {
            points: self.point_starts(cluster, since, until)?,
            restarts: events.restarts_from_month_before(cluster, since, until)?,
            too_frequent: events.count_too_frequent(cluster, since, until)?,
            replays: events.replays(cluster)?,
            without_distance: self.without_distance(cluster, since, until)?,
        })
    }

    /// The starts of `cluster` in `[since, until)` (µs) and the one before.
    pub(super) fn point_starts(&self, cluster: &str, since: i64, until: i64) -> Result<Vec<PointStart>, StoreError> {
        // The lower bound is computed once (see POINT_STARTS), not per row:
        // a subquery correlated with the outer row rescans the cluster's
        // checkpoints for every row, quadratic in a long history (minutes at
        // 80 000 points).
        let q = || -> rusqlite::Result<Vec<PointStart>> {
            let mut stmt = self.0.conn.prepare_cached(POINT_STARTS)?;
            let rows = stmt.query_map(params![cluster, since, until], point_start)?;
            rows.collect()
        };
        q().map_err(|e| self.0.sql(e))
    }

    /// Completed points of `cluster` in `[since, until)` (µs) whose complete
    /// line logged no WAL distance.
    fn without_distance(&self, cluster: &str, since: i64, until: i64) -> Result<i64, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT count(*) FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
                 WHERE c.name = ?1 AND k.completed_at IS NOT NULL AND k.distance_kb IS NULL
                 AND COALESCE(k.started_at, k.completed_at) >= ?2
                 AND COALESCE(k.started_at, k.completed_at) < ?3",
                params![cluster, since, until],
                |r| r.get(0),
            )
            .map_err(|e| self.0.sql(e))
    }

    /// The newest `limit` starts of `cluster` at or after `since`, oldest
    /// first, and the restarts from the first of them on.
    pub(crate) fn recent_starts(
        &self,
        cluster: &str,
        since: Option<Timestamp>,
        limit: usize,
    ) -> Result<RecentStarts, StoreError> {
        let since = since.map_or(i64::MIN, to_micros);
        let q = || -> rusqlite::Result<Vec<PointStart>> {
            let mut stmt = self.0.conn.prepare_cached(RECENT_STARTS)?;
            let rows = stmt.query_map(params![cluster, since, limit as i64], point_start)?;
            rows.collect()
        };
        let mut points = q().map_err(|e| self.0.sql(e))?;
        points.reverse();
        let restarts = match points.first() {
            Some(first) => {
                self.0.events().restarts_from_month_before(cluster, to_micros(first.started_at), i64::MAX)?
            }
            None => Vec::new(),
        };
        Ok(RecentStarts { points, restarts })
    }
}

/// A row of [`POINT_STARTS`] or [`RECENT_STARTS`], whose columns are in this
/// order (a test checks it). By position: a column read by name is a scan of
/// the statement's names with strcmp on every row, a tenth of a digest's CPU
/// when it read 5 000 starts per cluster.
fn point_start(r: &rusqlite::Row<'_>) -> rusqlite::Result<PointStart> {
    Ok(PointStart {
        kind: r.get(0)?,
        started_at: from_micros(r.get(1)?),
        trigger: r.get(2)?,
        distance_kb: r.get(3)?,
        wal_files_added: r.get(4)?,
    })
}

// --- Read back: `history`, streamed ---

/// One checkpoint or restartpoint row, as history aggregates it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryPoint {
    pub(crate) kind: PointKind,
    /// Its time: the start, or the completion when the start was not read
    /// (as `checkpoints` and `summary` place it).
    pub(crate) at: Timestamp,
    pub(crate) started_at: Option<Timestamp>,
    /// A start line was read (what `summary` counts by trigger).
    pub(crate) has_start: bool,
    pub(crate) trigger: Option<Trigger>,
    pub(crate) distance_kb: Option<i64>,
    pub(crate) buffers_written: Option<i64>,
    pub(crate) write_s: Option<f64>,
    pub(crate) sync_s: Option<f64>,
    pub(crate) sync_longest_s: Option<f64>,
    pub(crate) wal_files_added: Option<i64>,
    pub(crate) wal_files_removed: Option<i64>,
    pub(crate) wal_files_recycled: Option<i64>,
}

impl HistoryPoint {
    /// The start the sizing model's cycles are made of, when it has one.
    pub(crate) fn start(&self) -> Option<PointStart> {
        Some(PointStart {
            kind: self.kind,
            started_at: self.started_at?,
            trigger: self.trigger,
            distance_kb: self.distance_kb,
            wal_files_added: self.wal_files_added,
        })
    }
}

impl<S: Deref<Target = Store>> Checkpoints<S> {
    /// The first and last time of what `history` shows for `cluster`: its
    /// points and the events it counts ([`super::events::Events::history_end`]),
    /// leaving out those dated more than `tolerance` ahead (see
    /// migrations/0007_event_ahead.sql). A few index lookups at each end,
    /// where `log_times` reads every event of the cluster (a tenth of a
    /// second on a year of a busy server).
    pub(crate) fn history_span(
        &self,
        cluster: &str,
        tolerance: std::time::Duration,
    ) -> Result<(Option<Timestamp>, Option<Timestamp>), StoreError> {
        let tolerance_us = tolerance_us(tolerance);
        let mut ends: Vec<i64> = Vec::new();
        for order in ["ASC", "DESC"] {
            let point = format!(
                "SELECT COALESCE(k.started_at, k.completed_at) FROM checkpoint k
                 WHERE k.cluster_id = {CLUSTER} AND COALESCE(k.started_at, k.completed_at) IS NOT NULL
                   AND IFNULL(k.start_ahead_us, 0) <= ?2 AND IFNULL(k.complete_ahead_us, 0) <= ?2
                 ORDER BY COALESCE(k.started_at, k.completed_at) {order} LIMIT 1"
            );
            ends.extend(
                self.0
                    .conn
                    .query_row(&point, params![cluster, tolerance_us], |r| r.get::<_, i64>(0))
                    .optional()
                    .map_err(|e| self.0.sql(e))?,
            );
            ends.extend(self.0.events().history_ends(cluster, tolerance_us, order)?);
        }
        let span = |t: Option<&i64>| t.copied().map(from_micros);
        Ok((span(ends.iter().min()), span(ends.iter().max())))
    }

    /// Every point of `cluster` whose time is in `[since, until)`, in time order.
    pub(crate) fn history(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
        mut each: impl FnMut(HistoryPoint),
    ) -> Result<(), StoreError> {
        // Ordered by the expression checkpoint_cluster_time holds (and its
        // rowid): an index range scan, no sort.
        let sql = format!(
            "SELECT k.kind, COALESCE(k.started_at, k.completed_at), k.started_at, k.start_source_id IS NOT NULL,
                    k.trigger, k.distance_kb, k.buffers_written, k.write_s, k.sync_s, k.sync_longest_s,
                    k.wal_files_added, k.wal_files_removed, k.wal_files_recycled
             FROM checkpoint k
             WHERE k.cluster_id = {CLUSTER}
               AND COALESCE(k.started_at, k.completed_at) >= ?2 AND COALESCE(k.started_at, k.completed_at) < ?3
             ORDER BY COALESCE(k.started_at, k.completed_at), k.id"
        );
        let mut q = || -> rusqlite::Result<()> {
            let mut stmt = self.0.conn.prepare_cached(&sql)?;
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
        q().map_err(|e| self.0.sql(e))
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
        let row = self.0.conn.query_row(&sql, params![cluster, to_micros(since)], |r| {
            Ok(PointStart {
                kind: r.get(0)?,
                started_at: from_micros(r.get(1)?),
                trigger: r.get(2)?,
                distance_kb: r.get(3)?,
                wal_files_added: r.get(4)?,
            })
        });
        row.optional().map_err(|e| self.0.sql(e))
    }
}
