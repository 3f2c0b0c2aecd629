//! Shipped files (table ingest_stream): the files Vector agents send to a
//! central walwatch, one row per (host, file), with how much of its spool
//! and index is committed (see `receive::spool`); what went wrong with them
//! (table ingest_damage); and the store's identity that its spool directory
//! records as its owner (table store_identity).

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::{params, Row};

use super::columns::to_micros;
use super::{Store, StoreError};

/// The streams' handle: [`Store::streams`], [`Store::streams_mut`].
pub struct Streams<S>(pub(super) S);

/// One shipped file and what of it was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamRow {
    pub(crate) id: i64,
    pub(crate) host: String,
    pub(crate) file: String,
    pub(crate) cluster_id: i64,
    pub(crate) generation: i64,
    /// One past the largest offset taken in this generation.
    pub(crate) accepted_end: u64,
    pub(crate) spool_len: u64,
    pub(crate) index_len: u64,
    pub(crate) lines: u64,
    pub(crate) duplicates: u64,
    /// Where the line after the last one taken starts; None before the
    /// first line of a generation.
    pub(crate) next_offset: Option<u64>,
}

const COLUMNS: &str = "SELECT id, host, file, cluster_id, generation, accepted_end, spool_len, index_len, lines, duplicates, next_offset FROM ingest_stream";

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
        next_offset: r.get::<_, Option<i64>>(10)?.map(|n| n as u64),
    })
}

impl<S: Deref<Target = Store>> Streams<S> {
    /// Every stream, oldest first.
    pub(crate) fn all(&self) -> Result<Vec<StreamRow>, StoreError> {
        let read = || -> rusqlite::Result<Vec<StreamRow>> {
            self.0.conn.prepare_cached(&format!("{COLUMNS} ORDER BY id"))?.query_map([], stream_row)?.collect()
        };
        read().map_err(|e| self.0.sql(e))
    }

    /// This store's identity: what its spool directory records as its owner.
    pub(crate) fn identity(&self) -> Result<String, StoreError> {
        self.0
            .conn
            .query_row("SELECT token FROM store_identity WHERE id = 1", [], |r| r.get(0))
            .map_err(|e| self.0.sql(e))
    }

    /// The damage not forgotten yet, oldest first; of `cluster` only when given.
    pub(crate) fn damaged(&self, cluster: Option<&str>) -> Result<Vec<Damaged>, StoreError> {
        let read = || -> rusqlite::Result<Vec<Damaged>> {
            self.0
                .conn
                .prepare_cached(
                    "SELECT s.host, s.file, c.name, d.generation, d.kind, d.reason, d.kept, d.lost_bytes,
                            d.at_offset, d.at
                     FROM ingest_damage d JOIN ingest_stream s ON s.id = d.stream_id
                     JOIN cluster c ON c.id = s.cluster_id
                     WHERE ?1 IS NULL OR c.name = ?1 ORDER BY d.id",
                )?
                .query_map([cluster], |r| {
                    let lost = r.get::<_, i64>(7)? as u64;
                    let damage = match r.get::<_, String>(4)?.as_str() {
                        "gap" => Damage::Gap { offset: r.get::<_, Option<i64>>(8)?.unwrap_or(0) as u64, bytes: lost },
                        _ => Damage::Spool {
                            reason: r.get(5)?,
                            kept: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                            unread: lost,
                        },
                    };
                    Ok(Damaged {
                        host: r.get(0)?,
                        file: r.get(1)?,
                        cluster: r.get(2)?,
                        generation: r.get(3)?,
                        damage,
                        at: super::columns::from_micros(r.get(9)?),
                    })
                })?
                .collect()
        };
        read().map_err(|e| self.0.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Streams<S> {
    /// The stream of (`host`, `file`), created for `cluster` when new.
    pub(crate) fn find_or_create(&mut self, host: &str, file: &str, cluster: &str) -> Result<StreamRow, StoreError> {
        let cluster_id = self.0.clusters_mut().find_or_create(cluster)?;
        let store = &*self.0;
        store
            .conn
            .prepare_cached("INSERT OR IGNORE INTO ingest_stream(host, file, cluster_id) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![host, file, cluster_id]))
            .and_then(|_| {
                store
                    .conn
                    .prepare_cached(&format!("{COLUMNS} WHERE host = ?1 AND file = ?2"))?
                    .query_row(params![host, file], stream_row)
            })
            .map_err(|e| store.sql(e))
    }

    /// Records what a batch added to the stream's spool and index: from
    /// now on those bytes are taken, and a batch sent again is answered
    /// from the index.
    pub(crate) fn commit(&mut self, row: &StreamRow) -> Result<(), StoreError> {
        self.0
            .conn
            .prepare_cached(
                "UPDATE ingest_stream SET generation = ?2, accepted_end = ?3, spool_len = ?4, index_len = ?5,
                        lines = ?6, duplicates = ?7, last_batch_at = ?8, next_offset = ?9 WHERE id = ?1",
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
                    row.next_offset.map(|n| n as i64),
                ])
            })
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    /// Records `damage` to `row`'s generation.
    pub(crate) fn record_damage(&mut self, row: &StreamRow, damage: &Damage, at: Timestamp) -> Result<(), StoreError> {
        let (kind, reason, kept, lost, offset) = match damage {
            Damage::Spool { reason, kept, unread } => ("spool", reason.clone(), Some(kept.as_str()), *unread, None),
            Damage::Gap { offset, bytes } => ("gap", String::new(), None, *bytes, Some(*offset as i64)),
        };
        self.0
            .conn
            .execute(
                "INSERT INTO ingest_damage(stream_id, generation, kind, reason, kept, lost_bytes, at_offset, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![row.id, row.generation, kind, reason, kept, lost as i64, offset, to_micros(at)],
            )
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    /// Forgets the damage records (set-aside files stay where they were
    /// moved); the number forgotten.
    pub(crate) fn forget_damage(&mut self) -> Result<usize, StoreError> {
        self.0.conn.execute("DELETE FROM ingest_damage", []).map_err(|e| self.0.sql(e))
    }
}

/// What went wrong with a shipped file that walwatch could not prevent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Damage {
    /// Its spool was cut, replaced or removed outside walwatch: set aside
    /// in `kept` (without its .log/.idx extension); `unread` committed
    /// bytes had not been read into the store yet.
    Spool { reason: String, kept: String, unread: u64 },
    /// `bytes` of the log from `offset` on were never shipped.
    Gap { offset: u64, bytes: u64 },
}

/// A damage record of one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damaged {
    pub(crate) host: String,
    pub(crate) file: String,
    pub(crate) cluster: String,
    pub(crate) generation: i64,
    pub(crate) damage: Damage,
    pub(crate) at: Timestamp,
}
