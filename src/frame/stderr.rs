//! stderr logs (with or without logging_collector) under any log_line_prefix.
//!
//! An entry is a prefixed line with a severity, its TAB-indented continuation
//! lines, and the prefixed DETAIL/HINT/CONTEXT/STATEMENT lines of the same
//! process that follow it. Only entries around a needle are framed.

use super::lines;
use super::prefix::{Prefix, PrefixMatch};
use super::time::TimeContext;
use super::{Consumed, FrameStats, LineLevel, Needles, Origin, Pos, Record, Scan, Secondary};

/// How far back (in lines) a candidate may sit from the first line of its entry.
/// Checkpoint entries have at most a handful of lines; a deeper hit is inside
/// some huge statement and cannot be an event.
const MAX_WALK_BACK: usize = 64;

pub struct StderrScanner<'t> {
    prefix: Prefix,
    time: &'t TimeContext,
    needles: &'static Needles,
    stats: FrameStats,
}

impl<'t> StderrScanner<'t> {
    pub fn new(prefix: Prefix, time: &'t TimeContext) -> Self {
        StderrScanner { prefix, time, needles: Needles::global(), stats: FrameStats::default() }
    }

    pub fn prefix(&self) -> &Prefix {
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

    /// Frames the entry starting at `start`; returns it (if its first line
    /// is a primary line) and where the next entry starts.
    pub(crate) fn frame_entry(&mut self, buf: &[u8], start: usize, pos: Pos) -> (Option<Record>, usize) {
        let first = lines::lossy(lines::text(buf, start)).into_owned();
        let mut next = lines::next_start(buf, start);
        let Some(pm) = self.prefix.parse(&first) else {
            self.stats.unparsed += 1;
            return (None, next);
        };
        let LineLevel::Primary(severity) = pm.level else { return (None, next) };
        let mut record = self.record_from(&pm, severity, pos);
        let mut target: Option<Secondary> = None;
        while next < buf.len() {
            let line = lines::text(buf, next);
            if let Some(rest) = line.strip_prefix(b"\t") {
                append(&mut record, target, &lines::lossy(rest));
            } else {
                let text = lines::lossy(line);
                match self.prefix.parse(&text) {
                    Some(sm) if matches!(sm.level, LineLevel::Secondary(_)) && same_process(&sm, &pm) => {
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

    fn record_from(&mut self, pm: &PrefixMatch<'_>, severity: super::Severity, pos: Pos) -> Record {
        let time = match (pm.timestamp, pm.epoch) {
            (Some(ts), _) => self.time.parse(ts).ok(),
            (None, Some(ep)) => TimeContext::parse_epoch(ep).ok(),
            (None, None) => None,
        };
        let non_empty = |f: Option<&str>| f.is_some_and(|v| !v.trim().is_empty());
        let origin = Origin {
            pid: pm.pid,
            backend_type: pm.backend_type.filter(|b| !b.trim().is_empty()).map(|b| b.trim().to_string()),
            session: pm.q_tail
                || non_empty(pm.user)
                || non_empty(pm.database)
                || non_empty(pm.application)
                || non_empty(pm.remote_host),
            session_checkable: self.prefix.session_checkable(),
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
        let boundary = if last { region.len() } else { self.last_entry_start(region) };
        let work = &region[..boundary];
        let newlines = lines::count(work);
        let physical = newlines + u64::from(work.last().is_some_and(|&b| b != b'\n'));
        self.stats.lines += physical;
        self.stats.entries += physical - lines::count_tab_lines(work);
        let (mut done, mut counted, mut line) = (0usize, 0usize, pos.line);
        let hits: Vec<usize> = self.needles.find_iter(work).collect();
        for hit in hits {
            if hit < done {
                continue;
            }
            let at = lines::start_of(work, hit);
            let Some(start) = self.entry_start(work, at).filter(|&s| s >= done) else {
                if lines::text(work, at).first() != Some(&b'\t') {
                    self.stats.unparsed += 1;
                }
                done = lines::next_start(work, at);
                continue;
            };
            line += lines::count(&work[counted..start]);
            counted = start;
            let entry_pos = Pos { offset: pos.offset + start as u64, line };
            let (record, next) = self.frame_entry(work, start, entry_pos);
            done = next;
            if let Some(record) = record {
                self.stats.candidates += 1;
                emit(record);
            }
        }
        Consumed { bytes: boundary, newlines }
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}
