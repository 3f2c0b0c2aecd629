//! Unicode format characters from a log: a right-to-left
//! override (U+202E), a left-to-right isolate (U+2066), a zero-width space
//! (U+200B) and a BOM / zero-width no-break space (U+FEFF) can make a mail
//! or a chat message show other text than it holds. None of them may reach
//! the Subject, the text part, the HTML part or the webhook JSON: each
//! becomes the visible ASCII marker `[U+202E]` (src/outbox/text.rs
//! explains why a marker and not nothing).
//!
//! Real parts only: the walwatch binary imports a real PostgreSQL 15 log
//! from a directory whose name carries the characters (the cluster is named
//! after it, as `walwatch import` names clusters), `walwatch analyze`
//! delivers to a real SMTP server (aiosmtpd) and to a real HTTP listener
//! this test runs; the raw bytes each received are checked.

use crate::support;

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use support::smtp::{free_port, Received, SinkOptions, SmtpSink};
use support::walwatch;
use walwatch::alert::render;
use walwatch::alert::Notice;
use walwatch::config::{self, Config};
use walwatch::model::alert::{NoticeKind, Severity, SuggestionText};
use walwatch::outbox;
use walwatch::store::Store;

/// The four characters, between letters so that a dropped one would show too.
const HOSTILE: &str = "pro\u{202E}d\u{2066}x\u{200B}y\u{FEFF}z";
const MARKED: &str = "pro[U+202E]d[U+2066]x[U+200B]y[U+FEFF]z";

/// Whether `text` holds any of the four, raw or as a JSON escape.
fn carries_them(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ['\u{202E}', '\u{2066}', '\u{200B}', '\u{FEFF}'].iter().any(|c| text.contains(*c))
        || ["\\u202e", "\\u2066", "\\u200b", "\\ufeff"].iter().any(|e| lower.contains(e))
}

/// Reads `n` HTTP requests (one per connection, answered 200 and closed)
/// and sends each body to the returned channel.
fn http_listener(n: usize) -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..n {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let mut stream = stream;
            write!(stream, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
            tx.send(String::from_utf8(body).unwrap()).unwrap();
        }
    });
    (port, rx)
}

fn delivery_config(smtp_port: u16, http_port: u16) -> String {
    format!(
        r#"[mail]
transport = "smtp"
from = "walwatch <walwatch@db1.example.com>"
to = ["dba@example.com"]
[mail.smtp]
host = "127.0.0.1"
port = {smtp_port}
security = "none"
timeout = "5s"
[webhook]
url = "http://127.0.0.1:{http_port}/hooks/walwatch"
timeout = "5s"
"#
    )
}

/// The raw header block of a received message, as the server stored it.
fn raw_head(m: &Received) -> String {
    let raw = String::from_utf8(m.raw.clone()).unwrap();
    raw[..raw.find("\r\n\r\n").unwrap()].to_string()
}

/// The Subject as it stands in the raw header block (folded lines unfolded).
fn raw_subject(head: &str) -> String {
    let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
    let line = unfolded.lines().find(|l| l.starts_with("Subject: ")).expect("a Subject line");
    line["Subject: ".len()..].to_string()
}

#[test]
fn a_cluster_named_after_its_log_directory_reaches_no_channel_with_format_characters() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join(HOSTILE);
    fs::create_dir(&logs).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-std/log");
    let log = logs.join("postgresql-2026-11-22_080420.log");
    fs::copy(fixture.join("postgresql-2026-11-22_080420.log"), &log).unwrap();
    let db = dir.path().join("w.db");
    let out = walwatch().arg("import").arg("--db").arg(&db).arg(&log).output().unwrap();
    assert!(out.status.success(), "{}", support::describe(&out));
    // The import's report names the cluster with its format characters
    // escaped, as every report line does (the store keeps the name as is).
    let shown = r"pro\u{202e}d\u{2066}x\u{200b}y\u{feff}z";
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains(&format!("(cluster {shown}, stderr")), "{report}");

    let sink = SmtpSink::start(&dir.path().join("received"), free_port(), SinkOptions::default());
    // forced_checkpoints and too_frequent fire on this log: two mails, two POSTs.
    let (http_port, bodies) = http_listener(2);
    let cfg = dir.path().join("walwatch.toml");
    fs::write(&cfg, delivery_config(sink.port, http_port)).unwrap();
    let out = walwatch().arg("analyze").arg("--db").arg(&db).arg("--config").arg(&cfg).output().unwrap();
    assert!(out.status.success(), "{}", support::describe(&out));

    let mails = sink.wait_for(2, Duration::from_secs(10));
    assert_eq!(mails.len(), 2);
    for m in &mails {
        let head = raw_head(m);
        assert!(head.is_ascii() && !head.contains("=?"), "no encoded words needed: {head}");
        let subject = raw_subject(&head);
        assert!(subject.starts_with(&format!("[walwatch] WARNING {MARKED}: ")), "{subject}");
        assert_eq!(m.header("Subject"), subject);
        let text = m.part("text/plain");
        assert!(!carries_them(&text), "{text}");
        assert!(text.contains(&format!("Cluster    {MARKED}\n")), "{text}");
        let html = m.part("text/html");
        assert!(!carries_them(&html), "{html}");
        assert!(html.contains(&format!("<tr><th align=\"left\">Cluster</th><td>{MARKED}</td></tr>")), "{html}");
        assert!(!carries_them(&String::from_utf8_lossy(&m.raw)));
    }
    for _ in 0..2 {
        let body = bodies.recv_timeout(Duration::from_secs(10)).expect("a webhook POST");
        assert!(!carries_them(&body), "{body}");
        let json: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(json["cluster"], MARKED);
    }
}

/// The same for every string of a notice (summary, details, advice, SQL),
/// delivered by the library's own flush to the real server and listener.
#[test]
fn summary_details_and_advice_reach_the_wire_with_markers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let mut store = Store::open(&db).unwrap();
    let sink = SmtpSink::start(&dir.path().join("received"), free_port(), SinkOptions::default());
    let (http_port, bodies) = http_listener(1);
    let config: Config = config::parse(&delivery_config(sink.port, http_port), Path::new("t.toml")).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("INSERT INTO cluster (name) VALUES ('main')", []).unwrap();
    conn.execute(
        "INSERT INTO alert (cluster_id, rule, severity, state, summary, fired_at, updated_at)
         SELECT id, 'durability_off', 'critical', 'firing', 's', 0, 0 FROM cluster WHERE name = 'main'",
        [],
    )
    .unwrap();
    let notice = Notice {
        alert_id: Some(conn.last_insert_rowid()),
        kind: NoticeKind::Firing,
        severity: Severity::Critical,
        cluster: "main".into(),
        rule: "durability_off".into(),
        summary: format!("parameter \"fsync\" changed to \"{HOSTILE}\""),
        details: vec![format!("The log line said {HOSTILE}.")],
        suggestion: Some(SuggestionText { text: vec![format!("Set it back: {HOSTILE}")], sql: HOSTILE.into() }),
        fired_at: Timestamp::from_second(1_790_000_000).unwrap(),
        sequence: 0,
    };
    let now = Timestamp::now();
    store.outbox_mut().queue(&render::render_at(&notice, &config, now)).unwrap();
    assert_eq!(outbox::flush(&mut store, &config, now).unwrap().sent(), 2);

    let mails = sink.wait_for(1, Duration::from_secs(10));
    let m = &mails[0];
    let subject = raw_subject(&raw_head(m));
    assert_eq!(subject, format!("[walwatch] CRITICAL main: parameter \"fsync\" changed to \"{MARKED}\""));
    let (text, html) = (m.part("text/plain"), m.part("text/html"));
    assert!(!carries_them(&text) && !carries_them(&html), "{text}\n{html}");
    // summary, detail, advice and SQL each once in the text; the HTML's title adds the summary.
    assert_eq!((text.matches(MARKED).count(), html.matches(MARKED).count()), (4, 5), "{text}\n{html}");
    let body = bodies.recv_timeout(Duration::from_secs(10)).expect("a webhook POST");
    assert!(!carries_them(&body), "{body}");
    let json: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["summary"], format!("parameter \"fsync\" changed to \"{MARKED}\""));
    assert_eq!(json["details"][0], format!("The log line said {MARKED}."));
    assert_eq!(json["suggestion"]["text"][0], format!("Set it back: {MARKED}"));
    assert_eq!(json["suggestion"]["sql"], MARKED);
}
