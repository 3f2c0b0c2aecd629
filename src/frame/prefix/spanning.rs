//! A `log_line_prefix` that a client can break across lines.
//!
//! PostgreSQL prints `%u` and `%d` exactly as the client sent them in its
//! startup packet, before authentication, line breaks included (cut at
//! NAMEDATALEN − 1 = 63 bytes). A client that never logs in can therefore
//! start physical lines of its own in the middle of a real entry's prefix:
//!
//! ```text
//! 2026-11-23 23:22:01.825 UTC [7440]                       ← the real prefix, cut short
//! 2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal   ← the user name
//! @postgres FATAL:  password authentication failed for user "    ← the rest of the prefix
//! ```
//!
//! Every such entry has a first line that starts like the prefix (the
//! *head*: the part before the first raw field, with the real time and pid)
//! and a marker (`FATAL:  `) on a later line, and the bytes between are at
//! most the raw fields' 63 bytes each plus the prefix's own text. This
//! module gives the regexes that recognise that shape; `frame::spliced`
//! decides which lines it covers.

use regex::bytes::Regex;

use super::{Field, Piece};

/// Bytes PostgreSQL keeps of a user or database name (NAMEDATALEN − 1).
pub(crate) const RAW_NAME_BYTES: usize = 63;

/// The regexes of one prefix whose raw fields may hold line breaks.
#[derive(Debug, Clone)]
pub(crate) struct Spanning {
    /// The prefix up to its first raw field.
    head: Regex,
    /// The head contains a field (a time, a pid): it tells a real entry's
    /// first line from arbitrary text. An empty or literal-only head does not.
    head_is_distinctive: bool,
    /// The head holds the pid: the raw fields come after the writer's
    /// identity, and a real line's head is as long as a real pid and zone
    /// make it.
    head_has_pid: bool,
    /// Two consecutive lines of a server process, at their shortest, read
    /// as one prefix whose raw fields hold the first line and the second's
    /// head: a head too short for the names' 63 bytes (`%n [%p] %d `), or
    /// padded names (`%-10u`), whose empty values print as spaces a long
    /// name reproduces byte for byte. The fake-head check would then refuse
    /// real lines.
    server_lines_join: bool,
    /// Prefix and marker, raw fields spanning lines; the marker group is 1.
    open: Regex,
    /// The same, ending exactly at the end of the text.
    closed: Regex,
    /// The markers alone.
    markers: Regex,
    /// The most bytes one prefix and its marker can take.
    span: usize,
}

impl Field {
    /// Printed as the client sent it, line breaks included.
    fn is_raw(self) -> bool {
        matches!(self, Field::User | Field::Database)
    }

    /// The most bytes PostgreSQL prints for it (generous; padding aside).
    fn max_bytes(self) -> usize {
        match self {
            Field::User | Field::Database => RAW_NAME_BYTES,
            // Cleaned to printable ASCII; PostgreSQL 16+ escapes bytes as \xNN.
            Field::Application => 4 * RAW_NAME_BYTES,
            // A DNS name (255) and "(port)".
            Field::RemoteHostPort | Field::RemoteHost => 262,
            Field::LocalAddr => 46,
            // BGW_MAXLEN for a background worker's type.
            Field::BackendType => 96,
            Field::Pid | Field::LeaderPid => 10,
            Field::Timestamp | Field::TimestampMs | Field::SessionStart => 64,
            Field::CommandTag => 64,
            Field::SqlState => 5,
            Field::Epoch | Field::SessionId | Field::LineNum | Field::Vxid | Field::Xid | Field::QueryId => 24,
        }
    }

    /// The shortest text it prints on a server process's line.
    fn shortest_server_text(self) -> &'static str {
        match self {
            Field::Application
            | Field::User
            | Field::Database
            | Field::RemoteHostPort
            | Field::RemoteHost
            | Field::LocalAddr
            | Field::LeaderPid
            | Field::CommandTag
            | Field::Vxid => "",
            Field::BackendType => "checkpointer",
            Field::Pid | Field::LineNum | Field::Xid | Field::QueryId => "1",
            Field::Timestamp | Field::SessionStart => "2026-11-24 13:24:12 UTC",
            Field::TimestampMs => "2026-11-24 13:24:12.582 UTC",
            Field::Epoch => "1795526652.582",
            Field::SqlState => "00000",
            Field::SessionId => "6743a1b2.1",
        }
    }

    /// Its pattern when the prefix may span lines: raw fields take any
    /// bytes (line breaks too) up to their limit, other free text stays on
    /// one line.
    fn spanning_pattern(self) -> String {
        if self.is_raw() {
            format!("(?s-u:.){{0,{RAW_NAME_BYTES}}}?")
        } else if self.pattern() == super::FREE {
            "(?-u:[^\\n])*?".to_string()
        } else {
            self.pattern()
        }
    }
}

impl Spanning {
    /// None when the prefix has no raw field: nothing a client sends can
    /// break its lines.
    pub(super) fn build(pieces: &[Piece], q: Option<usize>, markers: &str, longest_marker: usize) -> Option<Spanning> {
        let first_raw = pieces.iter().position(|p| matches!(p, Piece::Field(f, _) if f.is_raw()))?;
        let head_pieces: Vec<&Piece> = pieces[..first_raw].iter().filter(|p| **p != Piece::Q).collect();
        let head_is_distinctive = head_pieces.iter().any(|p| matches!(p, Piece::Field(..)));
        let head_has_pid = head_pieces.iter().any(|p| matches!(p, Piece::Field(Field::Pid, _)));
        let head = format!("^{}", pattern(head_pieces.into_iter()));
        let (before, after) = match q {
            Some(i) => (&pieces[..i], &pieces[i + 1..]),
            None => (pieces, &pieces[..0]),
        };
        let mut body = pattern(before.iter());
        if after.iter().any(|p| *p != Piece::Q) {
            body.push_str(&format!("(?:{})?", pattern(after.iter())));
        }
        let open = format!("^{body}({markers})");
        let compile = |re: &str| Regex::new(re).expect("a prefix that compiled for lines compiles for spans");
        let closed = compile(&format!("{open}\\z"));
        Some(Spanning {
            head: compile(&head),
            head_is_distinctive,
            head_has_pid,
            server_lines_join: closed.is_match(shortest_server_pair(pieces).as_bytes()),
            closed,
            open: compile(&open),
            markers: compile(markers),
            span: max_bytes(pieces) + longest_marker,
        })
    }

    /// Whether `line` starts like an entry of this prefix.
    pub(crate) fn starts_like(&self, line: &[u8]) -> bool {
        self.head.is_match(line)
    }

    pub(crate) fn head_is_distinctive(&self) -> bool {
        self.head_is_distinctive
    }

    pub(crate) fn head_has_pid(&self) -> bool {
        self.head_has_pid
    }

    pub(crate) fn server_lines_join(&self) -> bool {
        self.server_lines_join
    }

    /// The start of the marker that ends the prefix beginning at `text[0]`,
    /// the prefix running across lines (the first reading that fits).
    pub(crate) fn marker_after(&self, text: &[u8]) -> Option<usize> {
        self.open.captures(text)?.get(1).map(|m| m.start())
    }

    /// Whether `text` is exactly one prefix and its marker, across lines.
    pub(crate) fn is_exactly(&self, text: &[u8]) -> bool {
        self.closed.is_match(text)
    }

    /// Where the markers are in `line`.
    pub(crate) fn markers_in<'a>(&'a self, line: &'a [u8]) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
        self.markers.find_iter(line).map(|m| m.range())
    }

    /// The most bytes from an entry's first byte to the end of its marker.
    pub(crate) fn span(&self) -> usize {
        self.span
    }
}

/// The shortest entry a server process writes that walwatch makes an event
/// of, after its prefix (German's `checkpoint starting: wal`).
const SHORTEST_SERVER_ENTRY: &str = "LOG:  Checkpoint beginnt: wal";

/// A server line at its shortest, then the next one's prefix and marker.
fn shortest_server_pair(pieces: &[Piece]) -> String {
    let prefix = shortest_server_prefix(pieces);
    format!("{prefix}{SHORTEST_SERVER_ENTRY}\n{prefix}LOG:  ")
}

/// The prefix as PostgreSQL prints it for a server process, each field at
/// its shortest: nothing after `%q`, empty session fields without padding,
/// a one-digit pid (the checkpointer of a container's postmaster), a
/// three-letter zone.
fn shortest_server_prefix(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Lit(s) => out.push_str(s),
            Piece::Q => break,
            // Without its padding: shorter text joins more easily, and a
            // padded name placed before `%q` by detection may not be
            // printed on server lines at all.
            Piece::Field(f, _) => out.push_str(f.shortest_server_text()),
        }
    }
    out
}

fn pattern<'a>(pieces: impl Iterator<Item = &'a Piece>) -> String {
    let mut re = String::new();
    for p in pieces {
        match p {
            Piece::Lit(s) => re.push_str(&regex::escape(s)),
            Piece::Q => {}
            Piece::Field(f, padding) => {
                if *padding > 0 {
                    re.push_str(" *");
                }
                re.push_str(&format!("(?:{})", f.spanning_pattern()));
                if *padding < 0 {
                    re.push_str(" *");
                }
            }
        }
    }
    re
}

fn max_bytes(pieces: &[Piece]) -> usize {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(s) => s.len(),
            Piece::Q => 0,
            Piece::Field(f, padding) => f.max_bytes().max(padding.unsigned_abs() as usize),
        })
        .sum()
}

#[cfg(test)]
mod tests;
