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
    assert_eq!((s["crash_recoveries"].as_u64(), s["standby_replays"].as_u64()), (Some(1), Some(0)));

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
    assert_eq!(s["standby_replays"], 1);
    let out =
        walwatch().args(["settings", "--db", standby.to_str().unwrap(), "--cluster", "standby"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = "crash recovery replay speed: not measured (no crash recovery in the log); 1 standby or archive replay left out\n";
    assert!(text.contains(line), "{text}");
}

/// A point-in-time recovery of a real PostgreSQL 15 (`tests/fixtures/pitr`,
/// closed while it replayed: no read-only ready line) ends with an
/// end-of-recovery checkpoint like a crash recovery; its `archive recovery
/// complete` leaves its replay out, so the speed stays the crash's.
#[test]
fn a_point_in_time_recovery_is_no_crash_recovery() {
    let tmp = tempfile::tempdir().unwrap();
    let pitr = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pitr/pitr.log");
    let text = std::fs::read_to_string(&pitr).unwrap();
    assert!(text.contains("checkpoint starting: end-of-recovery") && !text.contains("read-only connections"));
    let db = tmp.path().join("p.db");
    import(&db, "main", std::slice::from_ref(&pitr));
    let s = settings(&db, "main");
    assert_eq!(
        (&s["replay_mb_s"], s["crash_recoveries"].as_u64(), s["standby_replays"].as_u64()),
        (&Value::Null, Some(0), Some(1))
    );

    // The crash recovery of another run, then the restore: the crash's speed alone.
    let crash_logs = fixture_logs(&fixture_dir("15-stderr-default-crashimm"));
    import(&db, "main", &crash_logs);
    let s = settings(&db, "main");
    assert_eq!(
        (s["replay_mb_s"].as_f64(), s["crash_recoveries"].as_u64(), s["standby_replays"].as_u64()),
        (Some(337.2), Some(1), Some(1))
    );
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

/// `suggest` with `[advice]` bounds written to a config file.
fn suggest_bounded(db: &Path, cluster: &str, advice: &str) -> Value {
    let config = db.with_extension("toml");
    std::fs::write(&config, format!("[advice]\n{advice}\n")).unwrap();
    let (db, config) = (db.to_str().unwrap(), config.to_str().unwrap());
    walwatch_json(&["suggest", "--config", config, "--db", db, "--cluster", cluster, "--format", "json"])
}

fn whatif_at(db: &Path, sizes: &[&str]) -> Vec<Value> {
    let mut args = vec!["whatif", "--db", db.to_str().unwrap(), "--format", "json", "--max-wal-size"];
    args.extend(sizes);
    walwatch_json(&args).as_array().unwrap().clone()
}

/// On the real crash run (time-driven at 1792MB, whose worst crash replays
/// in 2.4 s at the 337.2 MB/s its recovery showed): `max_recovery = "2s"`
/// holds the suggestion at the largest size `whatif` replays within 2 s,
/// 640MB, the next readable size (704MB) being beyond; the curve is
/// `whatif`'s own rows; `max_pg_wal` binds the same way; and on the
/// standby's log, with no crash recovery, the bound is unchecked.
#[test]
fn bounds_hold_the_suggestion_where_whatif_says() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("b.db");
    import(&db, "main", &fixture_logs(&fixture_dir("15-stderr-default-crashimm")));

    let s = suggest_bounded(&db, "main", "max_recovery = \"2s\"");
    let b = &s["bounds"];
    assert_eq!(s["suggested"]["max_wal_size_mb"], 640, "{s:#}");
    assert_eq!((b["limiting"].as_str(), b["time_driven_max_wal_size_mb"].as_u64()), (Some("max_recovery"), Some(1792)));
    assert_eq!((b["max_recovery"]["limit_s"].as_f64(), b["max_recovery"]["met"].as_bool()), (Some(2.0), Some(true)));
    assert_eq!(b["max_pg_wal"], Value::Null);
    // The replay speed from the raw lines, unrounded: 704MB's 686 MB take 2.03 s.
    let text = std::fs::read_to_string(&fixture_logs(&fixture_dir("15-stderr-default-crashimm"))[1]).unwrap();
    let mb = (lsn_after(&text, "redo done at ") - lsn_after(&text, "redo starts at ")) as f64 / 1_048_576.0;
    let speed = mb / 0.16;
    let w = whatif_at(&db, &["640MB", "704MB", "1792MB"]);
    let recovery = |i: usize| w[i]["max_replay_mb"].as_f64().unwrap() / speed;
    assert!(recovery(0) <= 2.0 && recovery(1) > 2.0 && recovery(2) > 2.0, "{w:?}");
    assert_eq!(b["max_recovery"]["recovery_s"], w[0]["recovery_s"]);
    assert_eq!(b["forced_at_suggested"], w[0]["checkpoints"]["wal"]);
    assert!(b["forced_at_suggested"].as_i64().unwrap() > 0);

    // The curve: current (64MB), half, the suggestion, twice it, and the time-driven size.
    let curve = s["curve"].as_array().unwrap();
    let sizes: Vec<u64> = curve.iter().map(|p| p["max_wal_size_mb"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [64, 320, 640, 1280, 1792]);
    let rows = whatif_at(&db, &["64MB", "320MB", "640MB", "1280MB", "1792MB"]);
    for (p, row) in curve.iter().zip(&rows) {
        let from_whatif =
            [&row["checkpoints"]["wal"], &row["too_frequent"], &row["peak_pg_wal_mb"], &row["recovery_s"]];
        assert_eq!([&p["forced"], &p["too_frequent"], &p["peak_pg_wal_mb"], &p["recovery_s"]], from_whatif);
    }

    let s = suggest_bounded(&db, "main", "max_pg_wal = \"512MB\"");
    let d = &s["bounds"]["max_pg_wal"];
    assert_eq!(s["bounds"]["limiting"], "max_pg_wal");
    assert_eq!((d["limit_mb"].as_u64(), d["met"].as_bool()), (Some(512), Some(true)));
    let size = s["suggested"]["max_wal_size_mb"].as_u64().unwrap();
    let w = whatif_at(&db, &[&format!("{size}MB"), &format!("{}MB", size + 64)]);
    assert!(w[0]["peak_pg_wal_mb"].as_f64().unwrap() <= 512.0, "{w:?}");
    assert!(w[1]["peak_pg_wal_mb"].as_f64().unwrap() > 512.0, "{w:?}");

    let standby = tmp.path().join("s.db");
    import(&standby, "standby", &fixture_logs(&fixture_dir("15-stderr-default-standby")));
    let s = suggest_bounded(&standby, "standby", "max_recovery = \"2s\"");
    let r = &s["bounds"]["max_recovery"];
    assert_eq!((&r["met"], &r["recovery_s"], &s["bounds"]["limiting"]), (&Value::Null, &Value::Null, &Value::Null));
    let explained = s["explanation"].as_array().unwrap().iter().any(|e| {
        e.as_str().unwrap().contains("max_recovery 2s cannot be checked: no crash recovery in this cluster's logs")
    });
    assert!(explained, "{s:#}");
}

/// The forced_checkpoints alert carries the same bounded suggestion as
/// `suggest`: its figure, its sentences and its SQL.
#[test]
fn the_forced_checkpoints_alert_carries_the_bounded_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("a.db");
    import(&db, "main", &fixture_logs(&fixture_dir("15-stderr-default-crashimm")));
    let config = tmp.path().join("a.toml");
    std::fs::write(&config, "[advice]\nmax_recovery = \"2s\"\n").unwrap();
    let (db, config) = (db.to_str().unwrap(), config.to_str().unwrap());
    let json = walwatch_json(&["analyze", "--config", config, "--db", db, "--format", "json"]);
    let findings = json["clusters"][0]["findings"].as_array().unwrap();
    let forced = findings.iter().find(|f| f["rule"] == "forced_checkpoints").expect("a forced_checkpoints finding");
    assert_eq!(forced["figures"]["suggested_max_wal_size_mb"], 640);
    assert_eq!(forced["suggestion"]["sql"], "ALTER SYSTEM SET max_wal_size = '640MB';\nSELECT pg_reload_conf();");
    let text: Vec<&str> =
        forced["suggestion"]["text"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(text.contains(&"Set max_wal_size to 640MB (now 64MB), held there by max_recovery."), "{text:#?}");
}

/// `[cluster.advice]`: the same real crash run stored as two clusters, one
/// with its own `max_recovery`: `suggest` holds that one's size where its
/// bound says (640MB at 2 s, as `[advice]` does above) and leaves the other
/// at `[advice]`'s, unbounded.
#[test]
fn a_clusters_own_advice_bounds_its_suggestion_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("two.db");
    let logs = fixture_logs(&fixture_dir("15-stderr-default-crashimm"));
    import(&db, "bounded", &logs);
    import(&db, "free", &logs);
    let config = tmp.path().join("two.toml");
    let dir = tmp.path().display();
    std::fs::write(
        &config,
        format!(
            "[advice]\nheadroom = 1.25\n\n[[cluster]]\nname = \"bounded\"\nlogs = [\"{dir}/none/*.log\"]\n\
             [cluster.advice]\nmax_recovery = \"2s\"\n\n[[cluster]]\nname = \"free\"\nlogs = [\"{dir}/none/*.log\"]\n"
        ),
    )
    .unwrap();
    let (db, config) = (db.to_str().unwrap(), config.to_str().unwrap());
    let suggest =
        |cluster| walwatch_json(&["suggest", "--config", config, "--db", db, "--cluster", cluster, "--format", "json"]);
    let (bounded, free) = (suggest("bounded"), suggest("free"));
    assert_eq!(bounded["suggested"]["max_wal_size_mb"], 640, "{bounded:#}");
    assert_eq!(bounded["bounds"]["limiting"], "max_recovery");
    assert_eq!(free["suggested"]["max_wal_size_mb"], 1792, "{free:#}");
    assert_eq!(free["bounds"], Value::Null);
}
