//! What a scanner counts while framing: lines, entries, candidates and
//! what could not be framed.

/// Counters a scanner keeps while framing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Physical lines seen.
    pub(crate) lines: u64,
    /// Log entries (records) seen.
    pub entries: u64,
    /// Entries that contained a needle and were framed fully.
    pub(crate) candidates: u64,
    /// Candidate lines that could not be framed (prefix or structure did
    /// not fit) and hold no event's message head (see [`unmatched`]).
    pub(crate) unparsed: u64,
    /// Candidate lines that could not be framed but hold an event's message
    /// head: the log is not in the format or prefix it is read with.
    pub(crate) unmatched: u64,
    /// The first of them: its line number and text (cut short).
    pub(crate) first_unmatched: Option<(u64, String)>,
    /// Lines with an event's message head that sit inside an earlier line's
    /// log_line_prefix (a client's user or database name with line breaks,
    /// see [`spliced`]): a client's text, refused like a spliced entry.
    pub(crate) inside_names: u64,
    /// The line number of the first of them.
    pub(crate) first_inside_name: Option<u64>,
    /// Entries longer than the buffer (or cut off by the end of the input),
    /// consumed without being framed: they cannot be checkpoint events.
    /// Counted by the formats that count them as entries (csvlog, jsonlog).
    pub oversized: u64,
}
