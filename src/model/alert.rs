//! The words of alerts that the store keeps and every layer above it
//! speaks: how bad a finding is, which moment of an alert's life a notice
//! tells about, where a message goes, and the advice a finding carries.
//! They sit here, below the store, so that the store keeps them typed
//! without importing the rules that produce them or the delivery that
//! sends them.

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
    pub(crate) fn parse(name: &str) -> Option<Severity> {
        [Severity::Info, Severity::Warning, Severity::Critical].into_iter().find(|s| s.as_str() == name)
    }

    pub(crate) fn as_str(self) -> &'static str {
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
    /// The daily digest (no alert behind it).
    Digest,
}

impl NoticeKind {
    pub(crate) fn parse(name: &str) -> Option<NoticeKind> {
        [NoticeKind::Firing, NoticeKind::Reminder, NoticeKind::Resolved, NoticeKind::Test, NoticeKind::Digest]
            .into_iter()
            .find(|k| k.as_str() == name)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Firing => "firing",
            NoticeKind::Reminder => "reminder",
            NoticeKind::Resolved => "resolved",
            NoticeKind::Test => "test",
            NoticeKind::Digest => "digest",
        }
    }
}

/// Advice in a notice: what to change, why, and the SQL that does it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuggestionText {
    pub text: Vec<String>,
    pub sql: String,
}

/// Where a queued message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    Mail,
    Webhook,
}

impl Channel {
    pub(crate) fn parse(name: &str) -> Option<Channel> {
        [Channel::Mail, Channel::Webhook].into_iter().find(|c| c.as_str() == name)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Channel::Mail => "mail",
            Channel::Webhook => "webhook",
        }
    }
}

/// Where an alert is in its life: firing (opened, its notice not yet
/// accepted), notified (the firing notice was accepted), resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    Firing,
    Notified,
    Resolved,
}

impl AlertState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AlertState::Firing => "firing",
            AlertState::Notified => "notified",
            AlertState::Resolved => "resolved",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<AlertState> {
        [AlertState::Firing, AlertState::Notified, AlertState::Resolved].into_iter().find(|s| s.as_str() == name)
    }
}

/// Why a resolved alert was closed: the rule no longer finds the problem
/// (a resolved notice goes out if the firing one did), or the rule was
/// switched off in the configuration (closed silently: the problem may well
/// still be there, so "resolved" in a mail would be false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    Cleared,
    RuleDisabled,
}

impl Resolution {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Resolution::Cleared => "cleared",
            Resolution::RuleDisabled => "rule_disabled",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Resolution> {
        [Resolution::Cleared, Resolution::RuleDisabled].into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for AlertState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
