//! Framing: bytes → [`Record`]s, for every log format PostgreSQL writes.
//!
//! Checkpoint events are a tiny fraction of a busy server's log, so framing
//! is lazy: a SIMD multi-needle search (every language's needles, from the
//! catalog) finds candidate positions, and only the entries around them are
//! framed and parsed fully. Counting lines and entries uses `memchr` only.
//!
//! [`drive`] owns the buffer: it feeds complete lines to a format [`Scan`]ner
//! in bounded chunks and reports each chunk's records together with the
//! position reached, so the caller can commit both in one transaction.

pub mod azure;
pub mod cloudsql;
pub mod cnpg;
pub mod csvlog;
pub mod envelope;
pub mod journald;
pub mod jsonlog;
pub mod lines;
pub mod prefix;
pub mod record;
pub mod spliced;
pub mod stderr;
pub mod syslog;
pub mod time;
pub mod unmatched;

use std::io::{self, Read};

use aho_corasick::AhoCorasick;

use crate::catalog::Catalog;
pub use record::{LineLevel, LogSeverity, Origin, Record, Secondary};

/// How many JSON lines of a source's head are looked at to tell an
/// envelope format from jsonlog.
const JSON_SNIFF_LINES: usize = 20;

/// Bytes read per chunk. Memory stays bounded by a few of these whatever the input.
pub const CHUNK_BYTES: usize = 2 << 20;

/// The log formats walwatch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Stderr,
    Csvlog,
    Jsonlog,
    Syslog,
    /// Cloud SQL's log exported from Cloud Logging (JSON lines).
    CloudSql,
    /// CloudNativePG's JSON lines.
    Cnpg,
    /// `journalctl -o json`.
    JournaldJson,
    /// `journalctl`'s plain output of a server logging to stderr.
    Journald,
    /// Azure Database for PostgreSQL's diagnostic log records (JSON lines).
    Azure,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Stderr => "stderr",
            Format::Csvlog => "csvlog",
            Format::Jsonlog => "jsonlog",
            Format::Syslog => "syslog",
            Format::CloudSql => "cloudsql",
            Format::Cnpg => "cnpg",
            Format::JournaldJson => "journald-json",
            Format::Journald => "journald",
            Format::Azure => "azure",
        }
    }

    /// The format named `name` (as [`Format::as_str`] spells it).
    pub fn named(name: &str) -> Option<Format> {
        [
            Format::Stderr,
            Format::Csvlog,
            Format::Jsonlog,
            Format::Syslog,
            Format::CloudSql,
            Format::Cnpg,
            Format::JournaldJson,
            Format::Journald,
            Format::Azure,
        ]
        .into_iter()
        .find(|f| f.as_str() == name)
    }

    /// Whether the lines are another program's envelopes around PostgreSQL's.
    pub fn is_envelope(self) -> bool {
        matches!(self, Format::CloudSql | Format::Cnpg | Format::JournaldJson | Format::Journald | Format::Azure)
    }

    /// Guesses the format from the first bytes of a source.
    pub(crate) fn detect(head: &[u8]) -> Format {
        let first = head.split(|&b| b == b'\n').find(|l| !l.is_empty()).unwrap_or_default();
        if first.first() == Some(&b'{') {
            Format::detect_json(head)
        } else if csvlog::looks_like(first) || csvlog::starts_with_record(head) {
            Format::Csvlog
        } else if syslog::looks_like(first) {
            Format::Syslog
        } else if journald::looks_like_plain(first) {
            Format::Journald
        } else {
            Format::Stderr
        }
    }

    /// Which JSON lines: PostgreSQL's jsonlog, or an envelope around its
    /// lines. An export may start with another program's entries (an audit
    /// log's, the operator's): the first lines that tell decide.
    fn detect_json(head: &[u8]) -> Format {
        let lines = head.split(|&b| b == b'\n').filter(|l| l.first() == Some(&b'{')).take(JSON_SNIFF_LINES);
        lines.filter_map(Format::envelope_of).next().unwrap_or(Format::Jsonlog)
    }

    fn envelope_of(line: &[u8]) -> Option<Format> {
        if cloudsql::looks_like(line) {
            Some(Format::CloudSql)
        } else if cnpg::looks_like(line) {
            Some(Format::Cnpg)
        } else if journald::looks_like_json(line) {
            Some(Format::JournaldJson)
        } else if azure::looks_like(line) {
            Some(Format::Azure)
        } else {
            None
        }
    }

    /// [`Format::detect`], with the name as the tie-breaker: PostgreSQL's
    /// collector names csvlog files `.csv` and jsonlog files `.json`, and a
    /// first record cut short (a huge one, or a stream ending early) must
    /// not turn a csvlog file into an stderr one, whose reading would take
    /// the lines inside quoted fields for log lines.
    pub(crate) fn detect_named(name: &str, head: &[u8]) -> Format {
        let base = name.trim_end_matches(".gz").trim_end_matches(".zst");
        match Format::detect(head) {
            Format::Stderr if base.ends_with(".csv") => Format::Csvlog,
            Format::Stderr if base.ends_with(".json") => Format::Jsonlog,
            found => found,
        }
    }
}

/// Counters a scanner keeps while framing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Physical lines seen.
    pub lines: u64,
    /// Log entries (records) seen.
    pub entries: u64,
    /// Entries that contained a needle and were framed fully.
    pub candidates: u64,
    /// Candidate lines that could not be framed (prefix or structure did
    /// not fit) and hold no event's message head (see [`unmatched`]).
    pub unparsed: u64,
    /// Candidate lines that could not be framed but hold an event's message
    /// head: the log is not in the format or prefix it is read with.
    pub unmatched: u64,
    /// The first of them: its line number and text (cut short).
    pub first_unmatched: Option<(u64, String)>,
    /// Lines with an event's message head that sit inside an earlier line's
    /// log_line_prefix (a client's user or database name with line breaks,
    /// see [`spliced`]): a client's text, refused like a spliced entry.
    pub inside_names: u64,
    /// The line number of the first of them.
    pub first_inside_name: Option<u64>,
    /// Entries longer than the buffer (or cut off by the end of the input),
    /// consumed without being framed: they cannot be checkpoint events.
    /// Counted by the formats that count them as entries (csvlog, jsonlog).
    pub oversized: u64,
}

/// Position in a source: absolute byte offset and the 1-based number of the line starting there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub offset: u64,
    pub line: u64,
}

impl Pos {
    pub const START: Pos = Pos { offset: 0, line: 1 };
}

/// How much of a region a scanner consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Consumed {
    pub bytes: usize,
    /// Newlines within those bytes.
    pub newlines: u64,
}

/// What happens to an entry that does not end inside a full buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The scanner framed the buffer's complete lines as they are and
    /// consumed this much; the entry's remaining lines come in the next
    /// chunk. Only for line formats, whose later lines of an entry
    /// (TAB continuations) can never pass for the start of one.
    Cut(Consumed),
    /// The entry is consumed unbuffered, piece by piece, with [`Scan::skip`].
    Skip,
}

/// A format-specific framer over a buffer of complete lines.
pub trait Scan {
    /// Frames `region`, which starts at `pos` and holds complete lines only.
    /// Unless `last` is set, the scanner may leave an entry that could still
    /// grow (continuation or HINT lines in the next chunk) unconsumed.
    /// The consumed part always ends at an entry boundary.
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed;

    /// `scan` consumed nothing of `buf`, a full buffer: the entry starting
    /// it does not end inside. By default a line format frames the complete
    /// lines it has (the entry is cut there), and a single line longer than
    /// the buffer is skipped.
    fn overflow(&mut self, buf: &[u8], pos: Pos, emit: &mut dyn FnMut(Record)) -> Overflow {
        match memchr::memrchr(b'\n', buf) {
            Some(i) => Overflow::Cut(self.scan(&buf[..=i], pos, true, emit)),
            None => Overflow::Skip,
        }
    }

    /// Consumes, without framing it, the next `piece` of an entry too long
    /// to buffer (or cut off by the end of the input): `first` when `piece`
    /// starts the entry, `last` when the input ends with `piece`. Returns
    /// where the entry ends in `piece` (just after its newline), or None when
    /// it goes on after it; always Some when `last`. Such an entry cannot be
    /// an event: checkpoint records are a few hundred bytes. By default an
    /// entry ends with its line.
    fn skip(&mut self, piece: &[u8], _first: bool, last: bool) -> Option<usize> {
        memchr::memchr(b'\n', piece).map(|i| i + 1).or(last.then_some(piece.len()))
    }

    fn stats(&self) -> &FrameStats;

    /// How many bytes before the start position the scanner wants to see
    /// (given once, through [`Scan::look_behind`], before the first scan).
    fn wants_look_behind(&self) -> usize {
        0
    }

    /// The bytes just before the start position, when resuming mid-source;
    /// they may begin inside a line.
    fn look_behind(&mut self, _bytes: &[u8]) {}
}

/// What framing knows of PostgreSQL's messages, handed to every scanner by
/// its caller (the catalog sits below framing and is passed in): the
/// catalog (level words in every language) and the candidate finder built
/// from its needles — built once, as a Teddy searcher takes milliseconds
/// and the daemon makes scanners many times a second.
pub struct Lexicon {
    pub(crate) catalog: &'static Catalog,
    pub(crate) needles: Needles,
}

impl Lexicon {
    pub fn new(catalog: &'static Catalog) -> Lexicon {
        Lexicon { catalog, needles: Needles::new(catalog.needles()) }
    }
}

/// One lexicon for the tests of framing.
#[cfg(test)]
pub(crate) fn test_lexicon() -> &'static Lexicon {
    static LEXICON: std::sync::OnceLock<Lexicon> = std::sync::OnceLock::new();
    LEXICON.get_or_init(|| Lexicon::new(Catalog::global()))
}

/// The candidate finder: all needles of all languages, searched at once with
/// the SIMD "Teddy" algorithm (several GB/s); a plain Aho-Corasick automaton
/// is the fallback on CPUs without SSSE3/AVX2 or for too many needles.
pub(crate) struct Needles {
    finder: Finder,
}

enum Finder {
    Teddy(aho_corasick::packed::Searcher),
    Automaton(AhoCorasick),
}

impl Needles {
    /// Builds the finder. Needles are cut at characters that csvlog and
    /// jsonlog escape (quotes, backslashes, newlines), keeping the longest
    /// piece: a piece of a needle still occurs wherever the needle does.
    pub fn new(needles: &[String]) -> Needles {
        let mut pieces: Vec<&str> = needles
            .iter()
            .filter_map(|n| n.split(['"', '\\', '\n', '\t']).max_by_key(|p| p.len()))
            .filter(|p| !p.is_empty())
            .collect();
        pieces.sort_unstable();
        pieces.dedup();
        let teddy = aho_corasick::packed::Config::new().builder().extend(&pieces).build();
        let finder = match teddy {
            Some(searcher) => Finder::Teddy(searcher),
            None => Finder::Automaton(AhoCorasick::new(&pieces).expect("needles form a valid automaton")),
        };
        Needles { finder }
    }

    /// Start offsets of needle occurrences in `hay`, in order.
    pub fn find_iter<'a>(&'a self, hay: &'a [u8]) -> Box<dyn Iterator<Item = usize> + 'a> {
        match &self.finder {
            Finder::Teddy(s) => Box::new(s.find_iter(hay).map(|m| m.start())),
            Finder::Automaton(ac) => Box::new(ac.find_iter(hay).map(|m| m.start())),
        }
    }

    #[cfg(test)]
    fn is_match(&self, hay: &[u8]) -> bool {
        self.find_iter(hay).next().is_some()
    }
}

/// What to do with the end of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Leave an unterminated last line: a writer may still be writing it (files).
    Wait,
    /// Also leave the last entry: its HINT or continuation lines may still
    /// come (a file being followed; it is taken once the file is quiet).
    Hold,
    /// Read everything: the input has ended for good (stdin, compressed files).
    Take,
}

/// Reads `reader` to its end in bounded chunks, handing every chunk's
/// records and the position reached to `on_chunk`. An error from
/// `on_chunk` stops the read and is returned as is.
///
/// With `Tail::Wait`, an unterminated last line is left unread (a writer is
/// still writing it; the next read picks it up whole); with `Tail::Take` it
/// is the end of a finished stream and is read.
///
/// Every position handed to `on_chunk` or returned is an entry boundary (a
/// line boundary inside an entry [`Overflow::Cut`] split): a stop or a
/// later read never resumes inside an entry, where the rest of a quoted csv
/// field or of a long line could pass for records of their own.
pub fn drive<E: From<io::Error>>(
    reader: impl Read,
    scanner: &mut dyn Scan,
    start: Pos,
    tail: Tail,
    on_chunk: impl FnMut(Vec<Record>, Pos) -> Result<(), E>,
) -> Result<Pos, E> {
    drive_sized(CHUNK_BYTES, reader, scanner, start, tail, on_chunk)
}

/// [`drive`] with a given buffer size (tests use small ones to exercise chunk boundaries).
pub(crate) fn drive_sized<E: From<io::Error>>(
    chunk: usize,
    reader: impl Read,
    scanner: &mut dyn Scan,
    start: Pos,
    tail: Tail,
    mut on_chunk: impl FnMut(Vec<Record>, Pos) -> Result<(), E>,
) -> Result<Pos, E> {
    let mut d = Driver {
        reader,
        scanner,
        tail,
        buf: vec![0u8; chunk.max(1)],
        filled: 0,
        pos: start,
        eof: false,
        failure: None,
        oversized: None,
    };
    loop {
        d.fill();
        let (records, progress) = d.step();
        on_chunk(records, d.reached())?;
        if d.eof && (d.filled == 0 || !progress) {
            return match d.failure.take() {
                Some(e) => Err(e.into()),
                None => Ok(d.reached()),
            };
        }
    }
}

/// The state of one [`drive_sized`] run.
struct Driver<'s, R> {
    reader: R,
    scanner: &'s mut dyn Scan,
    tail: Tail,
    buf: Vec<u8>,
    /// Bytes of `buf` holding input.
    filled: usize,
    /// Position of `buf[0]` in the source.
    pos: Pos,
    eof: bool,
    /// A read error: what was read before it is framed first, then it is returned.
    failure: Option<io::Error>,
    /// Where the entry being skipped (see [`Scan::skip`]) started.
    oversized: Option<Pos>,
}

impl<R: Read> Driver<'_, R> {
    fn fill(&mut self) {
        while self.filled < self.buf.len() && !self.eof {
            match self.reader.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Keep what was read before the damage: frame it, then fail.
                    self.failure = Some(e);
                    self.eof = true;
                }
            }
        }
    }

    /// Whether the input has ended for good, not just for now.
    fn ended(&self) -> bool {
        self.eof && self.tail == Tail::Take
    }

    /// The position reached: the start of an entry still being skipped,
    /// so that an entry cut off by the end of a growing file is read again
    /// whole once it is complete.
    fn reached(&self) -> Pos {
        self.oversized.unwrap_or(self.pos)
    }

    /// Frames (or skips) what the buffer holds; returns the records and
    /// whether any input was consumed.
    fn step(&mut self) -> (Vec<Record>, bool) {
        let mut records = Vec::new();
        let consumed = match self.oversized {
            Some(_) => self.skip(false),
            None => self.frame(&mut records),
        };
        (records, consumed > 0)
    }

    fn frame(&mut self, records: &mut Vec<Record>) -> usize {
        let filled = self.filled;
        let complete =
            if self.ended() { filled } else { memchr::memrchr(b'\n', &self.buf[..filled]).map_or(0, |i| i + 1) };
        let last = self.eof && self.tail != Tail::Hold;
        let mut emit = |r| records.push(r);
        let mut done = self.scanner.scan(&self.buf[..complete], self.pos, last, &mut emit);
        if done.bytes == 0 && filled == self.buf.len() {
            match self.scanner.overflow(&self.buf[..filled], self.pos, &mut emit) {
                Overflow::Cut(cut) if cut.bytes > 0 => done = cut,
                _ => return self.start_skip(),
            }
        } else if done.bytes == 0 && filled > 0 && self.ended() {
            // The stream ends inside an entry the scanner would not frame
            // (a csv record cut off inside quotes): consume it all the same.
            return self.start_skip();
        }
        self.advance(done);
        done.bytes
    }

    fn start_skip(&mut self) -> usize {
        tracing::debug!(
            offset = self.pos.offset,
            "Skipping an entry longer than {} bytes unbuffered; it cannot be a checkpoint event.",
            self.buf.len()
        );
        self.oversized = Some(self.pos);
        self.skip(true)
    }

    /// Consumes the buffer's part of the entry being skipped.
    fn skip(&mut self, first: bool) -> usize {
        let piece = &self.buf[..self.filled];
        let end = self.scanner.skip(piece, first, self.ended());
        let bytes = end.unwrap_or(piece.len()).min(piece.len());
        let newlines = lines::count(&piece[..bytes]);
        if end.is_some() {
            self.oversized = None;
        }
        self.advance(Consumed { bytes, newlines });
        bytes
    }

    fn advance(&mut self, done: Consumed) {
        self.pos.offset += done.bytes as u64;
        self.pos.line += done.newlines;
        self.buf.copy_within(done.bytes..self.filled, 0);
        self.filled -= done.bytes;
    }
}

/// Helpers for the formats' framing tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Frames `data`, which starts at `start` in its source, in buffers of
    /// `chunk` bytes; the position returned must be the last one reported.
    pub(crate) fn frame_all(
        scanner: &mut dyn Scan,
        data: &[u8],
        chunk: usize,
        tail: Tail,
        start: Pos,
    ) -> (Vec<Record>, Pos) {
        let mut records = Vec::new();
        let mut reached = Vec::new();
        let end = drive_sized(chunk, data, scanner, start, tail, |r, at| {
            records.extend(r);
            reached.push(at);
            Ok::<(), io::Error>(())
        })
        .unwrap();
        assert_eq!(reached.last(), Some(&end), "the position returned is the last one reported");
        (records, end)
    }

    /// Entry starts of a log made of `entries` (and its end).
    pub(crate) fn boundaries(entries: &[String]) -> Vec<Pos> {
        let mut at = vec![Pos::START];
        for e in entries {
            let prev = at[at.len() - 1];
            at.push(Pos { offset: prev.offset + e.len() as u64, line: prev.line + lines::count(e.as_bytes()) });
        }
        at
    }

    /// Reads `entries` as a file PostgreSQL is still writing, stopped at
    /// every byte and read on from the position reached: the records must
    /// be those of the whole file, and the position never inside an entry.
    pub(crate) fn check_growing_file<'t>(
        new_scanner: impl Fn() -> Box<dyn Scan + 't>,
        entries: &[String],
        chunk: usize,
    ) {
        let len = entries.iter().map(String::len).sum();
        check_growing_file_at(new_scanner, entries, chunk, 0..=len);
    }

    /// [`check_growing_file`] stopped at the given bytes only (each costs
    /// two framings of the file: every byte of a long log takes minutes).
    pub(crate) fn check_growing_file_at<'t>(
        new_scanner: impl Fn() -> Box<dyn Scan + 't>,
        entries: &[String],
        chunk: usize,
        cuts: impl IntoIterator<Item = usize>,
    ) {
        let data = entries.concat().into_bytes();
        let starts = boundaries(entries);
        let (whole, end) = frame_all(new_scanner().as_mut(), &data, chunk, Tail::Take, Pos::START);
        assert_eq!(end, starts[entries.len()]);
        for cut in cuts {
            let (mut got, reached) = frame_all(new_scanner().as_mut(), &data[..cut], chunk, Tail::Wait, Pos::START);
            let entry_start = starts.iter().rev().find(|p| p.offset <= cut as u64);
            assert_eq!(Some(&reached), entry_start, "chunk {chunk}, cut {cut}: not the start of the entry cut");
            let rest = &data[reached.offset as usize..];
            let (more, end) = frame_all(new_scanner().as_mut(), rest, chunk, Tail::Wait, reached);
            got.extend(more);
            assert_eq!(got, whole, "chunk {chunk}, cut {cut}");
            assert_eq!(end, starts[entries.len()], "chunk {chunk}, cut {cut}");
        }
    }
}

#[cfg(test)]
mod real_rows;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats_from_their_first_line() {
        assert_eq!(Format::detect(b"{\"timestamp\":\"2026-11-22 08:08:08.916 UTC\"}\n"), Format::Jsonlog);
        assert_eq!(
            Format::detect(b"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"ending\",,,,,,,,,\"\",\"postmaster\"\n"),
            Format::Csvlog
        );
        assert_eq!(Format::detect(b"2026-11-22 08:04:20.708 UTC [21752] LOG:  starting\n"), Format::Stderr);
        // A user name with line breaks cuts the first csv record short.
        let cut = b"2026-11-24 01:02:22.123 UTC,\"x\nx\n2026-01-01 00:00:00.000 Z [1] LOG:  checkpoint starting: wal\n\",\"postgres\",8001,\"127.0.0.1:5000\",6b02a4a8.6e8d,1,\"authentication\",2026-11-24 01:02:22 UTC,3/1,0,FATAL,28P01,\"password authentication failed\",,,,,,,,,\"\",\"client backend\",,0\n";
        assert_eq!(Format::detect(cut), Format::Csvlog);
        assert_eq!(Format::detect(&cut[..60]), Format::Stderr, "too short to tell");
        assert_eq!(Format::detect_named("/l/postgresql-2026-11-24_010222.csv", &cut[..60]), Format::Csvlog);
        assert_eq!(Format::detect_named("/l/postgresql-2026-11-24_010222.json.gz", b"2026 x\n"), Format::Jsonlog);
        assert_eq!(Format::detect_named("/l/postgresql.log", &cut[..60]), Format::Stderr);
        assert_eq!(
            Format::detect(b"Nov 22 08:04:20 db1 postgres[21752]: [3-1] LOG:  starting PostgreSQL 15\n"),
            Format::Syslog
        );
    }

    #[test]
    fn detects_envelopes_from_their_first_lines() {
        let cases: &[(&[u8], Format)] = &[
            (br#"{"textPayload":"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  x","timestamp":"2024-03-01T10:00:00Z"}"#, Format::CloudSql),
            (br#"{"jsonPayload":{"message":"2024-03-01 10:00:00.123 UTC [27] LOG:  x"},"logName":"l"}"#, Format::CloudSql),
            (br#"{"level":"info","ts":1.5,"logger":"postgres","msg":"record","record":{"message":"x"}}"#, Format::Cnpg),
            (br#"{"level":"info","ts":1.5,"logger":"instance-manager","msg":"starting","logging_pod":"c-1"}"#, Format::Cnpg),
            (br#"{"__REALTIME_TIMESTAMP":"1","_PID":"7","MESSAGE":"LOG:  x"}"#, Format::JournaldJson),
            (br#"{"time":"2023-02-27T23:21:40Z","category":"PostgreSQLLogs","properties":{"message":"x","errorLevel":"LOG"}}"#, Format::Azure),
            (br#"{"timestamp":"2026-11-22 08:08:08.916 UTC","message":"x"}"#, Format::Jsonlog),
            (b"Nov 22 08:04:20 db1 postgres[21752]: 2026-11-22 08:04:20.708 UTC [21752] LOG:  starting\n", Format::Journald),
            (b"-- Journal begins at Sun 2026-11-22 08:00:00 UTC, ends at Sun 2026-11-22 09:00:00 UTC. --\n", Format::Journald),
        ];
        for (head, want) in cases {
            assert_eq!(Format::detect(head), *want, "{}", lines::lossy(head));
            assert_eq!(Format::named(want.as_str()), Some(*want));
        }
        // Another program's entries first: the first line that tells decides.
        let audit =
            br#"{"protoPayload":{"methodName":"cloudsql.instances.update"},"timestamp":"2024-03-01T10:00:00Z"}"#;
        let head = [
            &audit[..],
            b"\n",
            br#"{"textPayload":"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  x"}"#,
            b"\n",
        ]
        .concat();
        assert_eq!(Format::detect(&head), Format::CloudSql);
        assert_eq!(Format::detect(&[&audit[..], b"\n"].concat()), Format::Jsonlog, "nothing tells");
    }

    use proptest::prelude::*;

    /// Real lines of several shapes, plus hostile ones.
    const LINES: &[&str] = &[
        "2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)",
        "2026-11-22 08:04:23.386 UTC [21760] HINT:  Consider increasing the configuration parameter \"max_wal_size\".",
        "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal",
        "2026-11-22 08:04:24.198 UTC [21760] LOG:  checkpoint complete: wrote 100 buffers (2.4%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.385 s, sync=0.207 s, total=0.813 s; sync files=30, longest=0.082 s, average=0.007 s; distance=12284 kB, estimate=12284 kB",
        "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres LOG:  checkpoint starting: wal",
        "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres CONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE",
        "2026-11-22 08:08:15.257 UTC [24978] postgres@postgres LOG:  statement: SELECT 'forged:",
        "\t2026-11-22 08:08:15.228 UTC [24699] LOG:  checkpoint starting: time",
        "2026-11-22 08:04:20.708 UTC [21752] LOG:  starting PostgreSQL 15.18 on x86_64-pc-linux-gnu",
        "2026-11-22 08:08:54.812 UTC [24685] LOG:  parameter \"max_wal_size\" changed to \"64MB\"",
        "garbage checkpoint starting: wal",
        "\tcontinuation checkpoint",
        "",
    ];

    fn frame(prefix: &str, data: &[u8], chunk: usize) -> (Vec<Record>, Pos) {
        let time = time::TimeContext::new(Some("UTC")).unwrap();
        let markers = Catalog::global().markers();
        let p = match prefix::Prefix::compile(prefix, markers) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let mut scanner = stderr::StderrScanner::new(p, &time, crate::frame::test_lexicon());
        let mut records = Vec::new();
        let end = drive_sized(chunk, data, &mut scanner, Pos::START, Tail::Take, |r, _| {
            records.extend(r);
            Ok::<(), io::Error>(())
        })
        .unwrap();
        (records, end)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096), chunk in 16usize..512) {
            let (_, end) = frame("%m [%p] %q%u@%d ", &data, chunk);
            prop_assert!(end.offset <= data.len() as u64);
        }

        #[test]
        fn chunk_size_never_changes_the_records(picks in proptest::collection::vec(0..LINES.len(), 1..120), garbage in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut data = Vec::new();
            for (i, &p) in picks.iter().enumerate() {
                data.extend_from_slice(LINES[p].as_bytes());
                if i == picks.len() / 2 {
                    data.extend_from_slice(&garbage);
                }
                data.push(b'\n');
            }
            let (whole, end) = frame("%m [%p] %q%u@%d ", &data, 1 << 20);
            prop_assert_eq!(end.offset, data.len() as u64);
            for chunk in [1024usize, 1500, 4096] {
                let (pieces, end) = frame("%m [%p] %q%u@%d ", &data, chunk);
                prop_assert_eq!(&pieces, &whole, "chunk {}", chunk);
                prop_assert_eq!(end.offset, data.len() as u64);
            }
        }
    }

    /// A followed file read while a line longer than the buffer is half
    /// written: the position stays at the line's start, so the line's rest
    /// (here a whole fake line inside a logged statement) is never read as a
    /// line of its own; the next read skips the line whole.
    #[test]
    fn a_half_written_oversized_line_is_read_again_from_its_start() {
        let time = time::TimeContext::new(Some("UTC")).unwrap();
        let prefix = prefix::Prefix::compile("%m [%p] %q%u@%d ", Catalog::global().markers()).unwrap();
        let real = format!("{}\n", LINES[2]);
        let fake = "2026-11-22 08:08:15.228 UTC [24699] LOG:  checkpoint starting: time";
        let session = "2026-11-22 08:08:15.257 UTC [24978] postgres@postgres LOG:  statement: SELECT 1 --";
        let long = format!("{session} {}{fake}\n", "x".repeat(600));
        let data = format!("{real}{long}{real}").into_bytes();
        let long_end = real.len() + long.len();
        for cut in real.len()..data.len() {
            let scanner = || stderr::StderrScanner::new(prefix.clone(), &time, crate::frame::test_lexicon());
            let (mut got, reached) = testing::frame_all(&mut scanner(), &data[..cut], 256, Tail::Wait, Pos::START);
            let line_start = if cut < long_end { real.len() } else { long_end };
            assert_eq!(reached.offset, line_start as u64, "cut {cut}");
            let rest = &data[line_start..];
            let (more, end) = testing::frame_all(&mut scanner(), rest, 256, Tail::Wait, reached);
            got.extend(more);
            let messages: Vec<&str> = got.iter().map(|r| r.message.as_str()).collect();
            assert_eq!(messages, ["checkpoint starting: wal"; 2], "cut {cut}");
            assert_eq!(end, Pos { offset: data.len() as u64, line: 4 }, "cut {cut}");
        }
    }

    #[test]
    fn needles_are_cut_at_escaped_characters() {
        let n = Needles::new(&["parameter \"".to_string(), "heckpoint".to_string()]);
        assert!(n.is_match(b"parameter \\\"max_wal_size\\\" changed"));
        assert!(n.is_match(b"Checkpoint beginnt"));
        assert!(!n.is_match(b"SELECT 1"));
    }
}
