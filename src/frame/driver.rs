//! [`drive`]: reads a source in bounded chunks and feeds complete lines to
//! a scanner, reporting each chunk's records with the position reached.

use std::io::{self, Read};

use super::{lines, Consumed, Overflow, Pos, Record, Scan};

/// Bytes read per chunk. Memory stays bounded by a few of these whatever the input.
pub const CHUNK_BYTES: usize = 2 << 20;

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
