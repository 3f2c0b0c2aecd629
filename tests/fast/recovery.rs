//! The replay speed of crash recoveries, on real logs: the PostgreSQL 15
//! run killed with an immediate shutdown (`15-stderr-default-crashimm`)
//! and the standby promoted after replaying (`15-stderr-default-standby`).
//! The expected speed is read from the raw lines here, with none of
//! walwatch's code.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{describe, fixture_logs, walwatch, walwatch_json};

fn fixture_dir(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run)
}

fn import(db: &Path, cluster: &str, files: &[PathBuf]) {
    let mut cmd = walwatch();
    cmd.args(["import", "--db", db.to_str().unwrap(), "--cluster", cluster]).args(files);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "import {cluster}: {}", describe(&out));
}

/// The LSN after `marker` on the first line holding it, in bytes.
fn lsn_after(text: &str, marker: &str) -> u64 {
    let line = text.lines().find(|l| l.contains(marker)).unwrap();
    let lsn = line.split(marker).nth(1).unwrap().split_whitespace().next().unwrap();
    let (hi, lo) = lsn.split_once('/').unwrap();
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// The log time (seconds of the minute) of the first line holding `marker`.
fn second_of(text: &str, marker: &str) -> f64 {
    let line = text.lines().find(|l| l.contains(marker)).unwrap();
    line.split_whitespace().nth(1).unwrap()[6..].parse().unwrap()
}

fn settings(db: &Path, cluster: &str) -> Value {
    let json = walwatch_json(&["settings", "--db", db.to_str().unwrap(), "--cluster", cluster, "--format", "json"]);
    json[0].clone()
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The crash recovery's speed is the WAL from `redo starts` to `redo done`
/// over the `elapsed` PostgreSQL 15 logs; it is the cluster's, whatever
/// else is imported into it later, and `whatif` prices recovery with it.
/// The standby's replay (promoted after 5.30 s of waiting for WAL) is no
/// crash recovery and measures nothing.
#[test]
fn crash_recovery_speed_comes_from_the_log_and_a_standby_gives_none() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let crash_logs = fixture_logs(&fixture_dir("15-stderr-default-crashimm"));
    let text = std::fs::read_to_string(&crash_logs[1]).unwrap();
    let bytes = lsn_after(&text, "redo done at ") - lsn_after(&text, "redo starts at ");
    let elapsed: f64 = text.split("elapsed: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let expected = round1(bytes as f64 / 1_048_576.0 / elapsed);
    assert_eq!((bytes, elapsed, expected), (56_565_520, 0.16, 337.2));

    // One log at a time, and another server's run after them: the speed stays the cluster's.
    import(&db, "main", &crash_logs[..1]);
    assert_eq!(settings(&db, "main")["replay_mb_s"], Value::Null);
    import(&db, "main", &crash_logs[1..]);
    let s = settings(&db, "main");
    assert_eq!(s["replay_mb_s"].as_f64(), Some(expected));
    assert_eq!(s["replay_measured_at"], "2026-11-22T08:17:30.767+00:00");
    assert_eq!(s["crash_recoveries"], 1);

    let suggest = walwatch_json(&["suggest", "--db", db.to_str().unwrap(), "--cluster", "main", "--format", "json"]);
    assert_eq!(suggest["cost"]["replay_mb_s"].as_f64(), Some(expected));
    assert_eq!(suggest["cost"]["replay_measured_at"], "2026-11-22T08:17:30.767+00:00");
    let whatif = walwatch_json(&[
        "whatif",
        "--db",
        db.to_str().unwrap(),
        "--cluster",
        "main",
        "--max-wal-size",
        "1GB",
        "--format",
        "json",
    ]);
    let replay_mb = whatif[0]["max_replay_mb"].as_f64().unwrap();
    let at_speed = round1(replay_mb / (bytes as f64 / 1_048_576.0 / elapsed));
    assert_eq!(whatif[0]["recovery_s"].as_f64(), Some(at_speed));

    let standby = tmp.path().join("s.db");
    import(&standby, "standby", &fixture_logs(&fixture_dir("15-stderr-default-standby")));
    let s = settings(&standby, "standby");
    assert_eq!((&s["replay_mb_s"], s["crash_recoveries"].as_u64()), (&Value::Null, Some(0)));
}

/// Before PostgreSQL 14 `redo done` logs no elapsed time: the replay lies
/// between the `redo starts` and `redo done` lines, and their log times
/// time it. The real recovery above, with the line as 13 writes it.
#[test]
fn without_elapsed_the_log_times_time_the_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = fixture_logs(&fixture_dir("15-stderr-default-crashimm"));
    let text = std::fs::read_to_string(&logs[1]).unwrap();
    let cut: String = text
        .lines()
        .map(|l| match l.find(" system usage: ") {
            Some(i) if l.contains("redo done at ") => format!("{}\n", &l[..i]),
            _ => format!("{l}\n"),
        })
        .collect();
    assert!(!cut.contains("elapsed"));
    let file = tmp.path().join("postgresql.log");
    std::fs::write(&file, &cut).unwrap();
    let db = tmp.path().join("r.db");
    import(&db, "main", &[file]);
    let bytes = lsn_after(&cut, "redo done at ") - lsn_after(&cut, "redo starts at ");
    let seconds = second_of(&cut, "redo done at ") - second_of(&cut, "redo starts at ");
    let expected = round1(bytes as f64 / 1_048_576.0 / seconds);
    assert_eq!(expected, 319.2);
    assert_eq!(settings(&db, "main")["replay_mb_s"].as_f64(), Some(expected));
}
