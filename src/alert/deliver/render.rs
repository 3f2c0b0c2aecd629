//! A notice as a mail (RFC 5322 text, multipart/alternative) and as webhook
//! JSON. Every Notice string may come from a log (cluster names, parameter
//! values): in headers it is stripped of control characters and capped, in
//! the HTML part it is escaped, and lettre encodes what is not ASCII.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use jiff::Timestamp;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailboxes, MultiPart, SinglePart};
use lettre::Message;

use crate::alert::{Notice, NoticeKind};
use crate::config::MailSection;

/// Longest cluster name and summary kept in the subject (in characters):
/// a subject is a line in a mailbox list, the body has the full text.
const SUBJECT_CLUSTER_MAX: usize = 64;
const SUBJECT_SUMMARY_MAX: usize = 160;

/// The Message-ID (with its angle brackets). For an alert notice it depends
/// only on the alert and the notice, so rendering it again (after a restart)
/// gives the same id; `fired_at` and the cluster keep ids of a recreated
/// store from colliding with old ones. A test notice gets a unique id.
pub fn message_id(notice: &Notice, now: Timestamp) -> String {
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

/// The outbox key of the webhook copy: the table's message_id is unique
/// across channels, the JSON carries the mail's id for correlation.
pub fn webhook_key(message_id: &str) -> String {
    format!("webhook:{message_id}")
}

/// `[walwatch] <SEVERITY> <cluster>: <summary>`; non-firing notices say what
/// they are before the summary (RESOLVED, REMINDER, TEST).
pub fn subject(notice: &Notice) -> String {
    let cluster = header_text(&notice.cluster, SUBJECT_CLUSTER_MAX);
    let summary = header_text(&notice.summary, SUBJECT_SUMMARY_MAX);
    let severity = notice.severity.as_str().to_uppercase();
    match notice.kind {
        NoticeKind::Firing => format!("[walwatch] {severity} {cluster}: {summary}"),
        kind => format!("[walwatch] {severity} {cluster}: {} {summary}", kind.as_str().to_uppercase()),
    }
}

/// The full RFC 5322 message. Rendered once, stored, and sent byte for byte.
pub fn mail(notice: &Notice, mail: &MailSection, message_id: &str, now: Timestamp) -> Result<String, String> {
    let mut builder = Message::builder()
        .from(mail.from.clone())
        .subject(subject(notice))
        .message_id(Some(message_id.to_string()))
        .date(SystemTime::from(now))
        .user_agent(format!("walwatch {}", env!("CARGO_PKG_VERSION")))
        // RFC 3834: no vacation or out-of-office replies to a robot.
        .raw_header(HeaderValue::new(HeaderName::new_from_ascii_str("Auto-Submitted"), "auto-generated".into()));
    let to: Mailboxes = mail.to.to_vec().into();
    builder = builder.mailbox(lettre::message::header::To::from(to));
    let body = MultiPart::alternative()
        .singlepart(SinglePart::plain(text_body(notice)))
        .singlepart(SinglePart::html(html_body(notice)));
    let message = builder.multipart(body).map_err(|e| format!("cannot build the message: {e}"))?;
    String::from_utf8(message.formatted()).map_err(|e| format!("the message is not UTF-8: {e}"))
}

/// The webhook body: the notice's fields plus `message_id`.
pub fn webhook(notice: &Notice, message_id: &str) -> String {
    let mut value = serde_json::to_value(notice).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("message_id".into(), message_id.into());
    }
    value.to_string()
}

fn headline(notice: &Notice) -> String {
    let what = match notice.kind {
        NoticeKind::Firing => "FIRING",
        NoticeKind::Reminder => "REMINDER (still firing)",
        NoticeKind::Resolved => "RESOLVED",
        NoticeKind::Test => return "TEST message from walwatch: no alert".into(),
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

pub fn text_body(notice: &Notice) -> String {
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

pub fn html_body(notice: &Notice) -> String {
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

/// Text for a header: no control characters at all (CR/LF would start a new
/// header), no Unicode line separators, at most `max` characters.
pub fn header_text(text: &str, max: usize) -> String {
    let clean: String =
        text.chars().map(|c| if c.is_control() || is_separator(c) { ' ' } else { c }).collect::<String>();
    let clean = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if clean.chars().count() <= max {
        clean
    } else {
        let mut cut: String = clean.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// Text for a body: newlines normalised to LF (lettre writes CRLF), tabs
/// kept, every other control character dropped (a terminal escape in a log
/// line has no business in a mail).
pub fn body_text(text: &str) -> String {
    let unified = text.replace("\r\n", "\n").replace('\r', "\n");
    unified.chars().filter(|&c| c == '\n' || c == '\t' || !(c.is_control() || is_separator(c))).collect()
}

fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The machine's name for Message-IDs and the signature, reduced to what a
/// Message-ID's right-hand side may hold.
pub fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let clean: String = raw.trim().chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')).collect();
    if clean.is_empty() {
        "localhost".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::Severity;

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

    #[test]
    fn body_text_drops_controls_but_keeps_lines() {
        assert_eq!(body_text("a\r\nb\rc\x1b[31m\td\u{2028}"), "a\nb\nc[31m\td");
    }
}
