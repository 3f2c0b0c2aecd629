//! Never silently empty, never a false accusation: a real
//! PostgreSQL 15 log read with the wrong format or prefix fails loudly, is
//! not recorded as read, and the right import then reads it whole (as the
//! independent counter says); `rejected` and `unmatched` are counted apart;
//! `walwatch forget` makes a file readable again.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::import_behaviour::{fixture, walwatch};
use crate::support::truth::Truth;

const RUN: &str = "15-stderr-default-std";

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn import(db: &Path, file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["import", "--db", s(db), "--cluster", "c"];
    args.extend_from_slice(extra);
    args.push(s(file));
    walwatch(&args)
}

fn json(args: &[&str]) -> Value {
    let out = walwatch(args);
    assert!(out.status.success(), "walwatch {args:?}: {:?}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn summary(db: &Path) -> Value {
    json(&["summary", "--db", s(db), "--format", "json"])
}

fn checkpoints(db: &Path) -> Value {
    json(&["checkpoints", "--db", s(db), "--format", "json"])
}

/// The first line of the fixture, as import quotes it.
const FIRST_LINE: &str = "2026-11-22 08:04:20.708 UTC [21752] LOG:  starting PostgreSQL 15.18";

#[test]
fn a_stderr_log_read_as_csvlog_or_with_a_wrong_prefix_is_not_used_up() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture(RUN);
    for (options, layout) in [
        (vec!["--format", "csvlog"], "it was read as csvlog format;"),
        (vec!["--prefix", "%t [%p] "], "it was read as stderr format with log_line_prefix '%t [%p] ';"),
    ] {
        let out = import(&db, &log, &options);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{options:?}: {stdout}{stderr}");
        assert!(
            stdout.contains("  events: none\n  rejected 0, unmatched 86, unparsed 25, new in store 0\n"),
            "{stdout}"
        );
        assert!(
            stderr.contains("86 line(s) look like PostgreSQL events but none could be read as one (86 did not fit"),
            "{stderr}"
        );
        assert!(stderr.contains("nothing of it was recorded as read\n"), "{stderr}");
        assert!(stderr.contains(&format!("first such line (line 1): {FIRST_LINE}")), "{stderr}");
        assert!(stderr.contains(layout) && stderr.contains("--prefix") && stderr.contains("--format"), "{stderr}");
        // Nothing recorded: no source, no event.
        let conn = rusqlite::Connection::open(&db).unwrap();
        let rows: i64 = conn
            .query_row("SELECT (SELECT count(*) FROM source) + (SELECT count(*) FROM line)", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 0, "{options:?}");
    }
    // The right import reads it whole, not "already imported", as the counter says.
    let out = import(&db, &log, &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("resumed at byte"), "{stdout}");
    assert!(stdout.contains("rejected 0, unmatched 0, unparsed 0, new in store 86\n"), "{stdout}");
    let got = summary(&db);
    let want = Truth::from_files(std::slice::from_ref(&log));
    for (path, n) in want.expected_summary() {
        assert_eq!(path.split('.').fold(&got, |v, k| &v[k]).as_i64(), Some(n), "{path}: {}", want.brief());
    }
    assert_eq!(got["unmatched"], 0);
    let first = checkpoints(&db);
    assert_eq!(first.as_array().unwrap().len(), 28);

    // forget, then the same import gives the same events.
    let out = walwatch(&["forget", "--db", s(&db), "--cluster", "c"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        format!(
            "forgot {} (cluster c)\n1 source(s), 86 event(s), 28 checkpoint row(s) forgotten; the next import or daemon read takes them from the start\n",
            log.display()
        )
    );
    assert_eq!(summary(&db)["checkpoints"]["started"], 0);
    let out = import(&db, &log, &[]);
    assert!(text(&out).0.contains("new in store 86\n"), "{:?}", text(&out));
    assert_eq!(checkpoints(&db), first);
    // forget by file (found by content under another name), then nothing left to forget.
    let copy = tmp.path().join("postgresql.log.1");
    std::fs::copy(&log, &copy).unwrap();
    let out = walwatch(&["forget", "--db", s(&db), s(&copy)]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(text(&out).0.ends_with("1 source(s), 86 event(s), 28 checkpoint row(s) forgotten; the next import or daemon read takes them from the start\n"));
    let out = walwatch(&["forget", "--db", s(&db), s(&copy)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out),
        (String::new(), format!("walwatch: {}: no source was read from it; nothing to forget\n", copy.display()))
    );
    let out = walwatch(&["forget", "--db", s(&db), "--cluster", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.starts_with("walwatch: no cluster \"nope\" in "), "{:?}", text(&out));
    let out = walwatch(&["forget", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("say what to forget: --cluster C"), "{:?}", text(&out));
}

/// A few lines that look like events but fit no prefix (a script writing to
/// the same stderr) are counted as unmatched, apart from the rejected ones,
/// and shown by `summary` (JSON and table) and `status`; more than 5 % of
/// the candidates make the import a misfit, which takes back the events it
/// had already stored.
#[test]
fn unmatched_lines_are_counted_apart_and_too_many_take_the_import_back() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let real = std::fs::read_to_string(fixture("15-stderr-default-forged")).unwrap();
    let foreign = "backup.sh: pg_backup_start done, checkpoint starting: immediate force wait\n";
    let one = tmp.path().join("one.log");
    std::fs::write(&one, format!("{real}{foreign}")).unwrap();
    let out = import(&db, &one, &["--prefix", "%m [%p] %q%u@%d "]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let truth = Truth::from_files(&[fixture("15-stderr-default-forged")]);
    assert!(stdout.contains(&format!("rejected {}, unmatched 1, unparsed ", truth.forged_records)), "{stdout}");
    let lines = real.lines().count() + 1;
    assert!(
        stdout.contains(&format!("warning: 1 line(s) that look like PostgreSQL events did not fit the stderr format with log_line_prefix '%m [%p] %q%u@%d ', the first at line {lines}")),
        "{stdout}"
    );
    let got = summary(&db);
    assert_eq!((got["rejected"].as_i64(), got["unmatched"].as_i64()), (Some(truth.forged_records), Some(1)));
    let table = walwatch(&["summary", "--db", s(&db)]);
    let table = text(&table).0;
    assert!(
        table.contains(&format!("rejected (forged)      {}\nunmatched (no fit)     1\n", truth.forged_records)),
        "{table}"
    );
    let status = json(&["status", "--db", s(&db), "--format", "json"]);
    let warnings = status["clusters"][0]["warnings"].to_string();
    assert!(
        warnings.contains("1 line(s) that look like PostgreSQL events did not fit its format or prefix"),
        "{warnings}"
    );

    // Ten such lines in the real log of 86 events: a misfit, nothing kept.
    let db2 = tmp.path().join("w2.db");
    let many = tmp.path().join("many.log");
    let std_log = std::fs::read_to_string(fixture(RUN)).unwrap();
    std::fs::write(&many, format!("{std_log}{}", foreign.repeat(10))).unwrap();
    let out = import(&db2, &many, &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(stderr.contains("10 of 96 lines that look like PostgreSQL events did not fit the stderr format with log_line_prefix '%m [%p] %q%u@%d '; nothing of it was recorded as read\n"), "{stderr}");
    assert!(stderr.contains(&format!("first such line (line 117): {}", foreign.trim_end())), "{stderr}");
    let got = summary(&db2);
    assert_eq!((got["checkpoints"]["started"].as_i64(), got["too_frequent"].as_i64()), (Some(0), Some(0)), "{got}");
    let conn = rusqlite::Connection::open(&db2).unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM source) + (SELECT count(*) FROM event) + (SELECT count(*) FROM checkpoint)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 0, "the events stored by the read were taken back");
}

/// `import --help` documents the exit status of a misfit.
#[test]
fn import_help_documents_the_misfit_exit_status() {
    let out = walwatch(&["import", "--help"]);
    let help = text(&out).0.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("Exit status: 0 every file read; 1 an error"), "{help}");
    assert!(help.contains("3 a file held lines that look like PostgreSQL events but did not fit the format or prefix it was read with"), "{help}");
}

/// An unknown `--cluster` or an empty range is an error naming what is
/// wrong (exit 1, nothing on stdout), in every query command — not an
/// empty table that reads as "nothing happened".
#[test]
fn an_unknown_cluster_or_an_empty_range_is_an_error_not_an_empty_table() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let out = import(&db, &fixture(RUN), &[]);
    assert!(out.status.success(), "{:?}", text(&out));
    let known = format!("walwatch: no cluster \"nope\" in {} (known: c)\n", s(&db));
    for command in ["checkpoints", "summary", "status", "history", "suggest", "alerts"] {
        let out = walwatch(&[command, "--db", s(&db), "--cluster", "nope"]);
        assert_eq!(out.status.code(), Some(1), "{command}: {:?}", text(&out));
        assert_eq!(text(&out), (String::new(), known.clone()), "{command}");
    }
    let empty = "walwatch: --since 2026-11-23T00:00:00.000+00:00 is not before --until 2026-11-22T00:00:00.000+00:00\n";
    for command in ["checkpoints", "summary", "history"] {
        let out = walwatch(&[command, "--db", s(&db), "--since", "2026-11-23", "--until", "2026-11-22"]);
        assert_eq!(out.status.code(), Some(1), "{command}: {:?}", text(&out));
        assert_eq!(text(&out), (String::new(), empty.to_string()), "{command}");
    }
}
