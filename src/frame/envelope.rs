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

use super::{lines, Consumed, FrameStats, Needles, Pos, Record, Scan};

/// What one envelope line holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unwrapped {
    /// A line PostgreSQL wrote, for the text scanner (no newline at its end).
    Text { text: Vec<u8>, time: Option<Timestamp> },
    /// A record in jsonlog's form, for the jsonlog scanner.
    Json { line: Vec<u8>, time: Option<Timestamp> },
    /// A well-formed envelope of another program's message.
    Foreign,
    /// Not an envelope of this format.
    Broken,
}

/// Opens one envelope line (without its newline).
pub(crate) type Open = Box<dyn Fn(&[u8]) -> Unwrapped + Send>;

/// Where a payload line came from.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// Its start in the lane's buffer.
    at: usize,
    /// Its envelope's start in the region, and line number in the source.
    source: usize,
    line: u64,
    time: Option<Timestamp>,
}

/// The payloads of one scanner: their buffer and where each came from.
#[derive(Default)]
struct Lane {
    buf: Vec<u8>,
    spans: Vec<Span>,
}

impl Lane {
    fn push(&mut self, payload: &[u8], source: usize, line: u64, time: Option<Timestamp>) {
        self.spans.push(Span { at: self.buf.len(), source, line, time });
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

    /// `record` at its envelope's position, dated by it if need be.
    fn place(&self, mut record: Record, pos: Pos) -> Record {
        if let Some(s) = self.span_of(record.offset as usize) {
            record.offset = pos.offset + s.source as u64;
            record.line = s.line;
            record.time = record.time.or(s.time);
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
    needles: &'static Needles,
    /// Lines and the envelopes that failed, counted here.
    own: FrameStats,
    stats: FrameStats,
}

impl<'t> EnvelopeScanner<'t> {
    pub fn new(open: Open, text: Box<dyn Scan + 't>, json: Box<dyn Scan + 't>, needles: &'static Needles) -> Self {
        EnvelopeScanner { open, text, json, needles, own: FrameStats::default(), stats: FrameStats::default() }
    }

    /// Opens every line of `region` into the two lanes; returns them and
    /// the lines that are no envelope or another program's (with their start).
    fn open_all(&self, region: &[u8], pos: Pos) -> (Lane, Lane, Vec<(usize, bool)>) {
        let (mut text, mut json, mut other) = (Lane::default(), Lane::default(), Vec::new());
        let (mut at, mut line) = (0, pos.line);
        while at < region.len() {
            let raw = lines::text(region, at);
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            match (self.open)(raw) {
                Unwrapped::Text { text: t, time } => text.push(&t, at, line, time),
                Unwrapped::Json { line: l, time } => json.push(&l, at, line, time),
                Unwrapped::Foreign => other.push((at, true)),
                Unwrapped::Broken => other.push((at, false)),
            }
            at = lines::next_start(region, at);
            line += 1;
        }
        (text, json, other)
    }

    fn total(&mut self) {
        let (t, j) = (self.text.stats(), self.json.stats());
        self.stats = FrameStats {
            lines: self.own.lines,
            entries: t.entries + j.entries + self.own.entries,
            candidates: t.candidates + j.candidates,
            unparsed: t.unparsed + j.unparsed + self.own.unparsed,
            oversized: self.own.oversized + j.oversized,
        };
    }
}

impl Scan for EnvelopeScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let (text, json, other) = self.open_all(region, pos);
        let mut records = Vec::new();
        let consumed = if text.buf.is_empty() {
            0
        } else {
            self.text.scan(&text.buf, Pos::START, last, &mut |r| records.push(r)).bytes
        };
        let boundary = text.reach(consumed, region.len());
        let mut placed: Vec<Record> = records
            .into_iter()
            .map(|r| text.place(r, pos))
            .filter(|r| r.offset < pos.offset + boundary as u64)
            .collect();
        // The JSON payloads before the boundary; the rest come again.
        let upto = json.spans.iter().find(|s| s.source >= boundary).map_or(json.buf.len(), |s| s.at);
        if upto > 0 {
            self.json.scan(&json.buf[..upto], Pos::START, true, &mut |r| placed.push(json.place(r, pos)));
        }
        placed.sort_by_key(|r| r.offset);
        placed.into_iter().for_each(&mut *emit);
        let done = &region[..boundary];
        self.own.lines += lines::count_lines(done);
        for &(at, foreign) in other.iter().filter(|(at, _)| *at < boundary) {
            // Another program's message is an entry of the log, though not
            // PostgreSQL's; a broken one that mentions checkpoints is a line
            // that did not fit.
            self.own.entries += 1;
            if !foreign && self.needles.find_iter(lines::text(region, at)).next().is_some() {
                self.own.unparsed += 1;
            }
        }
        self.total();
        Consumed { bytes: boundary, newlines: lines::count(done) }
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

/// The payload lines of an envelope log's first bytes, for prefix detection.
pub(crate) fn text_payloads(open: &dyn Fn(&[u8]) -> Unwrapped, head: &[u8]) -> Vec<u8> {
    let complete = memchr::memrchr(b'\n', head).map_or(head, |i| &head[..=i]);
    let mut out = Vec::new();
    for line in complete.split(|&b| b == b'\n') {
        if let Unwrapped::Text { text, .. } = open(line) {
            out.extend_from_slice(&text);
            out.push(b'\n');
        }
    }
    out
}
