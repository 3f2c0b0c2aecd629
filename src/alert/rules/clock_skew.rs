//! `clock_skew`: events dated more than `tolerance` ahead of walwatch's clock
//! when it read them. A log line is written before it is read, so that only
//! happens when the server's clock runs ahead of this machine's, the log's
//! time zone is read wrongly, or the line was not written by the server
//! (text injected into the log). Such events are kept, but their times are
//! not believed: [`super::evaluate`] never lets one end a window or count as
//! the log's newest event, so one line dated 2099 cannot silence the other
//! alerts. This rule says that it happened.
//!
//! The window is over read times (the log times are the ones in doubt): the
//! alert resolves once no such event was read for `window`.

use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, Unit, ZonedDifference};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

use super::{Evidence, Finding, Rule, Window};
use crate::config::value;
use crate::model::alert::Severity;
use crate::store::DatedAhead;
use crate::store::StoreError;
use crate::timefmt::format_duration;

/// `[alerts.clock_skew]`: events dated more than `tolerance` ahead of
/// walwatch's clock when it read them. Their times never end a rule's window
/// nor count as a log's newest event, whether this alert is enabled or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClockSkew {
    pub(crate) enabled: bool,
    /// How far ahead an event may be dated before it is flagged.
    #[serde(serialize_with = "value::interval::serialize", deserialize_with = "tolerance")]
    pub tolerance: Duration,
    /// The alert covers the events read this long ago or later.
    #[serde(with = "value::interval")]
    pub(crate) window: Duration,
}

impl Default for ClockSkew {
    fn default() -> Self {
        ClockSkew { enabled: true, tolerance: Duration::from_secs(300), window: Duration::from_secs(86_400) }
    }
}

/// Above an hour a wrong log_timezone (whole hours) could pass unflagged.
fn tolerance<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    let tolerance = crate::timefmt::parse_duration(&text).map_err(D::Error::custom)?;
    if tolerance > Duration::from_secs(3600) {
        let message = "tolerance is at most \"1h\" (a wrong log_timezone is off by whole hours), e.g. \"5m\"";
        return Err(D::Error::custom(format!("{message}, not {text:?}")));
    }
    Ok(tolerance)
}

impl Rule for ClockSkew {
    const ID: &'static str = "clock_skew";
    const DOC: &'static str = r#"Log lines dated more than `tolerance` ahead of this machine's clock when
walwatch read them. A line is written before it is read, so that only
happens when the server's clock runs ahead, log_timezone (or the cluster's
`timezone` below) is wrong, or the line was injected into the log. Such
events are kept (and counted by `summary`), but their time never ends an
alert window or counts as the log's newest event, whether this alert is
enabled or not: one line dated 2099 cannot silence the other alerts.
`walwatch status` lists them too. The alert resolves once no such line was
read for `window`.
The default tolerance, 5 minutes, is far above what synchronised clocks
differ by (NTP keeps them within milliseconds; a host without NTP drifts
seconds a day) and below what a wrong time zone is off by (15 minutes at
the least, usually whole hours); at most "1h"."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let w = window(self, evidence.now);
        let ahead = evidence.store.events().dated_ahead(evidence.cluster, self.tolerance, w.start)?;
        Ok(check(ahead.as_ref(), self, &w).into_iter().collect())
    }
}

/// The read times the rule covers: `[now - window, now]`.
pub(crate) fn window(rule: &ClockSkew, now: Timestamp) -> Window {
    Window::ending(now, None, rule.window)
}

/// `ahead`: what the store holds for [`window`]'s read times.
pub(crate) fn check(ahead: Option<&DatedAhead>, rule: &ClockSkew, window: &Window) -> Option<Finding> {
    let ahead = ahead.filter(|a| a.count > 0)?;
    let how_far = ahead_text(ahead.most_ahead_read_at, ahead.most_ahead_at);
    let tolerance = format_duration(rule.tolerance);
    // Short enough for a mail subject; the read times are in the details.
    let summary = format!(
        "{} dated up to {how_far} ahead of this machine's clock (tolerance {tolerance}): check the server's clock and log_timezone",
        events(ahead.count)
    );
    let details = vec![
        format!(
            "In the {} up to {}, walwatch read {} dated more than {tolerance} ahead of its clock, the latest at {}. The one most ahead is dated {}; it was read at {} ({how_far} ahead).",
            window.describe(),
            crate::timefmt::rfc3339(window.end),
            events(ahead.count),
            crate::timefmt::rfc3339(ahead.latest_read_at),
            crate::timefmt::rfc3339(ahead.most_ahead_at),
            crate::timefmt::rfc3339(ahead.most_ahead_read_at)
        ),
        "A log line is written before walwatch reads it, so it is dated ahead only when the server's clock runs ahead of this machine's, when log_timezone (or the cluster's `timezone` in the walwatch config) is wrong, or when the line was not written by the server (text injected into the log).".to_string(),
        "walwatch keeps these events, but their times never end an alert window or count as the log's newest event: the other rules go on judging the log by the lines dated up to now.".to_string(),
        format!("This alert resolves once no such event was read for {}.", window.describe()),
    ];
    Some(Finding {
        rule: ClockSkew::ID,
        key: String::new(),
        severity: Severity::Warning,
        summary,
        details,
        figures: json!({
            "count": ahead.count,
            "max_ahead_s": ahead.max_ahead().as_secs_f64(),
            "most_ahead_at": crate::timefmt::rfc3339(ahead.most_ahead_at),
            "most_ahead_read_at": crate::timefmt::rfc3339(ahead.most_ahead_read_at),
            "latest_read_at": crate::timefmt::rfc3339(ahead.latest_read_at),
            "tolerance_s": rule.tolerance.as_secs_f64(),
            "window": window.figures(),
        }),
        suggestion: None,
        // The log times are the ones in doubt: the evidence is dated when it was read.
        evidence_at: Some(ahead.latest_read_at),
    })
}

fn events(n: i64) -> String {
    if n == 1 {
        "1 event".into()
    } else {
        format!("{n} events")
    }
}

/// How far `to` is ahead of `from`: "7m 30s" within a day, in calendar
/// units beyond ("72y 1mo 8d", counted from `from`, truncated).
pub(crate) fn ahead_text(from: Timestamp, to: Timestamp) -> String {
    let d = to.duration_since(from);
    if d < SignedDuration::from_hours(24) {
        return format!("{:#}", d.round(Unit::Second).unwrap_or(d));
    }
    let (from, to) = (from.to_zoned(TimeZone::UTC), to.to_zoned(TimeZone::UTC));
    match from.until(ZonedDifference::new(&to).largest(Unit::Year).smallest(Unit::Day)) {
        Ok(span) => format!("{span:#}"),
        Err(_) => format!("{d:#}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::test_support::at;
    use super::*;

    fn ahead(count: i64, at_: &str, read: &str) -> DatedAhead {
        DatedAhead { count, most_ahead_at: at(at_), most_ahead_read_at: at(read), latest_read_at: at(read) }
    }

    #[test]
    fn fires_with_how_many_and_how_far() {
        let rule = ClockSkew::default(); // 5m, 24h
        let w = window(&rule, at("2026-11-23T12:00:00Z"));
        assert_eq!((w.start, w.end), (at("2026-11-22T12:00:00Z"), at("2026-11-23T12:00:00Z")));
        let a = DatedAhead {
            latest_read_at: at("2026-11-23T11:00:00Z"),
            ..ahead(3, "2099-01-01T00:00:00Z", "2026-11-23T10:00:00Z")
        };
        let f = check(Some(&a), &rule, &w).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("clock_skew", "", Severity::Warning));
        assert_eq!(
            f.summary,
            "3 events dated up to 72y 1mo 8d ahead of this machine's clock (tolerance 5m): check the server's clock and log_timezone"
        );
        assert_eq!(
            f.details[0],
            "In the 24h up to 2026-11-23T12:00:00.000+00:00, walwatch read 3 events dated more than 5m ahead of its clock, the latest at 2026-11-23T11:00:00.000+00:00. The one most ahead is dated 2099-01-01T00:00:00.000+00:00; it was read at 2026-11-23T10:00:00.000+00:00 (72y 1mo 8d ahead)."
        );
        assert_eq!(f.figures["count"], 3);
        assert_eq!(
            f.figures["max_ahead_s"],
            at("2099-01-01T00:00:00Z").duration_since(at("2026-11-23T10:00:00Z")).as_secs_f64()
        );
        assert_eq!(f.figures["most_ahead_at"], "2099-01-01T00:00:00.000+00:00");
        assert_eq!(f.figures["latest_read_at"], "2026-11-23T11:00:00.000+00:00");
        assert_eq!(f.figures["tolerance_s"], 300.0);
        assert_eq!(f.figures["window"]["length_s"], 86_400.0);
        assert_eq!(f.evidence_at, Some(at("2026-11-23T11:00:00Z")));
        assert_eq!(f.details.last().unwrap(), "This alert resolves once no such event was read for 24h.");
    }

    #[test]
    fn quiet_without_events_dated_ahead() {
        let rule = ClockSkew::default();
        let w = window(&rule, at("2026-11-23T12:00:00Z"));
        assert_eq!(check(None, &rule, &w), None);
        assert_eq!(check(Some(&ahead(0, "2099-01-01T00:00:00Z", "2026-11-23T10:00:00Z")), &rule, &w), None);
    }

    #[test]
    fn ahead_text_in_clock_units_within_a_day_and_calendar_units_beyond() {
        let t = at("2026-11-23T10:00:00Z");
        assert_eq!(ahead_text(t, at("2026-11-23T10:05:00.400Z")), "5m");
        assert_eq!(ahead_text(t, at("2026-11-23T10:05:00.500Z")), "5m 1s");
        assert_eq!(ahead_text(t, at("2026-11-24T09:59:59Z")), "23h 59m 59s");
        assert_eq!(ahead_text(t, at("2026-11-24T10:00:00Z")), "1d");
        assert_eq!(ahead_text(t, at("2099-01-01T00:00:00Z")), "72y 1mo 8d");
        let rule = ClockSkew { window: Duration::from_secs(3600), ..ClockSkew::default() };
        assert_eq!(window(&rule, t).start, at("2026-11-23T09:00:00Z"));
    }
}
