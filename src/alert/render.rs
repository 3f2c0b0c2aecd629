//! A notice as outbox messages, one per configured channel: a mail
//! (multipart/alternative under the head every walwatch mail carries) and
//! webhook JSON. Every Notice string may come from a log (cluster names,
//! parameter values): each goes through the outbox's mail-safe text
//! (`crate::outbox::text`) in every channel, so a header holds no line
//! break, the HTML part no markup, and no channel an invisible character.

use std::sync::atomic::{AtomicU64, Ordering};

use jiff::Timestamp;
use lettre::message::{Mailbox, MultiPart, SinglePart};

use crate::alert::Notice;
use crate::config::Config;
use crate::model::alert::NoticeKind;
use crate::outbox::{body_text, compose, escape_html, header_text, host_name, webhook_key, Channel, Head, NewMessage};

/// Longest cluster name and summary kept in the subject (in characters):
/// a subject is a line in a mailbox list, the body has the full text.
const SUBJECT_CLUSTER_MAX: usize = 64;
const SUBJECT_SUMMARY_MAX: usize = 160;

/// Renders `notice` for every configured channel: none when neither
/// `[mail]` nor `[webhook]` is configured.
pub(crate) fn render(notice: &Notice, config: &Config) -> Vec<NewMessage> {
    render_at(notice, config, Timestamp::now())
}

/// [`render`] with the Date header and queue time `now`.
pub fn render_at(notice: &Notice, config: &Config, now: Timestamp) -> Vec<NewMessage> {
    let id = message_id(notice, now);
    let mut out = Vec::new();
    let message = |channel, message_id, payload| NewMessage {
        alert_id: notice.alert_id,
        notice: notice.kind,
        channel,
        message_id,
        payload,
        queued_at: now,
    };
    if let Some(mail_section) = &config.mail {
        match mail(notice, &mail_section.from, &config.mail_recipients(notice.kind), &id, now) {
            Ok(payload) => out.push(message(Channel::Mail, id.clone(), payload)),
            // Cannot happen with validated addresses; losing the mail silently would be worse than a log line.
            Err(e) => tracing::error!(message_id = %id, "cannot render the alert mail: {e}"),
        }
    }
    if config.webhook.is_some() {
        out.push(message(Channel::Webhook, webhook_key(&id), webhook(notice, &id)));
    }
    out
}

/// The Message-ID (with its angle brackets). For an alert notice it depends
/// only on the alert and the notice, so rendering it again (after a restart)
/// gives the same id; `fired_at` and the cluster keep ids of a recreated
/// store from colliding with old ones. A test notice gets a unique id.
fn message_id(notice: &Notice, now: Timestamp) -> String {
    let host = host_name();
    match notice.alert_id {
        Some(id) => format!(
            "<walwatch.{id}.{}.{}.{}.{:08x}@{host}>",
            notice.fired_at.as_microsecond(),
            notice.kind.as_str(),
            notice.sequence,
            xxhash_rust::xxh3::xxh3_64(notice.cluster.as_bytes()) as u32,
        ),
        None => {
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            format!("<walwatch.{}.{}.{}.{n}@{host}>", notice.kind.as_str(), now.as_microsecond(), std::process::id())
        }
    }
}

/// `[walwatch] <SEVERITY> <cluster>: <summary>`; non-firing notices say what
/// they are before the summary (RESOLVED, REMINDER, TEST).
fn subject(notice: &Notice) -> String {
    let cluster = header_text(&notice.cluster, SUBJECT_CLUSTER_MAX);
    let summary = header_text(&notice.summary, SUBJECT_SUMMARY_MAX);
    let severity = notice.severity.as_str().to_uppercase();
    match notice.kind {
        NoticeKind::Firing => format!("[walwatch] {severity} {cluster}: {summary}"),
        kind => format!("[walwatch] {severity} {cluster}: {} {summary}", kind.as_str().to_uppercase()),
    }
}

/// The full RFC 5322 message. Rendered once, stored, and sent byte for byte.
fn mail(notice: &Notice, from: &Mailbox, to: &[Mailbox], message_id: &str, now: Timestamp) -> Result<String, String> {
    let head = Head { from, to, subject: subject(notice), message_id, date: now };
    let body = MultiPart::alternative()
        .singlepart(SinglePart::plain(text_body(notice)))
        .singlepart(SinglePart::html(html_body(notice)));
    compose(head, body, "message")
}

/// The webhook body: the notice's fields plus `message_id`, every string
/// cleaned as a mail body is (a receiver may show it as it is).
fn webhook(notice: &Notice, message_id: &str) -> String {
    let mut value = serde_json::to_value(notice).unwrap_or_default();
    clean_strings(&mut value);
    if let Some(map) = value.as_object_mut() {
        map.insert("message_id".into(), message_id.into());
    }
    value.to_string()
}

fn clean_strings(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => *s = body_text(s),
        Value::Array(items) => items.iter_mut().for_each(clean_strings),
        Value::Object(map) => map.values_mut().for_each(clean_strings),
        _ => {}
    }
}

fn headline(notice: &Notice) -> String {
    let what = match notice.kind {
        NoticeKind::Firing => "FIRING",
        NoticeKind::Reminder => "REMINDER (still firing)",
        NoticeKind::Resolved => "RESOLVED",
        NoticeKind::Test => return "TEST message from walwatch: no alert".into(),
        // Digests have their own renderer (digest::render); never an alert's headline.
        NoticeKind::Digest => return "Daily digest from walwatch".into(),
    };
    format!("{what}: {} alert {} on cluster {}", notice.severity.as_str().to_uppercase(), notice.rule, notice.cluster)
}

fn facts(notice: &Notice) -> Vec<(&'static str, String)> {
    let mut facts = vec![
        ("Cluster", notice.cluster.clone()),
        ("Rule", notice.rule.clone()),
        ("Severity", notice.severity.as_str().to_uppercase()),
        ("Fired at", crate::timefmt::rfc3339(notice.fired_at)),
    ];
    if let Some(id) = notice.alert_id {
        facts.push(("Alert", format!("#{id} (walwatch alerts ack {id})")));
    }
    facts
}

fn text_body(notice: &Notice) -> String {
    let mut out = format!("{}\n\n{}\n\n", headline(notice), notice.summary);
    for (name, value) in facts(notice) {
        out.push_str(&format!("{name:<10} {value}\n"));
    }
    for paragraph in &notice.details {
        out.push_str(&format!("\n{paragraph}\n"));
    }
    if let Some(s) = &notice.suggestion {
        out.push_str("\nSuggestion\n----------\n");
        for paragraph in &s.text {
            out.push_str(&format!("{paragraph}\n\n"));
        }
        for line in s.sql.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out.push_str(&format!("\n-- \nwalwatch on {}\n", host_name()));
    body_text(&out)
}

fn html_body(notice: &Notice) -> String {
    let h = |s: &str| escape_html(&body_text(s));
    let mut out = String::from("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    out.push_str(&h(&subject(notice)));
    out.push_str("</title></head>\n<body style=\"font-family: sans-serif\">\n");
    out.push_str(&format!(
        "<h2>{}</h2>\n<p><strong>{}</strong></p>\n<table>\n",
        h(&headline(notice)),
        h(&notice.summary)
    ));
    for (name, value) in facts(notice) {
        out.push_str(&format!("<tr><th align=\"left\">{name}</th><td>{}</td></tr>\n", h(&value)));
    }
    out.push_str("</table>\n");
    for paragraph in &notice.details {
        out.push_str(&format!("<p>{}</p>\n", h(paragraph)));
    }
    if let Some(s) = &notice.suggestion {
        out.push_str("<h3>Suggestion</h3>\n");
        for paragraph in &s.text {
            out.push_str(&format!("<p>{}</p>\n", h(paragraph)));
        }
        out.push_str(&format!("<pre>{}</pre>\n", h(&s.sql)));
    }
    out.push_str(&format!("<hr><p><small>walwatch on {}</small></p>\n</body></html>\n", h(&host_name())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alert::Severity;
    use crate::outbox::text::mark_format_chars;
    use crate::output::is_format;

    fn notice() -> Notice {
        Notice {
            alert_id: Some(7),
            kind: NoticeKind::Firing,
            severity: Severity::Warning,
            cluster: "prod\r\nBcc: evil@example.com".into(),
            rule: "forced_checkpoints".into(),
            summary: "12 of 14 checkpoints\nforced".into(),
            details: vec!["<script>alert(1)</script>".into()],
            suggestion: None,
            fired_at: Timestamp::from_second(1_700_000_000).unwrap(),
            sequence: 0,
        }
    }

    #[test]
    fn subject_has_no_line_breaks_and_is_capped() {
        assert_eq!(subject(&notice()), "[walwatch] WARNING prod Bcc: evil@example.com: 12 of 14 checkpoints forced");
        let long = Notice { summary: "x".repeat(500), ..notice() };
        let s = subject(&long);
        assert!(s.ends_with('…'));
        assert_eq!(s.chars().count(), "[walwatch] WARNING prod Bcc: evil@example.com: ".chars().count() + 160);
        let resolved = Notice { kind: NoticeKind::Resolved, ..notice() };
        assert!(subject(&resolved).contains(": RESOLVED 12 of 14"));
    }

    #[test]
    fn message_id_is_stable_for_an_alert_and_unique_for_tests() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let later = Timestamp::from_second(1_800_000_100).unwrap();
        assert_eq!(message_id(&notice(), now), message_id(&notice(), later));
        let reminder = Notice { kind: NoticeKind::Reminder, sequence: 1, ..notice() };
        assert_ne!(message_id(&notice(), now), message_id(&reminder, now));
        let test = Notice { alert_id: None, kind: NoticeKind::Test, ..notice() };
        assert_ne!(message_id(&test, now), message_id(&test, now));
        let id = message_id(&notice(), now);
        assert!(id.starts_with("<walwatch.7.1700000000000000.firing.0.") && id.ends_with('>'), "{id}");
    }

    #[test]
    fn html_escapes_everything() {
        let html = html_body(&notice());
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<script>"));
    }

    /// Bidi override, isolate, zero-width space and BOM from a log: visible
    /// markers in every channel, never the characters themselves.
    #[test]
    fn format_characters_become_visible_markers_in_every_channel() {
        let hostile = "pro\u{202E}d\u{2066}x\u{200B}y\u{FEFF}";
        let marked = "pro[U+202E]d[U+2066]x[U+200B]y[U+FEFF]";
        let n = Notice {
            cluster: hostile.into(),
            summary: format!("fsync changed to {hostile}"),
            details: vec![format!("detail {hostile}")],
            suggestion: Some(crate::model::alert::SuggestionText { text: vec![hostile.into()], sql: hostile.into() }),
            ..notice()
        };
        assert_eq!(subject(&n), format!("[walwatch] WARNING {marked}: fsync changed to {marked}"));
        let (text, html, json) = (text_body(&n), html_body(&n), webhook(&n, "<id@h>"));
        // text: headline, summary, Cluster fact, detail, advice, SQL; HTML: also the title's two;
        // webhook: cluster, summary, detail, advice, SQL.
        for (channel, out, n) in [("text", &text, 6), ("html", &html, 8), ("webhook", &json, 5)] {
            assert!(!out.chars().any(is_format), "{channel}: {out}");
            assert_eq!(out.matches(marked).count(), n, "{channel}: {out}");
        }
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["cluster"], marked);
        assert_eq!(v["details"][0], format!("detail {marked}"));
        assert_eq!(v["suggestion"]["sql"], marked);
        // Every Cf range's ends, and what is not Cf.
        for c in [
            '\u{00AD}',
            '\u{061C}',
            '\u{200E}',
            '\u{200F}',
            '\u{202A}',
            '\u{2069}',
            '\u{206F}',
            '\u{E0001}',
            '\u{E007F}',
        ] {
            assert!(is_format(c), "{:04X}", c as u32);
        }
        for c in ['a', 'é', '検', '\u{2028}', '\u{2010}', '\u{2070}', '\u{FEFE}', '\u{E0080}'] {
            assert!(!is_format(c), "{:04X}", c as u32);
        }
        assert_eq!(mark_format_chars("plain Überlauf 検査"), "plain Überlauf 検査");
    }

    #[test]
    fn webhook_strings_lose_control_characters_like_a_mail_body() {
        let n = Notice { summary: "a\x1b[31mb\u{7}".into(), ..notice() };
        let v: serde_json::Value = serde_json::from_str(&webhook(&n, "<id@h>")).unwrap();
        assert_eq!(v["summary"], "a[31mb");
        assert_eq!(v["cluster"], "prod\nBcc: evil@example.com");
        assert_eq!(v["message_id"], "<id@h>");
    }
}
