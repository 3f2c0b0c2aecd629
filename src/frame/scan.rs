//! The [`Scan`] trait every format implements, and the positions and
//! amounts it speaks in.

use super::{FrameStats, Record};

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
    pub(crate) bytes: usize,
    /// Newlines within those bytes.
    pub(crate) newlines: u64,
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
