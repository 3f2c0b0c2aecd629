//! Ingest: one source through the whole pipeline — open, frame, classify,
//! and commit each chunk's events with the offset reached.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use thiserror::Error;

use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::csvlog::CsvScanner;
use crate::frame::jsonlog::JsonScanner;
use crate::frame::prefix::{self, Prefix};
use crate::frame::stderr::StderrScanner;
use crate::frame::syslog::{self, SyslogScanner};
use crate::frame::time::TimeContext;
use crate::frame::{self, Format, FrameStats, Pos, Record, Scan, Tail};
use crate::model::event::{Event, EventBody};
use crate::source::readahead::ReadAhead;
use crate::source::{Compression, Source, SourceError};
use crate::store::{SourceRow, SourceSpec, Store, StoreError};

/// How many lines of a file are used to infer its log_line_prefix.
const PREFIX_SAMPLE_LINES: usize = 200;

#[derive(Debug, Error)]
pub enum IngestError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    /// Reading was stopped on request (SIGTERM) after a commit.
    #[error("stopped")]
    Stopped,
    #[error("{path}: {message}")]
    Prefix { path: String, message: String },
    #[error("{path}: log_line_prefix {prefix:?} has no time escape (%m, %t or %n): walwatch cannot date the events; add %m to log_line_prefix")]
    NoTime { path: String, prefix: String },
}

/// What to import and how to read it.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// None: detect from the content.
    pub format: Option<Format>,
    /// None: infer from the content ("auto").
    pub prefix: Option<String>,
    /// A source never seen before starts at its end (the daemon's
    /// `start_at = "end"` for files present at its first start).
    pub new_files_from_end: bool,
    /// Leave the last entry of a plain file for a later read: a followed
    /// file may still get that entry's HINT or continuation lines.
    pub hold_last_entry: bool,
    /// Set (by SIGTERM) to stop reading after the current chunk; what was
    /// read is committed and the import ends early without an error.
    pub stop: Option<Arc<AtomicBool>>,
    /// Called after every chunk: the daemon tells systemd's watchdog it is
    /// alive while it reads a large file in one go.
    pub alive: Option<fn()>,
}

/// What one import of one source did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    pub name: String,
    pub format: &'static str,
    pub prefix: Option<String>,
    /// Byte offset where reading started (non-zero when resuming).
    pub resumed_at: u64,
    /// Bytes read in this run.
    pub bytes: u64,
    pub frame: FrameStats,
    /// Events read, by kind (rejected ones excluded).
    pub events: BTreeMap<&'static str, u64>,
    pub rejected: u64,
    pub unparsed: u64,
    /// Events that were new to the store.
    pub stored: u64,
    pub seconds: f64,
    pub warnings: Vec<String>,
}

impl ImportReport {
    pub(crate) fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }
}

/// Imports `path` into `cluster_id`, resuming where an earlier import of
/// the same content stopped.
pub fn import(
    store: &mut Store,
    cluster_id: i64,
    path: &str,
    opts: &Options,
    time: &TimeContext,
) -> Result<ImportReport, IngestError> {
    import_source(store, cluster_id, Source::open(path)?, opts, time)
}

/// Imports an opened source (see [`import`]).
pub(crate) fn import_source(
    store: &mut Store,
    cluster_id: i64,
    source: Source,
    opts: &Options,
    time: &TimeContext,
) -> Result<ImportReport, IngestError> {
    let started = Instant::now();
    let path = source.name.clone();
    let format = opts.format.unwrap_or_else(|| Format::detect_named(&source.name, source.head()));
    let mut report = ImportReport { name: path.clone(), format: format.as_str(), ..ImportReport::default() };
    let known = store.find_source(cluster_id, source.head())?;
    // A known source keeps the prefix detected when it was first read.
    let given = opts.prefix.clone().or_else(|| known.as_ref().and_then(|k| k.prefix.clone()));
    let hint = match given {
        None => store.cluster_prefix(cluster_id, format.as_str())?,
        Some(_) => None,
    };
    let choice = PrefixChoice { given: given.as_deref(), hint: hint.as_deref() };
    let kit = ReaderKit::new(format, &choice, &source, &path)?;
    report.prefix = kit.prefix_spec();
    let prefix_spec = report.prefix.clone();
    let spec = SourceSpec { path: &path, meta: source.meta, format: format.as_str(), prefix: prefix_spec.as_deref() };
    let mut row = source_row(store, cluster_id, &source, &spec, opts, &mut report)?;
    let start = Pos { offset: row.read_to, line: row.line };
    // A plain file may still be written to: its unterminated last line waits.
    let tail = match (source.compression == Compression::None && source.meta.is_some(), opts.hold_last_entry) {
        (true, true) => Tail::Hold,
        (true, false) => Tail::Wait,
        (false, _) => Tail::Take,
    };
    report.resumed_at = start.offset;
    let mut scanner = kit.scanner(time);
    let reader = open_at(source, start.offset, scanner.as_mut())
        .map_err(|e| IngestError::Read { path: path.clone(), source: e })?;
    let reader: Box<dyn std::io::Read> = Box::new(ReadAhead::new(reader));
    let stop = opts.stop.as_deref();
    let end = run(
        store,
        &mut row,
        &spec,
        reader,
        Reading { scanner: scanner.as_mut(), start, tail, stop, alive: opts.alive },
        &kit,
        &mut report,
    )?;
    report.bytes = end.offset - start.offset;
    report.frame = scanner.stats().clone();
    report.unparsed += report.frame.unparsed;
    report.seconds = started.elapsed().as_secs_f64();
    finish_warnings(&mut report, time, &kit);
    Ok(report)
}

/// A reader at `offset`; the scanner first sees the bytes before it that it
/// asks for (the splice checks look that far back).
fn open_at(source: Source, offset: u64, scanner: &mut dyn Scan) -> std::io::Result<Box<dyn std::io::Read + Send>> {
    let back = (scanner.wants_look_behind() as u64).min(offset);
    let mut reader = source.into_reader(offset - back)?;
    if back > 0 {
        let mut before = vec![0u8; back as usize];
        reader.read_exact(&mut before)?;
        scanner.look_behind(&before);
    }
    Ok(reader)
}

/// The store's record of this content: found by fingerprint, or new.
fn source_row(
    store: &mut Store,
    cluster_id: i64,
    source: &Source,
    spec: &SourceSpec<'_>,
    opts: &Options,
    report: &mut ImportReport,
) -> Result<SourceRow, IngestError> {
    // Found or created in one step: another process may be reading this file too.
    let (mut row, created) = store.source_for(cluster_id, source.head(), spec)?;
    if created && opts.new_files_from_end && source.compression == Compression::None {
        (row.read_to, row.line) = end_of_complete_lines(spec.path)?;
    }
    if source.meta.is_some_and(|m| source.compression == Compression::None && m.size < row.read_to) {
        // Same first bytes but shorter than what was read: rewritten in place
        // (truncated, then written again). Read it again; events already
        // stored at the same offsets are not stored twice.
        report
            .warnings
            .push(format!("{} shrank below byte {}: reading it again from the start", spec.path, row.read_to));
        store.rewind_source(&mut row)?;
    }
    Ok(row)
}

fn finish_warnings(report: &mut ImportReport, time: &TimeContext, kit: &ReaderKit) {
    report.warnings.extend(time.take_warnings());
    report.warnings.extend(emptiness_warnings(report));
    if !kit.session_checkable() {
        report.warnings.push(format!(
            "log_line_prefix {:?} shows no session fields (%u, %d, %a, %h, %q or %b): lines forged by client sessions can only be recognised by their CONTEXT/STATEMENT lines; consider log_line_prefix = '%m [%p] %q%u@%d '",
            report.prefix.as_deref().unwrap_or("")
        ));
    }
}

/// Byte offset and line number just past the last complete line of `path`.
fn end_of_complete_lines(path: &str) -> Result<(u64, u64), IngestError> {
    use std::io::Read;
    let read_err = |source| IngestError::Read { path: path.into(), source };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let (mut offset, mut end, mut newlines) = (0u64, 0u64, 0u64);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(read_err)?;
        if n == 0 {
            return Ok((end, newlines + 1));
        }
        newlines += frame::lines::count(&buf[..n]);
        if let Some(i) = memchr::memrchr(b'\n', &buf[..n]) {
            end = offset + i as u64 + 1;
        }
        offset += n as u64;
    }
}

/// How one read goes: the scanner, where it starts, what to do with the
/// end of the input, and the daemon's stop flag and keep-alive.
struct Reading<'a> {
    scanner: &'a mut dyn Scan,
    start: Pos,
    tail: Tail,
    stop: Option<&'a AtomicBool>,
    alive: Option<fn()>,
}

fn run(
    store: &mut Store,
    row: &mut SourceRow,
    spec: &SourceSpec<'_>,
    reader: Box<dyn std::io::Read>,
    Reading { scanner, start, tail, stop, alive }: Reading<'_>,
    kit: &ReaderKit,
    report: &mut ImportReport,
) -> Result<Pos, IngestError> {
    let catalog = Catalog::global();
    let path = spec.path.to_string();
    let mut batch = Batch { events: Vec::new(), reached: start, committed: start };
    let result = frame::drive(reader, scanner, start, tail, |records, reached| {
        batch.events.extend(classify_all(catalog, kit, &records, report));
        batch.reached = reached;
        if batch.is_full() {
            report.stored += batch.commit(store, row, spec)?;
        }
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err(IngestError::Stopped);
        }
        if let Some(alive) = alive {
            alive();
        }
        Ok::<(), IngestError>(())
    });
    let result = match result {
        Err(IngestError::Stopped) => Ok(batch.reached),
        other => other,
    };
    // Whatever happened, what was read before it is kept.
    report.stored += batch.commit(store, row, spec)?;
    result.map_err(|e| match e {
        IngestError::Read { source, .. } => IngestError::Read { path: path.clone(), source },
        other => other,
    })
}

/// Events waiting for their commit, with the position they were read up to.
struct Batch {
    events: Vec<Event>,
    reached: Pos,
    committed: Pos,
}

impl Batch {
    /// Commit at least every this many events or bytes of log: large enough
    /// that SQLite's per-commit cost vanishes, small enough to bound memory.
    const MAX_EVENTS: usize = 10_000;
    const MAX_BYTES: u64 = 64 << 20;

    fn is_full(&self) -> bool {
        self.events.len() >= Self::MAX_EVENTS || self.reached.offset - self.committed.offset >= Self::MAX_BYTES
    }

    fn commit(&mut self, store: &mut Store, row: &mut SourceRow, spec: &SourceSpec<'_>) -> Result<u64, StoreError> {
        if self.reached == self.committed {
            return Ok(0);
        }
        let added = store.commit_batch(row, spec, &self.events, self.reached)?;
        self.events.clear();
        self.committed = self.reached;
        Ok(added as u64)
    }
}

impl From<std::io::Error> for IngestError {
    fn from(source: std::io::Error) -> Self {
        IngestError::Read { path: String::new(), source }
    }
}

fn classify_all(catalog: &Catalog, kit: &ReaderKit, records: &[Record], report: &mut ImportReport) -> Vec<Event> {
    let mut events = Vec::new();
    for record in records {
        let Some(at) = record.time else {
            report.unparsed += 1;
            continue;
        };
        let event =
            |nth, body| Event { at, pid: record.origin.pid, offset: record.offset, line: record.line, nth, body };
        match classify::classify(catalog, record) {
            Outcome::Event(body) => {
                *report.events.entry(body.kind_name()).or_default() += 1;
                events.push(event(0, body));
            }
            Outcome::Rejected { looked_like, reason } => {
                report.rejected += 1;
                events.push(event(0, EventBody::Rejected { looked_like, reason }));
            }
            Outcome::Unparsed(kind) => {
                report.unparsed += 1;
                if report.warnings.len() < 20 {
                    report.warnings.push(format!(
                        "line {}: a {kind} line in a shape walwatch does not know: {:.200}",
                        record.line, record.message
                    ));
                }
            }
            Outcome::Ignored => {}
        }
        let embedded = classify::embedded_lookalikes(catalog, record, |l| kit.message_of(l));
        for (nth, looked_like) in (1..).zip(embedded) {
            report.rejected += 1;
            let reason = "inside another entry (e.g. a logged statement)";
            events.push(event(nth, EventBody::Rejected { looked_like, reason }));
        }
    }
    events
}

/// Never a silently empty result: say why nothing (or not everything) was found.
fn emptiness_warnings(r: &ImportReport) -> Vec<String> {
    let mut out = Vec::new();
    let prefix = r.prefix.as_deref().map(|p| format!(" log_line_prefix '{p}'")).unwrap_or_default();
    if r.frame.unparsed > 0 {
        out.push(format!(
            "{} line(s) that mention checkpoints did not fit the {}{prefix} layout; if events are missing, pass --format/--prefix",
            r.frame.unparsed, r.format
        ));
    }
    if r.bytes > 0 && r.events.is_empty() && r.rejected == 0 {
        out.push(format!(
            "no checkpoint events in {} entries: is log_checkpoints on (off by default before PostgreSQL 15)?",
            r.frame.entries
        ));
    }
    out
}

/// Everything format-specific about reading one source.
enum ReaderKit {
    Stderr(Prefix),
    Syslog(Prefix),
    Csv,
    Json,
}

impl ReaderKit {
    fn new(format: Format, prefix: &PrefixChoice<'_>, source: &Source, path: &str) -> Result<ReaderKit, IngestError> {
        match format {
            Format::Stderr => Ok(ReaderKit::Stderr(stderr_prefix(prefix, source.head(), path)?)),
            Format::Csvlog => Ok(ReaderKit::Csv),
            Format::Jsonlog => Ok(ReaderKit::Json),
            Format::Syslog => {
                let sample = syslog_bodies(source.head());
                Ok(ReaderKit::Syslog(stderr_prefix(prefix, &sample, path)?))
            }
        }
    }

    fn prefix_spec(&self) -> Option<String> {
        match self {
            ReaderKit::Stderr(p) | ReaderKit::Syslog(p) => Some(p.spec().to_string()),
            _ => None,
        }
    }

    fn session_checkable(&self) -> bool {
        match self {
            ReaderKit::Stderr(p) | ReaderKit::Syslog(p) => p.session_checkable(),
            _ => true,
        }
    }

    fn scanner<'t>(&self, time: &'t TimeContext) -> Box<dyn Scan + 't> {
        match self {
            ReaderKit::Stderr(p) => Box::new(StderrScanner::new(p.clone(), time)),
            ReaderKit::Syslog(p) => Box::new(SyslogScanner::new(StderrScanner::new(p.clone(), time))),
            ReaderKit::Csv => Box::new(CsvScanner::new(time)),
            ReaderKit::Json => Box::new(JsonScanner::new(time)),
        }
    }

    /// The message of `line` read as a whole log line of this format.
    fn message_of(&self, line: &str) -> Option<String> {
        match self {
            ReaderKit::Stderr(p) | ReaderKit::Syslog(p) => p.parse(line).map(|m| m.message.to_string()),
            ReaderKit::Csv => {
                let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line.as_bytes());
                r.records().next()?.ok()?.get(13).map(String::from)
            }
            ReaderKit::Json => {
                serde_json::from_str::<serde_json::Value>(line).ok()?.get("message")?.as_str().map(String::from)
            }
        }
    }
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
fn stderr_prefix(choice: &PrefixChoice<'_>, head: &[u8], path: &str) -> Result<Prefix, IngestError> {
    let prefix = match choice.given {
        Some(spec) => compiled(spec).map_err(|e| IngestError::Prefix { path: path.into(), message: e.to_string() })?,
        None => inferred(choice.hint, head, path)?,
    };
    let spec = prefix.spec();
    if !(spec.contains("%m") || spec.contains("%t") || spec.contains("%n")) {
        return Err(IngestError::NoTime { path: path.into(), prefix: spec.into() });
    }
    Ok(prefix)
}

/// Where a source's log_line_prefix comes from.
#[derive(Debug, Clone, Copy, Default)]
struct PrefixChoice<'a> {
    /// `--prefix`, the config, or the prefix this source was first read with.
    given: Option<&'a str>,
    /// The prefix the cluster's most recent other source was read with.
    hint: Option<&'a str>,
}

/// The prefix of a file nobody named one for: the cluster's earlier prefix
/// while it still reads lines of this file — so a client that floods a
/// fresh file with look-alike lines (failed logins with line breaks in the
/// user name, see `frame::spliced`) cannot switch it — else detected from
/// the first lines, or from all of the file's head if those do not decide.
fn inferred(hint: Option<&str>, head: &[u8], path: &str) -> Result<Prefix, IngestError> {
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
    prefix::detect(first, markers)
        .or_else(|e| if lines.len() > first.len() { prefix::detect(&lines, markers) } else { Err(e) })
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

/// A cluster name for a log file when none is given: `15-main` for Debian's
/// `postgresql-15-main.log`, the data directory's name for `$PGDATA/log/…`,
/// else the directory name.
pub(crate) fn default_cluster(path: &str) -> String {
    if path == "-" {
        return "default".into();
    }
    let p = Path::new(path);
    let file = p.file_name().and_then(|f| f.to_str()).unwrap_or_default();
    if let Some(rest) = file.strip_prefix("postgresql-") {
        let stem = rest.split(".log").next().unwrap_or_default();
        let mut parts = stem.splitn(2, '-');
        if let (Some(ver), Some(name)) = (parts.next(), parts.next()) {
            if !ver.is_empty()
                && ver.chars().all(|c| c.is_ascii_digit() || c == '.')
                && !name.starts_with(|c: char| c.is_ascii_digit())
            {
                return format!("{ver}-{name}");
            }
        }
    }
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut dirs = abs.ancestors().skip(1).filter_map(|d| d.file_name()?.to_str());
    match dirs.next() {
        // $PGDATA/log: name it after the data directory, or after the
        // version directory above a generic "data" (PGDG: /var/lib/pgsql/16/data).
        Some("log" | "pg_log" | "logs") => match dirs.next() {
            Some("data" | "pgdata") => dirs.next().unwrap_or("data").to_string(),
            Some(dir) => dir.to_string(),
            None => "default".into(),
        },
        Some(dir) => dir.to_string(),
        None => "default".into(),
    }
}

#[cfg(test)]
mod batch_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_follow_common_layouts() {
        assert_eq!(default_cluster("/var/log/postgresql/postgresql-15-main.log"), "15-main");
        assert_eq!(default_cluster("/var/log/postgresql/postgresql-15-main.log.1"), "15-main");
        assert_eq!(default_cluster("/srv/pg/data/log/postgresql-2026-11-22_080420.log"), "pg");
        assert_eq!(default_cluster("/var/lib/pgsql/16/data/log/postgresql-Sun.log"), "16");
        assert_eq!(default_cluster("/srv/main/pg_log/postgresql.csv"), "main");
        assert_eq!(default_cluster("/tmp/x/run1/postgresql.csv"), "run1");
        assert_eq!(default_cluster("-"), "default");
    }
}
