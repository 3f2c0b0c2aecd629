//! The RHEL/PGDG layout on a real PostgreSQL 15: the log in
//! `$PGDATA/log`, `$PGDATA` 0700 postgres's, walwatch following
//! `data_directory` as its own user. It cannot read `current_logfiles`:
//! `config check` and `status` say so with the fix (status exits 4), the
//! daemon warns once and the `logs_not_read` alert fires. With the fix the
//! README and the unit file give (log_file_mode = 0640, `chmod 0750` of
//! `$PGDATA` and its log, the service in group postgres) it reads the log,
//! and what it stores equals the independent counter.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::daemon::{as_user, status, status_exit, Daemon, Workspace, STATUS_PROBLEMS};
use support::truth::Truth;
use support::{describe, PgCluster, StopMode};

const SETTINGS: &[(&str, &str)] = &[
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    // RHEL/PGDG: the log inside the data directory.
    ("log_directory", "'log'"),
    ("log_file_mode", "0640"),
    ("log_checkpoints", "on"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
];

/// The walwatch user of the test: no member of group postgres.
const USER: &str = "nobody";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn problems(db: &Path) -> Result<Vec<String>, String> {
    let st = status(db)?;
    let list = st["clusters"][0]["problems"].as_array().cloned().unwrap_or_default();
    Ok(list.iter().filter_map(|p| p.as_str().map(String::from)).collect())
}

fn log_files(data: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        fs::read_dir(data.join("log")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn a_pgdg_data_directory_walwatch_may_not_read_is_a_problem_until_the_documented_fix() {
    assert!(is_root(), "this test runs walwatch as {USER} and the server as postgres: run it as root (CI does)");
    let mut pg = PgCluster::init(SETTINGS);
    pg.start();
    pg.psql(
        "CREATE TABLE t AS SELECT g FROM generate_series(1, 100000) g; CHECKPOINT; UPDATE t SET g = g + 1; CHECKPOINT;",
    );
    let data = pg.data_dir();
    assert_eq!(fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o700, "initdb's $PGDATA");

    let ws = Workspace::new();
    assert!(Command::new("chown").args([&format!("{USER}:"), s(ws.path())]).status().unwrap().success());
    let config = format!(
        "[store]\npath = {:?}\n[daemon]\npoll_interval = \"200ms\"\n[[cluster]]\nname = \"pg\"\ndata_directory = {:?}\n",
        s(&ws.db()),
        s(&data)
    );
    fs::write(ws.config_path(), config).unwrap();
    let current = data.join("current_logfiles");
    let want = format!(
        "{}: cannot read: Permission denied (os error 13); RHEL/PGDG keep $PGDATA and its log private to postgres",
        current.display()
    );

    // `config check` as the service's user says it before the daemon runs.
    let check = as_user(USER, None).args(["config", "check", "--config", s(&ws.config_path())]).output().unwrap();
    assert!(check.status.success(), "{}", describe(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains(&format!("warning: cluster pg: {want}")),
        "{}",
        describe(&check)
    );

    let log = ws.path().join("daemon.log");
    let mut daemon = Daemon::start_as(USER, &ws.config_path(), &ws.db(), &log);
    daemon.wait_running();
    let db = ws.db();
    let found = daemon.wait_until("the problem in status", || {
        let list = problems(&db)?;
        list.iter().find(|p| p.starts_with(&want)).cloned().ok_or(format!("{list:?}"))
    });
    assert!(found.contains("SupplementaryGroups=postgres"), "{found}");
    assert_eq!(status_exit(&db), Some(STATUS_PROBLEMS));
    daemon.wait_until("the logs_not_read alert", || {
        let out = support::walwatch().args(["alerts", "--db", s(&db), "--format", "json"]).output().unwrap();
        let alerts: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        let fired = alerts.as_array().into_iter().flatten().any(|a| a["rule"] == "logs_not_read");
        fired.then_some(()).ok_or(format!("{alerts}"))
    });
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert_eq!(
        daemon.full_log().matches("Cannot follow the cluster's logs there.").count(),
        1,
        "{}",
        daemon.full_log()
    );
    daemon.terminate();

    // The documented fix: group access on the way down to the log (the
    // cluster's temporary directory stands for /var/lib/pgsql), the
    // service in group postgres.
    for dir in [pg.path().to_path_buf(), data.clone(), data.join("log")] {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
    }
    pg.stop(StopMode::Fast);
    pg.start();
    let mut daemon = Daemon::start_as_in(USER, "postgres", &ws.config_path(), &ws.db(), &log);
    daemon.wait_running();
    daemon.wait_until("no problem left", || match problems(&db)? {
        list if list.is_empty() => Ok(()),
        list => Err(format!("{list:?}")),
    });
    let files = log_files(&data);
    let size: u64 = files.iter().map(|f| fs::metadata(f).unwrap().len()).sum();
    daemon.wait_until("the log read to its end", || {
        let st = status(&db)?;
        let read: u64 =
            st["clusters"][0]["files"].as_array().into_iter().flatten().filter_map(|f| f["offset"].as_u64()).sum();
        (read == size).then_some(()).ok_or(format!("read {read} of {size}: {st}"))
    });
    assert_eq!(status_exit(&db), Some(0));
    daemon.terminate();
    let truth = Truth::from_files(&files);
    assert!(truth.starts >= 2, "the two CHECKPOINTs at least: {}", truth.brief());
    let out = support::walwatch().args(["summary", "--db", s(&db), "--format", "json"]).output().unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (path, n) in truth.expected_summary() {
        assert_eq!(path.split('.').fold(&summary, |v, k| &v[k]).as_i64(), Some(n), "{path}: {}", truth.brief());
    }
    assert_eq!(summary["unmatched"], 0);
}
