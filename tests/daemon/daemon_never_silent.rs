//! The daemon never follows nothing silently, and nothing is used up by a
//! mistake: a log directory it may not list is a warning in
//! its log (once), a problem in `walwatch status` with the permission fix
//! (exit status 4) and a `logs_not_read` alert, until it can read it; a log
//! whose lines do not fit the configured prefix is not recorded as read,
//! and a restart with the prefix fixed reads it whole; a changed setting
//! makes it read the cluster's files again.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::daemon::{fixture, status, status_exit, Daemon, Workspace, STATUS_PROBLEMS};

/// 116 lines: 28 checkpoints, 24 too-frequent warnings, 1 parameter change.
const STD: &str = "15-stderr-default-std";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// The problems `status` lists for the only cluster.
fn problems(db: &Path) -> Result<Vec<String>, String> {
    let st = status(db)?;
    let list = st["clusters"][0]["problems"].as_array().cloned().unwrap_or_default();
    Ok(list.iter().filter_map(|p| p.as_str().map(String::from)).collect())
}

fn open_alerts(db: &Path) -> Value {
    let out = support::walwatch().args(["alerts", "--db", s(db), "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", support::describe(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// As root, the daemon runs as the user postgres, and the log directory
/// is root's with mode 0700 (as a RHEL/PGDG `$PGDATA` is postgres's);
/// otherwise the directory is made 0000 for the user running the tests.
#[test]
fn an_unreadable_log_directory_is_a_problem_with_its_fix_a_warning_once_and_an_alert() {
    let ws = Workspace::new();
    let logs = ws.dir("log");
    fs::write(logs.join("postgresql.log"), fixture(STD)).unwrap();
    ws.write_config(&[("c", &format!("{}/*.log", logs.display()))]);
    let mut daemon = if is_root() {
        let owner = Command::new("chown").args(["postgres:", s(ws.path())]).status().unwrap();
        assert!(owner.success());
        chmod(&logs, 0o700);
        Daemon::start_as("postgres", &ws.config_path(), &ws.db(), &ws.path().join("daemon.log"))
    } else {
        chmod(&logs, 0o000);
        ws.start()
    };
    daemon.wait_running();
    let db = ws.db();
    let want = format!(
        "{}: cannot list the directory: Permission denied (os error 13); RHEL/PGDG keep $PGDATA and its log private to postgres",
        logs.display()
    );
    let found = daemon.wait_until("the problem in status", || {
        let list = problems(&db)?;
        list.iter().find(|p| p.starts_with(&want)).cloned().ok_or(format!("{list:?}"))
    });
    assert!(found.contains("SupplementaryGroups=postgres"), "the fix: {found}");
    assert_eq!(status_exit(&db), Some(STATUS_PROBLEMS));
    let table = support::walwatch().args(["status", "--db", s(&db)]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&table.stdout).contains(&format!("  problem: {want}")),
        "{}",
        support::describe(&table)
    );
    daemon.wait_until("the logs_not_read alert", || {
        let alerts = open_alerts(&db);
        let fired = alerts.as_array().into_iter().flatten().find(|a| a["rule"] == "logs_not_read");
        fired.map(|a| a["summary"].to_string()).ok_or(format!("{alerts}"))
    });
    // Several rounds later, the log still says it once.
    std::thread::sleep(Duration::from_millis(1000));
    let warned = daemon.full_log().matches("Cannot follow the cluster's logs there.").count();
    assert_eq!(warned, 1, "{}", daemon.full_log());

    // Readable again: the file is read whole, the problem goes, status exits 0.
    chmod(&logs, 0o755);
    let size = fixture(STD).len() as u64;
    daemon.wait_read_to("c", &logs.join("postgresql.log"), size);
    daemon.wait_until("no problem left", || match problems(&db)? {
        list if list.is_empty() => Ok(()),
        list => Err(format!("{list:?}")),
    });
    assert_eq!(status_exit(&db), Some(0));
    assert!(daemon.full_log().contains("A problem with the cluster's logs is gone."), "{}", daemon.full_log());
    daemon.terminate();
}

fn config_with_prefix(ws: &Workspace, logs: &Path, prefix: &str) {
    ws.write_config(&[("c", &format!("{}/*.log", logs.display()))]);
    let text = fs::read_to_string(ws.config_path()).unwrap();
    fs::write(ws.config_path(), format!("{text}format = \"stderr\"\nprefix = {prefix:?}\n")).unwrap();
}

/// The sources the store knows, by when they were first read (an id may be
/// reused once its row is gone).
fn source_ids(db: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT first_read FROM source ORDER BY id").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

/// A prefix that reads none of the log's lines (seconds instead of
/// milliseconds): a problem naming it and the first line, nothing recorded
/// as read; the prefix fixed, a restart reads the file whole; another
/// setting that also fits, and the daemon forgets and reads it again.
#[test]
fn a_wrong_prefix_uses_nothing_up_and_a_changed_setting_reads_the_cluster_again() {
    let ws = Workspace::new();
    let logs = ws.dir("log");
    let log = logs.join("postgresql.log");
    fs::write(&log, fixture(STD)).unwrap();
    let db = ws.db();
    config_with_prefix(&ws, &logs, "%t [%p] ");
    let mut daemon = ws.start();
    daemon.wait_running();
    // (The last line may still be held back, waiting for its HINT: 85 or 86 lines.)
    let misfit = format!("{}: 8", log.display());
    let parts = [
        " line(s) look like PostgreSQL events but none could be read as one (",
        " did not fit the stderr format with log_line_prefix '%t [%p] ', 0 were refused as forged, 0 could not be read); nothing of it was recorded as read; first such line (line 1): 2026-11-22 08:04:20.708 UTC [21752] LOG:  starting PostgreSQL 15.18",
        "; set format and prefix in the cluster's [[cluster]] table",
    ];
    daemon.wait_until("the misfit in status", || {
        let list = problems(&db)?;
        let named = |p: &&String| p.starts_with(&misfit) && parts.iter().all(|part| p.contains(part));
        list.iter().find(named).map(drop).ok_or(format!("{list:?}"))
    });
    assert_eq!(status_exit(&db), Some(STATUS_PROBLEMS));
    assert_eq!(source_ids(&db), Vec::<i64>::new(), "nothing recorded as read");
    daemon.terminate();

    let reference = ws.reference("c", &[&fixture(STD)]);
    config_with_prefix(&ws, &logs, "%m [%p] %q%u@%d ");
    let mut daemon = ws.start();
    daemon.wait_equal("c", &reference);
    daemon.wait_until("no problem left", || match problems(&db)? {
        list if list.is_empty() => Ok(()),
        list => Err(format!("{list:?}")),
    });
    assert_eq!(status_exit(&db), Some(0));
    daemon.terminate();
    let first = source_ids(&db);
    assert_eq!(first.len(), 1);

    // Another prefix that fits this log as well: said, forgotten, read again.
    config_with_prefix(&ws, &logs, "%m [%p] ");
    let mut daemon = ws.start();
    daemon.wait_until("the file read again", || match source_ids(&db) {
        ids if ids.len() == 1 && ids != first => Ok(()),
        ids => Err(format!("sources {ids:?}")),
    });
    daemon.wait_equal("c", &reference);
    let said = "The cluster's format or prefix setting changed: forgetting what was read of its 1 file(s) still present, to read them again (0 gone keep their events).";
    assert_eq!(daemon.full_log().matches(said).count(), 1, "{}", daemon.full_log());
    daemon.terminate();
}
