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

pub mod csvlog;
pub mod jsonlog;
pub mod lines;
pub mod prefix;
pub mod record;
pub mod spliced;
pub mod stderr;
pub mod syslog;
pub mod time;

use std::io::{self, Read};
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use crate::classify::catalog::Catalog;
pub use record::{LineLevel, Origin, Record, Secondary, Severity};

/// Bytes read per chunk. Memory stays bounded by a few of these whatever the input.
pub const CHUNK_BYTES: usize = 2 << 20;

/// The log formats walwatch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Stderr,
    Csvlog,
    Jsonlog,
    Syslog,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Stderr => "stderr",
            Format::Csvlog => "csvlog",
            Format::Jsonlog => "jsonlog",
            Format::Syslog => "syslog",
        }
    }

    /// Guesses the format from the first bytes of a source.
    pub fn detect(head: &[u8]) -> Format {
        let first = head.split(|&b| b == b'\n').find(|l| !l.is_empty()).unwrap_or_default();
        if first.first() == Some(&b'{') {
            Format::Jsonlog
        } else if csvlog::looks_like(first) {
            Format::Csvlog
        } else if syslog::looks_like(first) {
            Format::Syslog
        } else {
            Format::Stderr
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
    /// Candidate lines that could not be framed (prefix or structure did not fit).
    pub unparsed: u64,
    /// Lines longer than the chunk size, skipped without being buffered.
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

/// A format-specific framer over a buffer of complete lines.
pub trait Scan {
    /// Frames `region`, which starts at `pos` and holds complete lines only.
    /// Unless `last` is set, the scanner may leave an entry that could still
    /// grow (continuation or HINT lines in the next chunk) unconsumed.
    /// The consumed part always ends at an entry boundary.
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed;
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

/// The candidate finder: all needles of all languages, searched at once with
/// the SIMD "Teddy" algorithm (several GB/s); a plain Aho-Corasick automaton
/// is the fallback on CPUs without SSSE3/AVX2 or for too many needles.
pub struct Needles {
    finder: Finder,
}

enum Finder {
    Teddy(aho_corasick::packed::Searcher),
    Automaton(AhoCorasick),
}

impl Needles {
    pub fn global() -> &'static Needles {
        static NEEDLES: OnceLock<Needles> = OnceLock::new();
        NEEDLES.get_or_init(|| Needles::new(Catalog::global().needles()))
    }

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

    pub fn is_match(&self, hay: &[u8]) -> bool {
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
pub fn drive_sized<E: From<io::Error>>(
    chunk: usize,
    mut reader: impl Read,
    scanner: &mut dyn Scan,
    start: Pos,
    tail: Tail,
    mut on_chunk: impl FnMut(Vec<Record>, Pos) -> Result<(), E>,
) -> Result<Pos, E> {
    let mut buf = vec![0u8; chunk];
    let (mut filled, mut pos, mut eof, mut skipping) = (0usize, start, false, false);
    let mut failure: Option<io::Error> = None;
    loop {
        while filled < buf.len() && !eof {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => eof = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Keep what was read before the damage: frame it, then fail.
                    failure = Some(e);
                    eof = true;
                }
            }
        }
        if skipping {
            // Drop the rest of an oversized line, up to and including its newline.
            let cut = memchr::memchr(b'\n', &buf[..filled]).map_or(filled, |i| i + 1);
            skipping = cut == filled && buf[..filled].last() != Some(&b'\n') && !eof;
            pos.offset += cut as u64;
            pos.line += u64::from(buf[..cut].last() == Some(&b'\n'));
            buf.copy_within(cut..filled, 0);
            filled -= cut;
            on_chunk(Vec::new(), pos)?;
            continue;
        }
        let last_newline = memchr::memrchr(b'\n', &buf[..filled]).map_or(0, |i| i + 1);
        let complete = if eof && tail == Tail::Take { filled } else { last_newline };
        if complete == 0 && !eof {
            // One line fills the whole buffer: it cannot be an event; skip it unbuffered.
            skipping = true;
            continue_oversized(&mut pos, &buf[..filled], chunk);
            filled = 0;
            on_chunk(Vec::new(), pos)?;
            continue;
        }
        let mut records = Vec::new();
        let mut done = scanner.scan(&buf[..complete], pos, eof && tail != Tail::Hold, &mut |r| records.push(r));
        if done.bytes == 0 && complete > 0 && filled == buf.len() {
            // One entry fills the buffer (a huge multi-line statement): cut it here.
            done = scanner.scan(&buf[..complete], pos, true, &mut |r| records.push(r));
        }
        let consumed = done.bytes;
        pos.line += done.newlines;
        pos.offset += consumed as u64;
        buf.copy_within(consumed..filled, 0);
        filled -= consumed;
        on_chunk(records, pos)?;
        if eof && (filled == 0 || consumed == 0) {
            return match failure {
                Some(e) => Err(e.into()),
                None => Ok(pos),
            };
        }
    }
}

fn continue_oversized(pos: &mut Pos, skipped: &[u8], chunk: usize) {
    pos.offset += skipped.len() as u64;
    tracing::debug!(offset = pos.offset, "Skipping a line longer than {chunk} bytes; it cannot be a checkpoint event.");
}

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
        assert_eq!(
            Format::detect(b"Nov 22 08:04:20 db1 postgres[21752]: [3-1] LOG:  starting PostgreSQL 15\n"),
            Format::Syslog
        );
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
        let mut scanner = stderr::StderrScanner::new(p, &time);
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

    #[test]
    fn needles_are_cut_at_escaped_characters() {
        let n = Needles::new(&["parameter \"".to_string(), "heckpoint".to_string()]);
        assert!(n.is_match(b"parameter \\\"max_wal_size\\\" changed"));
        assert!(n.is_match(b"Checkpoint beginnt"));
        assert!(!n.is_match(b"SELECT 1"));
    }
}
