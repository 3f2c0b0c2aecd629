//! A store written in an earlier layout keeps every row's meaning when
//! walwatch opens it: before the compact layout (migrations/0021_compact.sql,
//! each checkpoint line's event with a copy of its row's fields) and before
//! the checkpoint lines became places in their rows
//! (migrations/0022_point_lines.sql, each line an event the row pointed
//! at). The same checkpoint rows, the same events, the same day tally, and
//! every query command prints what it prints on a store walwatch wrote in
//! the new layout from the same logs.

use crate::support;

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use support::walwatch;

/// Migrations of the layout before the compact one, and of the one before
/// checkpoint lines were places in their rows.
const BEFORE_COMPACT: usize = 20;
const BEFORE_POINT_LINES: usize = 21;

const POINT_LINES: &str = "('checkpoint_start', 'checkpoint_complete', 'restartpoint_start', 'restartpoint_complete')";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

/// The logs imported: a crash and its recovery, a standby's restartpoints,
/// complete lines cut short by a pager.
fn logs() -> Vec<(&'static str, Vec<PathBuf>)> {
    let dir = |run: &str| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(fixture(run).join("log")).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
    };
    vec![
        ("crash", dir("15-stderr-default-crashimm")),
        ("standby", dir("15-stderr-default-standby")),
        ("cut", vec![fixture("cut/systemctl-status-128.txt")]),
    ]
}

/// stdout of a walwatch command that must succeed.
fn output(args: &[&str]) -> String {
    let out = walwatch().args(args).output().unwrap();
    assert!(out.status.success(), "walwatch {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A store of the logs, written by this walwatch (the compact layout).
fn imported(db: &Path) {
    for (cluster, files) in logs() {
        let mut args = vec!["import", "--db", s(db), "--cluster", cluster];
        args.extend(files.iter().map(|f| s(f)));
        // The cut lines make the import exit 4 (rows stored, figures lost): expected here.
        let out = walwatch().args(&args).output().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 4)), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The schema steps of an older layout, from the migration files.
fn old_schema(conn: &Connection, version: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/migrations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > version, "{files:?}");
    for file in &files[..version] {
        conn.execute_batch(&std::fs::read_to_string(file).unwrap()).unwrap();
    }
    conn.pragma_update(None, "user_version", version as i64).unwrap();
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid")).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The same store as `new` in the layout of migration `version`, as
/// walwatch wrote it then: each checkpoint line an event, which its row
/// points at by id (and, before the compact layout, which holds its row's
/// fields as JSON). The checkpoint rows' insert trigger makes the day tally.
fn old_copy(new: &Path, old: &Path, version: usize) {
    let conn = Connection::open(old).unwrap();
    old_schema(&conn, version);
    conn.execute("ATTACH ?1 AS new", [s(new)]).unwrap();
    conn.execute_batch("DELETE FROM store_identity").unwrap();
    for table in ["cluster", "source", "event", "setting", "setting_read", "store_identity"] {
        let cols = columns(&conn, table).join(", ");
        conn.execute_batch(&format!("INSERT INTO main.{table}({cols}) SELECT {cols} FROM new.{table} ORDER BY rowid"))
            .unwrap();
    }
    // Each line's event, then the rows pointing at them.
    conn.execute_batch(
        "INSERT INTO main.event(cluster_id, source_id, offset, line, at, pid, kind, data, ahead_us)
         SELECT cluster_id, start_source_id, start_offset, start_line, started_at, pid, kind || '_start', '{}',
                start_ahead_us
         FROM new.checkpoint WHERE start_source_id IS NOT NULL ORDER BY id;
         INSERT INTO main.event(cluster_id, source_id, offset, line, at, pid, kind, data, ahead_us)
         SELECT cluster_id, complete_source_id, complete_offset, complete_line, completed_at, pid, kind || '_complete',
                '{}', complete_ahead_us
         FROM new.checkpoint WHERE complete_source_id IS NOT NULL ORDER BY id;",
    )
    .unwrap();
    let line = |half: &str| {
        format!(
            "(SELECT e.id FROM main.event e WHERE e.source_id = k.{half}_source_id AND e.offset = k.{half}_offset
                AND e.kind = k.kind || '_{half}')"
        )
    };
    let old_cols = columns(&conn, "checkpoint");
    let values: Vec<String> = old_cols
        .iter()
        .map(|c| match c.as_str() {
            "start_event_id" => line("start"),
            "complete_event_id" => line("complete"),
            other => format!("k.{other}"),
        })
        .collect();
    conn.execute_batch(&format!(
        "INSERT INTO main.checkpoint({}) SELECT {} FROM new.checkpoint k ORDER BY k.id",
        old_cols.join(", "),
        values.join(", ")
    ))
    .unwrap();
    if version < BEFORE_POINT_LINES {
        conn.execute_batch(
            "UPDATE event SET data = (SELECT json_object('flags', json_array(k.flags)) FROM checkpoint k
                                      WHERE k.start_event_id = event.id)
              WHERE kind IN ('checkpoint_start', 'restartpoint_start');
             UPDATE event SET data = (SELECT CASE WHEN k.truncated
                                          THEN json_object('distance_kb', k.distance_kb, 'estimate_kb', k.estimate_kb,
                                                           'truncated', json('true'))
                                          ELSE json_object('distance_kb', k.distance_kb, 'estimate_kb', k.estimate_kb) END
                                      FROM checkpoint k WHERE k.complete_event_id = event.id)
              WHERE kind IN ('checkpoint_complete', 'restartpoint_complete');",
        )
        .unwrap();
    }
    conn.execute_batch("DETACH new").unwrap();
}

/// Every row of `table` as text, in id order; `data` as `data` says.
fn dump(db: &Path, table: &str, order: &str, data: &str) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let cols: Vec<String> = columns(&conn, table)
        .iter()
        .map(|c| if c == "data" { data.to_string() } else { format!("quote({c})") })
        .collect();
    let sql = format!("SELECT {} FROM {table} ORDER BY {order}", cols.join(" || '|' || "));
    let mut stmt = conn.prepare(&sql).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The rows whose meaning must survive: checkpoints, events, the tally.
fn rows(db: &Path) -> Vec<Vec<String>> {
    vec![
        dump(db, "checkpoint", "id", "data"),
        dump(db, "event", "id", "quote(data)"),
        dump(db, "point_tally", "cluster_id, day, kind, trigger", "data"),
        dump(db, "source", "id", "data"),
        dump(db, "cluster", "id", "data"),
    ]
}

/// What the query commands print about the store.
fn outputs(db: &Path) -> Vec<String> {
    let window = ["--since", "2026-11-01", "--until", "2026-12-01", "--utc"];
    let mut runs: Vec<Vec<&str>> = vec![
        vec!["checkpoints", "--format", "json"],
        vec!["checkpoints", "--format", "csv"],
        vec!["checkpoints"],
        vec!["summary"],
        vec!["summary", "--format", "json"],
        vec!["history"],
        vec!["alerts", "--all"],
    ];
    for (cluster, _) in logs() {
        runs.push(vec!["history", "--cluster", cluster]);
        runs.push(vec!["history", "--cluster", cluster, "--by", "hour", "--format", "json"]);
        runs.push(vec!["suggest", "--cluster", cluster]);
    }
    runs.iter()
        .map(|args| {
            let mut all = args.clone();
            if args[0] != "alerts" && args[0] != "suggest" {
                all.extend(window);
            } else {
                all.push("--utc");
            }
            all.extend(["--db", s(db)]);
            format!("{args:?}\n{}", output(&all))
        })
        .collect()
}

#[test]
fn a_store_of_the_layout_before_the_compact_one_keeps_every_rows_meaning() {
    keeps_every_rows_meaning(BEFORE_COMPACT);
}

#[test]
fn a_store_of_the_layout_before_point_lines_keeps_every_rows_meaning() {
    keeps_every_rows_meaning(BEFORE_POINT_LINES);
}

fn keeps_every_rows_meaning(version: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (new, old) = (dir.path().join("new/store.db"), dir.path().join("old/store.db"));
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    imported(&new);
    old_copy(&new, &old, version);

    let conn = Connection::open(&old).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    // What the migration has to carry: both kinds of points, cut lines, rows
    // with one line, and every checkpoint line as an event (with its fields
    // as JSON before the compact layout).
    let lines = count("SELECT count(start_event_id) + count(complete_event_id) FROM checkpoint");
    assert!(count("SELECT count(*) FROM checkpoint WHERE kind = 'restartpoint'") > 0);
    assert!(count("SELECT count(*) FROM checkpoint WHERE truncated = 1") > 0);
    assert!(count("SELECT count(*) FROM checkpoint WHERE start_event_id IS NULL OR complete_event_id IS NULL") > 0);
    assert_eq!(count(&format!("SELECT count(*) FROM event WHERE kind IN {POINT_LINES}")), lines);
    let with_json = count(&format!("SELECT count(*) FROM event WHERE kind IN {POINT_LINES} AND data <> '{{}}'"));
    assert_eq!(with_json, if version == BEFORE_COMPACT { lines } else { 0 });
    let started_index = count("SELECT count(*) FROM sqlite_master WHERE name = 'checkpoint_cluster_started'");
    assert_eq!(started_index, i64::from(version == BEFORE_COMPACT));
    assert_eq!(count("SELECT count(*) FROM sqlite_master WHERE name = 'checkpoint_start_event'"), 1);
    drop(conn);
    let before = rows(&new);
    assert!(before[0].len() > 20 && before[1].len() > 10, "{} {}", before[0].len(), before[1].len());

    // The first command on the old store migrates it.
    let printed = outputs(&old);
    let conn = Connection::open(&old).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("PRAGMA user_version"), count_migrations());
    assert_eq!(count(&format!("SELECT count(*) FROM event WHERE kind IN {POINT_LINES}")), 0);
    assert_eq!(count(&format!("SELECT count(*) FROM line WHERE kind IN {POINT_LINES}")), lines);
    let gone = "('checkpoint_cluster_started', 'checkpoint_start_event', 'checkpoint_pairing', 'checkpoint_time')";
    assert_eq!(count(&format!("SELECT count(*) FROM sqlite_master WHERE name IN {gone}")), 0);
    assert_eq!(count("SELECT count(*) FROM pragma_foreign_key_check"), 0);
    drop(conn);

    assert_eq!(rows(&old), before, "the rows after the migration");
    let want = outputs(&new);
    assert_eq!(printed.len(), want.len());
    for (got, want) in printed.iter().zip(&want) {
        assert_eq!(got.replace(s(&old), "STORE"), want.replace(s(&new), "STORE"));
    }
}

fn count_migrations() -> i64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/migrations");
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sql"))
        .count() as i64
}
