//! `walwatch status` as a monitor's check. Its exit status
//! follows the daemon (its heartbeat and its process together) and the
//! logs it follows; `-q` prints nothing; the daemon's journal carries state
//! changes, not one line per commit.

use crate::support;

use std::fs;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::daemon::{append, fixture, Workspace};
use support::{describe, walwatch};

const LOG: &str = "14-stderr-default-std";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn status(db: &Path, extra: &[&str]) -> Output {
    walwatch().args(["status", "--db", s(db)]).args(extra).output().unwrap()
}

/// `status --format json`: its exit status and its JSON.
fn status_json(db: &Path) -> (i32, Value) {
    let out = status(db, &["--format", "json"]);
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)));
    (out.status.code().unwrap(), json)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A store only imported into: no daemon is expected, so status exits 0
/// and says none ran, even when the imported log has grown since.
#[test]
fn a_store_no_daemon_ran_on_is_fine_without_one() {
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    fs::write(&log, fixture(LOG)).unwrap();
    let out = walwatch().args(["import", "--db", s(&ws.db()), "--cluster", "c", s(&log)]).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    append(&log, &vec![b'x'; 2 << 20]);
    let (code, json) = status_json(&ws.db());
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["daemon"]["state"], "never");
    assert_eq!(json["reasons"], Value::Array(vec![]));
    assert_eq!(json["clusters"][0]["behind"], Value::Array(vec![]), "an imported file is not followed");
    let table = stdout(&status(&ws.db(), &[]));
    assert!(table.starts_with("daemon: none has run on this store\n"), "{table}");
}

/// Running and caught up: 0. Paused (SIGSTOP: alive, heartbeat fresh) with
/// 2 MB appended: 6, "behind". Killed with `kill -9`: 5 at once, not after
/// the heartbeat ages (~20 s), because its pid is gone. Restarted and
/// stopped cleanly: 5, "stopped". `-q` prints nothing and exits the same.
#[test]
fn status_exit_codes_follow_the_daemon_and_its_logs() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config(&[("c", s(&dir.join("*.log")))]);
    let data = fixture(LOG);
    fs::write(&log, &data).unwrap();
    let mut daemon = ws.start();
    daemon.wait_read_to("c", &log, data.len() as u64);
    let (code, json) = status_json(&ws.db());
    assert_eq!((code, &json["daemon"]["state"], &json["exit_status"]), (0, &"running".into(), &0.into()), "{json}");
    assert_eq!(json["daemon"]["pid"], daemon.pid());

    daemon.signal("STOP");
    append(&log, &vec![b'x'; 2 << 20]);
    let (code, json) = status_json(&ws.db());
    let behind = format!("cluster c: {}: 2.1 MB not read yet", s(&log));
    assert_eq!(code, 6, "{json}");
    assert_eq!(json["reasons"], serde_json::json!([format!("behind: {behind}")]));
    let table = status(&ws.db(), &[]);
    assert_eq!(table.status.code(), Some(6));
    assert!(stdout(&table).contains(&format!("\n  behind: {}: 2.1 MB not read yet\n", s(&log))), "{}", stdout(&table));
    let quiet = walwatch().args(["-q", "status", "--db", s(&ws.db())]).output().unwrap();
    assert_eq!((quiet.status.code(), quiet.stdout.len(), quiet.stderr.len()), (Some(6), 0, 0), "{}", describe(&quiet));

    let pid = daemon.pid();
    let killed = Instant::now();
    daemon.kill9();
    let (code, json) = status_json(&ws.db());
    assert!(killed.elapsed() < Duration::from_secs(5), "the heartbeat was still fresh");
    assert_eq!(code, 5, "{json}");
    assert_eq!((&json["daemon"]["state"], &json["daemon"]["running"]), (&"not_running".into(), &false.into()));
    assert_eq!(json["reasons"][0], "the daemon is not running (it did not stop cleanly)");
    assert_eq!(json["reasons"][1], format!("behind: {behind}"), "both said, worst first");
    let table = stdout(&status(&ws.db(), &[]));
    let first = table.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("daemon: NOT running (pid {pid} gone or its heartbeat too old; last heartbeat "))
    );

    fs::write(&log, &data).unwrap();
    let mut daemon = ws.start();
    daemon.wait_read_to("c", &log, data.len() as u64);
    daemon.terminate();
    let (code, json) = status_json(&ws.db());
    assert_eq!(code, 5, "{json}");
    assert_eq!((&json["daemon"]["state"], &json["daemon"]["pid"]), (&"stopped".into(), &Value::Null));
    assert_eq!(json["reasons"], serde_json::json!(["the daemon was stopped"]));
    let table = stdout(&status(&ws.db(), &[]));
    assert!(table.starts_with("daemon: stopped (cleanly, at "), "{table}");
}

/// The journal at the default level (info): while the daemon stores chunk
/// after chunk, no line per commit (they are at debug).
#[test]
fn the_daemon_logs_no_info_line_per_commit() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config(&[("c", s(&dir.join("*.log")))]);
    let data = fixture(LOG);
    let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
    let chunk = lines.len() / 6;
    fs::write(&log, lines[..chunk].concat()).unwrap();
    let mut daemon = ws.start();
    daemon.wait_read_to("c", &log, lines[..chunk].concat().len() as u64);
    std::thread::sleep(Duration::from_millis(500));
    let journal = || fs::read_to_string(ws.path().join("daemon.log")).unwrap();
    let before = journal();
    for i in 2..=6 {
        let upto = if i == 6 { lines.len() } else { chunk * i };
        append(&log, &lines[chunk * (i - 1)..upto].concat());
        daemon.wait_read_to("c", &log, lines[..upto].concat().len() as u64);
    }
    let after = journal();
    let new = &after[before.len()..];
    assert!(!after.contains("Stored new events"), "per-commit lines at info:\n{after}");
    let info: Vec<&str> = new.lines().filter(|l| l.contains(" INFO ")).collect();
    assert!(info.is_empty(), "five commits, no state change, yet:\n{}", info.join("\n"));
    daemon.terminate();
}
