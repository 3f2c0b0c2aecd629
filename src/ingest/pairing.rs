//! Checkpoint pairing: which start line a complete line closes, in log
//! order, whatever order the files are read in; a start without a complete
//! and a complete without a start each keep a row. The store answers the
//! questions and writes the rows ([`PointRows`]); the decisions are here.
//!
//! Each event of a batch is stored, then, if it was new, paired
//! ([`Pairing::stored`]), in the batch's transaction.

use jiff::{SignedDuration, Timestamp};

use crate::frame::Pos;
use crate::model::event::{Event, EventBody, PointKind, Trigger};
use crate::store::batch::EventBatch;
use crate::store::checkpoints::{CompleteFigures, LinePlace, PointRows, StartRow};
use crate::store::{SourceRow, SourceSpec, Store, StoreError};

/// Two days: checkpoint_timeout's maximum (one day) with room for the sync.
const LONGEST_CHECKPOINT: SignedDuration = SignedDuration::from_hours(48);

/// Stores `events` of `source` as one batch, pairing their checkpoint
/// lines, and moves `source` to `reached`, atomically. Returns how many
/// events were new.
pub(crate) fn commit(
    store: &mut Store,
    source: &mut SourceRow,
    spec: &SourceSpec<'_>,
    events: &[Event],
    reached: Pos,
) -> Result<usize, StoreError> {
    store.events_mut().commit_batch(source, spec, reached, |batch| {
        // Whether the store held no event of this source at or after the
        // batch's first offset: then every event stored at those offsets is
        // one of `events`, which the holding back of starts relies on.
        let fresh = match events.first() {
            Some(first) => batch.nothing_stored_from(first.offset)?,
            None => true,
        };
        let mut pairing = Pairing { fresh, held: None };
        let mut added = 0;
        for event in events {
            if let Some(place) = batch.insert(event)? {
                added += 1;
                pairing.stored(batch, &place, event)?;
            }
        }
        pairing.flush(batch.points())?;
        Ok(added)
    })
}

/// The pairing state of one batch (one transaction, one source).
///
/// A start line's new row is held back, not inserted yet: the complete line
/// that closes it usually comes next, and one insert of the whole row costs
/// half of an insert and an update (the row's indexes and the tally trigger
/// touched once, not twice).
///
/// A start's row may be held back only while nothing else could tell: the
/// held row is inserted before anything else touches or reads the
/// checkpoint table, so row ids and contents are those of an insert at
/// once. And a complete line takes it only where [`start_to_complete`]
/// would find that very row: the batch's events are the only ones of its
/// source at their offsets (`fresh`), so the held start is the latest start
/// of its pid before the complete in the file, and still waiting.
struct Pairing {
    fresh: bool,
    held: Option<StartRow>,
}

impl Pairing {
    /// Keeps the checkpoint rows in step with the new line `event`, read at `place`.
    fn stored(&mut self, batch: &mut EventBatch<'_>, place: &LinePlace, event: &Event) -> Result<(), StoreError> {
        let source = batch.source();
        let rows = batch.points();
        let completes = match &event.body {
            EventBody::PointComplete { kind, .. } | EventBody::PointCut { kind, .. } => {
                CompleteFigures::of(&event.body).map(|figures| (*kind, figures))
            }
            _ => None,
        };
        if let Some((kind, figures)) = &completes {
            if let Some(start) = self.take_for(source, event, *kind) {
                return rows.insert_paired(&start, place, event.at, figures);
            }
        }
        self.flush(rows)?;
        if let Some((kind, figures)) = completes {
            return complete(rows, source, place, event, kind, &figures);
        }
        match &event.body {
            EventBody::PointStart { kind, flags } => self.pair_start(rows, source, place, event, *kind, flags),
            EventBody::ServerStart { .. } | EventBody::CrashReinit | EventBody::ServerShutdown => {
                // A new server run: nothing open before this point can still be paired.
                rows.stop_waiting_until(source.cluster_id, event.at)
            }
            _ => Ok(()),
        }
    }

    /// Inserts the held start's row, if any.
    fn flush(&mut self, rows: &PointRows<'_>) -> Result<(), StoreError> {
        match self.held.take() {
            Some(start) => rows.insert_start(&start),
            None => Ok(()),
        }
    }

    /// The held start that the complete line `event` closes, taken.
    fn take_for(&mut self, source: &SourceRow, event: &Event, kind: PointKind) -> Option<StartRow> {
        let held = self.held.as_ref()?;
        let closes = held.cluster_id == source.cluster_id && held.kind == kind && held.pid == event.pid;
        closes.then(|| self.held.take()).flatten()
    }

    fn pair_start(
        &mut self,
        rows: &mut PointRows<'_>,
        source: &SourceRow,
        place: &LinePlace,
        event: &Event,
        kind: PointKind,
        flags: &[String],
    ) -> Result<(), StoreError> {
        let (cluster_id, pid, at) = (source.cluster_id, event.pid, event.at);
        // A complete line stored earlier (files read out of order: an import of
        // the newer file first, or a daemon that read a copytruncate'd live file
        // before the copy's tail) that this start opens. A checkpoint lasts at
        // most checkpoint_timeout (1 day at most) and its sync: a complete line
        // dated further ahead (a server clock once far ahead, a forged line from
        // 2099) opens nothing. Whether the row still waits is not asked: on a
        // row without a start it only says that a server restart was stored
        // *after* the complete, which does not separate it from a start before
        // it; a restart between the two does. A complete earlier in this
        // start's own file is an earlier checkpoint's, whatever its time says
        // (the next checkpoint often starts the same millisecond).
        let orphan = rows.waiting_complete(cluster_id, kind, pid, at, LONGEST_CHECKPOINT, source.id, event.offset)?;
        let orphan = match orphan {
            Some((_, completed_at)) if rows.restart_between(cluster_id, at, completed_at)? => None,
            other => other,
        };
        let start =
            StartRow { cluster_id, kind, pid, line: *place, at, flags: flags.join(" "), trigger: Trigger::of(flags) };
        if let Some((id, completed_at)) = orphan {
            // Another start of the process between the two would be the one
            // the complete closes. Strictly before the complete: a start dated
            // the same millisecond is the next checkpoint (PostgreSQL logs
            // "starting" right after the previous "complete", as forced
            // checkpoints do), never one that completes at that instant.
            if rows.starts_between(cluster_id, kind, pid, at, completed_at)? == 0 {
                return rows.give_start(id, &start);
            }
        }
        if self.fresh {
            self.held = Some(start);
            return Ok(());
        }
        rows.insert_start(&start)
    }
}

/// Fills the row a complete line closes ([`start_to_complete`]) with its
/// figures, or stores it in a row of its own when it closes none.
fn complete(
    rows: &mut PointRows<'_>,
    source: &SourceRow,
    place: &LinePlace,
    event: &Event,
    kind: PointKind,
    figures: &CompleteFigures<'_>,
) -> Result<(), StoreError> {
    match start_to_complete(rows, source, event, kind)? {
        Some(id) => rows.complete(id, place, event.at, figures),
        None => rows.insert_complete_only(source.cluster_id, kind, event.pid, place, event.at, figures),
    }
}

/// The row a complete line fills: the start of the same process that
/// precedes it, if that start still waits for its complete (not completed,
/// no server restart since); else None (a row without a start).
///
/// "Precedes" is log order: the latest such start before it in the same
/// file. Times cannot decide it: a clock stepped back between the two lines
/// dates the complete before its own start. Only when the file holds no
/// start of that process before the line (the start is in the previous
/// file) does time pick it: the latest start not after the complete.
fn start_to_complete(
    rows: &mut PointRows<'_>,
    source: &SourceRow,
    event: &Event,
    kind: PointKind,
) -> Result<Option<i64>, StoreError> {
    let in_file = rows.latest_start_in_source(source.id, event.offset, kind, event.pid)?;
    let latest = match in_file {
        // Its start was taken, when it was stored, for the start of a
        // complete read earlier from a newer file (see `pair_start`); it has
        // its own complete here, so the complete from another file it was
        // given was not its own: the start moves to a new row (for this
        // complete) and the other complete waits again for its start, which
        // an earlier start may still claim.
        Some((id, false)) if rows.completed_from_another_source(id, source.id)? => {
            Some((rows.split_off_start(id)?, true))
        }
        Some(found) => Some(found),
        None => start_in_an_earlier_file(rows, source.cluster_id, kind, event)?,
    };
    Ok(match latest {
        Some((id, true)) => Some(id),
        _ => None,
    })
}

/// The start a complete line closes when its own file holds none before it
/// (the start is in an earlier file), found by time: the latest start of
/// the process strictly before the complete (one dated the same
/// millisecond is the next checkpoint, logged right after this complete),
/// and no longer before it than a checkpoint can last.
/// Files are not always read in log order (a follower may finish an older
/// file after reading a newer one), so that start may already have been
/// given a later complete, read first: a start's complete is the first
/// after it, so it is given back to this one, and the later complete waits
/// again for its own start. Only when no start is strictly before does a
/// start of the same millisecond close it (a start and its complete in
/// the same millisecond, a rotation between them). None: no start waits.
fn start_in_an_earlier_file(
    rows: &mut PointRows<'_>,
    cluster_id: i64,
    kind: PointKind,
    event: &Event,
) -> Result<Option<(i64, bool)>, StoreError> {
    let at = event.at;
    // Compared as the store keeps times, in whole microseconds.
    let after = |completed: Timestamp| completed.as_microsecond() > at.as_microsecond();
    match rows.latest_start_before(cluster_id, kind, event.pid, at, LONGEST_CHECKPOINT)? {
        Some((id, true, _)) => return Ok(Some((id, true))),
        Some((id, false, Some(completed)))
            if after(completed) && !rows.restart_between(cluster_id, at, completed)? =>
        {
            return Ok(Some((rows.split_off_start(id)?, true)))
        }
        _ => {}
    }
    Ok(rows.waiting_start_at(cluster_id, kind, event.pid, at)?.map(|id| (id, true)))
}

#[cfg(test)]
mod tests;
