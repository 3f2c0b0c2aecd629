//! Log timestamps to UTC.
//!
//! PostgreSQL writes `%t`/`%m`/`%s` (and the csvlog/jsonlog timestamp) as
//! `YYYY-MM-DD HH:MM:SS[.mmm] ZONE`, where `ZONE` is the abbreviation of
//! `log_timezone` at that instant (`pg_strftime("%Z")`): letters such as `CET`,
//! or a numeric one such as `-03` / `+0530` for zones without a letter
//! abbreviation. Abbreviations are not unique, so the exact interpretation
//! needs the server's `log_timezone` (`--timezone`). Without it a static table
//! of common abbreviations is used, and ambiguous ones produce a warning.

use std::cell::{Cell, RefCell};

use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

/// Why a timestamp could not be turned into an instant.
#[derive(Debug, thiserror::Error)]
pub enum TimeError {
    /// `--timezone` named a zone that is not in the time zone database.
    #[error("unknown time zone {name:?} (expected an IANA name such as \"Europe/Berlin\", the server's log_timezone): {source}")]
    UnknownTimeZone {
        name: String,
        #[source]
        source: jiff::Error,
    },
    /// The text is not a PostgreSQL timestamp.
    #[error("malformed timestamp {text:?}: {reason}")]
    Malformed { text: String, reason: &'static str },
    /// A letter abbreviation that is not in the built-in table and no
    /// `--timezone` was given.
    #[error(
        "unknown time zone abbreviation {abbr:?} in timestamp {text:?}; pass the server's \
         log_timezone (the value of `SHOW log_timezone;`) with --timezone, e.g. --timezone Europe/Berlin"
    )]
    UnknownAbbreviation { abbr: String, text: String },
}

/// One entry of the static abbreviation table.
struct Abbr {
    name: &'static str,
    /// The offset (seconds east of UTC) used when no `--timezone` is given.
    secs: i32,
    /// Other offsets the abbreviation is used for (ambiguous ones only).
    others: &'static [i32],
    /// For ambiguous abbreviations: what it may mean, and what is assumed.
    ambiguity: Option<(&'static str, &'static str)>,
}

const fn a(name: &'static str, secs: i32) -> Abbr {
    Abbr { name, secs, others: &[], ambiguity: None }
}

const fn amb(
    name: &'static str,
    secs: i32,
    others: &'static [i32],
    meanings: &'static str,
    assumed: &'static str,
) -> Abbr {
    Abbr { name, secs, others, ambiguity: Some((meanings, assumed)) }
}

const H: i32 = 3600;
const M: i32 = 60;

/// Common abbreviations as printed by PostgreSQL's copy of tzdata.
/// Ordered roughly by how often they are seen, so the common case is found early.
static ABBREVIATIONS: &[Abbr] = &[
    a("UTC", 0),
    a("GMT", 0),
    a("CET", H),
    a("CEST", 2 * H),
    a("EST", -5 * H),
    a("EDT", -4 * H),
    amb("CST", -6 * H, &[8 * H, -5 * H], "US Central, China or Cuba", "US Central Standard Time"),
    a("CDT", -5 * H),
    a("PST", -8 * H),
    a("PDT", -7 * H),
    a("MST", -7 * H),
    a("MDT", -6 * H),
    amb("IST", 5 * H + 30 * M, &[2 * H, H], "India, Israel or Ireland", "India Standard Time"),
    amb("BST", H, &[6 * H, 11 * H], "British Summer Time, Bangladesh or Bougainville", "British Summer Time"),
    a("JST", 9 * H),
    a("KST", 9 * H),
    a("EET", 2 * H),
    a("EEST", 3 * H),
    a("WET", 0),
    a("WEST", H),
    a("MSK", 3 * H),
    a("AEST", 10 * H),
    a("AEDT", 11 * H),
    a("ACST", 9 * H + 30 * M),
    a("ACDT", 10 * H + 30 * M),
    a("AWST", 8 * H),
    a("ACWST", 8 * H + 45 * M),
    a("NZST", 12 * H),
    a("NZDT", 13 * H),
    a("AKST", -9 * H),
    a("AKDT", -8 * H),
    a("HST", -10 * H),
    a("HDT", -9 * H),
    amb("AST", -4 * H, &[3 * H], "Atlantic or Arabia", "Atlantic Standard Time"),
    a("ADT", -3 * H),
    a("NST", -(3 * H + 30 * M)),
    a("NDT", -(2 * H + 30 * M)),
    a("SGT", 8 * H),
    a("HKT", 8 * H),
    a("PKT", 5 * H),
    a("WIB", 7 * H),
    a("WITA", 8 * H),
    a("WIT", 9 * H),
    a("IDT", 3 * H),
    a("SAST", 2 * H),
    a("CAT", 2 * H),
    a("EAT", 3 * H),
    a("WAT", H),
    a("MET", H),
    a("MEST", 2 * H),
    a("ChST", 10 * H),
    a("SST", -11 * H),
    a("UT", 0),
    a("Z", 0),
];

/// Upper bound of remembered "does not fit --timezone" abbreviations, so a
/// hostile file cannot grow the state without bound.
const MAX_REMEMBERED: usize = 64;

/// Converts PostgreSQL timestamps to UTC instants. Not `Sync` (warnings use
/// interior mutability); create one per reader.
#[derive(Debug)]
pub struct TimeContext {
    tz: Option<TimeZone>,
    tz_name: String,
    warnings: RefCell<Vec<String>>,
    /// Bit i set: the ambiguity warning for `ABBREVIATIONS[i]` was issued.
    warned_ambiguous: Cell<u128>,
    /// Abbreviations already reported as not fitting `tz`.
    warned_mismatch: RefCell<Vec<Box<str>>>,
    /// What the log itself says of its zone, used for an ambiguous
    /// abbreviation before the table's usual meaning (see [`Evidence`]).
    evidence: RefCell<Evidence>,
    /// Parse without the ambiguity warning (a line whose own text may still
    /// settle its zone: a reload that sets log_timezone).
    quiet: Cell<bool>,
}

/// Evidence in the log of what its zone abbreviations mean, without
/// `--timezone`: the log_timezone a reload set (`parameter "log_timezone"
/// changed to "Asia/Shanghai"`, written by the postmaster in the new
/// zone), and whether the server writes Chinese (its severity words are
/// `日志`/`日誌`: `CST` is then China's or Taiwan's standard time, UTC+08:00).
#[derive(Debug, Default)]
struct Evidence {
    /// The zone, its name, and where walwatch learned it (for the note).
    zone: Option<(TimeZone, String, String)>,
    chinese: bool,
    /// The notes already given (each once).
    noted: Vec<String>,
}

/// The pieces of a timestamp text.
struct Split<'a> {
    dt: DateTime,
    zone: &'a str,
}

impl TimeContext {
    /// `tz`: an IANA name (the server's log_timezone), e.g. "Europe/Berlin";
    /// None (or an empty string) when unknown.
    pub fn new(tz: Option<&str>) -> Result<Self, TimeError> {
        let name = tz.map(str::trim).filter(|s| !s.is_empty());
        let zone = match name {
            None => None,
            Some(n) => {
                Some(TimeZone::get(n).map_err(|source| TimeError::UnknownTimeZone { name: n.to_string(), source })?)
            }
        };
        Ok(TimeContext {
            tz: zone,
            tz_name: name.unwrap_or_default().to_string(),
            warnings: RefCell::new(Vec::new()),
            warned_ambiguous: Cell::new(0),
            warned_mismatch: RefCell::new(Vec::new()),
            evidence: RefCell::new(Evidence::default()),
            quiet: Cell::new(false),
        })
    }

    /// The log set its log_timezone to `name` (a reload's `parameter
    /// "log_timezone" changed to …` that the trust checks took as the
    /// postmaster's): the lines after it are in that zone. Ignored when
    /// `--timezone` was given or the name is not a known zone.
    pub(crate) fn learn_zone(&self, name: &str) -> bool {
        let whence =
            format!("the log_timezone the log itself set (`parameter \"log_timezone\" changed to \"{name}\"`)");
        self.learn_zone_from(name, whence)
    }

    /// The server's conf file `path` sets log_timezone to `name` (initdb
    /// writes the machine's zone there): the log's lines are in that zone
    /// until the log itself says otherwise ([`TimeContext::learn_zone`]).
    pub(crate) fn learn_zone_from_conf(&self, name: &str, path: &std::path::Path) -> bool {
        self.learn_zone_from(name, format!("the log_timezone {} sets", path.display()))
    }

    fn learn_zone_from(&self, name: &str, whence: String) -> bool {
        if self.tz.is_some() {
            return false;
        }
        match TimeZone::get(name) {
            Ok(tz) => {
                self.evidence.borrow_mut().zone = Some((tz, name.to_string(), whence));
                true
            }
            Err(_) => false,
        }
    }

    /// A line's severity word (`LOG:`, `日志:`), as its marker reads: a
    /// Chinese one makes `CST` China's (or Taiwan's) standard time.
    pub(crate) fn learn_language(&self, marker: &str) {
        let word = marker.trim_end().trim_end_matches([':', '\u{ff1a}']);
        let han = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
        if !word.is_empty() && word.chars().all(han) {
            self.evidence.borrow_mut().chinese = true;
        }
    }

    /// A server process's message in Chinese (Han characters, and no kana
    /// or hangul, which Japanese and Korean write): the same evidence as a
    /// Chinese severity word, for formats that leave the severity
    /// untranslated (jsonlog). Call it only for text the server wrote.
    pub(crate) fn learn_text_language(&self, text: &str) {
        let han = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
        let kana_or_hangul = |c: char| ('\u{3040}'..='\u{30ff}').contains(&c) || ('\u{ac00}'..='\u{d7af}').contains(&c);
        if text.chars().any(han) && !text.chars().any(kana_or_hangul) {
            self.evidence.borrow_mut().chinese = true;
        }
    }

    /// [`TimeContext::parse`] without the ambiguity warning.
    pub(crate) fn parse_quietly(&self, text: &str) -> Result<Timestamp, TimeError> {
        self.quiet.set(true);
        let parsed = self.parse(text);
        self.quiet.set(false);
        parsed
    }

    /// An ambiguous abbreviation read by the log's own evidence, if it has some.
    fn by_evidence(&self, dt: DateTime, zone: &str, text: &str) -> Option<Timestamp> {
        let mut evidence = self.evidence.borrow_mut();
        let (ts, note) = match &evidence.zone {
            Some((tz, name, whence)) => match reading_in_zone(tz, dt, zone, text) {
                Some(ts) => (ts, format!("time zone abbreviation \"{zone}\" read in {name}, {whence}")),
                None => return None,
            },
            None if evidence.chinese && zone == "CST" => (
                at_offset(offset_from_secs(8 * H), dt, text).ok()?,
                "time zone abbreviation \"CST\" read as China Standard Time (UTC+08:00): the server writes its \
                 messages in Chinese"
                    .to_string(),
            ),
            None => return None,
        };
        if !self.quiet.get() && !evidence.noted.contains(&note) {
            evidence.noted.push(note.clone());
            self.warnings.borrow_mut().push(note);
        }
        Some(ts)
    }

    /// Parse PostgreSQL's `%t` / `%m` / `%s` output and the csvlog/jsonlog
    /// timestamp, e.g. "2026-11-22 08:04:20.708 UTC", "2026-11-22 10:00:00 -03",
    /// "2026-11-22 13:53:00.123 +05:30".
    pub(crate) fn parse(&self, text: &str) -> Result<Timestamp, TimeError> {
        let split = split(text).map_err(|reason| malformed(text, reason))?;
        let zone = split.zone;
        let first = zone.as_bytes()[0];
        if first == b'+' || first == b'-' {
            let offset = parse_numeric_offset(zone).map_err(|reason| malformed(text, reason))?;
            return at_offset(offset, split.dt, text);
        }
        if !zone.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(malformed(text, "time zone is neither an abbreviation nor a numeric offset"));
        }
        match &self.tz {
            Some(tz) => self.resolve_in_zone(tz, split.dt, zone, text),
            None => self.resolve_by_table(split.dt, zone, text),
        }
    }

    /// `%n`: seconds since the epoch with milliseconds, e.g. "1763798660.708".
    pub(crate) fn parse_epoch(text: &str) -> Result<Timestamp, TimeError> {
        let t = text.trim();
        let (secs, frac) = match t.find('.') {
            Some(i) => (&t[..i], Some(&t[i + 1..])),
            None => (t, None),
        };
        if secs.is_empty() || secs.len() > 12 || !secs.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed(text, "expected seconds since the epoch such as 1763798660.708"));
        }
        let mut s: i64 = 0;
        for b in secs.bytes() {
            s = s * 10 + i64::from(b - b'0');
        }
        let nanos = match frac {
            None => 0,
            Some(f) => parse_fraction(f.as_bytes())
                .ok_or_else(|| malformed(text, "expected 1 to 9 digits after the decimal point"))?,
        };
        Timestamp::new(s, nanos).map_err(|_| malformed(text, "instant out of range"))
    }

    /// Human-readable warnings collected so far (each distinct one only once
    /// over the lifetime of this context). Drains the list.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.borrow_mut())
    }

    /// No `--timezone`: look the abbreviation up in the static table.
    fn resolve_by_table(&self, dt: DateTime, zone: &str, text: &str) -> Result<Timestamp, TimeError> {
        let Some((idx, entry)) = lookup(zone) else {
            return Err(TimeError::UnknownAbbreviation {
                abbr: truncate(zone, 32).to_string(),
                text: truncate(text, 64).to_string(),
            });
        };
        if let Some((meanings, assumed)) = entry.ambiguity {
            if let Some(ts) = self.by_evidence(dt, zone, text) {
                return Ok(ts);
            }
            let bit = 1u128 << idx;
            let warned = self.warned_ambiguous.get();
            if warned & bit == 0 && !self.quiet.get() {
                self.warned_ambiguous.set(warned | bit);
                self.warnings.borrow_mut().push(format!(
                    "time zone abbreviation \"{}\" is ambiguous ({meanings}); assuming {assumed} \
                     (UTC{}). Pass the server's log_timezone (the value of `SHOW log_timezone;`) \
                     with --timezone to interpret it exactly",
                    entry.name,
                    fmt_offset(entry.secs)
                ));
            }
        }
        at_offset(offset_from_secs(entry.secs), dt, text)
    }

    /// `--timezone` given: the local time in that zone, with the abbreviation
    /// choosing the side of a DST fold.
    fn resolve_in_zone(&self, tz: &TimeZone, dt: DateTime, zone: &str, text: &str) -> Result<Timestamp, TimeError> {
        if let Some(ts) = reading_in_zone(tz, dt, zone, text) {
            return Ok(ts);
        }
        let amb = tz.to_ambiguous_timestamp(dt);
        let known = lookup(zone).map(|(_, e)| e);
        // 3. The abbreviation does not fit the zone at all: --timezone is
        //    probably not the server's log_timezone.
        let (ts, action) = match known {
            Some(entry) => (
                at_offset(offset_from_secs(entry.secs), dt, text)?,
                format!("using its usual meaning UTC{}", fmt_offset(entry.secs)),
            ),
            None => (
                amb.compatible().map_err(|_| malformed(text, "instant out of range"))?,
                format!("interpreting the time in {}", self.tz_name),
            ),
        };
        self.warn_mismatch(zone, text, &action);
        Ok(ts)
    }

    fn warn_mismatch(&self, zone: &str, text: &str, action: &str) {
        let mut seen = self.warned_mismatch.borrow_mut();
        if seen.iter().any(|s| &**s == zone) || seen.len() >= MAX_REMEMBERED {
            return;
        }
        seen.push(zone.into());
        self.warnings.borrow_mut().push(format!(
            "time zone abbreviation \"{}\" (e.g. in \"{}\") does not fit --timezone {}; {action}. \
             Check that --timezone is the server's log_timezone (`SHOW log_timezone;`)",
            truncate(zone, 32),
            truncate(text, 64),
            self.tz_name
        ));
    }
}

/// `dt` with abbreviation `zone` read in `tz`: the reading whose
/// abbreviation is the one printed (the side of a fold it names), else one
/// whose offset the abbreviation is known to stand for (the tzdata of the
/// server and of this machine may spell it differently); None when it does
/// not fit the zone at all.
fn reading_in_zone(tz: &TimeZone, dt: DateTime, zone: &str, text: &str) -> Option<Timestamp> {
    let amb = tz.to_ambiguous_timestamp(dt);
    let candidates = match amb.offset() {
        AmbiguousOffset::Unambiguous { offset } => [Some(offset), None],
        AmbiguousOffset::Gap { before, after } | AmbiguousOffset::Fold { before, after } => [Some(before), Some(after)],
    };
    for offset in candidates.into_iter().flatten() {
        let Ok(ts) = offset.to_timestamp(dt) else {
            continue;
        };
        let info = tz.to_offset_info(ts);
        if info.offset() == offset && info.abbreviation().eq_ignore_ascii_case(zone) {
            return Some(ts);
        }
    }
    let entry = lookup(zone).map(|(_, e)| e)?;
    candidates
        .into_iter()
        .flatten()
        .find(|o| o.seconds() == entry.secs || entry.others.contains(&o.seconds()))
        .and_then(|o| at_offset(o, dt, text).ok())
}

fn lookup(zone: &str) -> Option<(usize, &'static Abbr)> {
    ABBREVIATIONS.iter().enumerate().find(|(_, e)| e.name.eq_ignore_ascii_case(zone))
}

fn malformed(text: &str, reason: &'static str) -> TimeError {
    TimeError::Malformed { text: truncate(text, 64).to_string(), reason }
}

/// At most `max` bytes of `s`, cut at a char boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn offset_from_secs(secs: i32) -> Offset {
    // All table values are far inside jiff's offset range.
    Offset::from_seconds(secs).unwrap_or(Offset::UTC)
}

fn at_offset(offset: Offset, dt: DateTime, text: &str) -> Result<Timestamp, TimeError> {
    offset.to_timestamp(dt).map_err(|_| malformed(text, "instant out of range"))
}

fn fmt_offset(secs: i32) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.unsigned_abs();
    format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i32> {
    let s = b.get(at..at + n)?;
    let mut v = 0i32;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i32::from(c - b'0');
    }
    Some(v)
}

/// Nanoseconds from 1 to 9 fraction digits.
fn parse_fraction(f: &[u8]) -> Option<i32> {
    if f.is_empty() || f.len() > 9 || !f.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v = 0i32;
    for &c in f {
        v = v * 10 + i32::from(c - b'0');
    }
    for _ in f.len()..9 {
        v *= 10;
    }
    Some(v)
}

/// `YYYY-MM-DD HH:MM:SS[.f{1,9}] ZONE` (also `T` as separator, zone glued on).
fn split(text: &str) -> Result<Split<'_>, &'static str> {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let b = t.as_bytes();
    const SHAPE: &str = "expected YYYY-MM-DD HH:MM:SS[.mmm] ZONE";
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b' ' && b[10] != b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(SHAPE);
    }
    let (y, mo, d, h, mi, s) =
        match (digits(b, 0, 4), digits(b, 5, 2), digits(b, 8, 2), digits(b, 11, 2), digits(b, 14, 2), digits(b, 17, 2))
        {
            (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(s)) => (y, mo, d, h, mi, s),
            _ => return Err(SHAPE),
        };
    let mut i = 19;
    let mut nanos = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        nanos = parse_fraction(&b[start..end]).ok_or("expected 1 to 9 digits of fractional seconds")?;
        i = end;
    }
    if b.get(i) == Some(&b' ') {
        i += 1;
    }
    let zone = &t[i..];
    if zone.is_empty() {
        return Err("time zone missing");
    }
    // Every value fits the narrower types after the 2-digit checks above.
    let dt = DateTime::new(y as i16, mo as i8, d as i8, h as i8, mi as i8, s as i8, nanos)
        .map_err(|_| "invalid date or time of day")?;
    Ok(Split { dt, zone })
}

/// `+HH`, `-HH`, `+HHMM`, `+HH:MM`, `+HHMMSS`, `+HH:MM:SS`.
fn parse_numeric_offset(zone: &str) -> Result<Offset, &'static str> {
    const BAD: &str = "numeric time zone must look like -03, +0530 or +05:30";
    let b = zone.as_bytes();
    let sign = match b.first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return Err(BAD),
    };
    let rest = &b[1..];
    let (h, m, s) = match rest.len() {
        2 => (digits(rest, 0, 2), Some(0), Some(0)),
        4 => (digits(rest, 0, 2), digits(rest, 2, 2), Some(0)),
        5 if rest[2] == b':' => (digits(rest, 0, 2), digits(rest, 3, 2), Some(0)),
        6 => (digits(rest, 0, 2), digits(rest, 2, 2), digits(rest, 4, 2)),
        8 if rest[2] == b':' && rest[5] == b':' => (digits(rest, 0, 2), digits(rest, 3, 2), digits(rest, 6, 2)),
        _ => return Err(BAD),
    };
    let (Some(h), Some(m), Some(s)) = (h, m, s) else {
        return Err(BAD);
    };
    if m > 59 || s > 59 {
        return Err(BAD);
    }
    Offset::from_seconds(sign * (h * 3600 + m * 60 + s)).map_err(|_| "numeric time zone out of range")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn utc(ctx: &TimeContext, text: &str) -> String {
        ctx.parse(text).unwrap().to_string()
    }

    #[test]
    fn utc_and_fraction() {
        let c = TimeContext::new(None).unwrap();
        assert_eq!(utc(&c, "2026-11-22 08:04:20.708 UTC"), "2026-11-22T08:04:20.708Z");
        assert_eq!(utc(&c, "2026-11-22 08:04:20 UTC"), "2026-11-22T08:04:20Z");
        assert_eq!(utc(&c, "2026-11-22 08:04:20 GMT"), "2026-11-22T08:04:20Z");
        assert_eq!(utc(&c, "2026-11-22 08:04:20.123456 UTC"), "2026-11-22T08:04:20.123456Z");
        assert_eq!(utc(&c, "2026-11-22T08:04:20.5Z"), "2026-11-22T08:04:20.5Z");
        assert_eq!(utc(&c, "2026-11-22 08:04:20.123456789 UTC"), "2026-11-22T08:04:20.123456789Z");
        assert!(c.take_warnings().is_empty());
    }

    #[test]
    fn table_abbreviations() {
        let c = TimeContext::new(None).unwrap();
        assert_eq!(utc(&c, "2026-11-22 03:04:20 EST"), "2026-11-22T08:04:20Z");
        assert_eq!(utc(&c, "2026-07-22 04:04:20 EDT"), "2026-07-22T08:04:20Z");
        assert_eq!(utc(&c, "2026-11-22 09:09:04.893 CET"), "2026-11-22T08:09:04.893Z");
        assert_eq!(utc(&c, "2026-07-22 10:09:04.893 CEST"), "2026-07-22T08:09:04.893Z");
        assert_eq!(utc(&c, "2026-11-22 17:09:04.910 JST"), "2026-11-22T08:09:04.91Z");
        assert_eq!(utc(&c, "2026-11-22 18:30:00 ACDT"), "2026-11-22T08:00:00Z");
        assert_eq!(utc(&c, "2026-11-22 08:00:00 ChST"), "2026-11-21T22:00:00Z");
        assert!(c.take_warnings().is_empty());
    }

    #[test]
    fn numeric_zones() {
        let c = TimeContext::new(None).unwrap();
        assert_eq!(utc(&c, "2026-11-22 10:00:00 -03"), "2026-11-22T13:00:00Z");
        assert_eq!(utc(&c, "2026-11-22 13:30:00 +0530"), "2026-11-22T08:00:00Z");
        assert_eq!(utc(&c, "2026-11-22 13:30:00.250 +05:30"), "2026-11-22T08:00:00.25Z");
        assert_eq!(utc(&c, "2026-11-22 13:45:00 +0545"), "2026-11-22T08:00:00Z");
        assert_eq!(utc(&c, "2026-11-22 08:00:00 +00"), "2026-11-22T08:00:00Z");
        assert_eq!(utc(&c, "2026-11-22 08:00:00+00"), "2026-11-22T08:00:00Z");
        // Numeric offsets are exact even with a --timezone that says otherwise.
        let b = TimeContext::new(Some("Europe/Berlin")).unwrap();
        assert_eq!(utc(&b, "2026-11-22 10:00:00 -03"), "2026-11-22T13:00:00Z");
        assert!(b.take_warnings().is_empty());
        // Offsets with seconds (tzdata's historic ones, such as Amsterdam's +00:19:32).
        assert_eq!(utc(&c, "1936-11-22 08:19:32 +001932"), "1936-11-22T08:00:00Z");
        assert_eq!(utc(&c, "1936-11-22 08:19:32 +00:19:32"), "1936-11-22T08:00:00Z");
        assert_eq!(utc(&c, "2026-11-22 13:59:59 +05:59:59"), "2026-11-22T08:00:00Z");
        for bad in ["+05-30", "+05:30-00", "+05-30:00", "+05-30-00", "+05:30:60", "+05:60:00", "+0560"] {
            let e = c.parse(&format!("2026-11-22 10:00:00 {bad}")).unwrap_err();
            assert!(e.to_string().contains("numeric time zone must look like"), "{bad}: {e}");
        }
        assert!(c.parse("2026-11-22 10:00:00 +3").is_err());
        assert!(c.parse("2026-11-22 10:00:00 +05:61").is_err());
        assert!(c.parse("2026-11-22 10:00:00 +99").is_err());
    }

    #[test]
    fn ambiguous_warns_once() {
        let c = TimeContext::new(None).unwrap();
        assert_eq!(utc(&c, "2026-11-22 13:53:00.123 IST"), "2026-11-22T08:23:00.123Z");
        assert_eq!(utc(&c, "2026-11-22 13:54:00 IST"), "2026-11-22T08:24:00Z");
        let w = c.take_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("\"IST\"") && w[0].contains("--timezone"), "{}", w[0]);
        // CST: US Central by default.
        assert_eq!(utc(&c, "2026-11-22 02:00:00 CST"), "2026-11-22T08:00:00Z");
        assert_eq!(c.take_warnings().len(), 1);
        // Already reported: no repeat after draining either.
        c.parse("2026-11-22 13:55:00 IST").unwrap();
        c.parse("2026-11-22 02:00:00 CST").unwrap();
        assert!(c.take_warnings().is_empty());
    }

    /// The log's own evidence settles CST before the table's US Central:
    /// a log_timezone the log set, else Chinese severity words; never
    /// over an explicit --timezone, and never a word of another script.
    #[test]
    fn the_logs_evidence_reads_cst() {
        let c = TimeContext::new(None).unwrap();
        c.learn_language("LOG:");
        c.learn_language("ログ:");
        assert_eq!(utc(&c, "2026-11-29 03:22:50.746 CST"), "2026-11-29T09:22:50.746Z");
        assert!(c.take_warnings()[0].contains("assuming US Central"));
        c.learn_language("日志:");
        assert_eq!(utc(&c, "2026-11-29 03:22:50.746 CST"), "2026-11-28T19:22:50.746Z");
        assert_eq!(c.take_warnings().len(), 1, "said once");
        c.parse("2026-11-29 03:22:51 CST").unwrap();
        assert!(c.take_warnings().is_empty());

        let z = TimeContext::new(None).unwrap();
        assert!(!z.learn_zone("Not/AZone"));
        assert!(z.learn_zone("Asia/Shanghai"));
        assert_eq!(utc(&z, "2026-11-29 03:22:50 CST"), "2026-11-28T19:22:50Z");
        assert!(z.take_warnings()[0].contains("read in Asia/Shanghai"));
        // An abbreviation the learnt zone does not use keeps its own meaning.
        assert_eq!(utc(&z, "2026-11-29 03:22:50 IST"), "2026-11-28T21:52:50Z");

        let told = TimeContext::new(Some("America/Chicago")).unwrap();
        assert!(!told.learn_zone("Asia/Shanghai"));
        told.learn_language("日志:");
        assert_eq!(utc(&told, "2026-11-29 03:22:50 CST"), "2026-11-29T09:22:50Z");
    }

    #[test]
    fn unknown_abbreviation() {
        let c = TimeContext::new(None).unwrap();
        let e = c.parse("2026-11-22 08:00:00 XYZT").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("XYZT") && msg.contains("--timezone"), "{msg}");
        assert!(matches!(e, TimeError::UnknownAbbreviation { .. }));
        // With the right zone it is resolved through tzdata instead.
        let k = TimeContext::new(Some("Asia/Kolkata")).unwrap();
        assert_eq!(utc(&k, "2026-11-22 13:53:00.123 IST"), "2026-11-22T08:23:00.123Z");
        assert!(k.take_warnings().is_empty());
    }

    /// Every abbreviation of the table means what PostgreSQL's tzdata means
    /// by it: the same instant as the numeric offset it stands for.
    #[test]
    fn every_abbreviation_has_its_offset() {
        let c = TimeContext::new(None).unwrap();
        let meanings = [
            ("UTC", "+00"),
            ("GMT", "+00"),
            ("CET", "+01"),
            ("CEST", "+02"),
            ("EST", "-05"),
            ("EDT", "-04"),
            ("CST", "-06"),
            ("CDT", "-05"),
            ("PST", "-08"),
            ("PDT", "-07"),
            ("MST", "-07"),
            ("MDT", "-06"),
            ("IST", "+05:30"),
            ("BST", "+01"),
            ("JST", "+09"),
            ("KST", "+09"),
            ("EET", "+02"),
            ("EEST", "+03"),
            ("WET", "+00"),
            ("WEST", "+01"),
            ("MSK", "+03"),
            ("AEST", "+10"),
            ("AEDT", "+11"),
            ("ACST", "+09:30"),
            ("ACDT", "+10:30"),
            ("AWST", "+08"),
            ("ACWST", "+08:45"),
            ("NZST", "+12"),
            ("NZDT", "+13"),
            ("AKST", "-09"),
            ("AKDT", "-08"),
            ("HST", "-10"),
            ("HDT", "-09"),
            ("AST", "-04"),
            ("ADT", "-03"),
            ("NST", "-03:30"),
            ("NDT", "-02:30"),
            ("SGT", "+08"),
            ("HKT", "+08"),
            ("PKT", "+05"),
            ("WIB", "+07"),
            ("WITA", "+08"),
            ("WIT", "+09"),
            ("IDT", "+03"),
            ("SAST", "+02"),
            ("CAT", "+02"),
            ("EAT", "+03"),
            ("WAT", "+01"),
            ("MET", "+01"),
            ("MEST", "+02"),
            ("ChST", "+10"),
            ("SST", "-11"),
            ("UT", "+00"),
            ("Z", "+00"),
        ];
        assert_eq!(meanings.len(), ABBREVIATIONS.len());
        for (abbr, offset) in meanings {
            let local = "2026-11-22 08:04:20.708";
            assert_eq!(
                c.parse(&format!("{local} {abbr}")).unwrap(),
                c.parse(&format!("{local} {offset}")).unwrap(),
                "{abbr}"
            );
        }
        let w = c.take_warnings();
        assert_eq!(w.len(), 4, "CST, IST, BST and AST are ambiguous: {w:?}");
        assert!(w[0].contains("\"CST\"") && w[0].contains("(UTC-06:00)"), "{}", w[0]);
        assert!(w[1].contains("\"IST\"") && w[1].contains("(UTC+05:30)"), "{}", w[1]);
    }

    /// A server whose older tzdata still spelled a zone with letters, read
    /// with this machine's tzdata that spells it with digits (tzdata 2017a):
    /// the abbreviation's other meanings are accepted, without a warning.
    #[test]
    fn another_meaning_of_an_abbreviation_fits_the_zone() {
        for (zone, text, expected) in [
            ("Pacific/Bougainville", "2026-11-22 19:04:20.708 BST", "2026-11-22T08:04:20.708Z"),
            ("Asia/Dhaka", "2026-11-22 14:04:20.708 BST", "2026-11-22T08:04:20.708Z"),
            ("Asia/Riyadh", "2026-11-22 11:04:20.708 AST", "2026-11-22T08:04:20.708Z"),
            ("Asia/Colombo", "2026-11-22 13:34:20.708 IST", "2026-11-22T08:04:20.708Z"),
        ] {
            let c = TimeContext::new(Some(zone)).unwrap();
            assert_eq!(utc(&c, text), expected, "{zone}");
            assert_eq!(c.take_warnings(), Vec::<String>::new(), "{zone}");
        }
    }

    #[test]
    fn table_fits_bitmask() {
        // `warned_ambiguous` is a u128 bitmask over the table.
        assert!(ABBREVIATIONS.len() <= 128);
        for (i, e) in ABBREVIATIONS.iter().enumerate() {
            assert_eq!(lookup(e.name).unwrap().0, i, "duplicate {}", e.name);
            assert!(e.name.bytes().all(|b| b.is_ascii_alphabetic()));
            assert!(Offset::from_seconds(e.secs).is_ok());
        }
    }

    #[test]
    fn bad_timezone_name() {
        let e = TimeContext::new(Some("Mars/Olympus_Mons")).unwrap_err();
        assert!(e.to_string().contains("Mars/Olympus_Mons"));
        assert!(TimeContext::new(Some("")).unwrap().tz.is_none());
    }

    #[test]
    fn berlin_fold() {
        let c = TimeContext::new(Some("Europe/Berlin")).unwrap();
        // 2026-10-25 02:30 happens twice: first in CEST (+02), then in CET (+01).
        assert_eq!(c.parse("2026-10-25 02:30:00.000 CEST").unwrap(), ts("2026-10-25T00:30:00Z"));
        assert_eq!(c.parse("2026-10-25 02:30:00.000 CET").unwrap(), ts("2026-10-25T01:30:00Z"));
        assert_eq!(c.parse("2026-11-22 09:09:04.893 CET").unwrap(), ts("2026-11-22T08:09:04.893Z"));
        assert_eq!(c.parse("2026-07-01 10:00:00 CEST").unwrap(), ts("2026-07-01T08:00:00Z"));
        assert!(c.take_warnings().is_empty());
    }

    #[test]
    fn new_york() {
        let c = TimeContext::new(Some("America/New_York")).unwrap();
        assert_eq!(utc(&c, "2026-11-22 03:04:20 EST"), "2026-11-22T08:04:20Z");
        assert_eq!(utc(&c, "2026-07-22 04:04:20 EDT"), "2026-07-22T08:04:20Z");
        // 2026-11-01 01:30 is repeated (EDT, then EST).
        assert_eq!(utc(&c, "2026-11-01 01:30:00 EDT"), "2026-11-01T05:30:00Z");
        assert_eq!(utc(&c, "2026-11-01 01:30:00 EST"), "2026-11-01T06:30:00Z");
        assert!(c.take_warnings().is_empty());
    }

    #[test]
    fn mismatch_with_timezone() {
        let c = TimeContext::new(Some("Europe/Berlin")).unwrap();
        // A known abbreviation that does not fit: its own meaning wins, with a warning.
        assert_eq!(utc(&c, "2026-11-22 08:04:20 UTC"), "2026-11-22T08:04:20Z");
        assert_eq!(utc(&c, "2026-11-22 08:04:21 UTC"), "2026-11-22T08:04:21Z");
        let w = c.take_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("\"UTC\"") && w[0].contains("Europe/Berlin"), "{}", w[0]);
        assert!(w[0].contains("using its usual meaning UTC+00:00"), "{}", w[0]);
        // Unknown abbreviation: interpreted in the zone, with a warning.
        assert_eq!(utc(&c, "2026-11-22 09:00:00 FOO"), "2026-11-22T08:00:00Z");
        assert_eq!(c.take_warnings().len(), 1);
        // Summer abbreviation in winter: taken literally.
        assert_eq!(utc(&c, "2026-11-22 10:00:00 CEST"), "2026-11-22T08:00:00Z");
        let w = c.take_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("using its usual meaning UTC+02:00"), "{}", w[0]);
        // Spelling drift between tzdata versions: same offset, no warning.
        let s = TimeContext::new(Some("Asia/Singapore")).unwrap();
        assert_eq!(utc(&s, "2026-11-22 16:00:00 SGT"), "2026-11-22T08:00:00Z");
        assert_eq!(utc(&s, "2026-11-22 16:00:00 +08"), "2026-11-22T08:00:00Z");
        assert!(s.take_warnings().is_empty());
    }

    #[test]
    fn gap_time() {
        // 2026-03-29 02:30 does not exist in Berlin; the abbreviation decides.
        let c = TimeContext::new(Some("Europe/Berlin")).unwrap();
        assert_eq!(utc(&c, "2026-03-29 02:30:00 CET"), "2026-03-29T01:30:00Z");
        assert_eq!(utc(&c, "2026-03-29 02:30:00 CEST"), "2026-03-29T00:30:00Z");
    }

    #[test]
    fn epoch() {
        assert_eq!(TimeContext::parse_epoch("1763798660.708").unwrap().to_string(), "2025-11-22T08:04:20.708Z");
        assert_eq!(TimeContext::parse_epoch("0").unwrap(), Timestamp::UNIX_EPOCH);
        // Twelve digits: up to the last instant jiff knows (Timestamp::MAX).
        assert_eq!(TimeContext::parse_epoch("253402207200.999").unwrap().to_string(), "9999-12-30T22:00:00.999Z");
        assert!(TimeContext::parse_epoch("253402207201").is_err(), "out of range");
        // Longer is refused before it is read (twenty digits overflow an i64).
        assert!(TimeContext::parse_epoch("12345678901234567890.708").is_err());
        for bad in ["", ".", "1.", "-1.000", "abc", "1763798660.7081234567", "99999999999999.000", "1.2.3", "１.０"] {
            assert!(TimeContext::parse_epoch(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn malformed_inputs() {
        let c = TimeContext::new(None).unwrap();
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22 08:04:20",
            "2026-11-22 08:04:20 ",
            "2026-13-22 08:04:20 UTC",
            "2026-02-30 08:04:20 UTC",
            "2026-11-22 24:04:20 UTC",
            "2026-11-22 08:04:60 UTC",
            "2026-11-22 08:04:20. UTC",
            "2026-11-22 08:04:20.1234567890 UTC",
            "2026-11-22 08:04:20 U-C",
            "2026/11/22 08:04:20 UTC",
            "2026-11/22 08:04:20 UTC",
            "2026-11-22_08:04:20 UTC",
            "2026-11-22 08.04:20 UTC",
            "2026-11-22 08:04.20 UTC",
            "２０２６-11-22 08:04:20 UTC",
            "2026-11-22 08:04:20 ÄÖÜ",
            "0000-00-00 00:00:00 UTC",
        ] {
            assert!(c.parse(bad).is_err(), "{bad:?}");
        }
    }

    /// The error names what is wrong, and quotes at most 64 bytes of the
    /// text, cut at a character boundary.
    #[test]
    fn errors_say_why_and_quote_a_bounded_text() {
        let c = TimeContext::new(None).unwrap();
        let reason = |text: &str| match c.parse(text) {
            Err(TimeError::Malformed { reason, .. }) => reason,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(reason("2026-11-22 08:04:20"), "time zone missing");
        assert_eq!(reason("2026-11-22 08:04"), "expected YYYY-MM-DD HH:MM:SS[.mmm] ZONE");
        // 25 bytes, then two-byte characters: byte 64 is inside one.
        let long = format!("2026-11-22 08:04:20.708 x{}", "é".repeat(30));
        match c.parse(&long) {
            Err(TimeError::Malformed { text, reason }) => {
                assert_eq!(reason, "time zone is neither an abbreviation nor a numeric offset");
                assert_eq!(text, format!("2026-11-22 08:04:20.708 x{}", "é".repeat(19)));
            }
            other => panic!("{other:?}"),
        }
        let zone = "Mitteleuropaeischenormalzeitundsommerzeit";
        match c.parse(&format!("2026-11-22 08:04:20.708 {zone}")) {
            Err(TimeError::UnknownAbbreviation { abbr, text }) => {
                assert_eq!(abbr, zone[..32]);
                assert_eq!(text, format!("2026-11-22 08:04:20.708 {zone}")[..64]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fuzz_never_panics() {
        let zones = [Some("Europe/Berlin"), None, Some("America/New_York"), Some("UTC")];
        let alphabet: Vec<char> = "0123456789-:. +TZUCESTIabz\u{e9}\u{30d2}\t".chars().collect();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let base = "2026-10-25 02:30:00.000 CEST";
        for z in zones {
            let c = TimeContext::new(z).unwrap();
            for _ in 0..20_000 {
                let mut s: String = base.to_string();
                // mutate a few positions or build random text
                let mode = next() % 3;
                if mode == 0 {
                    let len = (next() % 40) as usize;
                    s = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
                } else {
                    let mut chars: Vec<char> = s.chars().collect();
                    for _ in 0..(1 + next() % 4) {
                        let i = (next() % chars.len() as u64) as usize;
                        chars[i] = alphabet[(next() % alphabet.len() as u64) as usize];
                    }
                    if mode == 2 {
                        let cut = (next() % chars.len() as u64) as usize;
                        chars.truncate(cut);
                    }
                    s = chars.into_iter().collect();
                }
                let _ = c.parse(&s);
                let _ = TimeContext::parse_epoch(&s);
            }
            let _ = c.take_warnings();
        }
        // Extremes
        let c = TimeContext::new(None).unwrap();
        let _ = c.parse("9999-12-31 23:59:59.999999999 -25:59:59");
        let _ = c.parse("-999-12-31 23:59:59 UTC");
        assert!(c.parse("9999-12-31 23:59:59 -25").is_err());
        let _ = TimeContext::parse_epoch("999999999999.999999999");
    }
}
