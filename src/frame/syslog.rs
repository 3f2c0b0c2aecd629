//! syslog, as a syslog daemon writes PostgreSQL's messages to a file:
//! `Nov 22 08:04:20 host postgres[123]: [5-1] <log_line_prefix>LOG:  text`.
//!
//! PostgreSQL sends a multi-line entry (continuation lines, DETAIL, HINT) and
//! a line longer than 900 bytes as several syslog messages sharing a
//! sequence number: `[5-1]`, `[5-2]`, … (`[5]` when it fits in one). Other
//! processes' messages may interleave, so chunks are gathered by pid and
//! sequence number, then framed like a stderr entry. A chunk that starts
//! with a TAB (`#011` after rsyslog's escaping) is a continuation line; one
//! that starts with the prefix and a level is a DETAIL/HINT line; anything
//! else continues a long line that was cut.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::bytes::Regex;

use super::stderr::StderrScanner;
use super::{lines, Consumed, FrameStats, Needles, Pos, Record, Scan};

/// Why a record whose prefix names another process than its sender is refused.
const FOREIGN_PID: &str = "its log_line_prefix names another pid than the process that sent it to syslog";

/// How many lines around a chunk may hold the other chunks of its message.
const CHUNK_WINDOW: usize = 64;

fn header_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ [^\s\[]+\[(?P<pid>\d+)\]: (?:\[(?P<seq>\d+)(?:-(?P<chunk>\d+))?\] )?",
        )
        .expect("valid regex")
    })
}

/// Whether `line` looks like PostgreSQL output relayed by a syslog daemon.
pub(crate) fn looks_like(line: &[u8]) -> bool {
    header_re().captures(line).is_some_and(|c| c.name("seq").is_some())
}

/// The syslog envelope of one line.
#[derive(Debug, Clone, PartialEq)]
struct Header<'a> {
    time: &'a [u8],
    pid: u32,
    seq: Option<u64>,
    chunk: u32,
    text: &'a [u8],
}

/// The text after the envelope, for a first chunk (prefix detection).
pub fn body(line: &[u8]) -> Option<&[u8]> {
    header(line).filter(|h| h.chunk == 1).map(|h| h.text)
}

fn header(line: &[u8]) -> Option<Header<'_>> {
    let c = header_re().captures(line)?;
    let num = |name: &str| c.name(name).and_then(|m| std::str::from_utf8(m.as_bytes()).ok()?.parse::<u64>().ok());
    Some(Header {
        time: c.name("ts")?.as_bytes(),
        pid: num("pid")? as u32,
        seq: num("seq"),
        chunk: num("chunk").unwrap_or(1) as u32,
        text: &line[c.get(0)?.end()..],
    })
}

pub(crate) struct SyslogScanner<'t> {
    entry: StderrScanner<'t>,
    needles: &'static Needles,
    stats: FrameStats,
}

impl<'t> SyslogScanner<'t> {
    /// `entry` frames the reassembled text (it carries the log_line_prefix).
    pub fn new(entry: StderrScanner<'t>) -> Self {
        let needles = entry.needles;
        SyslogScanner { entry, needles, stats: FrameStats::default() }
    }

    /// Start of the last message's first chunk: the rest may still grow.
    fn last_message_start(&self, buf: &[u8]) -> usize {
        let mut at = buf.len();
        for _ in 0..CHUNK_WINDOW {
            let Some(prev) = lines::prev_start(buf, at) else { return 0 };
            at = prev;
            if header(lines::text(buf, at)).is_none_or(|h| h.chunk == 1) {
                return at;
            }
        }
        buf.len()
    }

    /// Line starts of every chunk of the message (pid, seq) around `at`.
    fn chunks(buf: &[u8], at: usize, pid: u32, seq: Option<u64>) -> Vec<usize> {
        let same = |s: usize| header(lines::text(buf, s)).is_some_and(|h| h.pid == pid && h.seq == seq);
        let mut first = at;
        let mut cur = at;
        for _ in 0..CHUNK_WINDOW {
            match lines::prev_start(buf, cur) {
                Some(prev) => cur = prev,
                None => break,
            }
            if same(cur) {
                first = cur;
            }
        }
        let mut found = vec![];
        let mut cur = first;
        for _ in 0..2 * CHUNK_WINDOW {
            if cur >= buf.len() {
                break;
            }
            if same(cur) {
                found.push(cur);
            }
            cur = lines::next_start(buf, cur);
        }
        found
    }

    /// Rebuilds the stderr form of a message from its chunks.
    fn reassemble(&self, buf: &[u8], starts: &[usize]) -> Vec<u8> {
        let mut text = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            let Some(h) = header(lines::text(buf, s)) else { continue };
            let body = h.text;
            if i == 0 {
                text.extend_from_slice(body);
            } else if let Some(rest) = body.strip_prefix(b"#011").or_else(|| body.strip_prefix(b"\t")) {
                text.extend_from_slice(b"\n\t");
                text.extend_from_slice(rest);
            } else if self.entry.prefix().parse(&lines::lossy(body)).is_some() {
                text.push(b'\n');
                text.extend_from_slice(body);
            } else {
                text.extend_from_slice(body);
            }
        }
        text
    }

    fn syslog_time(&self, raw: &[u8]) -> Option<jiff::Timestamp> {
        let raw = std::str::from_utf8(raw).ok()?;
        if let Ok(t) = raw.parse::<jiff::Timestamp>() {
            return Some(t);
        }
        // RFC 3164 has no year: take the one that puts the time closest before now.
        let now = jiff::Zoned::now();
        let tz = now.time_zone().clone();
        let this_year = format!("{} {}", now.year(), raw.split_whitespace().collect::<Vec<_>>().join(" "));
        let dt = jiff::civil::DateTime::strptime("%Y %b %d %H:%M:%S", &this_year).ok()?;
        let t = dt.to_zoned(tz.clone()).ok()?;
        if t.timestamp() > now.timestamp() + jiff::SignedDuration::from_hours(24) {
            return dt.checked_sub(jiff::Span::new().years(1)).ok()?.to_zoned(tz).ok().map(|z| z.timestamp());
        }
        Some(t.timestamp())
    }
}

impl Scan for SyslogScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let boundary = if last { region.len() } else { self.last_message_start(region) };
        let work = &region[..boundary];
        let newlines = lines::count(work);
        self.stats.lines += lines::count_lines(work);
        // A chunk whose text starts with a TAB continues the line before it;
        // TABs elsewhere (escaped as #011 inside a statement) do not count.
        let continuations =
            memchr::memmem::find_iter(work, b"] #011").count() + memchr::memmem::find_iter(work, b"] \t").count();
        self.stats.entries += lines::count_lines(work).saturating_sub(continuations as u64);
        let mut seen: HashSet<(u32, Option<u64>)> = HashSet::new();
        let hits: Vec<usize> = self.needles.find_iter(work).collect();
        for hit in hits {
            let at = lines::start_of(work, hit);
            let Some(h) = header(lines::text(work, at)) else {
                self.stats.unparsed += 1;
                continue;
            };
            if !seen.insert((h.pid, h.seq)) {
                continue;
            }
            let starts = Self::chunks(work, at, h.pid, h.seq);
            let Some(&first) = starts.first() else { continue };
            let text = self.reassemble(work, &starts);
            let line = pos.line + lines::count(&work[..first]);
            let entry_pos = Pos { offset: pos.offset + first as u64, line };
            let (record, _) = self.entry.frame_entry(&text, 0, entry_pos);
            let Some(mut record) = record else {
                self.stats.unparsed += 1;
                continue;
            };
            let fh = header(lines::text(work, first)).unwrap_or(h);
            if record.origin.pid.is_some_and(|pid| pid != fh.pid) {
                // The syslog daemon writes the sender's real pid; a `%p` that
                // disagrees was written by someone else (text a client put
                // into its user name, without syslog_sequence_numbers).
                record.origin.doubt = Some(FOREIGN_PID);
            }
            record.origin.pid = record.origin.pid.or(Some(fh.pid));
            record.time = record.time.or_else(|| self.syslog_time(fh.time));
            self.stats.candidates += 1;
            emit(record);
        }
        Consumed { bytes: boundary, newlines }
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_envelope() {
        let h = header(b"Nov 22 08:04:20 db1 postgres[21752]: [3-2] #011(toutes les 3 secondes)").unwrap();
        assert_eq!((h.pid, h.seq, h.chunk), (21752, Some(3), 2));
        assert_eq!(h.text, b"#011(toutes les 3 secondes)");
        let h = header(b"2026-11-22T08:04:20.123456+00:00 db1 postgres[7]: [9] LOG:  x").unwrap();
        assert_eq!((h.pid, h.seq, h.chunk), (7, Some(9), 1));
        assert!(looks_like(b"Nov  2 08:04:20 db1 postgres[21752]: [3-1] LOG:  starting PostgreSQL 15"));
        assert!(header(b"not syslog").is_none());
    }

    use crate::catalog::Catalog;
    use crate::frame::prefix::Prefix;
    use crate::frame::testing::frame_all;
    use crate::frame::time::TimeContext;
    use crate::frame::Tail;

    /// rsyslog's file of a server with `log_line_prefix = '%m [%p] '`: a
    /// message's chunks interleaved with another process's, a HINT and a
    /// line cut at the chunk size as further chunks, a TAB continuation as
    /// `#011`, and a message whose `%p` is not its sender's.
    const LOG: &[&str] = &[
        "Nov 22 08:04:23 db1 postgres[21760]: [5-1] 2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)\n",
        "Nov 22 08:04:23 db1 postgres[21770]: [2-1] 2026-11-22 08:04:23.390 UTC [21770] LOG:  statement: SELECT 1\n",
        "Nov 22 08:04:23 db1 postgres[21760]: [5-2] 2026-11-22 08:04:23.386 UTC [21760] HINT:  Consider increasing the configuration parameter \"max_wal_size\".\n",
        "Nov 22 08:04:23 db1 postgres[21760]: [6-1] 2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distan\n",
        "Nov 22 08:04:23 db1 postgres[21760]: [6-2] ce=11499 kB, estimate=11499 kB\n",
        "Nov 22 08:04:25 db1 postgres[30000]: [3-1] 2026-11-22 08:04:25.000 UTC [21760] LOG:  checkpoint starting: wal\n",
        "Nov 22 08:04:26 db1 postgres[21770]: [3-1] 2026-11-22 08:04:26.000 UTC [21770] LOG:  statement: SELECT 'a\n",
        "Nov 22 08:04:26 db1 postgres[21770]: [3-2] #011b'\n",
    ];

    #[test]
    fn chunks_are_gathered_by_sender_and_sequence_number() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let prefix = Prefix::compile("%m [%p] ", Catalog::global().markers()).unwrap();
        let data = LOG.concat();
        let offset = |i: usize| LOG[..i].concat().len() as u64;
        for (tail, end) in
            [(Tail::Take, Pos { offset: data.len() as u64, line: 9 }), (Tail::Hold, Pos { offset: offset(6), line: 7 })]
        {
            let mut scanner =
                SyslogScanner::new(StderrScanner::new(prefix.clone(), &time, crate::frame::test_lexicon()));
            let (records, reached) = frame_all(&mut scanner, data.as_bytes(), 1 << 20, tail, Pos::START);
            assert_eq!(reached, end, "{tail:?}");
            let got: Vec<_> = records
                .iter()
                .map(|r| (r.offset, r.line, r.message.as_str(), r.hint.as_deref(), r.origin.pid, r.origin.doubt))
                .collect();
            let hint = "Consider increasing the configuration parameter \"max_wal_size\".";
            let complete = "checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB";
            assert_eq!(
                got,
                [
                    (0, 1, "checkpoints are occurring too frequently (3 seconds apart)", Some(hint), Some(21760), None),
                    (offset(3), 4, complete, None, Some(21760), None),
                    (offset(5), 6, "checkpoint starting: wal", None, Some(21760), Some(FOREIGN_PID)),
                ],
                "{tail:?}"
            );
            let stats = scanner.stats();
            let (lines, entries) = if tail == Tail::Take { (8, 7) } else { (6, 6) };
            assert_eq!(
                (stats.lines, stats.entries, stats.candidates, stats.unparsed),
                (lines, entries, 3, 0),
                "{tail:?}"
            );
        }
    }
}
