//! `walwatch alerts test-mail`: a test notice, rendered as an alert's
//! notices are, queued for every configured channel and flushed at once,
//! so the user learns now, not at the first alert, whether notices reach
//! them.

use jiff::Timestamp;

use super::render::render_at;
use super::Notice;
use crate::config::{Config, MailTransport};
use crate::model::alert::{NoticeKind, Severity};
use crate::outbox::{self, message_id_of, Channel, DeliverError, SendOutcome};
use crate::store::Store;

/// Queues a test notice for every configured channel and flushes at once.
/// A test message that fails is removed from the queue (reported now, not
/// delivered hours later) and is the error.
pub fn test_mail(store: &mut Store, config: &Config, now: Timestamp) -> Result<String, DeliverError> {
    if config.mail.is_none() && config.webhook.is_none() {
        return Err(DeliverError::NotConfigured);
    }
    let messages = render_at(&test_notice(now), config, now);
    store.outbox_mut().queue(&messages)?;
    let report = outbox::flush(store, config, now)?;
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for message in &messages {
        let outcome = report.outcomes.iter().find(|o| o.message_id == message.message_id);
        let target = describe_target(config, message.channel);
        match outcome.map(|o| &o.result) {
            Some(Ok(())) => lines.push(format!(
                "{}: test message {} sent {target}",
                message.channel.as_str(),
                message_id_of(&message.message_id)
            )),
            Some(Err(e)) => {
                store.outbox_mut().delete_unsent(&message.message_id)?;
                failures.push(format!("{}: test message NOT sent {target}: {e}", message.channel.as_str()));
            }
            None => lines.push(format!(
                "{}: test message {} queued; another walwatch (the daemon) is sending it",
                message.channel.as_str(),
                message_id_of(&message.message_id)
            )),
        }
    }
    let others: Vec<&SendOutcome> =
        report.outcomes.iter().filter(|o| !messages.iter().any(|m| m.message_id == o.message_id)).collect();
    if !others.is_empty() {
        let sent = others.iter().filter(|o| o.result.is_ok()).count();
        lines.push(format!(
            "also tried {} queued alert messages: {sent} sent, {} failed",
            others.len(),
            others.len() - sent
        ));
    }
    if failures.is_empty() {
        Ok(lines.join("\n"))
    } else {
        lines.extend(failures);
        Err(DeliverError::TestFailed(lines.join("\n")))
    }
}

fn test_notice(now: Timestamp) -> Notice {
    let host = outbox::host_name();
    Notice {
        alert_id: None,
        kind: NoticeKind::Test,
        severity: Severity::Info,
        cluster: host.clone(),
        rule: "test".into(),
        summary: format!("delivery check from walwatch on {host}"),
        details: vec![
            "This is a test message sent by `walwatch alerts test-mail`. If you read it, alert notices reach you \
             the same way."
                .into(),
        ],
        suggestion: None,
        fired_at: now,
        sequence: 0,
    }
}

fn describe_target(config: &Config, channel: Channel) -> String {
    match (channel, &config.mail, &config.webhook) {
        (Channel::Mail, Some(mail), _) => {
            let to: Vec<String> = mail.to.iter().map(|m| m.email.to_string()).collect();
            let via = match &mail.transport {
                MailTransport::Smtp(s) => format!("smtp {}:{} ({})", s.host, s.port, s.security.as_str()),
                MailTransport::Sendmail { command } => format!("sendmail {}", command.display()),
                MailTransport::File { directory } => format!("file {}", directory.display()),
            };
            format!("to {} via {via}", to.join(", "))
        }
        (Channel::Webhook, _, Some(webhook)) => format!("to {}", webhook.url),
        _ => String::new(),
    }
}
