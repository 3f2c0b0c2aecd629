//! A stderr log without times (a real PostgreSQL 15 server with
//! `log_line_prefix = ''`, tests/fixtures/undated/README.md): refused by a
//! plain import, whose message names `--undated`; read in file order by
//! `import --undated`, which reports and stores nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

fn walwatch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap()
}

#[test]
fn a_log_without_times_is_refused_naming_undated() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture("undated/postgresql-15.log");
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "postgresql-15.log: log_line_prefix \"\" has no time escape (%m, %t or %n): walwatch cannot date the \
             events; add %m to log_line_prefix, or read the file in its order with `walwatch import --undated` \
             (counts, triggers and distances; nothing stored)"
        ),
        "{err}"
    );
}

#[test]
fn undated_reads_the_log_in_file_order_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture("undated/postgresql-15.log");
    let out = walwatch(&["import", "--undated", "--db", db.to_str().unwrap(), log.to_str().unwrap()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // The log's eight checkpoints: two CHECKPOINTs, four by WAL, one by
    // time, the shutdown's; distances 0, 15358, 27161, 31573, 25283, 28866,
    // 831 and 0 kB, the largest estimate 31573 kB.
    let want = format!(
        "{} (undated: stderr, prefix '', read in file order; nothing stored)
  lines 35, entries 35
  events: checkpoint_complete 8, checkpoint_start 8, server_ready 1, server_shutdown 1, server_start 1, shutdown_request 1, too_frequent 5
  rejected 0, unmatched 0, unparsed 0
  checkpoints: started 8, completed 8; by trigger: shutdown 1, end-of-recovery 0, wal 4, time 1, manual 2
    distance (kB): 8 known, smallest 0, median 25,283, largest 31,573; estimate at most 31,573
    max_wal_size: for checkpoints 31,573 kB apart to start by time rather than by WAL, it must exceed 59,989 kB (59 MB) = largest distance x (1 + checkpoint_completion_target 0.9, the default since PostgreSQL 14; the log does not set it)
  without times, how often checkpoints come, the WAL rate and what checkpoint_timeout needs cannot be said: add %m to log_line_prefix
",
        log.display()
    );
    assert_eq!(stdout, want);
    assert!(!db.exists(), "nothing stored: no store is even created");
}

/// `--report json`: the same figures as the text, and every point in file
/// order with its line, trigger and distance.
#[test]
fn undated_reports_as_json() {
    let log = fixture("undated/postgresql-15.log");
    let out = walwatch(&["import", "--undated", "--report", "json", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let files: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(files.as_array().unwrap().len(), 1);
    let r = &files[0];
    assert_eq!(
        (r["mode"].as_str(), r["format"].as_str(), r["prefix"].as_str()),
        (Some("undated"), Some("stderr"), Some(""))
    );
    assert_eq!((r["lines"].as_u64(), r["entries"].as_u64()), (Some(35), Some(35)));
    assert_eq!(r["events"]["too_frequent"], 5);
    let c = &r["checkpoints"];
    assert_eq!((c["started"].as_u64(), c["completed"].as_u64(), c["truncated"].as_u64()), (Some(8), Some(8), Some(0)));
    assert_eq!(
        c["by_trigger"],
        serde_json::json!({"shutdown": 1, "end-of-recovery": 0, "wal": 4, "time": 1, "manual": 2})
    );
    assert_eq!(c["distance_kb"], serde_json::json!({"known": 8, "smallest": 0, "median": 25283, "largest": 31573}));
    assert_eq!((c["estimate_kb_max"].as_i64(), c["max_wal_size_must_exceed_kb"].as_i64()), (Some(31573), Some(59989)));
    assert!(r["restartpoints"].is_null());
    assert_eq!(r["checkpoint_completion_target"], serde_json::json!({"value": 0.9, "source": "default"}));
    let points = r["points"].as_array().unwrap();
    let triggers: Vec<&str> = points.iter().map(|p| p["trigger"].as_str().unwrap()).collect();
    let distances: Vec<i64> = points.iter().map(|p| p["distance_kb"].as_i64().unwrap()).collect();
    assert_eq!(triggers, ["manual", "wal", "wal", "wal", "wal", "manual", "time", "shutdown"]);
    assert_eq!(distances, [0, 15358, 27161, 31573, 25283, 28866, 831, 0]);
    assert!(points.iter().all(|p| p["kind"] == "checkpoint" && p["completed"] == true && p["truncated"] == false));
    let lines: Vec<u64> = points.iter().map(|p| p["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [5, 9, 13, 17, 21, 25, 27, 33]);
}

/// A log whose lines are dated is imported as such, never undated.
#[test]
fn undated_refuses_a_dated_log() {
    let log = fixture("cut/postgresql-15.log");
    let out = walwatch(&["import", "--undated", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("dates its lines: import it without --undated"), "{err}");
    let file = fixture("17-csvlog-std/log/postgresql-2026-11-22_082519.csv");
    let out = walwatch(&["import", "--undated", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--undated reads stderr logs whose log_line_prefix has no time; this is a csvlog log"),
        "{err}"
    );
}
