//! Mail delivery through a real SMTP server process (aiosmtpd, see
//! tests/support/smtp_sink.py): what arrives, header injection, an outage
//! with backoff, AUTH, and a real walwatch process killed between the
//! server storing the message and walwatch marking it sent.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use support::smtp::{free_port, make_ca, SinkOptions, SinkTls, SmtpSink};
use walwatch::alert::{self, render, Notice};
use walwatch::config::{self, Config};
use walwatch::model::alert::{NoticeKind, Severity, SuggestionText};
use walwatch::outbox::{self, DeliverError};
use walwatch::store::Store;

const WAIT: Duration = Duration::from_secs(10);

/// Now, at the store's precision (microseconds), so stored times compare equal.
fn now() -> Timestamp {
    Timestamp::from_microsecond(Timestamp::now().as_microsecond()).unwrap()
}

fn smtp_config(port: u16, extra_smtp: &str) -> String {
    format!(
        r#"[mail]
transport = "smtp"
from = "walwatch <walwatch@db1.example.com>"
to = ["dba@example.com", "Ops Team <ops@example.com>"]
retry_initial = "10s"
retry_max = "1m"
[mail.smtp]
host = "127.0.0.1"
port = {port}
security = "none"
timeout = "5s"
{extra_smtp}"#
    )
}

fn parse(text: &str) -> Config {
    config::parse(text, Path::new("t.toml")).unwrap()
}

/// An alert row for the outbox's foreign key, as the lifecycle would write it.
fn alert(db: &Path, cluster: &str, rule: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute("INSERT OR IGNORE INTO cluster (name) VALUES (?1)", [cluster]).unwrap();
    conn.execute(
        "INSERT INTO alert (cluster_id, rule, severity, state, summary, fired_at, updated_at)
         SELECT id, ?2, 'warning', 'firing', 's', 0, 0 FROM cluster WHERE name = ?1",
        [cluster, rule],
    )
    .unwrap();
    conn.last_insert_rowid()
}

fn alert_state(db: &Path, id: i64) -> (String, Option<i64>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT state, notified_at FROM alert WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
}

const SQL: &str = "ALTER SYSTEM SET max_wal_size = '1GB';\nSELECT pg_reload_conf();";

fn notice(alert_id: i64, cluster: &str, summary: &str) -> Notice {
    Notice {
        alert_id: Some(alert_id),
        kind: NoticeKind::Firing,
        severity: Severity::Warning,
        cluster: cluster.into(),
        rule: "forced_checkpoints".into(),
        summary: summary.into(),
        details: vec!["12 of the last 14 checkpoints were started by WAL volume, not by checkpoint_timeout.".into()],
        suggestion: Some(SuggestionText {
            text: vec!["Raise max_wal_size from 32 MB to 1 GB: peak 4.1 MB/s × 300 s × 1.9 × 1.25.".into()],
            sql: SQL.into(),
        }),
        fired_at: Timestamp::from_second(1_790_000_000).unwrap(),
        sequence: 0,
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    store: Store,
    sink_dir: std::path::PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let store = Store::open(&db).unwrap();
    let sink_dir = dir.path().join("received");
    Setup { db, store, sink_dir, _dir: dir }
}

fn queue(store: &mut Store, notice: &Notice, config: &Config, now: Timestamp) -> String {
    let messages = render::render_at(notice, config, now);
    assert_eq!(messages.len(), 1);
    store.outbox_mut().queue(&messages).unwrap();
    messages[0].message_id.clone()
}

#[test]
fn a_notice_arrives_with_subject_headers_both_parts_and_is_marked_sent() {
    let mut s = setup();
    let sink = SmtpSink::start(&s.sink_dir, free_port(), SinkOptions::default());
    let config = parse(&smtp_config(sink.port, ""));
    let id = alert(&s.db, "prod-eu", "forced_checkpoints");
    let now = now();
    let message_id =
        queue(&mut s.store, &notice(id, "prod-eu", "12 of 14 checkpoints forced by WAL in 1h"), &config, now);

    let report = outbox::flush(&mut s.store, &config, now).unwrap();
    assert_eq!((report.sent(), report.failed()), (1, 0), "{report:?}");
    let received = sink.messages();
    assert_eq!(received.len(), 1);
    let m = &received[0];
    assert_eq!(m.header("Subject"), "[walwatch] WARNING prod-eu: 12 of 14 checkpoints forced by WAL in 1h");
    assert_eq!(m.header("From"), "walwatch <walwatch@db1.example.com>");
    assert_eq!(m.header("To"), "dba@example.com, \"Ops Team\" <ops@example.com>");
    assert_eq!(m.message_id(), message_id);
    assert!(message_id.starts_with(&format!("<walwatch.{id}.1790000000000000.firing.0.")), "{message_id}");
    assert_eq!(m.header("Auto-Submitted"), "auto-generated");
    assert!(mailparse::dateparse(&m.header("Date")).unwrap().abs_diff(now.as_second()) <= 1);
    assert_eq!(m.parsed().ctype.mimetype, "multipart/alternative");
    assert_eq!(m.mail_from(), "walwatch@db1.example.com");
    assert_eq!(m.rcpt_tos(), ["dba@example.com", "ops@example.com"]);

    let text = m.part("text/plain");
    assert!(text.contains("FIRING: WARNING alert forced_checkpoints on cluster prod-eu"), "{text}");
    assert!(text.contains("Raise max_wal_size from 32 MB to 1 GB"), "{text}");
    assert!(text.contains("    ALTER SYSTEM SET max_wal_size = '1GB';\n    SELECT pg_reload_conf();\n"), "{text}");
    let html = m.part("text/html");
    assert!(
        html.contains("<pre>ALTER SYSTEM SET max_wal_size = &#39;1GB&#39;;\nSELECT pg_reload_conf();</pre>"),
        "{html}"
    );
    assert!(html.contains("<p>Raise max_wal_size from 32 MB to 1 GB"), "{html}");

    // What went out is exactly what was stored.
    let row = &s.store.outbox().all().unwrap()[0];
    assert_eq!(String::from_utf8(m.raw.clone()).unwrap().trim_end(), row.payload.trim_end());
    assert_eq!((row.attempts, row.sent_at, row.last_error.as_deref()), (1, Some(now), None));
    assert_eq!(alert_state(&s.db, id), ("notified".to_string(), Some(now.as_microsecond())));

    // Nothing is due any more: a second flush sends nothing.
    assert_eq!(outbox::flush(&mut s.store, &config, now + SignedDuration::from_hours(1)).unwrap().outcomes, []);
    assert_eq!(outbox::next_due(&s.store).unwrap(), None);
    assert_eq!(sink.messages().len(), 1);
}

#[test]
fn hostile_cluster_names_and_values_stay_out_of_the_headers() {
    let mut s = setup();
    let sink = SmtpSink::start(&s.sink_dir, free_port(), SinkOptions::default());
    let config = parse(&smtp_config(sink.port, ""));
    let cluster = "prod\r\nBcc: evil@example.com";
    let id = alert(&s.db, cluster, "durability_off");
    let summary = "fsync changed to \"off\r\nX-Injected: yes\" <script>alert(1)</script> Überlauf 検査";
    let mut n = notice(id, cluster, summary);
    n.details = vec!["parameter \"full_page_writes\" changed to \"off\nBcc: evil2@example.com\" <b>bold</b>".into()];
    queue(&mut s.store, &n, &config, now());
    assert_eq!(outbox::flush(&mut s.store, &config, now()).unwrap().sent(), 1);

    let received = sink.messages();
    assert_eq!(received.len(), 1);
    let m = &received[0];
    // No extra recipient, no injected header.
    assert_eq!(m.rcpt_tos(), ["dba@example.com", "ops@example.com"]);
    let names: Vec<String> = m.header_names().iter().map(|n| n.to_ascii_lowercase()).collect();
    assert!(!names.iter().any(|n| n == "bcc" || n == "x-injected"), "{names:?}");
    assert_eq!(names.iter().filter(|n| *n == "subject").count(), 1);
    assert!(m.raw.is_ascii(), "non-ASCII is encoded by lettre");
    let raw = String::from_utf8(m.raw.clone()).unwrap();
    let head = &raw[..raw.find("\r\n\r\n").unwrap()];
    assert!(!head.lines().any(|l| l.starts_with("Bcc") || l.starts_with("X-Injected")), "{head}");
    assert_eq!(
        m.header("Subject"),
        "[walwatch] WARNING prod Bcc: evil@example.com: fsync changed to \"off X-Injected: yes\" <script>alert(1)</script> Überlauf 検査"
    );
    // The text stays in the body; the HTML escapes it.
    let text = m.part("text/plain");
    assert!(text.contains("cluster prod\nBcc: evil@example.com"), "{text}");
    assert!(text.contains("<script>alert(1)</script> Überlauf 検査"), "{text}");
    assert!(text.contains("changed to \"off\nBcc: evil2@example.com\" <b>bold</b>"), "{text}");
    let html = m.part("text/html");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; Überlauf 検査"), "{html}");
    assert!(html.contains("&quot;off\nBcc: evil2@example.com&quot; &lt;b&gt;bold&lt;/b&gt;"), "{html}");
    assert!(!html.contains("<script>") && !html.contains("<b>"), "{html}");
}

#[test]
fn an_outage_is_retried_with_backoff_and_every_notice_arrives_exactly_once() {
    let mut s = setup();
    let port = free_port();
    let config = parse(&smtp_config(port, ""));
    let t0 = now();
    let mut ids = Vec::new();
    for (i, cluster) in ["a", "b", "c"].iter().enumerate() {
        let alert_id = alert(&s.db, cluster, "forced_checkpoints");
        ids.push((alert_id, queue(&mut s.store, &notice(alert_id, cluster, &format!("notice {i}")), &config, t0)));
    }

    // Server down: every message fails, the failure and the backoff are recorded.
    let report = outbox::flush(&mut s.store, &config, t0).unwrap();
    assert_eq!((report.sent(), report.failed()), (0, 3), "{report:?}");
    for row in s.store.outbox().all().unwrap() {
        assert_eq!((row.attempts, row.sent_at, row.next_attempt_at), (1, None, t0 + SignedDuration::from_secs(10)));
        assert!(row.last_error.as_deref().is_some_and(|e| !e.is_empty()));
    }
    assert_eq!(outbox::flush(&mut s.store, &config, t0 + SignedDuration::from_secs(9)).unwrap().outcomes, []);
    let t1 = t0 + SignedDuration::from_secs(10);
    assert_eq!(outbox::flush(&mut s.store, &config, t1).unwrap().failed(), 3);
    for row in s.store.outbox().all().unwrap() {
        assert_eq!((row.attempts, row.next_attempt_at), (2, t1 + SignedDuration::from_secs(20)), "doubled");
    }
    assert_eq!(outbox::next_due(&s.store).unwrap(), Some(t1 + SignedDuration::from_secs(20)));
    // Claimed twice, accepted never: no alert is notified yet.
    for (alert_id, _) in &ids {
        assert_eq!(alert_state(&s.db, *alert_id), ("firing".to_string(), None));
    }

    // Server up: flush until the queue is empty.
    let sink = SmtpSink::start(&s.sink_dir, port, SinkOptions::default());
    let mut now = t1 + SignedDuration::from_secs(20);
    let mut rounds = 0;
    while let Some(due) = outbox::next_due(&s.store).unwrap() {
        now = now.max(due);
        outbox::flush(&mut s.store, &config, now).unwrap();
        rounds += 1;
        assert!(rounds < 10, "the queue does not drain");
    }
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    for m in sink.messages() {
        *by_id.entry(m.message_id()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = ids.iter().map(|(_, mid)| (mid.clone(), 1)).collect();
    assert_eq!(by_id, expected);
    for (alert_id, _) in &ids {
        assert_eq!(alert_state(&s.db, *alert_id).0, "notified");
    }
    for row in s.store.outbox().all().unwrap() {
        assert_eq!(row.attempts, 3);
        assert!(row.sent_at.is_some());
    }
}

#[test]
fn auth_reads_the_password_from_a_file_or_the_environment() {
    let mut s = setup();
    let auth = Some(("walwatch".to_string(), "s3cret pass".to_string()));
    let sink = SmtpSink::start(&s.sink_dir, free_port(), SinkOptions { auth, ..SinkOptions::default() });
    let secret = s.db.with_file_name("smtp-password");
    fs::write(&secret, "s3cret pass\n").unwrap(); // the trailing newline `echo` leaves is not part of it
    let from_file = format!("username = \"walwatch\"\npassword_file = \"{}\"\n", secret.display());
    let config = parse(&smtp_config(sink.port, &from_file));
    let out = alert::test_mail(&mut s.store, &config, now()).unwrap();
    assert!(out.starts_with("mail: test message <walwatch.test."), "{out}");
    assert!(
        out.contains(&format!("sent to dba@example.com, ops@example.com via smtp 127.0.0.1:{} (none)", sink.port)),
        "{out}"
    );

    std::env::set_var("WALWATCH_TEST_SMTP_PASSWORD", "s3cret pass");
    let config =
        parse(&smtp_config(sink.port, "username = \"walwatch\"\npassword_env = \"WALWATCH_TEST_SMTP_PASSWORD\"\n"));
    alert::test_mail(&mut s.store, &config, now()).unwrap();
    let received = sink.messages();
    assert_eq!(received.len(), 2);
    assert!(received.iter().all(|m| m.login().as_deref() == Some("walwatch")));
    assert!(received.iter().all(|m| m.header("Subject").starts_with("[walwatch] INFO ")));

    // A wrong password is refused by the server; the test message is not left queued.
    fs::write(&secret, "wrong\n").unwrap();
    let config = parse(&smtp_config(sink.port, &from_file));
    let err = alert::test_mail(&mut s.store, &config, now()).unwrap_err().to_string();
    assert!(err.starts_with("mail: test message NOT sent to dba@example.com"), "{err}");
    assert!(err.contains("535"), "the server's authentication failure: {err}");
    // An unreadable password file is a clear error.
    fs::remove_file(&secret).unwrap();
    let err = alert::test_mail(&mut s.store, &config, now()).unwrap_err().to_string();
    assert!(
        err.contains(&format!("cannot read the SMTP password file {} ([mail.smtp] password_file)", secret.display())),
        "{err}"
    );
    assert_eq!(sink.messages().len(), 2);
    assert!(s.store.outbox().all().unwrap().iter().all(|r| r.sent_at.is_some()), "failed test messages are dropped");
}

#[test]
fn test_mail_without_delivery_configured_says_what_to_configure() {
    let mut s = setup();
    let err = alert::test_mail(&mut s.store, &Config::default(), now()).unwrap_err();
    assert!(matches!(err, DeliverError::NotConfigured));
    let text = err.to_string();
    assert!(text.contains("add a [mail] section") && text.contains("[webhook] section (url)"), "{text}");
    // The real command says the same.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("w.toml");
    fs::write(&cfg, "").unwrap();
    // test-mail records its notice, so it needs an existing store (see README).
    drop(Store::open(&dir.path().join("w.db")).unwrap());
    let out = support::walwatch()
        .args([
            "alerts",
            "test-mail",
            "--config",
            cfg.to_str().unwrap(),
            "--db",
            dir.path().join("w.db").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("add a [mail] section"), "{out:?}");
}

/// A real `walwatch alerts test-mail` is SIGKILLed by the server after the
/// server stored the message and before it answered 250: walwatch never
/// learns it was accepted. The next flush sends the identical message again.
#[test]
fn a_crash_between_send_and_mark_resends_the_same_message() {
    let s = setup();
    let kill_file = s.db.with_file_name("kill");
    let sink = SmtpSink::start(
        &s.sink_dir,
        free_port(),
        SinkOptions { kill_file: Some(kill_file.clone()), ..SinkOptions::default() },
    );
    let cfg = s.db.with_file_name("w.toml");
    fs::write(&cfg, smtp_config(sink.port, "")).unwrap();
    drop(s.store);

    // The shell writes its pid for the sink, then becomes walwatch (exec keeps the pid).
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg("echo $$ > \"$1\" && exec \"$2\" alerts test-mail --config \"$3\" --db \"$4\"")
        .args(["sh", kill_file.to_str().unwrap(), env!("CARGO_BIN_EXE_walwatch"), cfg.to_str().unwrap()])
        .arg(&s.db)
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "walwatch was killed by the sink: {status:?}");
    assert!(!kill_file.exists());
    let received = sink.wait_for(1, WAIT);
    assert_eq!(received.len(), 1);
    let first = received[0].message_id();

    let mut store = Store::open(&s.db).unwrap();
    let rows = store.outbox().all().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].message_id.as_str(), rows[0].sent_at), (first.as_str(), None));
    let config = parse(&smtp_config(sink.port, ""));
    // The dead sender's claim holds the message for a while (no double send
    // by a concurrent sender); once it expires the message goes out again.
    assert_eq!(outbox::flush(&mut store, &config, now()).unwrap().outcomes, []);
    let later = now() + SignedDuration::from_hours(1);
    let report = outbox::flush(&mut store, &config, later).unwrap();
    assert_eq!((report.sent(), report.outcomes[0].message_id.as_str()), (1, first.as_str()));

    let received = sink.messages();
    assert_eq!(received.iter().map(|m| m.message_id()).collect::<Vec<_>>(), [first.clone(), first]);
    assert_eq!(received[0].raw, received[1].raw, "the identical bytes both times");
    let rows = store.outbox().all().unwrap();
    assert_eq!((rows.len(), rows[0].sent_at), (1, Some(later)));
}

/// STARTTLS and implicit TLS against the real server with a certificate from
/// a private CA: accepted with `ca_file`, refused without it (the server is
/// verified, not just encrypted to).
#[test]
fn starttls_and_implicit_tls_verify_the_server_against_ca_file() {
    let mut s = setup();
    let ca = make_ca(&s.db.with_file_name("ca"));
    for (mode, security) in [("starttls", "starttls"), ("implicit", "tls")] {
        let tls = SinkTls { cert: ca.cert.clone(), key: ca.key.clone(), mode };
        let dir = s.sink_dir.join(mode);
        let sink = SmtpSink::start(&dir, free_port(), SinkOptions { tls: Some(tls), ..SinkOptions::default() });
        let base = smtp_config(sink.port, "").replace("127.0.0.1", "localhost");
        let base = base.replace("security = \"none\"", &format!("security = \"{security}\""));
        let without_ca = parse(&base);
        let err = alert::test_mail(&mut s.store, &without_ca, now()).unwrap_err().to_string();
        assert!(err.contains("UnknownIssuer"), "{mode}: {err}");
        assert_eq!(sink.messages().len(), 0);

        let with_ca = parse(&format!("{base}ca_file = \"{}\"\n", ca.ca.display()));
        let out = alert::test_mail(&mut s.store, &with_ca, now()).unwrap();
        assert!(out.contains(&format!("via smtp localhost:{} ({security})", sink.port)), "{out}");
        let received = sink.messages();
        assert_eq!(received.len(), 1, "{mode}");
        assert!(received[0].header("Subject").starts_with("[walwatch] INFO "));
    }
}
