//! Events (table event): a batch of classified log events stored, and the
//! source's read position moved, in one transaction; each event also keeps
//! the checkpoint rows in step ([`super::checkpoints`]); and reading them
//! back for the alert rules: the log's times, too-frequent warnings in a
//! window, the events dated ahead.
//!
//! **Events dated ahead.** An event whose log time was more than a tolerance
//! ahead of walwatch's clock when it was read (`event.ahead_us`, see
//! migrations/0007_event_ahead.sql) is kept and counted, but its time is
//! not believed: it is never a log's first, last or newest event.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rusqlite::{params, CachedStatement, Transaction, TransactionBehavior};
use serde_json::json;

use super::checkpoints::{apply, Pairing};
use super::columns::{from_micros, opt_from_micros, to_micros};
use super::filter::{not_ahead, tolerance_us, RECOGNISED};
use super::sources::{SourceRow, SourceSpec};
use super::{Store, StoreError};
use crate::frame::Pos;
use crate::model::event::{Event, EventBody};

impl Store {
    /// Stores `events` and moves `source` to `reached`, atomically.
    /// Returns how many events were new.
    pub(crate) fn commit_batch(
        &mut self,
        source: &mut SourceRow,
        spec: &SourceSpec<'_>,
        events: &[Event],
        reached: Pos,
    ) -> Result<usize, StoreError> {
        if !self.import {
            return self.commit_batch_checked(source, spec, events, reached);
        }
        // An import's batch without foreign-key checks (see
        // `use_import_settings`); they are back on whatever happened, and
        // the batch's own error is the one told.
        self.foreign_keys(false)?;
        let committed = self.commit_batch_checked(source, spec, events, reached);
        let restored = self.foreign_keys(true);
        let added = committed?;
        restored?;
        Ok(added)
    }

    /// [`Store::commit_batch`] itself, with the connection's foreign-key setting as it is.
    fn commit_batch_checked(
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
        {
            let mut pairing = Pairing::new(&tx, fresh(&tx, source, events).map_err(sql)?).map_err(sql)?;
            // Prepared once for the batch, like the pairing's statements.
            let mut insert = tx.prepare_cached(INSERT_EVENT).map_err(sql)?;
            for event in events {
                added += insert_event(&tx, &mut insert, source, event, &mut pairing).map_err(sql)?;
            }
            pairing.flush(&tx).map_err(sql)?;
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

/// Whether the store holds no event of `source` at or after the first
/// offset of `events` (always so for a file read for the first time or
/// followed as it grows; not after a rewind, or where another process read
/// further): then every event stored at those offsets is one of `events`,
/// which checkpoint pairing may rely on ([`Pairing`]). One index seek.
fn fresh(tx: &Transaction<'_>, source: &SourceRow, events: &[Event]) -> rusqlite::Result<bool> {
    let Some(first) = events.first() else { return Ok(true) };
    let last: Option<i64> = tx
        .prepare_cached("SELECT max(offset) FROM event WHERE source_id = ?1")?
        .query_row(params![source.id], |r| r.get(0))?;
    Ok(last.is_none_or(|last| last < first.offset as i64))
}

const INSERT_EVENT: &str =
    "INSERT OR IGNORE INTO event(cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

/// Inserts one event with `insert` ([`INSERT_EVENT`]); returns 0 when it
/// was already stored.
fn insert_event(
    tx: &Transaction<'_>,
    insert: &mut CachedStatement<'_>,
    source: &SourceRow,
    event: &Event,
    pairing: &mut Pairing<'_>,
) -> rusqlite::Result<usize> {
    let data = event_data(&event.body).to_string();
    let inserted = insert.execute(params![
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
        apply(tx, source, event_id, event, pairing)?;
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

// --- Reading ---

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

const POINT_LINE_KINDS: &str =
    "('checkpoint_start', 'checkpoint_complete', 'restartpoint_start', 'restartpoint_complete')";

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

    /// `cluster`'s oldest and newest events, last checkpoint line and last
    /// server start, leaving out the events dated more than `tolerance` ahead.
    pub(crate) fn log_times(&self, cluster: &str, tolerance: Duration) -> Result<LogTimes, StoreError> {
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
                    MAX(CASE WHEN kind IN {POINT_LINE_KINDS} THEN last END),
                    MAX(CASE WHEN kind IN ('server_start', 'server_ready') THEN last END)
             FROM ends",
            ok = format!("{} AND {RECOGNISED}", not_ahead("?1"))
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
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::fresh;
    use crate::frame::Format;
    use crate::model::event::{Event, EventBody};
    use crate::store::{SourceSpec, Store};

    /// A batch is fresh (its starts may be held for their completes) only
    /// when it begins past every event stored of its source: a read on from
    /// where the last one stopped, or of a source never read; not a read
    /// again from the start (a file rewritten in place), nor one beginning
    /// at the offset of the last stored event. The stored events: a real
    /// start and complete of fixture 15-stderr-default-noise (lines 1554
    /// and 1577), imported.
    #[test]
    fn a_batch_is_fresh_only_past_every_stored_event_of_its_source() {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log"),
        )
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let (start, complete) = (format!("{}\n", lines[1553]), format!("{}\n", lines[1576]));
        assert!(start.contains("checkpoint starting: wal") && complete.contains("checkpoint complete: "));
        let dir = tempfile::tempdir().unwrap();
        let (read, unread) = (dir.path().join("read.log"), dir.path().join("unread.log"));
        std::fs::write(&read, format!("{start}{complete}")).unwrap();
        std::fs::write(&unread, &complete).unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.cluster_id("c").unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        let report = ingest::import(&mut store, cluster, read.to_str().unwrap(), &opts, &time).unwrap();
        assert_eq!(report.stored, 2);
        let source = store.find_source(cluster, std::fs::read(&read).unwrap().as_slice()).unwrap().unwrap();
        let spec = SourceSpec { path: unread.to_str().unwrap(), meta: None, format: Format::Stderr, prefix: None };
        let (unread_source, _) = store.source_for(cluster, complete.as_bytes(), &spec).unwrap();

        let last = start.len() as u64; // the complete line's offset
        let batch = |offset| {
            vec![Event {
                at: Timestamp::UNIX_EPOCH,
                pid: Some(25162),
                offset,
                line: 2,
                nth: 0,
                body: EventBody::ConfigReload,
            }]
        };
        let tx = store.conn.transaction().unwrap();
        let is_fresh = |source, events: &[Event]| fresh(&tx, source, events).unwrap();
        assert!(is_fresh(&source, &[]), "no events");
        assert!(is_fresh(&source, &batch(last + 1)), "past the last stored event");
        assert!(!is_fresh(&source, &batch(last)), "at the last stored event");
        assert!(!is_fresh(&source, &batch(0)), "read again from the start");
        assert!(is_fresh(&unread_source, &batch(0)), "a source of which nothing is stored");
    }
}
