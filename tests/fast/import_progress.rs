//! `import`'s progress bar (on a terminal's stderr only, after a second) and
//! the cluster name it derives from a data directory's log path.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::import_behaviour::{fixture, ok};

/// A shell command that feeds `log` to `walwatch import -` in two parts two
/// seconds apart: an import longer than the bar's one-second delay, whatever
/// the machine's speed.
fn slow_import(db: &Path, log: &Path) -> String {
    let (log, bin, db) = (log.display(), env!("CARGO_BIN_EXE_walwatch"), db.display());
    format!("(head -c 8000 '{log}'; sleep 2; tail -c +8001 '{log}') | '{bin}' import --db '{db}' -")
}

#[test]
fn on_a_terminal_a_slow_import_shows_bytes_and_events_then_its_report() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = slow_import(&tmp.path().join("w.db"), &fixture("15-stderr-default-std"));
    // util-linux's script runs the command under a pseudo-terminal and
    // copies what it wrote there to its own stdout.
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().expect("script (util-linux) runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}{}", String::from_utf8_lossy(&out.stderr));
    assert!(screen.contains("15.07 KiB") && screen.contains("86 events"), "no progress bar: {screen:?}");
    // Cleared (erase line) before the report, which follows in full.
    let report = screen.find("- (cluster default").expect("report");
    assert!(screen[..report].contains("\u{1b}[2K"), "bar not cleared: {screen:?}");
    assert!(screen[report..].contains("new in store 86"), "{screen:?}");
}

#[test]
fn quiet_shows_no_bar_even_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd =
        slow_import(&tmp.path().join("w.db"), &fixture("15-stderr-default-std")).replace(" import ", " -q import ");
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().expect("script (util-linux) runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(screen, "", "-q prints errors only");
}

#[test]
fn without_a_terminal_stderr_has_no_bar() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let out = Command::new("sh").args(["-c", &slow_import(&db, &fixture("15-stderr-default-std"))]).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr, format!("walwatch: created the store {}\n", db.display()));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("- (cluster default") && !stdout.contains('\u{1b}'), "{stdout:?}");
}

#[test]
fn a_log_under_a_data_directory_is_named_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let log_dir = tmp.path().join("mydata/log");
    std::fs::create_dir_all(&log_dir).unwrap();
    let log = log_dir.join("postgresql-2026-11-22_080420.log");
    std::fs::copy(fixture("15-stderr-default-std"), &log).unwrap();
    let db = tmp.path().join("w.db");
    let report = ok(&["import", "--db", db.to_str().unwrap(), log.to_str().unwrap()]);
    assert!(report.contains("(cluster mydata,"), "{report}");
    let rows: Value =
        serde_json::from_str(&ok(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 28);
    assert!(rows.iter().all(|r| r["cluster"] == "mydata"), "{rows:?}");
}
