//! Tables show times in the local time zone (TZ, else /etc/localtime), or
//! in UTC with `--utc`; JSON and CSV stay RFC 3339 in UTC whatever the
//! zone. Tables group numbers by thousands and give seconds to
//! the millisecond. Asia/Kolkata (+05:30, no DST) makes a local time that
//! cannot be UTC by accident.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const LOG: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";

/// stdout of walwatch run with `TZ` set; the run must succeed.
fn run_in(tz: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch")).env("TZ", tz).args(args).output().unwrap();
    assert!(out.status.success(), "walwatch {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn imported(dir: &Path) -> String {
    let db = dir.join("w.db").to_str().unwrap().to_string();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join(LOG);
    run_in(
        "UTC",
        &["import", "--db", &db, "--cluster", "noise", "--prefix", "%m [%p] %q%u@%d ", log.to_str().unwrap()],
    );
    db
}

/// The first data row of a table, its cells split on runs of 2+ spaces.
fn first_row(table: &str) -> Vec<String> {
    let line = table.lines().nth(1).unwrap_or_else(|| panic!("no row in:\n{table}"));
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
}

#[test]
fn checkpoint_tables_are_in_local_time_and_json_and_csv_in_utc() {
    let dir = tempfile::tempdir().unwrap();
    let db = imported(dir.path());
    let local = run_in("Asia/Kolkata", &["checkpoints", "--db", &db]);
    assert_eq!(
        first_row(&local),
        [
            "noise",
            "checkpoint",
            "wal",
            "2026-11-22 13:38:44.076 +05:30",
            "2026-11-22 13:38:44.397 +05:30",
            "33",
            "0.208",
            "0.095",
            "0.344",
            "12,284",
            "12,284",
            // 33 buffers of 8 kB in 0.208 s; no pace: the log does not tell
            // checkpoint_timeout.
            "1.2"
        ]
    );
    // Seconds always to the millisecond: the log's "total=0.240 s" is not "0.24".
    assert_eq!(first_row(&local.lines().skip(1).collect::<Vec<_>>().join("\n"))[8], "0.240");
    let utc = run_in("Asia/Kolkata", &["checkpoints", "--db", &db, "--utc"]);
    assert_eq!(first_row(&utc)[3..5], ["2026-11-22 08:08:44.076 +00:00", "2026-11-22 08:08:44.397 +00:00"]);

    let json: Value =
        serde_json::from_str(&run_in("Asia/Kolkata", &["checkpoints", "--db", &db, "--format", "json"])).unwrap();
    assert_eq!(json[0]["started_at"], "2026-11-22T08:08:44.076+00:00");
    let csv = run_in("Asia/Kolkata", &["checkpoints", "--db", &db, "--format", "csv"]);
    assert!(
        csv.lines().nth(1).unwrap().contains(",2026-11-22T08:08:44.076+00:00,2026-11-22T08:08:44.397+00:00,"),
        "{csv}"
    );
}

#[test]
fn summary_status_and_alerts_tables_follow_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let db = imported(dir.path());
    let summary = run_in("Asia/Kolkata", &["summary", "--db", &db]);
    assert!(summary.contains("first event            2026-11-22 13:38:41.756 +05:30\n"), "{summary}");
    assert!(summary.contains("last event             2026-11-22 13:41:00.947 +05:30\n"), "{summary}");
    let summary = run_in("Asia/Kolkata", &["summary", "--db", &db, "--utc"]);
    assert!(summary.contains("last event             2026-11-22 08:11:00.947 +00:00\n"), "{summary}");

    let status = run_in("America/St_Johns", &["status", "--db", &db, "--config", "/dev/null"]);
    assert!(status.contains("cluster noise: last event 2026-11-22 04:41:00.947 -03:30, last commit "), "{status}");
    // Offsets and sizes grouped by thousands: the file is 1,131,411 bytes.
    assert!(status.contains("  1,131,411  1,131,411    0\n"), "{status}");
    let json: Value = serde_json::from_str(&run_in(
        "America/St_Johns",
        &["status", "--db", &db, "--format", "json", "--config", "/dev/null"],
    ))
    .unwrap();
    assert_eq!(json["clusters"][0]["last_event_at"], "2026-11-22T08:11:00.947+00:00");

    run_in("UTC", &["analyze", "--db", &db, "--config", "/dev/null"]);
    let alerts: Value =
        serde_json::from_str(&run_in("Asia/Kolkata", &["alerts", "--db", &db, "--all", "--format", "json"])).unwrap();
    let fired = alerts[0]["fired_at"].as_str().expect("an alert fired on the noise log").to_string();
    let fired: jiff::Timestamp = fired.parse().unwrap();
    let want = fired.to_zoned(jiff::tz::TimeZone::get("Asia/Kolkata").unwrap()).strftime("%Y-%m-%d %H:%M:%S%.3f %:z");
    let table = run_in("Asia/Kolkata", &["alerts", "--db", &db, "--all"]);
    assert!(table.contains(&want.to_string()), "fired_at {want} in:\n{table}");
}

/// A value the log set says when, in the table's zone; JSON keeps it UTC.
#[test]
fn settings_sources_from_the_log_follow_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let db = imported(dir.path());
    let table = run_in("Asia/Kolkata", &["settings", "--db", &db]);
    let row = table.lines().find(|l| l.starts_with("max_wal_size ")).unwrap_or_else(|| panic!("{table}"));
    assert_eq!(first_row(&format!("header\n{row}")), ["max_wal_size", "64MB", "log 2026-11-22 13:40:55.889 +05:30"]);
    let utc = run_in("Asia/Kolkata", &["settings", "--db", &db, "--utc"]);
    assert!(utc.contains("64MB   log 2026-11-22 08:10:55.889 +00:00\n"), "{utc}");
    let json: Value =
        serde_json::from_str(&run_in("Asia/Kolkata", &["settings", "--db", &db, "--format", "json"])).unwrap();
    assert_eq!(json[0]["current"]["max_wal_size"]["source"]["at"], "2026-11-22T08:10:55.889+00:00");
}
