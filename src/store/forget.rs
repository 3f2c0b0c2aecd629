//! Forgetting what was read of a source, so that it is read again as if
//! never seen: its events, the checkpoint halves they made, its position and
//! the prefix it was read with. Used by `walwatch forget`, by an import that
//! did not fit (it takes back what it stored), and by the daemon when a
//! cluster's `format` or `prefix` setting changed.

use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

use super::sources::SourceRow;
use super::{Store, StoreError};
use crate::frame::Pos;

/// What was forgotten.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forgotten {
    pub sources: u64,
    /// Events, rejected records included.
    pub events: u64,
    /// Checkpoint rows removed (both halves forgotten); rows that keep one
    /// half read from another source stay, waiting for the other again.
    pub checkpoints: u64,
}

/// A source as `walwatch forget` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownSource {
    pub id: i64,
    pub cluster: String,
    pub path: String,
}

impl Store {
    /// The sources of `cluster` (every cluster's with None), by path.
    pub fn known_sources(&self, cluster: Option<&str>) -> Result<Vec<KnownSource>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.id, c.name, s.path FROM source s JOIN cluster c ON c.id = s.cluster_id
                 WHERE ?1 IS NULL OR c.name = ?1 ORDER BY c.name, s.path, s.id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([cluster], |r| Ok(KnownSource { id: r.get(0)?, cluster: r.get(1)?, path: r.get(2)? }))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The source of cluster `cluster` whose content `head` is, if known.
    pub fn source_with_content(&self, cluster: &str, head: &[u8]) -> Result<Option<i64>, StoreError> {
        let id: Option<i64> = self
            .conn
            .query_row("SELECT id FROM cluster WHERE name = ?1", [cluster], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        match id {
            Some(cluster_id) => Ok(self.find_source(cluster_id, head)?.map(|s| s.id)),
            None => Ok(None),
        }
    }

    /// Forgets the sources `ids` whole, in one transaction.
    pub fn forget_sources(&mut self, ids: &[i64]) -> Result<Forgotten, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let mut total = Forgotten::default();
        for &id in ids {
            let (events, checkpoints) = forget_events(&tx, id, 0).map_err(sql)?;
            total.sources += tx.execute("DELETE FROM source WHERE id = ?1", [id]).map_err(sql)? as u64;
            total.events += events;
            total.checkpoints += checkpoints;
        }
        tx.commit().map_err(sql)?;
        Ok(total)
    }

    /// Takes back what one read of `source` stored from `from` on, as if
    /// that read never happened; a read from the start forgets the source
    /// itself (and the prefix it was read with).
    pub(crate) fn take_back(&mut self, source: &SourceRow, from: Pos) -> Result<Forgotten, StoreError> {
        if from.offset == 0 {
            return self.forget_sources(&[source.id]);
        }
        let path = self.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let (events, checkpoints) = forget_events(&tx, source.id, from.offset).map_err(sql)?;
        tx.execute(
            "UPDATE source SET read_to = ?2, line = ?3 WHERE id = ?1 AND read_to > ?2",
            params![source.id, from.offset as i64, from.line as i64],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(Forgotten { sources: 0, events, checkpoints })
    }

    /// Adds `n` lines that looked like events but did not fit (see
    /// migrations/0008_unmatched.sql) to what is known of `source`.
    pub(crate) fn add_unmatched(&mut self, source: &SourceRow, n: u64) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE source SET unmatched = unmatched + ?2 WHERE id = ?1", params![source.id, n as i64])
            .map(drop)
            .map_err(|e| self.sql(e))
    }
}

/// Deletes the events of `source` at `from` or later and the checkpoint
/// halves they made; returns how many events and whole checkpoint rows went.
///
/// A row that keeps one half (read from another file) waits for the other
/// again, as before it was paired — unless the server restarted after its
/// start, which no complete line can then belong to (see `pairable` in
/// migrations/0001_init.sql).
fn forget_events(tx: &Transaction<'_>, source: i64, from: u64) -> rusqlite::Result<(u64, u64)> {
    const GONE: &str = "(SELECT id FROM event WHERE source_id = ?1 AND offset >= ?2)";
    let args = params![source, from as i64];
    tx.execute(
        &format!(
            "UPDATE checkpoint SET start_event_id = NULL, started_at = NULL, flags = NULL, trigger = NULL, pairable = 1
             WHERE start_event_id IN {GONE}"
        ),
        args,
    )?;
    tx.execute(
        &format!(
            "UPDATE checkpoint SET complete_event_id = NULL, completed_at = NULL,
               buffers_written = NULL, buffers_pct = NULL, slru_buffers_written = NULL,
               wal_files_added = NULL, wal_files_removed = NULL, wal_files_recycled = NULL,
               write_s = NULL, sync_s = NULL, total_s = NULL, sync_files = NULL, sync_longest_s = NULL,
               sync_average_s = NULL, distance_kb = NULL, estimate_kb = NULL, lsn = NULL, redo_lsn = NULL,
               pairable = NOT EXISTS (SELECT 1 FROM event r
                 WHERE r.cluster_id = checkpoint.cluster_id AND r.id NOT IN {GONE}
                   AND r.kind IN ('server_start', 'crash_reinit', 'server_shutdown') AND r.at > checkpoint.started_at)
             WHERE complete_event_id IN {GONE}"
        ),
        args,
    )?;
    let checkpoints =
        tx.execute("DELETE FROM checkpoint WHERE start_event_id IS NULL AND complete_event_id IS NULL", [])?;
    let events = tx.execute("DELETE FROM event WHERE source_id = ?1 AND offset >= ?2", args)?;
    Ok((events as u64, checkpoints as u64))
}
