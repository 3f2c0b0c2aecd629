//! Writing: sources, events, and the checkpoint rows that pair them.

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension, Transaction};
use serde_json::json;

use super::{Store, StoreError};
use crate::event::{trigger_of, CompleteStats, Event, EventBody, PointKind};
use crate::frame::Pos;
use crate::source::{FileMeta, Fingerprint};

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

/// What is known about a source when it is first seen.
pub struct SourceSpec<'a> {
    pub path: &'a str,
    pub meta: Option<FileMeta>,
    pub fingerprint: Fingerprint,
    pub format: &'a str,
    pub prefix: Option<&'a str>,
}

pub(crate) fn micros(t: Timestamp) -> i64 {
    t.as_microsecond()
}

impl Store {
    /// The id of cluster `name`, created on first use.
    pub fn cluster_id(&mut self, name: &str) -> Result<i64, StoreError> {
        self.conn
            .execute("INSERT OR IGNORE INTO cluster(name) VALUES (?1)", [name])
            .and_then(|_| self.conn.query_row("SELECT id FROM cluster WHERE name = ?1", [name], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    /// The source of `cluster_id` whose recorded fingerprint is a prefix of
    /// `head` (the same content, possibly grown since), if any.
    pub fn find_source(&self, cluster_id: i64, head: &[u8]) -> Result<Option<SourceRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, fp_len, fp_hash, read_to, line, prefix FROM source WHERE cluster_id = ?1 ORDER BY id DESC",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([cluster_id], |r| {
                let fp = Fingerprint { len: r.get::<_, i64>(1)? as usize, hash: r.get::<_, i64>(2)? as u64 };
                Ok(SourceRow {
                    id: r.get(0)?,
                    cluster_id,
                    fingerprint: fp,
                    read_to: r.get::<_, i64>(3)? as u64,
                    line: r.get::<_, i64>(4)? as u64,
                    prefix: r.get(5)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        for row in rows {
            let row = row.map_err(|e| self.sql(e))?;
            if row.fingerprint.len > 0 && row.fingerprint.matches(head) {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    pub fn create_source(&mut self, cluster_id: i64, spec: &SourceSpec<'_>) -> Result<SourceRow, StoreError> {
        let now = micros(Timestamp::now());
        self.conn
            .execute(
                "INSERT INTO source(cluster_id, path, dev, ino, fp_len, fp_hash, format, prefix, size, first_read, last_read)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
                params![
                    cluster_id,
                    spec.path,
                    spec.meta.map(|m| m.dev as i64),
                    spec.meta.map(|m| m.ino as i64),
                    spec.fingerprint.len as i64,
                    spec.fingerprint.hash as i64,
                    spec.format,
                    spec.prefix,
                    spec.meta.map(|m| m.size as i64),
                    now
                ],
            )
            .map_err(|e| self.sql(e))?;
        Ok(SourceRow {
            id: self.conn.last_insert_rowid(),
            cluster_id,
            fingerprint: spec.fingerprint,
            read_to: 0,
            line: 1,
            prefix: spec.prefix.map(String::from),
        })
    }

    /// Stores `events` and moves `source` to `reached`, atomically.
    /// Returns how many events were new.
    pub fn commit_batch(
        &mut self,
        source: &mut SourceRow,
        spec: &SourceSpec<'_>,
        events: &[Event],
        reached: Pos,
    ) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(sql)?;
        let mut added = 0;
        for event in events {
            added += insert_event(&tx, source, event).map_err(sql)?;
        }
        tx.prepare_cached(
            "UPDATE source SET read_to = ?2, line = ?3, fp_len = ?4, fp_hash = ?5, path = ?6, size = ?7, last_read = ?8,
                 prefix = COALESCE(?9, prefix)
             WHERE id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.execute(
            params![
                source.id,
                reached.offset as i64,
                reached.line as i64,
                spec.fingerprint.len as i64,
                spec.fingerprint.hash as i64,
                spec.path,
                spec.meta.map(|m| m.size as i64),
                micros(Timestamp::now()),
                spec.prefix
            ])
        })
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        source.read_to = reached.offset;
        source.line = reached.line;
        source.fingerprint = spec.fingerprint;
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
            micros(event.at),
            event.pid,
            event.body.kind_name(),
            event.nth,
            data,
            ahead_of_clock(event.at)
        ])?;
    if inserted == 1 {
        let event_id = tx.last_insert_rowid();
        apply(tx, source.cluster_id, event_id, event)?;
    }
    Ok(inserted)
}

/// How far (µs) `at` is ahead of this machine's clock now, while its event
/// is stored (read moments ago); None when it is not ahead, as for every
/// line of a server whose clock agrees (see migrations/0007_event_ahead.sql).
fn ahead_of_clock(at: Timestamp) -> Option<i64> {
    let ahead = micros(at).saturating_sub(micros(Timestamp::now()));
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
fn apply(tx: &Transaction<'_>, cluster_id: i64, event_id: i64, event: &Event) -> rusqlite::Result<()> {
    let at = micros(event.at);
    match &event.body {
        EventBody::PointStart { kind, flags } => pair_start(tx, cluster_id, event_id, event.pid, at, *kind, flags),
        EventBody::PointComplete { kind, stats } => {
            pair_complete(tx, cluster_id, event_id, event.pid, at, *kind, stats)
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
    cluster_id: i64,
    event_id: i64,
    pid: Option<u32>,
    at: i64,
    kind: PointKind,
    flags: &[String],
) -> rusqlite::Result<()> {
    // A complete line stored earlier (files imported out of order) that this start opens.
    let orphan: Option<(i64, i64)> = tx
        .query_row(
            "SELECT id, completed_at FROM checkpoint
             WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3 AND pairable = 1
               AND started_at IS NULL AND completed_at >= ?4
             ORDER BY completed_at, id LIMIT 1",
            params![cluster_id, kind.as_str(), pid, at],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let flags_text = flags.join(" ");
    let trigger = trigger_of(flags);
    if let Some((id, completed_at)) = orphan {
        let between: i64 = tx
            .prepare_cached(
                "SELECT count(*) FROM checkpoint WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3
               AND started_at > ?4 AND started_at <= ?5",
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

fn pair_complete(
    tx: &Transaction<'_>,
    cluster_id: i64,
    event_id: i64,
    pid: Option<u32>,
    at: i64,
    kind: PointKind,
    stats: &CompleteStats,
) -> rusqlite::Result<()> {
    // The latest start of this process before the complete line; it pairs
    // only if it is still open (not completed, no server restart since).
    let latest: Option<(i64, bool)> = tx
        .query_row(
            "SELECT id, pairable FROM checkpoint
             WHERE cluster_id = ?1 AND kind = ?2 AND pid IS ?3 AND started_at <= ?4
             ORDER BY started_at DESC, id DESC LIMIT 1",
            params![cluster_id, kind.as_str(), pid, at],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let id = match latest {
        Some((id, true)) => id,
        _ => {
            tx.prepare_cached("INSERT INTO checkpoint(cluster_id, kind, pid) VALUES (?1, ?2, ?3)")?
                .execute(params![cluster_id, kind.as_str(), pid])?;
            tx.last_insert_rowid()
        }
    };
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
