//! Clusters (table cluster): the names everything else is stored under,
//! and what is known of each as a whole: its server's uid, the settings the
//! daemon follows it with, how often its sources were forgotten.

use std::ops::{Deref, DerefMut};

use rusqlite::{params, OptionalExtension};

use super::{Store, StoreError};

/// The clusters' handle: [`Store::clusters`], [`Store::clusters_mut`].
pub struct Clusters<S>(pub(super) S);

impl<S: Deref<Target = Store>> Clusters<S> {
    /// The id of cluster `name` if the store knows it (never creates one).
    pub(crate) fn find(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.0
            .conn
            .query_row("SELECT id FROM cluster WHERE name = ?1", [name], |r| r.get(0))
            .optional()
            .map_err(|e| self.0.sql(e))
    }

    /// Names of all clusters in the store.
    pub(crate) fn names(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.0.conn.prepare("SELECT name FROM cluster ORDER BY name").map_err(|e| self.0.sql(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.0.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.0.sql(e))
    }

    /// The uid the cluster's server runs as, once a log that names its
    /// senders' uids (journald's `_UID`) has shown it.
    pub(crate) fn server_uid(&self, cluster_id: i64) -> Result<Option<u32>, StoreError> {
        self.0
            .conn
            .query_row("SELECT server_uid FROM cluster WHERE id = ?1", [cluster_id], |r| r.get::<_, Option<u32>>(0))
            .map_err(|e| self.0.sql(e))
    }

    /// Whether a daemon followed cluster `cluster_id` before: it recorded
    /// the settings it followed it with ([`Clusters::record_follow_setting`]).
    pub(crate) fn followed_before(&self, cluster_id: i64) -> Result<bool, StoreError> {
        self.0
            .conn
            .query_row("SELECT follow_format IS NOT NULL FROM cluster WHERE id = ?1", [cluster_id], |r| r.get(0))
            .map_err(|e| self.0.sql(e))
    }

    /// How many times sources of `cluster_id` were forgotten.
    pub(crate) fn forgets(&self, cluster_id: i64) -> Result<u64, StoreError> {
        self.0
            .conn
            .query_row("SELECT forgets FROM cluster WHERE id = ?1", [cluster_id], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.0.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Clusters<S> {
    /// The id of cluster `name`, created on first use.
    pub(crate) fn find_or_create(&mut self, name: &str) -> Result<i64, StoreError> {
        let store = &*self.0;
        store
            .conn
            .execute("INSERT OR IGNORE INTO cluster(name) VALUES (?1)", [name])
            .and_then(|_| store.conn.query_row("SELECT id FROM cluster WHERE name = ?1", [name], |r| r.get(0)))
            .map_err(|e| store.sql(e))
    }

    /// Records `uid` as the server's unless one is known already; returns
    /// the one the store keeps (another reader of the cluster's logs may
    /// have learnt it first).
    pub(crate) fn learn_server_uid(&mut self, cluster_id: i64, uid: u32) -> Result<u32, StoreError> {
        self.0
            .conn
            .execute(
                "UPDATE cluster SET server_uid = ?2 WHERE id = ?1 AND server_uid IS NULL",
                params![cluster_id, uid],
            )
            .map_err(|e| self.0.sql(e))?;
        Ok(self.server_uid(cluster_id)?.unwrap_or(uid))
    }

    /// Records the `format` and `prefix` settings the daemon follows
    /// cluster `cluster_id` with, and returns the earlier ones when a daemon
    /// followed it with others before (its files were read the wrong way).
    pub(crate) fn record_follow_setting(
        &mut self,
        cluster_id: i64,
        format: &str,
        prefix: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let before: (Option<String>, Option<String>) = self
            .0
            .conn
            .query_row("SELECT follow_format, follow_prefix FROM cluster WHERE id = ?1", [cluster_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(|e| self.0.sql(e))?;
        self.0
            .conn
            .execute(
                "UPDATE cluster SET follow_format = ?2, follow_prefix = ?3 WHERE id = ?1",
                params![cluster_id, format, prefix],
            )
            .map_err(|e| self.0.sql(e))?;
        Ok(match before {
            (Some(f), Some(p)) if (f.as_str(), p.as_str()) != (format, prefix) => Some((f, p)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests;
