//! Calendar buckets of `walwatch history`: hours, days, ISO weeks (from
//! Monday) or months, in a time zone. A bucket is a span of local calendar
//! time, so a day on which daylight saving time starts is 23 hours long and
//! one on which it ends 25; the repeated hour of an autumn night is two
//! hour buckets (one per offset), the skipped hour of a spring night none.

use jiff::{civil::Date, tz::TimeZone, SignedDuration, Timestamp, ToSpan, Zoned};
use thiserror::Error;

/// How wide a bucket is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    Hour,
    Day,
    Week,
    Month,
}

/// One bucket: `[start, end)`, both in the report's time zone.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bucket {
    pub(crate) start: Zoned,
    pub(crate) end: Zoned,
}

/// More buckets than any screen or script wants: a year by hour is 8 760.
pub(crate) const MAX_BUCKETS: usize = 100_000;

#[derive(Debug, Error)]
pub enum BucketError {
    #[error("the range {from} to {to} holds more than {MAX_BUCKETS} buckets: use a larger --by or a shorter range")]
    TooMany { from: String, to: String },
    #[error("time out of the calendar's range: {0}")]
    Calendar(#[from] jiff::Error),
}

/// The start of the bucket holding `t`.
pub(crate) fn floor(t: Timestamp, by: By, tz: &TimeZone) -> Result<Zoned, BucketError> {
    let z = t.to_zoned(tz.clone());
    Ok(match by {
        // Minutes and seconds off, keeping the offset in force at `t`: in a
        // repeated hour the two occurrences stay apart, and an hour is
        // always 60 minutes long.
        By::Hour => {
            let into = SignedDuration::from_secs(i64::from(z.minute()) * 60 + i64::from(z.second()))
                + SignedDuration::from_nanos(i64::from(z.subsec_nanosecond()));
            t.checked_sub(into)?.to_zoned(tz.clone())
        }
        By::Day => z.start_of_day()?,
        By::Week => day_start(z.date() - i64::from(z.weekday().to_monday_zero_offset()).days(), tz)?,
        By::Month => day_start(z.date().first_of_month(), tz)?,
    })
}

/// The start of the bucket after the one starting at `start`.
pub(crate) fn next(start: &Zoned, by: By) -> Result<Zoned, BucketError> {
    let tz = start.time_zone();
    Ok(match by {
        By::Hour => start.timestamp().checked_add(SignedDuration::from_hours(1))?.to_zoned(tz.clone()),
        By::Day => day_start(start.date().tomorrow()?, tz)?,
        By::Week => day_start(start.date().checked_add(1.week())?, tz)?,
        By::Month => day_start(start.date().checked_add(1.month())?, tz)?,
    })
}

/// The start of the bucket `n` buckets before the one starting at `start`
/// (`--compare`: the previous period of as many buckets).
pub(crate) fn back(start: &Zoned, by: By, n: usize) -> Result<Zoned, BucketError> {
    let tz = start.time_zone();
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    Ok(match by {
        By::Hour => start.timestamp().checked_sub(SignedDuration::from_hours(n))?.to_zoned(tz.clone()),
        By::Day => day_start(start.date().checked_sub(n.days())?, tz)?,
        By::Week => day_start(start.date().checked_sub(n.weeks())?, tz)?,
        By::Month => day_start(start.date().checked_sub(n.months())?, tz)?,
    })
}

/// Local midnight, or the first instant of the day where midnight is skipped.
fn day_start(d: Date, tz: &TimeZone) -> Result<Zoned, jiff::Error> {
    d.to_zoned(tz.clone())?.start_of_day()
}

/// The buckets covering `[from, to)`: the first holds `from`, the last
/// holds the instant before `to`. `from == to` gives the one bucket holding it.
pub(crate) fn cover(from: Timestamp, to: Timestamp, by: By, tz: &TimeZone) -> Result<Vec<Bucket>, BucketError> {
    let mut start = floor(from, by, tz)?;
    let mut out = Vec::new();
    loop {
        let end = next(&start, by)?;
        out.push(Bucket { start, end: end.clone() });
        if end.timestamp() >= to {
            return Ok(out);
        }
        if out.len() >= MAX_BUCKETS {
            let text = |t: Timestamp| crate::timefmt::rfc3339(t);
            return Err(BucketError::TooMany { from: text(from), to: text(to) });
        }
        start = end;
    }
}

/// RFC 3339 with the zone's offset at that instant, e.g. `2026-03-29T03:00:00+02:00`.
pub(crate) fn rfc3339_local(z: &Zoned) -> String {
    z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn berlin() -> TimeZone {
        TimeZone::get("Europe/Berlin").unwrap()
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn texts(b: &[Bucket]) -> Vec<(String, String)> {
        b.iter().map(|b| (rfc3339_local(&b.start), rfc3339_local(&b.end))).collect()
    }

    fn hours(b: &Bucket) -> f64 {
        b.start.timestamp().duration_until(b.end.timestamp()).as_secs_f64() / 3600.0
    }

    #[test]
    fn the_spring_day_in_berlin_is_23_hours_and_the_autumn_day_25() {
        let days = cover(at("2026-03-28T12:00:00Z"), at("2026-03-30T12:00:00Z"), By::Day, &berlin()).unwrap();
        assert_eq!(
            texts(&days),
            [
                ("2026-03-28T00:00:00+01:00".into(), "2026-03-29T00:00:00+01:00".into()),
                ("2026-03-29T00:00:00+01:00".into(), "2026-03-30T00:00:00+02:00".into()),
                ("2026-03-30T00:00:00+02:00".into(), "2026-03-31T00:00:00+02:00".into()),
            ]
        );
        assert_eq!(days.iter().map(hours).collect::<Vec<_>>(), [24.0, 23.0, 24.0]);
        let autumn = cover(at("2026-10-25T01:30:00Z"), at("2026-10-25T01:30:00Z"), By::Day, &berlin()).unwrap();
        assert_eq!(texts(&autumn), [("2026-10-25T00:00:00+02:00".into(), "2026-10-26T00:00:00+01:00".into())]);
        assert_eq!(hours(&autumn[0]), 25.0);
    }

    #[test]
    fn hours_skip_the_missing_hour_and_repeat_the_doubled_one() {
        // 2026-03-29 in Berlin: 02:00 local does not exist.
        let spring = cover(at("2026-03-29T00:00:00Z"), at("2026-03-29T02:30:00Z"), By::Hour, &berlin()).unwrap();
        assert_eq!(
            spring.iter().map(|b| rfc3339_local(&b.start)).collect::<Vec<_>>(),
            ["2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"]
        );
        // 2026-10-25: 02:00-03:00 local happens twice.
        let autumn = cover(at("2026-10-25T00:00:00Z"), at("2026-10-25T02:30:00Z"), By::Hour, &berlin()).unwrap();
        assert_eq!(
            autumn.iter().map(|b| rfc3339_local(&b.start)).collect::<Vec<_>>(),
            ["2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"]
        );
        assert!(spring.iter().chain(&autumn).all(|b| hours(b) == 1.0));
        // An instant in the second 02:xx belongs to the second bucket.
        assert_eq!(
            rfc3339_local(&floor(at("2026-10-25T01:59:59Z"), By::Hour, &berlin()).unwrap()),
            "2026-10-25T02:00:00+01:00"
        );
    }

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first() {
        let ny = TimeZone::get("America/New_York").unwrap();
        // Sunday 2026-03-08 is New York's spring change: that week is 167 hours.
        let week = floor(at("2026-03-10T12:00:00Z"), By::Week, &ny).unwrap();
        assert_eq!(rfc3339_local(&week), "2026-03-09T00:00:00-04:00");
        let before = floor(at("2026-03-08T12:00:00Z"), By::Week, &ny).unwrap();
        assert_eq!(rfc3339_local(&before), "2026-03-02T00:00:00-05:00");
        let b = Bucket { end: next(&before, By::Week).unwrap(), start: before };
        assert_eq!(hours(&b), 167.0);
        let month = floor(at("2026-03-31T23:00:00Z"), By::Month, &berlin()).unwrap();
        assert_eq!(rfc3339_local(&month), "2026-04-01T00:00:00+02:00");
        assert_eq!(rfc3339_local(&next(&month, By::Month).unwrap()), "2026-05-01T00:00:00+02:00");
        assert_eq!(rfc3339_local(&back(&month, By::Month, 2).unwrap()), "2026-02-01T00:00:00+01:00");
    }

    #[test]
    fn a_range_ending_on_a_boundary_does_not_add_a_bucket() {
        let days = cover(at("2026-11-22T00:00:00Z"), at("2026-11-24T00:00:00Z"), By::Day, &TimeZone::UTC).unwrap();
        assert_eq!(days.len(), 2);
        assert!(cover(Timestamp::MIN, Timestamp::MAX, By::Hour, &TimeZone::UTC).is_err());
    }
}
