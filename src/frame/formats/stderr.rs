//! stderr logs (with or without logging_collector) under any log_line_prefix.
//!
//! An entry is a prefixed line with a severity, its TAB-indented continuation
//! lines, and the prefixed DETAIL/HINT/CONTEXT/STATEMENT lines of the same
//! process that follow it. Only entries around a needle are framed.

use super::zone_evidence::{self, LOG_TIMEZONE};
use crate::catalog::Catalog;
use crate::frame::lines;
use crate::frame::prefix::{Prefix, PrefixMatch};
use crate::frame::spliced::{self, Around};
use crate::frame::time::TimeContext;
use crate::frame::{Consumed, Cut, FrameStats, Lexicon, LineLevel, Needles, Origin, Pos, Record, Scan, Secondary};

/// How far back (in lines) a candidate may sit from the first line of its entry.
/// Checkpoint entries have at most a handful of lines; a deeper hit is inside
/// some huge statement and cannot be an event.
const MAX_WALK_BACK: usize = 64;

/// An entry and the lines around it, owned (see [`Around`]).
struct Window {
    text: Vec<u8>,
    start: usize,
    next: usize,
}

impl Window {
    fn as_around(&self) -> Around<'_> {
        Around { text: &self.text, start: self.start, next: self.next }
    }
}

/// Why a record is refused when its lines sit inside another entry's prefix.
pub(crate) const SPLICED: &str = "inside another entry's log_line_prefix (a user or database name with line breaks)";

pub struct StderrScanner<'t> {
    prefix: Prefix,
    time: &'t TimeContext,
    pub(super) needles: &'static Needles,
    pub(super) catalog: &'static Catalog,
    stats: FrameStats,
    /// The last bytes consumed (at most a prefix's span), for the splice
    /// checks of entries at the start of the next region.
    behind: Vec<u8>,
    /// `behind` starts at a line start (it holds everything since one).
    behind_aligned: bool,
}

impl<'t> StderrScanner<'t> {
    pub fn new(prefix: Prefix, time: &'t TimeContext, lexicon: &'static Lexicon) -> Self {
        StderrScanner {
            prefix,
            time,
            needles: &lexicon.needles,
            catalog: lexicon.catalog,
            stats: FrameStats::default(),
            behind: Vec::new(),
            behind_aligned: true,
        }
    }

    /// Bytes of context a splice check needs on each side of an entry; 0
    /// when the prefix cannot span lines.
    fn reach(&self) -> usize {
        self.prefix.spanning().map_or(0, |s| s.span())
    }

    pub(crate) fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn parse_line<'a>(&self, bytes: &'a [u8]) -> Option<(std::borrow::Cow<'a, str>, LineLevel)> {
        let text = lines::lossy(bytes);
        let level = self.prefix.parse(&text)?.level;
        Some((text, level))
    }

    /// Start of the last entry in `buf`: everything before it is complete.
    fn last_entry_start(&self, buf: &[u8]) -> usize {
        let mut at = match lines::prev_start(buf, buf.len()) {
            Some(at) => at,
            None => return 0,
        };
        for _ in 0..MAX_WALK_BACK {
            let line = lines::text(buf, at);
            if line.first() != Some(&b'\t') {
                match self.parse_line(line) {
                    Some((_, LineLevel::Secondary(_))) => {}
                    _ => return at,
                }
            }
            match lines::prev_start(buf, at) {
                Some(prev) => at = prev,
                None => return 0,
            }
        }
        buf.len()
    }

    /// The first line of the entry holding the line at `at`, if it has one.
    fn entry_start(&self, buf: &[u8], mut at: usize) -> Option<usize> {
        for _ in 0..MAX_WALK_BACK {
            let line = lines::text(buf, at);
            if line.first() != Some(&b'\t') {
                match self.parse_line(line)?.1 {
                    LineLevel::Primary(_) => return Some(at),
                    LineLevel::Secondary(_) => {}
                }
            }
            at = lines::prev_start(buf, at)?;
        }
        None
    }

    /// Frames the entry starting at `start` from the lines of `buf` before
    /// `end`; returns it (if its first line is a primary line) and where the
    /// next entry starts. The bytes after `end` are look-ahead only: whether
    /// a line opens a spliced prefix depends on the lines after it, and the
    /// answer must not depend on where a read happened to stop.
    pub(crate) fn frame_entry(&mut self, buf: &[u8], end: usize, start: usize, pos: Pos) -> (Option<Record>, usize) {
        let first = lines::lossy(lines::text(buf, start)).into_owned();
        let mut next = lines::next_start(buf, start);
        let Some(pm) = self.prefix.parse(&first) else {
            self.stats.misfit(self.catalog, pos.line, &first);
            return (None, next);
        };
        let LineLevel::Primary(severity) = pm.level else { return (None, next) };
        // The severity word says the server's language, which may say what
        // its zone abbreviation means (see `TimeContext::learn_language`).
        if let Some(head) = first.strip_suffix(pm.message) {
            self.time.learn_language(head.trim_end().rsplit([' ', '\t', ']']).next().unwrap_or(""));
        }
        let mut record = self.record_from(&pm, severity, pos);
        let mut target: Option<Secondary> = None;
        while next < end {
            let line = lines::text(buf, next);
            if let Some(rest) = line.strip_prefix(b"\t") {
                append(&mut record, target, &lines::lossy(rest));
            } else {
                let text = lines::lossy(line);
                if !self.prefix.may_be_secondary(&text) {
                    break;
                }
                match self.prefix.parse(&text) {
                    Some(sm)
                        if matches!(sm.level, LineLevel::Secondary(_))
                            && same_process(&sm, &pm)
                            && !spliced::opens_a_spliced_prefix(&self.prefix, buf, next) =>
                    {
                        let LineLevel::Secondary(kind) = sm.level else { unreachable!() };
                        target = Some(kind);
                        set(&mut record, target, sm.message);
                    }
                    _ => break,
                }
            }
            next = lines::next_start(buf, next);
        }
        (Some(record), next)
    }

    fn record_from(&mut self, pm: &PrefixMatch<'_>, severity: crate::frame::LogSeverity, pos: Pos) -> Record {
        let time = match (pm.timestamp, pm.epoch) {
            // A reload that sets log_timezone is written in the new zone;
            // its time is settled once the record is trusted (`settle_zone`).
            (Some(ts), _) if pm.message.contains(LOG_TIMEZONE) => self.time.parse_quietly(ts).ok(),
            (Some(ts), _) => self.time.parse(ts).ok(),
            (None, Some(ep)) => TimeContext::parse_epoch(ep).ok(),
            (None, None) => None,
        };
        let origin = Origin {
            pid: pm.pid,
            backend_type: pm.backend_type.filter(|b| !b.trim().is_empty()).map(|b| b.trim().to_string()),
            session: pm.is_session(),
            session_checkable: self.prefix.session_checkable(),
            doubt: None,
            uid: None,
        };
        Record {
            offset: pos.offset,
            line: pos.line,
            time,
            origin,
            severity,
            message: pm.message.to_string(),
            detail: None,
            hint: None,
            context: None,
            statement: None,
            cut: Cut::Whole,
        }
    }
}

impl StderrScanner<'_> {
    /// A record that mentions log_timezone: when the trust checks take it
    /// for the postmaster's `parameter "log_timezone" changed to "X"`, the
    /// log's lines from it on are in X (it is itself written in X); its
    /// time is read again, with the ambiguity warning if X does not settle it.
    fn settle_zone(&mut self, record: &mut Record, first: &[u8]) {
        if let Some(zone) = zone_evidence::zone_set_by(self.catalog, record) {
            self.time.learn_zone(&zone);
        }
        let first = lines::lossy(first);
        if let Some(ts) = self.prefix.parse(&first).and_then(|pm| pm.timestamp) {
            record.time = self.time.parse(ts).ok();
        }
    }

    /// Where to stop when more input may follow: before the last entry (it
    /// may still grow), and before any entry with less than a prefix's span
    /// after it (the splice checks need to see that far) — unless that
    /// leaves nothing, as in a small append to a followed file: PostgreSQL
    /// writes an entry with all its lines at once, so the lines a check
    /// needs after a spliced line came with it.
    fn held_back(&self, region: &[u8]) -> usize {
        let boundary = self.last_entry_start(region);
        let reach = self.reach();
        if reach == 0 || region.len() <= reach {
            return boundary;
        }
        match self.last_entry_start(&region[..lines::start_of(region, region.len() - reach)]) {
            // Only the first entry starts early enough: take just that one.
            0 => boundary.min(self.first_entry_end(region)),
            limited => boundary.min(limited),
        }
    }

    /// Where the second entry of `buf` starts (`buf.len()` if there is none).
    fn first_entry_end(&self, buf: &[u8]) -> usize {
        let mut at = lines::next_start(buf, 0);
        while at < buf.len() {
            let line = lines::text(buf, at);
            if line.first() != Some(&b'\t') && !matches!(self.parse_line(line), Some((_, LineLevel::Secondary(_)))) {
                return at;
            }
            at = lines::next_start(buf, at);
        }
        buf.len()
    }

    /// Whether the entry `start..next` of `region` sits inside another
    /// entry's prefix (see `frame::spliced`).
    fn spliced(&self, region: &[u8], start: usize, next: usize) -> bool {
        self.reach() > 0 && spliced::inside_a_prefix(&self.prefix, &self.around(region, start, next).as_around())
    }

    /// Whether the line at `at`, which the prefix does not read, is text
    /// inside an earlier line's prefix (see [`spliced::inside_an_earlier_prefix`]).
    fn inside_an_earlier_prefix(&self, region: &[u8], at: usize) -> bool {
        let next = lines::next_start(region, at);
        self.reach() > 0 && spliced::inside_an_earlier_prefix(&self.prefix, &self.around(region, at, next).as_around())
    }

    /// Whole lines from up to `reach` bytes before the entry at `start`
    /// (the remembered bytes of earlier regions included) to at least
    /// `reach` bytes after its start and the end of the line after it.
    fn around(&self, region: &[u8], start: usize, next: usize) -> Window {
        let reach = self.reach();
        let mut text = self.lines_before(&region[..start], reach);
        let offset = text.len();
        let end = lines::next_start(region, (start + reach).max(next).min(region.len()));
        text.extend_from_slice(&region[start..end]);
        Window { text, start: offset, next: offset + next - start }
    }

    /// The whole lines among the last `reach` bytes before an entry, taken
    /// from `before` (the region up to the entry) and the remembered bytes.
    fn lines_before(&self, before: &[u8], reach: usize) -> Vec<u8> {
        let from_region = before.len().min(reach);
        let from_behind = (reach - from_region).min(self.behind.len());
        let behind = &self.behind[self.behind.len() - from_behind..];
        // Whether the byte before the window ends a line.
        let aligned = match (before.len() > from_region, behind.len() < self.behind.len()) {
            (true, _) => before[before.len() - from_region - 1] == b'\n',
            (false, true) => self.behind[self.behind.len() - from_behind - 1] == b'\n',
            (false, false) => self.behind_aligned,
        };
        let mut text = Vec::with_capacity(2 * reach);
        text.extend_from_slice(behind);
        text.extend_from_slice(&before[before.len() - from_region..]);
        if !aligned {
            let cut = memchr::memchr(b'\n', &text).map_or(text.len(), |i| i + 1);
            text.drain(..cut);
        }
        text
    }

    /// Keeps the last `reach` bytes consumed, for the next region's checks.
    fn remember(&mut self, consumed: &[u8]) {
        let reach = self.reach();
        if reach == 0 || consumed.is_empty() {
            return;
        }
        // A region always starts at a line start.
        if consumed.len() >= reach {
            let from = consumed.len() - reach;
            self.behind_aligned = from == 0 || consumed[from - 1] == b'\n';
            self.behind.clear();
            self.behind.extend_from_slice(&consumed[from..]);
            return;
        }
        self.behind.extend_from_slice(consumed);
        let excess = self.behind.len().saturating_sub(reach);
        if excess > 0 {
            self.behind_aligned = self.behind[excess - 1] == b'\n';
            self.behind.drain(..excess);
        }
    }
}

fn same_process(a: &PrefixMatch<'_>, b: &PrefixMatch<'_>) -> bool {
    match (a.pid, b.pid) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Appends a continuation line to the message or secondary field it belongs to.
fn append(record: &mut Record, target: Option<Secondary>, text: &str) {
    match secondary_slot(record, target) {
        Some(slot) => push(slot, text),
        None => {
            record.message.push('\n');
            record.message.push_str(text);
        }
    }
}

/// Starts a secondary field; a repeated one (nested CONTEXT lines) is appended.
fn set(record: &mut Record, target: Option<Secondary>, text: &str) {
    if let Some(slot) = secondary_slot(record, target) {
        push(slot, text);
    }
}

fn secondary_slot(record: &mut Record, target: Option<Secondary>) -> Option<&mut Option<String>> {
    Some(match target? {
        Secondary::Detail | Secondary::Location | Secondary::Backtrace => &mut record.detail,
        Secondary::Hint => &mut record.hint,
        Secondary::Context => &mut record.context,
        Secondary::Statement | Secondary::Query => &mut record.statement,
    })
}

fn push(slot: &mut Option<String>, text: &str) {
    match slot {
        Some(s) => {
            s.push('\n');
            s.push_str(text);
        }
        None => *slot = Some(text.to_string()),
    }
}

impl Scan for StderrScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let boundary = if last { region.len() } else { self.held_back(region) };
        let work = &region[..boundary];
        let newlines = lines::count(work);
        let physical = newlines + u64::from(work.last().is_some_and(|&b| b != b'\n'));
        self.stats.lines += physical;
        self.stats.entries += physical - lines::count_tab_lines(work);
        let (mut done, mut counted, mut line) = (0usize, 0usize, pos.line);
        let hits = self.needles.hits(work);
        for hit in hits {
            if hit < done {
                continue;
            }
            let at = lines::start_of(work, hit);
            let Some(start) = self.entry_start(work, at).filter(|&s| s >= done) else {
                let text = lines::text(work, at);
                if text.first() != Some(&b'\t') {
                    let number = line + lines::count(&work[counted..at]);
                    if self.inside_an_earlier_prefix(region, at) {
                        self.stats.inside_names += 1;
                        self.stats.first_inside_name.get_or_insert(number);
                    } else {
                        self.stats.misfit(self.catalog, number, &lines::lossy(text));
                    }
                }
                done = lines::next_start(work, at);
                continue;
            };
            line += lines::count(&work[counted..start]);
            counted = start;
            let entry_pos = Pos { offset: pos.offset + start as u64, line };
            let (record, next) = self.frame_entry(region, boundary, start, entry_pos);
            done = next;
            if let Some(mut record) = record {
                if self.spliced(region, start, next) {
                    record.origin.doubt = Some(SPLICED);
                }
                if record.message.contains(LOG_TIMEZONE) {
                    self.settle_zone(&mut record, lines::text(region, start));
                }
                // The input ends inside the message's last line: a region
                // holds an unterminated line only when the input has ended.
                let secondary = record.detail.is_some()
                    || record.hint.is_some()
                    || record.context.is_some()
                    || record.statement.is_some();
                if next >= region.len() && region.last() != Some(&b'\n') && !secondary {
                    record.cut = Cut::AtEnd;
                }
                self.stats.candidates += 1;
                emit(record);
            }
        }
        self.remember(work);
        Consumed { bytes: boundary, newlines }
    }

    fn wants_look_behind(&self) -> usize {
        self.reach()
    }

    fn look_behind(&mut self, bytes: &[u8]) {
        // Resuming mid-source: the first bytes may belong to a line whose
        // start is not here.
        self.behind = bytes.to_vec();
        self.behind_aligned = bytes.is_empty();
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests;
