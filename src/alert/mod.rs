//! Alerts after the rules: their lifecycle in the store (firing -> notified
//! -> resolved) and their delivery (outbox, mail, webhook).

pub mod deliver;
pub mod lifecycle;

use jiff::Timestamp;
use serde::Serialize;

/// How bad an alert is; also the word in the mail subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// Which moment of an alert's life a notice tells about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoticeKind {
    Firing,
    Reminder,
    Resolved,
    Test,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Firing => "firing",
            NoticeKind::Reminder => "reminder",
            NoticeKind::Resolved => "resolved",
            NoticeKind::Test => "test",
        }
    }
}

/// Everything delivery needs to render one notice. Every string may hold
/// log-derived text (cluster names, parameter values): renderers escape it
/// in HTML and keep it out of mail headers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notice {
    /// None for a test message.
    pub alert_id: Option<i64>,
    pub kind: NoticeKind,
    pub severity: Severity,
    pub cluster: String,
    /// Stable rule id, e.g. "forced_checkpoints".
    pub rule: String,
    /// One line: what is wrong.
    pub summary: String,
    /// Paragraphs of plain text: the figures and what they mean.
    pub details: Vec<String>,
    /// The max_wal_size (or other) advice, when the rule has one.
    pub suggestion: Option<SuggestionText>,
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub fired_at: Timestamp,
    /// 0 for firing, resolved and test notices; n for an alert's n-th reminder
    /// (with alert_id and kind, it makes the Message-ID stable and unique).
    pub sequence: u32,
}

/// Advice in a notice: what to change, why, and the SQL that does it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuggestionText {
    pub text: Vec<String>,
    pub sql: String,
}
