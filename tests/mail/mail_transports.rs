//! The other ways out: the file transport (.eml files), a sendmail-compatible
//! command, the webhook (a real HTTP server on a local socket), and the
//! daemon's sender thread.

use crate::support;

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use support::smtp::{free_port, SinkOptions, SmtpSink};
use walwatch::alert::{render, Notice};
use walwatch::config::{self, Config};
use walwatch::model::alert::{NoticeKind, Severity, SuggestionText};
use walwatch::outbox;
use walwatch::store::Store;

fn now() -> Timestamp {
    Timestamp::from_microsecond(Timestamp::now().as_microsecond()).unwrap()
}

fn parse(text: &str) -> Config {
    config::parse(text, Path::new("t.toml")).unwrap()
}

const MAIL: &str = "[mail]\nfrom = \"walwatch@db1.example.com\"\nto = [\"dba@example.com\", \"ops@example.com\"]\n";

fn alert(db: &Path, cluster: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute("INSERT OR IGNORE INTO cluster (name) VALUES (?1)", [cluster]).unwrap();
    conn.execute(
        "INSERT INTO alert (cluster_id, rule, severity, state, summary, fired_at, updated_at)
         SELECT id, 'too_frequent', 'warning', 'firing', 's', 0, 0 FROM cluster WHERE name = ?1",
        [cluster],
    )
    .unwrap();
    conn.last_insert_rowid()
}

fn notice(alert_id: i64, kind: NoticeKind, summary: &str) -> Notice {
    Notice {
        alert_id: Some(alert_id),
        kind,
        severity: Severity::Critical,
        cluster: "main".into(),
        rule: "too_frequent".into(),
        summary: summary.into(),
        details: vec!["checkpoints are occurring too frequently (9 seconds apart)".into()],
        suggestion: Some(SuggestionText { text: vec!["Raise max_wal_size.".into()], sql: "SELECT 1;".into() }),
        fired_at: Timestamp::from_second(1_790_000_000).unwrap(),
        sequence: 0,
    }
}

fn queue_two(store: &mut Store, db: &Path, config: &Config) -> Vec<outbox::NewMessage> {
    let id = alert(db, "main");
    let mut all = render::render_at(&notice(id, NoticeKind::Firing, "too frequent"), config, now());
    all.extend(render::render_at(&notice(id, NoticeKind::Resolved, "too frequent"), config, now()));
    store.outbox_mut().queue(&all).unwrap();
    all
}

#[test]
fn file_transport_writes_one_eml_per_message_with_the_stored_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let out = dir.path().join("mail/out"); // created on first send
    let config = parse(&format!("{MAIL}transport = \"file\"\n[mail.file]\ndirectory = \"{}\"\n", out.display()));
    let mut store = Store::open(&db).unwrap();
    let queued = queue_two(&mut store, &db, &config);
    assert_eq!(outbox::flush(&mut store, &config, now()).unwrap().sent(), 2);

    let files: Vec<_> = fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| f.extension().is_some_and(|e| e == "eml")));
    let written: BTreeSet<String> = files.iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    let payloads: BTreeSet<String> = queued.iter().map(|m| m.payload.clone()).collect();
    assert_eq!(written, payloads);
    let subjects: BTreeSet<String> =
        written.iter().map(|w| w.lines().find_map(|l| l.strip_prefix("Subject: ")).unwrap().to_string()).collect();
    let expected: BTreeSet<String> =
        ["[walwatch] CRITICAL main: too frequent", "[walwatch] CRITICAL main: RESOLVED too frequent"]
            .into_iter()
            .map(String::from)
            .collect();
    assert_eq!(subjects, expected);
}

/// No MTA runs in the test environment: a shell script with sendmail's
/// interface (`-i -f FROM -- TO...`, the message on stdin) stands in for
/// one and records what it was given; a second one fails like a full queue.
#[test]
fn sendmail_transport_pipes_the_stored_bytes_to_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let script = dir.path().join("sendmail");
    let record = dir.path().join("record");
    fs::create_dir(&record).unwrap();
    let body = format!(
        "#!/bin/sh\nn=$(ls {r} | wc -l)\nprintf '%s\\n' \"$@\" > {r}/$n.args\ncat > {r}/$n.eml\n",
        r = record.display()
    );
    fs::write(&script, body).unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let config =
        parse(&format!("{MAIL}transport = \"sendmail\"\n[mail.sendmail]\ncommand = \"{}\"\n", script.display()));
    let mut store = Store::open(&db).unwrap();
    let queued = queue_two(&mut store, &db, &config);
    assert_eq!(outbox::flush(&mut store, &config, now()).unwrap().sent(), 2);
    for (i, message) in queued.iter().enumerate() {
        let n = i * 2; // .args then .eml per message
        let args = fs::read_to_string(record.join(format!("{n}.args"))).unwrap();
        assert_eq!(args, "-i\n-f\nwalwatch@db1.example.com\n--\ndba@example.com\nops@example.com\n");
        assert_eq!(fs::read_to_string(record.join(format!("{n}.eml"))).unwrap(), message.payload);
    }

    fs::write(&script, "#!/bin/sh\ncat > /dev/null\necho 'queue file write error' >&2\nexit 75\n").unwrap();
    let id = alert(&db, "other");
    store.outbox_mut().queue(&render::render_at(&notice(id, NoticeKind::Firing, "x"), &config, now())).unwrap();
    let t = now();
    let report = outbox::flush(&mut store, &config, t).unwrap();
    assert_eq!(report.failed(), 1);
    let row = store.outbox().all().unwrap().pop().unwrap();
    assert!(row.last_error.as_deref().unwrap().contains("queue file write error"), "{row:?}");
    assert_eq!((row.sent_at, row.next_attempt_at), (None, t + SignedDuration::from_secs(30)));
}

/// One HTTP request as received: request line, headers (lowercase names), body.
type Request = (String, Vec<(String, String)>, String);

/// One HTTP request read by a plain socket server, answered with `status`.
fn serve_once(listener: TcpListener, status: &'static str) -> std::thread::JoinHandle<Request> {
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers.iter().find(|(k, _)| k == "content-length").unwrap().1.parse().unwrap();
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let mut stream = stream;
        write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
        (line.trim_end().to_string(), headers, String::from_utf8(body).unwrap())
    })
}

#[test]
fn webhook_posts_the_notice_as_json_with_exact_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::env::set_var("WALWATCH_TEST_WEBHOOK_TOKEN", "t0ken");
    let config = parse(&format!(
        "[webhook]\nurl = \"http://127.0.0.1:{port}/hooks/walwatch\"\ntimeout = \"5s\"\nauthorization_env = \"WALWATCH_TEST_WEBHOOK_TOKEN\"\n"
    ));
    let mut store = Store::open(&db).unwrap();
    let id = alert(&db, "main");
    let messages = render::render_at(&notice(id, NoticeKind::Firing, "too <frequent>"), &config, now());
    assert_eq!(messages.len(), 1);
    store.outbox_mut().queue(&messages).unwrap();
    let server = serve_once(listener, "200 OK");
    assert_eq!(outbox::flush(&mut store, &config, now()).unwrap().sent(), 1);
    let (request, headers, body) = server.join().unwrap();
    assert_eq!(request, "POST /hooks/walwatch HTTP/1.1");
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(header("authorization").as_deref(), Some("Bearer t0ken"));
    let json: Value = serde_json::from_str(&body).unwrap();
    let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "alert_id",
        "cluster",
        "details",
        "fired_at",
        "kind",
        "message_id",
        "rule",
        "sequence",
        "severity",
        "suggestion",
        "summary",
    ];
    expected.sort();
    assert_eq!(keys, expected);
    let mail_id = messages[0].message_id.strip_prefix("webhook:").unwrap();
    assert_eq!(json["message_id"], mail_id);
    assert_eq!(header("idempotency-key").as_deref(), Some(mail_id));
    assert_eq!(json["alert_id"], id);
    assert_eq!(json["kind"], "firing");
    assert_eq!(json["severity"], "critical");
    assert_eq!(json["summary"], "too <frequent>");
    assert_eq!(json["suggestion"]["sql"], "SELECT 1;");
    assert_eq!(json["fired_at"], walwatch::timefmt::rfc3339(Timestamp::from_second(1_790_000_000).unwrap()));
    assert_eq!(json["sequence"], 0);

    // A refusal (5xx) is a failure, retried later.
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let id = alert(&db, "second");
    store.outbox_mut().queue(&render::render_at(&notice(id, NoticeKind::Firing, "x"), &config, now())).unwrap();
    let server = serve_once(listener, "503 Service Unavailable");
    let report = outbox::flush(&mut store, &config, now()).unwrap();
    server.join().unwrap();
    assert_eq!(report.failed(), 1);
    assert!(report.outcomes[0].result.as_ref().unwrap_err().contains("503"), "{report:?}");
}

/// The daemon's thread: sends what is queued (also what is queued while it
/// runs), and stops within a second of being asked.
#[test]
fn sender_thread_delivers_queued_messages_and_stops_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let sink = SmtpSink::start(&dir.path().join("received"), free_port(), SinkOptions::default());
    let config = parse(&format!(
        "{MAIL}transport = \"smtp\"\n[mail.smtp]\nhost = \"localhost\"\nport = {}\nsecurity = \"none\"\n",
        sink.port
    ));
    let mut store = Store::open(&db).unwrap();
    let id = alert(&db, "main");
    store.outbox_mut().queue(&render::render_at(&notice(id, NoticeKind::Firing, "first"), &config, now())).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = outbox::spawn_sender(db.clone(), config.clone(), stop.clone()).unwrap();
    assert_eq!(sink.wait_for(1, Duration::from_secs(10)).len(), 1);
    store.outbox_mut().queue(&render::render_at(&notice(id, NoticeKind::Resolved, "first"), &config, now())).unwrap();
    let received = sink.wait_for(2, Duration::from_secs(10));
    assert_eq!(received.len(), 2);
    assert!(received[1].header("Subject").contains("RESOLVED"));

    let asked = Instant::now();
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    assert!(asked.elapsed() < Duration::from_secs(1), "stopped after {:?}", asked.elapsed());
    assert!(store.outbox().all().unwrap().iter().all(|r| r.sent_at.is_some()));
}
