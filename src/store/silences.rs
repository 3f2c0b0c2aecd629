//! Listing and ending silences (table silence; `Store::silence` starts one).
//! A silence ends by its `until` passing: ending one early moves `until` to
//! now, so an ended silence reads like an expired one everywhere.

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// One silence as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SilenceRow {
    pub id: i64,
    pub rule: String,
    /// None: every cluster.
    pub cluster: Option<String>,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub from: Timestamp,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub until: Timestamp,
    /// Still running at the time of the listing.
    pub active: bool,
}

/// What `walwatch alerts unsilence` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsilenceOutcome {
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

impl Store {
    /// Silences running at `now`, or every one when `all`; newest first.
    pub fn silences(&self, all: bool, now: Timestamp) -> Result<Vec<SilenceRow>, StoreError> {
        let now = to_micros(now);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.id, s.rule, c.name, s.created_at, s.until FROM silence s
                 LEFT JOIN cluster c ON c.id = s.cluster_id
                 WHERE ?1 OR s.until > ?2 ORDER BY s.created_at DESC, s.id DESC",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt.query_map(params![all, now], |r| silence_row(r, now)).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Ends silence `id` at `now` if it is still running.
    pub fn unsilence(&mut self, id: i64, now: Timestamp) -> Result<UnsilenceOutcome, StoreError> {
        let until: Option<i64> = self
            .conn
            .query_row("SELECT until FROM silence WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        let now_us = to_micros(now);
        match until {
            None => Ok(UnsilenceOutcome::Unknown),
            Some(until) if until <= now_us => Ok(UnsilenceOutcome::AlreadyEnded(from_micros(until))),
            Some(_) => {
                self.conn
                    .execute("UPDATE silence SET until = ?2 WHERE id = ?1", params![id, now_us])
                    .map_err(|e| self.sql(e))?;
                Ok(UnsilenceOutcome::Ended)
            }
        }
    }
}
