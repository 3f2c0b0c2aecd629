//! `walwatch history` against an independent count of real fixture logs.
//!
//! A fixture's log lines are re-dated (t -> BASE + (t - first line) × K) so
//! that a few minutes of a real server's log spread over hours or days and
//! across a daylight saving change in Europe/Berlin, then imported. The
//! expected rows are computed here from the fixture's truth.json (the
//! corpus script's parse of the same logs, re-dated the same way) and the
//! re-dated lines: start flags to one trigger, complete-line numbers paired
//! to their start by pid, cycles between consecutive starts. Bucket
//! boundaries are written out by hand, not computed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde_json::{json, Value};

use crate::import_behaviour::{ok, walwatch};

fn fixture_dir(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run)
}

/// How a fixture's times are moved: `BASE + (t - t0) × k`.
#[derive(Clone, Copy)]
struct Redate {
    t0: Timestamp,
    base: Timestamp,
    k: i64,
}

impl Redate {
    fn at(&self, t: Timestamp) -> Timestamp {
        let us = (t.as_microsecond() - self.t0.as_microsecond()) * self.k;
        Timestamp::from_microsecond(self.base.as_microsecond() + us).unwrap()
    }
}

/// "2026-11-22 08:13:34.182 UTC" (the fixtures' %m) as an instant.
fn log_time(text: &str) -> Option<Timestamp> {
    let head = text.get(..23)?;
    if !text[23..].starts_with(" UTC") {
        return None;
    }
    format!("{}Z", head.replacen(' ', "T", 1)).parse().ok()
}

/// The fixture's log files, re-dated, under `dir`; returns them with the re-dating used.
fn redated_logs(run: &str, dir: &Path, base: &str, k: i64) -> (Vec<PathBuf>, Redate) {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(fixture_dir(run).join("log")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let first = std::fs::read_to_string(&files[0]).unwrap();
    let redate = Redate { t0: log_time(&first).unwrap(), base: base.parse().unwrap(), k };
    let mut out = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| match log_time(l) {
                Some(t) => format!("{} UTC{}", redate.at(t).strftime("%Y-%m-%d %H:%M:%S%.3f"), &l[27..]),
                None => l.to_string(),
            })
            .collect();
        let path = dir.join(f.file_name().unwrap());
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        out.push(path);
    }
    (out, redate)
}

/// One start with what its complete line said, from truth.json.
#[derive(Debug, Clone)]
struct Point {
    kind: &'static str,
    at: Timestamp,
    trigger: &'static str,
    complete: Option<Complete>,
}

#[derive(Debug, Clone, Default)]
struct Complete {
    buffers: i64,
    files: [i64; 3],
    write_s: f64,
    sync_s: f64,
    longest_s: Option<f64>,
    distance_kb: Option<i64>,
}

/// The number right after `key` in `text` ("wrote " -> 2117).
fn after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let n: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    n.parse().ok()
}

/// The number right before `key` ("1 WAL file(s) added" with key " WAL file(s) added").
fn before(text: &str, key: &str) -> i64 {
    let head = &text[..text.find(key).unwrap()];
    let n: String = head.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    n.chars().rev().collect::<String>().parse().unwrap()
}

fn complete(message: &str) -> Complete {
    Complete {
        buffers: after(message, "wrote ").unwrap() as i64,
        files: [before(message, " WAL file(s) added"), before(message, " removed"), before(message, " recycled")],
        write_s: after(message, "write=").unwrap(),
        sync_s: after(message, "sync=").unwrap(),
        longest_s: after(message, "longest="),
        distance_kb: after(message, "distance=").map(|d| d as i64),
    }
}

/// One trigger per start: the first of these words its flags carry, else manual.
fn trigger(flags: &str) -> &'static str {
    let words: Vec<&str> = flags.split_whitespace().collect();
    ["shutdown", "end-of-recovery", "wal", "time"].into_iter().find(|w| words.contains(w)).unwrap_or("manual")
}

/// truth.json's events: the starts (completes paired to the open start of
/// their pid and kind), too-frequent warnings and parameter changes.
struct Truth {
    points: Vec<Point>,
    too_frequent: Vec<Timestamp>,
    parameter_changes: Vec<Timestamp>,
}

fn truth(run: &str, redate: Redate) -> Truth {
    let t: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir(run).join("truth.json")).unwrap()).unwrap();
    let mut out = Truth { points: Vec::new(), too_frequent: Vec::new(), parameter_changes: Vec::new() };
    let mut open: HashMap<(String, &str), usize> = HashMap::new();
    for e in t["events"].as_array().unwrap() {
        let at = redate.at(log_time(e["ts"].as_str().unwrap()).unwrap());
        let pid = e["pid"].as_str().unwrap().to_string();
        let ty = e["type"].as_str().unwrap();
        let kind = if ty.starts_with("restartpoint") { "restartpoints" } else { "checkpoints" };
        match ty {
            "checkpoint_start" | "restartpoint_start" => {
                open.insert((pid, kind), out.points.len());
                let trigger = trigger(e["flags"].as_str().unwrap());
                out.points.push(Point { kind, at, trigger, complete: None });
            }
            "checkpoint_complete" | "restartpoint_complete" => {
                let i = open.remove(&(pid, kind)).expect("every complete of these fixtures has its start");
                out.points[i].complete = Some(complete(e["message"].as_str().unwrap()));
            }
            "too_frequent" => out.too_frequent.push(at),
            "parameter_changed" => out.parameter_changes.push(at),
            _ => {}
        }
    }
    out
}

/// Times of the re-dated lines whose message contains `needle`.
fn lines_with(files: &[PathBuf], needle: &str) -> Vec<Timestamp> {
    let mut out = Vec::new();
    for f in files {
        for l in std::fs::read_to_string(f).unwrap().lines().filter(|l| l.contains(needle)) {
            out.push(log_time(l).unwrap());
        }
    }
    out
}

/// A cycle: from one start to the next, as the README defines the WAL rate.
struct Cycle {
    at: Timestamp,
    seconds: f64,
    rate: f64,
}

fn cycles(points: &[Point], restarts: &[Timestamp]) -> Vec<Cycle> {
    let mut starts: Vec<&Point> = points.iter().collect();
    starts.sort_by_key(|p| p.at); // stable: log order among equal times
    let downtime = ["shutdown", "end-of-recovery"];
    starts
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0], w[1]);
            let seconds = (b.at.as_microsecond() - a.at.as_microsecond()) as f64 / 1e6;
            let distance = b.complete.as_ref()?.distance_kb?;
            let restarted = restarts.iter().any(|r| *r > a.at && *r <= b.at);
            let usable = !downtime.contains(&a.trigger)
                && !downtime.contains(&b.trigger)
                && !restarted
                && b.trigger != "manual"
                && seconds > 0.0;
            usable.then(|| Cycle { at: b.at, seconds, rate: distance as f64 / seconds })
        })
        .collect()
}

/// The smallest rate below which the cycles spend at least p % of their time.
fn by_time(cycles: &[&Cycle], p: f64) -> Option<f64> {
    let mut c: Vec<&&Cycle> = cycles.iter().collect();
    c.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let total: f64 = c.iter().map(|c| c.seconds).sum();
    let mut covered = 0.0;
    for x in &c {
        covered += x.seconds;
        if covered >= total * p / 100.0 * (1.0 - 1e-9) {
            return Some(x.rate);
        }
    }
    None
}

/// Nearest rank.
fn rank(values: &[f64], p: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let r = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v.get(r.min(v.len()).checked_sub(1)?).copied()
}

fn r1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The expected row of `[from, to)`. `spread`: checkpoint_timeout ×
/// checkpoint_completion_target of the server as walwatch can know them
/// (None: the log does not tell its checkpoint_timeout).
fn expected(cluster: &str, bounds: (&str, &str), t: &Truth, files: &[PathBuf], spread: Option<f64>) -> Value {
    let (from, to): (Timestamp, Timestamp) = (bounds.0.parse().unwrap(), bounds.1.parse().unwrap());
    let inside = |at: &Timestamp| *at >= from && *at < to;
    let points: Vec<&Point> = t.points.iter().filter(|p| inside(&p.at)).collect();
    let by_trigger = |kind: &str| {
        let n = |tr: &str| points.iter().filter(|p| p.kind == kind && p.trigger == tr).count();
        json!({"shutdown": n("shutdown"), "end-of-recovery": n("end-of-recovery"), "wal": n("wal"),
               "time": n("time"), "manual": n("manual")})
    };
    let done: Vec<&Complete> = points.iter().filter_map(|p| p.complete.as_ref()).collect();
    let restarts: Vec<Timestamp> = ["starting PostgreSQL", "ready to accept", "reinitializing", "redo starts at"]
        .iter()
        .flat_map(|n| lines_with(files, n))
        .collect();
    let all = cycles(&t.points, &restarts);
    let mine: Vec<&Cycle> = all.iter().filter(|c| inside(&c.at)).collect();
    let wal = points.iter().filter(|p| p.trigger == "wal").count();
    let time = points.iter().filter(|p| p.trigger == "time").count();
    let max = |f: &dyn Fn(&Complete) -> Option<f64>| done.iter().filter_map(|c| f(c)).reduce(f64::max);
    let sum = |f: &dyn Fn(&Complete) -> i64| done.iter().map(|c| f(c)).sum::<i64>();
    let write: Vec<f64> = done.iter().map(|c| c.write_s).collect();
    let sync: Vec<f64> = done.iter().map(|c| c.sync_s).collect();
    // The write storm: 8 kB buffers over the write time; the pace against a
    // timed checkpoint's spread, for WAL- and time-triggered points.
    let wrote = done.iter().filter(|c| c.write_s > 0.0);
    let mb_s: Vec<f64> = wrote.map(|c| c.buffers as f64 * 8192.0 / 1048576.0 / c.write_s).collect();
    let paced = points.iter().filter(|p| p.trigger == "wal" || p.trigger == "time");
    let paced_writes = paced.filter_map(|p| p.complete.as_ref()).filter(|c| c.write_s > 0.0);
    let pace: Vec<f64> = match spread {
        Some(spread) => paced_writes.map(|c| spread / c.write_s).collect(),
        None => Vec::new(),
    };
    json!({
        "cluster": cluster,
        "bucket_start": bounds.0,
        "bucket_end": bounds.1,
        "checkpoints": by_trigger("checkpoints"),
        "restartpoints": by_trigger("restartpoints"),
        "forced_share": (wal + time > 0).then(|| (wal as f64 / (wal + time) as f64 * 1000.0).round() / 1000.0),
        "too_frequent": t.too_frequent.iter().filter(|a| inside(a)).count(),
        "wal_written_mb": r1(sum(&|c| c.distance_kb.unwrap_or(0)) as f64 / 1024.0),
        "wal_rate_kb_s": {
            "p50": by_time(&mine, 50.0).map(r1),
            "p95": by_time(&mine, 95.0).map(r1),
            "max": mine.iter().map(|c| c.rate).reduce(f64::max).map(r1),
        },
        "write_s_p95": rank(&write, 95.0),
        "write_mb_s_p95": rank(&mb_s, 95.0).map(r1),
        "pace_ratio_p95": rank(&pace, 95.0).map(r1),
        "sync_s_p95": rank(&sync, 95.0),
        "sync_s_max": max(&|c| Some(c.sync_s)),
        "sync_longest_s_max": max(&|c| c.longest_s),
        "buffers_written": sum(&|c| c.buffers),
        "wal_files_added": sum(&|c| c.files[0]),
        "wal_files_removed": sum(&|c| c.files[1]),
        "wal_files_recycled": sum(&|c| c.files[2]),
        "server_starts": lines_with(files, "starting PostgreSQL").iter().filter(|a| inside(a)).count(),
        // No fixture here logs a crash restart ("reinitializing", checked
        // below): every crash recovery ends in an end-of-recovery checkpoint.
        "crashes": points.iter().filter(|p| p.trigger == "end-of-recovery").count(),
        "parameter_changes": t.parameter_changes.iter().filter(|a| inside(a)).count(),
        "alerts_fired": 0,
    })
}

/// Imports the re-dated fixture as `cluster` and checks `history` against
/// the rows expected between each pair of consecutive `bounds`.
fn check(run: &str, base: &str, k: i64, args: &[&str], bounds: &[&str], spread: Option<f64>) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let (files, redate) = redated_logs(run, tmp.path(), base, k);
    assert!(lines_with(&files, "reinitializing").is_empty());
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let mut import = vec!["import", "--db", db, "--cluster", "c"];
    import.extend(files.iter().map(|f| f.to_str().unwrap()));
    ok(&import);
    let mut history = vec!["history", "--db", db, "--format", "json"];
    history.extend(args);
    let got: Vec<Value> = serde_json::from_str(&ok(&history)).unwrap();
    let t = truth(run, redate);
    let want: Vec<Value> = bounds.windows(2).map(|w| expected("c", (w[0], w[1]), &t, &files, spread)).collect();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    // Every point lies in some row: the rows cover the whole log.
    let points: i64 = got.iter().map(|r| started(r, "checkpoints") + started(r, "restartpoints")).sum();
    assert_eq!(points, t.points.len() as i64);
    got
}

fn started(row: &Value, kind: &str) -> i64 {
    row[kind].as_object().unwrap().values().map(|v| v.as_i64().unwrap()).sum()
}

/// Stretched ×1000, the crash fixture does not tell walwatch its
/// checkpoint_timeout (its time checkpoints no longer fit the inference's
/// evidence rules), so there is no pace to compare; `write_storm.rs` checks
/// the pace on the log as written, where the timeout is inferred.
const CRASHIMM_SPREAD: Option<f64> = None;

#[test]
fn days_in_berlin_across_the_spring_change_match_truth_json() {
    // 260 s of a server with a forced-checkpoint storm, a SIGHUP, an
    // immediate shutdown and its crash recovery, stretched ×1000 to 72 h
    // from 2026-03-28 21:00 Berlin: the day of 2026-03-29 has 23 hours.
    let rows = check(
        "15-stderr-default-crashimm",
        "2026-03-28T20:00:00Z",
        1000,
        &["--by", "day", "--tz", "Europe/Berlin"],
        &[
            "2026-03-28T00:00:00+01:00",
            "2026-03-29T00:00:00+01:00",
            "2026-03-30T00:00:00+02:00",
            "2026-03-31T00:00:00+02:00",
            "2026-04-01T00:00:00+02:00",
        ],
        CRASHIMM_SPREAD,
    );
    // What the fixture is known for, so the comparison above compared something.
    let total = |key: &str| rows.iter().map(|r| r[key].as_i64().unwrap()).sum::<i64>();
    assert_eq!((total("crashes"), total("server_starts"), total("parameter_changes")), (1, 2, 1));
    assert_eq!(total("too_frequent"), 66);
    assert!(rows.iter().filter(|r| r["wal_rate_kb_s"]["p95"].is_f64()).count() >= 3);
}

#[test]
fn hours_in_berlin_across_the_autumn_change_repeat_two_oclock() {
    // A standby promoted at the end: restartpoints, then checkpoints;
    // 262 s stretched ×60 from 2026-10-25 00:00 Berlin (CEST).
    let rows = check(
        "15-stderr-default-standby",
        "2026-10-24T22:00:00Z",
        60,
        &["--by", "hour", "--tz", "Europe/Berlin"],
        &[
            "2026-10-25T00:00:00+02:00",
            "2026-10-25T01:00:00+02:00",
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:00:00+01:00",
            "2026-10-25T03:00:00+01:00",
            "2026-10-25T04:00:00+01:00",
        ],
        // No time checkpoint follows another in the standby's log: its
        // checkpoint_timeout cannot be told, so no pace either.
        None,
    );
    let total: i64 = rows.iter().map(|r| started(r, "restartpoints")).sum();
    assert_eq!(total, 25);
}

#[test]
fn empty_buckets_inside_an_asked_range_are_zero_rows_and_said_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let log = crate::import_behaviour::fixture("15-stderr-default-std");
    ok(&["import", "--db", db, "--cluster", "c", log.to_str().unwrap()]);
    // The log is of 2026-11-22 (UTC); ask for three days around it.
    let args =
        ["history", "--db", db, "--tz", "UTC", "--since", "2026-11-21", "--until", "2026-11-24", "--format", "json"];
    let out = walwatch(&args);
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let starts: Vec<&str> = rows.iter().map(|r| r["bucket_start"].as_str().unwrap()).collect();
    assert_eq!(starts, ["2026-11-21T00:00:00+00:00", "2026-11-22T00:00:00+00:00", "2026-11-23T00:00:00+00:00"]);
    for quiet in [&rows[0], &rows[2]] {
        assert_eq!(started(quiet, "checkpoints"), 0);
        assert_eq!((quiet["forced_share"].clone(), quiet["wal_rate_kb_s"]["p95"].clone()), (Value::Null, Value::Null));
    }
    assert!(started(&rows[1], "checkpoints") > 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("its stored history spans 2026-11-22T"), "{stderr}");
    // Nothing at all in the range: zero rows and a sentence saying so.
    let out = walwatch(&["history", "--db", db, "--tz", "UTC", "--since", "2026-10-01", "--until", "2026-10-02"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no checkpoints or events from 2026-10-01T00:00:00+00:00"));
}

/// A central's clusters each say once that their history covers part of
/// the range: the first three by name, the others in one line.
#[test]
fn partial_coverage_names_three_clusters_and_counts_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let log = crate::import_behaviour::fixture("15-stderr-default-std");
    for cluster in ["a", "b", "c", "d", "e"] {
        ok(&["import", "--db", db, "--cluster", cluster, log.to_str().unwrap()]);
    }
    let out = walwatch(&["history", "--db", db, "--tz", "UTC", "--since", "2026-11-21", "--until", "2026-11-24"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named: Vec<&str> = stderr.lines().filter(|l| l.contains("its stored history spans 2026-11-22T")).collect();
    assert_eq!(named.len(), 3, "{stderr}");
    for (line, cluster) in named.iter().zip(["a", "b", "c"]) {
        assert!(line.contains(&format!("cluster \"{cluster}\"")), "{line}");
    }
    assert!(stderr.contains("2 more cluster(s) with a stored history that covers only part of the range"), "{stderr}");
    let rows = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("e        2026-11-2")).count();
    assert_eq!(rows, 3, "the last cluster's rows are all shown");
}

#[test]
fn unknown_cluster_or_zone_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let log = crate::import_behaviour::fixture("15-stderr-default-std");
    ok(&["import", "--db", db, "--cluster", "c", log.to_str().unwrap()]);
    let out = walwatch(&["history", "--db", db, "--cluster", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cluster \"nope\""));
    let out = walwatch(&["history", "--db", db, "--tz", "Mars/Olympus"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown --tz"));
}

#[test]
fn csv_and_table_carry_the_json_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let log = crate::import_behaviour::fixture("15-stderr-default-crashimm");
    ok(&["import", "--db", db, "--cluster", "c", log.to_str().unwrap()]);
    let base = ["history", "--db", db, "--tz", "UTC", "--by", "hour"];
    let json: Vec<Value> = serde_json::from_str(&ok(&[&base[..], &["--format", "json"]].concat())).unwrap();
    let csv = ok(&[&base[..], &["--format", "csv"]].concat());
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(cell("checkpoints_wal"), json[0]["checkpoints"]["wal"].to_string());
    assert_eq!(cell("checkpoints_end-of-recovery"), json[0]["checkpoints"]["end-of-recovery"].to_string());
    assert_eq!(cell("wal_rate_kb_s_p95"), json[0]["wal_rate_kb_s"]["p95"].to_string());
    assert_eq!(cell("bucket_start"), "2026-11-22T08:00:00+00:00");
    assert_eq!(header.len(), 33);
    let table = ok(&base);
    let buffers = json[0]["buffers_written"].as_i64().unwrap();
    assert!(buffers >= 1000);
    let grouped = format!("{},{:03}", buffers / 1000, buffers % 1000);
    assert!(table.contains(&grouped), "{table}");
    assert!(table.contains("WAL rate p95  █"), "{table}");
}

#[test]
fn compare_sets_the_range_against_as_many_days_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, redate) = redated_logs("15-stderr-default-crashimm", tmp.path(), "2026-03-28T20:00:00Z", 1000);
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let mut import = vec!["import", "--db", db, "--cluster", "c"];
    import.extend(files.iter().map(|f| f.to_str().unwrap()));
    ok(&import);
    let range = ["--since", "2026-03-30T00:00:00+02:00", "--until", "2026-04-01T00:00:00+02:00"];
    let args =
        [&["history", "--db", db, "--tz", "Europe/Berlin", "--format", "json", "--compare"][..], &range].concat();
    let text = ok(&args);
    let got: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(got.len(), 1);
    // change_pct's keys in the order of the row's figures, as documented
    // (not alphabetical): checked on the text, since parsed maps forget it.
    let tail = &text[text.rfind("\"change_pct\"").unwrap()..];
    let at = |k: &str| tail.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} in {tail}"));
    assert!(at("checkpoints") < at("forced") && at("forced") < at("forced_share"), "{tail}");
    assert!(at("forced_share") < at("too_frequent") && at("too_frequent") < at("alerts_fired"), "{tail}");
    let (period, previous) = (&got[0]["period"], &got[0]["previous"]);
    assert_eq!(period["bucket_start"], "2026-03-30T00:00:00+02:00");
    assert_eq!(period["bucket_end"], "2026-04-01T00:00:00+02:00");
    // Two days back from a CEST midnight: one of them the 23-hour day.
    assert_eq!(previous["bucket_start"], "2026-03-28T00:00:00+01:00");
    assert_eq!(previous["bucket_end"], "2026-03-30T00:00:00+02:00");
    // The figures, from truth.json over each period.
    let t = truth("15-stderr-default-crashimm", redate);
    let now = expected("c", ("2026-03-30T00:00:00+02:00", "2026-04-01T00:00:00+02:00"), &t, &files, CRASHIMM_SPREAD);
    let before = expected("c", ("2026-03-28T00:00:00+01:00", "2026-03-30T00:00:00+02:00"), &t, &files, CRASHIMM_SPREAD);
    assert_eq!((period, previous), (&now, &before));
    let (n, b) = (now["too_frequent"].as_f64().unwrap(), before["too_frequent"].as_f64().unwrap());
    assert!(b > 0.0);
    assert_eq!(got[0]["change_pct"]["too_frequent"].as_f64().unwrap(), ((n - b) / b * 1000.0).round() / 10.0);
    assert_eq!(got[0]["change_pct"]["crashes"], Value::Null, "no crash before: no base");
}

#[test]
fn chart_writes_the_range_as_a_png_and_wants_one_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    // The storm day stretched ×100 (6.5 min of log to about 11 h), so the
    // chart's day has its cycles spread over hours.
    let (files, _) = redated_logs("15-stderr-default-crashimm", tmp.path(), "2026-11-23T06:00:00Z", 100);
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let mut import = vec!["import", "--db", db, "--cluster", "db1"];
    import.extend(files.iter().map(|f| f.to_str().unwrap()));
    ok(&import);
    let png = tmp.path().join("day.png");
    let args = ["history", "--db", db, "--tz", "Europe/Berlin", "--format", "json", "--chart", png.to_str().unwrap()];
    let out = walwatch(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // stdout is still the rows; stderr says where the chart went.
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("chart written to {}", png.display())), "{stderr}");
    assert!(stderr.contains("WAL rate per checkpoint cycle on db1, 2026-11-23 (Europe/Berlin): peak "), "{stderr}");
    assert!(stderr.contains(&format!("{} forced checkpoints", rows[0]["checkpoints"]["wal"])), "{stderr}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() <= 100 * 1024, "{} bytes", bytes.len());
    let reader = png::Decoder::new(&bytes[..]).read_info().unwrap();
    assert_eq!((reader.info().width, reader.info().height), (600, 260));

    // A second cluster: --chart needs --cluster, and names both.
    let other = crate::import_behaviour::fixture("15-stderr-default-std");
    ok(&["import", "--db", db, "--cluster", "db2", other.to_str().unwrap()]);
    std::fs::remove_file(&png).unwrap();
    let out = walwatch(&args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--chart draws one cluster: add --cluster, one of: db1, db2"), "{stderr}");
    assert!(!png.exists());
    let one = [&args[..], &["--cluster", "db2"]].concat();
    ok(&one);
    assert!(png.exists());
}

/// Server starts before PostgreSQL 12, which logs no `starting PostgreSQL`
/// line: the real logs of a primary with a crash (immediate shutdown and
/// restart) and of a standby restarted and then promoted, imported as they
/// are and with their start lines taken out (a PostgreSQL 11 server logs
/// the rest of this sequence word for word). Both give the count of start
/// lines: the standby's third `ready` (the promotion) is no start.
#[test]
fn server_starts_before_postgresql_12_are_read_from_the_ready_lines() {
    for (run, want) in
        [("15-stderr-default-crashimm", 2), ("15-stderr-default-standby", 2), ("15-stderr-default-std", 1)]
    {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("w.db");
        let db = db.to_str().unwrap();
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(fixture_dir(run).join("log")).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert_eq!(lines_with(&files, "starting PostgreSQL").len(), want, "{run}");
        let mut old = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let text = std::fs::read_to_string(f).unwrap();
            let kept: String =
                text.split_inclusive('\n').filter(|l| !l.contains("LOG:  starting PostgreSQL")).collect();
            assert!(kept.len() < text.len() || !text.contains("starting PostgreSQL"), "{run}");
            let path = tmp.path().join(format!("old-{i}.log"));
            std::fs::write(&path, kept).unwrap();
            old.push(path);
        }
        for (cluster, logs) in [("new", &files), ("old", &old)] {
            let mut import = vec!["import", "--db", db, "--cluster", cluster];
            import.extend(logs.iter().map(|f| f.to_str().unwrap()));
            ok(&import);
            let rows: Vec<Value> = serde_json::from_str(&ok(&[
                "history",
                "--db",
                db,
                "--cluster",
                cluster,
                "--by",
                "hour",
                "--tz",
                "UTC",
                "--format",
                "json",
            ]))
            .unwrap();
            let starts: i64 = rows.iter().map(|r| r["server_starts"].as_i64().unwrap()).sum();
            assert_eq!(starts, want as i64, "{run} {cluster}: {rows:#?}");
        }
    }
}

/// Every cluster of a central is read on its own connection, on several
/// cores: the answer for all of them is each one's own answer, in the
/// clusters' order, whatever worker read it.
#[test]
fn all_clusters_at_once_answer_as_each_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let db = db.to_str().unwrap();
    let runs =
        ["15-stderr-default-crashimm", "15-stderr-default-std", "16-stderr-default-std", "17-stderr-default-std"];
    let clusters: Vec<String> = (0..9).map(|i| format!("c{i}")).collect();
    for (i, cluster) in clusters.iter().enumerate() {
        let log = crate::import_behaviour::fixture(runs[i % runs.len()]);
        ok(&["import", "--db", db, "--cluster", cluster, log.to_str().unwrap()]);
    }
    let range = ["--tz", "UTC", "--by", "hour", "--since", "2026-11-22", "--until", "2026-11-23", "--format", "json"];
    let json = |args: &[&str]| -> Vec<Value> { serde_json::from_str(&ok(args)).unwrap() };
    let all = json(&[&["history", "--db", db], &range[..]].concat());
    let alone: Vec<Value> =
        clusters.iter().flat_map(|c| json(&[&["history", "--db", db, "--cluster", c], &range[..]].concat())).collect();
    assert_eq!(all.len(), 9 * 24);
    assert_eq!(all, alone);
    // Not vacuous: the clusters differ, and their checkpoints are counted.
    let forced = |rows: &[Value], c: &str| -> i64 {
        rows.iter().filter(|r| r["cluster"] == c).map(|r| r["checkpoints"]["wal"].as_i64().unwrap()).sum()
    };
    assert!(forced(&all, "c0") > 10, "the crash run's storm");
    assert_ne!(forced(&all, "c0"), forced(&all, "c1"));
}
