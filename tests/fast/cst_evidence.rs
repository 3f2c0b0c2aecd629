//! `CST` read by what the log itself says (tests/fixtures/cst/README.md),
//! without `--timezone`: a reload that set log_timezone to Asia/Shanghai,
//! a server that writes Chinese, in stderr, csvlog and jsonlog. The stored
//! times are UTC to the millisecond, as the servers' clock was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cst").join(name)
}

fn walwatch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap()
}

/// Imports `name` alone; its report and the rows' (started_at, completed_at).
fn import(name: &str) -> (String, Vec<(String, String)>, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture(name);
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()]);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{report}{}", String::from_utf8_lossy(&out.stderr));
    let out = walwatch(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let times = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["started_at"].as_str().unwrap().to_string(), r["completed_at"].as_str().unwrap().to_string()))
        .collect();
    let out = walwatch(&["summary", "--db", db.to_str().unwrap(), "--format", "json"]);
    (report, times, serde_json::from_slice(&out.stdout).unwrap())
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs_on("2026-11-28", list)
}

fn pairs_on(day: &str, list: &[(&str, &str)]) -> Vec<(String, String)> {
    let utc = |t: &str| format!("{day}T{t}+00:00");
    list.iter().map(|(s, c)| (utc(s), utc(c))).collect()
}

#[test]
fn a_reload_that_sets_log_timezone_dates_the_lines_after_it() {
    let (report, times, summary) = import("reload-asia-shanghai.log");
    assert!(
        report.contains(
            "warning: time zone abbreviation \"CST\" read in Asia/Shanghai, the log_timezone the log itself set \
             (`parameter \"log_timezone\" changed to \"Asia/Shanghai\"`)"
        ),
        "{report}"
    );
    assert!(!report.contains("US Central"), "{report}");
    // Up to 19:22:50.746 UTC the lines say UTC; from the reload on, CST.
    let want = pairs(&[
        ("19:22:48.245", "19:22:48.381"),
        ("19:22:48.690", "19:22:49.687"),
        ("19:22:49.687", "19:22:50.438"),
        ("19:22:50.438", "19:22:51.993"),
        ("19:22:51.993", "19:22:52.294"),
        ("19:22:52.294", "19:22:52.415"),
        ("19:22:52.415", "19:22:52.433"),
        ("19:27:52.530", "19:32:22.123"),
        ("19:34:09.766", "19:34:09.825"),
    ]);
    assert_eq!(times, want);
    assert_eq!(summary["parameter_changes"], 1);
    assert_eq!(summary["last_at"], "2026-11-28T19:34:09.902+00:00");
}

#[test]
fn chinese_messages_make_cst_chinas() {
    let (report, times, summary) = import("zh_CN-asia-shanghai.log");
    assert!(
        report.contains(
            "warning: time zone abbreviation \"CST\" read as China Standard Time (UTC+08:00): the server writes its \
             messages in Chinese"
        ),
        "{report}"
    );
    assert!(!report.contains("US Central"), "{report}");
    let want = pairs(&[
        ("19:22:53.000", "19:22:53.000"),
        ("19:22:54.000", "19:22:54.000"),
        ("19:22:54.000", "19:22:55.000"),
        ("19:22:55.000", "19:22:55.000"),
        ("19:22:55.000", "19:22:55.000"),
        ("19:22:55.000", "19:22:56.000"),
        ("19:22:56.000", "19:22:56.000"),
        ("19:27:56.000", "19:32:26.000"),
        ("19:34:09.000", "19:34:10.000"),
    ]);
    assert_eq!(times, want);
    assert_eq!(summary["first_at"], "2026-11-28T19:22:53.000+00:00");
}

/// `--timezone` stays what it says: the same logs read as US Central when
/// told so, the log's evidence set aside.
#[test]
fn an_explicit_timezone_is_not_overruled() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture("zh_CN-asia-shanghai.log");
    let args = ["import", "--db", db.to_str().unwrap(), "--timezone", "America/Chicago", log.to_str().unwrap()];
    let out = walwatch(&args);
    assert!(out.status.success());
    let out = walwatch(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 03:22:53 CST as UTC-06:00 (ahead of this clock: not a first or last event).
    assert_eq!(rows[0]["started_at"], "2026-11-29T09:22:53.000+00:00");
}

/// What one cluster's log says of its zone is not taken for another's,
/// even in one import: the lines after the reload, without it, read alone
/// under their own cluster, have no evidence and get the usual meaning.
#[test]
fn evidence_stays_with_its_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let (zh, en) = (tmp.path().join("zh/log"), tmp.path().join("en/log"));
    std::fs::create_dir_all(&zh).unwrap();
    std::fs::create_dir_all(&en).unwrap();
    std::fs::copy(fixture("zh_CN-asia-shanghai.log"), zh.join("postgresql.log")).unwrap();
    let reload = std::fs::read_to_string(fixture("reload-asia-shanghai.log")).unwrap();
    let after = reload.find("\n2026-11-29 03:22:51.993 CST").unwrap() + 1;
    std::fs::write(en.join("postgresql.log"), &reload[after..]).unwrap();
    let db = tmp.path().join("w.db");
    let (zh, en) = (zh.join("postgresql.log"), en.join("postgresql.log"));
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), zh.to_str().unwrap(), en.to_str().unwrap()]);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{report}");
    assert!(report.contains("read as China Standard Time"), "{report}");
    assert!(report.contains("assuming US Central Standard Time (UTC-06:00)"), "{report}");
    let out = walwatch(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json", "--cluster", "en"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 03:22:51.993 CST read as UTC-06:00: the complete line of a start in the file before.
    assert_eq!(rows[0]["completed_at"], "2026-11-29T09:22:51.993+00:00", "{rows}");
}

/// csvlog and jsonlog of real servers (tests/fixtures/cst/README.md): the
/// reload of log_timezone, and the Chinese of a server (csvlog's severity
/// column, jsonlog's messages of the server's processes), read as the
/// stderr log is, every time UTC to the millisecond.
#[test]
fn csvlog_and_jsonlog_carry_the_same_evidence() {
    let reload = pairs_on(
        "2026-11-29",
        &[
            ("01:38:27.394", "01:38:27.450"),
            ("01:38:27.782", "01:38:28.162"),
            ("01:38:28.162", "01:38:28.950"),
            ("01:38:28.951", "01:38:30.571"),
            ("01:38:30.571", "01:38:30.602"),
            ("01:38:30.622", "01:38:30.639"),
        ],
    );
    let chinese = pairs_on(
        "2026-11-29",
        &[
            ("01:38:32.683", "01:38:32.744"),
            ("01:38:32.998", "01:38:33.506"),
            ("01:38:33.506", "01:38:34.183"),
            ("01:38:34.188", "01:38:34.550"),
            ("01:38:34.566", "01:38:34.630"),
            ("01:38:34.650", "01:38:34.681"),
        ],
    );
    for ext in ["csv", "json"] {
        let (report, times, _) = import(&format!("reload-asia-shanghai.{ext}"));
        assert!(report.contains("read in Asia/Shanghai, the log_timezone the log itself set"), "{ext}: {report}");
        assert!(!report.contains("US Central"), "{report}");
        assert_eq!(times, reload, "{ext}");
        let (report, times, _) = import(&format!("zh_CN-asia-shanghai.{ext}"));
        assert!(report.contains("read as China Standard Time (UTC+08:00)"), "{ext}: {report}");
        assert_eq!(times, chinese, "{ext}");
    }
}

/// A client's Chinese text is no evidence: the jsonlog lines after the
/// reload (CST, English) with a client backend's entry in Chinese before
/// them are read as US Central, as without it.
#[test]
fn a_clients_chinese_is_no_evidence() {
    let reload = std::fs::read_to_string(fixture("reload-asia-shanghai.json")).unwrap();
    let zh = std::fs::read_to_string(fixture("zh_CN-asia-shanghai.json")).unwrap();
    let ready = zh.lines().find(|l| l.contains("数据库系统准备接受连接")).unwrap();
    let client = ready
        .replace("\"backend_type\":\"postmaster\"", "\"backend_type\":\"client backend\"")
        .replace("\"pid\":", "\"user\":\"alice\",\"dbname\":\"app\",\"pid\":");
    assert_ne!(client, ready);
    let after: Vec<&str> = reload.lines().skip_while(|l| !l.contains("log_timezone")).skip(1).collect();
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("postgresql.json");
    std::fs::write(&log, format!("{client}\n{}\n", after.join("\n"))).unwrap();
    let db = tmp.path().join("w.db");
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()]);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{report}");
    assert!(report.contains("assuming US Central Standard Time (UTC-06:00)"), "{report}");
    assert!(!report.contains("read as China"), "{report}");
    assert!(report.contains("  rejected 1, "), "the client's entry was read, and refused: {report}");
}

/// The reload line read by one import, the lines after it by the next (a
/// file that grew, a restarted daemon): the second reads `CST` in the zone
/// the first learned, from the store, not as US Central.
#[test]
fn a_zone_learned_before_holds_for_the_next_read() {
    let tmp = tempfile::tempdir().unwrap();
    let log = std::fs::read_to_string(fixture("reload-asia-shanghai.log")).unwrap();
    let after = log.find("\n2026-11-29 03:22:51.993 CST").unwrap() + 1;
    let file = tmp.path().join("postgresql.log");
    std::fs::write(&file, &log[..after]).unwrap();
    let db = tmp.path().join("w.db");
    let import = || walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", file.to_str().unwrap()]);
    assert!(import().status.success());
    std::fs::write(&file, &log).unwrap();
    let out = import();
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{report}");
    assert!(report.contains("resumed at byte"), "{report}");
    assert!(report.contains("read in Asia/Shanghai"), "{report}");
    assert!(!report.contains("US Central"), "{report}");
    let out = walwatch(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let last = rows.as_array().unwrap().last().unwrap();
    assert_eq!(last["started_at"], "2026-11-28T19:34:09.766+00:00", "{rows}");
}
