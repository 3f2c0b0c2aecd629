//! The daemon's alert path with real parts: `walwatch run` follows a real
//! PostgreSQL 15 log (a fixture with forced checkpoints and "too frequently"
//! warnings), runs the rules as the events land, and its sender thread mails
//! the alerts to a real SMTP server (aiosmtpd) that is down at first. Every
//! alert arrives exactly once after the server comes up; a restarted daemon
//! sends nothing again; SIGTERM still exits 0 promptly.

use crate::support;

use std::collections::BTreeSet;
use std::fs;
use std::time::Duration;

use serde_json::Value;
use support::daemon::{assert_matches_truth, Workspace};
use support::smtp::{free_port, SinkOptions, SmtpSink};
use support::truth::Layout;
use support::walwatch_json;

const FIXTURE: &str = "15-stderr-default-std";

fn config(ws: &Workspace, port: u16) -> String {
    let logs = ws.dir("log").join("*.log");
    format!(
        r#"[store]
path = {db:?}

[daemon]
poll_interval = "200ms"

[[cluster]]
name = "demo"
logs = [{logs:?}]

[cluster.settings]
checkpoint_timeout = "30s"
max_wal_size = "32MB"

{mail}"#,
        db = ws.db().display().to_string(),
        logs = logs.display().to_string(),
        mail = support::smtp::mail_config(port),
    )
}

fn alerts(ws: &Workspace) -> Vec<Value> {
    let db = ws.db();
    let v = walwatch_json(&["alerts", "--db", db.to_str().unwrap(), "--config", "/dev/null", "--format", "json"]);
    v.as_array().expect("alerts JSON is an array").clone()
}

#[test]
fn daemon_fires_rules_and_mails_each_alert_once_through_an_outage_and_a_restart() {
    let ws = Workspace::new();
    let src = fs::read_dir(format!("{}/tests/fixtures/{FIXTURE}/log", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut logs = Vec::new();
    for entry in src {
        let path = entry.unwrap().path();
        let copy = ws.dir("log").join(path.file_name().unwrap());
        fs::copy(&path, &copy).unwrap();
        logs.push(copy);
    }
    let port = free_port();
    fs::write(ws.config_path(), config(&ws, port)).unwrap();

    // The SMTP server is down: the alerts fire and wait in the outbox.
    let mut daemon = ws.start();
    daemon.wait_running();
    let fired = daemon.wait_until("alerts fired", || {
        let a = alerts(&ws);
        let rules: BTreeSet<String> = a.iter().map(|x| x["rule"].as_str().unwrap().to_string()).collect();
        if rules.contains("forced_checkpoints") && rules.contains("too_frequent") {
            Ok(a)
        } else {
            Err(format!("alerts so far: {rules:?}"))
        }
    });
    assert!(fired.iter().all(|a| a["state"] == "firing"), "nothing can be notified yet: {fired:?}");

    // The server comes up: every alert arrives once, and each is notified.
    let sink = SmtpSink::start(&ws.dir("smtp"), port, SinkOptions::default());
    let mails = sink.wait_for(fired.len(), Duration::from_secs(15));
    assert_eq!(mails.len(), fired.len(), "one mail per alert");
    let ids: BTreeSet<String> = mails.iter().map(|m| m.message_id()).collect();
    assert_eq!(ids.len(), mails.len(), "distinct Message-IDs");
    let subjects: BTreeSet<String> = mails.iter().map(|m| m.header("Subject")).collect();
    assert!(subjects.iter().all(|s| s.starts_with("[walwatch] WARNING demo: ")), "{subjects:?}");
    let forced = mails.iter().find(|m| m.part("text/plain").contains("ALTER SYSTEM SET max_wal_size")).is_some();
    assert!(forced, "the forced_checkpoints mail carries the SQL");
    daemon.wait_until("alerts notified", || {
        let a = alerts(&ws);
        a.iter().all(|x| x["state"] == "notified").then_some(()).ok_or_else(|| format!("{a:?}"))
    });

    // SIGTERM with the sender thread running: exit 0 within the deadline.
    let took = daemon.terminate();
    assert!(took < Duration::from_secs(5), "exit took {took:?}");

    // A restarted daemon re-evaluates the same history: nothing new is sent.
    let mut again = ws.start();
    again.wait_running();
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(sink.messages().len(), mails.len(), "a restart sends nothing again");
    assert_eq!(alerts(&ws).len(), fired.len(), "no alert fired twice");
    again.terminate();

    // What the rules saw is the log, counted without walwatch (tests/support/truth.rs).
    let t = assert_matches_truth(&ws.db(), "demo", &logs, &Layout::default_stderr(), "alerting daemon");
    assert_eq!((t.wal, t.too_frequent), (23, 24), "the fixture's truth.json counts: {}", t.brief());
}
