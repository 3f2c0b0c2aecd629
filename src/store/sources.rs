//! Sources (table source): the files and streams read, known by the
//! fingerprint of their first bytes whatever their name becomes, and how
//! far each was read; and the cluster they belong to.

use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::columns::{opt_from_micros, to_micros};
use super::{Store, StoreError};
use crate::frame::Format;
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

impl Store {
    /// The uid the cluster's server runs as, once a log that names its
    /// senders' uids (journald's `_UID`) has shown it.
    pub(crate) fn server_uid(&self, cluster_id: i64) -> Result<Option<u32>, StoreError> {
        self.conn
            .query_row("SELECT server_uid FROM cluster WHERE id = ?1", [cluster_id], |r| r.get::<_, Option<u32>>(0))
            .map_err(|e| self.sql(e))
    }

    /// Records `uid` as the server's unless one is known already; returns
    /// the one the store keeps (another reader of the cluster's logs may
    /// have learnt it first).
    pub(crate) fn learn_server_uid(&mut self, cluster_id: i64, uid: u32) -> Result<u32, StoreError> {
        self.conn
            .execute(
                "UPDATE cluster SET server_uid = ?2 WHERE id = ?1 AND server_uid IS NULL",
                params![cluster_id, uid],
            )
            .map_err(|e| self.sql(e))?;
        Ok(self.server_uid(cluster_id)?.unwrap_or(uid))
    }

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

/// What walwatch has read of a cluster's log files (table source), in wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LogGrowth {
    /// When walwatch first read any of the cluster's files.
    pub first_read: Option<Timestamp>,
    /// When walwatch last read new bytes from them (a commit happens only when the offset moves).
    pub last_read: Option<Timestamp>,
    /// Bytes read so far, all files together.
    pub bytes_read: i64,
}

impl Store {
    /// What walwatch has read of `cluster`'s files.
    pub(crate) fn log_growth(&self, cluster: &str) -> Result<LogGrowth, StoreError> {
        self.conn
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
            .map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Pos;

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
}
