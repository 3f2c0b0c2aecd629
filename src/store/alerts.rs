//! Alerts (table alert). The history the rules read lives with what it is
//! about: checkpoints.rs, events.rs, sources.rs.
//!
//! The lifecycle (crate::alert::lifecycle) changes a cluster's alerts and
//! queues their notices in one transaction: `store.alerts_mut().begin(…)`
//! opens it and [`AlertTx`] is everything it may do inside.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension, Row, Transaction};
use serde::Serialize;
use serde_json::{json, Value};

use super::columns::{from_micros, opt_from_micros, to_micros};
use super::filter::CLUSTER;
use super::{Store, StoreError};
use crate::model::alert::{AlertState, Resolution, Severity, SuggestionText};

/// The alerts' handle: [`Store::alerts`], [`Store::alerts_mut`].
pub struct Alerts<S>(pub(super) S);

/// One alert as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertRow {
    pub id: i64,
    pub(crate) cluster: String,
    pub(crate) rule: String,
    pub(crate) key: String,
    pub(crate) severity: Severity,
    pub state: AlertState,
    pub(crate) summary: String,
    pub(crate) details: Vec<String>,
    pub(crate) figures: Value,
    pub(crate) suggestion: Option<SuggestionText>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) evidence_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) fired_at: Timestamp,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) updated_at: Timestamp,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) notified_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) reminded_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) resolved_at: Option<Timestamp>,
    /// Why it was resolved (None while open): cleared or rule_disabled.
    pub resolution: Option<Resolution>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) acked_at: Option<Timestamp>,
    /// acked_at is set: no reminders.
    pub(crate) acked: bool,
    /// When the firing notice was queued; None while the rule was silenced.
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) queued_at: Option<Timestamp>,
    pub(crate) reminders: u32,
}

/// The content of an alert that the rules produce (new or refreshed).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlertContent<'a> {
    pub(crate) rule: &'a str,
    pub(crate) key: &'a str,
    pub(crate) severity: Severity,
    pub(crate) summary: &'a str,
    pub(crate) details: &'a [String],
    pub(crate) figures: &'a Value,
    pub(crate) suggestion: Option<&'a SuggestionText>,
    pub(crate) evidence_at: Option<Timestamp>,
}

impl AlertContent<'_> {
    fn details_json(&self) -> String {
        let suggestion = self.suggestion.map(|s| json!({ "text": s.text, "sql": s.sql }));
        json!({ "details": self.details, "figures": self.figures, "suggestion": suggestion }).to_string()
    }
}

const ALERT_COLUMNS: &str = "a.id, c.name, a.rule, a.key, a.severity, a.state, a.summary, a.details, a.evidence_at,
    a.fired_at, a.updated_at, a.notified_at, a.reminded_at, a.resolved_at, a.resolution, a.acked_at, a.queued_at, a.reminders";

fn alert_row(r: &Row<'_>) -> rusqlite::Result<AlertRow> {
    let details: String = r.get("details")?;
    let details: Value = serde_json::from_str(&details).unwrap_or(Value::Null);
    let lines = details["details"]
        .as_array()
        .map(|a| a.iter().filter_map(|l| l.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let suggestion = details["suggestion"].as_object().map(|s| SuggestionText {
        text: s["text"]
            .as_array()
            .map(|a| a.iter().filter_map(|l| l.as_str().map(String::from)).collect())
            .unwrap_or_default(),
        sql: s["sql"].as_str().unwrap_or_default().to_string(),
    });
    Ok(AlertRow {
        id: r.get("id")?,
        cluster: r.get("name")?,
        rule: r.get("rule")?,
        key: r.get("key")?,
        severity: r.get("severity")?,
        state: r.get("state")?,
        summary: r.get("summary")?,
        details: lines,
        figures: details["figures"].clone(),
        suggestion,
        evidence_at: opt_from_micros(r.get("evidence_at")?),
        fired_at: from_micros(r.get("fired_at")?),
        updated_at: from_micros(r.get("updated_at")?),
        notified_at: opt_from_micros(r.get("notified_at")?),
        reminded_at: opt_from_micros(r.get("reminded_at")?),
        resolved_at: opt_from_micros(r.get("resolved_at")?),
        resolution: r.get("resolution")?,
        acked_at: opt_from_micros(r.get("acked_at")?),
        acked: r.get::<_, Option<i64>>("acked_at")?.is_some(),
        queued_at: opt_from_micros(r.get("queued_at")?),
        reminders: r.get("reminders")?,
    })
}

impl<S: Deref<Target = Store>> Alerts<S> {
    /// Alerts, newest first: open ones only unless `all`.
    pub fn list(&self, cluster: Option<&str>, all: bool) -> Result<Vec<AlertRow>, StoreError> {
        let store = &*self.0;
        let sql = format!(
            "SELECT {ALERT_COLUMNS} FROM alert a JOIN cluster c ON c.id = a.cluster_id
             WHERE (?1 IS NULL OR c.name = ?1) AND (?2 OR a.state <> 'resolved')
             ORDER BY a.fired_at DESC, a.id DESC"
        );
        let mut stmt = store.conn.prepare(&sql).map_err(|e| store.sql(e))?;
        let rows = stmt.query_map(params![cluster, all], alert_row).map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// One alert by id.
    pub fn get(&self, id: i64) -> Result<Option<AlertRow>, StoreError> {
        let sql = format!("SELECT {ALERT_COLUMNS} FROM alert a JOIN cluster c ON c.id = a.cluster_id WHERE a.id = ?1");
        self.0.conn.query_row(&sql, [id], alert_row).optional().map_err(|e| self.0.sql(e))
    }

    /// When each alert of `cluster` fired (walwatch's clock) in `[since, until)`.
    pub(crate) fn fired_times(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
        each: impl FnMut(Timestamp),
    ) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT a.fired_at FROM alert a WHERE a.cluster_id = {CLUSTER} AND a.fired_at >= ?2 AND a.fired_at < ?3"
        );
        self.0.each_time(&sql, params![cluster, to_micros(since), to_micros(until)], each)
    }
}

impl<S: DerefMut<Target = Store>> Alerts<S> {
    /// Acknowledges alert `id` (no more reminders). None: no such alert;
    /// Some(false): it was acknowledged already.
    pub(crate) fn ack(&mut self, id: i64, now: Timestamp) -> Result<Option<bool>, StoreError> {
        let store = &mut *self.0;
        let exists: Option<Option<i64>> = store
            .conn
            .query_row("SELECT acked_at FROM alert WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| store.sql(e))?;
        match exists {
            None => Ok(None),
            Some(Some(_)) => Ok(Some(false)),
            Some(None) => {
                store
                    .conn
                    .execute("UPDATE alert SET acked_at = ?2 WHERE id = ?1", params![id, to_micros(now)])
                    .map_err(|e| store.sql(e))?;
                Ok(Some(true))
            }
        }
    }

    /// The firing notice of alert `id` was accepted: firing -> notified
    /// (resolved alerts stay resolved). The sender does this in the outbox's
    /// `mark_sent`, in the transaction that marks the message sent; the
    /// lifecycle tests take this shortcut.
    #[cfg(test)]
    pub(crate) fn mark_notified(&mut self, id: i64, at: Timestamp) -> Result<bool, StoreError> {
        let n = self
            .0
            .conn
            .execute(
                "UPDATE alert SET state = 'notified', notified_at = COALESCE(notified_at, ?2) WHERE id = ?1 AND state = 'firing'",
                params![id, to_micros(at)],
            )
            .map_err(|e| self.0.sql(e))?;
        Ok(n == 1)
    }
}

impl<'a> Alerts<&'a mut Store> {
    /// Opens the transaction in which one cluster's alerts change.
    pub(crate) fn begin(self, cluster: &str) -> Result<AlertTx<'a>, StoreError> {
        let store = self.0;
        let path = store.path.clone();
        let sql = |source| StoreError::Sql { path: path.clone(), source };
        let tx = store.conn.transaction().map_err(sql)?;
        tx.execute("INSERT OR IGNORE INTO cluster(name) VALUES (?1)", [cluster]).map_err(sql)?;
        let cluster_id: i64 =
            tx.query_row("SELECT id FROM cluster WHERE name = ?1", [cluster], |r| r.get(0)).map_err(sql)?;
        Ok(AlertTx { tx, path, cluster_id, cluster: cluster.to_string() })
    }
}

/// One cluster's alert changes, committed together with the notices they queue.
pub(crate) struct AlertTx<'a> {
    tx: Transaction<'a>,
    path: PathBuf,
    cluster_id: i64,
    cluster: String,
}

impl AlertTx<'_> {
    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql { path: self.path.clone(), source }
    }

    /// Queues rendered notices in the outbox, so they commit with the alert change.
    pub(crate) fn queue(&self, messages: &[super::outbox::NewMessage]) -> Result<(), StoreError> {
        super::outbox::insert(&self.tx, messages).map_err(|e| self.sql(e))
    }

    pub(crate) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The cluster's alerts that are not resolved.
    pub(crate) fn open_alerts(&self) -> Result<Vec<AlertRow>, StoreError> {
        let sql = format!(
            "SELECT {ALERT_COLUMNS} FROM alert a JOIN cluster c ON c.id = a.cluster_id
             WHERE a.cluster_id = ?1 AND a.state <> 'resolved' ORDER BY a.id"
        );
        let mut stmt = self.tx.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([self.cluster_id], alert_row).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The latest end of a silence of `rule` on this cluster (or all) that is still running at `now`.
    pub(crate) fn silenced_until(&self, rule: &str, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let v: Option<i64> = self
            .tx
            .query_row(
                "SELECT MAX(until) FROM silence WHERE rule = ?1 AND (cluster_id IS NULL OR cluster_id = ?2) AND until > ?3",
                params![rule, self.cluster_id, to_micros(now)],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        Ok(opt_from_micros(v))
    }

    /// A new alert in state 'firing'; `queued` says whether its firing notice is queued now.
    pub(crate) fn insert(&self, content: &AlertContent<'_>, now: Timestamp, queued: bool) -> Result<i64, StoreError> {
        self.tx
            .execute(
                "INSERT INTO alert(cluster_id, rule, key, severity, state, summary, details, evidence_at, fired_at, updated_at, queued_at)
                 VALUES (?1, ?2, ?3, ?4, 'firing', ?5, ?6, ?7, ?8, ?8, ?9)",
                params![
                    self.cluster_id,
                    content.rule,
                    content.key,
                    content.severity.as_str(),
                    content.summary,
                    content.details_json(),
                    content.evidence_at.map(to_micros),
                    to_micros(now),
                    queued.then(|| to_micros(now)),
                ],
            )
            .map_err(|e| self.sql(e))?;
        Ok(self.tx.last_insert_rowid())
    }

    /// Refreshes an open alert with what the rule says now.
    pub(crate) fn refresh(&self, id: i64, content: &AlertContent<'_>, now: Timestamp) -> Result<(), StoreError> {
        self.tx
            .execute(
                "UPDATE alert SET severity = ?2, summary = ?3, details = ?4, evidence_at = ?5, updated_at = ?6 WHERE id = ?1",
                params![
                    id,
                    content.severity.as_str(),
                    content.summary,
                    content.details_json(),
                    content.evidence_at.map(to_micros),
                    to_micros(now)
                ],
            )
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// The firing notice of an alert fired while silenced is queued now.
    pub(crate) fn mark_queued(&self, id: i64, now: Timestamp) -> Result<(), StoreError> {
        self.tx
            .execute("UPDATE alert SET queued_at = ?2 WHERE id = ?1", params![id, to_micros(now)])
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// The `n`-th reminder of alert `id` is queued now.
    pub(crate) fn mark_reminded(&self, id: i64, n: u32, now: Timestamp) -> Result<(), StoreError> {
        self.tx
            .execute("UPDATE alert SET reminders = ?2, reminded_at = ?3 WHERE id = ?1", params![id, n, to_micros(now)])
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Closes alert `id` now, saying why.
    pub(crate) fn resolve(&self, id: i64, why: Resolution, now: Timestamp) -> Result<(), StoreError> {
        self.tx
            .execute(
                "UPDATE alert SET state = 'resolved', resolved_at = ?2, updated_at = ?2, resolution = ?3 WHERE id = ?1",
                params![id, to_micros(now), why.as_str()],
            )
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    pub(crate) fn commit(self) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.tx.commit().map_err(|source| StoreError::Sql { path, source })
    }
}
