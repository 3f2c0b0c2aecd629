//! csvlog: one CSV record per entry; quoted fields may hold newlines, so
//! record boundaries are found with a quote-aware scan (a line inside a quoted
//! statement can look exactly like a record start — see the forged fixtures).
//! A record longer than the buffer (a client's statement) is skipped in
//! pieces with its quote state carried from piece to piece, so the next
//! record starts exactly where PostgreSQL's does.
//!
//! Columns (PostgreSQL docs, "Using CSV-Format Log Output"): 23 up to 12,
//! 24 in 13 (+backend_type), 26 from 14 (+leader_pid, query_id).

use super::zone_evidence;
use crate::catalog::Catalog;
use crate::frame::time::TimeContext;
use crate::frame::{lines, Consumed, Cut, FrameStats, Lexicon, Needles, Origin, Overflow, Pos, Record, Scan};

const LOG_TIME: usize = 0;
const USER: usize = 1;
const DATABASE: usize = 2;
const PID: usize = 3;
const CONNECTION_FROM: usize = 4;
const SEVERITY: usize = 11;
const MESSAGE: usize = 13;
const DETAIL: usize = 14;
const HINT: usize = 15;
const INTERNAL_QUERY: usize = 16;
const CONTEXT: usize = 18;
const QUERY: usize = 19;
const APPLICATION: usize = 22;
const BACKEND_TYPE: usize = 23;
/// The fewest columns any version writes.
const MIN_COLUMNS: usize = 23;

/// Whether `line` looks like the start of a csvlog record: a timestamp, then a comma.
pub(crate) fn looks_like(line: &[u8]) -> bool {
    let ts_end = memchr::memchr(b',', line).unwrap_or(0);
    ts_end >= 19
        && line[..4].iter().all(u8::is_ascii_digit)
        && line[4] == b'-'
        && memchr::memchr_iter(b',', line).count() >= 12
}

/// Whether `head` starts with a csvlog record: a date, then — quotes
/// respected, since a field may hold line breaks — at least 23 columns. The
/// first physical line is not enough: a user name with line breaks (a
/// failed login right after a rotation) cuts the first record after two
/// commas.
pub(crate) fn starts_with_record(head: &[u8]) -> bool {
    let dated = head.len() >= 19 && head[..4].iter().all(u8::is_ascii_digit) && head[4] == b'-';
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(head);
    let mut row = csv::ByteRecord::new();
    dated && matches!(reader.read_byte_record(&mut row), Ok(true)) && row.len() >= MIN_COLUMNS
}

pub struct CsvScanner<'t> {
    time: &'t TimeContext,
    needles: &'static Needles,
    catalog: &'static Catalog,
    stats: FrameStats,
    /// The record being skipped (see `Scan::skip`).
    skipped: Skipped,
    fields: Fields,
}

/// The fields of one record, split by csv-core with buffers kept from record
/// to record: a `csv::Reader` per record built its tables and an 8 KiB buffer
/// each time, which was most of a csvlog import's time.
struct Fields {
    reader: csv_core::Reader,
    /// The record's fields, unquoted, one after another.
    out: Vec<u8>,
    /// Where each field ends in `out`.
    ends: Vec<usize>,
    len: usize,
}

impl Default for Fields {
    /// PostgreSQL's dialect is csv-core's default one (comma, double quote,
    /// doubled quotes inside, any line terminator).
    fn default() -> Self {
        // Not `csv_core::Reader::default()`: that reader has no tables and
        // splits nothing.
        let reader = csv_core::ReaderBuilder::new().build();
        Fields { reader, out: Vec::new(), ends: Vec::new(), len: 0 }
    }
}

impl Fields {
    /// Splits `record` (one whole record, its newline included or not);
    /// false when it holds none.
    fn read(&mut self, record: &[u8]) -> bool {
        self.reader.reset();
        // Unquoting only shrinks a record, and it has at most one field per
        // byte plus one: one call always has room for all of it.
        if self.out.len() < record.len() {
            self.out.resize(record.len(), 0);
        }
        if self.ends.len() <= record.len() {
            self.ends.resize(record.len() + 1, 0);
        }
        let (mut result, _, _, mut len) = self.reader.read_record(record, &mut self.out, &mut self.ends);
        if result == csv_core::ReadRecordResult::InputEmpty {
            // No newline: the end of the input ends the record.
            let (end, _, _, more) = self.reader.read_record(&[], &mut self.out, &mut self.ends[len..]);
            (result, len) = (end, len + more);
        }
        self.len = if result == csv_core::ReadRecordResult::Record { len } else { 0 };
        self.len > 0
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.out[start..self.ends[i]])
    }
}

/// A record read in pieces so far.
#[derive(Debug, Clone, Copy, Default)]
struct Skipped {
    quotes: Quotes,
    newlines: u64,
    /// Whether its last byte so far is a newline.
    at_line_start: bool,
}

/// Quote state of a csv record read so far. PostgreSQL quotes every field
/// that can hold a quote, comma or newline and doubles the quotes inside,
/// so flipping the state at each quote is exact without lookahead (a
/// doubled quote flips it twice): a record can be read in any pieces.
#[derive(Debug, Clone, Copy, Default)]
struct Quotes {
    open: bool,
}

impl Quotes {
    /// Where the record ends in `bytes` (just after its newline), going on
    /// from the state reached before `bytes`.
    fn end_in(&mut self, bytes: &[u8]) -> Option<usize> {
        for i in memchr::memchr2_iter(b'"', b'\n', bytes) {
            match bytes[i] {
                b'"' => self.open = !self.open,
                _ if !self.open => return Some(i + 1),
                _ => {}
            }
        }
        None
    }
}

impl<'t> CsvScanner<'t> {
    pub fn new(time: &'t TimeContext, lexicon: &'static Lexicon) -> Self {
        CsvScanner {
            time,
            needles: &lexicon.needles,
            catalog: lexicon.catalog,
            stats: FrameStats::default(),
            skipped: Skipped::default(),
            fields: Fields::default(),
        }
    }

    /// `bytes` as a row; `at_end`: the input ended inside it, so it may be
    /// cut short: a row with its columns up to the message (cut or not)
    /// is read, marked so, its later columns unknown.
    fn parse(&mut self, bytes: &[u8], pos: Pos, at_end: bool) -> Option<Record> {
        let enough = if at_end { MESSAGE + 1 } else { MIN_COLUMNS };
        let read = self.fields.read(bytes);
        if at_end && self.fields.len() > MESSAGE + 1 {
            // The column the input ended in may be cut (`checkp` for
            // `checkpointer`): one after the message is left unknown.
            self.fields.len -= 1;
        }
        if !read || self.fields.len() < enough {
            self.stats.misfit(self.catalog, pos.line, &lines::lossy(bytes));
            return None;
        }
        let row = &self.fields;
        let get = |i: usize| row.get(i).map(|f| lines::lossy(f).into_owned()).filter(|s| !s.is_empty());
        let severity_word = get(SEVERITY).unwrap_or_default();
        let Some(severity) = self.catalog.severity(&severity_word) else {
            self.stats.misfit(self.catalog, pos.line, &lines::lossy(bytes));
            return None;
        };
        let session = [USER, DATABASE, CONNECTION_FROM, APPLICATION].iter().any(|&i| get(i).is_some());
        let mut record = Record {
            offset: pos.offset,
            line: pos.line,
            time: None,
            origin: Origin {
                pid: get(PID).and_then(|p| p.parse().ok()),
                backend_type: get(BACKEND_TYPE),
                session,
                session_checkable: true,
                doubt: None,
                uid: None,
            },
            severity,
            message: get(MESSAGE).unwrap_or_default(),
            detail: get(DETAIL),
            hint: get(HINT),
            context: get(CONTEXT),
            statement: get(QUERY).or_else(|| get(INTERNAL_QUERY)),
            cut: if at_end { Cut::AtEnd } else { Cut::Whole },
        };
        // What the row says of the zone first: a reload of log_timezone is
        // written in the zone it sets.
        zone_evidence::learn_from_columns(self.time, self.catalog, &record, &severity_word);
        record.time = get(LOG_TIME).and_then(|t| self.time.parse(&t).ok());
        Some(record)
    }
}

impl Scan for CsvScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let hits = self.needles.hits(region);
        let mut hits = hits.into_iter().peekable();
        let (mut start, mut line) = (0usize, pos.line);
        while start < region.len() {
            let mut quotes = Quotes::default();
            let (end, at_end) = match quotes.end_in(&region[start..]) {
                Some(len) => (start + len, false),
                // A finished stream's last record, without its newline: it
                // may be cut short, even inside quotes (see `parse`). A
                // region ends without a newline only when the input has
                // ended for good; one that ends in a newline inside quotes
                // may be a record still being written.
                None if last && (!quotes.open || region.last() != Some(&b'\n')) => (region.len(), true),
                // Still being written, or longer than the buffer: a record
                // open inside quotes is never framed as if it were whole.
                None => break,
            };
            let newlines = lines::count(&region[start..end]);
            self.stats.entries += 1;
            self.stats.lines += newlines.max(1);
            let mut candidate = false;
            while hits.next_if(|&h| h < end).is_some() {
                candidate = true;
            }
            if candidate {
                self.stats.candidates += 1;
                let at = Pos { offset: pos.offset + start as u64, line };
                if let Some(record) = self.parse(&region[start..end], at, at_end) {
                    emit(record);
                }
            }
            line += newlines;
            start = end;
        }
        Consumed { bytes: start, newlines: line - pos.line }
    }

    /// A record that fills the buffer is a client's statement, never an
    /// event: it is skipped whole, quotes tracked, never cut (the rest of a
    /// quoted field read as records is how statements forge events).
    fn overflow(&mut self, _buf: &[u8], _pos: Pos, _emit: &mut dyn FnMut(Record)) -> Overflow {
        Overflow::Skip
    }

    fn skip(&mut self, piece: &[u8], first: bool, last: bool) -> Option<usize> {
        if first {
            self.skipped = Skipped::default();
        }
        let end = self.skipped.quotes.end_in(piece).or(last.then_some(piece.len()));
        let taken = &piece[..end.unwrap_or(piece.len())];
        self.skipped.newlines += lines::count(taken);
        if let Some(&byte) = taken.last() {
            self.skipped.at_line_start = byte == b'\n';
        }
        if end.is_some() {
            let unterminated = u64::from(!self.skipped.at_line_start);
            self.stats.entries += 1;
            self.stats.lines += self.skipped.newlines + unterminated;
            self.stats.oversized += 1;
        }
        end
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_end(buf: &[u8]) -> Option<usize> {
        Quotes::default().end_in(buf)
    }

    fn fields_of(fields: &mut Fields, record: &[u8]) -> Vec<String> {
        assert!(fields.read(record), "{record:?} holds no record");
        (0..fields.len()).map(|i| String::from_utf8(fields.get(i).unwrap().to_vec()).unwrap()).collect()
    }

    #[test]
    fn fields_are_split_as_postgresql_quotes_them_with_buffers_reused() {
        let mut fields = Fields::default();
        let long = b"2026-11-22 08:15:38.417 UTC,\"u\",,1,\"a \"\"quoted\"\", comma\nand line\",,,\n";
        assert_eq!(
            fields_of(&mut fields, long),
            ["2026-11-22 08:15:38.417 UTC", "u", "", "1", "a \"quoted\", comma\nand line", "", "", ""]
        );
        // A shorter record after a longer one: nothing of the first is left.
        assert_eq!(fields_of(&mut fields, b"x,\"\"\n"), ["x", ""]);
        // The end of a finished stream ends its last record.
        assert_eq!(fields_of(&mut fields, b"a,b"), ["a", "b"]);
        assert_eq!(fields.get(2), None);
        assert!(!fields.read(b""), "nothing is no record");
        assert_eq!((fields.len(), fields.get(0)), (0, None));
        // The most fields a record can hold, one per byte plus one, with
        // buffers sized for the first time.
        assert_eq!(fields_of(&mut Fields::default(), b","), ["", ""]);
        assert_eq!(fields_of(&mut Fields::default(), b",,\n"), ["", "", ""]);
    }

    #[test]
    fn record_boundaries_respect_quotes() {
        let buf = b"a,\"x\ny\",b\nc,d\n";
        assert_eq!(record_end(buf), Some(10));
        assert_eq!(record_end(&buf[10..]), Some(4));
        assert_eq!(record_end(b"a,\"open\n"), None);
        assert_eq!(record_end(b"a,\"say \"\"hi\"\"\"\n"), Some(15));
    }

    #[test]
    fn quote_state_carries_across_pieces_at_any_cut() {
        let record = b"t,\"SELECT '\"\"\n2026-01-01,fake\n\"\"' \",x\nnext\n";
        let whole = record_end(record);
        assert_eq!(whole, Some(record.len() - 5));
        for cut in 0..=record.len() {
            let mut q = Quotes::default();
            let got = q.end_in(&record[..cut]).or_else(|| q.end_in(&record[cut..]).map(|e| cut + e));
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    use crate::frame::testing::{boundaries, check_growing_file, frame_all};
    use crate::frame::{LogSeverity, Tail};
    use proptest::prelude::*;

    /// PostgreSQL's appendCSVLiteral: quoted, inner quotes doubled.
    fn quote(s: &str) -> String {
        format!("\"{}\"", s.replace('"', "\"\""))
    }

    /// A checkpointer record as PostgreSQL 15 writes it.
    fn event_record(message: &str) -> String {
        let m = quote(message);
        format!("2026-11-22 08:15:38.417 UTC,,,28304,,6b02a4a8.6e90,2,,2026-11-22 08:15:36 UTC,,0,LOG,00000,{m},,,,,,,,,\"\",\"checkpointer\",,0\n")
    }

    /// A client's failed statement, logged with it (log_min_error_statement).
    fn error_record(statement: &str) -> String {
        let q = quote(statement);
        format!("2026-11-22 08:15:40.001 UTC,\"postgres\",\"postgres\",28400,\"[local]\",6b02a4a8.6ef0,3,\"SELECT\",2026-11-22 08:15:39 UTC,3/7,0,ERROR,22012,\"division by zero\",,,,,,{q},,,\"psql\",\"client backend\",,0\n")
    }

    /// A finished stream ending inside its last record: cut in the
    /// message, the message up to the cut; cut in the quoted backend_type,
    /// that column left unknown; either way marked cut at the end. A
    /// record whole but for its newline is not; one cut before its message
    /// is no record; a growing file's (Wait) last record waits.
    #[test]
    fn a_finished_stream_ending_inside_a_record_frames_it_as_cut() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let whole = format!("{}{}", event_record(EVENTS[0]), event_record(EVENTS[2]));
        let read = |len: usize, tail: Tail| {
            let mut scanner = CsvScanner::new(&time, crate::frame::test_lexicon());
            frame_all(&mut scanner, &whole.as_bytes()[..len], 1 << 20, tail, Pos::START).0
        };
        let in_message = whole.find("0 WAL file").unwrap() + 5;
        let records = read(in_message, Tail::Take);
        assert_eq!(records.len(), 2);
        assert_eq!((records[0].cut, records[1].cut), (Cut::Whole, Cut::AtEnd));
        assert_eq!(records[1].message, "checkpoint complete: wrote 3 buffers (0.0%); 0 WAL");
        assert_eq!((records[1].origin.pid, records[1].origin.session), (Some(28304), false));
        assert_eq!(records[1].origin.backend_type, None);
        let in_backend = whole.rfind("checkpointer").unwrap() + 5;
        let records = read(in_backend, Tail::Take);
        assert_eq!((records[1].cut, records[1].message.as_str()), (Cut::AtEnd, EVENTS[2]));
        assert_eq!(records[1].origin.backend_type, None, "\"check\" is no process type");
        let records = read(whole.len() - 1, Tail::Take);
        assert_eq!((records[1].cut, records[1].origin.backend_type.as_deref()), (Cut::AtEnd, Some("checkpointer")));
        assert_eq!(records[1].message, EVENTS[2]);
        let before_message = whole.rfind("LOG,00000").unwrap();
        assert_eq!(read(before_message, Tail::Take).len(), 1);
        assert_eq!(read(in_message, Tail::Wait).len(), 1);
    }

    const EVENTS: &[&str] = &[
        "checkpoint starting: wal",
        "checkpoint starting: immediate force wait",
        "checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.002 s, sync=0.001 s, total=0.007 s; sync files=2, longest=0.001 s, average=0.001 s; distance=0 kB, estimate=0 kB",
        "checkpoints are occurring too frequently (2 seconds apart)",
    ];

    /// Pieces of a hostile statement: filler, quotes, newlines, commas, and
    /// whole fake records (quoted and unquoted) starting on a line of their own.
    fn statement_piece() -> impl Strategy<Value = String> {
        let fake_quoted = event_record("checkpoint starting: wal");
        let fake_bare = "2026-11-22 08:15:38.417 UTC,,,1,,6b02a4a8.1,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,checkpoint starting: wal,,,,,,,,,,checkpointer,,0\n";
        prop_oneof![
            (0usize..3000).prop_map(|n| "x".repeat(n)),
            Just("\"".to_string()),
            Just("\"\"".to_string()),
            Just("\n".to_string()),
            Just(",".to_string()),
            Just(format!("\n{fake_quoted}")),
            Just(format!("\n{fake_bare}")),
            Just("\n\",\n".to_string()),
        ]
    }

    /// A record of the generated log: an event (index into EVENTS) or a statement.
    fn record_text() -> impl Strategy<Value = (Option<usize>, String)> {
        prop_oneof![
            (0..EVENTS.len()).prop_map(|i| (Some(i), event_record(EVENTS[i]))),
            proptest::collection::vec(statement_piece(), 0..14).prop_map(|p| (None, error_record(&p.concat()))),
        ]
    }

    fn frame(data: &[u8], chunk: usize) -> (Vec<Record>, Pos, FrameStats) {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let mut scanner = CsvScanner::new(&time, crate::frame::test_lexicon());
        let (records, end) = frame_all(&mut scanner, data, chunk, Tail::Take, Pos::START);
        (records, end, scanner.stats().clone())
    }

    fn growing_log() -> Vec<String> {
        let fake = event_record("checkpoint starting: wal");
        vec![
            event_record(EVENTS[0]),
            error_record(&format!("SELECT 1/0 /*\n{fake}{}\n{fake}*/", "y".repeat(300))),
            event_record(EVENTS[2]),
            error_record("SELECT \"a\"\n\n,\""),
            event_record(EVENTS[1]),
        ]
    }

    /// A file read while PostgreSQL is writing it, stopped at any byte
    /// (inside a quoted statement included) and read on: a half-written
    /// record is never taken for a whole one.
    #[test]
    fn a_growing_file_read_at_any_cut_frames_like_the_whole() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let log = growing_log();
        for chunk in [512, 64 << 10] {
            let (whole, _, stats) = frame(log.concat().as_bytes(), chunk);
            assert_eq!(whole.len(), 3 + usize::from(chunk > log[1].len()), "3 events, the statement when it fits");
            assert_eq!(stats.oversized, u64::from(chunk < log[1].len()));
            check_growing_file(|| Box::new(CsvScanner::new(&time, crate::frame::test_lexicon())), &log, chunk);
        }
    }

    /// A finished stream (stdin, a compressed file) that stops inside a
    /// quoted field: the open record is consumed and counted, nothing in it
    /// is framed, and every record before it is.
    #[test]
    fn a_stream_ending_inside_quotes_is_consumed_without_forging() {
        let log = growing_log();
        let data = log.concat().into_bytes();
        let open = log[0].len() + log[1].find("*/").unwrap();
        // The open record ends with a newline inside its quotes; with the
        // middle size it fills the buffer exactly, and the end of the input
        // comes as an empty piece.
        for chunk in [512, open - log[0].len(), 1 << 20] {
            let (records, end, stats) = frame(&data[..open], chunk);
            let messages: Vec<&str> = records.iter().map(|r| r.message.as_str()).collect();
            assert_eq!(messages, [EVENTS[0]], "chunk {chunk}");
            assert_eq!(end.offset, open as u64, "chunk {chunk}");
            assert_eq!(end.line, 1 + lines::count(&data[..open]), "chunk {chunk}");
            assert_eq!((stats.entries, stats.oversized), (2, 1), "chunk {chunk}");
            assert_eq!(stats.lines, lines::count(&data[..open]), "chunk {chunk}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the chunk size, every record starts where the generator
        /// put one, events are framed exactly, fake records inside quoted
        /// fields never are, and the input is consumed to its last byte.
        #[test]
        fn chunk_size_never_changes_csv_framing(
            log in proptest::collection::vec(record_text(), 1..30),
            chunks in proptest::collection::vec(512usize..5000, 3),
        ) {
            let data: Vec<u8> = log.iter().flat_map(|(_, r)| r.bytes()).collect();
            // Where each generated record starts: (offset, line, length).
            let mut starts = std::collections::BTreeMap::new();
            let (mut offset, mut line) = (0u64, 1u64);
            for (_, r) in &log {
                starts.insert(offset, (line, r.len()));
                offset += r.len() as u64;
                line += lines::count(r.as_bytes());
            }
            let (whole, end, stats) = frame(&data, 1 << 20);
            prop_assert_eq!(end, Pos { offset: data.len() as u64, line });
            prop_assert_eq!(stats.entries, log.len() as u64);
            prop_assert_eq!(stats.lines, line - 1);
            let events: Vec<(u64, String)> = whole.iter().filter(|r| r.severity == LogSeverity::Log).map(|r| (r.offset, r.message.clone())).collect();
            let want: Vec<(u64, String)> = log.iter().zip(starts.keys()).filter_map(|((e, _), &o)| e.map(|i| (o, EVENTS[i].to_string()))).collect();
            prop_assert_eq!(events, want, "events framed exactly, no fake record among them");
            for r in &whole {
                let at = starts.get(&r.offset);
                prop_assert!(at.is_some_and(|&(l, _)| l == r.line), "record at offset {} line {} is not a generated one", r.offset, r.line);
            }
            for chunk in chunks {
                let (pieces, end, stats) = frame(&data, chunk);
                // A record longer than the buffer is skipped, never framed.
                let fitting: Vec<Record> = whole.iter().filter(|r| starts[&r.offset].1 <= chunk).cloned().collect();
                prop_assert_eq!(&pieces, &fitting, "chunk {}", chunk);
                prop_assert_eq!(end, Pos { offset: data.len() as u64, line }, "chunk {}", chunk);
                prop_assert_eq!(stats.entries, log.len() as u64, "chunk {}", chunk);
                prop_assert_eq!(stats.lines, line - 1, "chunk {}", chunk);
                let oversized = log.iter().filter(|(_, r)| r.len() > chunk).count() as u64;
                prop_assert_eq!(stats.oversized, oversized, "chunk {}", chunk);
            }
        }
    }

    /// A checkpointer record as PostgreSQL 12 writes it: 23 columns, no
    /// backend_type, leader_pid or query_id.
    fn pg12_record(message: &str) -> String {
        let m = quote(message);
        format!("2026-11-22 08:15:38.417 UTC,,,28304,,6b02a4a8.6e90,2,,2026-11-22 08:15:36 UTC,,0,LOG,00000,{m},,,,,,,,,\"\"\n")
    }

    #[test]
    fn a_postgresql_12_record_of_23_columns_is_framed_and_22_are_not() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let record = pg12_record("checkpoint starting: wal");
        let mut scanner = CsvScanner::new(&time, crate::frame::test_lexicon());
        let (records, _) = frame_all(&mut scanner, record.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!((r.offset, r.line, r.severity), (0, 1, LogSeverity::Log));
        assert_eq!(r.message, "checkpoint starting: wal");
        assert_eq!((r.origin.pid, r.origin.backend_type.as_deref(), r.origin.session), (Some(28304), None, false));
        assert_eq!(r.time, Some(time.parse("2026-11-22 08:15:38.417 UTC").unwrap()));
        let counts = |s: &FrameStats| (s.entries, s.lines, s.candidates, s.unparsed, s.unmatched);
        assert_eq!(counts(scanner.stats()), (1, 1, 1, 0, 0));
        // The same record without its application_name: 22 columns, a
        // LOG in the severity column, but not a record any version writes.
        let short = record.replace(",\"\"\n", "\n");
        let mut scanner = CsvScanner::new(&time, crate::frame::test_lexicon());
        let (records, end) = frame_all(&mut scanner, short.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        assert!(records.is_empty());
        assert_eq!(end, Pos { offset: short.len() as u64, line: 2 });
        // It holds a checkpoint line's message: unmatched, not merely unparsed.
        assert_eq!(counts(scanner.stats()), (1, 1, 1, 0, 1));
        assert_eq!(scanner.stats().first_unmatched.as_ref().map(|(line, _)| *line), Some(1));
    }

    /// A candidate record (a needle in it) whose severity is no word
    /// PostgreSQL writes is counted once, and not framed — unmatched, as it
    /// holds a checkpoint line's message —; the records around it are.
    #[test]
    fn an_unknown_severity_is_unparsed_and_counted() {
        let bad = event_record("checkpoint starting: wal").replace(",LOG,", ",NOTALEVEL,");
        let log = [event_record(EVENTS[0]), bad, event_record(EVENTS[1])];
        let at = boundaries(&log);
        let (records, end, stats) = frame(log.concat().as_bytes(), 1 << 20);
        let got: Vec<(u64, u64, LogSeverity, &str)> =
            records.iter().map(|r| (r.offset, r.line, r.severity, r.message.as_str())).collect();
        assert_eq!(
            got,
            [(at[0].offset, 1, LogSeverity::Log, EVENTS[0]), (at[2].offset, 3, LogSeverity::Log, EVENTS[1])]
        );
        assert_eq!(end, at[3]);
        assert_eq!(
            (stats.entries, stats.lines, stats.candidates, stats.unparsed, stats.unmatched, stats.oversized),
            (3, 3, 3, 0, 1, 0)
        );
    }

    /// A finished stream whose last record has no newline: the record is
    /// framed, and its line counted, whether it fits the buffer or is skipped.
    #[test]
    fn a_finished_streams_last_record_without_newline_is_taken() {
        let event = event_record(EVENTS[0]);
        let last = event_record(EVENTS[1]);
        let data = format!("{event}{}", last.trim_end_matches('\n'));
        let (records, end, stats) = frame(data.as_bytes(), 1 << 20);
        let got: Vec<(u64, u64, &str)> = records.iter().map(|r| (r.offset, r.line, r.message.as_str())).collect();
        assert_eq!(got, [(0, 1, EVENTS[0]), (event.len() as u64, 2, EVENTS[1])]);
        assert_eq!(end, Pos { offset: data.len() as u64, line: 2 });
        assert_eq!((stats.entries, stats.lines, stats.candidates, stats.oversized), (2, 2, 2, 0));
        // A statement longer than the buffer, with a line break inside its
        // quotes, ends the stream without a newline: skipped, two lines.
        let statement = error_record(&format!("SELECT 1/0 /*\n{}*/", "y".repeat(1000)));
        let data = format!("{event}{}", statement.trim_end_matches('\n'));
        let (records, end, stats) = frame(data.as_bytes(), 512);
        let got: Vec<&str> = records.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(got, [EVENTS[0]]);
        assert_eq!(end, Pos { offset: data.len() as u64, line: 3 });
        assert_eq!((stats.entries, stats.lines, stats.oversized), (2, 3, 1));
    }

    #[test]
    fn recognises_csvlog_lines() {
        assert!(looks_like(b"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"x\",,,,,,,,,\"\",\"postmaster\""));
        assert!(!looks_like(b"2026-11-22 08:04:20.708 UTC [21752] LOG:  starting"));
        // A stderr line with commas in its message: too few for a record.
        assert!(!looks_like(b"2026-11-22 08:04:20.708 UTC,x [21752] LOG:  a, b, c, d, e, f, g, h, i, j"));
        // Enough commas, but the first one comes before a whole timestamp.
        assert!(!looks_like(
            b"2026-11,22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"x\""
        ));
        // Enough commas after a time that is not a date.
        assert!(!looks_like(
            b"Nov 22 08:15:36.065 UTC xx,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"x\""
        ));
        assert!(!looks_like(
            b"20261122 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"x\""
        ));
        // The fewest commas a csvlog line can have before its message (12).
        assert!(looks_like(b"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,"));
        assert!(!looks_like(b"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0LOG,"));
    }

    /// A head starts with a record when its first record, quotes respected,
    /// is dated and has the 23 columns of PostgreSQL 12 or more.
    #[test]
    fn a_head_starts_with_a_record_of_23_dated_columns() {
        // A failed login's user name with line breaks: two commas on the
        // first physical line, 26 columns in the record.
        let login = b"2026-11-24 01:02:22.123 UTC,\"x\nx\n2026-01-01 00:00:00.000 Z [1] LOG:  checkpoint starting: wal\n\",\"postgres\",8001,\"127.0.0.1:5000\",6b02a4a8.6e8d,1,\"authentication\",2026-11-24 01:02:22 UTC,3/1,0,FATAL,28P01,\"password authentication failed\",,,,,,,,,\"\",\"client backend\",,0\n";
        assert!(starts_with_record(login));
        let pg12 = pg12_record("checkpoint starting: wal");
        assert!(starts_with_record(pg12.as_bytes()), "23 columns");
        assert!(!starts_with_record(pg12.replace(",\"\"\n", "\n").as_bytes()), "22 columns");
        assert!(!starts_with_record(pg12.replacen("2026-11-22", "Nov 22 xx ", 1).as_bytes()), "not dated");
        assert!(!starts_with_record(pg12.replacen("2026-", "2026/", 1).as_bytes()), "not a date");
        assert!(!starts_with_record(pg12.replacen("2026", "x026", 1).as_bytes()), "not a year");
        assert!(!starts_with_record(b"2026-11-22 08:15"), "too short to tell");
        assert!(!starts_with_record(b""));
    }
}
