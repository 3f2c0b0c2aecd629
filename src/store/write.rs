//! Writing: sources, events, and the checkpoint rows that pair them.

use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::json;

use super::columns::to_micros;
use super::{Store, StoreError};
use crate::frame::Format;
use crate::frame::Pos;
use crate::model::event::{CompleteStats, Event, EventBody, PointKind, Trigger};
use crate::source::{FileMeta, Fingerprint, FINGERPRINT_BYTES};

/// A known source and how far it has been read.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRow {
    pub id: i64,
    pub cluster_id: i64,
    pub fingerprint: Fingerprint,
    pub read_to: u64,
    pub line: u64,
    /// The log_line_prefix it was read with (stderr and syslog).
    pub prefix: Option<String>,
}

/// What is known about a source when it is read (its identity, the
/// fingerprint of its first bytes, is taken from the head given with it).
pub struct SourceSpec<'a> {
    pub path: &'a str,
    pub meta: Option<FileMeta>,
    pub format: Format,
    pub prefix: Option<&'a str>,
}

/// Two days: checkpoint_timeout's maximum (one day) with room for the sync.
const LONGEST_CHECKPOINT_US: i64 = 2 * 86_400 * 1_000_000;

impl Store {
    /// The id of cluster `name`, created on first use.
    pub fn cluster_id(&mut self, name: &str) -> Result<i64, StoreError> {
        self.conn
            .execute("INSERT OR IGNORE INTO cluster(name) VALUES (?1)", [name])
            .and_then(|_| self.conn.query_row("SELECT id FROM cluster WHERE name = ?1", [name], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    /// The source of `cluster_id` whose content `head` is: the same first
    /// bytes, either of the two possibly grown since it was recorded.
    pub(crate) fn find_source(&self, cluster_id: i64, head: &[u8]) -> Result<Option<SourceRow>, StoreError> {
        find(&self.conn, cluster_id, head).map_err(|e| self.sql(e))
    }

    /// The source whose content `head` is (see [`Store::find_source`]),
    /// created from `spec` when there is none; true when it was created.
    ///
    /// Lookup and insert are one step under the write lock (BEGIN IMMEDIATE
    /// before the lookup): of two processes meeting a new file at once, the
    /// second finds the row the first created instead of adding its own,
    /// which would store every event twice. The recorded fingerprint grows
    /// here with the file, up to [`FINGERPRINT_BYTES`].
    pub(crate) fn source_for(
        &mut self,
        cluster_id: i64,
        head: &[u8],
        spec: &SourceSpec<'_>,
    ) -> Result<(SourceRow, bool), StoreError> {
        let head = &head[..head.len().min(FINGERPRINT_BYTES)];
        // Known and recorded as far as `head` goes: no write lock needed.
        if let Some(row) = self.find_source(cluster_id, head)? {
            if row.fingerprint.len >= head.len() {
                return Ok((row, false));
            }
        }
        let path = self.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let found = match find(&tx, cluster_id, head).map_err(sql)? {
            Some(row) => (grow(&tx, row, head).map_err(sql)?, false),
            None => (insert_source(&tx, cluster_id, head, spec).map_err(sql)?, true),
        };
        tx.commit().map_err(sql)?;
        Ok(found)
    }

    /// Reads `source` again from its start: its file is now shorter than
    /// what was read (rewritten in place). Unless another process has moved
    /// the recorded position since `source` was looked up (it may have
    /// rewound and read it again already).
    pub(crate) fn rewind_source(&mut self, source: &mut SourceRow) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE source SET read_to = 0, line = 1 WHERE id = ?1 AND read_to = ?2")
            .and_then(|mut stmt| stmt.execute(params![source.id, source.read_to as i64]))
            .map_err(|e| self.sql(e))?;
        (source.read_to, source.line) = (0, 1);
        Ok(())
    }

    /// Stores `events` and moves `source` to `reached`, atomically.
    /// Returns how many events were new.
    pub(crate) fn commit_batch(
        &mut self,
        source: &mut SourceRow,
        spec: &SourceSpec<'_>,
        events: &[Event],
        reached: Pos,
    ) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        // Immediate: the lock is taken before anything is read, so a commit
        // never has to give up because another process committed in between.
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let mut added = 0;
        for event in events {
            added += insert_event(&tx, source, event).map_err(sql)?;
        }
        // The recorded position only moves forward: another process reading
        // the same source (the daemon and an import) may have got further,
        // and going back would make status show a lag that is not there, or
        // read it all again after a restart. (A file rewritten in place is
        // taken back explicitly: [`Store::rewind_source`].)
        tx.prepare_cached(
            "UPDATE source SET
                 line = CASE WHEN ?2 >= read_to THEN ?3 ELSE line END,
                 read_to = max(read_to, ?2),
                 path = ?4, size = ?5, last_read = ?6, prefix = COALESCE(?7, prefix)
             WHERE id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                source.id,
                reached.offset as i64,
                reached.line as i64,
                spec.path,
                spec.meta.map(|m| m.size as i64),
                to_micros(Timestamp::now()),
                spec.prefix
            ])
        })
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        source.read_to = reached.offset;
        source.line = reached.line;
        Ok(added)
    }
}

/// Recorded fingerprints of a cluster's sources, longest first, that `head`
/// is long enough to check by hash; then, for a `head` shorter than what was
/// recorded (the file was opened before it grew), the recorded bytes.
/// (`fp_len > 0` in each query lets SQLite use the partial unique index.)
fn find(conn: &Connection, cluster_id: i64, head: &[u8]) -> rusqlite::Result<Option<SourceRow>> {
    let head = &head[..head.len().min(FINGERPRINT_BYTES)];
    if head.is_empty() {
        return Ok(None);
    }
    let lens: Vec<i64> = conn
        .prepare_cached(
            "SELECT DISTINCT fp_len FROM source WHERE cluster_id = ?1 AND fp_len > 0 AND fp_len <= ?2 ORDER BY fp_len DESC",
        )?
        .query_map(params![cluster_id, head.len() as i64], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut by_hash = conn.prepare_cached(&format!(
        "{SOURCE_COLUMNS} WHERE cluster_id = ?1 AND fp_len > 0 AND fp_len = ?2 AND fp_hash = ?3"
    ))?;
    for len in lens {
        let fp = Fingerprint::of(&head[..len as usize]);
        if let Some(row) = by_hash.query_row(params![cluster_id, len, fp.hash as i64], source_row).optional()? {
            return Ok(Some(row));
        }
    }
    conn.prepare_cached(&format!(
        "{SOURCE_COLUMNS} WHERE cluster_id = ?1 AND fp_len > 0 AND fp_len > ?2 AND substr(head, 1, ?2) = ?3 ORDER BY id DESC LIMIT 1"
    ))?
    .query_row(params![cluster_id, head.len() as i64, head], source_row)
    .optional()
}

const SOURCE_COLUMNS: &str = "SELECT id, cluster_id, fp_len, fp_hash, read_to, line, prefix FROM source";

fn source_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SourceRow> {
    Ok(SourceRow {
        id: r.get(0)?,
        cluster_id: r.get(1)?,
        fingerprint: Fingerprint { len: r.get::<_, i64>(2)? as usize, hash: r.get::<_, i64>(3)? as u64 },
        read_to: r.get::<_, i64>(4)? as u64,
        line: r.get::<_, i64>(5)? as u64,
        prefix: r.get(6)?,
    })
}

/// Records the longer `head` of a source the file has grown past. OR
/// IGNORE: in a store from before source identities were unique, another
/// row may already carry the longer fingerprint; this one then keeps its own.
fn grow(tx: &Transaction<'_>, mut row: SourceRow, head: &[u8]) -> rusqlite::Result<SourceRow> {
    if row.fingerprint.len >= head.len() {
        return Ok(row);
    }
    let fp = Fingerprint::of(head);
    let changed = tx
        .prepare_cached("UPDATE OR IGNORE source SET fp_len = ?2, fp_hash = ?3, head = ?4 WHERE id = ?1")?
        .execute(params![row.id, fp.len as i64, fp.hash as i64, head])?;
    if changed == 1 {
        row.fingerprint = fp;
    }
    Ok(row)
}

fn insert_source(
    tx: &Transaction<'_>,
    cluster_id: i64,
    head: &[u8],
    spec: &SourceSpec<'_>,
) -> rusqlite::Result<SourceRow> {
    let now = to_micros(Timestamp::now());
    let fp = Fingerprint::of(head);
    tx.prepare_cached(
        "INSERT INTO source(cluster_id, path, dev, ino, fp_len, fp_hash, head, format, prefix, size, first_read, last_read)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)",
    )?
    .execute(params![
        cluster_id,
        spec.path,
        spec.meta.map(|m| m.dev as i64),
        spec.meta.map(|m| m.ino as i64),
        fp.len as i64,
        fp.hash as i64,
        head,
        spec.format.as_str(),
        spec.prefix,
        spec.meta.map(|m| m.size as i64),
        now
    ])?;
    Ok(SourceRow {
        id: tx.last_insert_rowid(),
        cluster_id,
        fingerprint: fp,
        read_to: 0,
        line: 1,
        prefix: spec.prefix.map(String::from),
    })
}

/// Inserts one event; returns 0 when it was already stored.
fn insert_event(tx: &Transaction<'_>, source: &SourceRow, event: &Event) -> rusqlite::Result<usize> {
    let data = event_data(&event.body).to_string();
    let inserted = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO event(cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            source.cluster_id,
            source.id,
            event.offset as i64,
            event.line as i64,
            to_micros(event.at),
            event.pid,
            event.body.kind_name(),
            event.nth,
            data,
            ahead_of_clock(event.at)
        ])?;
    if inserted == 1 {
        let event_id = tx.last_insert_rowid();
        apply(tx, source, event_id, event)?;
    }
    Ok(inserted)
}

/// How far (µs) `at` is ahead of this machine's clock now, while its event
/// is stored (read moments ago); None when it is not ahead, as for every
/// line of a server whose clock agrees (see migrations/0007_event_ahead.sql).
fn ahead_of_clock(at: Timestamp) -> Option<i64> {
    let ahead = to_micros(at).saturating_sub(to_micros(Timestamp::now()));
    (ahead > 0).then_some(ahead)
}

/// Kind-specific fields kept with each event, as JSON.
fn event_data(body: &EventBody) -> serde_json::Value {
    match body {
        EventBody::PointStart { flags, .. } => json!({ "flags": flags }),
        EventBody::PointComplete { stats, .. } => {
            json!({ "distance_kb": stats.distance_kb, "estimate_kb": stats.estimate_kb })
        }
        EventBody::TooFrequent { seconds, hint } => json!({ "seconds": seconds, "hint": hint }),
        EventBody::RecoveryRestartPoint { lsn } | EventBody::RedoStart { lsn } => json!({ "lsn": lsn }),
        EventBody::ParameterChanged { name, value } => json!({ "name": name, "value": value }),
        EventBody::ServerStart { version } => json!({ "version": version }),
        EventBody::ServerReady { read_only } => json!({ "read_only": read_only }),
        EventBody::ShutdownRequest { mode } => json!({ "mode": format!("{mode:?}").to_lowercase() }),
        EventBody::RedoDone { lsn, elapsed_s } => json!({ "lsn": lsn, "elapsed_s": elapsed_s }),
        EventBody::Rejected { looked_like, reason } => json!({ "looked_like": looked_like, "reason": reason }),
        EventBody::ConfigReload | EventBody::ServerShutdown | EventBody::CrashReinit => json!({}),
    }
}

/// Keeps the checkpoint table in step with a newly stored event.
fn apply(tx: &Transaction<'_>, source: &SourceRow, event_id: i64, event: &Event) -> rusqlite::Result<()> {
    let cluster_id = source.cluster_id;
    let at = to_micros(event.at);
    match &event.body {
        EventBody::PointStart { kind, flags } => pair_start(tx, source, event_id, event, *kind, flags),
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
    let orphan: Option<(i64, i64)> = tx
        .query_row(
            "SELECT c.id, c.completed_at FROM checkpoint c JOIN event e ON e.id = c.complete_event_id
             WHERE c.cluster_id = ?1 AND c.kind = ?2 AND c.pid IS ?3 AND c.start_event_id IS NULL
               AND c.completed_at >= ?4 AND c.completed_at <= ?4 + ?5
               AND NOT (e.source_id = ?6 AND e.offset < ?7)
             ORDER BY c.completed_at, c.id LIMIT 1",
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
    tx.prepare_cached(
        "INSERT INTO checkpoint(cluster_id, kind, pid, start_event_id, started_at, flags, trigger)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![cluster_id, kind.as_str(), pid, event_id, at, flags_text, trigger])?;
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
        None => tx
            .prepare_cached(
                "SELECT id, pairable FROM checkpoint
                 WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3 AND started_at <= ?4
                 ORDER BY started_at DESC, id DESC LIMIT 1",
            )?
            .query_row(params![source.cluster_id, kind.as_str(), event.pid, to_micros(event.at)], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?,
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
    tx.prepare_cached(
        "UPDATE checkpoint SET complete_event_id = ?2, completed_at = ?3,
           pairable = (start_event_id IS NULL),
           buffers_written = ?4, buffers_pct = ?5, slru_buffers_written = ?6,
           wal_files_added = ?7, wal_files_removed = ?8, wal_files_recycled = ?9,
           write_s = ?10, sync_s = ?11, total_s = ?12, sync_files = ?13, sync_longest_s = ?14,
           sync_average_s = ?15, distance_kb = ?16, estimate_kb = ?17, lsn = ?18, redo_lsn = ?19
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        event_id,
        at,
        stats.buffers_written,
        stats.buffers_pct,
        stats.slru_buffers_written,
        stats.wal_files_added,
        stats.wal_files_removed,
        stats.wal_files_recycled,
        stats.write_s,
        stats.sync_s,
        stats.total_s,
        stats.sync_files,
        stats.sync_longest_s,
        stats.sync_average_s,
        stats.distance_kb,
        stats.estimate_kb,
        stats.lsn,
        stats.redo_lsn
    ])?;
    Ok(())
}

impl Store {
    /// The log_line_prefix that the cluster's most recently read source of
    /// `format` was read with: a new file of the same cluster most likely
    /// has it too (see `ingest::inferred`).
    pub(crate) fn cluster_prefix(&self, cluster_id: i64, format: Format) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT prefix FROM source WHERE cluster_id = ?1 AND format = ?2 AND prefix IS NOT NULL
                 ORDER BY last_read DESC, id DESC LIMIT 1",
                params![cluster_id, format.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &str) -> SourceSpec<'_> {
        SourceSpec { path, meta: None, format: crate::frame::Format::Stderr, prefix: None }
    }

    /// Log-like content long enough for a full fingerprint.
    fn content() -> Vec<u8> {
        (0..100)
            .flat_map(|i| format!("2026-11-22 08:17:{i:02}.665 UTC [29389] LOG:  line {i}\n").into_bytes())
            .collect()
    }

    fn store() -> (tempfile::TempDir, Store, i64) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.cluster_id("c").unwrap();
        (dir, store, cluster)
    }

    fn rows(store: &Store) -> i64 {
        store.conn.query_row("SELECT count(*) FROM source", [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn a_reader_that_opened_the_file_before_it_grew_finds_the_same_source() {
        let (_dir, mut store, c) = store();
        let log = content();
        let (created, new) = store.source_for(c, &log, &spec("a.log")).unwrap();
        assert!(new);
        assert_eq!(created.fingerprint.len, FINGERPRINT_BYTES);
        // Its head was read when the file had 300 bytes; the row records 4096.
        let (found, new) = store.source_for(c, &log[..300], &spec("a.log")).unwrap();
        assert!(!new);
        assert_eq!(found.id, created.id);
        assert_eq!(found.fingerprint.len, FINGERPRINT_BYTES, "the longer fingerprint is kept");
        // Other content of the same length is another source.
        let mut other = log[..300].to_vec();
        other[299] = b'X';
        let (another, new) = store.source_for(c, &other, &spec("b.log")).unwrap();
        assert!(new);
        assert_ne!(another.id, created.id);
        assert_eq!(rows(&store), 2);
    }

    #[test]
    fn the_fingerprint_grows_with_the_file() {
        let (_dir, mut store, c) = store();
        let log = content();
        let (first, _) = store.source_for(c, &log[..100], &spec("a.log")).unwrap();
        assert_eq!(first.fingerprint, Fingerprint::of(&log[..100]));
        let (grown, new) = store.source_for(c, &log[..2000], &spec("a.log")).unwrap();
        assert!(!new);
        assert_eq!((grown.id, grown.fingerprint), (first.id, Fingerprint::of(&log[..2000])));
        let head: Vec<u8> = store.conn.query_row("SELECT head FROM source", [], |r| r.get(0)).unwrap();
        assert_eq!(head, &log[..2000]);
        // A file with the first 100 bytes but different after is not this source any more.
        let mut other = log[..2000].to_vec();
        other[1500] = b'X';
        assert!(store.find_source(c, &other).unwrap().is_none());
        assert_eq!(store.find_source(c, &log).unwrap().map(|r| r.id), Some(first.id));
    }

    /// A row recorded before heads were kept (schema 5) is found by its hash alone.
    #[test]
    fn a_row_without_head_is_found_by_its_hash() {
        let (_dir, mut store, c) = store();
        let log = content();
        let (row, _) = store.source_for(c, &log[..500], &spec("a.log")).unwrap();
        store.conn.execute("UPDATE source SET head = NULL", []).unwrap();
        assert_eq!(store.find_source(c, &log).unwrap().map(|r| r.id), Some(row.id));
        assert!(store.find_source(c, &log[..400]).unwrap().is_none(), "shorter than recorded: needs the bytes");
    }

    #[test]
    fn the_read_position_moves_back_only_when_rewound() {
        let (_dir, mut store, c) = store();
        let log = content();
        let (mut row, _) = store.source_for(c, &log, &spec("a.log")).unwrap();
        let read_to = |store: &Store| -> (i64, i64) {
            store.conn.query_row("SELECT read_to, line FROM source", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
        };
        let at = |offset, line| Pos { offset, line };
        let (mut behind, _) = store.source_for(c, &log, &spec("a.log")).unwrap();
        store.commit_batch(&mut row, &spec("a.log"), &[], at(4000, 50)).unwrap();
        assert_eq!(read_to(&store), (4000, 50));
        // Another reader that started earlier commits a position behind it.
        store.commit_batch(&mut behind, &spec("a.log"), &[], at(1000, 12)).unwrap();
        assert_eq!(read_to(&store), (4000, 50), "not moved back");
        // Rewritten in place and shorter: read again from the start.
        let (mut again, _) = store.source_for(c, &log, &spec("a.log")).unwrap();
        store.rewind_source(&mut again).unwrap();
        assert_eq!((again.read_to, again.line), (0, 1));
        assert_eq!(read_to(&store), (0, 1));
        store.commit_batch(&mut again, &spec("a.log"), &[], at(2000, 25)).unwrap();
        assert_eq!(read_to(&store), (2000, 25));
        // A reader that looked the row up before the rewind does not rewind it again.
        row.read_to = 4000;
        store.rewind_source(&mut row).unwrap();
        assert_eq!(read_to(&store), (2000, 25));
    }

    // --- Pairing (issue 9 §1, see mutants.md): real PostgreSQL 15 lines. ---

    const NOISE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
    const CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log";
    const AFTER_CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log";

    fn fixture(path: &str) -> Vec<String> {
        let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
        text.lines().map(|l| format!("{l}\n")).collect()
    }

    /// Imports `files` (each a list of lines) in the order given into a new store.
    fn import(files: &[&[String]]) -> (tempfile::TempDir, Store) {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.cluster_id("c").unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        for (i, lines) in files.iter().enumerate() {
            let file = dir.path().join(format!("postgresql-{i}.log"));
            std::fs::write(&file, lines.concat()).unwrap();
            ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
        }
        (dir, store)
    }

    /// (started, completed, trigger, distance) of every checkpoint row, times as logged.
    type Pair = (Option<String>, Option<String>, Option<String>, Option<i64>);

    fn pairs(store: &Store) -> Vec<Pair> {
        let fmt = |t: Option<Timestamp>| t.map(|t| t.strftime("%H:%M:%S%.3f").to_string());
        let rows = store.checkpoints(&crate::store::query::Filter::default()).unwrap();
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
