//! Delivery: notices rendered into messages, queued in the outbox, sent by
//! mail (lettre: smtp, sendmail, file) or webhook, retried until accepted.
//!
//! A message is rendered once, when it is queued, and stored with its
//! Message-ID; the sender sends the stored bytes and marks the row sent only
//! after the transport accepted it. A crash between the two re-sends the
//! identical message (same Message-ID) — at least once, never a different
//! or a lost one.

mod render;
mod send;
mod transport;

use jiff::Timestamp;
use thiserror::Error;

use crate::alert::Notice;
use crate::config::Config;
pub use crate::model::alert::Channel;
pub use crate::store::outbox::NewMessage;
use crate::store::StoreError;

pub(crate) use render::body_text;
pub use render::{escape_html, header_text, host_name, message_id, subject};
pub use send::{
    flush, flush_channel, next_due, send_now, spawn_sender, spawn_senders, test_mail, FlushReport, SendOutcome,
};
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

/// Renders `notice` for every configured channel: none when neither
/// `[mail]` nor `[webhook]` is configured.
pub fn render(notice: &Notice, config: &Config) -> Vec<NewMessage> {
    render_at(notice, config, Timestamp::now())
}

/// [`render`] with the Date header and queue time `now`.
pub fn render_at(notice: &Notice, config: &Config, now: Timestamp) -> Vec<NewMessage> {
    let id = render::message_id(notice, now);
    let mut out = Vec::new();
    let message = |channel, message_id, payload| NewMessage {
        alert_id: notice.alert_id,
        notice: notice.kind,
        channel,
        message_id,
        payload,
        queued_at: now,
    };
    if let Some(mail) = &config.mail {
        match render::mail(notice, mail, &id, now) {
            Ok(payload) => out.push(message(Channel::Mail, id.clone(), payload)),
            // Cannot happen with validated addresses; losing the mail silently would be worse than a log line.
            Err(e) => tracing::error!(message_id = %id, "cannot render the alert mail: {e}"),
        }
    }
    if config.webhook.is_some() {
        out.push(message(Channel::Webhook, render::webhook_key(&id), render::webhook(notice, &id)));
    }
    out
}
