//! An operator in the store's group queries the service's
//! store without sudo, while the daemon runs and after it stopped, and
//! writes nothing there; a user outside the group is told why not.
//!
//! The layout the unit makes (StateDirectoryMode=0750, UMask=0027, group
//! walwatch): here a directory root:G 2750 (setgid, so the daemon's files
//! get group G as the service's get walwatch) and the store's files 0640.
//! The operator is `nobody` with G as its only supplementary group (setpriv
//! sets it by number: no user or group is added to the machine). Needs
//! root, and fails rather than skips without it (CI runs as root).

use crate::support;

use std::fs::{self, Permissions};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use support::daemon::{fixture, Daemon, Workspace};
use support::{describe, walwatch};

const LOG: &str = "14-stderr-default-std";
/// A gid no group of the machine has (checked).
const GID: u32 = 47_113;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// walwatch as `nobody`, with group [`GID`] or no supplementary group.
fn operator(in_group: bool, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup"]);
    match in_group {
        true => c.arg(format!("--groups={GID}")),
        false => c.arg("--clear-groups"),
    };
    c.arg(env!("CARGO_BIN_EXE_walwatch")).args(args).current_dir("/");
    c.env_remove("WALWATCH_DB").env_remove("WALWATCH_CONFIG").output().unwrap()
}

/// The store directory's entries: name, owner, group and mode.
fn listing(dir: &Path) -> Vec<(String, u32, u32, u32)> {
    let mut out: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (e.file_name().to_string_lossy().into_owned(), m.uid(), m.gid(), m.mode() & 0o7777)
        })
        .collect();
    out.sort();
    out
}

fn store_files(db: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm"].iter().map(|x| PathBuf::from(format!("{}{x}", s(db)))).collect()
}

/// The queries an operator runs; status must exit `status`, the others 0.
fn queries(db: &Path, status: i32) -> Vec<Value> {
    let mut out = Vec::new();
    for q in [&["status"][..], &["checkpoints"], &["summary"], &["alerts"], &["suggest"], &["history"]] {
        let args = [q, &["--db", s(db), "--format", "json"]].concat();
        let got = operator(true, &args);
        let want = if q[0] == "status" { status } else { 0 };
        assert_eq!(got.status.code(), Some(want), "{q:?} in the group: {}", describe(&got));
        out.push(serde_json::from_slice(&got.stdout).unwrap());
    }
    out
}

#[test]
fn an_operator_in_the_stores_group_queries_it_read_only() {
    assert!(is_root(), "this test runs walwatch as nobody with a group of its own: run it as root (CI does)");
    let taken = Command::new("getent").args(["group", &GID.to_string()]).output().unwrap();
    assert!(!taken.status.success(), "gid {GID} is a group of this machine: pick another for the test");

    let ws = Workspace::new();
    fs::set_permissions(ws.path(), Permissions::from_mode(0o755)).unwrap();
    let state = ws.dir("state");
    std::os::unix::fs::chown(&state, Some(0), Some(GID)).unwrap();
    fs::set_permissions(&state, Permissions::from_mode(0o2750)).unwrap();
    let db = state.join("walwatch.db");
    let logs = ws.dir("log");
    let log = logs.join("postgresql.log");
    let data = fixture(LOG);
    fs::write(&log, &data).unwrap();
    let config = ws.path().join("walwatch.toml");
    let text = format!("[store]\npath = {:?}\n[daemon]\npoll_interval = \"200ms\"\n", s(&db));
    fs::write(&config, text + &format!("[[cluster]]\nname = \"c\"\nlogs = [{:?}]\n", s(&logs.join("*.log")))).unwrap();

    let mut daemon = Daemon::start(&config, &db, &ws.path().join("daemon.log"));
    daemon.wait_read_to("c", &log, data.len() as u64);
    // As UMask=0027 makes them; SQLite keeps the mode of existing files.
    for f in store_files(&db) {
        assert_eq!(fs::metadata(&f).unwrap().gid(), GID, "{} inherits the directory's group", s(&f));
        fs::set_permissions(&f, Permissions::from_mode(0o640)).unwrap();
    }
    let before = listing(&state);

    let running = queries(&db, 0);
    assert_eq!(running[0]["daemon"]["state"], "running");
    let rows = running[1].as_array().unwrap();
    let root = walwatch().args(["checkpoints", "--db", s(&db), "--format", "json"]).output().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&root.stdout).unwrap(), running[1], "the same rows as root's");
    assert!(!rows.is_empty());
    assert_eq!(listing(&state), before, "the queries created or changed no file in the store's directory");

    // Stopped: the -wal and -shm stay (no checkpoint at close); read through them without a writer.
    daemon.terminate();
    let before = listing(&state);
    let stopped = queries(&db, 5);
    assert_eq!(stopped[0]["daemon"]["state"], "stopped");
    assert_eq!(stopped[1], running[1]);
    assert_eq!(listing(&state), before, "nothing created after the stop either");
    let import = operator(true, &["import", "--db", s(&db), "--cluster", "c", s(&log)]);
    assert_eq!(import.status.code(), Some(1), "{}", describe(&import));
    assert!(String::from_utf8_lossy(&import.stderr).contains(&format!("cannot write the store {}", s(&db))));
    assert_eq!(listing(&state), before, "nor by a refused import");

    // Outside the group: told why, not "no store".
    let out = operator(false, &["status", "--db", s(&db)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(
        err.trim_end(),
        format!(
            "walwatch: cannot read the store {}: Permission denied (os error 13) (the service's store is readable \
             by group walwatch: ask to be added to it, or run the command with sudo)",
            s(&db)
        )
    );
}
