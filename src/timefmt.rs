//! Time in and out of walwatch: RFC 3339 output with an explicit offset,
//! `--since/--until` input (RFC 3339, a date, or a duration back from now),
//! and durations as the config file and the CLI write them ("500ms", "2m",
//! "7d"): one parser and one formatter for both.

use std::time::Duration;

use jiff::{civil::Date, tz::TimeZone, SignedDuration, Timestamp};
use serde::Serializer;

/// RFC 3339 in UTC with an explicit offset and milliseconds, e.g. `2026-11-22T08:04:23.497+00:00`.
pub fn rfc3339(t: Timestamp) -> String {
    written(t, jiff::tz::Offset::UTC, 'T', "")
}

/// `t` at `offset` to the millisecond: the date, `between`, the time,
/// `before_offset`, the offset (`+01:00`). Written field by field:
/// strftime reads its format string again for every value, 10 % of a CSV
/// listing of a year of checkpoints.
fn written(t: Timestamp, offset: jiff::tz::Offset, between: char, before_offset: &str) -> String {
    use std::fmt::Write;
    let d = offset.to_datetime(t);
    let secs = offset.seconds();
    let (sign, secs) = if secs < 0 { ('-', -secs) } else { ('+', secs) };
    let mut out = String::with_capacity(30);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}{between}{:02}:{:02}:{:02}.{:03}{before_offset}{sign}{:02}:{:02}",
        d.year(),
        d.month(),
        d.day(),
        d.hour(),
        d.minute(),
        d.second(),
        d.millisecond(),
        secs / 3600,
        secs % 3600 / 60
    );
    out
}

/// The zone tables print times in: the system's by default, UTC with
/// `--utc`. Set once before the command runs, like `-q`; unset (a unit
/// test) it is the system's too.
static TABLE_ZONE: std::sync::OnceLock<TimeZone> = std::sync::OnceLock::new();

/// `--utc` or not: called once, before the command runs.
pub(crate) fn set_table_zone(utc: bool) {
    let _ = TABLE_ZONE.set(if utc { TimeZone::UTC } else { system_zone() });
}

/// The system's time zone (TZ, else /etc/localtime); UTC, said once on
/// stderr, when it cannot be found.
pub(crate) fn system_zone() -> TimeZone {
    TimeZone::try_system().unwrap_or_else(|e| {
        tracing::warn!("the system's time zone is unknown ({e}): times are shown in UTC");
        TimeZone::UTC
    })
}

/// The zone tables print times in ([`set_table_zone`]).
pub(crate) fn table_zone() -> &'static TimeZone {
    TABLE_ZONE.get_or_init(system_zone)
}

/// A time as a table shows it: in the table zone, to the millisecond
/// (PostgreSQL's `%m`), with its offset, e.g. `2026-11-22 09:04:23.497 +01:00`.
pub(crate) fn table_time(t: Timestamp) -> String {
    table_time_in(t, table_zone())
}

/// [`table_time`] in `tz`.
pub(crate) fn table_time_in(t: Timestamp, tz: &TimeZone) -> String {
    written(t, tz.to_offset(t), ' ', " ")
}

pub(crate) fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

pub(crate) fn serialize_opt<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// Parses a `--since`/`--until` value relative to `now`.
pub(crate) fn parse_when(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let text = text.trim();
    if let Ok(t) = text.parse::<Timestamp>() {
        return Ok(t);
    }
    if let Ok(d) = text.parse::<Date>() {
        return d.to_zoned(TimeZone::UTC).map(|z| z.timestamp()).map_err(|e| e.to_string());
    }
    if let Ok(back) = parse_duration(text) {
        let back = SignedDuration::try_from(back).map_err(|e| e.to_string())?;
        return now.checked_sub(back).map_err(|e| e.to_string());
    }
    Err(format!("cannot read time {text:?}: use RFC 3339 (2026-11-22T08:00:00Z), a date (2026-11-22) or a duration (90m, 24h, 7d)"))
}

/// A positive duration in jiff's friendly format ("500ms", "1s", "2m",
/// "1h", "1m30s", "1.5s", "7d" with 24-hour days); the error is the message
/// shown to the user.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let hint = "write a number and a unit, e.g. \"500ms\", \"1s\", \"2m\" or \"7d\"";
    let parsed = text.parse::<SignedDuration>().ok().or_else(|| days(text));
    let parsed = parsed.ok_or_else(|| format!("invalid duration {text:?}: {hint}"))?;
    match Duration::try_from(parsed) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("duration {text:?} must be positive: {hint}")),
    }
}

/// Lookback windows are naturally written in days, which SignedDuration
/// does not accept; a calendar-free day is 24 hours here.
fn days(text: &str) -> Option<SignedDuration> {
    let span: jiff::Span = text.parse().ok()?;
    span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()).ok()
}

/// "1s", "500ms", "1m 30s": the same notation as the file.
pub(crate) fn format_duration(d: Duration) -> String {
    SignedDuration::try_from(d).map_or_else(|_| format!("{d:?}"), |s| format!("{s:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_offset() {
        let t: Timestamp = "2026-11-22T08:04:23.497Z".parse().unwrap();
        assert_eq!(rfc3339(t), "2026-11-22T08:04:23.497+00:00");
    }

    /// The same text as jiff's strftime, before the epoch (where a
    /// fraction is not a truncation) and at the calendar's ends included.
    #[test]
    fn equals_strftime_across_the_range() {
        let (lo, hi) =
            (Timestamp::from_second(-62_135_596_800).unwrap(), Timestamp::from_second(253_402_128_000).unwrap());
        let span = hi.as_microsecond() - lo.as_microsecond();
        for i in 0..=10_000i64 {
            let us = lo.as_microsecond() + span / 10_000 * i + (i * 7_919_993) % 1_000_000;
            let t = Timestamp::from_microsecond(us.min(hi.as_microsecond())).unwrap();
            assert_eq!(rfc3339(t), t.strftime("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string(), "{us}");
        }
        let before_epoch = Timestamp::from_microsecond(-1).unwrap();
        assert_eq!(rfc3339(before_epoch), "1969-12-31T23:59:59.999+00:00");
    }

    /// A table's time is the local wall clock with the offset that held
    /// then: either side of a DST change, half-hour and negative offsets.
    #[test]
    fn table_times_are_local_with_their_offset() {
        let t = |s: &str| s.parse::<Timestamp>().unwrap();
        let tz = |name: &str| TimeZone::get(name).unwrap();
        let berlin = tz("Europe/Berlin");
        assert_eq!(table_time_in(t("2026-03-29T00:59:59.999Z"), &berlin), "2026-03-29 01:59:59.999 +01:00");
        assert_eq!(table_time_in(t("2026-03-29T01:00:00Z"), &berlin), "2026-03-29 03:00:00.000 +02:00");
        assert_eq!(table_time_in(t("2026-11-22T08:04:23.497Z"), &tz("Asia/Kolkata")), "2026-11-22 13:34:23.497 +05:30");
        assert_eq!(
            table_time_in(t("2026-11-22T02:00:00.004Z"), &tz("America/St_Johns")),
            "2026-11-21 22:30:00.004 -03:30"
        );
        assert_eq!(table_time_in(t("2026-11-22T08:04:23.497Z"), &TimeZone::UTC), "2026-11-22 08:04:23.497 +00:00");
    }

    #[test]
    fn reads_all_three_forms() {
        let now: Timestamp = "2026-11-22T12:00:00Z".parse().unwrap();
        assert_eq!(parse_when("2026-11-22T10:00:00+02:00", now).unwrap().to_string(), "2026-11-22T08:00:00Z");
        assert_eq!(parse_when("2026-11-21", now).unwrap().to_string(), "2026-11-21T00:00:00Z");
        assert_eq!(parse_when("24h", now).unwrap().to_string(), "2026-11-21T12:00:00Z");
        assert_eq!(parse_when("7d", now).unwrap().to_string(), "2026-11-15T12:00:00Z");
        assert!(parse_when("yesterday", now).is_err());
        assert!(parse_when("99999999999999999d", now).is_err());
        assert_eq!(parse_when("2w", now).unwrap().to_string(), "2026-11-08T12:00:00Z");
        assert_eq!(parse_when("90min", now).unwrap().to_string(), "2026-11-22T10:30:00Z");
    }

    #[test]
    fn parses_units_and_rejects_bare_numbers_and_non_positive() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("1d 12h"), Ok(Duration::from_secs(36 * 3600)));
        for bad in ["1", "1x", "", "0s", "-1s", "1mo", "1y"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert!(parse_duration("1").unwrap_err().contains("\"500ms\""));
    }

    #[test]
    fn formats_like_the_file() {
        assert_eq!(format_duration(Duration::from_secs(1)), "1s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(90)), "1m 30s");
    }
}
