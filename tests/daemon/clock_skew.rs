//! One log line dated far ahead of walwatch's clock must not
//! silence the alerts, on real parts: a real PostgreSQL 15 log (the fixture
//! 15-stderr-default-std: forced checkpoints and "too frequently" warnings),
//! imported by the walwatch binary into a real SQLite store, `status`,
//! `summary` and `checkpoints` read through the binary; and `walwatch run`
//! following the log and mailing through a real SMTP server (aiosmtpd).
//!
//! The line dated 2099 is one of the log's own lines with its time
//! rewritten: it stands for a line injected into the log, or for a server
//! whose clock was once far ahead. The later forced checkpoints are the
//! log's own lines re-dated two hours on: a second burst of the same real
//! server activity.
//!
//! The first test runs the rules through the library at chosen evaluation
//! times (`walwatch analyze` always evaluates at the wall clock, and the
//! fixture's log is from 2026-11-22), so that "time passes" without waiting.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, Unit, ZonedDifference};
use serde_json::Value;
use support::daemon::{append, replace, Workspace};
use support::smtp::{free_port, SinkOptions, SmtpSink};
use support::{walwatch, walwatch_json};
use walwatch::alert::evaluate::{self, Evaluation};
use walwatch::alert::lifecycle::AlertChange;
use walwatch::alert::rules::RuleSet;
use walwatch::config::Config;
use walwatch::store::Store;
use walwatch::timefmt::rfc3339;

const FIXTURE: &str = "15-stderr-default-std";
/// The fixture log's last line (checked against the file).
const LAST_LINE_AT: &str = "2026-11-22T08:08:03.412Z";
/// Its first line.
const FIRST_LINE_AT: &str = "2026-11-22T08:04:20.708Z";
const DATED_2099: &str = "2099-01-01T00:00:00Z";

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn fixture_log() -> PathBuf {
    let logs = support::fixture_logs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(FIXTURE));
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// The log's 8th line, `checkpoint starting: wal` at 08:04:23.497, dated 2099.
fn line_dated_2099() -> Vec<u8> {
    let text = fs::read_to_string(fixture_log()).unwrap();
    let line = text.lines().nth(7).unwrap();
    assert_eq!(line, "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal");
    replace(format!("{line}\n").as_bytes(), "2026-11-22 08:04:23.497", "2099-01-01 00:00:00.000")
}

/// Lines 6 to 25 of the log (5 "too frequently" warnings with their HINTs,
/// 5 WAL-triggered checkpoints, 08:04:23.386 to 08:04:27.895), two hours later.
fn second_burst() -> Vec<u8> {
    let text = fs::read_to_string(fixture_log()).unwrap();
    let lines: Vec<&str> = text.lines().skip(5).take(20).collect();
    assert_eq!(lines.iter().filter(|l| l.ends_with("checkpoint starting: wal")).count(), 5);
    assert_eq!(lines.iter().filter(|l| l.contains("occurring too frequently")).count(), 5);
    assert!(lines.iter().all(|l| l.starts_with("2026-11-22 08:04:")), "{lines:?}");
    replace(format!("{}\n", lines.join("\n")).as_bytes(), "2026-11-22 08:04:", "2026-11-22 10:04:")
}

fn import(db: &Path, log: &Path) {
    let out = walwatch().arg("import").arg("--db").arg(db).args(["--cluster", "main"]).arg(log).output().unwrap();
    assert!(out.status.success(), "walwatch import: {}", support::describe(&out));
}

/// The rules and the alert lifecycle at `now`, on a fresh connection.
fn evaluate(db: &Path, now: Timestamp) -> Evaluation {
    let mut store = Store::open(db).unwrap();
    evaluate::all(&mut store, &Config::default(), &RuleSet::default(), now).unwrap()
}

fn rules(changes: &[AlertChange]) -> Vec<&str> {
    let mut r: Vec<&str> = changes.iter().map(|c| c.rule.as_str()).collect();
    r.sort();
    r
}

/// (fired, still open, resolved) rule ids of the only cluster.
fn moves(report: &Evaluation) -> (Vec<&str>, Vec<&str>, Vec<&str>) {
    assert_eq!(report.clusters.len(), 1);
    let c = &report.clusters[0].changes;
    (rules(&c.fired), rules(&c.still_open), rules(&c.resolved))
}

fn figures<'a>(report: &'a Evaluation, rule: &str) -> &'a Value {
    let f = report.clusters[0].findings.iter().find(|f| f.rule == rule);
    &f.unwrap_or_else(|| panic!("no {rule} finding in {report:?}")).figures
}

/// How far `to` is ahead of `from` in the words the rule uses beyond a day
/// ("72y 1mo 8d"): calendar units counted from `from`, truncated to days.
fn calendar_ahead(from: Timestamp, to: Timestamp) -> String {
    let (from, to) = (from.to_zoned(TimeZone::UTC), to.to_zoned(TimeZone::UTC));
    format!("{:#}", from.until(ZonedDifference::new(&to).largest(Unit::Year).smallest(Unit::Day)).unwrap())
}

#[test]
fn a_line_dated_2099_neither_resolves_nor_blinds_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let log = dir.path().join("postgresql-2026-11-22_080420.log");
    fs::copy(fixture_log(), &log).unwrap();
    let last_line = fs::read_to_string(&log).unwrap().lines().last().unwrap().to_string();
    assert!(last_line.starts_with("2026-11-22 08:08:03.412 UTC"), "{last_line}");
    let wal_starts = fs::read_to_string(&log).unwrap().matches("checkpoint starting: wal\n").count();
    assert_eq!(wal_starts, 23);
    import(&db, &log);

    // A minute after the log's last line: both alerts open.
    let now1 = at(LAST_LINE_AT) + SignedDuration::from_mins(1);
    let r = evaluate(&db, now1);
    assert_eq!(moves(&r), (vec!["forced_checkpoints", "too_frequent"], vec![], vec![]));
    assert_eq!(figures(&r, "forced_checkpoints")["count"], 23);

    // The line dated 2099 arrives (read now, by this machine's clock).
    append(&log, &line_dated_2099());
    let before = Timestamp::now();
    import(&db, &log);
    let after = Timestamp::now();

    // Seven seconds later: both alerts stay open, nothing else fires but clock_skew.
    let now2 = now1 + SignedDuration::from_secs(7);
    let r = evaluate(&db, now2);
    assert_eq!(moves(&r), (vec!["clock_skew"], vec!["forced_checkpoints", "too_frequent"], vec![]));
    let found: Vec<&str> = r.clusters[0].findings.iter().map(|f| f.rule).collect();
    assert_eq!(found, ["forced_checkpoints", "too_frequent", "clock_skew"], "no checkpoint_logging_missing either");
    let forced = figures(&r, "forced_checkpoints");
    assert_eq!((forced["count"].as_i64(), forced["window"]["end"].as_str()), (Some(23), Some(&*rfc3339(now2))));
    let skew_finding = r.clusters[0].findings.iter().find(|f| f.rule == "clock_skew").unwrap();
    let read = skew_finding.evidence_at.unwrap();
    assert!(before <= read && read <= after, "read at {read}, import ran from {before} to {after}");
    let ahead = calendar_ahead(read, at(DATED_2099));
    assert!(ahead.starts_with("7"), "{ahead}: some 72 years");
    assert_eq!(
        skew_finding.summary,
        format!(
            "1 event dated up to {ahead} ahead of this machine's clock (tolerance 5m): check the server's clock and log_timezone"
        )
    );
    let skew = &skew_finding.figures;
    assert_eq!(skew["count"], 1);
    assert_eq!(skew["most_ahead_at"], "2099-01-01T00:00:00.000+00:00");
    assert_eq!(skew["most_ahead_read_at"], rfc3339(read));
    assert_eq!(skew["latest_read_at"], rfc3339(read));
    assert_eq!(skew["max_ahead_s"], at(DATED_2099).duration_since(read).as_secs_f64());
    assert_eq!(skew["tolerance_s"], 300.0);
    assert_eq!(skew["window"]["length_s"], 86_400.0);

    // `status`: the problem, and the last event is the log's real last line.
    let db_arg = db.to_str().unwrap();
    let st = walwatch_json(&["status", "--db", db_arg, "--config", "/dev/null", "--format", "json"]);
    let cluster = &st["clusters"][0];
    assert_eq!(cluster["name"], "main");
    assert_eq!(cluster["last_event_at"], "2026-11-22T08:08:03.412+00:00");
    let warning = format!(
        "1 event read in the last 24h dated up to {ahead} ahead of this machine's clock, latest read at {}; check the server's clock / log_timezone (the alert rules ignore their times)",
        rfc3339(read)
    );
    assert_eq!(cluster["warnings"], serde_json::json!([warning]));
    let table = walwatch().args(["status", "--db", db_arg, "--config", "/dev/null"]).output().unwrap();
    assert!(String::from_utf8(table.stdout).unwrap().contains(&format!("  warning: {warning}\n")));

    // `summary`: the line is counted (a WAL-triggered start) but the log
    // still ends at its real last line; `checkpoints` keeps it.
    let sum = walwatch_json(&["summary", "--db", db_arg, "--config", "/dev/null", "--format", "json"]);
    assert_eq!(sum["first_at"], rfc3339(at(FIRST_LINE_AT)));
    assert_eq!(sum["last_at"], "2026-11-22T08:08:03.412+00:00");
    assert_eq!(sum["dated_ahead"], 1);
    assert_eq!(sum["checkpoints"]["by_trigger"]["wal"], 24);
    let table = walwatch().args(["summary", "--db", db_arg, "--config", "/dev/null", "--utc"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("last event             2026-11-22 08:08:03.412 +00:00\n"), "{table}");
    assert!(table.ends_with("dated ahead of clock   1 (not first or last event; see `walwatch status`)\n"), "{table}");
    let cps = walwatch_json(&["checkpoints", "--db", db_arg, "--format", "json"]);
    let last = cps.as_array().unwrap().last().unwrap();
    assert_eq!(
        (last["started_at"].as_str(), last["trigger"].as_str()),
        (Some("2099-01-01T00:00:00.000+00:00"), Some("wal"))
    );

    // An hour and a half later the log is older than the windows, which
    // end at its newest line, not at the line dated 2099: nothing changes.
    let r = evaluate(&db, at(LAST_LINE_AT) + SignedDuration::from_mins(90));
    assert_eq!(moves(&r), (vec![], vec!["clock_skew", "forced_checkpoints", "too_frequent"], vec![]));
    assert_eq!(figures(&r, "forced_checkpoints")["window"]["end"], "2026-11-22T08:08:03.412+00:00");

    // New real forced checkpoints two hours on: the rules judge them, and
    // only them (the first burst has left the window).
    append(&log, &second_burst());
    import(&db, &log);
    let now3 = at("2026-11-22T10:05:00Z");
    let r = evaluate(&db, now3);
    assert_eq!(moves(&r), (vec![], vec!["clock_skew", "forced_checkpoints", "too_frequent"], vec![]));
    let forced = figures(&r, "forced_checkpoints");
    assert_eq!((forced["count"].as_i64(), forced["timed"].as_i64()), (Some(5), Some(0)));
    assert_eq!(forced["first_at"], "2026-11-22T10:04:23.497+00:00");
    assert_eq!(forced["last_at"], "2026-11-22T10:04:25.950+00:00");
    assert_eq!(forced["window"]["end"], rfc3339(now3));
    assert_eq!(figures(&r, "too_frequent")["count"], 5);
    assert_eq!(figures(&r, "clock_skew")["count"], 1);

    // clock_skew's window is over read times: a day after the line was read
    // (and nothing like it since), it resolves; the others are unchanged.
    let r = evaluate(&db, read + SignedDuration::from_hours(24) + SignedDuration::from_micros(1));
    assert_eq!(moves(&r), (vec![], vec!["forced_checkpoints", "too_frequent"], vec!["clock_skew"]));
    let r = evaluate(&db, read + SignedDuration::from_hours(24) - SignedDuration::from_micros(1));
    assert_eq!(
        moves(&r),
        (vec!["clock_skew"], vec!["forced_checkpoints", "too_frequent"], vec![]),
        "read 1 µs inside the window"
    );
}

fn daemon_config(ws: &Workspace, port: u16) -> String {
    let logs = ws.dir("log").join("*.log");
    format!(
        r#"[store]
path = {db:?}

[daemon]
poll_interval = "200ms"

[[cluster]]
name = "demo"
logs = [{logs:?}]

{mail}"#,
        db = ws.db().display().to_string(),
        logs = logs.display().to_string(),
        mail = support::smtp::mail_config(port),
    )
}

/// The open alerts, by rule.
fn open_alerts(ws: &Workspace) -> Vec<(String, Value)> {
    let db = ws.db();
    let v = walwatch_json(&["alerts", "--db", db.to_str().unwrap(), "--config", "/dev/null", "--format", "json"]);
    let mut out: Vec<(String, Value)> =
        v.as_array().unwrap().iter().map(|a| (a["rule"].as_str().unwrap().to_string(), a.clone())).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn rule_names(alerts: &[(String, Value)]) -> Vec<&str> {
    alerts.iter().map(|(r, _)| r.as_str()).collect()
}

/// The daemon follows the real log (older than the rules' windows, so they
/// end at its newest line) and mails each alert. A line dated 2099 fires
/// clock_skew and resolves nothing; a second burst of forced checkpoints is
/// judged as it lands; no RESOLVED mail ever goes out.
#[test]
fn the_daemon_keeps_mailing_and_firing_after_a_line_dated_2099() {
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql-2026-11-22_080420.log");
    fs::copy(fixture_log(), &log).unwrap();
    let sink = SmtpSink::start(&ws.dir("smtp"), free_port(), SinkOptions::default());
    fs::write(ws.config_path(), daemon_config(&ws, sink.port)).unwrap();

    let mut daemon = ws.start();
    daemon.wait_running();
    let first = daemon.wait_until("forced_checkpoints and too_frequent notified", || {
        let a = open_alerts(&ws);
        let notified = a.iter().all(|(_, x)| x["state"] == "notified");
        match rule_names(&a)[..] {
            ["forced_checkpoints", "too_frequent"] if notified => Ok(a),
            _ => Err(format!("{a:?}")),
        }
    });
    assert_eq!(sink.messages().len(), 2);
    assert_eq!(first[0].1["figures"]["count"], 23);

    append(&log, &line_dated_2099());
    let skew = daemon.wait_until("clock_skew notified", || {
        let a = open_alerts(&ws);
        match a.iter().find(|(r, _)| r == "clock_skew") {
            Some((_, x)) if x["state"] == "notified" => Ok(a),
            _ => Err(format!("{a:?}")),
        }
    });
    assert_eq!(rule_names(&skew), ["clock_skew", "forced_checkpoints", "too_frequent"]);
    let ids = |a: &[(String, Value)]| a.iter().map(|(_, x)| x["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(&skew)[1..], ids(&first)[..], "the same alerts, never resolved and fired again");
    assert_eq!(skew[1].1["figures"]["count"], 23, "the window still ends at the log's real last line");
    assert_eq!(skew[1].1["figures"]["window"]["end"], "2026-11-22T08:08:03.412+00:00");

    append(&log, &second_burst());
    let after = daemon.wait_until("the second burst judged", || {
        let a = open_alerts(&ws);
        let forced = a.iter().find(|(r, _)| r == "forced_checkpoints").map(|(_, x)| &x["figures"]);
        match forced {
            Some(f) if f["count"] == 5 => Ok(a),
            _ => Err(format!("{a:?}")),
        }
    });
    assert_eq!(rule_names(&after), ["clock_skew", "forced_checkpoints", "too_frequent"]);
    assert_eq!(ids(&after), ids(&skew), "still the same three alerts");
    assert!(after.iter().all(|(_, x)| x["state"] == "notified" && x["resolved_at"].is_null()), "{after:?}");
    let forced = &after[1].1["figures"];
    assert_eq!(forced["window"]["end"], "2026-11-22T10:04:27.895+00:00");
    assert_eq!(forced["last_at"], "2026-11-22T10:04:25.950+00:00");

    // One mail per alert, none of them a RESOLVED one.
    std::thread::sleep(Duration::from_secs(3));
    let mails = sink.messages();
    let mut subjects: Vec<String> = mails.iter().map(|m| m.header("Subject")).collect();
    subjects.sort();
    assert_eq!(subjects.len(), 3, "{subjects:?}");
    assert!(subjects.iter().all(|s| s.starts_with("[walwatch] WARNING demo: ") && !s.contains("RESOLVED")));
    let skew_subject = subjects.iter().find(|s| s.contains("ahead")).unwrap();
    assert!(skew_subject.starts_with("[walwatch] WARNING demo: 1 event dated up to 7"), "{skew_subject}");
    assert!(
        skew_subject
            .ends_with(" ahead of this machine's clock (tolerance 5m): check the server's clock and log_timezone"),
        "{skew_subject}"
    );
    assert!(daemon.terminate() < Duration::from_secs(5));
}
