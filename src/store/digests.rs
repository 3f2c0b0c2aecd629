//! Which days' digests the daemon dealt with (table digest), and the
//! queueing of one, with its outbox row, in a single transaction.

use std::ops::{Deref, DerefMut};

use jiff::civil::Date;
use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::columns::to_micros;
use super::outbox::{insert, NewMessage};
use super::{Store, StoreError};

/// The digests' handle: [`Store::digests`], [`Store::digests_mut`].
pub struct Digests<S>(pub(super) S);

/// What the daemon did about a day.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DayRecord {
    /// The first day of a new store's schedule: nothing mailed.
    Baseline,
    /// The digest was queued as these outbox messages.
    Queued { message_id: String, subject: String },
    /// A quiet day under `skip_quiet_days`: nothing mailed.
    Skipped,
}

/// The latest day recorded and where its mail is (`walwatch status`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatestDigest {
    pub(crate) day: Date,
    pub(crate) record: DayRecord,
    /// Of the queued mail: when the server accepted it, how many attempts, the last failure.
    pub(crate) sent_at: Option<Timestamp>,
    pub(crate) attempts: i64,
    pub(crate) last_error: Option<String>,
}

impl<S: Deref<Target = Store>> Digests<S> {
    /// The latest day recorded, with its mail's delivery state.
    pub(crate) fn latest(&self) -> Result<Option<LatestDigest>, StoreError> {
        let Some(day) = self.last_day()? else { return Ok(None) };
        let Some(record) = self.day(day)? else { return Ok(None) };
        let mut latest = LatestDigest { day, record, sent_at: None, attempts: 0, last_error: None };
        if let DayRecord::Queued { message_id, .. } = &latest.record {
            if let Some(delivery) = self.0.outbox().delivery(message_id)? {
                latest.sent_at = delivery.sent_at;
                (latest.attempts, latest.last_error) = (delivery.attempts, delivery.last_error);
            }
        }
        Ok(Some(latest))
    }

    /// The latest day recorded (queued or baseline); None on a store that
    /// never had a digest schedule.
    pub fn last_day(&self) -> Result<Option<Date>, StoreError> {
        let day: Option<String> =
            self.0.conn.query_row("SELECT max(day) FROM digest", [], |r| r.get(0)).map_err(|e| self.0.sql(e))?;
        Ok(day.and_then(|d| d.parse().ok()))
    }

    /// What was recorded for `day`.
    pub(crate) fn day(&self, day: Date) -> Result<Option<DayRecord>, StoreError> {
        let row: Option<(String, Option<String>, Option<String>)> = self
            .0
            .conn
            .query_row("SELECT kind, message_id, subject FROM digest WHERE day = ?1", [day.to_string()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(|e| self.0.sql(e))?;
        Ok(row.map(|(kind, message_id, subject)| match (kind.as_str(), message_id) {
            ("queued", Some(message_id)) => DayRecord::Queued { message_id, subject: subject.unwrap_or_default() },
            ("skipped", _) => DayRecord::Skipped,
            _ => DayRecord::Baseline,
        }))
    }
}

impl<S: DerefMut<Target = Store>> Digests<S> {
    /// Records `day` and queues its messages in one transaction: false (and
    /// nothing queued) when the day was already recorded, by this process
    /// before a crash or by another one.
    pub(crate) fn record(
        &mut self,
        day: Date,
        record: &DayRecord,
        messages: &[NewMessage],
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let record_day = |conn: &mut rusqlite::Connection| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let (kind, message_id, subject) = match record {
                DayRecord::Baseline => ("baseline", None, None),
                DayRecord::Skipped => ("skipped", None, None),
                DayRecord::Queued { message_id, subject } => ("queued", Some(message_id), Some(subject)),
            };
            let n = tx.execute(
                "INSERT OR IGNORE INTO digest (day, kind, message_id, subject, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![day.to_string(), kind, message_id, subject, to_micros(now)],
            )?;
            if n == 1 {
                insert(&tx, messages)?;
            }
            tx.commit()?;
            Ok(n == 1)
        };
        let store = &mut *self.0;
        record_day(&mut store.conn).map_err(|e| store.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alert::{Channel, NoticeKind};

    fn message(id: &str, at: Timestamp) -> NewMessage {
        NewMessage {
            alert_id: None,
            notice: NoticeKind::Digest,
            channel: Channel::Mail,
            message_id: id.into(),
            payload: "Subject: x\r\n\r\nbody".into(),
            queued_at: at,
        }
    }

    #[test]
    fn a_day_is_queued_once_and_the_latest_day_is_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("d.db")).unwrap();
        let now: Timestamp = "2026-11-24T06:00:00Z".parse().unwrap();
        assert_eq!(store.digests().last_day().unwrap(), None);
        let d1: Date = "2026-11-22".parse().unwrap();
        let d2: Date = "2026-11-23".parse().unwrap();
        assert!(store.digests_mut().record(d1, &DayRecord::Baseline, &[], now).unwrap());
        let queued = DayRecord::Queued { message_id: "<a@h>".into(), subject: "s".into() };
        assert!(store.digests_mut().record(d2, &queued, &[message("<a@h>", now)], now).unwrap());
        // A second daemon (or a restart after a crash) finds the day taken: nothing more is queued.
        let again = DayRecord::Queued { message_id: "<b@h>".into(), subject: "s".into() };
        assert!(!store.digests_mut().record(d2, &again, &[message("<b@h>", now)], now).unwrap());
        assert_eq!(store.digests().last_day().unwrap(), Some(d2));
        assert_eq!(store.digests().day(d1).unwrap(), Some(DayRecord::Baseline));
        assert_eq!(store.digests().day(d2).unwrap(), Some(queued));
        let ids: Vec<String> = store.outbox().all().unwrap().into_iter().map(|r| r.message_id).collect();
        assert_eq!(ids, ["<a@h>"]);
        assert_eq!(store.outbox().all().unwrap()[0].notice, NoticeKind::Digest);
    }
}
