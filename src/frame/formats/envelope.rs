//! Logs that another program wrapped, one PostgreSQL line (or record) per
//! line of its own: Cloud Logging's export of Cloud SQL (`cloudsql`),
//! CloudNativePG's JSON (`cnpg`), journald's (`journald`, `journald-json`).
//!
//! This layer only unwraps. Each envelope line gives a payload, which is
//! handed, with its neighbours, to the scanner of what PostgreSQL wrote:
//! a text line (stderr, or a syslog message) to the stderr or syslog
//! scanner — with their prefix, splice and trust checks — and a record
//! already split into fields to the jsonlog scanner. A client session's
//! line therefore carries its session fields through the envelope and is
//! rejected as it would be without one.
//!
//! Records are reported at their envelope's offset and line; a payload
//! that does not date itself takes the envelope's time.

use jiff::Timestamp;

use crate::frame::{lines, Consumed, Cut, FrameStats, Lexicon, Pos, Record, Scan};

/// Whether a record is its first line alone (no DETAIL, HINT, CONTEXT or
/// STATEMENT line, no continuation): then its envelope's cut is its message's.
fn single_line(record: &Record) -> bool {
    !record.message.contains('\n')
        && record.detail.is_none()
        && record.hint.is_none()
        && record.context.is_none()
        && record.statement.is_none()
}

/// What one envelope line holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unwrapped {
    /// A line PostgreSQL wrote, for the text scanner (no newline at its end),
    /// and the uid of the process that sent it when the envelope's writer
    /// took it from the kernel (journald's `_UID`), not from the message.
    Text { text: Vec<u8>, time: Option<Timestamp>, uid: Option<u32> },
    /// A line PostgreSQL wrote that a pager cut at the terminal's width and
    /// marked so (`>` last, removed here): read as [`Unwrapped::Text`], its
    /// record marked [`Cut::Marked`].
    Cut { text: Vec<u8>, time: Option<Timestamp> },
    /// A record in jsonlog's form, for the jsonlog scanner.
    Json { line: Vec<u8>, time: Option<Timestamp> },
    /// The start or a middle part of a line the next envelope goes on
    /// with (Docker's json-file cuts a line every 16 KiB; CRI logs mark the
    /// parts `P`): joined with what follows up to the [`Unwrapped::Text`]
    /// that ends it, so that no part is ever read as a line of its own (a
    /// client who sizes a statement to put a forged line at a part's start
    /// gets nothing from it).
    Piece { text: Vec<u8>, time: Option<Timestamp> },
    /// A well-formed envelope of another program's message.
    Foreign,
    /// Not an envelope of this format.
    Broken,
}

/// Opens one envelope line (without its newline).
pub(crate) type Open = Box<dyn Fn(&[u8]) -> Unwrapped + Send>;

/// A region's lines opened.
#[derive(Default)]
struct Opened {
    text: Lane,
    json: Lane,
    /// (start, line, another program's) of the lines that held no payload.
    other: Vec<(usize, u64, bool)>,
    /// The start of a line cut into pieces whose end is not in the region.
    unfinished: Option<usize>,
}

/// Where a payload line came from.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// Its start in the lane's buffer.
    at: usize,
    /// Its envelope's start in the region, and line number in the source.
    source: usize,
    line: u64,
    time: Option<Timestamp>,
    uid: Option<u32>,
    /// Whether the envelope line was cut short.
    cut: Cut,
}

/// The payloads of one scanner: their buffer and where each came from.
#[derive(Default)]
struct Lane {
    buf: Vec<u8>,
    spans: Vec<Span>,
}

impl Lane {
    fn push(&mut self, payload: &[u8], source: usize, line: u64, time: Option<Timestamp>, uid: Option<u32>) {
        self.push_cut(payload, source, line, time, uid, Cut::Whole);
    }

    fn push_cut(
        &mut self,
        payload: &[u8],
        source: usize,
        line: u64,
        time: Option<Timestamp>,
        uid: Option<u32>,
        cut: Cut,
    ) {
        self.spans.push(Span { at: self.buf.len(), source, line, time, uid, cut });
        self.buf.extend_from_slice(payload);
        self.buf.push(b'\n');
    }

    /// The span holding byte `at` of the buffer.
    fn span_of(&self, at: usize) -> Option<&Span> {
        let i = self.spans.partition_point(|s| s.at <= at);
        self.spans.get(i.checked_sub(1)?)
    }

    /// Where in the region reading stops when the scanner consumed
    /// `consumed` bytes of the buffer: at the envelope of the first payload
    /// not wholly consumed (read again next time), else at `end`.
    fn reach(&self, consumed: usize, end: usize) -> usize {
        if consumed >= self.buf.len() {
            return end;
        }
        self.span_of(consumed).map_or(end, |s| s.source)
    }

    /// The source line of the envelope holding line `line` (1-based) of the buffer.
    fn source_line(&self, line: u64) -> Option<u64> {
        let skip = usize::try_from(line.checked_sub(1)?).ok()?;
        let at = if skip == 0 { 0 } else { memchr::memchr_iter(b'\n', &self.buf).nth(skip - 1)? + 1 };
        self.span_of(at).map(|s| s.line)
    }

    /// `record` at its envelope's position, dated by it if need be, with
    /// the uid its envelope vouches for (that of its first line's sender:
    /// the syslog scanner gathers a message's chunks by the sender's pid).
    fn place(&self, mut record: Record, pos: Pos) -> Record {
        if let Some(s) = self.span_of(record.offset as usize) {
            record.offset = pos.offset + s.source as u64;
            record.line = s.line;
            record.time = record.time.or(s.time);
            record.origin.uid = s.uid;
            if record.cut == Cut::Whole && single_line(&record) {
                record.cut = s.cut;
            }
        }
        record
    }
}

pub(crate) struct EnvelopeScanner<'t> {
    open: Open,
    /// Frames text payloads (stderr or syslog); may hold its last entry back.
    text: Box<dyn Scan + 't>,
    /// Frames jsonlog payloads; always consumes all it is given.
    json: Box<dyn Scan + 't>,
    lexicon: &'static Lexicon,
    /// Lines and the envelopes that failed, counted here; and the first
    /// unmatched line, the lanes' at their envelope's line number.
    own: FrameStats,
    stats: FrameStats,
}

impl<'t> EnvelopeScanner<'t> {
    pub(crate) fn new(
        open: Open,
        text: Box<dyn Scan + 't>,
        json: Box<dyn Scan + 't>,
        lexicon: &'static Lexicon,
    ) -> Self {
        EnvelopeScanner { open, text, json, lexicon, own: FrameStats::default(), stats: FrameStats::default() }
    }

    /// Runs `scan` on a lane's scanner; a first unmatched line it found is
    /// kept at its envelope's line number.
    fn scan_lane(
        &mut self,
        json: bool,
        lane: &Lane,
        upto: usize,
        last: bool,
        emit: &mut dyn FnMut(Record),
    ) -> Consumed {
        let scanner = if json { &mut self.json } else { &mut self.text };
        let had = scanner.stats().first_unmatched.is_some();
        let done = scanner.scan(&lane.buf[..upto], Pos::START, last, emit);
        if let (false, Some((line, text))) = (had, scanner.stats().first_unmatched.clone()) {
            if self.own.first_unmatched.is_none() {
                self.own.first_unmatched = lane.source_line(line).map(|l| (l, text));
            }
        }
        done
    }

    /// Opens every line of `region` into the two lanes; returns them, the
    /// lines that are no envelope or another program's (with their start),
    /// and where a line cut into pieces starts whose end is not in the
    /// region yet (it is read once its end comes, or the input ends).
    fn open_all(&self, region: &[u8], pos: Pos, last: bool) -> Opened {
        let mut o = Opened::default();
        let (mut at, mut line) = (0, pos.line);
        // The pieces of a line so far: its text, and where its first envelope is.
        let mut pieces: Option<(Vec<u8>, usize, u64, Option<Timestamp>)> = None;
        while at < region.len() {
            let raw = lines::text(region, at);
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            match (self.open)(raw) {
                Unwrapped::Piece { text: t, time } => match &mut pieces {
                    Some((joined, ..)) => joined.extend_from_slice(&t),
                    None => pieces = Some((t, at, line, time)),
                },
                Unwrapped::Text { text: t, time, uid } => match pieces.take() {
                    Some((mut joined, start, first, first_time)) => {
                        joined.extend_from_slice(&t);
                        o.text.push(&joined, start, first, first_time.or(time), uid);
                    }
                    None => {
                        // The input ended inside this envelope line (a region
                        // holds an unterminated line only once it has).
                        let at_end = lines::end_of(region, at) == region.len() && region.last() != Some(&b'\n');
                        let cut = if at_end { Cut::AtEnd } else { Cut::Whole };
                        o.text.push_cut(&t, at, line, time, uid, cut)
                    }
                },
                Unwrapped::Cut { text: t, time } => {
                    // A part of a line cut into pieces is never read alone:
                    // the cut joins it, and the whole is cut.
                    match pieces.take() {
                        Some((mut joined, start, first, first_time)) => {
                            joined.extend_from_slice(&t);
                            o.text.push_cut(&joined, start, first, first_time.or(time), None, Cut::Marked);
                        }
                        None => o.text.push_cut(&t, at, line, time, None, Cut::Marked),
                    }
                }
                Unwrapped::Json { line: l, time } => o.json.push(&l, at, line, time, None),
                Unwrapped::Foreign => o.other.push((at, line, true)),
                Unwrapped::Broken => o.other.push((at, line, false)),
            }
            at = lines::next_start(region, at);
            line += 1;
        }
        if let Some((joined, start, first, time)) = pieces {
            match last {
                // The input ended inside the line: what came of it is read.
                true => o.text.push(&joined, start, first, time, None),
                false => o.unfinished = Some(start),
            }
        }
        o
    }

    /// Counts the lines of `done` (the consumed part of the region) and
    /// its lines that held no payload.
    fn count(&mut self, done: &[u8], other: &[(usize, u64, bool)]) {
        self.own.lines += lines::count_lines(done);
        for &(at, line, foreign) in other.iter().filter(|(at, _, _)| *at < done.len()) {
            // Another program's message is an entry of the log, though not
            // PostgreSQL's; a broken one that mentions checkpoints is a line
            // that did not fit.
            self.own.entries += 1;
            let text = lines::text(done, at);
            if !foreign && !self.lexicon.needles.hits(text).is_empty() {
                self.own.misfit(self.lexicon.catalog, line, &lines::lossy(text));
            }
        }
        self.total();
    }

    fn total(&mut self) {
        let (t, j) = (self.text.stats(), self.json.stats());
        self.stats = FrameStats {
            lines: self.own.lines,
            entries: t.entries + j.entries + self.own.entries,
            candidates: t.candidates + j.candidates,
            unparsed: t.unparsed + j.unparsed + self.own.unparsed,
            unmatched: t.unmatched + j.unmatched + self.own.unmatched,
            first_unmatched: self.own.first_unmatched.clone(),
            oversized: self.own.oversized + j.oversized,
            inside_names: t.inside_names,
            // The lane's line numbers are not the file's.
            first_inside_name: None,
        };
    }
}

impl Scan for EnvelopeScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let Opened { text, json, other, unfinished } = self.open_all(region, pos, last);
        let mut records = Vec::new();
        let consumed = if text.buf.is_empty() {
            0
        } else {
            self.scan_lane(false, &text, text.buf.len(), last, &mut |r| records.push(r)).bytes
        };
        let boundary = text.reach(consumed, unfinished.unwrap_or(region.len())).min(unfinished.unwrap_or(usize::MAX));
        let mut placed: Vec<Record> = records
            .into_iter()
            .map(|r| text.place(r, pos))
            .filter(|r| r.offset < pos.offset + boundary as u64)
            .collect();
        // The JSON payloads before the boundary; the rest come again.
        let upto = json.spans.iter().find(|s| s.source >= boundary).map_or(json.buf.len(), |s| s.at);
        if upto > 0 {
            self.scan_lane(true, &json, upto, true, &mut |r| placed.push(json.place(r, pos)));
        }
        placed.sort_by_key(|r| r.offset);
        placed.into_iter().for_each(&mut *emit);
        self.count(&region[..boundary], &other);
        Consumed { bytes: boundary, newlines: lines::count(&region[..boundary]) }
    }

    fn skip(&mut self, piece: &[u8], _first: bool, last: bool) -> Option<usize> {
        let end = memchr::memchr(b'\n', piece).map(|i| i + 1).or(last.then_some(piece.len()));
        if end.is_some() {
            self.own.lines += 1;
            self.own.entries += 1;
            self.own.oversized += 1;
            self.total();
        }
        end
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}

/// Whether the envelopes of `head` date the lines they hold: every text
/// payload comes with a time.
pub(crate) fn dates_lines(open: &dyn Fn(&[u8]) -> Unwrapped, head: &[u8]) -> bool {
    let complete = memchr::memrchr(b'\n', head).map_or(head, |i| &head[..=i]);
    let mut texts = complete.split(|&b| b == b'\n').filter_map(|line| match open(line) {
        Unwrapped::Text { time, .. } | Unwrapped::Piece { time, .. } | Unwrapped::Cut { time, .. } => {
            Some(time.is_some())
        }
        _ => None,
    });
    texts.next().is_some_and(|first| first && texts.all(|dated| dated))
}

/// The payload lines of an envelope log's first bytes, for prefix detection.
pub(crate) fn text_payloads(open: &dyn Fn(&[u8]) -> Unwrapped, head: &[u8]) -> Vec<u8> {
    let complete = memchr::memrchr(b'\n', head).map_or(head, |i| &head[..=i]);
    let mut out = Vec::new();
    for line in complete.split(|&b| b == b'\n') {
        match open(line) {
            Unwrapped::Text { text, .. } | Unwrapped::Cut { text, .. } => {
                out.extend_from_slice(&text);
                out.push(b'\n');
            }
            Unwrapped::Piece { text, .. } => out.extend_from_slice(&text),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::frame::formats::jsonlog::JsonScanner;
    use crate::frame::formats::stderr::StderrScanner;
    use crate::frame::formats::{cloudsql, cnpg};
    use crate::frame::prefix::Prefix;
    use crate::frame::testing::{check_growing_file, frame_all};
    use crate::frame::time::TimeContext;
    use crate::frame::{test_lexicon, Tail};
    use serde_json::json;

    const PREFIX: &str = "%m [%p]: [%l-1] db=%d,user=%u ";

    fn scanner<'t>(open: Open, time: &'t TimeContext) -> EnvelopeScanner<'t> {
        // Compiled once: with every language's markers it takes a while,
        // and the growing-file tests make a scanner per cut.
        static COMPILED: std::sync::OnceLock<Prefix> = std::sync::OnceLock::new();
        let prefix = COMPILED.get_or_init(|| Prefix::compile(PREFIX, Catalog::global().markers()).unwrap()).clone();
        let text = Box::new(StderrScanner::new(prefix, time, test_lexicon()));
        let json = Box::new(JsonScanner::new(time, test_lexicon()));
        EnvelopeScanner::new(open, text, json, test_lexicon())
    }

    fn logged(line: &str) -> String {
        format!("{}\n", json!({"textPayload": line, "timestamp": "2026-11-22T08:04:24Z", "severity": "INFO"}))
    }

    /// Cloud SQL's entries, one per stderr line: the warning's HINT line is
    /// an entry of its own that joins it, a session's line carries its
    /// session, an audit entry is another program's, a broken line that
    /// mentions checkpoints is counted.
    fn cloudsql_log() -> Vec<String> {
        vec![
            [
                logged("2026-11-22 08:04:23.386 UTC [21760]: [5-1] db=,user= LOG:  checkpoints are occurring too frequently (3 seconds apart)"),
                logged("2026-11-22 08:04:23.386 UTC [21760]: [6-1] db=,user= HINT:  Consider increasing the configuration parameter \"max_wal_size\"."),
            ]
            .concat(),
            logged("2026-11-22 08:04:23.497 UTC [21760]: [7-1] db=,user= LOG:  checkpoint starting: wal"),
            format!("{}\n", json!({"protoPayload": {"methodName": "cloudsql.instances.update"}, "timestamp": "2026-11-22T08:04:25Z"})),
            logged("2026-11-22 08:04:25.000 UTC [30000]: [2-1] db=shop,user=app LOG:  checkpoint starting: time"),
            "{\"textPayload\": \"checkpoint complete: wrote 1 buffers\n".to_string(),
            logged("2026-11-22 08:04:26.000 UTC [21760]: [8-1] db=,user= LOG:  checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB"),
        ]
    }

    #[test]
    fn cloudsql_entries_are_framed_as_their_stderr_lines() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let log = cloudsql_log();
        let data = log.concat();
        let offset = |i: usize| log[..i].concat().len() as u64;
        let mut s = scanner(Box::new(cloudsql::open), &time);
        let (records, end) = frame_all(&mut s, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        assert_eq!(end, Pos { offset: data.len() as u64, line: 8 });
        let got: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.offset,
                    r.line,
                    r.message.split(':').next().unwrap(),
                    r.hint.is_some(),
                    r.origin.session,
                    r.origin.pid,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, 1, "checkpoints are occurring too frequently (3 seconds apart)", true, false, Some(21760)),
                (offset(1), 3, "checkpoint starting", false, false, Some(21760)),
                (offset(3), 5, "checkpoint starting", false, true, Some(30000)),
                (offset(5), 7, "checkpoint complete", false, false, Some(21760)),
            ]
        );
        assert_eq!(records[0].time, Some("2026-11-22T08:04:23.386Z".parse().unwrap()), "the prefix's time first");
        let stats = s.stats();
        // 7 lines; entries: 5 of PostgreSQL, the audit entry, the broken
        // one, which holds a complete line's head: unmatched, at its line.
        assert_eq!((stats.lines, stats.entries, stats.candidates, stats.unparsed, stats.unmatched), (7, 7, 4, 0, 1));
        assert_eq!(stats.first_unmatched.as_ref().map(|(line, _)| *line), Some(6));
    }

    /// Stopped at any byte and read on: the same records. (Without the
    /// HINT: a file read to its end takes a warning whose HINT is not yet
    /// written, in an envelope as in stderr; the daemon holds it back.)
    #[test]
    fn a_growing_cloudsql_export_is_read_like_the_whole() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let log = cloudsql_log()[1..].to_vec();
        for chunk in [400, 1 << 20] {
            check_growing_file(|| Box::new(scanner(Box::new(cloudsql::open), &time)), &log, chunk);
        }
    }

    /// [`a_growing_cloudsql_export_is_read_like_the_whole`] and the cnpg
    /// log stopped only around each envelope line's start and in its
    /// middle: a second, where every byte takes minutes.
    #[test]
    fn a_growing_export_stopped_at_each_envelope_line() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let around = |log: &[String]| {
            let starts = crate::frame::testing::boundaries(log);
            let len = starts.last().unwrap().offset as usize;
            let mut cuts: Vec<usize> = starts
                .windows(2)
                .flat_map(|w| {
                    let (a, b) = (w[0].offset as usize, w[1].offset as usize);
                    [a.saturating_sub(1), a, a + 1, (a + b) / 2]
                })
                .collect();
            cuts.extend([len - 1, len]);
            cuts
        };
        let cloudsql = cloudsql_log()[1..].to_vec();
        let cnpg = cnpg_log();
        for chunk in [400, 1 << 20] {
            let new = || Box::new(scanner(Box::new(cloudsql::open), &time)) as Box<dyn Scan>;
            crate::frame::testing::check_growing_file_at(new, &cloudsql, chunk, around(&cloudsql));
            let new = || Box::new(scanner(Box::new(cnpg::open), &time)) as Box<dyn Scan>;
            crate::frame::testing::check_growing_file_at(new, &cnpg, chunk.max(600), around(&cnpg));
        }
    }

    fn record(pid: u32, user: &str, message: &str) -> String {
        let record = json!({"log_time": "2026-11-22 08:04:23.386 UTC", "user_name": user, "database_name": user,
            "process_id": pid.to_string(), "error_severity": "LOG", "message": message, "backend_type": if user.is_empty() { "checkpointer" } else { "client backend" }});
        format!(
            "{}\n",
            json!({"level": "info", "ts": 1795334663.386, "logger": "postgres", "msg": "record", "logging_pod": "c-1", "record": record})
        )
    }

    /// CloudNativePG: records (to the jsonlog scanner) and raw stderr lines
    /// (to the stderr scanner) interleaved with the operator's lines.
    fn cnpg_log() -> Vec<String> {
        let raw = |line: &str| {
            format!(
                "{}\n",
                json!({"level": "info", "ts": 1795334663.0, "logger": "postgres", "msg": line, "pipe": "stderr"})
            )
        };
        vec![
            raw("2026-11-22 08:04:20.000 UTC [21752]: [1-1] db=,user= LOG:  redirecting log output to logging collector process"),
            record(21760, "", "checkpoint starting: time"),
            format!("{}\n", json!({"level": "info", "ts": 1795334663.5, "logger": "instance-manager", "msg": "checkpoint starting soon"})),
            raw("2026-11-22 08:04:24.000 UTC [21760]: [2-1] db=,user= LOG:  checkpoint starting: wal"),
            record(30000, "app", "checkpoint starting: wal"),
            record(21760, "", "checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB"),
        ]
    }

    #[test]
    fn cnpg_records_and_raw_lines_keep_their_order_and_sessions() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let log = cnpg_log();
        let data = log.concat();
        let offset = |i: usize| log[..i].concat().len() as u64;
        let mut s = scanner(Box::new(cnpg::open), &time);
        let (records, _) = frame_all(&mut s, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        let got: Vec<_> = records
            .iter()
            .map(|r| (r.offset, r.line, r.message.split(':').next().unwrap(), r.origin.session))
            .collect();
        assert_eq!(
            got,
            [
                (offset(1), 2, "checkpoint starting", false),
                (offset(3), 4, "checkpoint starting", false),
                (offset(4), 5, "checkpoint starting", true),
                (offset(5), 6, "checkpoint complete", false),
            ]
        );
        // The operator's line mentions a checkpoint but is no line of PostgreSQL's.
        let stats = s.stats();
        assert_eq!((stats.lines, stats.entries, stats.candidates, stats.unparsed), (6, 6, 4, 0));
    }

    /// Stopped at any byte and read on: the same records.
    #[test]
    fn a_growing_cnpg_log_is_read_like_the_whole() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let log = cnpg_log();
        for chunk in [600, 1 << 20] {
            check_growing_file(|| Box::new(scanner(Box::new(cnpg::open), &time)), &log, chunk);
        }
    }

    /// Each counter from both lanes and from the envelopes themselves:
    /// a raw line and a record that fit no format, one holding a checkpoint
    /// line's head (unmatched), one only a needle (unparsed); a broken
    /// envelope of each kind; and neither another program's message nor a
    /// broken envelope without a needle.
    #[test]
    fn every_lane_counts_its_misfits() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let raw = |line: &str| {
            format!(
                "{}\n",
                json!({"level": "info", "ts": 1795334663.0, "logger": "postgres", "msg": line, "pipe": "stderr"})
            )
        };
        let bogus = |message: &str| {
            let record = json!({"log_time": "2026-11-22 08:04:23.386 UTC", "process_id": "21760", "error_severity": "BOGUS", "message": message});
            format!(
                "{}\n",
                json!({"level": "info", "ts": 1795334663.386, "logger": "postgres", "msg": "record", "record": record})
            )
        };
        let log = [
            raw("2026-11-22 08:04:20.000 UTC [21752]: [1-1] db=,user= LOG:  redirecting log output to logging collector process"),
            raw("pg_ctl: checkpoint starting: time"),
            raw("pg_ctl: no heckpoint here"),
            bogus("checkpoint starting: wal"),
            bogus("heckpoint, not one"),
            "{\"level\": \"info\", \"msg\": \"checkpoint starting: force\n".to_string(),
            "{\"level\": \"info\", \"msg\": \"no heckpoint\n".to_string(),
            record(21760, "", "checkpoint starting: time"),
            // Not misfits: another program's message, and a broken envelope
            // without a needle.
            format!("{}\n", json!({"level": "info", "ts": 1795334663.5, "logger": "instance-manager", "msg": "checkpoint starting: soon"})),
            "{oops\n".to_string(),
        ];
        let data = log.concat();
        let mut s = scanner(Box::new(cnpg::open), &time);
        let (records, end) = frame_all(&mut s, data.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        assert_eq!(end.line, 11);
        assert_eq!(records.iter().map(|r| r.line).collect::<Vec<_>>(), [8]);
        let stats = s.stats();
        assert_eq!(
            (stats.lines, stats.entries, stats.candidates, stats.unparsed, stats.unmatched, stats.oversized),
            (10, 10, 3, 3, 3, 0),
            "each lane and the envelopes: one unparsed, one unmatched; the records are the candidates"
        );
        // The text lane's misfit, at its envelope's line (the lane's second).
        assert_eq!(stats.first_unmatched, Some((2, "pg_ctl: checkpoint starting: time".to_string())));
    }

    /// Prefix detection reads the text payloads of the complete lines only.
    #[test]
    fn text_payloads_of_the_first_complete_lines() {
        let log = cloudsql_log();
        let head = [&log[2], &log[1], &log[3], &logged("2026-11-22 08:04:27.000 UTC [1]: [9-1] db=,user= LOG:  cut")]
            .map(|l| l.as_str())
            .concat();
        let head = &head.as_bytes()[..head.len() - 1];
        let want = "2026-11-22 08:04:23.497 UTC [21760]: [7-1] db=,user= LOG:  checkpoint starting: wal\n\
                    2026-11-22 08:04:25.000 UTC [30000]: [2-1] db=shop,user=app LOG:  checkpoint starting: time\n";
        assert_eq!(String::from_utf8(text_payloads(&cloudsql::open, head)).unwrap(), want);
        assert!(text_payloads(&cloudsql::open, &head[..20]).is_empty());
    }

    /// An envelope line longer than the buffer is skipped whole, and counted.
    #[test]
    fn an_oversized_envelope_is_skipped_to_its_newline() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let mut s = scanner(Box::new(cnpg::open), &time);
        assert_eq!(s.skip(b"{\"msg\": \"x", true, false), None);
        let counted = |s: &EnvelopeScanner| (s.stats().lines, s.stats().entries, s.stats().oversized);
        assert_eq!(counted(&s), (0, 0, 0));
        assert_eq!(s.skip(b"xx\"}\n{\"msg\"", false, false), Some(5));
        assert_eq!(counted(&s), (1, 1, 1));
        assert_eq!(s.skip(b"{\"msg\": \"x", true, true), Some(10));
        assert_eq!(counted(&s), (2, 2, 2));
    }

    use proptest::prelude::*;

    /// Every format's opener.
    fn opener(i: usize) -> Open {
        match i {
            0 => Box::new(cloudsql::open),
            1 => Box::new(cnpg::open),
            2 => Box::new(crate::frame::formats::azure::open),
            3 => Box::new(|l| crate::frame::formats::journald::open_json(l, false)),
            4 => Box::new(|l| crate::frame::formats::journald::open_json(l, true)),
            _ => Box::new(|l| crate::frame::formats::journald::open_plain(l, &jiff::Zoned::now())),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Envelope lines cut, spliced and garbled at random: never a panic,
        /// and everything consumed.
        #[test]
        fn garbled_envelopes_never_panic(
            which in 0usize..6,
            picks in proptest::collection::vec((0usize..6, any::<u16>(), any::<u8>()), 1..24),
            chunk in 400usize..2000,
        ) {
            let time = TimeContext::new(Some("UTC")).unwrap();
            let lines: Vec<String> = cloudsql_log().into_iter().chain(cnpg_log()).collect();
            let mut data = Vec::new();
            for (i, cut, byte) in picks {
                let line = lines[i % lines.len()].as_bytes();
                let at = usize::from(cut) % line.len();
                data.extend_from_slice(&line[..at]);
                data.push(byte);
                data.extend_from_slice(&line[at..]);
            }
            let mut s = scanner(opener(which), &time);
            let (_, end) = frame_all(&mut s, &data, chunk, Tail::Take, Pos::START);
            prop_assert_eq!(end.offset, data.len() as u64);
        }
    }
}
