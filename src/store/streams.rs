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
