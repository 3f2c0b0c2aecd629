//! The levels of PostgreSQL's log lines, which the catalog knows in every
//! language: a primary line's severity, or the kind of a secondary line
//! (DETAIL, HINT, …) that belongs to the entry before it.

/// The severity of a primary log line (translated words are normalised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogSeverity {
    Debug,
    Log,
    Info,
    Notice,
    Warning,
    Error,
    Fatal,
    Panic,
}

/// The kind of a secondary line that belongs to the entry before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Secondary {
    Detail,
    Hint,
    Query,
    Context,
    Statement,
    Location,
    Backtrace,
}

/// What follows the prefix of a stderr/syslog line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineLevel {
    Primary(LogSeverity),
    Secondary(Secondary),
}
