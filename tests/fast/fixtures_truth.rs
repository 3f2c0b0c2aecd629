//! Every real PostgreSQL log under tests/fixtures/ is imported and compared
//! with its truth.json, event by event: same events at the same file, line
//! and byte offset, same counts by trigger, same timestamps, and forged
//! records rejected, exactly as many as truth.json's `forged_records`
//! (computed from the raw logs by tests/fixtures/forged_records.py).
//!
//! Two oracles that are not walwatch: the fixture's truth.json (made by the
//! corpus script) and the dumb counter in tests/support/truth.rs, which must
//! agree with each other on every fixture before walwatch is compared with
//! the counter; and the numbers of every `checkpoint complete` /
//! `restartpoint complete` line, read from the line's text with a regex in
//! the order it prints them, against what walwatch stored.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use support::truth::{numbers, Layout, Num, Truth, COMPLETE_FIELDS};
use support::{fixture_dirs as fixtures, fixture_logs as log_files};

fn walwatch(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "walwatch {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Imports a fixture run into a fresh store; returns the store path.
fn import(dir: &Path, tmp: &Path, timezone: Option<&str>) -> PathBuf {
    let db = tmp.join("w.db");
    let name = dir.file_name().unwrap().to_str().unwrap();
    let mut args =
        vec!["import".to_string(), "--db".into(), db.to_str().unwrap().into(), "--cluster".into(), name.into()];
    if let Some(tz) = timezone {
        args.extend(["--timezone".to_string(), tz.to_string()]);
    }
    args.extend(log_files(dir).iter().map(|f| f.to_str().unwrap().to_string()));
    walwatch(&args.iter().map(String::as_str).collect::<Vec<_>>());
    db
}

fn truth(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap()
}

const EVENT_KINDS: [&str; 7] = [
    "checkpoint_start",
    "checkpoint_complete",
    "restartpoint_start",
    "restartpoint_complete",
    "recovery_restart_point",
    "too_frequent",
    "parameter_changed",
];

/// (file name, line, offset, kind) of every event and checkpoint line in
/// the store (the view `line`: migrations/0022_point_lines.sql).
fn stored_events(db: &Path) -> BTreeSet<(String, u64, u64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT s.path, e.line, e.offset, e.kind FROM line e JOIN source s ON s.id = e.source_id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let path: String = r.get(0)?;
            let name = Path::new(&path).file_name().unwrap().to_str().unwrap().to_string();
            Ok((name, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64, r.get::<_, String>(3)?))
        })
        .unwrap();
    rows.map(Result::unwrap).filter(|e| EVENT_KINDS.contains(&e.3.as_str())).collect()
}

fn truth_events(t: &Value) -> BTreeSet<(String, u64, u64, String)> {
    t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| EVENT_KINDS.contains(&e["type"].as_str().unwrap()))
        .map(|e| {
            (
                e["file"].as_str().unwrap().to_string(),
                e["line"].as_u64().unwrap(),
                e["offset"].as_u64().unwrap(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn trigger_of(flags: &str) -> &'static str {
    let has = |w: &str| flags.split_whitespace().any(|f| f == w || (w == "wal" && f == "xlog"));
    ["shutdown", "end-of-recovery", "wal", "time"].into_iter().find(|w| has(w)).unwrap_or("manual")
}

fn check_summary(name: &str, summary: &Value, t: &Value) {
    let c = &t["counts"];
    for (key, start, complete) in [
        ("checkpoints", "checkpoint_start", "checkpoint_complete"),
        ("restartpoints", "restartpoint_start", "restartpoint_complete"),
    ] {
        assert_eq!(summary[key]["started"], c[start]["total"], "{name}: {key} started");
        assert_eq!(summary[key]["completed"], c[complete], "{name}: {key} completed");
        let mut want = serde_json::Map::new();
        for trig in ["shutdown", "end-of-recovery", "wal", "time", "manual"] {
            want.insert(trig.into(), 0.into());
        }
        for (flags, n) in c[start]["by_flags"].as_object().unwrap() {
            let slot = want.get_mut(trigger_of(flags)).unwrap();
            *slot = (slot.as_i64().unwrap() + n.as_i64().unwrap()).into();
        }
        assert_eq!(summary[key]["by_trigger"], Value::Object(want), "{name}: {key} by trigger");
    }
    assert_eq!(summary["too_frequent"], c["too_frequent"], "{name}: too_frequent");
    assert_eq!(summary["parameter_changes"], c["parameter_changed"], "{name}: parameter changes");
    // One rejection per forged record and per whole log line forged inside
    // another record (tests/fixtures/forged_records.py), not per grep line.
    let forged = c["forged_records"]["total"].as_i64().unwrap();
    assert_eq!(summary["rejected"].as_i64(), Some(forged), "{name}: rejected vs truth.json forged_records");
}

/// Checks the stored details of each event against truth.json.
fn check_details(name: &str, db: &Path, t: &Value) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tz = jiff::tz::TimeZone::get(t["log_timezone"].as_str().unwrap()).unwrap();
    for e in t["events"].as_array().unwrap() {
        let kind = e["type"].as_str().unwrap();
        if !EVENT_KINDS.contains(&kind) {
            continue;
        }
        // A start line's flags are in its checkpoint row (migrations/0021_compact.sql).
        let (at, data, flags): (i64, String, Option<String>) = conn
            .query_row(
                "SELECT e.at, e.data, (SELECT k.flags FROM checkpoint k
                                       WHERE k.start_source_id = e.source_id AND k.start_offset = e.offset)
                 FROM line e JOIN source s ON s.id = e.source_id WHERE e.offset = ?1 AND e.kind = ?2 AND s.path LIKE ?3",
                rusqlite::params![e["offset"].as_i64().unwrap(), kind, format!("%{}", e["file"].as_str().unwrap())],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap_or_else(|err| panic!("{name}: {kind} at offset {} not stored: {err}", e["offset"]));
        let ts = e["ts"].as_str().unwrap();
        let civil = ts.rsplit_once(' ').unwrap().0;
        let fmt = if civil.contains('.') { "%Y-%m-%d %H:%M:%S%.f" } else { "%Y-%m-%d %H:%M:%S" };
        let want = jiff::civil::DateTime::strptime(fmt, civil).unwrap().to_zoned(tz.clone()).unwrap().timestamp();
        assert_eq!(at, want.as_microsecond(), "{name}: time of {kind} at line {}", e["line"]);
        let data: Value = serde_json::from_str(&data).unwrap();
        match kind {
            "checkpoint_start" | "restartpoint_start" => {
                let want = e["flags"].as_str().unwrap().replace("xlog", "wal");
                assert_eq!(flags.as_deref(), Some(want.as_str()), "{name}: flags at line {}", e["line"]);
            }
            "too_frequent" => assert_eq!(data["hint"], e["hint_ok"], "{name}: hint at line {}", e["line"]),
            _ => {}
        }
    }
}

#[test]
fn every_fixture_matches_its_truth_event_by_event() {
    let mut failures = Vec::new();
    for dir in fixtures() {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let t = truth(&dir);
        let tmp = tempfile::tempdir().unwrap();
        let db = import(&dir, tmp.path(), t["log_timezone"].as_str());
        let result = std::panic::catch_unwind(|| {
            let got = stored_events(&db);
            let want = truth_events(&t);
            let missing: Vec<_> = want.difference(&got).take(5).collect();
            let extra: Vec<_> = got.difference(&want).take(5).collect();
            assert!(missing.is_empty() && extra.is_empty(), "{name}: missing {missing:?}, extra {extra:?}");
            let summary: Value =
                serde_json::from_str(&walwatch(&["summary", "--db", db.to_str().unwrap(), "--format", "json"]))
                    .unwrap();
            check_summary(&name, &summary, &t);
            check_details(&name, &db, &t);
        });
        if let Err(e) = result {
            failures.push(e.downcast_ref::<String>().cloned().unwrap_or_else(|| name.clone()));
        }
    }
    assert!(failures.is_empty(), "{} fixture(s) failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn unambiguous_zones_import_without_timezone() {
    // UTC, CET (Europe/Berlin in November), EST, JST need no --timezone.
    for run in ["15-stderr-default-std", "16-stderr-default-std", "15-stderr-pgbadger-std", "15-stderr-default-i18n-ja"]
    {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run);
        let t = truth(&dir);
        let tmp = tempfile::tempdir().unwrap();
        let db = import(&dir, tmp.path(), None);
        check_details(run, &db, &t);
    }
}

/// Runs `check` on every fixture, collecting failures so one run shows them all.
fn each_fixture(check: impl Fn(&str, &Path, &Value)) {
    let mut failures = Vec::new();
    for dir in fixtures() {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let t = truth(&dir);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&name, &dir, &t)));
        if let Err(e) = result {
            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(msg.unwrap_or_else(|| name.clone()));
        }
    }
    assert!(failures.is_empty(), "{} fixture(s) failed:\n{}", failures.len(), failures.join("\n"));
}

fn counter(dir: &Path, t: &Value) -> Truth {
    Truth::read(&log_files(dir), &Layout::of_fixture(t))
}

/// truth.json's counts by trigger of one point kind: (shutdown, end-of-recovery, wal, time, manual).
fn by_trigger(c: &Value) -> [i64; 5] {
    let mut out = [0; 5];
    for (flags, n) in c["by_flags"].as_object().unwrap() {
        let i = ["shutdown", "end-of-recovery", "wal", "time", "manual"].iter().position(|t| *t == trigger_of(flags));
        out[i.unwrap()] += n.as_i64().unwrap();
    }
    out
}

/// The counter is proven on the fixtures first: over each fixture's raw log
/// (stderr with its prefix, csvlog, jsonlog; C, de, fr, ja) it finds exactly
/// truth.json's counts, HINTs and forged records included, and the same
/// complete lines (file, line, message) as truth.json's events.
#[test]
fn the_independent_counter_agrees_with_every_fixtures_truth_json() {
    each_fixture(|name, dir, t| {
        let got = counter(dir, t);
        let c = &t["counts"];
        let n = |v: &Value| v.as_i64().unwrap_or_else(|| panic!("{name}: not a count: {v}"));
        let cp = by_trigger(&c["checkpoint_start"]);
        let rp = by_trigger(&c["restartpoint_start"]);
        let want = [
            ("checkpoint starts", n(&c["checkpoint_start"]["total"]), got.starts),
            ("checkpoint completes", n(&c["checkpoint_complete"]), got.completes),
            ("shutdown", cp[0], got.shutdown),
            ("end-of-recovery", cp[1], got.end_of_recovery),
            ("wal", cp[2], got.wal),
            ("time", cp[3], got.time),
            ("manual", cp[4], got.manual),
            ("restartpoint starts", n(&c["restartpoint_start"]["total"]), got.restartpoint_starts),
            ("restartpoint completes", n(&c["restartpoint_complete"]), got.restartpoint_completes),
            ("recovery restart points", n(&c["recovery_restart_point"]), got.recovery_restart_points),
            ("too frequent", n(&c["too_frequent"]), got.too_frequent),
            ("hints", n(&c["hint"]), got.hints),
            ("parameter changes", n(&c["parameter_changed"]), got.parameter_changes),
            ("forged records", n(&c["forged_records"]["total"]), got.forged_records),
        ];
        for (what, want, got_n) in want {
            assert_eq!(got_n, want, "{name}: counter's {what} vs truth.json ({})", got.brief());
        }
        assert_eq!(got.restartpoint_by_trigger, rp, "{name}: counter's restartpoints by trigger vs truth.json");
        let completes: Vec<(String, u64, String, String)> = t["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| matches!(e["type"].as_str(), Some("checkpoint_complete" | "restartpoint_complete")))
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap().to_string();
                (s("file"), e["line"].as_u64().unwrap(), s("type"), s("message"))
            })
            .collect();
        let mine: Vec<(String, u64, String, String)> = got
            .complete_list
            .iter()
            .map(|c| (c.file.clone(), c.line as u64, c.kind.to_string(), c.message.clone()))
            .collect();
        assert_eq!(mine, completes, "{name}: counter's complete lines vs truth.json's events");
        let mut flags: Vec<String> = got.start_list.iter().map(|s| s.flags.clone()).collect();
        let mut want_flags: Vec<String> = t["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "checkpoint_start")
            .map(|e| e["flags"].as_str().unwrap().to_string())
            .collect();
        flags.sort();
        want_flags.sort();
        assert_eq!(flags, want_flags, "{name}: counter's checkpoint start flags vs truth.json");
    });
}

/// walwatch against the counter, not against itself: every summary count
/// (rejected included) and the HINT flags of the too-frequent warnings.
#[test]
fn walwatch_summary_equals_the_independent_counter_on_every_fixture() {
    each_fixture(|name, dir, t| {
        let want = counter(dir, t);
        let tmp = tempfile::tempdir().unwrap();
        let db = import(dir, tmp.path(), t["log_timezone"].as_str());
        let summary: Value =
            serde_json::from_str(&walwatch(&["summary", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap();
        for (path, n) in want.expected_summary() {
            let got = path.split('.').fold(&summary, |v, k| &v[k]);
            assert_eq!(got.as_i64(), Some(n), "{name}: walwatch summary {path} vs the counter ({})", want.brief());
        }
        // Read with its own layout, no line that looks like an event fails to fit.
        assert_eq!(summary["unmatched"].as_i64(), Some(0), "{name}: unmatched lines");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let hints: i64 = conn
            .query_row(
                "SELECT count(*) FROM event WHERE kind = 'too_frequent' AND json_extract(data, '$.hint') = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hints, want.hints, "{name}: too-frequent warnings stored with their HINT vs the counter");
        println!("{name}: walwatch = counter: {}", want.brief());
    });
}

/// The numbers of every complete line of every fixture, in every language,
/// equal the checkpoint row walwatch stored for it, field by field in the
/// order the line prints them: buffers, percent, (SLRU buffers, 18+), WAL
/// files added/removed/recycled, write/sync/total, sync files, longest,
/// average, distance, estimate, (LSN and redo LSN, 17+).
#[test]
fn complete_line_numbers_equal_the_stored_checkpoint_fields() {
    let fields: Vec<&str> = COMPLETE_FIELDS.iter().copied().chain(["kind"]).collect();
    each_fixture(|name, dir, t| {
        let tmp = tempfile::tempdir().unwrap();
        let db = import(dir, tmp.path(), t["log_timezone"].as_str());
        let conn = rusqlite::Connection::open(&db).unwrap();
        let sql = format!(
            "SELECT s.path, c.complete_line, {} FROM checkpoint c JOIN source s ON s.id = c.complete_source_id",
            fields.iter().map(|f| format!("c.{f}")).collect::<Vec<_>>().join(", ")
        );
        let mut stmt = conn.prepare(&sql).unwrap();
        let rows: Vec<((String, u64), Vec<rusqlite::types::Value>)> = stmt
            .query_map([], |r| {
                let path: String = r.get(0)?;
                let file = Path::new(&path).file_name().unwrap().to_str().unwrap().to_string();
                let vals = (0..fields.len()).map(|i| r.get(i + 2)).collect::<Result<Vec<_>, _>>()?;
                Ok(((file, r.get::<_, i64>(1)? as u64), vals))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let lines: Vec<&Value> = t["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| matches!(e["type"].as_str(), Some("checkpoint_complete" | "restartpoint_complete")))
            .collect();
        assert_eq!(rows.len(), lines.len(), "{name}: stored completed points vs complete lines in truth.json");
        let mut checked = 0;
        for e in lines {
            let key = (e["file"].as_str().unwrap().to_string(), e["line"].as_u64().unwrap());
            let (_, vals) = rows
                .iter()
                .find(|(k, _)| *k == key)
                .unwrap_or_else(|| panic!("{name}: no checkpoint row completed by {key:?}"));
            let kind = e["type"].as_str().unwrap().trim_end_matches("_complete");
            assert_eq!(vals[16], rusqlite::types::Value::Text(kind.into()), "{name}: kind of {key:?}");
            let stored: Vec<Num> = vals[..16]
                .iter()
                .filter_map(|v| match v {
                    rusqlite::types::Value::Null => None,
                    rusqlite::types::Value::Integer(i) => Some(Num::Dec(*i as f64)),
                    rusqlite::types::Value::Real(f) => Some(Num::Dec(*f)),
                    rusqlite::types::Value::Text(s) => Some(Num::Lsn(s.clone())),
                    other => panic!("{name}: unexpected column value {other:?}"),
                })
                .collect();
            let message = e["message"].as_str().unwrap();
            assert_eq!(
                stored,
                numbers(message),
                "{name}: stored fields (left) vs the numbers of line {key:?}: {message}"
            );
            checked += 1;
        }
        println!("{name}: {checked} complete lines, every number equal");
    });
}

/// The number reader itself, on lines as PostgreSQL 18 (SLRU, LSNs), German
/// (decimal commas next to a period) and Japanese (units glued on) print them.
#[test]
fn numbers_are_read_in_print_order_in_every_language() {
    use Num::{Dec as D, Lsn as L};
    let pg18 = "checkpoint complete: wrote 22 buffers (0.5%), wrote 0 SLRU buffers; 1 WAL file(s) added, 1 removed, 0 recycled; write=0.289 s, sync=0.073 s, total=0.446 s; sync files=2, longest=0.072 s, average=0.037 s; distance=22440 kB, estimate=22440 kB; lsn=0/6E39E18, redo lsn=0/591E360";
    let want = vec![
        D(22.0),
        D(0.5),
        D(0.0),
        D(1.0),
        D(1.0),
        D(0.0),
        D(0.289),
        D(0.073),
        D(0.446),
        D(2.0),
        D(0.072),
        D(0.037),
        D(22440.0),
        D(22440.0),
        L("0/6E39E18".into()),
        L("0/591E360".into()),
    ];
    assert_eq!(numbers(pg18), want);
    let de = "Checkpoint komplett: 33 Puffer geschrieben (0.8%); 0 WAL-Datei(en) hinzugefügt, 1 entfernt, 0 wiederverwendet; Schreiben=0,212 s, Sync=0,134 s, gesamt=0,391 s; sync. Dateien=30, längste=0,074 s, Durchschnitt=0.005 s; Entfernung=11722 kB, Schätzung=11722 kB";
    let want = [33.0, 0.8, 0.0, 1.0, 0.0, 0.212, 0.134, 0.391, 30.0, 0.074, 0.005, 11722.0, 11722.0];
    assert_eq!(numbers(de), want.map(D));
    let ja = "チェックポイント完了: 155個のバッファを出力 (3.8%); 0個のWALファイルを追加、1個を削除、0個を再利用; 書き出し=0.237秒, 同期=0.159秒, 全体=0.510秒; 同期したファイル=30, 最長=0.092秒, 平均=0.006秒; 距離=12284 kB, 予測=12284 kB";
    let want = [155.0, 3.8, 0.0, 1.0, 0.0, 0.237, 0.159, 0.51, 30.0, 0.092, 0.006, 12284.0, 12284.0];
    assert_eq!(numbers(ja), want.map(D));
}
