//! A framed log record: one PostgreSQL log entry with its continuation lines
//! and the DETAIL/HINT/CONTEXT/STATEMENT lines that belong to it.

use jiff::Timestamp;

pub(crate) use crate::catalog::level::{LineLevel, LogSeverity, Secondary};

/// Who wrote the record, as far as the log format tells. Used by the trust
/// check: only background processes may produce checkpoint events.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Origin {
    pub(crate) pid: Option<u32>,
    /// `%b` / csvlog / jsonlog `backend_type`, when known.
    pub(crate) backend_type: Option<String>,
    /// True when any session-only field (`%u %d %a %h %r`, the `%q` tail,
    /// csv/json user/database/application/remote host) is present and non-empty.
    pub(crate) session: bool,
    /// Whether the format could have shown session fields at all.
    pub(crate) session_checkable: bool,
    /// Set when the framing itself shows that the record is not what it
    /// looks like (text a client spliced into another entry's prefix, a pid
    /// that is not the sender's): the reason, for the rejection.
    pub(crate) doubt: Option<&'static str>,
    /// The uid of the process that sent the record, when the log's writer
    /// took it from the kernel (journald's `_UID`, from the socket's
    /// credentials) rather than from the message; None for every log
    /// PostgreSQL writes itself and for syslog files, which carry none.
    pub(crate) uid: Option<u32>,
}

/// Whether a record's message reaches its end, as far as the framing can
/// tell. Only a cut that is certain counts: a line that merely fails to
/// parse is not cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Cut {
    /// Nothing says the line was cut.
    #[default]
    Whole,
    /// The input ended inside the line (no line break after it, and the
    /// input has ended for good): it may be whole but for its line break.
    AtEnd,
    /// A pager cut the line at the terminal's width and said so (`less -S`,
    /// which `systemctl status` and `journalctl` use, ends it with `>`):
    /// the text after the cut, and the character under the `>`, are lost.
    Marked,
}

/// One log entry, ready for classification.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Byte offset of the first line within the (decompressed) source.
    pub(crate) offset: u64,
    /// 1-based line number of the first line.
    pub(crate) line: u64,
    pub(crate) time: Option<Timestamp>,
    pub(crate) origin: Origin,
    pub(crate) severity: LogSeverity,
    /// The primary message; continuation lines joined with '\n' (leading TAB removed).
    pub(crate) message: String,
    pub(crate) detail: Option<String>,
    pub(crate) hint: Option<String>,
    pub(crate) context: Option<String>,
    pub(crate) statement: Option<String>,
    /// Whether the message's line was cut short.
    pub(crate) cut: Cut,
}
