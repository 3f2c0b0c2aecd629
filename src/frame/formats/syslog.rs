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
//!
//! The envelope is RFC 3164's (`Nov 22 08:04:20 host ident[pid]: `, local
//! time without a year), rsyslog's RFC 3339 variant of it, or RFC 5424's
//! (`<134>1 2026-11-22T08:04:20.123+01:00 host ident pid - - `). Its time
//! dates a record whose log_line_prefix has none. With
//! `syslog_split_messages = off` a whole entry travels as one message, its
//! newlines escaped by rsyslog as `#012` (TABs as `#011`).

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::bytes::Regex;

use super::stderr::StderrScanner;
use crate::frame::{lines, Consumed, Cut, FrameStats, Needles, Pos, Record, Scan};

/// Why a record whose prefix names another process than its sender is refused.
pub(crate) const FOREIGN_PID: &str = "its log_line_prefix names another pid than the process that sent it to syslog";

/// How many lines around a chunk may hold the other chunks of its message.
const CHUNK_WINDOW: usize = 64;

fn header_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ [^\s\[]+\[(?P<pid>\d+)\]:|<\d{1,3}>1 (?P<ts5424>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ \S+ (?P<pid5424>\d+) \S+ (?:-|\[.*?\]) ?) (?:\[(?P<seq>\d+)(?:-(?P<chunk>\d+))?\] )?",
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
pub(crate) fn body(line: &[u8]) -> Option<&[u8]> {
    header(line).filter(|h| h.chunk == 1).map(|h| h.text)
}

/// An envelope's time, the text after it and its `[N-k] ` (whether it had
/// a sequence number), for formats that share syslog's envelope.
pub(crate) fn split(line: &[u8]) -> Option<(&[u8], &[u8], bool)> {
    let h = header(line)?;
    Some((h.time, h.text, h.seq.is_some()))
}

fn header(line: &[u8]) -> Option<Header<'_>> {
    let c = header_re().captures(line)?;
    let num = |name: &str| c.name(name).and_then(|m| std::str::from_utf8(m.as_bytes()).ok()?.parse::<u64>().ok());
    Some(Header {
        time: c.name("ts").or_else(|| c.name("ts5424"))?.as_bytes(),
        pid: num("pid").or_else(|| num("pid5424"))? as u32,
        seq: num("seq"),
        chunk: num("chunk").unwrap_or(1) as u32,
        text: &line[c.get(0)?.end()..],
    })
}

pub(crate) struct SyslogScanner<'t> {
    entry: StderrScanner<'t>,
    needles: &'static Needles,
    stats: FrameStats,
    /// When the source was last written (its mtime), in the machine's
    /// zone: RFC 3164 times without a year fall in the year before it.
    /// None: now.
    written: Option<jiff::Zoned>,
}

impl<'t> SyslogScanner<'t> {
    /// `entry` frames the reassembled text (it carries the log_line_prefix).
    pub(crate) fn new(entry: StderrScanner<'t>) -> Self {
        let needles = entry.needles;
        SyslogScanner { entry, needles, stats: FrameStats::default(), written: None }
    }

    /// Dates yearless envelope times by the source's last write (its mtime)
    /// instead of by the time of reading: a file read a year later, or just
    /// after new year, keeps its lines' year.
    pub(crate) fn written_at(mut self, mtime: Option<jiff::Timestamp>) -> Self {
        self.written = mtime.map(|t| t.to_zoned(jiff::tz::TimeZone::system()));
        self
    }

    /// The instant of an envelope's time, its year (when it has none) the
    /// one before the source's last write.
    fn envelope_instant(&self, raw: &[u8]) -> Option<jiff::Timestamp> {
        match &self.written {
            Some(written) => envelope_time(raw, written),
            None => envelope_time(raw, &jiff::Zoned::now()),
        }
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
            let body = unescape(h.text);
            let first_line = body.split(|&b| b == b'\n').next().unwrap_or_default();
            if i == 0 {
                text.extend_from_slice(&body);
            } else if let Some(rest) = body.strip_prefix(b"\t") {
                text.extend_from_slice(b"\n\t");
                text.extend_from_slice(rest);
            } else if self.entry.prefix().parse(&lines::lossy(first_line)).is_some() {
                text.push(b'\n');
                text.extend_from_slice(&body);
            } else {
                text.extend_from_slice(&body);
            }
        }
        text
    }
}

/// rsyslog's escapes of the control characters PostgreSQL sends: `#012`
/// (a newline, in a message sent whole with `syslog_split_messages = off`)
/// and `#011` (a TAB: a continuation line's first character).
fn unescape(body: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if memchr::memchr(b'#', body).is_none() {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(i) = memchr::memchr(b'#', rest) {
        out.extend_from_slice(&rest[..i]);
        let (decoded, len) = match &rest[i..] {
            [b'#', b'0', b'1', b'2', ..] => (b'\n', 4),
            [b'#', b'0', b'1', b'1', ..] => (b'\t', 4),
            _ => (b'#', 1),
        };
        out.push(decoded);
        rest = &rest[i + len..];
    }
    out.extend_from_slice(rest);
    std::borrow::Cow::Owned(out)
}

/// The instant of an envelope's time: RFC 3339 as is; RFC 3164 has no year,
/// so the year is the one that puts the time closest before `now` (up to a
/// day after it is still this year: the clocks may differ).
pub(crate) fn envelope_time(raw: &[u8], now: &jiff::Zoned) -> Option<jiff::Timestamp> {
    let raw = std::str::from_utf8(raw).ok()?;
    if let Ok(t) = raw.parse::<jiff::Timestamp>() {
        return Some(t);
    }
    let tz = now.time_zone().clone();
    let this_year = format!("{} {}", now.year(), raw.split_whitespace().collect::<Vec<_>>().join(" "));
    let dt = jiff::civil::DateTime::strptime("%Y %b %d %H:%M:%S", &this_year).ok()?;
    let t = dt.to_zoned(tz.clone()).ok()?;
    if t.timestamp() > now.timestamp() + jiff::SignedDuration::from_hours(24) {
        return dt.checked_sub(jiff::Span::new().years(1)).ok()?.to_zoned(tz).ok().map(|z| z.timestamp());
    }
    Some(t.timestamp())
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
        let hits = self.needles.hits(work);
        // The last line without an envelope counted as unparsed: a line
        // with several needles is one failure.
        let mut refused = None;
        for hit in hits {
            let at = lines::start_of(work, hit);
            let Some(h) = header(lines::text(work, at)) else {
                if refused != Some(at) {
                    refused = Some(at);
                    let number = pos.line + lines::count(&work[..at]);
                    self.stats.misfit(self.entry.catalog, number, &lines::lossy(lines::text(work, at)));
                }
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
            let (record, _) = self.entry.frame_entry(&text, text.len(), 0, entry_pos);
            let Some(mut record) = record else {
                let first_line = lines::lossy(lines::text(&text, 0)).into_owned();
                self.stats.misfit(self.entry.catalog, line, &first_line);
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
            record.time = record.time.or_else(|| self.envelope_instant(fh.time));
            // The input ended inside the message's last chunk: a region
            // ends without a newline only when the input has ended for good.
            let last_chunk = starts.last().copied().unwrap_or(first);
            if last && work.last() != Some(&b'\n') && lines::next_start(work, last_chunk) >= work.len() {
                record.cut = Cut::AtEnd;
            }
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

    #[test]
    fn reads_rfc_5424_envelopes() {
        // rsyslog's RSYSLOG_SyslogProtocol23Format: PRI, version, time,
        // host, app, pid, msgid, structured data, then the message (which
        // rsyslog may start with a space of its own).
        for line in [
            &b"<134>1 2026-11-22T09:04:23.386123+01:00 db1 postgres 21760 - - [5-2] #011(3 s)"[..],
            b"<134>1 2026-11-22T09:04:23.386123+01:00 db1 postgres 21760 - -  [5-2] #011(3 s)",
            b"<134>1 2026-11-22T09:04:23.386123+01:00 db1 postgres 21760 - [meta x=\"1\"] [5-2] #011(3 s)",
        ] {
            let h = header(line).unwrap_or_else(|| panic!("{}", lines::lossy(line)));
            assert_eq!((h.time, h.pid, h.seq, h.chunk), (&b"2026-11-22T09:04:23.386123+01:00"[..], 21760, Some(5), 2));
            assert_eq!(h.text, b"#011(3 s)");
            assert!(looks_like(line));
        }
        let h = header(b"<134>1 2026-11-22T09:04:23Z db1 postgres 7 - - LOG:  x").unwrap();
        assert_eq!((h.pid, h.seq, h.text), (7, None, &b"LOG:  x"[..]));
        assert!(header(b"<134>1 2026-11-22T09:04:23Z db1 postgres - - - [5] x").is_none(), "no pid");
    }

    #[test]
    fn rsyslog_escapes_are_decoded() {
        assert_eq!(&*unescape(b"LOG:  a#012#011b#012HINT:  c"), b"LOG:  a\n\tb\nHINT:  c");
        assert_eq!(&*unescape(b"#01 #0 # #013#011"), b"#01 #0 # #013\t");
        assert_eq!(&*unescape(b"plain"), b"plain");
    }

    /// `syslog_split_messages = off`: an entry with its continuation and
    /// HINT lines as one message, its newlines `#012`; a statement's line
    /// that looks like a log line stays inside its entry.
    #[test]
    fn a_whole_message_with_escaped_newlines_is_one_entry() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let prefix = Prefix::compile("%m [%p] %q%u@%d ", Catalog::global().markers()).unwrap();
        let data = [
            "Nov 22 08:04:23 db1 postgres[21760]: [5] 2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)#0122026-11-22 08:04:23.386 UTC [21760] HINT:  Consider increasing the configuration parameter \"max_wal_size\".\n",
            "Nov 22 08:04:24 db1 postgres[21770]: [6] 2026-11-22 08:04:24.000 UTC [21770] u@d LOG:  statement: SELECT '#0122026-11-22 08:04:24.000 UTC [21760] LOG:  checkpoint starting: wal'\n",
        ]
        .concat();
        let mut scanner = SyslogScanner::new(StderrScanner::new(prefix, &time, crate::frame::test_lexicon()));
        let (records, _) = frame_all(&mut scanner, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        let got: Vec<_> =
            records.iter().map(|r| (r.line, r.message.as_str(), r.hint.as_deref(), r.origin.session)).collect();
        assert_eq!(
            got,
            [
                (
                    1,
                    "checkpoints are occurring too frequently (3 seconds apart)",
                    Some("Consider increasing the configuration parameter \"max_wal_size\"."),
                    false
                ),
                (2, "statement: SELECT '", None, true),
            ]
        );
    }

    #[test]
    fn a_yearless_time_takes_its_year_from_the_file() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let prefix = Prefix::compile("db=%d,user=%u ", Catalog::global().markers()).unwrap();
        // Written across new year; the file last written on 2 January 2025.
        let data = [
            "Dec 31 23:59:59 db1 postgres[7]: [3-1] db=,user= LOG:  checkpoint starting: time\n",
            "Jan  1 00:00:02 db1 postgres[7]: [4-1] db=,user= LOG:  checkpoint starting: wal\n",
        ]
        .concat();
        let written: jiff::Timestamp = "2025-01-02T10:00:00Z".parse().unwrap();
        let mut scanner = SyslogScanner::new(StderrScanner::new(prefix, &time, crate::frame::test_lexicon()))
            .written_at(Some(written));
        let (records, _) = frame_all(&mut scanner, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        let zone = jiff::tz::TimeZone::system();
        let local =
            |civil: &str| civil.parse::<jiff::civil::DateTime>().unwrap().to_zoned(zone.clone()).unwrap().timestamp();
        let got: Vec<_> = records.iter().map(|r| r.time).collect();
        assert_eq!(got, [Some(local("2024-12-31T23:59:59")), Some(local("2025-01-01T00:00:02"))]);
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

    #[test]
    fn prefix_detection_reads_first_chunks_only() {
        let first =
            "2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)";
        let line = format!("Nov 22 08:04:23 db1 postgres[21760]: [5-1] {first}");
        assert_eq!(body(line.as_bytes()), Some(first.as_bytes()));
        // Without syslog_split_messages' chunk number: a first chunk too.
        let single = "2026-11-22 08:04:25.000 UTC [21760] LOG:  checkpoint starting: wal";
        assert_eq!(
            body(format!("Nov 22 08:04:25 db1 postgres[21760]: [7] {single}").as_bytes()),
            Some(single.as_bytes())
        );
        // A further chunk continues a line: no prefix of its own.
        assert_eq!(body(b"Nov 22 08:04:23 db1 postgres[21760]: [6-2] ce=11499 kB, estimate=11499 kB"), None);
        assert_eq!(body(first.as_bytes()), None, "an stderr line has no envelope");
    }

    fn berlin(civil: &str) -> jiff::Zoned {
        civil
            .parse::<jiff::civil::DateTime>()
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::get("Europe/Berlin").unwrap())
            .unwrap()
    }

    fn instant(text: &str) -> Option<jiff::Timestamp> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn the_envelope_time_takes_the_year_closest_before_now() {
        // rsyslog's RSYSLOG_FileFormat: a full instant, whatever the time now.
        let now = berlin("2026-11-22T09:00:00");
        assert_eq!(envelope_time(b"2026-11-22T09:04:23.386123+01:00", &now), instant("2026-11-22T08:04:23.386123Z"));
        assert_eq!(envelope_time(b"2025-03-01T00:00:00Z", &now), instant("2025-03-01T00:00:00Z"));
        // RSYSLOG_TraditionalFileFormat: local time without a year.
        assert_eq!(envelope_time(b"Nov 22 08:04:23", &now), instant("2026-11-22T07:04:23Z"));
        assert_eq!(envelope_time(b"Nov  2 08:04:23", &now), instant("2026-11-02T07:04:23Z"));
        assert_eq!(envelope_time(b"Jan 10 12:00:00", &now), instant("2026-01-10T11:00:00Z"));
        // Up to a day ahead of now (another host's clock): still this year.
        assert_eq!(envelope_time(b"Nov 23 08:04:23", &now), instant("2026-11-23T07:04:23Z"));
        assert_eq!(envelope_time(b"Nov 23 09:00:00", &now), instant("2026-11-23T08:00:00Z"), "exactly a day ahead");
        // Further ahead: last year's.
        assert_eq!(envelope_time(b"Nov 23 09:00:01", &now), instant("2025-11-23T08:00:01Z"));
        assert_eq!(envelope_time(b"Dec 31 23:59:58", &now), instant("2025-12-31T22:59:58Z"));
        // Read just after new year: the last lines of December are last year's.
        let new_year = berlin("2027-01-01T00:30:00");
        assert_eq!(envelope_time(b"Dec 31 23:59:58", &new_year), instant("2026-12-31T22:59:58Z"));
        assert_eq!(envelope_time(b"Jan  1 00:29:59", &new_year), instant("2026-12-31T23:29:59Z"));
        // Summer time, in the zone of the machine reading.
        assert_eq!(envelope_time(b"Jul  1 10:00:00", &now), instant("2026-07-01T08:00:00Z"));
        for bad in [&b"Nov 31 08:04:23"[..], b"Feb 29 08:04:23", b"22 Nov 08:04:23", b"Nov 22 08:04:23\xff"] {
            assert_eq!(envelope_time(bad, &now), None, "{}", lines::lossy(bad));
        }
    }

    /// rsyslog's RSYSLOG_FileFormat (RFC 3339 times) without control
    /// character escaping (a literal TAB), from a server whose
    /// log_line_prefix has no time of its own, pgBadger's syslog advice
    /// `user=%u,db=%d,app=%a,client=%h `; among its lines a script's
    /// `logger -t` message without a pid and a line of a second cluster
    /// (another log_line_prefix) on the same host.
    const NO_TIME_LOG: &[&str] = &[
        "2026-11-22T09:04:23.386123+01:00 db1 postgres[21760]: [5-1] user=,db=,app=,client= LOG:  checkpoint starting: time\n",
        "2026-11-22T09:04:25.101000+01:00 db1 postgres[21770]: [8-1] user=shop,db=shop,app=psql,client=[local] LOG:  statement: SELECT 1,\n",
        "2026-11-22T09:04:25.101000+01:00 db1 postgres[21770]: [8-2] \t2;\n",
        "2026-11-22T09:04:30.000000+01:00 db1 backup.sh: pg_backup_start done, checkpoint starting: immediate force wait\n",
        "2026-11-22T09:04:31.000000+01:00 db1 postgres[4242]: [3-1] 2026-11-22 09:04:31.000 CET [4242] LOG:  checkpoint starting: time\n",
        "2026-11-22T09:04:33.497000+01:00 db1 postgres[21760]: [6-1] user=,db=,app=,client= LOG:  checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.101 s, sync=0.002 s, total=0.111 s; sync files=2, longest=0.001 s, average=0.001 s; distance=0 kB, estimate=0 kB\n",
    ];

    #[test]
    fn the_envelope_gives_the_time_and_pid_a_prefix_lacks() {
        let time = TimeContext::new(Some("Europe/Berlin")).unwrap();
        let prefix = Prefix::compile("user=%u,db=%d,app=%a,client=%h ", Catalog::global().markers()).unwrap();
        let data = NO_TIME_LOG.concat();
        let offset = |i: usize| NO_TIME_LOG[..i].concat().len() as u64;
        let mut scanner = SyslogScanner::new(StderrScanner::new(prefix, &time, crate::frame::test_lexicon()));
        let (records, reached) = frame_all(&mut scanner, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        assert_eq!(reached, Pos { offset: data.len() as u64, line: 7 });
        let got: Vec<_> = records
            .iter()
            .map(|r| (r.offset, r.line, r.time.map(|t| t.to_string()), r.origin.pid, r.message.as_str()))
            .collect();
        let complete = NO_TIME_LOG[5].split("LOG:  ").nth(1).unwrap().trim_end();
        assert_eq!(
            got,
            [
                (0, 1, Some("2026-11-22T08:04:23.386123Z".to_string()), Some(21760), "checkpoint starting: time"),
                (offset(5), 6, Some("2026-11-22T08:04:33.497Z".to_string()), Some(21760), complete),
            ]
        );
        let stats = scanner.stats();
        // 6 lines, one of them the TAB chunk of the statement; the script's
        // line (two needles) and the other cluster's fail once each, and
        // both hold a checkpoint line's message: unmatched.
        assert_eq!((stats.lines, stats.entries, stats.candidates, stats.unparsed, stats.unmatched), (6, 5, 2, 0, 2));
        assert_eq!(stats.first_unmatched.as_ref().map(|(line, _)| *line), Some(4));
    }

    #[test]
    fn chunks_far_apart_in_a_busy_log_are_gathered() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let prefix = Prefix::compile("%m [%p] ", Catalog::global().markers()).unwrap();
        // pgbench's sessions with log_min_duration_statement = 0 write 100
        // lines between the checkpointer's two chunks.
        let busy: String = (0..100)
            .map(|i| {
                let pid = 21800 + i % 8;
                format!("Nov 22 08:04:23 db1 postgres[{pid}]: [{}-1] 2026-11-22 08:04:23.{:03} UTC [{pid}] LOG:  duration: 0.0{} ms  statement: SELECT abalance FROM pgbench_accounts WHERE aid = {};\n", 40 + i / 8, 400 + i, 10 + i % 90, 4711 * i)
            })
            .collect();
        let data = [
            "Nov 22 08:04:23 db1 postgres[21760]: [6-1] 2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distan\n",
            &busy,
            "Nov 22 08:04:23 db1 postgres[21760]: [6-2] ce=11499 kB, estimate=11499 kB\n",
        ]
        .concat();
        let mut scanner = SyslogScanner::new(StderrScanner::new(prefix, &time, crate::frame::test_lexicon()));
        let (records, _) = frame_all(&mut scanner, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        let messages: Vec<&str> = records.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(messages, ["checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB"]);
        assert_eq!((scanner.stats().lines, scanner.stats().candidates, scanner.stats().unparsed), (102, 1, 0));
    }
}
