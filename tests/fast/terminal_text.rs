//! Names others choose, shown on a terminal: a real log file whose name
//! holds an ANSI colour sequence, a line break followed by a line that looks
//! like walwatch's own (`  problem: …`) and a bidi override. Every table and
//! report line shows those characters escaped — `import`'s report,
//! `status`'s file table and its warnings that name the file, `forget` — so
//! the name can neither recolour the terminal nor add a line to the report,
//! nor read backwards. JSON has them escaped by its own rules, and gives the
//! name back exactly.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::daemon::fixture;
use support::{describe, walwatch};

/// The name's characters that a terminal acts on instead of showing.
const HOSTILE: &str = "pg\u{1b}[31mRED\u{1b}[0m\n  problem: none, all is well\u{202e}gol.log";
/// The same as the report lines show it.
const SHOWN: &str = r"pg\u{1b}[31mRED\u{1b}[0m\n  problem: none, all is well\u{202e}gol.log";

fn run(args: &[&str]) -> Output {
    let out = walwatch().args(args).output().expect("spawn walwatch");
    assert!(out.status.success() || out.status.code() == Some(4), "walwatch {args:?}: {}", describe(&out));
    out
}

/// Nothing a terminal would act on: no control character but the line
/// breaks between lines, no format character.
fn assert_inert(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{what} writes {bad:?} to the terminal:\n{text}");
    let fake: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("problem: none")).collect();
    assert!(fake.is_empty(), "{what} shows a line the file name made: {fake:?}\n{text}");
}

#[test]
fn a_file_named_with_escapes_and_a_line_break_is_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(HOSTILE);
    // A real server's log, and after it a client's look-alike (refused) and
    // a line in another layout (unmatched): status names the file for both.
    let mut content = fixture("15-stderr-default-std");
    content.extend_from_slice(b"2026-11-22 08:08:04.000 UTC [30000] app@shop LOG:  checkpoint starting: wal\n");
    content.extend_from_slice(b"Nov 22 08:08:05 checkpoint starting: time\n");
    std::fs::write(&log, &content).unwrap();
    let (db, path) = (dir.path().join("w.db"), log.to_str().unwrap().to_string());
    let db_s = db.to_str().unwrap();
    let shown_path = format!("{}/{SHOWN}", dir.path().display());

    let import = run(&["import", "--db", db_s, "--cluster", "c", &path]);
    let text = String::from_utf8(import.stdout).unwrap();
    assert_inert("import", &text);
    assert_eq!(
        text.lines().next(),
        Some(format!("{shown_path} (cluster c, stderr, prefix '%m [%p] %q%u@%d ')").as_str())
    );

    let status = run(&["status", "--db", db_s]);
    let text = String::from_utf8(status.stdout).unwrap();
    assert_inert("status", &text);
    let row =
        text.lines().find(|l| l.starts_with(&shown_path)).unwrap_or_else(|| panic!("no row for the file:\n{text}"));
    let size = content.len();
    let grouped = format!("{},{:03}", size / 1000, size % 1000);
    let cells: Vec<&str> = row[shown_path.len()..].split_whitespace().collect();
    assert_eq!(cells, [grouped.as_str(), grouped.as_str(), "0"], "offset, size and lag of {row:?}");
    let warnings: Vec<&str> = text.lines().filter(|l| l.starts_with("  warning: ")).collect();
    assert_eq!(
        warnings,
        [
            format!("  warning: 1 line refused as forged in the files read in the last 24h, the last at {shown_path}:117: written by a client session"),
            format!("  warning: {shown_path}: 1 line(s) that look like PostgreSQL events did not fit its format or prefix (counted as unmatched, neither events nor rejected)"),
        ],
        "{text}"
    );

    // JSON gives the name back exactly.
    let json = run(&["status", "--db", db_s, "--format", "json"]);
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["clusters"][0]["files"][0]["path"], Value::String(path.clone()));

    let forget = run(&["forget", "--db", db_s, &path]);
    let text = String::from_utf8(forget.stdout).unwrap();
    assert_inert("forget", &text);
    assert_eq!(text.lines().next(), Some(format!("forgot {shown_path} (cluster c)").as_str()));
    assert!(Path::new(&path).exists());
}
