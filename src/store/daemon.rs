//! What the daemon tells `walwatch status` through the store: a heartbeat
//! (table daemon), the problems it met with the paths it follows (table
//! file_problem), and each cluster's status facts: how far each source has
//! been read, its newest events, its problems.

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::checkpoints::LINE_ENDS;
use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// The daemon's handle: [`Store::daemon`], [`Store::daemon_mut`].
pub struct Daemon<S>(pub(super) S);

/// The daemon's last heartbeat. A clean stop leaves pid 0 and the time of
/// the stop ([`Daemon::mark_stopped`]), so that `status` tells a daemon
/// stopped on purpose from one that never ran on this store (no row).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Heartbeat {
    pub(crate) pid: u32,
    pub(crate) started_at: Timestamp,
    pub(crate) at: Timestamp,
    pub(crate) interval_ms: i64,
}

impl Heartbeat {
    /// The daemon stopped cleanly (SIGTERM, `systemctl stop`).
    pub(crate) fn stopped(&self) -> bool {
        self.pid == 0
    }

    /// Alive when the last heartbeat is younger than three intervals (plus slack for a slow commit).
    pub(crate) fn alive(&self, now: Timestamp) -> bool {
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
    pub(crate) path: String,
    pub(crate) read_to: u64,
    pub(crate) size_at_read: Option<u64>,
    pub(crate) last_read: Timestamp,
}

/// Per-cluster status facts from the store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterStatus {
    pub(crate) name: String,
    pub(crate) sources: Vec<SourceStatus>,
    pub(crate) last_event: Option<Timestamp>,
    pub(crate) last_checkpoint_event: Option<Timestamp>,
    pub(crate) last_commit: Option<Timestamp>,
    pub(crate) problems: Vec<(String, String)>,
}

impl<S: Deref<Target = Store>> Daemon<S> {
    pub(crate) fn last_heartbeat(&self) -> Result<Option<Heartbeat>, StoreError> {
        self.0
            .conn
            .query_row("SELECT pid, started_at, heartbeat_at, interval_ms FROM daemon WHERE id = 1", [], |r| {
                Ok(Heartbeat {
                    pid: r.get("pid")?,
                    started_at: from_micros(r.get("started_at")?),
                    at: from_micros(r.get("heartbeat_at")?),
                    interval_ms: r.get("interval_ms")?,
                })
            })
            .optional()
            .map_err(|e| self.0.sql(e))
    }

    /// The problems the daemon recorded for `cluster`'s paths: (path, problem, when last seen).
    pub(crate) fn problems(&self, cluster: &str) -> Result<Vec<(String, String, Timestamp)>, StoreError> {
        let mut stmt = self
            .0
            .conn
            .prepare(
                "SELECT p.path, p.problem, p.seen_at FROM file_problem p JOIN cluster c ON c.id = p.cluster_id
                 WHERE c.name = ?1 ORDER BY p.path",
            )
            .map_err(|e| self.0.sql(e))?;
        let rows = stmt
            .query_map([cluster], |r| Ok((r.get(0)?, r.get(1)?, from_micros(r.get(2)?))))
            .map_err(|e| self.0.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.0.sql(e))
    }

    /// Status facts of every cluster (or one).
    pub(crate) fn cluster_status(&self, only: Option<&str>) -> Result<Vec<ClusterStatus>, StoreError> {
        let mut out = Vec::new();
        for name in self.0.clusters().names()? {
            if only.is_some_and(|o| o != name) {
                continue;
            }
            out.push(self.one_cluster_status(&name).map_err(|e| self.0.sql(e))?);
        }
        Ok(out)
    }

    fn one_cluster_status(&self, name: &str) -> rusqlite::Result<ClusterStatus> {
        // Cached statements: `status` asks them of every cluster of a fleet.
        let id: i64 =
            self.0.conn.prepare_cached("SELECT id FROM cluster WHERE name = ?1")?.query_row([name], |r| r.get(0))?;
        let mut stmt = self.0.conn.prepare_cached(
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
            self.0.conn.prepare_cached(sql)?.query_row([id], |r| r.get::<_, Option<i64>>(0)).map(|v| v.map(from_micros))
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
        // The newest checkpoint line, dated ahead or not: the query of
        // `Checkpoints::line_ends` over all time with no tolerance.
        let last_checkpoint_event = self
            .0
            .conn
            .prepare_cached(&LINE_ENDS[0])?
            .query_row(params![name, i64::MIN, i64::MAX, i64::MAX], |r| r.get::<_, Option<i64>>(1))?
            .map(from_micros);
        let last_event = last_event.max(last_checkpoint_event);
        let last_commit = time("SELECT max(last_read) FROM source WHERE cluster_id = ?1")?;
        let mut stmt =
            self.0.conn.prepare_cached("SELECT path, problem FROM file_problem WHERE cluster_id = ?1 ORDER BY path")?;
        let problems = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()?;
        Ok(ClusterStatus { name: name.into(), sources, last_event, last_checkpoint_event, last_commit, problems })
    }
}

impl<S: DerefMut<Target = Store>> Daemon<S> {
    /// Records the daemon's heartbeat: it runs as `pid` since `started_at`
    /// and beats every `interval_ms`.
    pub(crate) fn heartbeat(&mut self, pid: u32, started_at: Timestamp, interval_ms: i64) -> Result<(), StoreError> {
        self.0
            .conn
            .prepare_cached(
                "INSERT INTO daemon(id, pid, started_at, heartbeat_at, interval_ms) VALUES (1, ?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET pid = ?1, started_at = ?2, heartbeat_at = ?3, interval_ms = ?4",
            )
            .and_then(|mut s| s.execute(params![pid, to_micros(started_at), to_micros(Timestamp::now()), interval_ms]))
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    /// Marks the daemon stopped (a clean exit), so status does not wait for
    /// the heartbeat to age: pid 0, and the time of the stop as the last beat.
    pub(crate) fn mark_stopped(&mut self) -> Result<(), StoreError> {
        self.0
            .conn
            .execute("UPDATE daemon SET pid = 0, heartbeat_at = ?1", [to_micros(Timestamp::now())])
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    /// Records (or, with `None`, clears) a problem with a followed path.
    pub(crate) fn set_problem(&mut self, cluster_id: i64, path: &str, problem: Option<&str>) -> Result<(), StoreError> {
        let result = match problem {
            Some(p) => self.0.conn.execute(
                "INSERT INTO file_problem(cluster_id, path, problem, seen_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(cluster_id, path) DO UPDATE SET problem = ?3, seen_at = ?4",
                params![cluster_id, path, p, to_micros(Timestamp::now())],
            ),
            None => self
                .0
                .conn
                .execute("DELETE FROM file_problem WHERE cluster_id = ?1 AND path = ?2", params![cluster_id, path]),
        };
        result.map(drop).map_err(|e| self.0.sql(e))
    }

    /// Forgets the problems recorded for a cluster's paths (a new follower
    /// finds the ones that remain in its first round).
    pub(crate) fn clear_problems(&mut self, cluster_id: i64) -> Result<(), StoreError> {
        self.0
            .conn
            .execute("DELETE FROM file_problem WHERE cluster_id = ?1", [cluster_id])
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }
}
