//! A store written before the compact layout (migrations/0021_compact.sql)
//! keeps every row's meaning when walwatch opens it: the same checkpoint
//! rows, the same events (a checkpoint line's copy of its row's fields
//! aside), the same day tally, and every query command prints what it
//! prints on a store walwatch wrote in the new layout from the same logs.

use crate::support;

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use support::walwatch;

/// Migrations of the layout before the compact one.
const OLD_VERSION: usize = 20;

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

/// The schema steps before the compact layout, from the migration files.
fn old_schema(conn: &Connection) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/migrations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > OLD_VERSION, "{files:?}");
    for file in &files[..OLD_VERSION] {
        conn.execute_batch(&std::fs::read_to_string(file).unwrap()).unwrap();
    }
    conn.pragma_update(None, "user_version", OLD_VERSION as i64).unwrap();
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid")).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The same store as `new` in the layout before: its rows copied into the
/// schema of migration 0020, each checkpoint line's event with its fields
/// as JSON again, as walwatch wrote them then. The checkpoint rows' insert
/// trigger makes the day tally.
fn old_copy(new: &Path, old: &Path) {
    let conn = Connection::open(old).unwrap();
    old_schema(&conn);
    conn.execute("ATTACH ?1 AS new", [s(new)]).unwrap();
    conn.execute_batch("DELETE FROM store_identity").unwrap();
    for table in ["cluster", "source", "event", "checkpoint", "setting", "setting_read", "store_identity"] {
        let cols = columns(&conn, table).join(", ");
        conn.execute_batch(&format!("INSERT INTO main.{table}({cols}) SELECT {cols} FROM new.{table} ORDER BY rowid"))
            .unwrap();
    }
    conn.execute_batch(
        "UPDATE event SET data = (SELECT json_object('flags', json_array(k.flags)) FROM checkpoint k
                                  WHERE k.start_event_id = event.id)
          WHERE kind IN ('checkpoint_start', 'restartpoint_start');
         UPDATE event SET data = (SELECT CASE WHEN k.truncated
                                      THEN json_object('distance_kb', k.distance_kb, 'estimate_kb', k.estimate_kb,
                                                       'truncated', json('true'))
                                      ELSE json_object('distance_kb', k.distance_kb, 'estimate_kb', k.estimate_kb) END
                                  FROM checkpoint k WHERE k.complete_event_id = event.id)
          WHERE kind IN ('checkpoint_complete', 'restartpoint_complete');
         DETACH new;",
    )
    .unwrap();
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

/// The rows whose meaning must survive: checkpoints, events without the
/// checkpoint lines' JSON, the tally.
fn rows(db: &Path) -> Vec<Vec<String>> {
    let data = format!("CASE WHEN kind IN {POINT_LINES} THEN '-' ELSE quote(data) END");
    vec![
        dump(db, "checkpoint", "id", "data"),
        dump(db, "event", "id", &data),
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
fn a_store_of_the_layout_before_keeps_every_rows_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let (new, old) = (dir.path().join("new/store.db"), dir.path().join("old/store.db"));
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    imported(&new);
    old_copy(&new, &old);

    let conn = Connection::open(&old).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    // What the migration has to carry: both kinds of points, cut lines, and
    // every checkpoint line's event with its fields, which only the old
    // layout keeps there.
    assert!(count("SELECT count(*) FROM checkpoint WHERE kind = 'restartpoint'") > 0);
    assert!(count("SELECT count(*) FROM checkpoint WHERE truncated = 1") > 0);
    assert!(count("SELECT count(*) FROM checkpoint WHERE start_event_id IS NULL OR complete_event_id IS NULL") > 0);
    assert_eq!(count(&format!("SELECT count(*) FROM event WHERE kind IN {POINT_LINES} AND data = '{{}}'")), 0);
    assert!(count("SELECT count(*) FROM sqlite_master WHERE name = 'checkpoint_cluster_started'") == 1);
    drop(conn);
    let before = rows(&old);
    assert!(before[0].len() > 20 && before[1].len() > before[0].len(), "{} {}", before[0].len(), before[1].len());

    // The first command on the old store migrates it.
    let printed = outputs(&old);
    let conn = Connection::open(&old).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("PRAGMA user_version"), count_migrations());
    assert_eq!(count(&format!("SELECT count(*) FROM event WHERE kind IN {POINT_LINES} AND data <> '{{}}'")), 0);
    assert_eq!(count("SELECT count(*) FROM sqlite_master WHERE name = 'checkpoint_cluster_started'"), 0);
    assert_eq!(count("SELECT count(*) FROM pragma_foreign_key_check"), 0);
    drop(conn);

    assert_eq!(rows(&old), before, "the rows after the migration");
    assert_eq!(rows(&new), before, "the rows walwatch writes in the new layout");
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
