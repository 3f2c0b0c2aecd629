//! What the store's read queries share: which rows a query covers
//! ([`Filter`]) and the SQL fragments that several tables' readers agree on
//! (a point's time, recognised events, events dated ahead).
//!
//! A module of its own that imports nothing else of the store but
//! [`super::columns`]: the aggregates' readers (events, checkpoints,
//! sources, alerts) each depend on it, never on one another for these.

use std::time::Duration;

use jiff::Timestamp;
use rusqlite::types::Value;

use super::columns::to_micros;
use crate::model::event::Trigger;

/// Which rows a query covers. Times are UTC microseconds, `until` exclusive.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub(crate) cluster: Option<String>,
    pub(crate) since: Option<Timestamp>,
    pub(crate) until: Option<Timestamp>,
    pub(crate) trigger: Option<Trigger>,
}

impl Filter {
    /// SQL conditions on `cluster c` and the time expression `time`, with their values.
    pub(super) fn conditions(&self, time: &str) -> (String, Vec<Value>) {
        let (mut sql, mut values) = self.cluster_condition();
        let (times, more) = self.time_conditions(time);
        sql.push_str(&times);
        values.extend(more);
        (sql, values)
    }

    /// The condition on `cluster c` alone, with its value.
    pub(super) fn cluster_condition(&self) -> (String, Vec<Value>) {
        match &self.cluster {
            Some(c) => (" AND c.name = ?".into(), vec![Value::Text(c.clone())]),
            None => (String::new(), Vec::new()),
        }
    }

    /// The conditions on the time expression `time` alone, with their values.
    pub(super) fn time_conditions(&self, time: &str) -> (String, Vec<Value>) {
        times(time, self.since.map(to_micros), self.until.map(to_micros))
    }
}

/// `time` in `[since, until)` (µs; either bound may be absent), with the values.
pub(super) fn times(time: &str, since: Option<i64>, until: Option<i64>) -> (String, Vec<Value>) {
    let mut sql = String::new();
    let mut values = Vec::new();
    if let Some(t) = since {
        sql.push_str(&format!(" AND {time} >= ?"));
        values.push(Value::Integer(t));
    }
    if let Some(t) = until {
        sql.push_str(&format!(" AND {time} < ?"));
        values.push(Value::Integer(t));
    }
    (sql, values)
}

/// A checkpoint row's time (table `checkpoint k`): its start, or its
/// complete when no start line was read. The index checkpoint_cluster_time
/// holds this expression.
pub(super) const POINT_TIME: &str = "COALESCE(k.started_at, k.completed_at)";

/// The cluster named ?1, as a scalar subquery (computed once, not per row).
pub(super) const CLUSTER: &str = "(SELECT id FROM cluster WHERE name = ?1)";

/// Recognised events only (table `event e`): a rejected record (a client's
/// look-alike line) never counts as an event.
pub(super) const RECOGNISED: &str = "e.kind <> 'rejected'";

/// Every checkpoint line that was dated ahead of walwatch's clock when read,
/// as rows (cluster_id, at, ahead_us): the few rows of the partial index
/// checkpoint_ahead.
pub(super) const LINES_AHEAD: &str = "SELECT cluster_id, started_at AS at, start_ahead_us AS ahead_us FROM checkpoint
       WHERE (start_ahead_us IS NOT NULL OR complete_ahead_us IS NOT NULL) AND start_ahead_us IS NOT NULL
     UNION ALL
     SELECT cluster_id, completed_at, complete_ahead_us FROM checkpoint
       WHERE (start_ahead_us IS NOT NULL OR complete_ahead_us IS NOT NULL) AND complete_ahead_us IS NOT NULL";

/// The condition leaving out the events dated ahead, with the tolerance in
/// µs as `param`. (Not `ahead_us <= ?`: the id list comes from the small
/// partial index event_ahead, and the time queries stay on the covering
/// event index.)
pub(super) fn not_ahead(param: &str) -> String {
    format!("e.id NOT IN (SELECT a.id FROM event a WHERE a.ahead_us > {param})")
}

/// The tolerance for events dated ahead, in µs as the store compares it.
pub(super) fn tolerance_us(tolerance: Duration) -> i64 {
    i64::try_from(tolerance.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_follow_the_filter_in_order() {
        let since: Timestamp = "2026-11-22T10:00:00Z".parse().unwrap();
        let until: Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
        let f = Filter { cluster: Some("main".into()), since: Some(since), until: Some(until), trigger: None };
        let (sql, values) = f.conditions(POINT_TIME);
        assert_eq!(
            sql,
            " AND c.name = ? AND COALESCE(k.started_at, k.completed_at) >= ? AND COALESCE(k.started_at, k.completed_at) < ?"
        );
        assert_eq!(
            values,
            [
                Value::Text("main".into()),
                Value::Integer(since.as_microsecond()),
                Value::Integer(until.as_microsecond())
            ]
        );
        assert_eq!(Filter::default().conditions("e.at"), (String::new(), vec![]));
        assert_eq!(tolerance_us(Duration::from_secs(300)), 300_000_000);
        assert_eq!(tolerance_us(Duration::MAX), i64::MAX);
    }
}
