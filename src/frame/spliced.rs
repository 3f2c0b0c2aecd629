//! Lines a client spliced into a stderr log through the `log_line_prefix`.
//!
//! `%u` and `%d` hold whatever the client sent, line breaks included (see
//! [`Spanning`]), so the physical lines of one real entry can look like
//! several entries, one of them a perfect checkpoint line. PostgreSQL writes
//! each entry whole, so the spliced lines always sit between the real
//! entry's first line `A` (it starts like the prefix, with the real time
//! and pid) and the line `Z` that carries its real marker, at most
//! [`Spanning::span`] bytes apart. The attacker can make `A` or `Z` look
//! like a complete log line, but not both within the 63 bytes each raw field
//! holds, so a candidate entry `E` is refused when either end shows:
//!
//! 1. **an earlier prefix runs on into `E`**: a line before `E` starts like
//!    the prefix but has no marker of its own (`A` cut short), and the first
//!    reading of the prefix from there ends at a marker at or after `E`;
//! 2. **a prefix opened at or before `E` ends on `E`'s line or on the next**:
//!    a marker on the line after `E`'s entry (one after that line's own
//!    marker, if it reads as a log line), or on `E`'s own line after its own
//!    marker, reads together with lines from `E` back as the end of one
//!    prefix whose raw fields hold the line breaks — the real `A…Z` always
//!    does.
//!
//! A real entry is never refused because of an injection next to it: the
//! first reading from a cut-short `A` ends at the latest on its real `Z`,
//! and a `Z` is only joined with lines that begin within one prefix's reach
//! of its marker, which the real `A` bounds. What remains possible — a
//! prefix whose head has no time or pid (`%u@%d %m …`), or a forged line
//! that survives a separator character glued to it — is documented in the
//! README's trust section.
//!
//! The checks read up to one prefix's span of lines on either side of an
//! entry, so a read must hold that much: the driver's reads
//! ([`super::CHUNK_BYTES`], 2 MiB) always do, and the tests cut reads from
//! one span up. Reads shorter than a span (about 120 bytes for Debian's
//! prefix) would decide some entries without the lines after them and let
//! a spliced line through; no reader of walwatch reads that little.

use super::lines;
use super::prefix::{Prefix, Spanning};

/// A candidate entry in a window of whole lines around it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Around<'a> {
    /// Up to a prefix's span of lines before the entry, the entry, and at
    /// least a prefix's span after its start (or the end of the input).
    pub(crate) text: &'a [u8],
    /// Start of the entry's first line.
    pub(crate) start: usize,
    /// Start of the line after the entry (its TAB and secondary lines included).
    pub(crate) next: usize,
}

/// Whether the entry is text inside another entry's prefix.
pub(crate) fn inside_a_prefix(prefix: &Prefix, around: &Around<'_>) -> bool {
    let Some(spanning) = prefix.spanning() else { return false };
    earlier_prefix_runs_on(prefix, spanning, around) || a_later_marker_ends_a_prefix(prefix, spanning, around)
}

/// Whether the line at `around.start`, which the prefix does not read, is
/// text inside an earlier line's prefix: a client's user or database name
/// with line breaks. Such lines are a client's, not a misfit of the
/// prefix: a few failed logins must not make walwatch refuse a log. Either
/// an earlier line is cut short and its prefix runs on past this one
/// (check 1), or a marker on this line or a later one ends a prefix that
/// began before it — the first line may read as a log line of its own
/// (user `LOG:  `, the line in the database name).
pub(crate) fn inside_an_earlier_prefix(prefix: &Prefix, around: &Around<'_>) -> bool {
    prefix.spanning().is_some_and(|spanning| {
        earlier_prefix_runs_on(prefix, spanning, around) || ends_a_prefix_begun_before(prefix, spanning, around)
    })
}

/// A marker from the line at `a.start` on (up to a prefix's span) that ends
/// a prefix whose nearest start is before that line.
fn ends_a_prefix_begun_before(prefix: &Prefix, spanning: &Spanning, a: &Around<'_>) -> bool {
    let mut at = a.start;
    while at < a.text.len() && at - a.start <= spanning.span() {
        let line = lines::text(a.text, at);
        let begun_before = |end: usize| nearest_start(spanning, a.text, at, at + end).is_some_and(|s| s < a.start);
        if later_markers(prefix, spanning, line).any(begun_before) {
            return true;
        }
        at = lines::next_start(a.text, at);
    }
    false
}

/// Check 1: a cut-short first line before the entry whose prefix ends at or after the entry.
fn earlier_prefix_runs_on(prefix: &Prefix, spanning: &Spanning, a: &Around<'_>) -> bool {
    if !spanning.head_is_distinctive() {
        // Any text starts like an empty head: no line can be told to be cut short.
        return false;
    }
    let mut at = a.start;
    while let Some(before) = lines::prev_start(a.text, at) {
        if a.start - before > spanning.span() {
            break;
        }
        at = before;
        let line = lines::text(a.text, before);
        if !spanning.starts_like(line) || prefix.fits(&lines::lossy(line)) {
            continue;
        }
        let reach = (before + spanning.span()).min(a.text.len());
        if spanning.marker_after(&a.text[before..reach]).is_some_and(|m| before + m > a.start) {
            return true;
        }
    }
    false
}

/// Check 2: a marker on the entry's lines or on the lines after it (up to a
/// prefix's span from its start) ends a prefix that began at or before the
/// entry. Such a line may be no log line at all (the rest of the real
/// prefix), or read as one whose own reading ends early, at a marker the
/// attacker wrote before the real one; on the entry's own first line, the
/// real marker follows the forged message (one that takes any text, such as
/// `parameter "fsync" changed to "…"`).
///
/// A marker belongs to the nearest line that can begin a prefix ending at
/// it. The real first line of an injection is always such a line, so a real
/// entry before an injection is never implicated; an attacker who wants a
/// forged line to escape must fit a second, fake head after it into the
/// same 63-byte fields, which no common prefix with `%m` leaves room for
/// (`%t [%p] %q%u@%d ` does: see the README's trust section).
fn a_later_marker_ends_a_prefix(prefix: &Prefix, spanning: &Spanning, a: &Around<'_>) -> bool {
    let last_line = lines::prev_start(a.text, a.next).unwrap_or(a.start);
    let mut at = a.start;
    while at < a.text.len() && at - a.start <= spanning.span() {
        let line = lines::text(a.text, at);
        let implicated = |end: usize| nearest_start(spanning, a.text, at, at + end).is_some_and(|s| s <= last_line);
        if later_markers(prefix, spanning, line).any(implicated) || (at >= a.next && reaches(spanning, a, at, line)) {
            return true;
        }
        at = lines::next_start(a.text, at);
    }
    false
}

/// Check 2 against a fake head: the forged line may be the injection's own
/// first line (the real head, then a forged message in the user name), and
/// the rest of the user name a second head that makes the real end read as
/// a log line of its own, nearer than the real start. So the entry's own
/// line is tried against every marker of the lines after it, their own
/// markers included. With the pid in the head this cannot refuse a real
/// line: a short checkpoint line, a line break and a real next head with
/// its user name already exceed the 63 bytes (65 with `%m`, a one-digit
/// pid and a three-letter zone). A shorter head (`%n [%p] %d `: 51 bytes
/// for a short line and the next server line's head) or padded names
/// (`%-10u %-10d `: the server's empty names print as spaces, which the two
/// raw fields' 126 bytes reach across) break that bound: two consecutive
/// server lines would read as one prefix, and every short real line
/// (`checkpoint starting: wal`) would be refused. [`Spanning`] finds that
/// out by printing such a pair with the prefix; there the check is not made
/// (the README's trust section says what remains).
fn reaches(spanning: &Spanning, a: &Around<'_>, at: usize, line: &[u8]) -> bool {
    spanning.head_has_pid()
        && !spanning.server_lines_join()
        && spanning.markers_in(line).any(|m| spanning.is_exactly(&a.text[a.start..at + m.end]))
}

/// Whether the line at `at` is the first line of an entry whose prefix runs
/// on past its first marker: it must then not be taken as a DETAIL/HINT/CONTEXT
/// line of the entry before it (with `%p` after a raw field, the attacker
/// writes the pid, and could attach a fake CONTEXT line to a real
/// checkpoint line, or a HINT to a forged warning).
pub(crate) fn opens_a_spliced_prefix(prefix: &Prefix, text: &[u8], at: usize) -> bool {
    let Some(spanning) = prefix.spanning() else { return false };
    // Its own line too: a longer reading of its raw fields may end at a
    // later marker on the same line (no line break needed when `%p` comes
    // after them).
    let mut line_at = at;
    while line_at < text.len() && line_at - at <= spanning.span() {
        let line = lines::text(text, line_at);
        if later_markers(prefix, spanning, line)
            .any(|end| nearest_start(spanning, text, line_at, line_at + end) == Some(at))
        {
            return true;
        }
        line_at = lines::next_start(text, line_at);
    }
    false
}

/// Ends of the markers in `line` that could end a prefix begun on an
/// earlier line: all of them if the line is no log line of its own, else
/// those after its own marker. (Its own marker is left alone: with prefixes
/// like `%m %u %d [%p] `, a short real line and the head of a real next
/// line fit into the raw fields' 126 bytes, and a real line must never be
/// refused for what follows it.)
fn later_markers<'a>(prefix: &Prefix, spanning: &'a Spanning, line: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let markers: Vec<std::ops::Range<usize>> = spanning.markers_in(line).collect();
    // A log line of its own with a single marker (every line of a normal
    // log): that marker is its own, and there is nothing after it.
    let own = match markers.len() {
        0 => None,
        _ if !prefix.fits(&lines::lossy(line)) => None,
        1 => return Vec::new().into_iter(),
        _ => spanning.marker_after(line),
    };
    markers.into_iter().filter(|m| own.is_none_or(|own| m.start > own)).map(|m| m.end).collect::<Vec<_>>().into_iter()
}

/// The nearest line, from the one at `from` back (within a prefix's span of
/// `end`), that begins a prefix ending exactly at `end`, its raw fields
/// holding the line breaks.
fn nearest_start(spanning: &Spanning, text: &[u8], from: usize, end: usize) -> Option<usize> {
    let mut at = from;
    loop {
        if end - at > spanning.span() {
            return None;
        }
        if spanning.starts_like(lines::text(text, at)) && spanning.is_exactly(&text[at..end]) {
            return Some(at);
        }
        at = lines::prev_start(text, at)?;
    }
}

#[cfg(test)]
mod checks_tests;
#[cfg(test)]
mod tests;
