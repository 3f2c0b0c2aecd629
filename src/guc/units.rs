//! Values as PostgreSQL reads them (`parse_int`, `parse_real`, `parse_bool`
//! and the enum lookup in guc.c), per setting and per major version.
//!
//! What depends on the version (PostgreSQL source, guc.c / guc_tables.c):
//! - max_wal_size and min_wal_size are counted in WAL segments in 9.6
//!   (GUC_UNIT_XSEGS, so a bare `64` is 64 × 16 MB = 1 GB) and in MB from 10;
//! - wal_segment_size is counted in 8 kB WAL blocks up to 10 and in bytes from 11;
//! - the unit `B` exists from 11, `us` from 12;
//! - from 12 an integer setting accepts a fraction ("1.5GB") and the result is
//!   rounded to the base unit; before 12 only integers, truncated on conversion.
//!
//! Units are case-sensitive ("kB", not "KB"), as in PostgreSQL; whitespace may
//! separate the number and the unit.

/// The newest major version walwatch knows; an unknown version reads as this one.
pub(crate) const NEWEST: u32 = 18;

const KB: f64 = 1024.0;
const MB: f64 = 1024.0 * 1024.0;
/// BLCKSZ and XLOG_BLCKSZ of every packaged build.
const PAGE: f64 = 8192.0;
/// The WAL segment size of 9.6 when nothing else is known (XLOG_SEG_SIZE).
pub(crate) const DEFAULT_SEGMENT_BYTES: f64 = 16.0 * MB;

/// How a setting's text is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ValueKind {
    /// An integer amount of memory; `base` is the size in bytes of one unit
    /// of a bare number.
    Memory {
        base: f64,
    },
    /// An integer time; `base` is one unit of a bare number in seconds.
    Time {
        base: f64,
    },
    /// An integer that takes no unit (commit_delay: µs; wal_keep_segments: segments).
    Integer,
    /// A floating-point number without unit (checkpoint_completion_target).
    Real,
    Bool,
    /// One of these words, case-insensitive, no abbreviation.
    Enum(&'static [&'static str]),
}

/// synchronous_commit's accepted values (the hidden boolean spellings included).
pub(crate) const SYNCHRONOUS_COMMIT: &[&str] =
    &["local", "remote_write", "remote_apply", "on", "off", "true", "false", "yes", "no", "1", "0"];

/// A value read in its setting's unit, converted to a normal unit.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Bytes(f64),
    Seconds(f64),
    Integer(i64),
    Number(f64),
    Flag(bool),
    /// An enum value, lower-case.
    Word(String),
}

/// How `name` is read by major version `version` (None: the newest).
/// `segment_bytes` is the WAL segment size, the unit of max/min_wal_size in 9.6.
pub(crate) fn kind(name: &str, version: Option<u32>, segment_bytes: f64) -> Option<ValueKind> {
    let v = version.unwrap_or(NEWEST);
    Some(match name {
        "max_wal_size" | "min_wal_size" if v < 10 => ValueKind::Memory { base: segment_bytes },
        "max_wal_size" | "min_wal_size" | "wal_keep_size" => ValueKind::Memory { base: MB },
        "wal_segment_size" if v < 11 => ValueKind::Memory { base: PAGE },
        "wal_segment_size" => ValueKind::Memory { base: 1.0 },
        "checkpoint_flush_after" | "backend_flush_after" => ValueKind::Memory { base: PAGE },
        "checkpoint_timeout" | "checkpoint_warning" => ValueKind::Time { base: 1.0 },
        // "we have no microseconds designation, so can't supply units here" (guc.c)
        "commit_delay" | "wal_keep_segments" => ValueKind::Integer,
        "checkpoint_completion_target" => ValueKind::Real,
        "fsync" | "full_page_writes" => ValueKind::Bool,
        "synchronous_commit" => ValueKind::Enum(SYNCHRONOUS_COMMIT),
        _ => return None,
    })
}

/// Reads `text` as PostgreSQL `version` reads setting `name`.
pub fn parse(name: &str, text: &str, version: Option<u32>) -> Result<Parsed, String> {
    parse_with_segment(name, text, version, DEFAULT_SEGMENT_BYTES)
}

/// [`parse`] with a known WAL segment size (matters for 9.6's segment counts).
pub(crate) fn parse_with_segment(
    name: &str,
    text: &str,
    version: Option<u32>,
    segment_bytes: f64,
) -> Result<Parsed, String> {
    let kind =
        kind(name, version, segment_bytes).ok_or_else(|| format!("walwatch does not know the setting {name:?}"))?;
    let v = version.unwrap_or(NEWEST);
    match kind {
        ValueKind::Memory { base } => amount(text, v, base, &memory_units(v)).map(|units| Parsed::Bytes(units * base)),
        ValueKind::Time { base } => amount(text, v, base, &time_units(v)).map(|units| Parsed::Seconds(units * base)),
        ValueKind::Integer => amount(text, v, 1.0, &[]).map(|n| Parsed::Integer(n as i64)),
        ValueKind::Real => real(text).map(Parsed::Number),
        ValueKind::Bool => boolean(text)
            .map(Parsed::Flag)
            .ok_or_else(|| format!("{text:?} is not a boolean (on, off, true, false, yes, no, 1, 0)")),
        ValueKind::Enum(words) => {
            let lower = text.to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(Parsed::Word(lower))
            } else {
                Err(format!("{text:?} is not one of {}", words.join(", ")))
            }
        }
    }
}

/// A size in MB as SHOW spells it: "1GB" for whole gigabytes, else "1280MB".
pub(crate) fn size_text(mb: u64) -> String {
    if mb >= 1024 && mb.is_multiple_of(1024) {
        format!("{}GB", mb / 1024)
    } else {
        format!("{mb}MB")
    }
}

/// A time in seconds as SHOW spells it, in the largest unit that divides
/// it: "30s", "5min", "1h", "1d".
pub(crate) fn time_text(seconds: u64) -> String {
    match seconds {
        s if s > 0 && s.is_multiple_of(86_400) => format!("{}d", s / 86_400),
        s if s > 0 && s.is_multiple_of(3600) => format!("{}h", s / 3600),
        s if s > 0 && s.is_multiple_of(60) => format!("{}min", s / 60),
        s => format!("{s}s"),
    }
}

/// Like [`parse`], and within the range PostgreSQL accepts (for walwatch's own config).
pub(crate) fn parse_checked(name: &str, text: &str, version: Option<u32>) -> Result<Parsed, String> {
    let parsed = parse(name, text, version)?;
    in_range(name, &parsed).map(|()| parsed)
}

/// The ranges of guc_tables.c, in normal units.
fn in_range(name: &str, parsed: &Parsed) -> Result<(), String> {
    let (lo, hi, unit) = match name {
        "checkpoint_timeout" => (30.0, 86_400.0, "s"),
        "checkpoint_warning" => (0.0, i32::MAX as f64, "s"),
        "checkpoint_completion_target" => (0.0, 1.0, ""),
        "max_wal_size" | "min_wal_size" => (2.0 * MB, f64::MAX, "bytes"),
        "wal_keep_size" => (0.0, f64::MAX, "bytes"),
        "commit_delay" => (0.0, 100_000.0, "µs"),
        // WRITEBACK_MAX_PENDING_FLUSHES pages
        "checkpoint_flush_after" | "backend_flush_after" => (0.0, 256.0 * PAGE, "bytes"),
        "wal_segment_size" => {
            let ok =
                matches!(parsed, Parsed::Bytes(b) if *b >= MB && *b <= 1024.0 * MB && (*b as u64).is_power_of_two());
            return if ok { Ok(()) } else { Err("wal_segment_size is a power of two from 1MB to 1GB".into()) };
        }
        _ => return Ok(()),
    };
    let x = match parsed {
        Parsed::Bytes(x) | Parsed::Seconds(x) | Parsed::Number(x) => *x,
        Parsed::Integer(n) => *n as f64,
        Parsed::Flag(_) | Parsed::Word(_) => return Ok(()),
    };
    if x < lo || x > hi {
        let hi = if hi == f64::MAX { "no limit".to_string() } else { format!("{hi}") };
        return Err(format!("{name} must be between {lo} and {hi} {unit}").trim_end().to_string());
    }
    Ok(())
}

/// (unit, size in bytes)
fn memory_units(v: u32) -> Vec<(&'static str, f64)> {
    let mut units = vec![("kB", KB), ("MB", MB), ("GB", 1024.0 * MB), ("TB", 1024.0 * 1024.0 * MB)];
    if v >= 11 {
        units.push(("B", 1.0));
    }
    units
}

/// (unit, length in seconds)
fn time_units(v: u32) -> Vec<(&'static str, f64)> {
    let mut units = vec![("ms", 0.001), ("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86_400.0)];
    if v >= 12 {
        units.push(("us", 0.000_001));
    }
    units
}

/// An integer setting: a number, optional whitespace, an optional unit from
/// `units` (each with its size in the same measure as `base`); the result is
/// the count of base units, rounded (12+) or truncated (before 12) as PostgreSQL does.
fn amount(text: &str, v: u32, base: f64, units: &[(&str, f64)]) -> Result<f64, String> {
    let (number, rest) = leading_number(text, v >= 12).ok_or_else(|| format!("{text:?} is not a number"))?;
    let unit = rest.trim_start();
    if unit.is_empty() {
        return Ok(integral(number, v));
    }
    if units.is_empty() {
        return Err(format!("{text:?}: this setting takes no unit"));
    }
    let unit = unit.trim_end();
    let Some((_, size)) = units.iter().find(|(u, _)| *u == unit) else {
        let names: Vec<&str> = units.iter().map(|(u, _)| *u).collect();
        return Err(format!("{text:?}: unknown unit {unit:?}, valid units are {}", names.join(", ")));
    };
    Ok(integral(number * size / base, v))
}

fn integral(x: f64, v: u32) -> f64 {
    if v >= 12 {
        x.round_ties_even()
    } else {
        x.trunc()
    }
}

/// strtol(…, 0) (decimal, 0x hex, 0 octal), and from 12 a fraction or
/// exponent as strtod reads it. Returns the number and the rest of the text.
fn leading_number(text: &str, fractions: bool) -> Option<(f64, &str)> {
    let s = text.trim_start();
    let b = s.as_bytes();
    let mut i = 0;
    let negative = matches!(b.first(), Some(b'-'));
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let sign = if negative { -1.0 } else { 1.0 };
    if b.len() > i + 2 && b[i] == b'0' && matches!(b[i + 1], b'x' | b'X') && b[i + 2].is_ascii_hexdigit() {
        let end = i + 2 + b[i + 2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let n = u64::from_str_radix(&s[i + 2..end], 16).ok()? as f64;
        return Some((sign * n, &s[end..]));
    }
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int_end = i + digits;
    let fraction_follows = matches!(b.get(int_end), Some(b'.' | b'e' | b'E'));
    if fractions && fraction_follows {
        let end = float_end(b, i)?;
        let n: f64 = s[..end].parse().ok()?;
        return n.is_finite().then_some((n, &s[end..]));
    }
    if digits == 0 {
        return None;
    }
    let int = &s[i..int_end];
    // strtol base 0: a leading 0 means octal, and reading stops at 8 or 9.
    if int.len() > 1 && int.starts_with('0') {
        let octal = int.bytes().take_while(|c| (b'0'..=b'7').contains(c)).count();
        let n = u64::from_str_radix(&int[..octal], 8).ok()? as f64;
        return Some((sign * n, &s[i + octal..]));
    }
    let n: f64 = int.parse().ok()?;
    Some((sign * n, &s[int_end..]))
}

/// The end of `digits* [. digits*] [e sign? digits+]` from `i`, if any digit.
fn float_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut seen = digits(i);
    i += seen;
    if b.get(i) == Some(&b'.') {
        let d = digits(i + 1);
        seen += d;
        i += 1 + d;
    }
    if seen == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let d = digits(j);
        if d > 0 {
            i = j + d;
        }
    }
    Some(i)
}

/// parse_real: a finite floating-point number, nothing after it but spaces.
fn real(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    let whole = float_end(unsigned.as_bytes(), 0) == Some(unsigned.len());
    whole.then(|| t.parse::<f64>().ok()).flatten().ok_or_else(|| format!("{text:?} is not a number"))
}

/// parse_bool: true/false/yes/no by any prefix, on, off (or "of"), 1, 0;
/// case-insensitive; whitespace around is not allowed.
pub(crate) fn boolean(text: &str) -> Option<bool> {
    let t = text.to_ascii_lowercase();
    let prefix_of = |word: &str| !t.is_empty() && word.starts_with(t.as_str());
    match t.as_bytes().first()? {
        b't' if prefix_of("true") => Some(true),
        b'f' if prefix_of("false") => Some(false),
        b'y' if prefix_of("yes") => Some(true),
        b'n' if prefix_of("no") => Some(false),
        // "o" alone is ambiguous: PostgreSQL compares at least 2 characters.
        b'o' if t == "on" => Some(true),
        b'o' if t == "of" || t == "off" => Some(false),
        b'1' if t == "1" => Some(true),
        b'0' if t == "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(name: &str, text: &str, v: u32) -> f64 {
        match parse(name, text, Some(v)).unwrap() {
            Parsed::Bytes(b) => b,
            other => panic!("{other:?}"),
        }
    }
    fn secs(name: &str, text: &str, v: u32) -> f64 {
        match parse(name, text, Some(v)).unwrap() {
            Parsed::Seconds(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn memory_with_and_without_units() {
        assert_eq!(bytes("max_wal_size", "1GB", 15), 1024.0 * MB);
        assert_eq!(bytes("max_wal_size", "1024MB", 15), 1024.0 * MB);
        assert_eq!(bytes("max_wal_size", "1024 MB", 15), 1024.0 * MB);
        assert_eq!(bytes("max_wal_size", "64", 15), 64.0 * MB);
        assert_eq!(bytes("max_wal_size", "0x40", 15), 64.0 * MB);
        assert_eq!(bytes("max_wal_size", "010", 15), 8.0 * MB, "strtol base 0: octal");
        // 9.6 counts max_wal_size in segments
        assert_eq!(bytes("max_wal_size", "64", 9), 1024.0 * MB);
        assert_eq!(bytes("min_wal_size", "5", 9), 80.0 * MB);
        assert_eq!(bytes("max_wal_size", "64", 10), 64.0 * MB);
        assert_eq!(bytes("max_wal_size", "1GB", 9), 1024.0 * MB);
        // 100MB is 6.25 segments: 9.6 truncates to 6
        assert_eq!(bytes("max_wal_size", "100MB", 9), 96.0 * MB);
        assert_eq!(bytes("wal_segment_size", "2048", 10), 16.0 * MB);
        assert_eq!(bytes("wal_segment_size", "16777216", 11), 16.0 * MB);
        assert_eq!(bytes("checkpoint_flush_after", "32", 15), 256.0 * KB);
        assert_eq!(bytes("checkpoint_flush_after", "256kB", 15), 256.0 * KB);
        assert_eq!(bytes("wal_keep_size", "0", 15), 0.0);
    }

    #[test]
    fn fractions_and_rounding_depend_on_the_version() {
        assert_eq!(bytes("max_wal_size", "1.5GB", 15), 1536.0 * MB);
        assert!(parse("max_wal_size", "1.5GB", Some(11)).is_err(), "fractions are 12+");
        // 1500kB = 1.46 MB: rounded from 12, truncated before
        assert_eq!(bytes("max_wal_size", "1500kB", 15), MB);
        assert_eq!(bytes("max_wal_size", "1600kB", 15), 2.0 * MB);
        assert_eq!(bytes("max_wal_size", "1600kB", 11), MB);
        assert_eq!(bytes("max_wal_size", "10B", 11), 0.0);
        assert!(parse("max_wal_size", "10B", Some(10)).is_err(), "B is 11+");
    }

    #[test]
    fn units_are_case_sensitive_and_checked() {
        assert!(parse("max_wal_size", "1gb", Some(15)).is_err());
        assert!(parse("max_wal_size", "1KB", Some(15)).is_err());
        assert!(parse("max_wal_size", "1GB x", Some(15)).is_err());
        assert!(parse("max_wal_size", "GB", Some(15)).is_err());
        assert!(parse("max_wal_size", "", Some(15)).is_err());
        assert!(parse("checkpoint_timeout", "5 mins", Some(15)).is_err());
        let e = parse("commit_delay", "10ms", Some(15)).unwrap_err();
        assert!(e.contains("takes no unit"), "{e}");
    }

    #[test]
    fn sizes_and_times_are_spelled_as_show_prints_them() {
        assert_eq!(size_text(32), "32MB");
        assert_eq!(size_text(1024), "1GB");
        assert_eq!(size_text(1280), "1280MB");
        assert_eq!(size_text(5120), "5GB");
        assert_eq!(time_text(30), "30s");
        assert_eq!(time_text(90), "90s");
        assert_eq!(time_text(300), "5min");
        assert_eq!(time_text(5400), "90min");
        assert_eq!(time_text(3600), "1h");
        assert_eq!(time_text(86_400), "1d");
        assert_eq!(time_text(0), "0s");
        for s in [30, 45, 300, 3600, 7200, 86_400] {
            assert_eq!(secs("checkpoint_timeout", &time_text(s), 15), s as f64);
        }
    }

    #[test]
    fn times() {
        assert_eq!(secs("checkpoint_timeout", "5min", 15), 300.0);
        assert_eq!(secs("checkpoint_timeout", "30s", 15), 30.0);
        assert_eq!(secs("checkpoint_timeout", "1h", 15), 3600.0);
        assert_eq!(secs("checkpoint_timeout", "1d", 15), 86_400.0);
        assert_eq!(secs("checkpoint_timeout", "300", 15), 300.0);
        // the base unit is seconds: 250ms rounds to 0 s, 1500ms to 2 s (12+) or 1 s (before)
        assert_eq!(secs("checkpoint_warning", "250ms", 15), 0.0);
        assert_eq!(secs("checkpoint_warning", "1500ms", 15), 2.0);
        assert_eq!(secs("checkpoint_warning", "1500ms", 11), 1.0);
        assert_eq!(secs("checkpoint_warning", "1500000us", 15), 2.0);
        assert!(parse("checkpoint_warning", "10us", Some(11)).is_err(), "us is 12+");
        assert_eq!(parse("commit_delay", "1000", Some(15)).unwrap(), Parsed::Integer(1000));
    }

    #[test]
    fn reals() {
        assert_eq!(parse("checkpoint_completion_target", "0.9", None).unwrap(), Parsed::Number(0.9));
        assert_eq!(parse("checkpoint_completion_target", ".5", None).unwrap(), Parsed::Number(0.5));
        assert_eq!(parse("checkpoint_completion_target", "1", None).unwrap(), Parsed::Number(1.0));
        assert_eq!(parse("checkpoint_completion_target", "9e-1", None).unwrap(), Parsed::Number(0.9));
        for bad in ["", "x", "0.9x", "nan", "inf", "0.9 0.1"] {
            assert!(parse("checkpoint_completion_target", bad, None).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn booleans_take_postgresql_spellings_and_prefixes() {
        for t in ["on", "ON", "true", "t", "tr", "yes", "y", "1", "True"] {
            assert_eq!(boolean(t), Some(true), "{t}");
        }
        for f in ["off", "of", "OFF", "false", "f", "fa", "no", "n", "0"] {
            assert_eq!(boolean(f), Some(false), "{f}");
        }
        for bad in ["o", "", "onn", "offf", "2", "truex", " on", "yess", "00"] {
            assert_eq!(boolean(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn synchronous_commit_is_an_enum() {
        assert_eq!(parse("synchronous_commit", "Remote_Apply", None).unwrap(), Parsed::Word("remote_apply".into()));
        assert!(parse("synchronous_commit", "remote", None).is_err(), "enums take no abbreviation");
    }

    #[test]
    fn ranges() {
        assert!(parse_checked("checkpoint_timeout", "15min", None).is_ok());
        assert!(parse_checked("checkpoint_timeout", "10s", None).is_err());
        assert!(parse_checked("checkpoint_completion_target", "1.5", None).is_err());
        assert!(parse_checked("wal_segment_size", "64MB", None).is_ok());
        assert!(parse_checked("wal_segment_size", "48MB", None).is_err());
        assert!(parse_checked("max_wal_size", "1MB", None).is_err());
        assert!(parse_checked("commit_delay", "100001", None).is_err());
    }
}
