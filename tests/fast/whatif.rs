//! `walwatch whatif` on the real fixture logs: the replay under the
//! settings in force on every fixture run, pinned exactly, and held to the
//! log (the checkpoints no setting decides equal, the WAL-triggered ones
//! within 20 % or 4); under other sizes, the exact JSON of one run; and a value
//! PostgreSQL would refuse is an error, exit 1, not a panic.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{describe, fixture_dirs, fixture_logs, walwatch, walwatch_json};

/// The fixture run imported into a fresh store named after it.
fn import(dir: &Path, tmp: &Path) -> (PathBuf, String) {
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    let db = tmp.join(format!("{name}.db"));
    let mut cmd = walwatch();
    cmd.args(["import", "--db", db.to_str().unwrap(), "--cluster", &name]);
    cmd.args(fixture_logs(dir));
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "import {name}: {}", describe(&out));
    (db, name)
}

/// What the replay under the settings in force gives on each fixture run:
/// checkpoints by trigger (shutdown, end-of-recovery, wal, time, manual),
/// "too frequently" warnings, peak pg_wal and the worst replay, MB.
///
/// The fixtures are short runs at 32MB then 64MB, where the first cycles'
/// WAL comes in bursts (pgbench's load, then its index builds) that the
/// even rate between two logged starts spreads out: the replay finds a
/// few more WAL checkpoints there than the log (up to 7 on 65), and fewer on
/// the forged runs of a few cycles. Checkpoints no setting decides are the
/// log's own.
const REPLAYED: [(&str, [i64; 5], i64, f64, f64); 22] = [
    ("13-csvlog-std", [1, 0, 60, 3, 1], 60, 80.0, 48.3),
    ("13-stderr-default-std", [1, 0, 29, 3, 1], 29, 80.0, 48.1),
    ("14-stderr-default-std", [1, 0, 42, 3, 1], 42, 80.0, 57.7),
    ("15-csvlog-forged", [1, 0, 7, 0, 1], 7, 80.0, 43.2),
    ("15-jsonlog-std", [1, 0, 72, 4, 1], 72, 80.0, 61.2),
    ("15-stderr-backend-forged", [1, 0, 3, 0, 1], 3, 96.0, 75.0),
    ("15-stderr-default-crashimm", [1, 1, 70, 3, 2], 70, 80.0, 61.1),
    ("15-stderr-default-forged", [1, 0, 3, 0, 1], 3, 80.0, 69.7),
    ("15-stderr-default-i18n-de", [1, 0, 37, 3, 1], 37, 80.0, 54.8),
    ("15-stderr-default-i18n-fr", [1, 0, 38, 4, 1], 38, 80.0, 56.9),
    ("15-stderr-default-i18n-ja", [1, 0, 37, 4, 1], 37, 80.0, 56.8),
    ("15-stderr-default-noise", [1, 0, 11, 0, 1], 11, 96.0, 68.3),
    ("15-stderr-default-primary", [1, 0, 32, 3, 1], 32, 80.0, 60.9),
    ("15-stderr-default-standby", [1, 0, 3, 0, 1], 3, 80.0, 58.2),
    ("15-stderr-default-std", [1, 0, 27, 3, 1], 27, 80.0, 53.5),
    ("15-stderr-pgbadger-std", [0, 0, 26, 4, 1], 26, 80.0, 52.7),
    ("16-jsonlog-std", [1, 0, 36, 4, 1], 36, 80.0, 61.2),
    ("16-stderr-default-std", [1, 0, 61, 4, 1], 61, 80.0, 61.1),
    ("17-csvlog-std", [1, 0, 34, 4, 1], 34, 80.0, 52.7),
    ("17-stderr-default-std", [1, 0, 59, 4, 1], 60, 80.0, 61.2),
    ("18-jsonlog-forged", [1, 0, 4, 0, 1], 4, 96.0, 71.5),
    ("18-stderr-pgbadger-std", [0, 0, 35, 0, 1], 35, 80.0, 58.6),
];

const TRIGGERS: [&str; 5] = ["shutdown", "end-of-recovery", "wal", "time", "manual"];

#[test]
fn the_settings_in_force_replay_each_fixture_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = fixture_dirs();
    assert_eq!(dirs.len(), REPLAYED.len());
    for (dir, (run, triggers, too_frequent, peak, replay)) in dirs.iter().zip(REPLAYED) {
        let (db, name) = import(dir, tmp.path());
        assert_eq!(name, run);
        let db = db.to_str().unwrap();
        let whatif = walwatch_json(&["whatif", "--db", db, "--cluster", &name, "--format", "json"]);
        let summary = walwatch_json(&["summary", "--db", db, "--cluster", &name, "--format", "json"]);
        let row = &whatif.as_array().unwrap()[..];
        assert_eq!(row.len(), 1, "{name}: one row, the settings in force");
        let got: Vec<i64> = TRIGGERS.iter().map(|t| row[0]["checkpoints"][t].as_i64().unwrap()).collect();
        assert_eq!(got, triggers, "{name}");
        assert_eq!(row[0]["too_frequent"], too_frequent, "{name}");
        assert_eq!(row[0]["peak_pg_wal_mb"].as_f64(), Some(peak), "{name}");
        assert_eq!(row[0]["max_replay_mb"].as_f64(), Some(replay), "{name}");
        // The checkpoints no setting decides are the log's own, and the
        // replayed WAL checkpoints stay within 20 % (or 4) of the log's: 4
        // for the noise run, whose max_wal_size no line states (inferred
        // from its distances).
        for t in ["end-of-recovery", "manual"] {
            assert_eq!(row[0]["checkpoints"][t], summary["checkpoints"]["by_trigger"][t], "{name} {t}");
        }
        let logged = summary["checkpoints"]["by_trigger"]["wal"].as_i64().unwrap();
        assert!((triggers[2] - logged).abs() <= (logged / 5).max(4), "{name}: {} against {logged}", triggers[2]);
    }
}

#[test]
fn other_sizes_replay_the_same_timeline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture_dirs().into_iter().find(|d| d.ends_with("15-stderr-default-crashimm")).unwrap();
    let (db, name) = import(&dir, tmp.path());
    let db = db.to_str().unwrap();
    // Several values after one flag, and the flag again.
    let args = ["whatif", "--db", db, "--cluster", &name, "--max-wal-size", "32MB", "64MB", "--max-wal-size", "1GB"];
    let json = walwatch_json(&[&args[..], &["--format", "json"]].concat());
    let expected: Value = serde_json::from_str(
        r#"[{"max_wal_size_mb": 32, "checkpoint_timeout_s": 30, "checkpoints": {"shutdown": 1, "end-of-recovery": 1, "wal": 76, "time": 3, "manual": 2}, "too_frequent": 76, "peak_pg_wal_mb": 80.0, "max_replay_mb": 33.8, "recovery_s": 0.1}, {"max_wal_size_mb": 64, "checkpoint_timeout_s": 30, "checkpoints": {"shutdown": 1, "end-of-recovery": 1, "wal": 37, "time": 4, "manual": 2}, "too_frequent": 37, "peak_pg_wal_mb": 80.0, "max_replay_mb": 61.4, "recovery_s": 0.2}, {"max_wal_size_mb": 1024, "checkpoint_timeout_s": 30, "checkpoints": {"shutdown": 1, "end-of-recovery": 1, "wal": 1, "time": 6, "manual": 2}, "too_frequent": 1, "peak_pg_wal_mb": 768.0, "max_replay_mb": 740.2, "recovery_s": 2.2}]"#,
    )
    .unwrap();
    assert_eq!(json, expected);
    // The table says what the replay cannot know.
    let out = walwatch().args(args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Full-page writes follow each checkpoint"), "{text}");
}

#[test]
fn a_value_postgresql_would_refuse_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture_dirs().into_iter().find(|d| d.ends_with("15-stderr-default-std")).unwrap();
    let (db, name) = import(&dir, tmp.path());
    let db = db.to_str().unwrap();
    for (flag, value, said) in [
        ("--max-wal-size", "16MB", "at least 2 WAL segments"),
        ("--max-wal-size", "lots", "not a number"),
        ("--checkpoint-timeout", "10s", "between 30 and 86400 s"),
        ("--checkpoint-completion-target", "1.5", "between 0 and 1"),
    ] {
        let out = walwatch().args(["whatif", "--db", db, "--cluster", &name, flag, value]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{flag} {value}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{flag} \"{value}\"")) && err.contains(said), "{flag} {value}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_window_replays_from_the_checkpoint_before_it() {
    // A minute inside the crashimm run's 32MB load: the replay starts at the
    // checkpoint before 08:14:00 and counts what starts in the window, the
    // same 50 WAL-triggered checkpoints and warnings as the log.
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture_dirs().into_iter().find(|d| d.ends_with("15-stderr-default-crashimm")).unwrap();
    let (db, name) = import(&dir, tmp.path());
    let db = db.to_str().unwrap();
    let window = ["--since", "2026-11-22T08:14:00Z", "--until", "2026-11-22T08:15:00Z"];
    let json = walwatch_json(&[&["whatif", "--db", db, "--cluster", &name, "--format", "json"][..], &window].concat());
    let summary =
        walwatch_json(&[&["summary", "--db", db, "--cluster", &name, "--format", "json"][..], &window].concat());
    assert_eq!(json[0]["checkpoints"], summary["checkpoints"]["by_trigger"]);
    assert_eq!(json[0]["checkpoints"]["wal"], 50);
    assert_eq!(json[0]["too_frequent"], 50);
    assert_eq!(summary["too_frequent"], 50);
    assert_eq!(json[0]["max_replay_mb"].as_f64(), Some(31.0));
}
