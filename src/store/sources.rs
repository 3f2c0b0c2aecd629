//! Sources (table source): the files and streams read, known by the
//! fingerprint of their first bytes whatever their name becomes, how far
//! each was read and with which format and prefix, and the lines counted
//! per source because they have no time.
//!
//! Forgetting what was read of a source, so that it is read again as if
//! never seen: its events, its lines in checkpoint rows, its position and
//! the prefix it was read with. Used by `walwatch forget`, by an import that
//! did not fit (it takes back what it stored), and by the daemon when a
//! cluster's `format` or `prefix` setting changed.

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::columns::{opt_from_micros, to_micros};
use super::filter::Filter;
use super::{checkpoints, events, Store, StoreError};
use crate::frame::{Format, Pos};
use crate::source::{FileMeta, Fingerprint, FINGERPRINT_BYTES};

/// The sources' handle: [`Store::sources`], [`Store::sources_mut`].
pub struct Sources<S>(pub(super) S);

/// A known source and how far it has been read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SourceRow {
    pub(crate) id: i64,
    pub(crate) cluster_id: i64,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) read_to: u64,
    pub(crate) line: u64,
    /// The log_line_prefix it was read with (stderr and syslog).
    pub(crate) prefix: Option<String>,
}

/// What is known about a source when it is read (its identity, the
/// fingerprint of its first bytes, is taken from the head given with it).
pub(crate) struct SourceSpec<'a> {
    pub(crate) path: &'a str,
    pub(crate) meta: Option<FileMeta>,
    pub(crate) format: Format,
    pub(crate) prefix: Option<&'a str>,
}

/// What walwatch has read of a cluster's log files (table source), in wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct LogGrowth {
    /// When walwatch first read any of the cluster's files.
    pub(crate) first_read: Option<Timestamp>,
    /// When walwatch last read new bytes from them (a commit happens only when the offset moves).
    pub(crate) last_read: Option<Timestamp>,
    /// Bytes read so far, all files together.
    pub(crate) bytes_read: i64,
}

/// What was forgotten.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Forgotten {
    pub(crate) sources: u64,
    /// Events and checkpoint lines, rejected records included.
    pub(crate) events: u64,
    /// Checkpoint rows removed (both halves forgotten); rows that keep one
    /// half read from another source stay, waiting for the other again.
    pub(crate) checkpoints: u64,
}

/// A source as `walwatch forget` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnownSource {
    pub(crate) id: i64,
    pub(crate) cluster: String,
    pub(crate) path: String,
}

impl<S: Deref<Target = Store>> Sources<S> {
    /// The source of `cluster_id` whose content `head` is: the same first
    /// bytes, either of the two possibly grown since it was recorded.
    pub(crate) fn find(&self, cluster_id: i64, head: &[u8]) -> Result<Option<SourceRow>, StoreError> {
        find(&self.0.conn, cluster_id, head).map_err(|e| self.0.sql(e))
    }

    /// The source of cluster `cluster` whose content `head` is, if known.
    pub(crate) fn with_content(&self, cluster: &str, head: &[u8]) -> Result<Option<i64>, StoreError> {
        match self.0.clusters().find(cluster)? {
            Some(cluster_id) => Ok(self.find(cluster_id, head)?.map(|s| s.id)),
            None => Ok(None),
        }
    }

    /// The sources of `cluster` (every cluster's with None), by path.
    pub(crate) fn known(&self, cluster: Option<&str>) -> Result<Vec<KnownSource>, StoreError> {
        let mut stmt = self
            .0
            .conn
            .prepare(
                "SELECT s.id, c.name, s.path FROM source s JOIN cluster c ON c.id = s.cluster_id
                 WHERE ?1 IS NULL OR c.name = ?1 ORDER BY c.name, s.path, s.id",
            )
            .map_err(|e| self.0.sql(e))?;
        let rows = stmt
            .query_map([cluster], |r| Ok(KnownSource { id: r.get(0)?, cluster: r.get(1)?, path: r.get(2)? }))
            .map_err(|e| self.0.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.0.sql(e))
    }

    /// The log_line_prefix that the cluster's most recently read source of
    /// `format` was read with: a new file of the same cluster most likely
    /// has it too (see `ingest::inferred`).
    pub(crate) fn latest_prefix(&self, cluster_id: i64, format: Format) -> Result<Option<String>, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT prefix FROM source WHERE cluster_id = ?1 AND format = ?2 AND prefix IS NOT NULL
                 ORDER BY last_read DESC, id DESC LIMIT 1",
                params![cluster_id, format.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.0.sql(e))
    }

    /// The format and log_line_prefix of the cluster's most recently read source.
    pub(crate) fn latest_reading(&self, cluster: &str) -> Result<Option<(String, Option<String>)>, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT s.format, s.prefix FROM source s JOIN cluster c ON c.id = s.cluster_id
                 WHERE c.name = ?1 ORDER BY s.last_read DESC, s.id DESC LIMIT 1",
                [cluster],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.0.sql(e))
    }

    /// What walwatch has read of `cluster`'s files.
    pub(crate) fn growth(&self, cluster: &str) -> Result<LogGrowth, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT MIN(s.first_read), MAX(s.last_read), COALESCE(SUM(s.read_to), 0)
                 FROM source s JOIN cluster c ON c.id = s.cluster_id WHERE c.name = ?1",
                [cluster],
                |r| {
                    Ok(LogGrowth {
                        first_read: opt_from_micros(r.get(0)?),
                        last_read: opt_from_micros(r.get(1)?),
                        bytes_read: r.get(2)?,
                    })
                },
            )
            .map_err(|e| self.0.sql(e))
    }

    /// How far the source named `path` of `cluster_id` was read, if it was.
    pub(crate) fn read_position(&self, cluster_id: i64, path: &str) -> Result<Option<u64>, StoreError> {
        self.0
            .conn
            .prepare_cached("SELECT max(read_to) FROM source WHERE cluster_id = ?1 AND path = ?2")
            .and_then(|mut s| s.query_row(params![cluster_id, path], |r| r.get::<_, Option<i64>>(0)))
            .map(|n| n.map(|n| n as u64))
            .map_err(|e| self.0.sql(e))
    }

    /// The newest source of each (cluster, path): the file as it is now, and
    /// how far walwatch read it (`status` reads the same rows).
    pub(crate) fn newest_per_path(&self) -> Result<Vec<(String, String, u64)>, StoreError> {
        let sql = "SELECT c.name, s.path, s.read_to FROM source s JOIN cluster c ON c.id = s.cluster_id
                   WHERE s.id IN (SELECT max(id) FROM source GROUP BY cluster_id, path)
                   ORDER BY c.name, s.path";
        let mut stmt = self.0.conn.prepare(sql).map_err(|e| self.0.sql(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?.max(0) as u64)))
            .map_err(|e| self.0.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.0.sql(e))
    }

    /// The paths of the cluster's log sources as they were read, the most
    /// recently read first (where the data directory may be found).
    pub(crate) fn paths(&self, cluster_id: i64) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .0
            .conn
            .prepare_cached("SELECT path FROM source WHERE cluster_id = ?1 GROUP BY path ORDER BY max(last_read) DESC, max(id) DESC")
            .map_err(|e| self.0.sql(e))?;
        let rows = stmt.query_map([cluster_id], |r| r.get(0)).map_err(|e| self.0.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.0.sql(e))
    }

    /// The cluster's sources with lines that look like events but did not
    /// fit their format or prefix: (path, how many).
    pub(crate) fn unmatched(&self, cluster: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self
            .0
            .conn
            .prepare(
                "SELECT s.path, s.unmatched FROM source s JOIN cluster c ON c.id = s.cluster_id
                 WHERE c.name = ?1 AND s.unmatched > 0 ORDER BY s.path",
            )
            .map_err(|e| self.0.sql(e))?;
        let rows =
            stmt.query_map([cluster], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))).map_err(|e| self.0.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.0.sql(e))
    }

    /// Lines that looked like events but did not fit their file's format or
    /// prefix (see migrations/0008_unmatched.sql), over the filter's
    /// clusters; such a line has no time, so the filter's times do not apply.
    pub(crate) fn unmatched_lines(&self, filter: &Filter) -> Result<i64, StoreError> {
        self.sum(filter, "unmatched")
    }

    /// A client's lines inside failed logins' prefixes, refused (see
    /// migrations/0010_rejected_lines.sql), over the filter's clusters; no
    /// time either.
    pub(crate) fn rejected_lines(&self, filter: &Filter) -> Result<i64, StoreError> {
        self.sum(filter, "rejected_lines")
    }

    /// A count kept per source (lines without a time), over the filter's clusters.
    fn sum(&self, filter: &Filter, column: &str) -> Result<i64, StoreError> {
        self.0
            .conn
            .query_row(
                &format!(
                    "SELECT COALESCE(SUM(s.{column}), 0) FROM source s JOIN cluster c ON c.id = s.cluster_id
                     WHERE ?1 IS NULL OR c.name = ?1"
                ),
                [filter.cluster.as_deref()],
                |r| r.get(0),
            )
            .map_err(|e| self.0.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Sources<S> {
    /// The source whose content `head` is (see [`Sources::find`]),
    /// created from `spec` when there is none; true when it was created.
    ///
    /// Lookup and insert are one step under the write lock (BEGIN IMMEDIATE
    /// before the lookup): of two processes meeting a new file at once, the
    /// second finds the row the first created instead of adding its own,
    /// which would store every event twice. The recorded fingerprint grows
    /// here with the file, up to [`FINGERPRINT_BYTES`].
    pub(crate) fn find_or_create(
        &mut self,
        cluster_id: i64,
        head: &[u8],
        spec: &SourceSpec<'_>,
    ) -> Result<(SourceRow, bool), StoreError> {
        let head = &head[..head.len().min(FINGERPRINT_BYTES)];
        // Known and recorded as far as `head` goes: no write lock needed.
        if let Some(row) = self.find(cluster_id, head)? {
            if row.fingerprint.len >= head.len() {
                return Ok((row, false));
            }
        }
        let store = &mut *self.0;
        let path = store.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = store.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
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
    pub(crate) fn rewind(&mut self, source: &mut SourceRow) -> Result<(), StoreError> {
        self.0
            .conn
            .prepare_cached("UPDATE source SET read_to = 0, line = 1 WHERE id = ?1 AND read_to = ?2")
            .and_then(|mut stmt| stmt.execute(params![source.id, source.read_to as i64]))
            .map_err(|e| self.0.sql(e))?;
        (source.read_to, source.line) = (0, 1);
        Ok(())
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
        self.0
            .conn
            .execute(
                "UPDATE source SET unmatched = unmatched + ?2, rejected_lines = rejected_lines + ?3 WHERE id = ?1",
                params![source.id, unmatched as i64, inside_names as i64],
            )
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    /// Forgets the sources `ids` whole, in one transaction, and counts it
    /// for their clusters: a running daemon then reads their files again
    /// (see migrations/0018_forgets.sql).
    pub(crate) fn forget(&mut self, ids: &[i64]) -> Result<Forgotten, StoreError> {
        self.forget_counted(ids, true)
    }

    /// Takes back what one read of `source` stored from `from` on, as if
    /// that read never happened; a read from the start forgets the source
    /// itself (and the prefix it was read with).
    pub(crate) fn take_back(&mut self, source: &SourceRow, from: Pos) -> Result<Forgotten, StoreError> {
        if from.offset == 0 {
            return self.forget_counted(&[source.id], false);
        }
        let store = &mut *self.0;
        let path = store.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = store.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let (events, checkpoints) = forget_events(&tx, source.id, from.offset).map_err(sql)?;
        tx.execute(
            "UPDATE source SET read_to = ?2, line = ?3 WHERE id = ?1 AND read_to > ?2",
            params![source.id, from.offset as i64, from.line as i64],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(Forgotten { sources: 0, events, checkpoints })
    }

    /// `counted`: the daemon is told (not for a read taking back its own
    /// misfit, which the reader handles: telling it would have it read the
    /// misfit again at once, and again).
    fn forget_counted(&mut self, ids: &[i64], counted: bool) -> Result<Forgotten, StoreError> {
        let store = &mut *self.0;
        let path = store.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = store.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
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
}

/// Deletes the events and checkpoint lines of `source` at `from` or later;
/// returns how many (events and lines together) and how many whole
/// checkpoint rows went. The lines first: a row that keeps its other half
/// asks the events whether the server restarted since.
fn forget_events(tx: &Transaction<'_>, source: i64, from: u64) -> rusqlite::Result<(u64, u64)> {
    let (lines, checkpoints) = checkpoints::release_lines_from(tx, source, from)?;
    let events = events::delete_from(tx, source, from)?;
    Ok((events + lines, checkpoints))
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
        id: r.get("id")?,
        cluster_id: r.get("cluster_id")?,
        fingerprint: Fingerprint { len: r.get::<_, i64>("fp_len")? as usize, hash: r.get::<_, i64>("fp_hash")? as u64 },
        read_to: r.get::<_, i64>("read_to")? as u64,
        line: r.get::<_, i64>("line")? as u64,
        prefix: r.get("prefix")?,
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

/// Moves `source` on to `reached` in the transaction of the batch that
/// read up to there (see `Events::commit_batch`).
///
/// The recorded position only moves forward: another process reading the
/// same source (the daemon and an import) may have got further, and going
/// back would make status show a lag that is not there, or read it all
/// again after a restart. (A file rewritten in place is taken back
/// explicitly: [`Sources::rewind`].)
pub(super) fn move_on(
    tx: &Transaction<'_>,
    source: &SourceRow,
    spec: &SourceSpec<'_>,
    reached: Pos,
) -> rusqlite::Result<()> {
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
    .map(drop)
}

#[cfg(test)]
mod tests;
