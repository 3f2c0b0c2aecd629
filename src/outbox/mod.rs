//! The outbox: every message walwatch sends — an alert's notices, the daily
//! digest, a test message — is queued here and leaves through the same
//! senders, by mail (lettre: smtp, sendmail, file) or webhook, retried with
//! a capped backoff until accepted. The outbox knows channels, not kinds of
//! message: who a mail goes to is the configuration's answer for its kind
//! ([`Config::mail_recipients`](crate::config::Config::mail_recipients)), so
//! no kind has a path of its own through it.
//!
//! A message is rendered once, when it is queued, and stored with its
//! Message-ID; the sender sends the stored bytes and marks the row sent only
//! after the transport accepted it. A crash between the two re-sends the
//! identical message (same Message-ID) — at least once, never a different
//! or a lost one. What a renderer needs to make such a message is here too:
//! the head every walwatch mail carries (`compose`) and the cleaning of
//! text from a log for a header or a body ([`text`]).

mod compose;
mod send;
pub(crate) mod text;
mod transport;

use thiserror::Error;

pub(crate) use crate::model::alert::Channel;
pub use crate::store::outbox::NewMessage;
use crate::store::StoreError;

pub(crate) use compose::{compose, Head};
pub use send::{flush, next_due, spawn_sender};
pub(crate) use send::{send_now, spawn_senders, SendOutcome};
pub(crate) use text::{body_text, escape_html, header_text, host_name};
pub(crate) use transport::probe;

#[derive(Debug, Error)]
pub enum DeliverError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "no delivery configured: add a [mail] section (transport = \"smtp\", \"sendmail\" or \"file\", from, to) \
         and/or a [webhook] section (url) to the configuration file; see config/walwatch.toml"
    )]
    NotConfigured,
    /// A transport cannot even be set up (unreadable password file, bad CA file…).
    #[error("{0}")]
    Setup(String),
    /// `alerts test-mail`: the test message was not accepted.
    #[error("{0}")]
    TestFailed(String),
}

/// The outbox key of a webhook copy: the table's message_id is unique
/// across channels, the JSON carries the mail's id for correlation.
pub(crate) fn webhook_key(message_id: &str) -> String {
    format!("webhook:{message_id}")
}

/// The mail's Message-ID that a webhook copy's key was made from (the
/// webhook's Idempotency-Key); any other key as it is.
pub(crate) fn message_id_of(key: &str) -> &str {
    key.strip_prefix("webhook:").unwrap_or(key)
}
