//! The head every walwatch mail carries, whatever it says — From, To,
//! Subject, Message-ID, Date, User-Agent and `Auto-Submitted` — put on a
//! body in one place, so an alert's notice and the daily digest are the
//! same kind of message to a mail server and a mail client.

use std::time::SystemTime;

use jiff::Timestamp;
use lettre::message::header::{HeaderName, HeaderValue, To};
use lettre::message::{Mailbox, Mailboxes, MultiPart};
use lettre::Message;

/// The headers of one mail.
pub(crate) struct Head<'a> {
    pub(crate) from: &'a Mailbox,
    pub(crate) to: &'a [Mailbox],
    /// Already mail-safe ([`header_text`](super::header_text)).
    pub(crate) subject: String,
    pub(crate) message_id: &'a str,
    pub(crate) date: Timestamp,
}

/// The full RFC 5322 text of `body` under `head`, rendered once, stored
/// and sent byte for byte. `what` names the mail in an error ("message",
/// "digest").
pub(crate) fn compose(head: Head<'_>, body: MultiPart, what: &str) -> Result<String, String> {
    let to: Mailboxes = head.to.to_vec().into();
    let message = Message::builder()
        .from(head.from.clone())
        .subject(head.subject)
        .message_id(Some(head.message_id.to_string()))
        .date(SystemTime::from(head.date))
        .user_agent(format!("walwatch {}", env!("CARGO_PKG_VERSION")))
        // RFC 3834: no vacation or out-of-office replies to a robot.
        .raw_header(HeaderValue::new(HeaderName::new_from_ascii_str("Auto-Submitted"), "auto-generated".into()))
        .mailbox(To::from(to))
        .multipart(body)
        .map_err(|e| format!("cannot build the {what}: {e}"))?;
    String::from_utf8(message.formatted()).map_err(|e| format!("the {what} is not UTF-8: {e}"))
}
