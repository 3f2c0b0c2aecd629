//! The too-frequent warning's HINT, through the real pipeline: lines of a
//! real PostgreSQL 15 log (fixture 15-stderr-default-noise) rearranged into
//! the shapes that must not count as the max_wal_size HINT, imported into a
//! real SQLite store. Every `hint_ok` in the fixtures is true, so only such
//! rearranged input tells a HINT that was seen from one that was assumed.

use std::path::Path;

use crate::frame::time::TimeContext;
use crate::ingest::{self, Options};
use crate::store::Store;

const FIXTURE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
const PREFIX: &str = "%m [%p] %q%u@%d ";

/// The first line of the fixture containing `needle`.
fn fixture_line(needle: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in {FIXTURE}")).to_string()
}

/// (line number, hint) of every too_frequent event stored in `db`.
fn stored_hints(db: &Path) -> Vec<(i64, bool)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT line, json_extract(data, '$.hint') FROM event WHERE kind = 'too_frequent' ORDER BY line")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? == 1))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn a_too_frequent_warning_counts_only_its_own_max_wal_size_hint() {
    // Checkpointer pid 25162; 25181 is a client backend of the same run.
    let warning = fixture_line("checkpoints are occurring too frequently");
    let hint = fixture_line("HINT:  Consider increasing the configuration parameter \"max_wal_size\"");
    let start = fixture_line("[25162] LOG:  checkpoint starting: wal");
    let client = fixture_line("[25181] postgres@postgres LOG:  duration:");
    assert!(warning.contains("[25162]") && hint.contains("[25162]"), "{warning}\n{hint}");
    // The same HINT written by another process, between the warning and anything of its own.
    let other_pids_hint = hint.replace("[25162]", "[25181]");
    // A real PostgreSQL HINT of another message (the postmaster's at a
    // switch to csvlog), here from the checkpointer itself.
    let foreign_hint = hint.replace(
        "Consider increasing the configuration parameter \"max_wal_size\".",
        "Future log output will go to log destination \"csvlog\".",
    );
    let log = [
        &warning,
        &hint,
        &start, // 1: its own HINT
        &warning,
        &start, // 4: no HINT at all
        &warning,
        &other_pids_hint,
        &start, // 6: another pid's HINT interleaved
        &warning,
        &foreign_hint,
        &start, // 9: a HINT, but not this one
        &warning,
        &client,
        &hint, // 12: its HINT cut off by another entry
        &warning,
        &hint,
        &client, // 15: its own HINT again, last
    ]
    .map(|l| format!("{l}\n"))
    .concat();

    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    std::fs::write(&file, log).unwrap();
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    let report = ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
    assert_eq!((report.rejected, report.events.get("too_frequent")), (0, Some(&6)), "{report:?}");
    assert_eq!(stored_hints(&db), [(1, true), (4, false), (6, false), (9, false), (12, false), (15, true)]);
}

/// (line, nth, looked_like) of the look-alikes stored from inside other entries.
fn embedded_rejections(db: &Path) -> Vec<(i64, i64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT line, nth, json_extract(data, '$.looked_like') FROM event
             WHERE kind = 'rejected' AND nth > 0 ORDER BY line, nth",
        )
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn whole_log_lines_inside_a_logged_statement_are_counted_as_forged() {
    // Fixture 15-stderr-default-forged, line 43: a client's logged statement
    // whose TAB continuation lines are copies of checkpointer lines (the
    // HINT line among them is no event). Its STATEMENT lines quote RAISE
    // LOG texts, which are messages, not whole log lines: not counted here.
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-stderr-default-forged/log/postgresql-2026-11-22_080808.log");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    ingest::import(&mut store, cluster, log.to_str().unwrap(), &opts, &time).unwrap();
    let want = [(43, 1, "checkpoint_start"), (43, 2, "checkpoint_complete"), (43, 3, "too_frequent")];
    assert_eq!(embedded_rejections(&db), want.map(|(l, n, k)| (l, n, k.to_string())));
}
