//! The delivery queue (table outbox): messages rendered once, claimed before
//! a send so a second sender skips them, marked sent only after the
//! transport accepted them.

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::columns::{from_micros, opt_from_micros, to_micros};
use super::{Store, StoreError};
use crate::model::alert::{Channel, NoticeKind};

#[cfg(test)]
mod tests;

/// The outbox's handle: [`Store::outbox`], [`Store::outbox_mut`].
pub struct Outbox<S>(pub(super) S);

/// A rendered message to queue (delivery renders it, the outbox keeps it). `message_id` is stable for a
/// given (alert, notice kind, sequence), so a re-send is the same message.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub(crate) alert_id: Option<i64>,
    pub(crate) notice: NoticeKind,
    pub(crate) channel: Channel,
    /// The mail's Message-ID (`<…@host>`); `webhook:<…@host>` for the
    /// webhook copy (the outbox key is unique across channels).
    pub message_id: String,
    /// RFC 5322 text for mail, JSON for the webhook.
    pub payload: String,
    /// When it was rendered: created_at, and the first attempt is due then.
    pub(crate) queued_at: Timestamp,
}

/// Queues `messages` inside the caller's transaction (the one that changes
/// the alert, or records a digest's day), so that the change and its
/// notification commit together.
/// A message whose Message-ID is already queued is not queued again.
pub(super) fn insert(tx: &rusqlite::Transaction<'_>, messages: &[NewMessage]) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR IGNORE INTO outbox (alert_id, notice, channel, message_id, payload, created_at, next_attempt_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?;
    for m in messages {
        let at = to_micros(m.queued_at);
        stmt.execute(params![m.alert_id, m.notice.as_str(), m.channel.as_str(), m.message_id, m.payload, at])?;
    }
    Ok(())
}

/// How the delivery of one message went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Delivery {
    /// When the transport accepted it.
    pub(crate) sent_at: Option<Timestamp>,
    pub(crate) attempts: i64,
    /// The last failure.
    pub(crate) last_error: Option<String>,
}

/// A queued, unsent message.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRow {
    pub(crate) id: i64,
    pub(crate) alert_id: Option<i64>,
    pub(crate) notice: NoticeKind,
    pub(crate) channel: Channel,
    pub message_id: String,
    pub payload: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub next_attempt_at: Timestamp,
    pub sent_at: Option<Timestamp>,
}

const COLUMNS: &str =
    "id, alert_id, notice, channel, message_id, payload, attempts, last_error, next_attempt_at, sent_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<OutboxRow> {
    Ok(OutboxRow {
        id: r.get("id")?,
        alert_id: r.get("alert_id")?,
        notice: r.get("notice")?,
        channel: r.get("channel")?,
        message_id: r.get("message_id")?,
        payload: r.get("payload")?,
        attempts: r.get("attempts")?,
        last_error: r.get("last_error")?,
        next_attempt_at: from_micros(r.get("next_attempt_at")?),
        sent_at: opt_from_micros(r.get("sent_at")?),
    })
}

impl<S: Deref<Target = Store>> Outbox<S> {
    /// Unsent messages due at `now`, oldest first.
    pub(crate) fn due(&self, now: Timestamp) -> Result<Vec<OutboxRow>, StoreError> {
        let store = &*self.0;
        let sql = format!(
            "SELECT {COLUMNS} FROM outbox WHERE sent_at IS NULL AND next_attempt_at <= ?1 ORDER BY next_attempt_at, id"
        );
        let mut stmt = store.conn.prepare_cached(&sql).map_err(|e| store.sql(e))?;
        let rows = stmt.query_map([to_micros(now)], row).map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// Every message, sent or not, in queue order (status and tests).
    pub fn all(&self) -> Result<Vec<OutboxRow>, StoreError> {
        let store = &*self.0;
        let sql = format!("SELECT {COLUMNS} FROM outbox ORDER BY id");
        let mut stmt = store.conn.prepare(&sql).map_err(|e| store.sql(e))?;
        let rows = stmt.query_map([], row).map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// When the next unsent message is due; None when the queue is empty.
    pub(crate) fn next_due(&self) -> Result<Option<Timestamp>, StoreError> {
        let sql = "SELECT min(next_attempt_at) FROM outbox WHERE sent_at IS NULL";
        let next: Option<i64> = self.0.conn.query_row(sql, [], |r| r.get(0)).map_err(|e| self.0.sql(e))?;
        Ok(next.map(from_micros))
    }

    /// Where the message `message_id` is; None when it is not queued.
    pub(crate) fn delivery(&self, message_id: &str) -> Result<Option<Delivery>, StoreError> {
        self.0
            .conn
            .query_row("SELECT sent_at, attempts, last_error FROM outbox WHERE message_id = ?1", [message_id], |r| {
                Ok(Delivery { sent_at: opt_from_micros(r.get(0)?), attempts: r.get(1)?, last_error: r.get(2)? })
            })
            .optional()
            .map_err(|e| self.0.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Outbox<S> {
    /// Queues messages in a transaction of their own (test messages).
    pub fn queue(&mut self, messages: &[NewMessage]) -> Result<(), StoreError> {
        let store = &mut *self.0;
        let queue = |conn: &mut rusqlite::Connection| {
            let tx = conn.transaction()?;
            insert(&tx, messages)?;
            tx.commit()
        };
        queue(&mut store.conn).map_err(|e| store.sql(e))
    }

    /// Takes a due message for one send: pushes its next attempt to `until`
    /// so another sender (the daemon while `alerts test-mail` runs) skips it.
    /// False when someone else claimed or sent it first.
    pub(crate) fn claim(&mut self, id: i64, now: Timestamp, until: Timestamp) -> Result<bool, StoreError> {
        let n = self
            .0
            .conn
            .execute(
                "UPDATE outbox SET next_attempt_at = ?3 WHERE id = ?1 AND sent_at IS NULL AND next_attempt_at <= ?2",
                params![id, to_micros(now), to_micros(until)],
            )
            .map_err(|e| self.0.sql(e))?;
        Ok(n == 1)
    }

    /// The transport accepted the message. A firing notice also moves its
    /// alert from firing to notified, in the same transaction, so the two
    /// cannot disagree after a crash.
    pub(crate) fn mark_sent(&mut self, id: i64, now: Timestamp) -> Result<(), StoreError> {
        let store = &mut *self.0;
        mark_sent(&mut store.conn, id, to_micros(now)).map_err(|e| store.sql(e))
    }

    /// The transport refused or could not be reached: try again at `next`.
    pub(crate) fn mark_failed(&mut self, id: i64, error: &str, next: Timestamp) -> Result<(), StoreError> {
        self.0
            .conn
            .execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?2, next_attempt_at = ?3
                 WHERE id = ?1 AND sent_at IS NULL",
                params![id, error, to_micros(next)],
            )
            .map_err(|e| self.0.sql(e))?;
        Ok(())
    }

    /// Drops an unsent message (a test message that failed: it is reported
    /// to the user at once, not delivered hours later).
    pub(crate) fn delete_unsent(&mut self, message_id: &str) -> Result<(), StoreError> {
        self.0
            .conn
            .execute("DELETE FROM outbox WHERE message_id = ?1 AND sent_at IS NULL", [message_id])
            .map_err(|e| self.0.sql(e))?;
        Ok(())
    }
}

fn mark_sent(conn: &mut rusqlite::Connection, id: i64, at: i64) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let alert: Option<(Option<i64>, String)> = tx
        .query_row(
            "UPDATE outbox SET sent_at = ?2, attempts = attempts + 1 WHERE id = ?1 AND sent_at IS NULL
             RETURNING alert_id, notice",
            params![id, at],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((Some(alert_id), notice)) = alert {
        if notice == "firing" {
            tx.execute(
                "UPDATE alert SET state = 'notified', notified_at = ?2, updated_at = ?2 WHERE id = ?1 AND state = 'firing'",
                params![alert_id, at],
            )?;
        }
    }
    tx.commit()
}
