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

    /// Forgets the sources `ids` whole, in one transaction, and counts it
    /// for their clusters: a running daemon then reads their files again
    /// (see migrations/0018_forgets.sql).
    pub fn forget_sources(&mut self, ids: &[i64]) -> Result<Forgotten, StoreError> {
        self.forget(ids, true)
    }

    /// How many times sources of `cluster_id` were forgotten.
    pub(crate) fn forgets(&self, cluster_id: i64) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT forgets FROM cluster WHERE id = ?1", [cluster_id], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.sql(e))
    }

    /// `counted`: the daemon is told (not for a read taking back its own
    /// misfit, which the reader handles: telling it would have it read the
    /// misfit again at once, and again).
    fn forget(&mut self, ids: &[i64], counted: bool) -> Result<Forgotten, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        if counted {
            for &id in ids {
                tx.execute(
                    "UPDATE cluster SET forgets = forgets + 1 WHERE id = (SELECT cluster_id FROM source WHERE id = ?1)",
                    [id],
                )
                .map_err(sql)?;
            }
        }
        let mut total = Forgotten::default();
        for &id in ids {
            let (events, checkpoints) = forget_events(&tx, id, 0).map_err(sql)?;
            total.sources += tx.execute("DELETE FROM source WHERE id = ?1", [id]).map_err(sql)? as u64;
            total.events += events;
            total.checkpoints += checkpoints;
        }
        // A cluster with nothing read any more learns its server's uid anew
        // from the next log read: `forget --cluster` undoes a wrong one.
        tx.execute(
            "UPDATE cluster SET server_uid = NULL
             WHERE server_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM source s WHERE s.cluster_id = cluster.id)",
            [],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(total)
    }

    /// Takes back what one read of `source` stored from `from` on, as if
    /// that read never happened; a read from the start forgets the source
    /// itself (and the prefix it was read with).
    pub(crate) fn take_back(&mut self, source: &SourceRow, from: Pos) -> Result<Forgotten, StoreError> {
        if from.offset == 0 {
            return self.forget(&[source.id], false);
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

    /// Adds lines that looked like events but have no time to what is
    /// known of `source`: `unmatched` ones, which did not fit (see
    /// migrations/0008_unmatched.sql), and `inside_names`, a client's text
    /// in a failed login's prefix (0010_rejected_lines.sql).
    pub(crate) fn add_undated(
        &mut self,
        source: &SourceRow,
        unmatched: u64,
        inside_names: u64,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE source SET unmatched = unmatched + ?2, rejected_lines = rejected_lines + ?3 WHERE id = ?1",
                params![source.id, unmatched as i64, inside_names as i64],
            )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};

    /// The real fixture's lines 1–12: a server start, then two checkpoint
    /// starts of the checkpointer (pid 21760) with a complete between them.
    fn fixture_lines() -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log");
        std::fs::read_to_string(path).unwrap().lines().take(12).map(|l| format!("{l}\n")).collect()
    }

    fn import(store: &mut Store, cluster: i64, path: &std::path::Path) -> ingest::ImportReport {
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        ingest::import(store, cluster, path.to_str().unwrap(), &opts, &time).unwrap()
    }

    /// Every checkpoint row: (start event id set, complete event id set, pairable).
    fn points(store: &Store) -> Vec<(bool, bool, bool)> {
        let mut stmt = store
            .conn
            .prepare("SELECT start_event_id IS NOT NULL, complete_event_id IS NOT NULL, pairable FROM checkpoint ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().collect::<Result<_, _>>().unwrap()
    }

    /// A checkpoint whose start is in one file and whose complete is in the
    /// next: forgetting the second file leaves the start waiting again, and
    /// reading the file again pairs it as the first read did.
    #[test]
    fn forgetting_a_file_unpairs_its_halves_and_reading_it_again_pairs_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.cluster_id("c").unwrap();
        let lines = fixture_lines();
        let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
        std::fs::write(&a, lines[..8].concat()).unwrap();
        std::fs::write(&b, lines[8..].concat()).unwrap();
        import(&mut store, cluster, &a);
        import(&mut store, cluster, &b);
        let paired = points(&store);
        assert_eq!(paired, [(true, true, false), (true, false, true)]);

        let known = store.known_sources(Some("c")).unwrap();
        assert_eq!(
            known.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
            [a.to_str().unwrap(), b.to_str().unwrap()]
        );
        let gone = store.forget_sources(&[known[1].id]).unwrap();
        // b.log: the complete, a too-frequent warning and the second start.
        assert_eq!(gone, Forgotten { sources: 1, events: 3, checkpoints: 1 });
        assert_eq!(points(&store), [(true, false, true)]);
        assert_eq!(store.known_sources(None).unwrap().len(), 1);

        let again = import(&mut store, cluster, &b);
        assert_eq!((again.resumed_at, again.stored), (0, 3));
        assert_eq!(points(&store), paired);
    }

    /// A read that did not fit takes back what it stored from where it
    /// started: a source known before keeps what was read before.
    #[test]
    fn taking_back_a_read_keeps_what_was_read_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.cluster_id("c").unwrap();
        let lines = fixture_lines();
        let log = dir.path().join("a.log");
        std::fs::write(&log, lines[..8].concat()).unwrap();
        import(&mut store, cluster, &log);
        std::fs::write(&log, lines.concat()).unwrap();
        let second = import(&mut store, cluster, &log);
        assert_eq!((second.resumed_at, second.stored), (lines[..8].concat().len() as u64, 3));
        let row = store.find_source(cluster, lines.concat().as_bytes()).unwrap().unwrap();
        let from = Pos { offset: second.resumed_at, line: 9 };
        let gone = store.take_back(&row, from).unwrap();
        assert_eq!(gone, Forgotten { sources: 0, events: 3, checkpoints: 1 });
        let row = store.find_source(cluster, lines.concat().as_bytes()).unwrap().unwrap();
        assert_eq!((row.read_to, row.line), (from.offset, 9));
        assert_eq!(points(&store), [(true, false, true)]);
        let events: i64 = store.conn.query_row("SELECT count(*) FROM event", [], |r| r.get(0)).unwrap();
        assert_eq!(events, 4, "the first read's server start, ready, warning and checkpoint start stay");
    }

    /// Migration 8 on a store of schema 7: every source counts no unmatched
    /// line, and no cluster has a daemon setting yet; the first setting
    /// recorded is not a change, another one is.
    #[test]
    fn the_migration_starts_every_count_at_zero_and_the_first_setting_is_no_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        for sql in &super::super::MIGRATIONS[..7] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        conn.execute_batch(
            "INSERT INTO cluster(id, name) VALUES (1, 'main');
             INSERT INTO source(id, cluster_id, path, fp_len, fp_hash, format, first_read, last_read)
               VALUES (1, 1, '/log', 0, 0, 'stderr', 1, 2);",
        )
        .unwrap();
        drop(conn);
        let mut store = Store::open(&path).unwrap();
        let unmatched: i64 = store.conn.query_row("SELECT unmatched FROM source", [], |r| r.get(0)).unwrap();
        assert_eq!(unmatched, 0);
        assert_eq!(store.follow_setting(1, "auto", "auto").unwrap(), None);
        assert_eq!(store.follow_setting(1, "auto", "auto").unwrap(), None);
        assert_eq!(
            store.follow_setting(1, "stderr", "%m [%p] ").unwrap(),
            Some(("auto".to_string(), "auto".to_string()))
        );
    }
}
