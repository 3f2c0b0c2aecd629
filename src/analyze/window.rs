//! The stretch of log time a rule or the sizing model looks at: the last
//! `length` up to now, or up to the log's newest event when the log is older
//! than that (an imported log is judged by what it shows).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// The log times a windowed rule looks at, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start: Timestamp,
    pub(crate) end: Timestamp,
    pub(crate) length: Duration,
}

impl Window {
    /// `[now - length, now]`, or `[newest - length, newest]` when the newest
    /// event is older than that (see [`crate::alert::rules`]). Never later
    /// than now: an event dated ahead waits for its time (at most the
    /// clock_skew tolerance, or the daemon's next pass) instead of moving
    /// the window; the callers pass the newest event not dated ahead.
    pub(crate) fn ending(now: Timestamp, newest_event: Option<Timestamp>, length: Duration) -> Window {
        let span = SignedDuration::try_from(length).unwrap_or(SignedDuration::MAX);
        let back = |t: Timestamp| t.checked_sub(span).unwrap_or(Timestamp::MIN);
        let end = match newest_event {
            Some(newest) if newest < back(now) => newest,
            _ => now,
        };
        Window { start: back(end), end, length }
    }

    pub(crate) fn contains(&self, t: Timestamp) -> bool {
        self.start <= t && t <= self.end
    }

    /// "1h", "24h", "30m".
    pub(crate) fn describe(&self) -> String {
        crate::timefmt::format_duration(self.length)
    }

    /// The window in a finding's figures.
    pub(crate) fn figures(&self) -> serde_json::Value {
        serde_json::json!({
            "length_s": self.length.as_secs_f64(),
            "start": crate::timefmt::rfc3339(self.start),
            "end": crate::timefmt::rfc3339(self.end),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn window_ends_now_unless_the_log_is_older_than_the_window() {
        let now = at("2026-11-22T12:00:00Z");
        let hour = Duration::from_secs(3600);
        // A current log: the window ends now.
        let w = Window::ending(now, Some(at("2026-11-22T11:30:00Z")), hour);
        assert_eq!((w.start, w.end), (at("2026-11-22T11:00:00Z"), now));
        // Exactly at the window start: still current.
        let w = Window::ending(now, Some(at("2026-11-22T11:00:00Z")), hour);
        assert_eq!(w.end, now);
        // Last week's log: the window ends at its newest event.
        let w = Window::ending(now, Some(at("2026-11-15T08:00:00Z")), hour);
        assert_eq!((w.start, w.end), (at("2026-11-15T07:00:00Z"), at("2026-11-15T08:00:00Z")));
        assert!(w.contains(at("2026-11-15T07:00:00Z")) && w.contains(at("2026-11-15T08:00:00Z")));
        assert!(!w.contains(at("2026-11-15T08:00:00.000001Z")));
        // No events at all.
        assert_eq!(Window::ending(now, None, hour).end, now);
        assert_eq!(w.describe(), "1h");
    }

    #[test]
    fn a_window_never_ends_after_now() {
        let now = at("2026-11-22T12:00:00Z");
        let hour = Duration::from_secs(3600);
        // A server clock a little ahead: its newest lines wait for their time.
        let w = Window::ending(now, Some(at("2026-11-22T12:00:05Z")), hour);
        assert_eq!((w.start, w.end), (at("2026-11-22T11:00:00Z"), now));
        // Far ahead (what the store leaves out, and what it would do if it did not).
        let w = Window::ending(now, Some(at("2099-01-01T00:00:00Z")), hour);
        assert_eq!((w.start, w.end), (at("2026-11-22T11:00:00Z"), now));
    }
}
