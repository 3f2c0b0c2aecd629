//! A log rewritten in place, shorter, with the same first bytes (an
//! editor's save, a copy put back over it): read again from its start, and
//! every checkpoint it holds is stored once, wherever its lines moved to.
//! The log: fixture 15-stderr-default-noise, a real PostgreSQL 15 server.

use std::path::Path;

use super::{import, Options};
use crate::frame::time::TimeContext;
use crate::store::Store;

const FIXTURE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
const PREFIX: &str = "%m [%p] %q%u@%d ";

fn lines() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
    text.lines().map(|l| format!("{l}\n")).collect()
}

/// Whether line `i` begins a record (a continuation line has no time).
fn begins_record(lines: &[String], i: usize) -> bool {
    lines.get(i).is_none_or(|l| l.starts_with("2026-"))
}

/// Checkpoint rows, and the events, of the store at `db`.
fn counts(db: &Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    (count("SELECT count(*) FROM checkpoint"), count("SELECT count(*) FROM line"))
}

fn import_file(db: &Path, file: &Path) -> super::ImportReport {
    let mut store = Store::open(db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap()
}

/// Lines `cut` of the log left out, `cut` on record boundaries.
fn without(lines: &[String], cut: std::ops::Range<usize>) -> String {
    assert!(begins_record(lines, cut.start) && begins_record(lines, cut.end), "{cut:?}");
    lines[..cut.start].concat() + &lines[cut.end..].concat()
}

/// The first checkpoint start line at or after line `from`: (its line
/// index, the index just past its complete line's record).
fn checkpoint_pair_from(lines: &[String], from: usize) -> (usize, usize) {
    let start = (from..lines.len()).find(|&i| lines[i].contains("LOG:  checkpoint starting: ")).unwrap();
    let complete = (start..lines.len()).find(|&i| lines[i].contains("LOG:  checkpoint complete: ")).unwrap();
    let end = (complete + 1..=lines.len()).find(|&i| begins_record(lines, i)).unwrap();
    (start, end)
}

/// At least 20 lines from `from` on without a checkpointer's line, whole
/// records.
fn client_lines(lines: &[String], from: usize) -> std::ops::Range<usize> {
    let quiet = |i: usize| !lines[i].contains("[25162]");
    let start = (from..lines.len() - 20).find(|&i| begins_record(lines, i) && (i..i + 20).all(quiet)).unwrap();
    let end = (start..lines.len()).take_while(|&i| quiet(i)).filter(|&i| begins_record(lines, i)).last().unwrap();
    start..end
}

/// Client lines between two checkpoints taken out: the checkpoints after
/// them move to earlier offsets, and are the same checkpoints.
#[test]
fn a_log_rewritten_without_some_lines_stores_no_checkpoint_twice() {
    let lines = lines();
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    std::fs::write(&file, lines.concat()).unwrap();
    let first = import_file(&db, &file);
    let (checkpoints, events) = counts(&db);
    assert!(checkpoints > 10 && first.stored as i64 == events, "{checkpoints} {events} {}", first.stored);

    // Client lines only, between two checkpoints in the second half.
    let cut = client_lines(&lines, lines.len() / 2);
    assert!(cut.len() >= 20 && cut.end < lines.len() - 100, "{cut:?}");
    std::fs::write(&file, without(&lines, cut)).unwrap();
    let again = import_file(&db, &file);
    assert!(again.warnings.iter().any(|w| w.contains("shrank below byte")), "{:?}", again.warnings);
    assert_eq!(again.stored, 0, "every event of the rewritten file was stored before");
    assert_eq!(counts(&db), (checkpoints, events));
}

/// A whole checkpoint taken out: what the server logged stays in the
/// history (the checkpoint happened), and the rest is not stored twice;
/// lines appended after the rewrite are new and stored.
#[test]
fn a_checkpoint_edited_out_of_a_log_stays_and_the_rest_is_stored_once() {
    let lines = lines();
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    let half = (lines.len() / 2..).find(|&i| begins_record(&lines, i)).unwrap();
    std::fs::write(&file, lines[..half].concat()).unwrap();
    import_file(&db, &file);
    let (checkpoints, events) = counts(&db);

    let (start, end) = checkpoint_pair_from(&lines, lines.len() / 4);
    assert!(end < half);
    let edited = without(&lines[..half], start..end);
    std::fs::write(&file, &edited).unwrap();
    let again = import_file(&db, &file);
    assert_eq!(again.stored, 0, "{:?}", again.warnings);
    assert_eq!(counts(&db), (checkpoints, events));

    // The server goes on writing: the rest of the log, appended.
    std::fs::write(&file, edited + &lines[half..].concat()).unwrap();
    let more = import_file(&db, &file);
    let whole = tempfile::tempdir().unwrap();
    let (whole_db, whole_file) = (whole.path().join("w.db"), whole.path().join("postgresql.log"));
    std::fs::write(&whole_file, lines.concat()).unwrap();
    import_file(&whole_db, &whole_file);
    assert_eq!(counts(&db), counts(&whole_db), "{} stored after the rewrite", more.stored);
}
