//! Ingest: one source through the whole pipeline — open, frame, classify,
//! and commit each chunk's events with the offset reached.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use thiserror::Error;

use crate::frame::time::TimeContext;
use crate::frame::{self, Format, FrameStats, Pos, Scan, Tail};
use crate::source::readahead::ReadAhead;
use crate::source::{Compression, Source, SourceError};
use crate::store::{SourceRow, SourceSpec, Store, StoreError};
use batch::{run, Reading};
use reader::{FormatReader, PrefixChoice};

#[derive(Debug, Error)]
pub(crate) enum IngestError {
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
    #[error(
        "{path}: log_line_prefix {prefix:?} has no time escape (%m, %t or %n): walwatch cannot date the events; add %m \
         to log_line_prefix, or read the file in its order with `walwatch import --undated` (counts, triggers and \
         distances; nothing stored)"
    )]
    NoTime { path: String, prefix: String },
}

/// What to import and how to read it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// None: detect from the content.
    pub(crate) format: Option<Format>,
    /// None: infer from the content ("auto").
    pub(crate) prefix: Option<String>,
    /// A source never seen before starts at its end (the daemon's
    /// `start_at = "end"` for files present at its first start).
    pub(crate) new_files_from_end: bool,
    /// Leave the last entry of a plain file for a later read: a followed
    /// file may still get that entry's HINT or continuation lines.
    pub(crate) hold_last_entry: bool,
    /// A plain file not written for this long is finished: its last entry
    /// is read even without a line break (`import`; the daemon follows live
    /// files and waits for the line break instead).
    pub(crate) finished_after: Option<std::time::Duration>,
    /// Set (by SIGTERM) to stop reading after the current chunk; what was
    /// read is committed and the import ends early without an error.
    pub(crate) stop: Option<Arc<AtomicBool>>,
    /// Called after every chunk: the daemon tells systemd's watchdog it is
    /// alive while it reads a large file in one go.
    pub(crate) alive: Option<fn()>,
}

/// What one import of one source did.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImportReport {
    pub(crate) name: String,
    pub(crate) format: &'static str,
    pub(crate) prefix: Option<String>,
    /// Byte offset where reading started (non-zero when resuming).
    pub(crate) resumed_at: u64,
    /// Bytes read in this run.
    pub(crate) bytes: u64,
    pub(crate) frame: FrameStats,
    /// Events read, by kind (rejected ones excluded).
    pub(crate) events: BTreeMap<&'static str, u64>,
    /// Records the trust rule proved a client session wrote (`classify::trust`).
    pub(crate) rejected: u64,
    /// The first of them: its line and why it was refused.
    pub(crate) first_rejected: Option<(u64, &'static str)>,
    /// Lines that hold an event's message head but that the format or
    /// log_line_prefix did not fit: who wrote them cannot be said
    /// (`frame::unmatched`).
    pub(crate) unmatched: u64,
    /// The first of them: its line number and text.
    pub(crate) first_unmatched: Option<(u64, String)>,
    /// Records with an event's message head that could not be read as one:
    /// no time, or a shape walwatch does not know (also in `unparsed`).
    pub(crate) unreadable: u64,
    pub(crate) unparsed: u64,
    /// Complete lines read cut short (also in `events`): what they say up to
    /// the cut is stored, the checkpoint marked truncated.
    pub(crate) truncated: u64,
    /// Events that were new to the store.
    pub(crate) stored: u64,
    pub(crate) seconds: f64,
    pub(crate) warnings: Vec<String>,
    /// Why this read does not count as reading the source (see
    /// [`ImportReport::verdict`]): what it stored was taken back, and the
    /// source is not recorded as read.
    pub(crate) misfit: Option<String>,
}

/// Unmatched lines above this share of the lines that look like events make
/// a read a misfit: a log read with its own format and prefix has none (a
/// few may be lines written to stderr by something other than the server).
pub(crate) const UNMATCHED_SHARE: f64 = 0.05;

impl ImportReport {
    pub(crate) fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    /// Events read, every kind.
    pub(crate) fn event_count(&self) -> u64 {
        self.events.values().sum()
    }

    /// Lines that look like events: read as events, rejected, unmatched or unreadable.
    pub(crate) fn candidates(&self) -> u64 {
        self.event_count() + self.rejected + self.unmatched + self.unreadable
    }

    /// The format and prefix the source was read with, as a phrase.
    pub(crate) fn layout(&self) -> String {
        match &self.prefix {
            Some(p) => format!("{} format with log_line_prefix '{p}'", self.format),
            None => format!("{} format", self.format),
        }
    }

    /// Why the lines that look like events say this read went wrong: some
    /// but none read as an event (a wrong prefix that makes the
    /// checkpointer's own lines look like a client's — `%u` reading its `%b`
    /// — has every one rejected; only rejections in a read from the start
    /// count so), or more unmatched than
    /// [`UNMATCHED_SHARE`]. Rejections alone never make a misfit while some
    /// line is read as an event: a client can make the server log as many
    /// look-alikes as it likes, and must not make walwatch refuse the log.
    /// None when the read is believable — a log with no such line at all
    /// included (its warning asks whether log_checkpoints is on).
    pub(crate) fn verdict(&self) -> Option<String> {
        let (events, candidates) = (self.event_count(), self.candidates());
        let layout = self.layout();
        if candidates == 0 {
            return None;
        }
        // Rejections say something about the prefix only where it has not
        // been proven: a read that resumes after events were read with it
        // trusts them (a client's single RAISE LOG in the new lines of a
        // followed file must not stop the daemon from following it).
        let accused = if self.resumed_at == 0 { self.rejected } else { 0 };
        if events == 0 && self.unmatched + self.unreadable + accused > 0 {
            return Some(format!(
                "{candidates} line(s) look like PostgreSQL events but none could be read as one ({} did not fit the {layout}, {} were refused as forged, {} could not be read)",
                self.unmatched, self.rejected, self.unreadable
            ));
        }
        if self.unmatched as f64 > UNMATCHED_SHARE * candidates as f64 {
            return Some(format!(
                "{} of {candidates} lines that look like PostgreSQL events did not fit the {layout}",
                self.unmatched
            ));
        }
        None
    }
}

/// Gives `time` what `cluster_id`'s stored log said of its zone: the
/// latest `parameter "log_timezone" changed to "X"` the trust checks took
/// for the postmaster's. A daemon restarted, or an import resumed, after
/// such a line reads an ambiguous abbreviation (`CST`) in X, as the read
/// that saw the line did, not in its common meaning 14 hours away.
pub(crate) fn remember_zone(
    store: &Store,
    cluster_id: i64,
    time: &TimeContext,
) -> Result<(), crate::store::StoreError> {
    let changes = store.events().parameter_changes(cluster_id)?;
    if let Some(change) = changes.iter().rev().find(|c| c.name == "log_timezone") {
        time.learn_zone(&change.value);
    }
    Ok(())
}

/// Imports `path` into `cluster_id`, resuming where an earlier import of
/// the same content stopped.
#[cfg(test)]
pub(crate) fn import(
    store: &mut Store,
    cluster_id: i64,
    path: &str,
    opts: &Options,
    time: &TimeContext,
) -> Result<ImportReport, IngestError> {
    import_watched(store, cluster_id, path, opts, time, &|_| {})
}

/// How far an import has got, told after every chunk (`import`'s progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Byte offset reached in the source: in the file for a plain one, in
    /// the decompressed stream for a compressed one or stdin.
    pub(crate) read_to: u64,
    /// Bytes read in this import (less than `read_to` when resuming).
    pub(crate) read: u64,
    /// Where `read_to` ends: the size of a plain file; None for a stream.
    pub(crate) total: Option<u64>,
    /// Events found so far in this import.
    pub(crate) events: u64,
}

/// [`import`], telling `progress` how far it got after every chunk.
pub(crate) fn import_watched(
    store: &mut Store,
    cluster_id: i64,
    path: &str,
    opts: &Options,
    time: &TimeContext,
    progress: &dyn Fn(Progress),
) -> Result<ImportReport, IngestError> {
    store.use_import_settings()?;
    read_source(store, cluster_id, Source::open(path)?, opts, time, progress)
}

/// How much of the end of `source` to read: a plain file may still be
/// written to, so its unterminated last line waits — unless the file has
/// been quiet for [`Options::finished_after`]; a stream (stdin, a compressed
/// file) has ended for good.
fn tail_of(source: &Source, opts: &Options) -> Tail {
    let plain = source.compression == Compression::None && source.meta.is_some();
    let quiet =
        |after: std::time::Duration| source.modified.and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= after);
    match (plain, opts.hold_last_entry) {
        (false, _) => Tail::Take,
        (true, true) => Tail::Hold,
        (true, false) if opts.finished_after.is_some_and(quiet) => Tail::Take,
        (true, false) => Tail::Wait,
    }
}

/// Imports an opened source (see [`import`]).
pub(crate) fn import_source(
    store: &mut Store,
    cluster_id: i64,
    source: Source,
    opts: &Options,
    time: &TimeContext,
) -> Result<ImportReport, IngestError> {
    read_source(store, cluster_id, source, opts, time, &|_| {})
}

fn read_source(
    store: &mut Store,
    cluster_id: i64,
    source: Source,
    opts: &Options,
    time: &TimeContext,
    progress: &dyn Fn(Progress),
) -> Result<ImportReport, IngestError> {
    let started = Instant::now();
    let path = source.name.clone();
    let format = opts.format.unwrap_or_else(|| Format::detect_named(&source.name, source.head()));
    let mut report = ImportReport { name: path.clone(), format: format.as_str(), ..ImportReport::default() };
    if source.head().is_empty() {
        // A log file the server has just created (or rotated to twice in a
        // row): nothing to read or to learn a prefix from yet, and nothing
        // recorded, so that its content is read once it comes.
        report.warnings.push("empty: nothing to read yet".into());
        return Ok(report);
    }
    let known = store.sources().find(cluster_id, source.head())?;
    // A known source keeps the prefix detected when it was first read.
    let given = opts.prefix.clone().or_else(|| known.as_ref().and_then(|k| k.prefix.clone()));
    let hint = match given {
        None => store.sources().latest_prefix(cluster_id, format)?,
        Some(_) => None,
    };
    let choice = PrefixChoice { given: given.as_deref(), hint: hint.as_deref() };
    let kit = FormatReader::new(format, &choice, &source, &path)?;
    report.prefix = kit.prefix_spec();
    let prefix_spec = report.prefix.clone();
    let spec = SourceSpec { path: &path, meta: source.meta, format, prefix: prefix_spec.as_deref() };
    let mut row = source_row(store, cluster_id, &source, &spec, opts, &mut report)?;
    let start = Pos { offset: row.read_to, line: row.line };
    let tail = tail_of(&source, opts);
    report.resumed_at = start.offset;
    let total = (source.compression == Compression::None).then_some(source.meta.map(|m| m.size)).flatten();
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
        Reading { scanner: scanner.as_mut(), start, tail, stop, alive: opts.alive, total, progress },
        &kit,
        &mut report,
    )?;
    report.bytes = end.offset - start.offset;
    report.frame = scanner.stats().clone();
    report.unparsed += report.frame.unparsed;
    report.unmatched = report.frame.unmatched;
    report.first_unmatched = report.frame.first_unmatched.clone();
    // A client's lines inside a failed login's prefix: refused, not misfits.
    report.rejected += report.frame.inside_names;
    if let Some(line) = report.frame.first_inside_name {
        let inside = (line, crate::frame::formats::stderr::SPLICED);
        report.first_rejected = Some(report.first_rejected.filter(|r| r.0 <= line).unwrap_or(inside));
    }
    report.misfit = report.verdict();
    if report.misfit.is_some() {
        // Never used up by a mistake: a later import (with the right
        // --format/--prefix) or a daemon with a fixed setting reads it again.
        store.sources_mut().take_back(&row, start)?;
    } else if report.unmatched + report.frame.inside_names > 0 {
        store.sources_mut().add_undated(&row, report.unmatched, report.frame.inside_names)?;
    }
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
    let (mut row, created) = store.sources_mut().find_or_create(cluster_id, source.head(), spec)?;
    if created && opts.new_files_from_end && source.compression == Compression::None {
        let (offset, line) = end_of_complete_lines(spec.path)?;
        // Recorded now: a read that finds nothing after it commits nothing,
        // and the next read would go on from the store's position, the
        // file's first byte, taking in all the history meant to be skipped.
        store.events_mut().commit_batch(&mut row, spec, Pos { offset, line }, |_| Ok(0))?;
    }
    if source.meta.is_some_and(|m| source.compression == Compression::None && m.size < row.read_to) {
        // Same first bytes but shorter than what was read: rewritten in place
        // (truncated, then written again). Read it again; events already
        // stored at the same offsets are not stored twice.
        report
            .warnings
            .push(format!("{} shrank below byte {}: reading it again from the start", spec.path, row.read_to));
        store.sources_mut().rewind(&mut row)?;
    }
    Ok(row)
}

fn finish_warnings(report: &mut ImportReport, time: &TimeContext, kit: &FormatReader) {
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

impl From<std::io::Error> for IngestError {
    fn from(source: std::io::Error) -> Self {
        IngestError::Read { path: String::new(), source }
    }
}

/// Never a silently empty result: say why nothing (or not everything) was found.
fn emptiness_warnings(r: &ImportReport) -> Vec<String> {
    let mut out = Vec::new();
    let prefix = r.prefix.as_deref().map(|p| format!(" log_line_prefix '{p}'")).unwrap_or_default();
    if r.unmatched > 0 && r.misfit.is_none() {
        out.push(format!(
            "{} line(s) that look like PostgreSQL events did not fit the {}, the first at line {}; if events are missing, pass --format/--prefix",
            r.unmatched,
            r.layout(),
            r.first_unmatched.as_ref().map_or(0, |(line, _)| *line)
        ));
    }
    if r.frame.unparsed > 0 {
        out.push(format!(
            "{} line(s) that mention checkpoints did not fit the {}{prefix} layout; if events are missing, pass --format/--prefix",
            r.frame.unparsed, r.format
        ));
    }
    if r.bytes > 0 && r.candidates() == 0 {
        out.push(format!(
            "no checkpoint events in {} entries: is log_checkpoints on (off by default before PostgreSQL 15)?",
            r.frame.entries
        ));
    }
    out
}

mod batch;
pub(crate) mod pairing;
mod reader;
mod undated;

pub(crate) use undated::{read_undated, UndatedPoint, UndatedReport};

pub use reader::lexicon;

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod rewrite_tests;
#[cfg(test)]
mod uid_tests;
#[cfg(test)]
mod verdict_tests;
