//! Checkpoints (table checkpoint): each start line paired with its
//! complete line, in log order, whatever order the files are read in; a
//! start without a complete and a complete without a start each keep a row;
//! and reading them back (`walwatch checkpoints`, the alert rules' windows).

use std::sync::LazyLock;

use jiff::Timestamp;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params, params_from_iter, CachedStatement, OptionalExtension, Row, ToSql, Transaction};
use serde::Serialize;

use super::columns::{opt_from_micros, to_micros};
use super::filter::{Filter, POINT_TIME};
use super::sources::SourceRow;
use super::{Store, StoreError};
use crate::model::event::{point_figures, CompleteStats, Event, EventBody, Figure, PointKind, Trigger};

/// Two days: checkpoint_timeout's maximum (one day) with room for the sync.
const LONGEST_CHECKPOINT_US: i64 = 2 * 86_400 * 1_000_000;

/// The first complete line of cluster ?1, kind ?2 and pid ?3 waiting for its
/// start within ?5 µs after ?4, not earlier than offset ?7 in source ?6: a
/// range of the partial index checkpoint_waiting (migrations/0009_scale.sql).
const WAITING_COMPLETE: &str =
    "SELECT c.id, c.completed_at FROM checkpoint c JOIN event e ON e.id = c.complete_event_id
     WHERE c.cluster_id = ?1 AND c.kind = ?2 AND c.pid IS ?3 AND c.start_event_id IS NULL
       AND c.completed_at >= ?4 AND c.completed_at <= ?4 + ?5
       AND NOT (e.source_id = ?6 AND e.offset < ?7)
     ORDER BY c.completed_at, c.id LIMIT 1";

/// A held start and its complete line in one row ([`insert_paired`]).
///
/// OR FAIL, not the default ABORT: with the tally trigger of
/// migrations/0015_tally_insert.sql and no foreign-key checks (an import),
/// nothing in this insert may abort, so SQLite keeps no statement journal
/// for it. A failure still fails the batch, which is rolled back whole.
static INSERT_PAIRED: LazyLock<String> = LazyLock::new(|| {
    let figures = CompleteStats::FIGURES;
    let places: Vec<String> = (10..10 + figures.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT OR FAIL INTO checkpoint(cluster_id, kind, pid, start_event_id, started_at, flags, trigger, pairable,
           complete_event_id, completed_at, {})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, {})",
        figures.join(", "),
        places.join(", ")
    )
});

/// A complete line's figures into row ?1, with its event ?2 and time ?3.
static COMPLETE: LazyLock<String> = LazyLock::new(|| {
    let set: Vec<String> =
        CompleteStats::FIGURES.iter().enumerate().map(|(i, name)| format!("{name} = ?{}", i + 4)).collect();
    format!(
        "UPDATE checkpoint SET complete_event_id = ?2, completed_at = ?3,
           pairable = (start_event_id IS NULL), {}
         WHERE id = ?1",
        set.join(", ")
    )
});

/// A start line's new row, not yet inserted: the complete line that closes
/// it usually comes next, and one insert of the whole row costs half of an
/// insert and an update (the row's indexes and the tally trigger touched
/// once, not twice).
pub(super) struct HeldStart {
    cluster_id: i64,
    kind: PointKind,
    pid: Option<u32>,
    event_id: i64,
    at: i64,
    flags: String,
    trigger: &'static str,
}

/// The pairing state of one batch (one transaction, one source).
///
/// A start's row may be held back only while nothing else could tell: the
/// held row is inserted before anything else touches or reads the
/// checkpoint table, so row ids and contents are those of an insert at
/// once. And a complete line takes it only where `start_to_complete` would
/// find that very row: the batch's events are the only ones of its source
/// at their offsets (`fresh`), so the held start is the latest start of its
/// pid before the complete in the file, and still pairable.
///
/// It also holds the two statements run for nearly every checkpoint line,
/// prepared once per batch: taken from and given back to rusqlite's cache
/// at each line, they cost a hash of their SQL text both ways and a
/// clearing of their bindings.
pub(super) struct Pairing<'tx> {
    fresh: bool,
    held: Option<HeldStart>,
    /// [`WAITING_COMPLETE`], asked for every start line.
    waiting: CachedStatement<'tx>,
    /// [`INSERT_PAIRED`], run for every complete line that closes a held start.
    paired: CachedStatement<'tx>,
}

impl<'tx> Pairing<'tx> {
    /// `fresh`: the store held no event of this source at or after the
    /// batch's first offset when the batch began.
    pub(super) fn new(tx: &'tx Transaction<'_>, fresh: bool) -> rusqlite::Result<Pairing<'tx>> {
        let waiting = tx.prepare_cached(WAITING_COMPLETE)?;
        let paired = tx.prepare_cached(&INSERT_PAIRED)?;
        Ok(Pairing { fresh, held: None, waiting, paired })
    }

    /// Inserts the held start's row, if any.
    pub(super) fn flush(&mut self, tx: &Transaction<'_>) -> rusqlite::Result<()> {
        match self.held.take() {
            Some(h) => insert_start(tx, &h),
            None => Ok(()),
        }
    }

    /// The held start that the complete line `event` closes, taken.
    fn take_for(&mut self, source: &SourceRow, event: &Event, kind: PointKind) -> Option<HeldStart> {
        let held = self.held.as_ref()?;
        let closes = held.cluster_id == source.cluster_id && held.kind == kind && held.pid == event.pid;
        closes.then(|| self.held.take()).flatten()
    }
}

/// Keeps the checkpoint table in step with a newly stored event.
pub(super) fn apply(
    tx: &Transaction<'_>,
    source: &SourceRow,
    event_id: i64,
    event: &Event,
    pairing: &mut Pairing<'_>,
) -> rusqlite::Result<()> {
    let cluster_id = source.cluster_id;
    let at = to_micros(event.at);
    if let EventBody::PointComplete { kind, stats } = &event.body {
        if let Some(start) = pairing.take_for(source, event, *kind) {
            return insert_paired(&mut pairing.paired, &start, event_id, at, stats);
        }
    }
    pairing.flush(tx)?;
    match &event.body {
        EventBody::PointStart { kind, flags } => pair_start(tx, source, event_id, event, *kind, flags, pairing),
        EventBody::PointComplete { kind, stats } => {
            let id = start_to_complete(tx, source, event, *kind)?;
            complete(tx, id, event_id, at, stats)
        }
        EventBody::ServerStart { .. } | EventBody::CrashReinit | EventBody::ServerShutdown => {
            // A new server run: nothing open before this point can still be paired.
            tx.prepare_cached(
                "UPDATE checkpoint SET pairable = 0 WHERE cluster_id = ?1 AND pairable = 1
                   AND COALESCE(started_at, completed_at) <= ?2",
            )?
            .execute(params![cluster_id, at])
            .map(drop)
        }
        _ => Ok(()),
    }
}

fn pair_start(
    tx: &Transaction<'_>,
    source: &SourceRow,
    event_id: i64,
    event: &Event,
    kind: PointKind,
    flags: &[String],
    pairing: &mut Pairing<'_>,
) -> rusqlite::Result<()> {
    let (cluster_id, pid, at) = (source.cluster_id, event.pid, to_micros(event.at));
    // A complete line stored earlier (files read out of order: an import of
    // the newer file first, or a daemon that read a copytruncate'd live file
    // before the copy's tail) that this start opens. A checkpoint lasts at
    // most checkpoint_timeout (1 day at most) and its sync: a complete line
    // dated further ahead (a server clock once far ahead, a forged line from
    // 2099) opens nothing. `pairable` is not asked: on a row without a start
    // it only says that a server restart was stored *after* the complete,
    // which does not separate it from a start before it; a restart between
    // the two does (`restart_between`). A complete earlier in this start's
    // own file is an earlier checkpoint's, whatever its time says (the next
    // checkpoint often starts the same millisecond).
    let orphan: Option<(i64, i64)> = pairing
        .waiting
        .query_row(
            params![cluster_id, kind.as_str(), pid, at, LONGEST_CHECKPOINT_US, source.id, event.offset as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let orphan = match orphan {
        Some((_, completed_at)) if restart_between(tx, cluster_id, at, completed_at)? => None,
        other => other,
    };
    let flags_text = flags.join(" ");
    let trigger = Trigger::of(flags).as_str();
    if let Some((id, completed_at)) = orphan {
        // Another start of the process between the two would be the one
        // the complete closes. Strictly before the complete: a start dated
        // the same millisecond is the next checkpoint (PostgreSQL logs
        // "starting" right after the previous "complete", as forced
        // checkpoints do), never one that completes at that instant.
        let between: i64 = tx
            .prepare_cached(
                "SELECT count(*) FROM checkpoint WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3
               AND started_at > ?4 AND started_at < ?5",
            )?
            .query_row(params![cluster_id, kind.as_str(), pid, at, completed_at], |r| r.get(0))?;
        if between == 0 {
            tx.prepare_cached(
                "UPDATE checkpoint SET start_event_id = ?2, started_at = ?3, flags = ?4, trigger = ?5, pairable = 0 WHERE id = ?1",
            )?
            .execute(
                params![id, event_id, at, flags_text, trigger],
            )?;
            return Ok(());
        }
    }
    let start = HeldStart { cluster_id, kind, pid, event_id, at, flags: flags_text, trigger };
    if pairing.fresh {
        pairing.held = Some(start);
        return Ok(());
    }
    insert_start(tx, &start)
}

/// A start line's row, waiting for its complete.
fn insert_start(tx: &Transaction<'_>, h: &HeldStart) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO checkpoint(cluster_id, kind, pid, start_event_id, started_at, flags, trigger)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![h.cluster_id, h.kind.as_str(), h.pid, h.event_id, h.at, h.flags, h.trigger])?;
    Ok(())
}

/// A held start's row and its complete line's figures in one insert: the
/// row `insert_start` and then `complete` would have left (paired, so no
/// longer pairable). `insert` is [`INSERT_PAIRED`].
fn insert_paired(
    insert: &mut CachedStatement<'_>,
    h: &HeldStart,
    event_id: i64,
    at: i64,
    stats: &CompleteStats,
) -> rusqlite::Result<()> {
    let figures = stats.values();
    insert.execute(params_from_iter(
        params![h.cluster_id, h.kind.as_str(), h.pid, h.event_id, h.at, h.flags, h.trigger, event_id, at]
            .iter()
            .copied()
            .chain(figures.iter().map(|f| f as &dyn ToSql)),
    ))?;
    Ok(())
}

/// Whether the cluster's server started, crashed or shut down strictly
/// between `from` and `to`: no checkpoint spans that.
fn restart_between(tx: &Transaction<'_>, cluster_id: i64, from: i64, to: i64) -> rusqlite::Result<bool> {
    tx.prepare_cached(
        "SELECT EXISTS(SELECT 1 FROM event WHERE cluster_id = ?1
           AND kind IN ('server_start', 'crash_reinit', 'server_shutdown') AND at > ?2 AND at < ?3)",
    )?
    .query_row(params![cluster_id, from, to], |r| r.get(0))
}

/// The row a complete line fills: the start of the same process that
/// precedes it, if that start still waits for its complete (not completed,
/// no server restart since); else a new row without a start.
///
/// "Precedes" is log order: the latest such start before it in the same
/// file. Times cannot decide it: a clock stepped back between the two lines
/// dates the complete before its own start. Only when the file holds no
/// start of that process before the line (the start is in the previous
/// file) does time pick it: the latest start not after the complete.
fn start_to_complete(
    tx: &Transaction<'_>,
    source: &SourceRow,
    event: &Event,
    kind: PointKind,
) -> rusqlite::Result<i64> {
    let start_kind = EventBody::PointStart { kind, flags: Vec::new() }.kind_name();
    let in_file: Option<(i64, bool)> = tx
        .prepare_cached(
            "SELECT c.id, c.pairable FROM event e JOIN checkpoint c ON c.start_event_id = e.id
             WHERE e.source_id = ?1 AND e.offset < ?2 AND e.kind = ?3 AND e.pid IS ?4
             ORDER BY e.offset DESC LIMIT 1",
        )?
        .query_row(params![source.id, event.offset as i64, start_kind, event.pid], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let latest = match in_file {
        Some((id, false)) if completed_from_another_file(tx, id, source.id)? => Some((give_back_start(tx, id)?, true)),
        Some(found) => Some(found),
        None => start_in_an_earlier_file(tx, source.cluster_id, kind, event)?,
    };
    if let Some((id, true)) = latest {
        return Ok(id);
    }
    tx.prepare_cached("INSERT INTO checkpoint(cluster_id, kind, pid) VALUES (?1, ?2, ?3)")?.execute(params![
        source.cluster_id,
        kind.as_str(),
        event.pid
    ])?;
    Ok(tx.last_insert_rowid())
}

/// The start a complete line closes when its own file holds none before it
/// (the start is in an earlier file), found by time: the latest start of
/// the process strictly before the complete (one dated the same
/// millisecond is the next checkpoint, logged right after this complete).
/// Files are not always read in log order (a follower may finish an older
/// file after reading a newer one), so that start may already have been
/// given a later complete, read first: a start's complete is the first
/// after it, so it is given back to this one, and the later complete waits
/// again for its own start. Only when no start is strictly before does a
/// start of the same millisecond close it (a start and its complete in
/// the same millisecond, a rotation between them). None: no start waits.
fn start_in_an_earlier_file(
    tx: &Transaction<'_>,
    cluster_id: i64,
    kind: PointKind,
    event: &Event,
) -> rusqlite::Result<Option<(i64, bool)>> {
    let at = to_micros(event.at);
    let before: Option<(i64, bool, Option<i64>)> = tx
        .prepare_cached(
            "SELECT id, pairable, completed_at FROM checkpoint
             WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3 AND started_at < ?4
             ORDER BY started_at DESC, id DESC LIMIT 1",
        )?
        .query_row(params![cluster_id, kind.as_str(), event.pid, at], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    match before {
        Some((id, true, _)) => return Ok(Some((id, true))),
        Some((id, false, Some(completed))) if completed > at && !restart_between(tx, cluster_id, at, completed)? => {
            return Ok(Some((give_back_start(tx, id)?, true)))
        }
        _ => {}
    }
    tx.prepare_cached(
        "SELECT id, pairable FROM checkpoint
         WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3 AND started_at = ?4 AND pairable = 1
         ORDER BY id DESC LIMIT 1",
    )?
    .query_row(params![cluster_id, kind.as_str(), event.pid, at], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

/// Whether row `id` was completed by a line of another file than `source`:
/// its start was taken, when it was stored, for the start of a complete
/// read earlier from a newer file (see `pair_start`).
fn completed_from_another_file(tx: &Transaction<'_>, id: i64, source: i64) -> rusqlite::Result<bool> {
    tx.prepare_cached(
        "SELECT EXISTS(SELECT 1 FROM checkpoint c JOIN event e ON e.id = c.complete_event_id
           WHERE c.id = ?1 AND e.source_id != ?2)",
    )?
    .query_row(params![id, source], |r| r.get(0))
}

/// Row `id`'s start has its own complete later in its own file, so the
/// complete from another file it was given was not its own: the start moves
/// to a new row (returned, for that complete) and row `id` is again a
/// complete waiting for its start, which an earlier start may still claim.
fn give_back_start(tx: &Transaction<'_>, id: i64) -> rusqlite::Result<i64> {
    tx.prepare_cached(
        "INSERT INTO checkpoint(cluster_id, kind, pid, start_event_id, started_at, flags, trigger)
         SELECT cluster_id, kind, pid, start_event_id, started_at, flags, trigger FROM checkpoint WHERE id = ?1",
    )?
    .execute(params![id])?;
    let moved = tx.last_insert_rowid();
    tx.prepare_cached(
        "UPDATE checkpoint SET start_event_id = NULL, started_at = NULL, flags = NULL, trigger = NULL, pairable = 1
         WHERE id = ?1",
    )?
    .execute(params![id])?;
    Ok(moved)
}

/// Fills row `id` with a complete line's figures.
fn complete(tx: &Transaction<'_>, id: i64, event_id: i64, at: i64, stats: &CompleteStats) -> rusqlite::Result<()> {
    let figures = stats.values();
    tx.prepare_cached(&COMPLETE)?.execute(params_from_iter(
        params![id, event_id, at].iter().copied().chain(figures.iter().map(|f| f as &dyn ToSql)),
    ))?;
    Ok(())
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

// --- Reading ---

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
        pub struct CheckpointRow {
            pub cluster: String,
            pub kind: PointKind,
            pub trigger: Option<Trigger>,
            pub flags: Vec<String>,
            #[serde(serialize_with = "crate::timefmt::serialize_opt")]
            pub started_at: Option<Timestamp>,
            #[serde(serialize_with = "crate::timefmt::serialize_opt")]
            pub completed_at: Option<Timestamp>,
            $(pub $name: stored_type!($kind),)*
        }

        impl CheckpointRow {
            /// The figures' values, in [`CompleteStats::FIGURES`]' order.
            pub fn figures(&self) -> [Figure<'_>; CompleteStats::COUNT] {
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
    HEAD.iter().map(|h| h.to_string()).chain(figures).collect::<Vec<_>>().join(", ")
});

impl Store {
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

    /// Checkpoints and restartpoints in time order.
    pub fn checkpoints(&self, filter: &Filter) -> Result<Vec<CheckpointRow>, StoreError> {
        let mut rows = Vec::new();
        self.each_checkpoint(filter, |row| {
            rows.push(row);
            Ok::<(), StoreError>(())
        })?;
        Ok(rows)
    }

    /// Checkpoints and restartpoints in time order, handed to `f` one at a
    /// time as SQLite reads them: a listing of a million rows holds one row
    /// in memory, never the whole list. An error of `f` stops the listing.
    pub fn each_checkpoint<E: From<StoreError>>(
        &self,
        filter: &Filter,
        mut f: impl FnMut(CheckpointRow) -> Result<(), E>,
    ) -> Result<(), E> {
        let (mut cond, mut values) = filter.conditions(POINT_TIME);
        if let Some(t) = &filter.trigger {
            cond.push_str(" AND k.trigger = ?");
            values.push(Value::Text(t.as_str().to_string()));
        }
        let sql = format!(
            "SELECT {} FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
             WHERE 1 = 1 {cond} ORDER BY {POINT_TIME}, k.id",
            *CHECKPOINT_COLUMNS
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let mut rows = stmt.query(params_from_iter(values)).map_err(|e| self.sql(e))?;
        while let Some(row) = rows.next().map_err(|e| self.sql(e))? {
            f(checkpoint_row(row).map_err(|e| self.sql(e))?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use crate::store::Store;

    #[test]
    fn the_checkpoint_columns_are_read_where_they_are_selected() {
        use super::{CompleteStats, CHECKPOINT_COLUMNS};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        let sql = format!("SELECT {} FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id", *CHECKPOINT_COLUMNS);
        let stmt = store.conn.prepare(&sql).unwrap();
        let names: Vec<&str> = stmt.column_names();
        let head = ["name", "kind", "trigger", "flags", "started_at", "completed_at"];
        assert_eq!(names, [&head[..], CompleteStats::FIGURES].concat());
        assert_eq!(CompleteStats::FIGURES.len(), 16);
        assert_eq!((CompleteStats::FIGURES[0], CompleteStats::FIGURES[15]), ("buffers_written", "redo_lsn"));
    }

    // --- Pairing (see mutants.md): real PostgreSQL 15 lines. ---

    const NOISE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
    const CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log";
    const AFTER_CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log";

    fn fixture(path: &str) -> Vec<String> {
        let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
        text.lines().map(|l| format!("{l}\n")).collect()
    }

    /// Imports `files` (each a list of lines) in the order given into a new store.
    fn import(files: &[&[String]]) -> (tempfile::TempDir, Store) {
        let names: Vec<String> = (0..files.len()).map(|i| format!("postgresql-{i}.log")).collect();
        let steps: Vec<(&str, &[String], bool)> =
            names.iter().zip(files).map(|(name, lines)| (name.as_str(), *lines, false)).collect();
        follow(&steps)
    }

    /// (started, completed, trigger, distance) of every checkpoint row, times as logged.
    type Pair = (Option<String>, Option<String>, Option<String>, Option<i64>);

    fn pairs(store: &Store) -> Vec<Pair> {
        let fmt = |t: Option<Timestamp>| t.map(|t| t.strftime("%H:%M:%S%.3f").to_string());
        let rows = store.checkpoints(&crate::store::Filter::default()).unwrap();
        rows.iter()
            .map(|r| (fmt(r.started_at), fmt(r.completed_at), r.trigger.map(|t| t.to_string()), r.distance_kb))
            .collect()
    }

    /// The pairs read straight from the log text: each complete line closes
    /// the start line before it (the fixture has one checkpointer).
    fn pairs_in_text(lines: &[String]) -> Vec<Pair> {
        let time = |l: &str| Some(l[11..23].to_string());
        let mut out: Vec<Pair> = Vec::new();
        for l in lines {
            if let Some(flags) = l.split("LOG:  checkpoint starting: ").nth(1) {
                // The cause among the flags; a CHECKPOINT command logs none ("immediate force wait").
                let cause = ["wal", "time", "shutdown", "end-of-recovery"]
                    .into_iter()
                    .find(|c| flags.split_whitespace().any(|f| f == *c))
                    .unwrap_or("manual");
                out.push((time(l), None, Some(cause.to_string()), None));
            } else if let Some(stats) = l.split("LOG:  checkpoint complete: ").nth(1) {
                let distance = stats.split("distance=").nth(1).unwrap().split(" kB").next().unwrap().parse().unwrap();
                let last = out.last_mut().unwrap();
                assert_eq!(last.1, None, "two completes in a row: {l}");
                (last.1, last.3) = (time(l), Some(distance));
            }
        }
        out
    }

    #[test]
    fn every_start_is_paired_with_its_complete_in_log_order() {
        let lines = fixture(NOISE);
        let want = pairs_in_text(&lines);
        assert_eq!(want.len(), 19);
        let (_dir, store) = import(&[&lines]);
        assert_eq!(pairs(&store), want);
    }

    #[test]
    fn a_start_imported_after_its_complete_claims_it() {
        // A file holding only the start on line 1554 (08:09:02.433), and the
        // file after it from that start's complete line on (line 1577,
        // 08:09:02.688) up to the server's last checkpoint, imported first.
        let lines = fixture(NOISE);
        let first = &lines[1553..1554];
        let second = &lines[1576..7680];
        assert!(first[0].contains("checkpoint starting: wal") && second[0].contains("checkpoint complete"));
        let (_dir, in_order) = import(&[first, second]);
        let want = pairs(&in_order);
        assert_eq!(
            want[0],
            (Some("08:09:02.433".into()), Some("08:09:02.688".into()), Some("wal".into()), Some(21874))
        );
        assert_eq!(want, pairs_in_text(&[first, second].concat()));
        let (_dir, reversed) = import(&[second, first]);
        assert_eq!(pairs(&reversed), want);
    }

    #[test]
    fn a_waiting_complete_is_claimed_within_two_days_of_the_start() {
        // The start on line 2168 (08:09:09.205) and its complete 27 s later
        // (line 4312), the complete's file imported first; then the same
        // complete dated 25 h later (checkpoint_timeout = 1d and a slow
        // sync), and 49 h later (a clock once far ahead): never its complete.
        let lines = fixture(NOISE);
        let (start, complete) = (&lines[2167..2168], &lines[4311..4312]);
        assert!(start[0].contains("08:09:09.205") && start[0].contains("checkpoint starting: wal"));
        assert!(complete[0].contains("08:09:36.059") && complete[0].contains("checkpoint complete"));
        let dated = |day: &str| complete[0].replace("2026-11-22 08:09:36.059", day);
        let paired =
            |c: &str| (Some("08:09:09.205".to_string()), Some(c.to_string()), Some("wal".to_string()), Some(20083));
        let (_dir, store) = import(&[complete, start]);
        assert_eq!(pairs(&store), [paired("08:09:36.059")]);
        let (_dir, store) = import(&[&[dated("2026-11-23 09:09:36.059")], start]);
        assert_eq!(pairs(&store), [paired("09:09:36.059")]);
        let (_dir, store) = import(&[&[dated("2026-11-24 09:09:36.059")], start]);
        assert_eq!(
            pairs(&store),
            [
                (Some("08:09:09.205".into()), None, Some("wal".into()), None),
                (None, Some("09:09:36.059".into()), None, Some(20083)),
            ]
        );
    }

    /// A start held back for its complete in the same batch is taken only by
    /// a complete of its own process and kind: another checkpointer's
    /// complete (a second server's lines in the file) or a restartpoint's
    /// leaves it waiting, as the pairing by query would.
    #[test]
    fn a_held_start_is_closed_only_by_its_own_pid_and_kind() {
        let lines = fixture(NOISE);
        let (start, complete) = (&lines[1553], &lines[1576]);
        assert!(start.contains("[25162] LOG:  checkpoint starting: wal"), "{start}");
        assert!(complete.contains("[25162] LOG:  checkpoint complete: "), "{complete}");
        let apart: [Pair; 2] = [
            (Some("08:09:02.433".into()), None, Some("wal".into()), None),
            (None, Some("08:09:02.688".into()), None, Some(21874)),
        ];
        let other_pid = complete.replace("[25162]", "[25163]");
        let (_dir, store) = import(&[&[start.clone(), other_pid]]);
        assert_eq!(pairs(&store), apart, "another checkpointer's complete");
        let restartpoint = complete.replace("checkpoint complete: ", "restartpoint complete: ");
        let (_dir, store) = import(&[&[start.clone(), restartpoint]]);
        let rows = pairs(&store);
        assert_eq!((rows.len(), &rows[0]), (2, &apart[0]), "a restartpoint's complete: {rows:?}");
        // Its own complete closes it, in the same batch.
        let (_dir, store) = import(&[&[start.clone(), complete.clone()]]);
        assert_eq!(
            pairs(&store),
            [(Some("08:09:02.433".into()), Some("08:09:02.688".into()), Some("wal".into()), Some(21874))]
        );
    }

    /// A start of another pid between a start and its complete (a line a
    /// client forged, claiming pid 2) neither takes the complete nor keeps
    /// it from its own start, whether the three lines come in one batch or
    /// a follower's read cuts between them.
    #[test]
    fn a_complete_closes_its_own_process_start_across_another_pids_start() {
        let lines = fixture(NOISE);
        let (start, complete) = (lines[1553].clone(), lines[1576].clone());
        let forged = start.replace("08:09:02.433 UTC [25162]", "08:09:02.500 UTC [2]");
        assert_ne!(forged, start);
        let want: [Pair; 2] = [
            (Some("08:09:02.433".into()), Some("08:09:02.688".into()), Some("wal".into()), Some(21874)),
            (Some("08:09:02.500".into()), None, Some("wal".into()), None),
        ];
        let log = [start, forged, complete];
        let (_dir, store) = import(&[&log]);
        assert_eq!(pairs(&store), want);
        for cut in 1..log.len() {
            let (before, after) = log.split_at(cut);
            let (_dir, store) = follow(&[("a.log", before, false), ("a.log", after, false)]);
            assert_eq!(pairs(&store), want, "cut before line {cut}");
        }
    }

    #[test]
    fn a_complete_after_a_restart_never_closes_a_start_from_before_it() {
        // The crash fixture's last start (no complete: immediate shutdown),
        // the next run's first line, and that run's first complete line,
        // written by a checkpointer that got the old one's pid back (as in
        // a container, where pids repeat from one start to the next).
        let before = fixture(CRASH);
        let after = fixture(AFTER_CRASH);
        let start = before.iter().rev().find(|l| l.contains("checkpoint starting: wal")).unwrap().clone();
        let complete = after.iter().find(|l| l.contains("checkpoint complete")).unwrap().replace("[29349]", "[28026]");
        assert!(start.contains("[28026]") && after[0].contains("starting PostgreSQL"));
        let want = [
            (Some("08:17:23.524".into()), None, Some("wal".into()), None),
            (None, Some("08:17:30.982".into()), None, Some(55_239)),
        ];
        let (_dir, store) = import(&[&[start, after[0].clone(), complete]]);
        assert_eq!(pairs(&store), want);
    }

    /// A start line's search for a complete waiting for it is a range of
    /// the few waiting rows, not a read of every row of its pid.
    #[test]
    fn a_start_finds_a_waiting_complete_through_the_partial_index() {
        let (_dir, store) = import(&[&fixture(NOISE)]);
        let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {}", super::WAITING_COMPLETE)).unwrap();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params![1, "checkpoint", 7, 0, 1, 1, 0], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(plan.iter().any(|step| step.contains("checkpoint_waiting")), "{plan:?}");
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
    }

    /// Reads `steps` in order into a new store, as a follower would: each
    /// step appends lines to a file (created on its first step) and reads
    /// that file on, its last entry held back or taken.
    fn follow(steps: &[(&str, &[String], bool)]) -> (tempfile::TempDir, Store) {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.cluster_id("c").unwrap();
        let time = TimeContext::new(Some("UTC")).unwrap();
        for &(name, lines, hold) in steps {
            let file = dir.path().join(name);
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&file).unwrap();
            f.write_all(lines.concat().as_bytes()).unwrap();
            let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), hold_last_entry: hold, ..Options::default() };
            ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
        }
        (dir, store)
    }

    /// A follower's reads cut the log anywhere: between two batches of one
    /// file, or at a rotation whose old file's last entry is held back
    /// (it may still get a DETAIL) while the new file is read. At every
    /// cut through five checkpoints (a complete and the next start in the
    /// same millisecond among them) the pairs are the log's.
    #[test]
    fn pairs_are_the_logs_wherever_a_follower_cuts_the_log() {
        let lines = fixture(NOISE);
        let lines = &lines[120..160];
        let want = pairs_in_text(lines);
        assert_eq!(want.len(), 5);
        for cut in 1..lines.len() {
            let (before, after) = lines.split_at(cut);
            let (_dir, store) = follow(&[("a.log", before, false), ("a.log", after, false)]);
            assert_eq!(pairs(&store), want, "one file read in two batches, cut before line {cut}");
            let (_dir, store) = follow(&[("a.log", before, true), ("b.log", after, true), ("a.log", &[], false)]);
            assert_eq!(pairs(&store), want, "rotated before line {cut}, the old file's last entry read last");
            let (_dir, store) = follow(&[("a.log", before, true), ("b.log", after, false), ("a.log", &[], false)]);
            assert_eq!(pairs(&store), want, "rotated before line {cut}, the new file read to its end first");
            for late in [1, 2, 3, 5, 8].into_iter().filter(|&late| late < cut) {
                let (read, tail) = before.split_at(cut - late);
                let (_dir, store) = follow(&[("a.log", read, false), ("b.log", after, false), ("a.log", tail, false)]);
                assert_eq!(
                    pairs(&store),
                    want,
                    "rotated before line {cut}, the old file's last {late} lines read last"
                );
            }
        }
    }

    /// Three files of a size rotation: the follower read the middle one
    /// only partly before the newest, then the rest of it. A complete in
    /// the newest file, read before the middle file's end, must not keep a
    /// start whose own complete comes later from the middle file.
    #[test]
    fn pairs_are_the_logs_when_a_middle_file_is_finished_last() {
        let lines = fixture(NOISE);
        let lines = &lines[126..141];
        let want = pairs_in_text(lines);
        assert_eq!(want.len(), 4);
        for first in 1..lines.len() {
            for last in first + 1..lines.len() {
                let (old, rest) = lines.split_at(first);
                let (middle, new) = rest.split_at(last - first);
                for read in [0, 1] {
                    let (head, tail) = middle.split_at(read.min(middle.len()));
                    let steps =
                        [("a.log", old, false), ("b.log", head, false), ("c.log", new, false), ("b.log", tail, false)];
                    let (_dir, store) = follow(&steps);
                    assert_eq!(
                        pairs(&store),
                        want,
                        "files cut before lines {first} and {last}, {read} line(s) of the middle read first"
                    );
                }
            }
        }
    }

    #[test]
    fn files_imported_newest_first_pair_as_in_log_order() {
        // Two runs (a crash between them), each file ending with a server
        // shutdown or crash that closes its run.
        let (before, after) = (fixture(CRASH), fixture(AFTER_CRASH));
        let (_dir, in_order) = import(&[&before, &after]);
        let want = pairs(&in_order);
        assert_eq!(want.len(), pairs_in_text(&before).len() + pairs_in_text(&after).len());
        let (_dir, reversed) = import(&[&after, &before]);
        assert_eq!(pairs(&reversed), want);
    }
}
