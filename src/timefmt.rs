//! Time in and out of the CLI: RFC 3339 output with an explicit offset, and
//! `--since/--until` input (RFC 3339, a date, or a duration back from now).

use jiff::{civil::Date, tz::TimeZone, Span, Timestamp};
use serde::Serializer;

/// RFC 3339 in UTC with an explicit offset and milliseconds, e.g. `2026-11-22T08:04:23.497+00:00`.
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string()
}

pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

pub fn serialize_opt<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// Parses a `--since`/`--until` value relative to `now`.
pub fn parse_when(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let text = text.trim();
    if let Ok(t) = text.parse::<Timestamp>() {
        return Ok(t);
    }
    if let Ok(d) = text.parse::<Date>() {
        return d.to_zoned(TimeZone::UTC).map(|z| z.timestamp()).map_err(|e| e.to_string());
    }
    if let Some(span) = parse_duration(text) {
        return now.checked_sub(span).map_err(|e| e.to_string());
    }
    Err(format!("cannot read time {text:?}: use RFC 3339 (2026-11-22T08:00:00Z), a date (2026-11-22) or a duration (90m, 24h, 7d)"))
}

/// `30s`, `90m`, `24h`, `7d`, `2w` (days are 24 h).
fn parse_duration(text: &str) -> Option<Span> {
    let unit_at = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(unit_at);
    let n: i64 = n.parse().ok()?;
    let seconds = match unit {
        "s" => n,
        "m" | "min" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        "d" => n.checked_mul(86_400)?,
        "w" => n.checked_mul(7 * 86_400)?,
        _ => return None,
    };
    Span::new().try_seconds(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_offset() {
        let t: Timestamp = "2026-11-22T08:04:23.497Z".parse().unwrap();
        assert_eq!(rfc3339(t), "2026-11-22T08:04:23.497+00:00");
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
    }
}
