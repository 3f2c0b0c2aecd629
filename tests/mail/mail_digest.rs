//! The daily digest through a real SMTP server process (aiosmtpd), on a
//! store holding a real PostgreSQL 15 log (a forced-checkpoint storm, a
//! setting change, a restart), with the clock injected: the schedule's
//! days are driven without sleeping until 07:00.
//!
//! What the mail says is checked against `walwatch history --by day` on
//! the same store (a separate process), so the digest cannot drift from
//! the history a DBA queries.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use jiff::Timestamp;
use mailparse::ParsedMail;
use support::smtp::{free_port, SinkOptions, SmtpSink};
use walwatch::alert::rules::RuleSet;
use walwatch::config::{self, Config};
use walwatch::digest::queue::{tick, Tick};
use walwatch::outbox;
use walwatch::store::Store;

const FIXTURE: &str = "15-stderr-default-std";
/// The fixture's server ran on this day (UTC).
const DAY: &str = "2026-11-22";

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn walwatch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_walwatch"))
}

fn fixture_logs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(FIXTURE).join("log");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    logs.sort();
    logs
}

fn import(db: &Path) {
    let out =
        walwatch().args(["import", "--db"]).arg(db).args(["--cluster", "main"]).args(fixture_logs()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn digest_config(port: u16, extra: &str) -> Config {
    let text = format!(
        r#"[mail]
transport = "smtp"
from = "walwatch <walwatch@db1.example.com>"
to = ["alerts@example.com"]
retry_initial = "10s"
retry_max = "1m"
[mail.smtp]
host = "127.0.0.1"
port = {port}
security = "none"
timeout = "5s"
[digest]
timezone = "UTC"
to = ["dba@example.com"]
{extra}"#
    );
    config::parse(&text, Path::new("t.toml")).unwrap()
}

struct Setup {
    _dir: tempfile::TempDir,
    db: PathBuf,
    store: Store,
    sink_dir: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    import(&db);
    let store = Store::open(&db).unwrap();
    Setup { sink_dir: dir.path().join("received"), db, store, _dir: dir }
}

fn rules(config: &Config) -> RuleSet {
    RuleSet::configure(&config.alerts).unwrap()
}

/// The first part of `mimetype` anywhere in the tree.
fn find<'a>(part: &'a ParsedMail<'a>, mimetype: &str) -> Option<&'a ParsedMail<'a>> {
    if part.ctype.mimetype == mimetype {
        return Some(part);
    }
    part.subparts.iter().find_map(|p| find(p, mimetype))
}

/// `walwatch history --by day` of the fixture's day, as JSON.
fn history_day(db: &Path) -> serde_json::Value {
    let out = walwatch()
        .args(["history", "--db"])
        .arg(db)
        .args(["--by", "day", "--tz", "UTC", "--since", "2026-11-22T00:00:00Z", "--until", "2026-11-23T00:00:00Z"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    rows[0].clone()
}

/// "1,234.5" as history's number.
fn grouped(v: f64, decimals: usize) -> String {
    let text = format!("{v:.decimals$}");
    let (int, frac) = text.split_once('.').map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    frac.map_or(out.clone(), |f| format!("{out}.{f}"))
}

#[test]
fn the_day_after_the_baseline_one_digest_arrives_with_history_s_numbers_in_both_parts() {
    let mut s = setup();
    let sink = SmtpSink::start(&s.sink_dir, free_port(), SinkOptions::default());
    let config = digest_config(sink.port, "");
    let rules = rules(&config);

    // First start in the afternoon of the fixture's day: the day before is the baseline, nothing is mailed.
    assert_eq!(
        tick(&mut s.store, &config, &rules, at("2026-11-22T15:00:00Z")).unwrap(),
        Tick::Baseline("2026-11-21".parse().unwrap())
    );
    assert_eq!(
        tick(&mut s.store, &config, &rules, at("2026-11-23T06:59:59Z")).unwrap(),
        Tick::Waiting(at("2026-11-23T07:00:00Z"))
    );
    let queued = tick(&mut s.store, &config, &rules, at("2026-11-23T07:00:00Z")).unwrap();
    let Tick::Queued { day, subject, message_id } = queued else { panic!("{queued:?}") };
    assert_eq!(day.to_string(), DAY);
    assert_eq!(subject, "[walwatch] digest 2026-11-22: 1 of 1 clusters need attention");
    // A restart after `at` (a new connection, the same store) queues nothing more.
    let mut again = Store::open(&s.db).unwrap();
    assert!(matches!(tick(&mut again, &config, &rules, at("2026-11-23T07:05:00Z")).unwrap(), Tick::Waiting(_)));

    let report = outbox::flush(&mut s.store, &config, at("2026-11-23T07:00:01Z")).unwrap();
    assert_eq!((report.sent(), report.failed()), (1, 0), "{report:?}");
    let received = sink.messages();
    assert_eq!(received.len(), 1);
    let m = &received[0];
    assert_eq!(m.message_id(), message_id);
    assert_eq!(m.header("Subject"), subject);
    // `[digest] to`, not the alert recipients, in the header and the envelope.
    assert_eq!(m.header("To"), "dba@example.com");
    assert_eq!(m.rcpt_tos(), ["dba@example.com"]);
    assert_eq!(m.header("Auto-Submitted"), "auto-generated");
    let parsed = m.parsed();
    assert_eq!(parsed.ctype.mimetype, "multipart/alternative");
    let text = find(&parsed, "text/plain").unwrap().get_body().unwrap().replace("\r\n", "\n");
    let html = find(&parsed, "text/html").unwrap().get_body().unwrap();
    assert!(find(&parsed, "multipart/related").is_some(), "the HTML and its charts are related parts");

    // The chart: an inline PNG of the stated size, referenced by the HTML with alt text.
    let png_part = find(&parsed, "image/png").expect("a PNG part");
    let cid = png_part.headers.iter().find(|h| h.get_key().eq_ignore_ascii_case("Content-ID")).unwrap().get_value();
    let cid = cid.trim_matches(|c| c == '<' || c == '>');
    assert!(html.contains(&format!("<img src=\"cid:{cid}\" alt=\"")), "the HTML shows cid:{cid}: {html}");
    let alt = html.split(&format!("cid:{cid}\" alt=\"")).nth(1).unwrap().split('"').next().unwrap();
    assert!(alt.starts_with("WAL rate per checkpoint cycle") && alt.contains("main"), "alt text: {alt}");
    let png = png_part.get_body_raw().unwrap();
    assert!(png.len() <= 100 * 1024, "{} bytes", png.len());
    let decoder = png::Decoder::new(std::io::Cursor::new(&png));
    let reader = decoder.read_info().unwrap();
    assert_eq!((reader.info().width, reader.info().height), (600, 260));

    // The numbers are history's, in both parts.
    let h = history_day(&s.db);
    let checkpoints = ["shutdown", "end-of-recovery", "wal", "time", "manual"]
        .iter()
        .map(|k| h["checkpoints"][k].as_i64().unwrap() + h["restartpoints"][k].as_i64().unwrap())
        .sum::<i64>();
    let forced = h["checkpoints"]["wal"].as_i64().unwrap() + h["restartpoints"]["wal"].as_i64().unwrap();
    let rows = [
        ("checkpoints", checkpoints.to_string()),
        ("forced (wal)", forced.to_string()),
        ("forced share %", grouped(h["forced_share"].as_f64().unwrap() * 100.0, 1)),
        ("too frequent warnings", h["too_frequent"].to_string()),
        ("WAL written MB", grouped(h["wal_written_mb"].as_f64().unwrap(), 1)),
        ("WAL rate p95 kB/s", grouped(h["wal_rate_kb_s"]["p95"].as_f64().unwrap(), 1)),
        ("sync max s", grouped(h["sync_s_max"].as_f64().unwrap(), 3)),
        ("buffers written", grouped(h["buffers_written"].as_f64().unwrap(), 0)),
    ];
    // What the fixture is known for, so the comparison compares something.
    assert_eq!((checkpoints, forced, h["too_frequent"].as_i64().unwrap()), (28, 23, 24));
    for (name, value) in &rows {
        let line = text.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}"));
        let day_cell = line[2 + 22..2 + 22 + 12].trim();
        assert_eq!(day_cell, value, "text part, {name}: {line}");
        assert!(html.contains(&format!("{name}</td><td style=\"text-align:right;")), "html row {name}");
        assert!(html.contains(&format!("<strong>{value}</strong>")), "html part, {name} = {value}");
    }
    assert!(text.contains("== main: needs attention: 23 forced checkpoints (started by WAL volume, not checkpoint_timeout); 24 \"too frequently\" warnings"), "{text}");
    assert!(text.contains("    - 08:07:38 max_wal_size = 64MB\n"), "the setting change, in the digest's zone: {text}");
    assert!(text.contains("server starts 1, shutdown checkpoints 1, crash recoveries 0"), "{text}");
    assert!(text.contains("ALTER SYSTEM SET max_wal_size"), "the suggestion's SQL: {text}");
    assert!(html.contains("<pre style=") && html.contains("ALTER SYSTEM SET max_wal_size = &#39;"), "{html}");
    assert!(
        !html.contains("<script") && !html.contains("http://") && !html.contains("https://"),
        "no scripts, nothing external"
    );
}

#[test]
fn smtp_down_over_at_then_up_delivers_the_day_once_and_a_crash_before_the_mark_resends_the_same_message() {
    let mut s = setup();
    let port = free_port();
    let config = digest_config(port, "");
    let rules = rules(&config);
    tick(&mut s.store, &config, &rules, at("2026-11-22T15:00:00Z")).unwrap();
    let Tick::Queued { message_id, .. } = tick(&mut s.store, &config, &rules, at("2026-11-23T07:00:00Z")).unwrap()
    else {
        panic!("not queued")
    };
    // The server is down at 07:00: the send fails and is retried later; the day is not queued again.
    let down = outbox::flush(&mut s.store, &config, at("2026-11-23T07:00:01Z")).unwrap();
    assert_eq!((down.sent(), down.failed()), (0, 1), "{down:?}");
    assert!(matches!(tick(&mut s.store, &config, &rules, at("2026-11-23T07:01:00Z")).unwrap(), Tick::Waiting(_)));
    let sink = SmtpSink::start(&s.sink_dir, port, SinkOptions::default());
    let up = outbox::flush(&mut s.store, &config, at("2026-11-23T07:05:00Z")).unwrap();
    assert_eq!((up.sent(), up.failed()), (1, 0), "{up:?}");
    let ids: Vec<String> = sink.messages().iter().map(|m| m.message_id()).collect();
    assert_eq!(ids, std::slice::from_ref(&message_id));

    // A crash after the server took it and before walwatch marked it sent:
    // the next start sends the identical message again (at least once).
    let conn = rusqlite::Connection::open(&s.db).unwrap();
    conn.execute("UPDATE outbox SET sent_at = NULL, next_attempt_at = 0 WHERE message_id = ?1", [&message_id]).unwrap();
    let mut restarted = Store::open(&s.db).unwrap();
    assert!(matches!(tick(&mut restarted, &config, &rules, at("2026-11-23T07:10:00Z")).unwrap(), Tick::Waiting(_)));
    let resent = outbox::flush(&mut restarted, &config, at("2026-11-23T07:10:00Z")).unwrap();
    assert_eq!(resent.sent(), 1);
    let received = sink.messages();
    assert_eq!(received.iter().map(|m| m.message_id()).collect::<Vec<_>>(), [message_id.clone(), message_id]);
    assert_eq!(received[0].raw, received[1].raw, "byte for byte the same message");
}

#[test]
fn after_a_week_down_only_the_latest_day_is_sent_and_the_missed_days_are_named() {
    let mut s = setup();
    let sink = SmtpSink::start(&s.sink_dir, free_port(), SinkOptions::default());
    let config = digest_config(sink.port, "");
    let rules = rules(&config);
    tick(&mut s.store, &config, &rules, at("2026-11-22T15:00:00Z")).unwrap();
    tick(&mut s.store, &config, &rules, at("2026-11-23T07:00:00Z")).unwrap();
    outbox::flush(&mut s.store, &config, at("2026-11-23T07:00:00Z")).unwrap();
    // Down from the 23rd until the 30th, 08:00.
    let queued = tick(&mut s.store, &config, &rules, at("2026-11-30T08:00:00Z")).unwrap();
    let Tick::Queued { day, subject, .. } = &queued else { panic!("{queued:?}") };
    assert_eq!(day.to_string(), "2026-11-29");
    // A quiet day after days with checkpoints is news, not health.
    assert_eq!(subject, "[walwatch] digest 2026-11-29: 1 of 1 clusters need attention");
    assert!(matches!(tick(&mut s.store, &config, &rules, at("2026-11-30T09:00:00Z")).unwrap(), Tick::Waiting(_)));
    outbox::flush(&mut s.store, &config, at("2026-11-30T08:00:00Z")).unwrap();
    let received = sink.messages();
    let subjects: Vec<String> = received.iter().map(|m| m.header("Subject")).collect();
    assert_eq!(subjects.len(), 2, "one per due day sent, no burst of old ones: {subjects:?}");
    let text = find(&received[1].parsed(), "text/plain").unwrap().get_body().unwrap().replace("\r\n", "\n");
    let text = text.replace("=\n", "");
    assert!(
        text.contains(
            "walwatch was not running when the digests of 2026-11-23, 2026-11-24, 2026-11-25, 2026-11-26, \
             2026-11-27, 2026-11-28 were due"
        ),
        "{text}"
    );
}

#[test]
fn skip_quiet_days_records_a_quiet_day_without_mailing_it() {
    let mut s = setup();
    let port = free_port();
    let config = digest_config(port, "skip_quiet_days = true\nclusters = [\"main\"]\n");
    let rules = rules(&config);
    // Baseline the day the store knows nothing of, so the next one is a day before any checkpoint.
    tick(&mut s.store, &config, &rules, at("2026-11-20T15:00:00Z")).unwrap();
    let quiet = tick(&mut s.store, &config, &rules, at("2026-11-21T07:00:00Z")).unwrap();
    assert_eq!(quiet, Tick::Skipped("2026-11-20".parse().unwrap()));
    assert!(s.store.outbox().all().unwrap().is_empty(), "nothing queued for a quiet day");
    // The storm day is mailed.
    tick(&mut s.store, &config, &rules, at("2026-11-22T07:00:00Z")).unwrap();
    let storm = tick(&mut s.store, &config, &rules, at("2026-11-23T07:00:00Z")).unwrap();
    assert!(matches!(storm, Tick::Queued { .. }), "{storm:?}");
    assert_eq!(s.store.outbox().all().unwrap().len(), 1);
}

#[test]
fn digest_to_sends_any_day_now_and_a_refusal_is_an_error() {
    let s = setup();
    let sink = SmtpSink::start(&s.sink_dir, free_port(), SinkOptions::default());
    let config_path = s.db.with_file_name("walwatch.toml");
    let write_config = |port: u16| {
        let text = format!(
            "[mail]\ntransport = \"smtp\"\nfrom = \"walwatch@db1.example.com\"\nto = [\"alerts@example.com\"]\n\
             [mail.smtp]\nhost = \"127.0.0.1\"\nport = {port}\nsecurity = \"none\"\ntimeout = \"5s\"\n\
             [digest]\ntimezone = \"UTC\"\n"
        );
        std::fs::write(&config_path, text).unwrap();
    };
    write_config(sink.port);
    let run = || {
        walwatch()
            .args(["digest", "--config"])
            .arg(&config_path)
            .arg("--db")
            .arg(&s.db)
            .args(["--date", DAY, "--to", "Night Shift <night@example.com>"])
            .output()
            .unwrap()
    };
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("digest of 2026-11-22 sent to night@example.com"), "{stderr}");
    let received = sink.messages();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].rcpt_tos(), ["night@example.com"]);
    assert_eq!(received[0].header("Subject"), "[walwatch] digest 2026-11-22: 1 of 1 clusters need attention");
    // On demand is not the day's digest: nothing is recorded or queued for the schedule.
    let store = Store::open(&s.db).unwrap();
    assert_eq!(store.digests().last_day().unwrap(), None);
    assert!(store.outbox().all().unwrap().is_empty());

    // The server gone: exit 1 and the reason, never a silent success.
    write_config(free_port());
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
}
