//! What the daemon tells `walwatch status` through the store: a heartbeat,
//! the problems it met, and how far each source has been read.

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// The daemon's last heartbeat. A clean stop leaves pid 0 and the time of
/// the stop ([`Store::mark_stopped`]), so that `status` tells a daemon
/// stopped on purpose from one that never ran on this store (no row).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Heartbeat {
    pub pid: u32,
    pub started_at: Timestamp,
    pub at: Timestamp,
    pub interval_ms: i64,
}

impl Heartbeat {
    /// The daemon stopped cleanly (SIGTERM, `systemctl stop`).
    pub fn stopped(&self) -> bool {
        self.pid == 0
    }

    /// Alive when the last heartbeat is younger than three intervals (plus slack for a slow commit).
    pub fn alive(&self, now: Timestamp) -> bool {
        if self.stopped() {
            return false;
        }
        let age = now.as_millisecond() - self.at.as_millisecond();
        age <= 3 * self.interval_ms.max(1000) + 5000
    }
}

/// One source of a cluster, as far as it was read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SourceStatus {
    pub path: String,
    pub read_to: u64,
    pub size_at_read: Option<u64>,
    pub last_read: Timestamp,
}

/// Per-cluster status facts from the store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterStatus {
    pub name: String,
    pub sources: Vec<SourceStatus>,
    pub last_event: Option<Timestamp>,
    pub last_checkpoint_event: Option<Timestamp>,
    pub last_commit: Option<Timestamp>,
    pub problems: Vec<(String, String)>,
}

/// Cancels the statement a store's connection is running, from another
/// thread (`Store::interrupt_handle`).
pub struct Interrupt(rusqlite::InterruptHandle);

impl Interrupt {
    pub fn interrupt(&self) {
        self.0.interrupt();
    }
}

impl Store {
    pub fn heartbeat(&mut self, pid: u32, started_at: Timestamp, interval_ms: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO daemon(id, pid, started_at, heartbeat_at, interval_ms) VALUES (1, ?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET pid = ?1, started_at = ?2, heartbeat_at = ?3, interval_ms = ?4",
            )
            .and_then(|mut s| s.execute(params![pid, to_micros(started_at), to_micros(Timestamp::now()), interval_ms]))
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Marks the daemon stopped (a clean exit), so status does not wait for
    /// the heartbeat to age: pid 0, and the time of the stop as the last beat.
    pub(crate) fn mark_stopped(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE daemon SET pid = 0, heartbeat_at = ?1", [to_micros(Timestamp::now())])
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Skips SQLite's checkpoint when the connection closes. Everything is
    /// committed in the WAL already (the next open replays it); the close-time
    /// checkpoint fsyncs the database and can take seconds on a busy disk,
    /// while systemd expects a prompt exit after SIGTERM.
    pub(crate) fn skip_checkpoint_on_close(&self) -> Result<(), StoreError> {
        use rusqlite::config::DbConfig;
        self.conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).map(drop).map_err(|e| self.sql(e))
    }

    /// Cancels this connection's running statement from another thread
    /// (SQLITE_INTERRUPT): the daemon's stop does not wait for an alert pass.
    pub(crate) fn interrupt_handle(&self) -> Interrupt {
        Interrupt(self.conn.get_interrupt_handle())
    }

    pub(crate) fn last_heartbeat(&self) -> Result<Option<Heartbeat>, StoreError> {
        self.conn
            .query_row("SELECT pid, started_at, heartbeat_at, interval_ms FROM daemon WHERE id = 1", [], |r| {
                Ok(Heartbeat {
                    pid: r.get("pid")?,
                    started_at: from_micros(r.get("started_at")?),
                    at: from_micros(r.get("heartbeat_at")?),
                    interval_ms: r.get("interval_ms")?,
                })
            })
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Records (or, with `None`, clears) a problem with a followed path.
    pub(crate) fn set_problem(&mut self, cluster_id: i64, path: &str, problem: Option<&str>) -> Result<(), StoreError> {
        let result = match problem {
            Some(p) => self.conn.execute(
                "INSERT INTO file_problem(cluster_id, path, problem, seen_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(cluster_id, path) DO UPDATE SET problem = ?3, seen_at = ?4",
                params![cluster_id, path, p, to_micros(Timestamp::now())],
            ),
            None => self
                .conn
                .execute("DELETE FROM file_problem WHERE cluster_id = ?1 AND path = ?2", params![cluster_id, path]),
        };
        result.map(drop).map_err(|e| self.sql(e))
    }

    /// Forgets the problems recorded for a cluster's paths (a new follower
    /// finds the ones that remain in its first round).
    pub(crate) fn clear_problems(&mut self, cluster_id: i64) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM file_problem WHERE cluster_id = ?1", [cluster_id])
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// The problems the daemon recorded for `cluster`'s paths: (path, problem, when last seen).
    pub(crate) fn file_problems(&self, cluster: &str) -> Result<Vec<(String, String, Timestamp)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT p.path, p.problem, p.seen_at FROM file_problem p JOIN cluster c ON c.id = p.cluster_id
                 WHERE c.name = ?1 ORDER BY p.path",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([cluster], |r| Ok((r.get(0)?, r.get(1)?, from_micros(r.get(2)?))))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Whether a daemon followed cluster `cluster_id` before: it recorded
    /// the settings it followed it with ([`Store::follow_setting`]).
    pub(crate) fn followed_before(&self, cluster_id: i64) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT follow_format IS NOT NULL FROM cluster WHERE id = ?1", [cluster_id], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// Records the `format` and `prefix` settings the daemon follows
    /// cluster `cluster_id` with, and returns the earlier ones when a daemon
    /// followed it with others before (its files were read the wrong way).
    pub(crate) fn follow_setting(
        &mut self,
        cluster_id: i64,
        format: &str,
        prefix: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let before: (Option<String>, Option<String>) = self
            .conn
            .query_row("SELECT follow_format, follow_prefix FROM cluster WHERE id = ?1", [cluster_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(|e| self.sql(e))?;
        self.conn
            .execute(
                "UPDATE cluster SET follow_format = ?2, follow_prefix = ?3 WHERE id = ?1",
                params![cluster_id, format, prefix],
            )
            .map_err(|e| self.sql(e))?;
        Ok(match before {
            (Some(f), Some(p)) if (f.as_str(), p.as_str()) != (format, prefix) => Some((f, p)),
            _ => None,
        })
    }

    /// Status facts of every cluster (or one).
    pub(crate) fn cluster_status(&self, only: Option<&str>) -> Result<Vec<ClusterStatus>, StoreError> {
        let mut out = Vec::new();
        for name in self.clusters()? {
            if only.is_some_and(|o| o != name) {
                continue;
            }
            out.push(self.one_cluster_status(&name).map_err(|e| self.sql(e))?);
        }
        Ok(out)
    }

    fn one_cluster_status(&self, name: &str) -> rusqlite::Result<ClusterStatus> {
        let id: i64 = self.conn.query_row("SELECT id FROM cluster WHERE name = ?1", [name], |r| r.get(0))?;
        let mut stmt = self.conn.prepare(
            "SELECT path, read_to, size, last_read FROM source WHERE cluster_id = ?1
             AND id IN (SELECT max(id) FROM source WHERE cluster_id = ?1 GROUP BY path) ORDER BY path",
        )?;
        let sources = stmt
            .query_map([id], |r| {
                Ok(SourceStatus {
                    path: r.get("path")?,
                    read_to: r.get::<_, i64>("read_to")? as u64,
                    size_at_read: r.get::<_, Option<i64>>("size")?.map(|s| s as u64),
                    last_read: from_micros(r.get("last_read")?),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let time = |sql: &str| -> rusqlite::Result<Option<Timestamp>> {
            self.conn.query_row(sql, [id], |r| r.get::<_, Option<i64>>(0)).map(|v| v.map(from_micros))
        };
        // Each kind's newest event is one end of an event_cluster_kind_at
        // range; `kind <> …` or `kind IN (…)` under max() would read every
        // event of the cluster instead (a year of a busy server: 0.1 s).
        let last_event = time(&format!(
            "WITH RECURSIVE kinds(kind) AS (
                 SELECT (SELECT min(kind) FROM event WHERE cluster_id = ?1)
                 UNION ALL
                 SELECT (SELECT min(kind) FROM event WHERE cluster_id = ?1 AND kind > kinds.kind)
                 FROM kinds WHERE kind IS NOT NULL)
             SELECT max({newest}) FROM kinds WHERE kind IS NOT NULL AND kind <> 'rejected'",
            newest = "(SELECT max(at) FROM event WHERE cluster_id = ?1 AND kind = kinds.kind)"
        ))?;
        let last_checkpoint_event = time(
            "SELECT max(newest) FROM (SELECT (SELECT max(at) FROM event WHERE cluster_id = ?1 AND kind = k.kind) AS newest
             FROM (SELECT 'checkpoint_start' AS kind UNION ALL SELECT 'checkpoint_complete'
                   UNION ALL SELECT 'restartpoint_start' UNION ALL SELECT 'restartpoint_complete') k)",
        )?;
        let last_commit = time("SELECT max(last_read) FROM source WHERE cluster_id = ?1")?;
        let mut stmt =
            self.conn.prepare("SELECT path, problem FROM file_problem WHERE cluster_id = ?1 ORDER BY path")?;
        let problems = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()?;
        Ok(ClusterStatus { name: name.into(), sources, last_event, last_checkpoint_event, last_commit, problems })
    }
}

impl Store {
    /// The cluster's sources with lines that look like events but did not
    /// fit their format or prefix: (path, how many).
    pub(crate) fn unmatched_sources(&self, cluster: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.path, s.unmatched FROM source s JOIN cluster c ON c.id = s.cluster_id
                 WHERE c.name = ?1 AND s.unmatched > 0 ORDER BY s.path",
            )
            .map_err(|e| self.sql(e))?;
        let rows =
            stmt.query_map([cluster], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}

/// Lines refused as forged (see `classify::trust`), for `status`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused {
    pub count: i64,
    /// Where the last of them is: file and line (0 when only lines inside
    /// failed logins' prefixes were refused: they are counted per file).
    pub path: String,
    pub line: u64,
    pub reason: String,
}

impl Store {
    /// The format and log_line_prefix of the cluster's most recently read source.
    pub fn reading(&self, cluster: &str) -> Result<Option<(String, Option<String>)>, StoreError> {
        self.conn
            .query_row(
                "SELECT s.format, s.prefix FROM source s JOIN cluster c ON c.id = s.cluster_id
                 WHERE c.name = ?1 ORDER BY s.last_read DESC, s.id DESC LIMIT 1",
                [cluster],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Records refused as forged in the files read `since` or later, and
    /// the lines inside failed logins' prefixes (counted per source, see
    /// migrations/0010_rejected_lines.sql). (Not by their log time: a
    /// forged line carries the time its author chose.)
    pub(crate) fn refused_since(&self, cluster: &str, since: Timestamp) -> Result<Option<Refused>, StoreError> {
        let in_names = self
            .conn
            .query_row(
                "SELECT COALESCE(SUM(s.rejected_lines), 0), MAX(s.path) FILTER (WHERE s.rejected_lines > 0)
                 FROM source s JOIN cluster c ON c.id = s.cluster_id WHERE c.name = ?1 AND s.last_read >= ?2",
                params![cluster, to_micros(since)],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)),
            )
            .map_err(|e| self.sql(e))?;
        let records = self.refused_records_since(cluster, since)?;
        Ok(match (records, in_names) {
            (Some(r), (n, _)) => Some(Refused { count: r.count + n, ..r }),
            (None, (n, Some(path))) if n > 0 => {
                Some(Refused { count: n, path, line: 0, reason: crate::frame::formats::stderr::SPLICED.to_string() })
            }
            (None, _) => None,
        })
    }

    fn refused_records_since(&self, cluster: &str, since: Timestamp) -> Result<Option<Refused>, StoreError> {
        self.conn
            .query_row(
                "SELECT count(*) OVER () AS count, s.path, e.line, json_extract(e.data, '$.reason') AS reason
                 FROM event e JOIN source s ON s.id = e.source_id JOIN cluster c ON c.id = e.cluster_id
                 WHERE c.name = ?1 AND e.kind = 'rejected' AND s.last_read >= ?2
                 ORDER BY s.last_read DESC, s.id DESC, e.offset DESC LIMIT 1",
                params![cluster, to_micros(since)],
                |r| {
                    Ok(Refused {
                        count: r.get("count")?,
                        path: r.get("path")?,
                        line: r.get::<_, i64>("line")? as u64,
                        reason: r.get::<_, Option<String>>("reason")?.unwrap_or_default(),
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
    }
}
