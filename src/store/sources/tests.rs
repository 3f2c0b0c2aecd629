//! Sources on real store files: found by fingerprint however the file
//! grew, read on from where they were, rewound, forgotten and taken back.

use super::*;
use crate::frame::time::TimeContext;
use crate::frame::Pos;
use crate::ingest::{self, Options};

fn spec(path: &str) -> SourceSpec<'_> {
    SourceSpec { path, meta: None, format: crate::frame::Format::Stderr, prefix: None }
}

/// Log-like content long enough for a full fingerprint.
fn content() -> Vec<u8> {
    (0..100).flat_map(|i| format!("2026-11-22 08:17:{i:02}.665 UTC [29389] LOG:  line {i}\n").into_bytes()).collect()
}

fn store() -> (tempfile::TempDir, Store, i64) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    (dir, store, cluster)
}

fn rows(store: &Store) -> i64 {
    store.conn.query_row("SELECT count(*) FROM source", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_reader_that_opened_the_file_before_it_grew_finds_the_same_source() {
    let (_dir, mut store, c) = store();
    let log = content();
    let (created, new) = store.sources_mut().find_or_create(c, &log, &spec("a.log")).unwrap();
    assert!(new);
    assert_eq!(created.fingerprint.len, FINGERPRINT_BYTES);
    // Its head was read when the file had 300 bytes; the row records 4096.
    let (found, new) = store.sources_mut().find_or_create(c, &log[..300], &spec("a.log")).unwrap();
    assert!(!new);
    assert_eq!(found.id, created.id);
    assert_eq!(found.fingerprint.len, FINGERPRINT_BYTES, "the longer fingerprint is kept");
    // Other content of the same length is another source.
    let mut other = log[..300].to_vec();
    other[299] = b'X';
    let (another, new) = store.sources_mut().find_or_create(c, &other, &spec("b.log")).unwrap();
    assert!(new);
    assert_ne!(another.id, created.id);
    assert_eq!(rows(&store), 2);
}

#[test]
fn the_fingerprint_grows_with_the_file() {
    let (_dir, mut store, c) = store();
    let log = content();
    let (first, _) = store.sources_mut().find_or_create(c, &log[..100], &spec("a.log")).unwrap();
    assert_eq!(first.fingerprint, Fingerprint::of(&log[..100]));
    let (grown, new) = store.sources_mut().find_or_create(c, &log[..2000], &spec("a.log")).unwrap();
    assert!(!new);
    assert_eq!((grown.id, grown.fingerprint), (first.id, Fingerprint::of(&log[..2000])));
    let head: Vec<u8> = store.conn.query_row("SELECT head FROM source", [], |r| r.get(0)).unwrap();
    assert_eq!(head, &log[..2000]);
    // A file with the first 100 bytes but different after is not this source any more.
    let mut other = log[..2000].to_vec();
    other[1500] = b'X';
    assert!(store.sources().find(c, &other).unwrap().is_none());
    assert_eq!(store.sources().find(c, &log).unwrap().map(|r| r.id), Some(first.id));
}

/// A row recorded before heads were kept (schema 5) is found by its hash alone.
#[test]
fn a_row_without_head_is_found_by_its_hash() {
    let (_dir, mut store, c) = store();
    let log = content();
    let (row, _) = store.sources_mut().find_or_create(c, &log[..500], &spec("a.log")).unwrap();
    store.conn.execute("UPDATE source SET head = NULL", []).unwrap();
    assert_eq!(store.sources().find(c, &log).unwrap().map(|r| r.id), Some(row.id));
    assert!(store.sources().find(c, &log[..400]).unwrap().is_none(), "shorter than recorded: needs the bytes");
}

#[test]
fn the_read_position_moves_back_only_when_rewound() {
    let (_dir, mut store, c) = store();
    let log = content();
    let (mut row, _) = store.sources_mut().find_or_create(c, &log, &spec("a.log")).unwrap();
    let read_to = |store: &Store| -> (i64, i64) {
        store.conn.query_row("SELECT read_to, line FROM source", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
    };
    let at = |offset, line| Pos { offset, line };
    let (mut behind, _) = store.sources_mut().find_or_create(c, &log, &spec("a.log")).unwrap();
    ingest::pairing::commit(&mut store, &mut row, &spec("a.log"), &[], at(4000, 50)).unwrap();
    assert_eq!(read_to(&store), (4000, 50));
    // Another reader that started earlier commits a position behind it.
    ingest::pairing::commit(&mut store, &mut behind, &spec("a.log"), &[], at(1000, 12)).unwrap();
    assert_eq!(read_to(&store), (4000, 50), "not moved back");
    // Rewritten in place and shorter: read again from the start.
    let (mut again, _) = store.sources_mut().find_or_create(c, &log, &spec("a.log")).unwrap();
    store.sources_mut().rewind(&mut again).unwrap();
    assert_eq!((again.read_to, again.line), (0, 1));
    assert_eq!(read_to(&store), (0, 1));
    ingest::pairing::commit(&mut store, &mut again, &spec("a.log"), &[], at(2000, 25)).unwrap();
    assert_eq!(read_to(&store), (2000, 25));
    // A reader that looked the row up before the rewind does not rewind it again.
    row.read_to = 4000;
    store.sources_mut().rewind(&mut row).unwrap();
    assert_eq!(read_to(&store), (2000, 25));
}

/// The real fixture's lines 1–12: a server start, then two checkpoint
/// starts of the checkpointer (pid 21760) with a complete between them.
fn fixture_lines() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log");
    std::fs::read_to_string(path).unwrap().lines().take(12).map(|l| format!("{l}\n")).collect()
}

fn import(store: &mut Store, cluster: i64, path: &std::path::Path) -> ingest::ImportReport {
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    ingest::import(store, cluster, path.to_str().unwrap(), &opts, &time).unwrap()
}

/// Every checkpoint row: (start event id set, complete event id set, pairable).
fn points(store: &Store) -> Vec<(bool, bool, bool)> {
    let mut stmt = store
        .conn
        .prepare(
            "SELECT start_source_id IS NOT NULL, complete_source_id IS NOT NULL, pairable FROM checkpoint ORDER BY id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().collect::<Result<_, _>>().unwrap()
}

/// A checkpoint whose start is in one file and whose complete is in the
/// next: forgetting the second file leaves the start waiting again, and
/// reading the file again pairs it as the first read did.
#[test]
fn forgetting_a_file_unpairs_its_halves_and_reading_it_again_pairs_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let lines = fixture_lines();
    let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    std::fs::write(&a, lines[..8].concat()).unwrap();
    std::fs::write(&b, lines[8..].concat()).unwrap();
    import(&mut store, cluster, &a);
    import(&mut store, cluster, &b);
    let paired = points(&store);
    assert_eq!(paired, [(true, true, false), (true, false, true)]);

    let known = store.sources().known(Some("c")).unwrap();
    assert_eq!(known.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(), [a.to_str().unwrap(), b.to_str().unwrap()]);
    let gone = store.sources_mut().forget(&[known[1].id]).unwrap();
    // b.log: the complete, a too-frequent warning and the second start.
    assert_eq!(gone, Forgotten { sources: 1, events: 3, checkpoints: 1 });
    assert_eq!(points(&store), [(true, false, true)]);
    assert_eq!(store.sources().known(None).unwrap().len(), 1);

    let again = import(&mut store, cluster, &b);
    assert_eq!((again.resumed_at, again.stored), (0, 3));
    assert_eq!(points(&store), paired);
}

/// A read that did not fit takes back what it stored from where it
/// started: a source known before keeps what was read before.
#[test]
fn taking_back_a_read_keeps_what_was_read_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let lines = fixture_lines();
    let log = dir.path().join("a.log");
    std::fs::write(&log, lines[..8].concat()).unwrap();
    import(&mut store, cluster, &log);
    std::fs::write(&log, lines.concat()).unwrap();
    let second = import(&mut store, cluster, &log);
    assert_eq!((second.resumed_at, second.stored), (lines[..8].concat().len() as u64, 3));
    let row = store.sources().find(cluster, lines.concat().as_bytes()).unwrap().unwrap();
    let from = Pos { offset: second.resumed_at, line: 9 };
    let gone = store.sources_mut().take_back(&row, from).unwrap();
    assert_eq!(gone, Forgotten { sources: 0, events: 3, checkpoints: 1 });
    let row = store.sources().find(cluster, lines.concat().as_bytes()).unwrap().unwrap();
    assert_eq!((row.read_to, row.line), (from.offset, 9));
    assert_eq!(points(&store), [(true, false, true)]);
    let events: i64 = store.conn.query_row("SELECT count(*) FROM line", [], |r| r.get(0)).unwrap();
    assert_eq!(events, 4, "the first read's server start, ready, warning and checkpoint start stay");
}
