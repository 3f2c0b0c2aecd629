//! Events (table event): a batch of classified log events stored, and the
//! source's read position moved, in one transaction; each event also keeps
//! the checkpoint rows in step ([`super::checkpoints`]).

use jiff::Timestamp;
use rusqlite::{params, Transaction, TransactionBehavior};
use serde_json::json;

use super::checkpoints::apply;
use super::columns::to_micros;
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
