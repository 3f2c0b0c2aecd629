//! The alert rules on the real fixture logs (tests/fixtures/*): each run is
//! imported with the walwatch binary, `walwatch analyze --no-send --format
//! json` runs the rules, and exactly the expected alerts must fire, with the
//! expected figures. The expectations are computed here from each run's
//! truth.json (its event list, counted independently of walwatch) and the
//! settings the run's server was given (settings.txt), applying each rule's
//! documented default thresholds; nothing is taken from walwatch's output.
//!
//! The logs are minutes long, so every rule's window (1 h or 24 h, ending at
//! the log's newest event because the log is older than the window) covers
//! the whole run; the test checks that premise.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;
use support::walwatch;

use support::fixture_dirs as fixtures;

fn log_files(dir: &Path) -> Vec<String> {
    support::fixture_logs(dir).iter().map(|p| p.to_str().unwrap().to_string()).collect()
}

fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = walwatch().args(args).output().unwrap();
    assert!(out.status.success(), "walwatch {args:?}: {}", support::describe(&out));
    out.stdout
}

/// `name = value` lines of settings.txt (the non-default settings of the run).
fn server_settings(dir: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("settings.txt")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            // The second part of the file (postgresql.auto.conf at the end) is
            // a change the log itself records as "parameter changed".
            if line.contains("postgresql.auto.conf") {
                break;
            }
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            out.insert(k.trim().to_string(), v.trim().trim_matches('\'').to_string());
        }
    }
    out
}

/// A duration setting in seconds ("30s", "5min", "300").
fn seconds(text: &str) -> f64 {
    let n: String = text.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let unit = &text[n.len()..];
    let n: f64 = n.parse().unwrap();
    match unit.trim() {
        "" | "s" => n,
        "min" => n * 60.0,
        "h" => n * 3600.0,
        "ms" => n / 1000.0,
        other => panic!("unit {other:?}"),
    }
}

/// A truth event's log time, as seconds since the epoch.
fn time_of(e: &Value, tz: &jiff::tz::TimeZone) -> f64 {
    let ts = e["ts"].as_str().unwrap();
    let civil = ts.rsplit_once(' ').unwrap().0;
    let fmt = if civil.contains('.') { "%Y-%m-%d %H:%M:%S%.f" } else { "%Y-%m-%d %H:%M:%S" };
    let t = jiff::civil::DateTime::strptime(fmt, civil).unwrap().to_zoned(tz.clone()).unwrap().timestamp();
    t.as_microsecond() as f64 / 1e6
}

/// The fields of a complete line the rules read, in every language of the fixtures.
struct Complete {
    sync_s: f64,
    longest_s: f64,
    total_s: f64,
    files_added: i64,
}

fn parse_complete(message: &str) -> Complete {
    let num = |re: &str| -> f64 {
        let caps = Regex::new(re).unwrap().captures(message).unwrap_or_else(|| panic!("{re} in {message}"));
        caps[1].replace(',', ".").parse().unwrap()
    };
    let added = Regex::new(
        r"(\d+) (?:WAL file\(s\) added|transaction log file\(s\) added|WAL-Datei\(en\) hinzugefügt|fichiers WAL ajoutés)|(\d+)個のWALファイルを追加",
    )
    .unwrap();
    let caps = added.captures(message).unwrap_or_else(|| panic!("files added in {message}"));
    Complete {
        sync_s: num(r"(?:^|[ ,;])(?:sync|Sync|synchronisation|同期)=(\d+[.,]\d+)"),
        longest_s: num(r"(?:longest|längste|plus long|最長)=(\d+[.,]\d+)"),
        total_s: num(r"(?:total|gesamt|全体)=(\d+[.,]\d+)"),
        files_added: caps.get(1).or(caps.get(2)).unwrap().as_str().parse().unwrap(),
    }
}

/// What the rules should report for one run, from its truth and settings.
#[derive(Debug, Default)]
struct Expected {
    /// rule -> figures that must match exactly
    alerts: BTreeMap<&'static str, Vec<(&'static str, Value)>>,
}

fn expected(dir: &Path, truth: &Value) -> Expected {
    let settings = server_settings(dir);
    let version: u32 = truth["server_version"].as_str().unwrap().split('.').next().unwrap().parse().unwrap();
    let timeout = settings.get("checkpoint_timeout").map_or(300.0, |v| seconds(v));
    let cct = settings
        .get("checkpoint_completion_target")
        .map_or(if version >= 14 { 0.9 } else { 0.5 }, |v| v.parse::<f64>().unwrap());
    let tz = jiff::tz::TimeZone::get(truth["log_timezone"].as_str().unwrap()).unwrap();
    let events = truth["events"].as_array().unwrap();
    let times: Vec<f64> = events.iter().map(|e| time_of(e, &tz)).collect();
    let span = times.iter().cloned().fold(f64::MIN, f64::max) - times.iter().cloned().fold(f64::MAX, f64::min);
    assert!(span < 3000.0, "{dir:?}: the run spans {span} s; the expectations assume one 1h window covers it");

    let mut exp = Expected::default();
    // Pair each complete line with the latest start of its process.
    let mut open: BTreeMap<String, &'static str> = BTreeMap::new();
    let (mut forced, mut timed) = (0usize, 0usize);
    let mut cycles = 0usize;
    let mut adding = 0usize;
    let mut files = 0i64;
    let (mut slow, mut max_sync, mut max_longest) = (0usize, 0.0f64, 0.0f64);
    let (mut overruns, mut max_total) = (0usize, 0.0f64);
    let limit = timeout * cct * 1.1;
    let mut last_point_line = f64::MIN;
    for (e, t) in events.iter().zip(&times) {
        let kind = e["type"].as_str().unwrap();
        let pid = e["pid"].as_str().unwrap_or_default().to_string();
        match kind {
            "checkpoint_start" | "restartpoint_start" => {
                let trig = support::truth::trigger_of(e["flags"].as_str().unwrap());
                forced += (trig == "wal") as usize;
                timed += (trig == "time") as usize;
                open.insert(pid, trig);
                last_point_line = last_point_line.max(*t);
            }
            "checkpoint_complete" | "restartpoint_complete" => {
                last_point_line = last_point_line.max(*t);
                let c = parse_complete(e["message"].as_str().unwrap());
                if c.sync_s > 5.0 || c.longest_s > 2.0 {
                    slow += 1;
                    max_sync = max_sync.max(c.sync_s);
                    max_longest = max_longest.max(c.longest_s);
                }
                let trig = open.remove(&pid);
                if matches!(trig, Some("wal" | "time")) {
                    cycles += 1;
                    if c.files_added > 0 {
                        adding += 1;
                        files += c.files_added;
                    }
                }
                if trig == Some("time") && c.total_s > limit {
                    overruns += 1;
                    max_total = max_total.max(c.total_s);
                }
            }
            _ => {}
        }
    }
    let share = if forced + timed == 0 { 0.0 } else { forced as f64 / (forced + timed) as f64 };
    if forced >= 2 && share >= 0.1 {
        exp.alerts.insert(
            "forced_checkpoints",
            vec![("count", forced.into()), ("timed", timed.into()), ("share", share.into())],
        );
    }
    let warnings: Vec<i64> = events
        .iter()
        .filter(|e| e["type"] == "too_frequent")
        .map(|e| {
            let m = e["message"].as_str().unwrap();
            Regex::new(r"\d+").unwrap().find(m).unwrap().as_str().parse().unwrap()
        })
        .collect();
    assert_eq!(warnings.len() as i64, truth["counts"]["too_frequent"].as_i64().unwrap());
    if let Some(min) = warnings.iter().min() {
        exp.alerts.insert("too_frequent", vec![("count", warnings.len().into()), ("min_seconds", (*min).into())]);
    }
    if slow > 0 {
        exp.alerts.insert(
            "slow_sync",
            vec![("count", slow.into()), ("max_sync_s", max_sync.into()), ("max_longest_s", max_longest.into())],
        );
    }
    if overruns > 0 {
        exp.alerts.insert("checkpoint_overrun", vec![("count", overruns.into()), ("max_total_s", max_total.into())]);
    }
    // Every run ends (or restarts) with checkpoint lines; the truth's other
    // events are never more than 3 timeouts after the last one.
    let newest = times.iter().cloned().fold(f64::MIN, f64::max);
    assert!(newest - last_point_line <= 3.0 * timeout, "{dir:?}: a silent stretch the test does not model");
    for name in ["fsync", "full_page_writes", "synchronous_commit"] {
        assert_ne!(settings.get(name).map(String::as_str), Some("off"), "{dir:?}: the test does not model {name}");
    }
    if cycles >= 6 && adding as f64 / cycles as f64 >= 0.5 {
        exp.alerts.insert(
            "wal_files_added",
            vec![("cycles", cycles.into()), ("cycles_adding", adding.into()), ("files_added", files.into())],
        );
    }
    exp
}

/// Imports a run and writes a config naming it, with its checkpoint settings.
fn prepare(dir: &Path, tmp: &Path) -> (PathBuf, PathBuf, String) {
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    let truth: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    let db = tmp.join("w.db");
    let mut args =
        vec!["import".to_string(), "--db".into(), db.to_str().unwrap().into(), "--cluster".into(), name.clone()];
    args.extend(["--timezone".to_string(), truth["log_timezone"].as_str().unwrap().to_string()]);
    args.extend(log_files(dir));
    run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let settings = server_settings(dir);
    let mut cluster_settings = String::new();
    for key in ["checkpoint_timeout", "checkpoint_completion_target"] {
        if let Some(v) = settings.get(key) {
            cluster_settings.push_str(&format!("{key} = \"{v}\"\n"));
        }
    }
    let config = tmp.join("walwatch.toml");
    let text = format!(
        "[store]\npath = {db:?}\n[[cluster]]\nname = {name:?}\nlogs = [{:?}]\n[cluster.settings]\n{cluster_settings}",
        dir.join("log/*").to_str().unwrap()
    );
    std::fs::write(&config, text).unwrap();
    (db, config, name)
}

fn analyze(config: &Path) -> Value {
    let out = run_ok(&["analyze", "--config", config.to_str().unwrap(), "--no-send", "--format", "json"]);
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn rules_fire_exactly_the_expected_alerts_on_every_fixture() {
    let mut failures = Vec::new();
    for dir in fixtures() {
        let tmp = tempfile::tempdir().unwrap();
        let truth: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
        let exp = expected(&dir, &truth);
        let (db, config, name) = prepare(&dir, tmp.path());
        let report = analyze(&config);
        let cluster = &report["clusters"][0];
        assert_eq!(report["clusters"].as_array().unwrap().len(), 1);
        assert_eq!(cluster["cluster"], name.as_str());
        let findings: BTreeMap<&str, &Value> =
            cluster["findings"].as_array().unwrap().iter().map(|f| (f["rule"].as_str().unwrap(), f)).collect();
        let got: Vec<&str> = findings.keys().copied().collect();
        let want: Vec<&str> = exp.alerts.keys().copied().collect();
        if got != want {
            failures.push(format!("{name}: rules fired {got:?}, expected {want:?}"));
            continue;
        }
        for (rule, figures) in &exp.alerts {
            for (key, value) in figures {
                let actual = &findings[rule]["figures"][key];
                let same = match (actual.as_f64(), value.as_f64()) {
                    (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                    _ => actual == value,
                };
                if !same {
                    failures.push(format!("{name}: {rule}.{key} = {actual}, expected {value}"));
                }
            }
        }
        // Every fired alert is stored, and its firing notice was recorded (no transport configured).
        let fired: Vec<&str> =
            cluster["changes"]["fired"].as_array().unwrap().iter().map(|c| c["rule"].as_str().unwrap()).collect();
        assert_eq!(fired, want, "{name}: fired alerts");
        let notices = cluster["changes"]["notices"].as_array().unwrap();
        assert_eq!(notices.len(), want.len(), "{name}: notices");
        assert!(notices.iter().all(|n| n["kind"] == "firing" && n["sequence"] == 0));

        // A second analyze finds the open alerts: nothing fires, nothing is queued.
        let again = analyze(&config);
        let changes = &again["clusters"][0]["changes"];
        assert_eq!(changes["fired"], Value::Array(vec![]), "{name}: re-run fired");
        assert_eq!(changes["notices"], Value::Array(vec![]), "{name}: re-run queued");
        assert_eq!(changes["resolved"], Value::Array(vec![]), "{name}: re-run resolved");
        assert_eq!(changes["still_open"].as_array().unwrap().len(), want.len());

        // `walwatch alerts` lists them, open and firing.
        let list: Value =
            serde_json::from_slice(&run_ok(&["alerts", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap();
        let mut listed: Vec<&str> = list.as_array().unwrap().iter().map(|a| a["rule"].as_str().unwrap()).collect();
        listed.sort();
        assert_eq!(listed, want, "{name}: walwatch alerts");
        assert!(list.as_array().unwrap().iter().all(|a| a["state"] == "firing" && a["cluster"] == name.as_str()));
        assert!(list.as_array().unwrap().iter().all(|a| a["acked"] == false && a["resolved_at"].is_null()));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn forced_checkpoints_carries_the_max_wal_size_suggestion() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-std");
    let tmp = tempfile::tempdir().unwrap();
    let (_, config, _) = prepare(&dir, tmp.path());
    let report = analyze(&config);
    let forced = report["clusters"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "forced_checkpoints")
        .unwrap()
        .clone();
    let suggest: Value =
        serde_json::from_slice(&run_ok(&["suggest", "--config", config.to_str().unwrap(), "--format", "json"]))
            .unwrap();
    let suggest = if suggest.is_array() { suggest[0].clone() } else { suggest };
    let mb = suggest["suggested"]["max_wal_size_mb"].as_u64().expect("a suggestion for this run");
    assert_eq!(forced["figures"]["suggested_max_wal_size_mb"], mb);
    assert_eq!(forced["suggestion"]["sql"], suggest["sql"]);
    assert!(forced["suggestion"]["sql"].as_str().unwrap().starts_with("ALTER SYSTEM SET max_wal_size = "));
    assert_eq!(forced["suggestion"]["text"], suggest["explanation"]);
}

#[test]
fn analyze_and_alerts_report_bad_input_clearly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-forged");
    let tmp = tempfile::tempdir().unwrap();
    let (db, config, name) = prepare(&dir, tmp.path());
    let dbs = db.to_str().unwrap();
    let fail = |args: &[&str]| {
        let out = walwatch().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "walwatch {args:?}: {}", support::describe(&out));
        String::from_utf8(out.stderr).unwrap()
    };
    let e = fail(&["analyze", "--config", config.to_str().unwrap(), "--cluster", "nope", "--no-send"]);
    assert!(e.contains(&format!("no cluster \"nope\" in {} (known: {name})", db.display())), "{e}");
    let e = fail(&["analyze", "--db", tmp.path().join("missing.db").to_str().unwrap(), "--no-send"]);
    assert!(e.contains("no store at"), "{e}");
    let e = fail(&["alerts", "ack", "--db", dbs, "42"]);
    assert!(e.contains("no alert with id 42"), "{e}");
    let e = fail(&["alerts", "silence", "--db", dbs, "forced", "--for", "2h"]);
    assert!(e.contains("unknown rule \"forced\": the rules are forced_checkpoints, too_frequent, slow_sync"), "{e}");
    let e = fail(&["alerts", "silence", "--db", dbs, "too_frequent", "--for", "soon"]);
    assert!(e.contains("--for: invalid duration \"soon\""), "{e}");
    let e = fail(&["alerts", "silence", "--db", dbs, "too_frequent", "--cluster", "nope", "--for", "2h"]);
    assert!(e.contains("no cluster \"nope\" in "), "{e}");

    // Silence, then analyze: recorded, not notified; ack works on its id.
    let out = run_ok(&["alerts", "silence", "--db", dbs, "too_frequent", "--cluster", &name, "--for", "1d"]);
    assert!(String::from_utf8(out).unwrap().starts_with(&format!("too_frequent silenced on cluster {name} until ")));
    let report = analyze(&config);
    let changes = &report["clusters"][0]["changes"];
    let silenced: Vec<&str> =
        changes["silenced"].as_array().unwrap().iter().map(|c| c["rule"].as_str().unwrap()).collect();
    assert_eq!(silenced, ["too_frequent"]);
    assert!(changes["notices"].as_array().unwrap().iter().all(|n| n["rule"] != "too_frequent"));
    let id = changes["silenced"][0]["alert_id"].as_i64().unwrap().to_string();
    let out = String::from_utf8(run_ok(&["alerts", "ack", "--db", dbs, &id])).unwrap();
    assert_eq!(out, format!("alert {id} acknowledged: no more reminders for it\n"));
    let csv = String::from_utf8(run_ok(&["alerts", "--db", dbs, "--format", "csv"])).unwrap();
    assert!(
        csv.starts_with("id,cluster,rule,severity,state,fired_at,notified_at,resolved_at,acked,summary,resolution\n")
    );
    let acked: Vec<&str> = csv.lines().filter(|l| l.starts_with(&format!("{id},"))).collect();
    assert_eq!(acked.len(), 1);
    assert!(acked[0].contains(",too_frequent,warning,firing,") && acked[0].contains(",yes,"), "{}", acked[0]);
}

#[test]
fn a_log_without_checkpoint_lines_raises_checkpoint_logging_missing() {
    // The real 15-stderr-default-std log as log_checkpoints = off would have
    // written it: the same file without its checkpoint lines (the
    // too-frequent warnings stay: PostgreSQL writes them regardless).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-std");
    let tmp = tempfile::tempdir().unwrap();
    let source = &log_files(&dir)[0];
    let text = std::fs::read_to_string(source).unwrap();
    let kept: Vec<&str> =
        text.lines().filter(|l| !l.contains("checkpoint starting:") && !l.contains("checkpoint complete:")).collect();
    assert!(kept.len() < text.lines().count());
    let log_dir = tmp.path().join("log");
    std::fs::create_dir(&log_dir).unwrap();
    let log = log_dir.join("postgresql.log");
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();
    // Expected from the file itself: the server became ready, then wrote until its last line.
    let time = |line: &str| -> f64 {
        let civil = &line[..23];
        let t =
            jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M:%S%.f", civil).unwrap().to_zoned(jiff::tz::TimeZone::UTC);
        t.unwrap().timestamp().as_microsecond() as f64 / 1e6
    };
    let ready = kept.iter().rev().find(|l| l.contains("database system is ready to accept connections")).unwrap();
    let last = kept.last().unwrap();
    assert!(last.contains("database system is shut down"));
    let silent = time(last) - time(ready);
    let warnings: Vec<i64> = kept
        .iter()
        .filter_map(|l| l.split_once("checkpoints are occurring too frequently (").map(|(_, r)| r))
        .map(|r| r.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(silent > 90.0 && !warnings.is_empty());

    let db = tmp.path().join("w.db");
    run_ok(&["import", "--db", db.to_str().unwrap(), "--cluster", "nolog", log.to_str().unwrap()]);
    let config = tmp.path().join("walwatch.toml");
    let logs = log_dir.join("*.log");
    std::fs::write(
        &config,
        format!(
            "[store]\npath = {db:?}\n[[cluster]]\nname = \"nolog\"\nlogs = [{:?}]\n[cluster.settings]\ncheckpoint_timeout = \"30s\"\n",
            logs.to_str().unwrap()
        ),
    )
    .unwrap();
    let report = analyze(&config);
    let findings = report["clusters"][0]["findings"].as_array().unwrap();
    let rules: Vec<&str> = findings.iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["too_frequent", "checkpoint_logging_missing"]);
    let tf = &findings[0]["figures"];
    assert_eq!(tf["count"], warnings.len());
    assert_eq!(tf["min_seconds"], *warnings.iter().min().unwrap());
    let missing = &findings[1];
    // The warnings prove checkpoints happen: a warning, not just information.
    assert_eq!(missing["severity"], "warning");
    assert_eq!(missing["figures"]["basis"], "log");
    assert_eq!(missing["figures"]["last_checkpoint_line_at"], Value::Null);
    assert_eq!(missing["figures"]["too_frequent_since"], warnings.len());
    assert!((missing["figures"]["silent_s"].as_f64().unwrap() - silent).abs() < 1e-6, "{missing}");
    let details = missing["details"].as_array().unwrap();
    assert!(details
        .last()
        .unwrap()
        .as_str()
        .unwrap()
        .starts_with("log_checkpoints is on by default since PostgreSQL 15"));
}

#[test]
fn a_rule_switched_off_closes_its_alerts_as_rule_disabled() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-forged");
    let tmp = tempfile::tempdir().unwrap();
    let (db, config, _) = prepare(&dir, tmp.path());
    let dbs = db.to_str().unwrap();
    let report = analyze(&config);
    let fired = &report["clusters"][0]["changes"]["fired"];
    let id = fired.as_array().unwrap().iter().find(|c| c["rule"] == "too_frequent").expect("too_frequent fires")
        ["alert_id"]
        .as_i64()
        .unwrap();

    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}[alerts.too_frequent]\nenabled = false\n")).unwrap();
    let changes = &analyze(&config)["clusters"][0]["changes"];
    assert_eq!(changes["rule_disabled"][0]["alert_id"], id, "{changes}");
    assert!(changes["resolved"].as_array().unwrap().is_empty(), "{changes}");
    assert!(changes["notices"].as_array().unwrap().is_empty(), "{changes}");

    let all: Value = serde_json::from_slice(&run_ok(&["alerts", "--db", dbs, "--all", "--format", "json"])).unwrap();
    let row = all.as_array().unwrap().iter().find(|a| a["id"] == id).unwrap();
    assert_eq!((&row["state"], &row["resolution"]), (&"resolved".into(), &"rule_disabled".into()), "{row}");
    let open: Value = serde_json::from_slice(&run_ok(&["alerts", "--db", dbs, "--format", "json"])).unwrap();
    assert!(open.as_array().unwrap().iter().all(|a| a["rule"] != "too_frequent"), "{open}");
    let csv = String::from_utf8(run_ok(&["alerts", "--db", dbs, "--all", "--format", "csv"])).unwrap();
    let line = csv.lines().find(|l| l.starts_with(&format!("{id},"))).unwrap();
    assert!(line.ends_with(",rule_disabled"), "{line}");
    let table = String::from_utf8(run_ok(&["alerts", "--db", dbs, "--all"])).unwrap();
    assert!(table.lines().next().unwrap().trim_end().ends_with("resolution"), "{table}");
    assert!(table.contains("rule_disabled"), "{table}");
}

#[test]
fn silences_are_listed_and_ended() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-forged");
    let tmp = tempfile::tempdir().unwrap();
    let (db, _, name) = prepare(&dir, tmp.path());
    let dbs = db.to_str().unwrap();
    let out = String::from_utf8(run_ok(&["alerts", "silences", "--db", dbs])).unwrap();
    assert_eq!(out, "no silence running (--all: ended ones too)\n");
    run_ok(&["alerts", "silence", "--db", dbs, "too_frequent", "--cluster", &name, "--for", "2h"]);
    run_ok(&["alerts", "silence", "--db", dbs, "slow_sync", "--for", "1d"]);

    let list: Value =
        serde_json::from_slice(&run_ok(&["alerts", "silences", "--db", dbs, "--format", "json"])).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let keys: Vec<&str> = list[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["active", "cluster", "from", "id", "rule", "until"], "(serde_json's map sorts them)");
    let tf = list.iter().find(|s| s["rule"] == "too_frequent").unwrap();
    assert_eq!((&tf["cluster"], &tf["active"]), (&Value::from(name.as_str()), &Value::from(true)));
    assert_eq!(list.iter().find(|s| s["rule"] == "slow_sync").unwrap()["cluster"], Value::Null);
    let table = String::from_utf8(run_ok(&["alerts", "silences", "--db", dbs])).unwrap();
    assert!(table.contains("(all)") && table.contains("too_frequent"), "{table}");

    let id = tf["id"].as_i64().unwrap().to_string();
    let out = String::from_utf8(run_ok(&["alerts", "unsilence", "--db", dbs, &id])).unwrap();
    assert_eq!(out, format!("silence {id} ended: its rule notifies again\n"));
    let now: Value = serde_json::from_slice(&run_ok(&["alerts", "silences", "--db", dbs, "--format", "json"])).unwrap();
    assert_eq!(now.as_array().unwrap().len(), 1, "{now}");
    let all: Value =
        serde_json::from_slice(&run_ok(&["alerts", "silences", "--db", dbs, "--all", "--format", "json"])).unwrap();
    let ended = all.as_array().unwrap().iter().find(|s| s["id"] == tf["id"]).unwrap();
    assert_eq!(ended["active"], false, "{ended}");

    let fail = |args: &[&str]| {
        let out = walwatch().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "walwatch {args:?}: {}", support::describe(&out));
        String::from_utf8(out.stderr).unwrap()
    };
    let e = fail(&["alerts", "unsilence", "--db", dbs, &id]);
    assert!(e.contains(&format!("silence {id} already ended at ")), "{e}");
    let e = fail(&["alerts", "unsilence", "--db", dbs, "999"]);
    assert!(e.contains("no silence with id 999 (see `walwatch alerts silences --all`)"), "{e}");
}
