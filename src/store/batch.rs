//! Events written in batches: one transaction stores a batch of a
//! source's events, the checkpoint rows they make ([`PointRows`]) and how
//! far the source was read ([`move_on`]), so that a crash leaves either all
//! of it or none. Above the events, checkpoints and sources it ties
//! together, so that none of them needs the others' writers.

use std::ops::DerefMut;
use std::path::Path;

use jiff::Timestamp;
use rusqlite::TransactionBehavior;
use rusqlite::{params, CachedStatement, Transaction};
use serde_json::json;

use super::checkpoints::{last_line_offset, Half, LinePlace, PointRows};
use super::columns::to_micros;
use super::events::Events;
use super::sources::{move_on, SourceRow, SourceSpec};
use super::{Store, StoreError};
use crate::frame::Pos;
use crate::model::event::{Event, EventBody, PointKind};

impl<S: DerefMut<Target = Store>> Events<S> {
    /// Stores a batch of `source`'s events with `write`, which is given the
    /// batch's transaction ([`EventBatch`]) and returns how many events were
    /// new, and moves `source` to `reached`, atomically. An error of
    /// `write` rolls the whole batch back.
    pub(crate) fn commit_batch(
        &mut self,
        source: &mut SourceRow,
        spec: &SourceSpec<'_>,
        reached: Pos,
        write: impl FnOnce(&mut EventBatch<'_>) -> Result<usize, StoreError>,
    ) -> Result<usize, StoreError> {
        let store = &mut *self.0;
        if !store.import {
            return commit_batch_checked(store, source, spec, reached, write);
        }
        // An import's batch without foreign-key checks (see
        // `use_import_settings`); they are back on whatever happened, and
        // the batch's own error is the one told.
        store.foreign_keys(false)?;
        let committed = commit_batch_checked(store, source, spec, reached, write);
        let restored = store.foreign_keys(true);
        let added = committed?;
        restored?;
        Ok(added)
    }
}

/// [`Events::commit_batch`] itself, with the connection's foreign-key setting as it is.
fn commit_batch_checked(
    store: &mut Store,
    source: &mut SourceRow,
    spec: &SourceSpec<'_>,
    reached: Pos,
    write: impl FnOnce(&mut EventBatch<'_>) -> Result<usize, StoreError>,
) -> Result<usize, StoreError> {
    let path = store.path.clone();
    let sql = |source| StoreError::Sql { path: path.clone(), source };
    // Immediate: the lock is taken before anything is read, so a commit
    // never has to give up because another process committed in between.
    let tx = store.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
    let added = {
        let mut batch = EventBatch::new(&tx, &path, source).map_err(sql)?;
        write(&mut batch)?
    };
    move_on(&tx, source, spec, reached).map_err(sql)?;
    tx.commit().map_err(sql)?;
    source.read_to = reached.offset;
    source.line = reached.line;
    Ok(added)
}

/// An event other than a checkpoint line (those are their rows' places:
/// migrations/0022_point_lines.sql). [`EventBatch::insert`] first looks for
/// one at the same place ([`EVENT_AT_PLACE`]).
const INSERT_EVENT: &str = "INSERT INTO event(cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

/// Whether an event of kind ?4 is stored at the place (source ?1, offset
/// ?2, nth ?3): a line read again (a rewind, another process reading the
/// same file) is stored once. The index event_place leaves the kind out (at
/// most one event of a record has a given nth), which halves its size; the
/// kind is compared in the row one seek finds, so the rule is the one the
/// unique constraint before migrations/0021_compact.sql enforced. A
/// statement of its own: as the insert's `WHERE NOT EXISTS`, SQLite copied
/// each row through a temporary table first (15 % more CPU for an import).
const EVENT_AT_PLACE: &str =
    "SELECT EXISTS (SELECT 1 FROM event WHERE source_id = ?1 AND offset = ?2 AND nth = ?3 AND kind = ?4)";

/// Whether the source holds the same event somewhere else: same cluster,
/// kind, time, pid, nth and fields (one seek of event_cluster_kind_at).
/// Asked only of an event at or before the last offset stored of its
/// source ([`EventBatch::insert`]): a file rewritten in place, shorter,
/// and read again from its start (an editor's save, an older copy put
/// back) has its remaining lines at other offsets, usually earlier ones.
/// Two real events of one process alike in all of that, down to the time
/// the prefix gives, would be one checkpoint logged twice.
const SAME_EVENT: &str = "SELECT EXISTS (SELECT 1 FROM event WHERE cluster_id = ?1 AND kind = ?2 AND at = ?3
     AND source_id = ?4 AND pid IS ?5 AND nth = ?6 AND data = ?7)";

/// One batch of a source's events being stored, in its transaction: the
/// events, and the checkpoint rows they make ([`EventBatch::points`]).
pub(crate) struct EventBatch<'a> {
    tx: &'a Transaction<'a>,
    path: &'a Path,
    source: &'a SourceRow,
    /// [`INSERT_EVENT`] and [`EVENT_AT_PLACE`], prepared once for the
    /// batch like the checkpoint rows' statements.
    insert: CachedStatement<'a>,
    stored: CachedStatement<'a>,
    points: PointRows<'a>,
    /// The last offset of the source holding a stored event when the
    /// batch began (None: none); read on first use.
    last_stored: Option<Option<i64>>,
}

impl<'a> EventBatch<'a> {
    fn new(tx: &'a Transaction<'a>, path: &'a Path, source: &'a SourceRow) -> rusqlite::Result<EventBatch<'a>> {
        let points = PointRows::new(tx, path)?;
        let insert = tx.prepare_cached(INSERT_EVENT)?;
        let stored = tx.prepare_cached(EVENT_AT_PLACE)?;
        Ok(EventBatch { tx, path, source, insert, stored, points, last_stored: None })
    }

    /// Whether `event` is stored at another place of its source (see [`SAME_EVENT`]).
    fn event_elsewhere(&self, event: &Event, kind: &str, at: i64, data: &str) -> Result<bool, StoreError> {
        let source = self.source;
        self.tx
            .prepare_cached(SAME_EVENT)
            .and_then(|mut same| {
                same.query_row(params![source.cluster_id, kind, at, source.id, event.pid, event.nth, data], |r| {
                    r.get(0)
                })
            })
            .map_err(|e| self.sql(e))
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql { path: self.path.into(), source }
    }

    /// The source the batch was read from.
    #[inline]
    pub(crate) fn source(&self) -> &'a SourceRow {
        self.source
    }

    /// The checkpoint rows, in the batch's transaction.
    #[inline]
    pub(crate) fn points(&mut self) -> &mut PointRows<'a> {
        &mut self.points
    }

    /// Whether the store holds no event of the source at or after `offset`
    /// (always so for a file read for the first time or followed as it
    /// grows; not after a rewind, or where another process read further).
    /// One index seek.
    pub(crate) fn nothing_stored_from(&mut self, offset: u64) -> Result<bool, StoreError> {
        Ok(self.last_stored()?.is_none_or(|last| last < offset as i64))
    }

    /// See [`EventBatch::last_stored`]'s field.
    fn last_stored(&mut self) -> Result<Option<i64>, StoreError> {
        if let Some(last) = self.last_stored {
            return Ok(last);
        }
        let last = last_stored(self.tx, self.source).map_err(|e| self.sql(e))?;
        self.last_stored = Some(last);
        Ok(last)
    }

    /// Stores `event`, unless it is stored already: its place, or None.
    ///
    /// A checkpoint or restartpoint line is only looked for here: its row,
    /// which holds its place, is written by the pairing (`ingest::pairing`),
    /// given the place returned.
    #[inline]
    pub(crate) fn insert(&mut self, event: &Event) -> Result<Option<LinePlace>, StoreError> {
        let place = LinePlace {
            source_id: self.source.id,
            offset: event.offset as i64,
            line: event.line as i64,
            ahead_us: ahead_of_clock(event.at),
        };
        let new = match point_line(&event.body) {
            Some((kind, half)) => self.new_point_line(event, kind, half, &place)?,
            None => self.insert_event(event, &place)?,
        };
        Ok(new.then_some(place))
    }

    /// Whether the checkpoint line `event` is new: not at its place, nor
    /// (where the source was read this far before) elsewhere in its source.
    fn new_point_line(
        &mut self,
        event: &Event,
        kind: PointKind,
        half: Half,
        place: &LinePlace,
    ) -> Result<bool, StoreError> {
        if self.points.line_stored(half, kind, place)? {
            return Ok(false);
        }
        if self.nothing_stored_from(event.offset)? {
            return Ok(true);
        }
        let elsewhere =
            self.points.line_elsewhere(half, self.source.cluster_id, kind, event.pid, event.at, place.source_id)?;
        Ok(!elsewhere)
    }

    /// Stores an event other than a checkpoint line; whether it was new.
    fn insert_event(&mut self, event: &Event, place: &LinePlace) -> Result<bool, StoreError> {
        let source = self.source;
        let kind = event.body.kind_name();
        let stored: bool = self
            .stored
            .query_row(params![source.id, place.offset, event.nth, kind], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        if stored {
            return Ok(false);
        }
        let data = event_data(&event.body).to_string();
        let at = to_micros(event.at);
        if !self.nothing_stored_from(event.offset)? && self.event_elsewhere(event, kind, at, &data)? {
            return Ok(false);
        }
        let inserted = self
            .insert
            .execute(params![
                source.cluster_id,
                source.id,
                place.offset,
                place.line,
                at,
                event.pid,
                kind,
                event.nth,
                data,
                place.ahead_us
            ])
            .map_err(|e| StoreError::Sql { path: self.path.into(), source: e })?;
        Ok(inserted == 1)
    }
}

/// A checkpoint or restartpoint line's kind and half; None for any other event.
fn point_line(body: &EventBody) -> Option<(PointKind, Half)> {
    match body {
        EventBody::PointStart { kind, .. } => Some((*kind, Half::Start)),
        EventBody::PointComplete { kind, .. } | EventBody::PointCut { kind, .. } => Some((*kind, Half::Complete)),
        _ => None,
    }
}

/// See [`EventBatch::nothing_stored_from`] (which asks once per batch).
#[cfg(test)]
pub(super) fn nothing_stored_from(tx: &Transaction<'_>, source: &SourceRow, offset: u64) -> rusqlite::Result<bool> {
    Ok(last_stored(tx, source)?.is_none_or(|last| last < offset as i64))
}

/// The last offset of `source` holding a stored event or checkpoint line
/// (a seek of event_place and of each place index of the checkpoints).
fn last_stored(tx: &Transaction<'_>, source: &SourceRow) -> rusqlite::Result<Option<i64>> {
    let event: Option<i64> = tx
        .prepare_cached("SELECT max(offset) FROM event WHERE source_id = ?1")?
        .query_row(params![source.id], |r| r.get(0))?;
    Ok(event.max(last_line_offset(tx, source.id)?))
}

/// How far (µs) `at` is ahead of this machine's clock now, while its event
/// is stored (read moments ago); None when it is not ahead, as for every
/// line of a server whose clock agrees (see migrations/0007_event_ahead.sql).
fn ahead_of_clock(at: Timestamp) -> Option<i64> {
    let ahead = to_micros(at).saturating_sub(to_micros(Timestamp::now()));
    (ahead > 0).then_some(ahead)
}

/// Kind-specific fields kept with each event, as JSON. (A checkpoint or
/// restartpoint line is its row in `checkpoint`, never an event.)
fn event_data(body: &EventBody) -> serde_json::Value {
    match body {
        EventBody::PointStart { .. } | EventBody::PointComplete { .. } | EventBody::PointCut { .. } => json!({}),
        EventBody::TooFrequent { seconds, hint } => json!({ "seconds": seconds, "hint": hint }),
        EventBody::RecoveryRestartPoint { lsn } | EventBody::RedoStart { lsn } => json!({ "lsn": lsn }),
        EventBody::ParameterChanged { name, value } => json!({ "name": name, "value": value }),
        EventBody::ServerStart { version } => json!({ "version": version }),
        EventBody::ServerReady { read_only } => json!({ "read_only": read_only }),
        EventBody::ShutdownRequest { mode } => json!({ "mode": format!("{mode:?}").to_lowercase() }),
        EventBody::RedoDone { lsn, elapsed_s } => json!({ "lsn": lsn, "elapsed_s": elapsed_s }),
        EventBody::Rejected { looked_like, reason } => json!({ "looked_like": looked_like, "reason": reason }),
        EventBody::ConfigReload
        | EventBody::ServerShutdown
        | EventBody::CrashReinit
        | EventBody::ArchiveRecoveryDone => {
            json!({})
        }
    }
}
