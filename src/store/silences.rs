//! Silences (table silence): started, listed and ended. A silence ends by
//! its `until` passing: ending one early moves `until` to now, so an ended
//! silence reads like an expired one everywhere. The alert lifecycle reads
//! the running ones in its transaction (`AlertTx::silenced_until`).

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// The silences' handle: [`Store::silences`], [`Store::silences_mut`].
pub struct Silences<S>(pub(super) S);

/// One silence as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SilenceRow {
    pub(crate) id: i64,
    pub(crate) rule: String,
    /// None: every cluster.
    pub(crate) cluster: Option<String>,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) from: Timestamp,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) until: Timestamp,
    /// Still running at the time of the listing.
    pub(crate) active: bool,
}

/// What `walwatch alerts silence` did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SilenceOutcome {
    Silenced { id: i64 },
    UnknownCluster,
}

/// What `walwatch alerts unsilence` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnsilenceOutcome {
    Ended,
    /// It ended (or expired) at this time already.
    AlreadyEnded(Timestamp),
    Unknown,
}

fn silence_row(r: &Row<'_>, now: i64) -> rusqlite::Result<SilenceRow> {
    let until: i64 = r.get("until")?;
    Ok(SilenceRow {
        id: r.get("id")?,
        rule: r.get("rule")?,
        cluster: r.get("name")?,
        from: from_micros(r.get("created_at")?),
        until: from_micros(until),
        active: until > now,
    })
}

impl<S: Deref<Target = Store>> Silences<S> {
    /// Silences running at `now`, or every one when `all`; newest first.
    pub(crate) fn list(&self, all: bool, now: Timestamp) -> Result<Vec<SilenceRow>, StoreError> {
        let store = &*self.0;
        let now = to_micros(now);
        let mut stmt = store
            .conn
            .prepare(
                "SELECT s.id, s.rule, c.name, s.created_at, s.until FROM silence s
                 LEFT JOIN cluster c ON c.id = s.cluster_id
                 WHERE ?1 OR s.until > ?2 ORDER BY s.created_at DESC, s.id DESC",
            )
            .map_err(|e| store.sql(e))?;
        let rows = stmt.query_map(params![all, now], |r| silence_row(r, now)).map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Silences<S> {
    /// Silences `rule` on `cluster` (all clusters when None) until `until`.
    pub(crate) fn start(
        &mut self,
        rule: &str,
        cluster: Option<&str>,
        until: Timestamp,
        now: Timestamp,
    ) -> Result<SilenceOutcome, StoreError> {
        let cluster_id = match cluster {
            None => None,
            Some(name) => match self.0.clusters().find(name)? {
                Some(id) => Some(id),
                None => return Ok(SilenceOutcome::UnknownCluster),
            },
        };
        let store = &mut *self.0;
        store
            .conn
            .execute(
                "INSERT INTO silence(cluster_id, rule, until, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![cluster_id, rule, to_micros(until), to_micros(now)],
            )
            .map_err(|e| store.sql(e))?;
        Ok(SilenceOutcome::Silenced { id: store.conn.last_insert_rowid() })
    }

    /// Ends silence `id` at `now` if it is still running.
    pub(crate) fn end(&mut self, id: i64, now: Timestamp) -> Result<UnsilenceOutcome, StoreError> {
        let store = &mut *self.0;
        let until: Option<i64> = store
            .conn
            .query_row("SELECT until FROM silence WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| store.sql(e))?;
        let now_us = to_micros(now);
        match until {
            None => Ok(UnsilenceOutcome::Unknown),
            Some(until) if until <= now_us => Ok(UnsilenceOutcome::AlreadyEnded(from_micros(until))),
            Some(_) => {
                store
                    .conn
                    .execute("UPDATE silence SET until = ?2 WHERE id = ?1", params![id, now_us])
                    .map_err(|e| store.sql(e))?;
                Ok(UnsilenceOutcome::Ended)
            }
        }
    }
}
