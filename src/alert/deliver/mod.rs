//! Delivery: notices rendered into messages, queued in the outbox, sent by
//! mail (lettre: smtp, sendmail, file) or webhook, retried until accepted.

use crate::alert::{Notice, NoticeKind};
use crate::config::Config;

/// Where a queued message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Mail,
    Webhook,
}

/// A rendered message waiting in the outbox. `message_id` is stable for a
/// given (alert, notice kind, sequence), so a re-send is the same message.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub alert_id: Option<i64>,
    pub notice: NoticeKind,
    pub channel: Channel,
    pub message_id: String,
    /// RFC 5322 text for mail, JSON for the webhook.
    pub payload: String,
}

/// Renders `notice` for every configured channel: none when neither
/// `[mail]` nor `[webhook]` is configured.
pub fn render(_notice: &Notice, _config: &Config) -> Vec<NewMessage> {
    todo!("deliver: render")
}
