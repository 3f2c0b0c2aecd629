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

pub mod formats;
pub(crate) mod lines;
pub mod prefix;
pub(crate) mod record;
pub(crate) mod spliced;
pub mod time;
pub(crate) mod unmatched;

pub(crate) use record::{Cut, LineLevel, LogSeverity, Origin, Record, Secondary};

mod detect;
mod driver;
mod needles;
mod scan;
mod stats;
#[cfg(test)]
pub(crate) mod testing;

pub(crate) use detect::Format;
#[cfg(test)]
pub(crate) use driver::drive_sized;
pub use driver::{drive, Tail, CHUNK_BYTES};
#[cfg(test)]
pub(crate) use needles::test_lexicon;
pub(crate) use needles::Lexicon;
pub(crate) use needles::Needles;
pub(crate) use scan::{Consumed, Overflow};
pub use scan::{Pos, Scan};
pub(crate) use stats::FrameStats;

#[cfg(test)]
mod real_rows;
#[cfg(test)]
mod tests;
