//! Which day's digest is due, and when the next one is.
//!
//! The digest of day D is due from `at` (a wall-clock time in the digest's
//! time zone) on day D + 1. Exactly once: the daemon records the last day
//! it sent (with the outbox's stable Message-ID for the delivery itself),
//! so a restart before or after `at`, a crash, an SMTP outage all end in
//! one mail per day. After downtime only the latest due day is sent: the
//! days missed before it are named in that mail, never sent as a burst of
//! stale digests. On the day a DST change removes `at` (02:30 in
//! Europe/Berlin on the last Sunday of March), the digest goes out as late
//! after the gap as `at` is into it (03:30), as RFC 5545 and Temporal do;
//! where `at` happens twice, at the first.
//!
//! The clock is a parameter everywhere: tests drive days, restarts and
//! DST changes without sleeping.

use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

use crate::config::DigestSection;

/// At most this many missed days are named one by one.
const MISSED_NAMED: usize = 31;

/// When digests go out.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub(crate) at: Time,
    pub(crate) tz: TimeZone,
}

/// What is due at a given instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Due {
    /// The digest of every day up to this one is sent (or was never asked
    /// for); the next falls due at [`Schedule::next_after`].
    Nothing,
    /// No digest was ever sent: this day is the baseline. The first digest
    /// is the next day's, at its time (a daemon started in the afternoon
    /// does not mail a digest of a day it did not watch).
    Baseline(Date),
    /// Send the digest of `day`; `missed` are the days between the last one
    /// sent and it (oldest first, at most [`MISSED_NAMED`]; `missed_total`
    /// counts them all), to be named in it.
    Send { day: Date, missed: Vec<Date>, missed_total: usize },
}

impl Schedule {
    /// The schedule `[digest]` asks for (its zone, else the system's).
    pub fn of(digest: &DigestSection) -> Result<Schedule, jiff::Error> {
        let tz = match &digest.timezone {
            Some(name) => TimeZone::get(name)?,
            None => TimeZone::system(),
        };
        Ok(Schedule { at: digest.at, tz })
    }

    /// The instant `day`'s digest falls due: `at` on the day after, in the
    /// schedule's zone (see the module's note on DST changes).
    pub fn due_at(&self, day: Date) -> Timestamp {
        let next = day.tomorrow().unwrap_or(day);
        // jiff's `compatible`: a time in a gap moves forward by the gap's
        // length, a time in a fold is the earlier one.
        next.to_datetime(self.at)
            .to_zoned(self.tz.clone())
            .map(|z| z.timestamp())
            .unwrap_or_else(|_| next.to_zoned(self.tz.clone()).map(|z| z.timestamp()).unwrap_or(Timestamp::MAX))
    }

    /// The latest day whose digest is due at `now`.
    pub(crate) fn latest_due(&self, now: Timestamp) -> Date {
        let today = Zoned::new(now, self.tz.clone()).date();
        let yesterday = today.yesterday().unwrap_or(today);
        match now >= self.due_at(yesterday) {
            true => yesterday,
            false => yesterday.yesterday().unwrap_or(yesterday),
        }
    }

    /// What is due at `now` when `last_sent` is the last day whose digest
    /// was sent (None: never).
    pub(crate) fn due(&self, now: Timestamp, last_sent: Option<Date>) -> Due {
        let latest = self.latest_due(now);
        let Some(last) = last_sent else { return Due::Baseline(latest) };
        if last >= latest {
            return Due::Nothing;
        }
        let mut missed = Vec::new();
        let mut total = 0;
        let mut day = last.tomorrow().unwrap_or(latest);
        while day < latest {
            total += 1;
            if missed.len() < MISSED_NAMED {
                missed.push(day);
            }
            day = day.tomorrow().unwrap_or(latest);
        }
        Due::Send { day: latest, missed, missed_total: total }
    }

    /// When the next digest falls due after `last_sent` (what the daemon
    /// sleeps until when nothing is due now).
    pub(crate) fn next_after(&self, last_sent: Date) -> Timestamp {
        self.due_at(last_sent.tomorrow().unwrap_or(last_sent))
    }
}

#[cfg(test)]
mod tests;
