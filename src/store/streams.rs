//! Shipped files (table ingest_stream): the files Vector agents send to a
//! central walwatch, one row per (host, file), with how much of its spool
//! and index is committed (see `receive::spool`).

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension, Row};

use super::columns::to_micros;
use super::{Store, StoreError};

/// One shipped file and what of it was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRow {
    pub id: i64,
    pub host: String,
    pub file: String,
    pub cluster_id: i64,
    pub generation: i64,
    /// One past the largest offset taken in this generation.
    pub accepted_end: u64,
    pub spool_len: u64,
    pub index_len: u64,
    pub lines: u64,
    pub duplicates: u64,
}

const COLUMNS: &str = "SELECT id, host, file, cluster_id, generation, accepted_end, spool_len, index_len, lines, duplicates FROM ingest_stream";

fn stream_row(r: &Row<'_>) -> rusqlite::Result<StreamRow> {
    Ok(StreamRow {
        id: r.get(0)?,
        host: r.get(1)?,
        file: r.get(2)?,
        cluster_id: r.get(3)?,
        generation: r.get(4)?,
        accepted_end: r.get::<_, i64>(5)? as u64,
        spool_len: r.get::<_, i64>(6)? as u64,
        index_len: r.get::<_, i64>(7)? as u64,
        lines: r.get::<_, i64>(8)? as u64,
        duplicates: r.get::<_, i64>(9)? as u64,
    })
}

impl Store {
    /// The stream of (`host`, `file`), created for `cluster` when new.
    pub fn stream(&mut self, host: &str, file: &str, cluster: &str) -> Result<StreamRow, StoreError> {
        let cluster_id = self.cluster_id(cluster)?;
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO ingest_stream(host, file, cluster_id) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![host, file, cluster_id]))
            .and_then(|_| {
                self.conn
                    .prepare_cached(&format!("{COLUMNS} WHERE host = ?1 AND file = ?2"))?
                    .query_row(params![host, file], stream_row)
            })
            .map_err(|e| self.sql(e))
    }

    /// Every stream, oldest first.
    pub fn streams(&self) -> Result<Vec<StreamRow>, StoreError> {
        let read = || -> rusqlite::Result<Vec<StreamRow>> {
            self.conn.prepare_cached(&format!("{COLUMNS} ORDER BY id"))?.query_map([], stream_row)?.collect()
        };
        read().map_err(|e| self.sql(e))
    }

    /// The stream `id` as committed.
    pub fn stream_by_id(&self, id: i64) -> Result<Option<StreamRow>, StoreError> {
        self.conn
            .prepare_cached(&format!("{COLUMNS} WHERE id = ?1"))
            .and_then(|mut s| s.query_row([id], stream_row).optional())
            .map_err(|e| self.sql(e))
    }

    /// Records what a batch added to the stream's spool and index: from
    /// now on those bytes are taken, and a batch sent again is answered
    /// from the index.
    pub fn commit_stream(&mut self, row: &StreamRow) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE ingest_stream SET generation = ?2, accepted_end = ?3, spool_len = ?4, index_len = ?5,
                        lines = ?6, duplicates = ?7, last_batch_at = ?8 WHERE id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    row.id,
                    row.generation,
                    row.accepted_end as i64,
                    row.spool_len as i64,
                    row.index_len as i64,
                    row.lines as i64,
                    row.duplicates as i64,
                    to_micros(Timestamp::now()),
                ])
            })
            .map(drop)
            .map_err(|e| self.sql(e))
    }
}

/// A shipped file's damaged spool, set aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub host: String,
    pub file: String,
    pub cluster: String,
    pub generation: i64,
    pub reason: String,
    /// Where its files were moved (without their .log/.idx extension).
    pub kept: String,
    /// Committed bytes not yet read into the store when it was found.
    pub lost_bytes: u64,
    pub at: Timestamp,
}

impl Store {
    /// This store's identity: what its spool directory records as its owner.
    pub fn identity(&mut self) -> Result<String, StoreError> {
        self.conn.query_row("SELECT token FROM store_identity WHERE id = 1", [], |r| r.get(0)).map_err(|e| self.sql(e))
    }

    /// How far the source named `path` of `cluster_id` was read, if it was.
    pub fn read_position(&self, cluster_id: i64, path: &str) -> Result<Option<u64>, StoreError> {
        self.conn
            .prepare_cached("SELECT max(read_to) FROM source WHERE cluster_id = ?1 AND path = ?2")
            .and_then(|mut s| s.query_row(params![cluster_id, path], |r| r.get::<_, Option<i64>>(0)))
            .map(|n| n.map(|n| n as u64))
            .map_err(|e| self.sql(e))
    }

    /// Records that `row`'s generation was damaged and set aside.
    pub fn quarantine_stream(
        &mut self,
        row: &StreamRow,
        reason: &str,
        kept: &str,
        lost_bytes: u64,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO ingest_quarantine(stream_id, generation, reason, kept, lost_bytes, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![row.id, row.generation, reason, kept, lost_bytes as i64, to_micros(at)],
            )
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// The quarantined spools not cleared yet, oldest first; of `cluster` only when given.
    pub fn quarantined(&self, cluster: Option<&str>) -> Result<Vec<Quarantined>, StoreError> {
        let read = || -> rusqlite::Result<Vec<Quarantined>> {
            self.conn
                .prepare_cached(
                    "SELECT s.host, s.file, c.name, q.generation, q.reason, q.kept, q.lost_bytes, q.at
                     FROM ingest_quarantine q JOIN ingest_stream s ON s.id = q.stream_id
                     JOIN cluster c ON c.id = s.cluster_id
                     WHERE ?1 IS NULL OR c.name = ?1 ORDER BY q.id",
                )?
                .query_map([cluster], |r| {
                    Ok(Quarantined {
                        host: r.get(0)?,
                        file: r.get(1)?,
                        cluster: r.get(2)?,
                        generation: r.get(3)?,
                        reason: r.get(4)?,
                        kept: r.get(5)?,
                        lost_bytes: r.get::<_, i64>(6)? as u64,
                        at: super::columns::from_micros(r.get(7)?),
                    })
                })?
                .collect()
        };
        read().map_err(|e| self.sql(e))
    }

    /// Forgets the quarantine records (their files stay where they were
    /// moved); the number forgotten.
    pub fn clear_quarantined(&mut self) -> Result<usize, StoreError> {
        self.conn.execute("DELETE FROM ingest_quarantine", []).map_err(|e| self.sql(e))
    }
}
