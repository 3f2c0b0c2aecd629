//! Everything format-specific about reading one source: its scanner, and
//! for stderr and syslog the log_line_prefix — given, the cluster's earlier
//! one, or detected from the file's first lines.

use super::IngestError;
use crate::catalog::Catalog;
use crate::frame::formats::csvlog::CsvScanner;
use crate::frame::formats::envelope::{self, EnvelopeScanner};
use crate::frame::formats::jsonlog::JsonScanner;
use crate::frame::formats::stderr::StderrScanner;
use crate::frame::formats::syslog::{self, SyslogScanner};
use crate::frame::formats::{azure, cloudsql, cnpg, journald, wrapper};
use crate::frame::prefix::{self, Dates, Prefix};
use crate::frame::time::TimeContext;
use crate::frame::{Format, Lexicon, Scan};
use crate::source::Source;

/// How many lines of a file are used to infer its log_line_prefix.
const PREFIX_SAMPLE_LINES: usize = 200;

/// Everything format-specific about reading one source.
pub(super) enum FormatReader {
    Stderr(Prefix),
    /// The prefix, and when the file was last written (the year of
    /// envelope times that have none).
    Syslog(Prefix, Option<jiff::Timestamp>),
    Csv,
    Json,
    /// Another program's lines around PostgreSQL's (see `frame::formats::envelope`).
    Envelope(Wrapped),
}

/// How to read an envelope format: its payload lines' prefix, whether they
/// are syslog messages, and when the file was last written.
pub(super) struct Wrapped {
    format: Format,
    prefix: Prefix,
    as_syslog: bool,
    written: Option<jiff::Timestamp>,
}

/// CloudNativePG's JSON holds stderr lines only from before the logging
/// collector starts, often none: without them to learn from, they are read
/// with PostgreSQL's default prefix.
const CNPG_FALLBACK_PREFIX: &str = "%m [%p] ";

impl Wrapped {
    fn new(format: Format, choice: &PrefixChoice<'_>, source: &Source, path: &str) -> Result<Wrapped, IngestError> {
        let written = source.modified.and_then(|t| jiff::Timestamp::try_from(t).ok());
        let payloads = envelope::text_payloads(&opener(format, false, written), source.head());
        // journald's entries came through syslog(3) when they are numbered;
        // Heroku's always do.
        let as_syslog = format == Format::Heroku
            || format == Format::JournaldJson && payloads.split(|&b| b == b'\n').any(journald::numbered);
        let (sample, dates) = match as_syslog {
            true => {
                let bodies = syslog_bodies(&envelope::text_payloads(&opener(format, true, written), source.head()));
                (bodies, Dates::Envelope)
            }
            // A prefix without a time (Cloud SQL's `[%p]: [%l-1] db=%d,user=%u `)
            // is read when the envelope dates its lines.
            false if envelope::dates_lines(&opener(format, false, written), source.head()) => {
                (payloads, Dates::Envelope)
            }
            false => (payloads, Dates::Prefix),
        };
        let prefix = match stderr_prefix(choice, &sample, dates, path) {
            Err(IngestError::Prefix { .. }) if format == Format::Cnpg && choice.given.is_none() => {
                compiled(CNPG_FALLBACK_PREFIX).map_err(|e| prefix_error(path, e))?
            }
            found => found?,
        };
        Ok(Wrapped { format, prefix, as_syslog, written })
    }

    /// The message of `line` read as a whole line of this format: for
    /// CloudNativePG one of its JSON lines (a csvlog field's lines are
    /// none, as in csvlog); else PostgreSQL's text line, as it is unwrapped.
    fn message_of(&self, line: &str) -> Option<String> {
        if self.format != Format::Cnpg {
            return self.prefix.parse(line).map(|m| m.message.to_string());
        }
        match cnpg::open(line.as_bytes()) {
            envelope::Unwrapped::Json { line, .. } => {
                serde_json::from_slice::<serde_json::Value>(&line).ok()?.get("message")?.as_str().map(String::from)
            }
            envelope::Unwrapped::Text { text, .. } => {
                self.prefix.parse(&String::from_utf8_lossy(&text)).map(|m| m.message.to_string())
            }
            _ => None,
        }
    }

    fn scanner<'t>(&self, time: &'t TimeContext) -> Box<dyn Scan + 't> {
        let stderr = StderrScanner::new(self.prefix.clone(), time, lexicon());
        let text: Box<dyn Scan + 't> = match self.as_syslog {
            true => Box::new(SyslogScanner::new(stderr)),
            false => Box::new(stderr),
        };
        let json = Box::new(JsonScanner::new(time, lexicon()));
        let open = opener(self.format, self.as_syslog, self.written);
        Box::new(EnvelopeScanner::new(open, text, json, lexicon()))
    }
}

/// The function that opens one line of an envelope `format`: journald's
/// entries rebuilt as syslog lines when `as_syslog`; plain journalctl's
/// yearless times dated by `written` (the file's last change), else now.
fn opener(format: Format, as_syslog: bool, written: Option<jiff::Timestamp>) -> envelope::Open {
    match format {
        Format::CloudSql => Box::new(cloudsql::open),
        Format::Cnpg => Box::new(cnpg::open),
        Format::Azure => Box::new(azure::open),
        Format::JournaldJson => Box::new(move |line| journald::open_json(line, as_syslog)),
        Format::DockerJson => Box::new(wrapper::open_docker_json),
        Format::Cri => Box::new(wrapper::open_cri),
        Format::Docker => Box::new(wrapper::open_docker),
        Format::Flyio => Box::new(wrapper::open_flyio),
        Format::Heroku => Box::new(wrapper::open_heroku),
        _ => {
            let written = written.map_or_else(jiff::Zoned::now, |t| t.to_zoned(jiff::tz::TimeZone::system()));
            Box::new(move |line| journald::open_plain(line, &written))
        }
    }
}

fn prefix_error(path: &str, e: prefix::PrefixError) -> IngestError {
    IngestError::Prefix { path: path.into(), message: e.to_string() }
}

impl FormatReader {
    pub(super) fn new(
        format: Format,
        prefix: &PrefixChoice<'_>,
        source: &Source,
        path: &str,
    ) -> Result<FormatReader, IngestError> {
        match format {
            Format::Stderr => {
                Ok(FormatReader::Stderr(dated(stderr_prefix(prefix, source.head(), Dates::Prefix, path)?, path)?))
            }
            Format::Csvlog => Ok(FormatReader::Csv),
            Format::Jsonlog => Ok(FormatReader::Json),
            Format::Syslog => {
                let sample = syslog_bodies(source.head());
                // The envelope dates what a prefix without a time does not.
                let written = source.modified.and_then(|t| jiff::Timestamp::try_from(t).ok());
                Ok(FormatReader::Syslog(stderr_prefix(prefix, &sample, Dates::Envelope, path)?, written))
            }
            wrapped => Ok(FormatReader::Envelope(Wrapped::new(wrapped, prefix, source, path)?)),
        }
    }

    pub(super) fn prefix_spec(&self) -> Option<String> {
        match self {
            FormatReader::Stderr(p) | FormatReader::Syslog(p, _) => Some(p.spec().to_string()),
            FormatReader::Envelope(w) => Some(w.prefix.spec().to_string()),
            _ => None,
        }
    }

    pub(super) fn session_checkable(&self) -> bool {
        match self {
            FormatReader::Stderr(p) | FormatReader::Syslog(p, _) => p.session_checkable(),
            FormatReader::Envelope(w) => w.format == Format::Cnpg || w.prefix.session_checkable(),
            _ => true,
        }
    }

    pub(super) fn scanner<'t>(&self, time: &'t TimeContext) -> Box<dyn Scan + 't> {
        match self {
            FormatReader::Stderr(p) => Box::new(StderrScanner::new(p.clone(), time, lexicon())),
            FormatReader::Syslog(p, written) => {
                Box::new(SyslogScanner::new(StderrScanner::new(p.clone(), time, lexicon())).written_at(*written))
            }
            FormatReader::Csv => Box::new(CsvScanner::new(time, lexicon())),
            FormatReader::Json => Box::new(JsonScanner::new(time, lexicon())),
            FormatReader::Envelope(w) => w.scanner(time),
        }
    }

    /// The message of `line` read as a whole log line of this format.
    pub(super) fn message_of(&self, line: &str) -> Option<String> {
        match self {
            FormatReader::Stderr(p) | FormatReader::Syslog(p, _) => p.parse(line).map(|m| m.message.to_string()),
            FormatReader::Envelope(w) => w.message_of(line),
            FormatReader::Csv => {
                let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line.as_bytes());
                r.records().next()?.ok()?.get(13).map(String::from)
            }
            FormatReader::Json => {
                serde_json::from_str::<serde_json::Value>(line).ok()?.get("message")?.as_str().map(String::from)
            }
        }
    }
}

/// What framing needs of the catalog, built once per process (its needle
/// search takes milliseconds to build) and handed to every scanner.
pub fn lexicon() -> &'static Lexicon {
    static LEXICON: std::sync::OnceLock<Lexicon> = std::sync::OnceLock::new();
    LEXICON.get_or_init(|| Lexicon::new(Catalog::global()))
}

/// A compiled log_line_prefix, cached: compiling one (with every language's
/// level words) takes milliseconds, and the daemon reads a growing file
/// many times a second.
fn compiled(spec: &str) -> Result<Prefix, crate::frame::prefix::PrefixError> {
    static CACHE: std::sync::Mutex<Vec<Prefix>> = std::sync::Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(p) = cache.iter().find(|p| p.spec() == spec) {
        return Ok(p.clone());
    }
    let p = Prefix::compile(spec, Catalog::global().markers())?;
    cache.push(p.clone());
    Ok(p)
}

/// The prefix given on the command line (or known for this source), or one
/// inferred from the file.
fn stderr_prefix(choice: &PrefixChoice<'_>, head: &[u8], dates: Dates, path: &str) -> Result<Prefix, IngestError> {
    let prefix = match choice.given {
        Some(spec) => compiled(spec).map_err(|e| prefix_error(path, e))?,
        None => inferred(choice.hint, head, dates, path)?,
    };
    Ok(prefix)
}

/// The prefix of an undated stderr log (`import --undated`): given, or
/// inferred from the file's first lines; it may have no time.
pub(super) fn undated_prefix(choice: &PrefixChoice<'_>, source: &Source, path: &str) -> Result<Prefix, IngestError> {
    stderr_prefix(choice, source.head(), Dates::Prefix, path)
}

/// Whether a prefix dates its lines (`%m`, `%t` or `%n`).
pub(super) fn dates(prefix: &Prefix) -> bool {
    let spec = prefix.spec();
    spec.contains("%m") || spec.contains("%t") || spec.contains("%n")
}

/// `prefix`, if it dates its lines: a format without an envelope time has
/// nothing else to date events by.
fn dated(prefix: Prefix, path: &str) -> Result<Prefix, IngestError> {
    if !dates(&prefix) {
        return Err(IngestError::NoTime { path: path.into(), prefix: prefix.spec().into() });
    }
    Ok(prefix)
}

/// Where a source's log_line_prefix comes from.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PrefixChoice<'a> {
    /// `--prefix`, the config, or the prefix this source was first read with.
    pub(crate) given: Option<&'a str>,
    /// The prefix the cluster's most recent other source was read with.
    pub(crate) hint: Option<&'a str>,
}

/// The prefix of a file nobody named one for: the cluster's earlier prefix
/// while it still reads lines of this file — so a client that floods a
/// fresh file with look-alike lines (failed logins with line breaks in the
/// user name, see `frame::spliced`) cannot switch it — else detected from
/// the first lines, or from all of the file's head if those do not decide.
fn inferred(hint: Option<&str>, head: &[u8], dates: Dates, path: &str) -> Result<Prefix, IngestError> {
    let text = String::from_utf8_lossy(complete_lines(head));
    let lines: Vec<&str> = text.lines().filter(|l| is_text(l)).collect();
    if let Some(p) = hint.and_then(|spec| compiled(spec).ok()) {
        if lines.iter().any(|l| p.parse(l).is_some()) {
            return Ok(p);
        }
        tracing::info!(
            path,
            prefix = p.spec(),
            "The cluster's earlier log_line_prefix fits no line of this file; detecting it anew."
        );
    }
    let markers = Catalog::global().markers();
    let first = &lines[..lines.len().min(PREFIX_SAMPLE_LINES)];
    let catalog = Catalog::global();
    let detect = |lines: &[&str]| prefix::detect_dated_by(lines, markers, catalog, dates);
    detect(first)
        .or_else(|e| if lines.len() > first.len() { detect(&lines) } else { Err(e) })
        .map_err(|e| IngestError::Prefix { path: path.into(), message: e.to_string() })
}

/// The message parts of syslog lines (after `[N-k] `), for prefix detection.
fn syslog_bodies(head: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in head.split(|&b| b == b'\n') {
        if let Some(body) = syslog::body(line) {
            out.extend_from_slice(body);
            out.push(b'\n');
        }
    }
    out
}

/// `head` without a last line that is still being written.
fn complete_lines(head: &[u8]) -> &[u8] {
    match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..=i],
        None => head,
    }
}

/// Lines worth learning a prefix from: text, not binary garbage.
fn is_text(line: &str) -> bool {
    !line.is_empty() && !line.chars().any(|c| c == '\u{FFFD}' || (c.is_control() && c != '\t'))
}
