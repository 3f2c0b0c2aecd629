//! Durations are written as strings with units ("500ms", "1s", "2m",
//! "1m30s"), never bare numbers, so that a value's unit is never guessed.

use std::time::Duration;

use jiff::SignedDuration;

/// A positive duration in jiff's friendly format ("500ms", "1s", "2m",
/// "1h", "1m30s", "1.5s", "7d" with 24-hour days); the error is the message
/// shown to the user.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
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
pub fn format_duration(d: Duration) -> String {
    SignedDuration::try_from(d).map_or_else(|_| format!("{d:?}"), |s| format!("{s:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
