//! Everything about what fires, when, and when it resolves, in one tree:
//! the rules ([`rules`]: one file each, and the registry), one evaluation
//! of them over every cluster ([`evaluate`]), the alerts' lifecycle in the
//! store ([`lifecycle`]: firing -> notified -> resolved) and the notices
//! they send ([`render`]: a notice as a mail and as webhook JSON, queued in
//! the outbox, which delivers them as it does every message).

pub mod evaluate;
pub mod lifecycle;
pub mod render;
pub mod rules;
mod test_mail;

pub use test_mail::test_mail;

use jiff::Timestamp;
use serde::Serialize;

use crate::model::alert::{NoticeKind, Severity, SuggestionText};

/// Everything [`render`] needs to render one notice. Every string may hold
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
