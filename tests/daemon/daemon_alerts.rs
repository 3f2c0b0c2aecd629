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
    config_with(ws, &support::smtp::mail_config(port))
}

/// The daemon's config with `tail` (a `[mail]` section, rule tables) last.
fn config_with(ws: &Workspace, tail: &str) -> String {
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

{tail}"#,
        db = ws.db().display().to_string(),
        logs = logs.display().to_string(),
    )
}

fn alerts(ws: &Workspace) -> Vec<Value> {
    let db = ws.db();
    let v = walwatch_json(&["alerts", "--db", db.to_str().unwrap(), "--config", "/dev/null", "--format", "json"]);
    v.as_array().expect("alerts JSON is an array").clone()
}

/// The fixture's logs copied into the workspace's log directory.
fn copy_logs(ws: &Workspace) -> Vec<std::path::PathBuf> {
    let src = fs::read_dir(format!("{}/tests/fixtures/{FIXTURE}/log", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut logs = Vec::new();
    for entry in src {
        let path = entry.unwrap().path();
        let copy = ws.dir("log").join(path.file_name().unwrap());
        fs::copy(&path, &copy).unwrap();
        logs.push(copy);
    }
    logs
}

fn wait_for_both_alerts(daemon: &mut support::daemon::Daemon, ws: &Workspace) -> Vec<Value> {
    daemon.wait_until("alerts fired", || {
        let a = alerts(ws);
        let rules: BTreeSet<String> = a.iter().map(|x| x["rule"].as_str().unwrap().to_string()).collect();
        if rules.contains("forced_checkpoints") && rules.contains("too_frequent") {
            Ok(a)
        } else {
            Err(format!("alerts so far: {rules:?}"))
        }
    })
}

#[test]
fn daemon_fires_rules_and_mails_each_alert_once_through_an_outage_and_a_restart() {
    let ws = Workspace::new();
    let logs = copy_logs(&ws);
    let port = free_port();
    fs::write(ws.config_path(), config(&ws, port)).unwrap();

    // The SMTP server is down: the alerts fire and wait in the outbox.
    let mut daemon = ws.start();
    daemon.wait_running();
    let fired = wait_for_both_alerts(&mut daemon, &ws);
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

/// Alerts fired while no `[mail]` is configured are mailed once `[mail]` is
/// added and the daemon restarted; switching a rule off then closes its alert
/// as rule_disabled without a mail.
#[test]
fn daemon_mails_alerts_from_before_mail_was_configured_and_closes_a_disabled_rule_silently() {
    let ws = Workspace::new();
    copy_logs(&ws);
    fs::write(ws.config_path(), config_with(&ws, "")).unwrap();
    let mut daemon = ws.start();
    daemon.wait_running();
    let fired = wait_for_both_alerts(&mut daemon, &ws);
    std::thread::sleep(Duration::from_secs(1)); // an evaluation or more without a transport
    daemon.terminate();

    let port = free_port();
    let sink = SmtpSink::start(&ws.dir("smtp"), port, SinkOptions::default());
    fs::write(ws.config_path(), config(&ws, port)).unwrap();
    let mut daemon = ws.start();
    daemon.wait_running();
    let mails = sink.wait_for(fired.len(), Duration::from_secs(15));
    assert_eq!(mails.len(), fired.len(), "one FIRING mail per alert fired before [mail]");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(sink.messages().len(), fired.len(), "once");
    daemon.terminate();

    let off = format!("{}\n[alerts.too_frequent]\nenabled = false\n", support::smtp::mail_config(port));
    fs::write(ws.config_path(), config_with(&ws, &off)).unwrap();
    let mut daemon = ws.start();
    daemon.wait_running();
    let db = ws.db();
    daemon.wait_until("too_frequent closed", || {
        let all = walwatch_json(&[
            "alerts",
            "--db",
            db.to_str().unwrap(),
            "--config",
            "/dev/null",
            "--all",
            "--format",
            "json",
        ]);
        let tf = all.as_array().unwrap().iter().find(|a| a["rule"] == "too_frequent").cloned();
        tf.filter(|a| a["resolution"] == "rule_disabled").map(drop).ok_or_else(|| format!("{all}"))
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(sink.messages().len(), fired.len(), "no RESOLVED mail for a rule switched off");
    daemon.terminate();
}
