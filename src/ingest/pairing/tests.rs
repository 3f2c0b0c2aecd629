//! The pairing on real PostgreSQL 15 lines (see docs/dev/mutants.md),
//! imported whole, in pieces, out of order, and cut wherever a follower's
//! reads may cut a log.

use jiff::Timestamp;

use crate::store::Store;

const NOISE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
const CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log";
const AFTER_CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log";

fn fixture(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    text.lines().map(|l| format!("{l}\n")).collect()
}

/// Imports `files` (each a list of lines) in the order given into a new store.
fn import(files: &[&[String]]) -> (tempfile::TempDir, Store) {
    let names: Vec<String> = (0..files.len()).map(|i| format!("postgresql-{i}.log")).collect();
    let steps: Vec<(&str, &[String], bool)> =
        names.iter().zip(files).map(|(name, lines)| (name.as_str(), *lines, false)).collect();
    follow(&steps)
}

/// (started, completed, trigger, distance) of every checkpoint row, times as logged.
type Pair = (Option<String>, Option<String>, Option<String>, Option<i64>);

fn pairs(store: &Store) -> Vec<Pair> {
    let fmt = |t: Option<Timestamp>| t.map(|t| t.strftime("%H:%M:%S%.3f").to_string());
    let rows = store.checkpoints().list(&crate::store::Filter::default()).unwrap();
    rows.iter()
        .map(|r| (fmt(r.started_at), fmt(r.completed_at), r.trigger.map(|t| t.to_string()), r.distance_kb))
        .collect()
}

/// The pairs read straight from the log text: each complete line closes
/// the start line before it (the fixture has one checkpointer).
fn pairs_in_text(lines: &[String]) -> Vec<Pair> {
    let time = |l: &str| Some(l[11..23].to_string());
    let mut out: Vec<Pair> = Vec::new();
    for l in lines {
        if let Some(flags) = l.split("LOG:  checkpoint starting: ").nth(1) {
            // The cause among the flags; a CHECKPOINT command logs none ("immediate force wait").
            let cause = ["wal", "time", "shutdown", "end-of-recovery"]
                .into_iter()
                .find(|c| flags.split_whitespace().any(|f| f == *c))
                .unwrap_or("manual");
            out.push((time(l), None, Some(cause.to_string()), None));
        } else if let Some(stats) = l.split("LOG:  checkpoint complete: ").nth(1) {
            let distance = stats.split("distance=").nth(1).unwrap().split(" kB").next().unwrap().parse().unwrap();
            let last = out.last_mut().unwrap();
            assert_eq!(last.1, None, "two completes in a row: {l}");
            (last.1, last.3) = (time(l), Some(distance));
        }
    }
    out
}

#[test]
fn every_start_is_paired_with_its_complete_in_log_order() {
    let lines = fixture(NOISE);
    let want = pairs_in_text(&lines);
    assert_eq!(want.len(), 19);
    let (_dir, store) = import(&[&lines]);
    assert_eq!(pairs(&store), want);
}

#[test]
fn a_start_imported_after_its_complete_claims_it() {
    // A file holding only the start on line 1554 (08:09:02.433), and the
    // file after it from that start's complete line on (line 1577,
    // 08:09:02.688) up to the server's last checkpoint, imported first.
    let lines = fixture(NOISE);
    let first = &lines[1553..1554];
    let second = &lines[1576..7680];
    assert!(first[0].contains("checkpoint starting: wal") && second[0].contains("checkpoint complete"));
    let (_dir, in_order) = import(&[first, second]);
    let want = pairs(&in_order);
    assert_eq!(want[0], (Some("08:09:02.433".into()), Some("08:09:02.688".into()), Some("wal".into()), Some(21874)));
    assert_eq!(want, pairs_in_text(&[first, second].concat()));
    let (_dir, reversed) = import(&[second, first]);
    assert_eq!(pairs(&reversed), want);
}

#[test]
fn a_waiting_complete_is_claimed_within_two_days_of_the_start() {
    // The start on line 2168 (08:09:09.205) and its complete 27 s later
    // (line 4312), the complete's file imported first; then the same
    // complete dated 25 h later (checkpoint_timeout = 1d and a slow
    // sync), and 49 h later (a clock once far ahead): never its complete.
    let lines = fixture(NOISE);
    let (start, complete) = (&lines[2167..2168], &lines[4311..4312]);
    assert!(start[0].contains("08:09:09.205") && start[0].contains("checkpoint starting: wal"));
    assert!(complete[0].contains("08:09:36.059") && complete[0].contains("checkpoint complete"));
    let dated = |day: &str| complete[0].replace("2026-11-22 08:09:36.059", day);
    let paired =
        |c: &str| (Some("08:09:09.205".to_string()), Some(c.to_string()), Some("wal".to_string()), Some(20083));
    let (_dir, store) = import(&[complete, start]);
    assert_eq!(pairs(&store), [paired("08:09:36.059")]);
    let (_dir, store) = import(&[&[dated("2026-11-23 09:09:36.059")], start]);
    assert_eq!(pairs(&store), [paired("09:09:36.059")]);
    let (_dir, store) = import(&[&[dated("2026-11-24 09:09:36.059")], start]);
    assert_eq!(
        pairs(&store),
        [
            (Some("08:09:09.205".into()), None, Some("wal".into()), None),
            (None, Some("09:09:36.059".into()), None, Some(20083)),
        ]
    );
}

/// A second complete line of the same microsecond from another file (a
/// copy of the log, the line written twice) does not take a start that its
/// own complete already closed: only a complete strictly before another
/// claims the start from it.
#[test]
fn a_complete_of_the_same_instant_from_another_file_does_not_take_a_closed_start() {
    let lines = fixture(NOISE);
    let (start, complete) = (&lines[2167..2168], &lines[4311..4312]);
    assert!(complete[0].contains("08:09:36.059") && complete[0].contains("distance=20083 kB"));
    let other = complete[0].replace("distance=20083 kB", "distance=1 kB");
    let (_dir, store) = import(&[&[start[0].clone(), complete[0].clone()], &[other]]);
    assert_eq!(
        pairs(&store),
        [
            (Some("08:09:09.205".into()), Some("08:09:36.059".into()), Some("wal".into()), Some(20083)),
            (None, Some("08:09:36.059".into()), None, Some(1)),
        ]
    );
}

/// A start held back for its complete in the same batch is taken only by
/// a complete of its own process and kind: another checkpointer's
/// complete (a second server's lines in the file) or a restartpoint's
/// leaves it waiting, as the pairing by query would.
#[test]
fn a_held_start_is_closed_only_by_its_own_pid_and_kind() {
    let lines = fixture(NOISE);
    let (start, complete) = (&lines[1553], &lines[1576]);
    assert!(start.contains("[25162] LOG:  checkpoint starting: wal"), "{start}");
    assert!(complete.contains("[25162] LOG:  checkpoint complete: "), "{complete}");
    let apart: [Pair; 2] = [
        (Some("08:09:02.433".into()), None, Some("wal".into()), None),
        (None, Some("08:09:02.688".into()), None, Some(21874)),
    ];
    let other_pid = complete.replace("[25162]", "[25163]");
    let (_dir, store) = import(&[&[start.clone(), other_pid]]);
    assert_eq!(pairs(&store), apart, "another checkpointer's complete");
    let restartpoint = complete.replace("checkpoint complete: ", "restartpoint complete: ");
    let (_dir, store) = import(&[&[start.clone(), restartpoint]]);
    let rows = pairs(&store);
    assert_eq!((rows.len(), &rows[0]), (2, &apart[0]), "a restartpoint's complete: {rows:?}");
    // Its own complete closes it, in the same batch.
    let (_dir, store) = import(&[&[start.clone(), complete.clone()]]);
    assert_eq!(
        pairs(&store),
        [(Some("08:09:02.433".into()), Some("08:09:02.688".into()), Some("wal".into()), Some(21874))]
    );
}

/// A start of another pid between a start and its complete (a line a
/// client forged, claiming pid 2) neither takes the complete nor keeps
/// it from its own start, whether the three lines come in one batch or
/// a follower's read cuts between them.
#[test]
fn a_complete_closes_its_own_process_start_across_another_pids_start() {
    let lines = fixture(NOISE);
    let (start, complete) = (lines[1553].clone(), lines[1576].clone());
    let forged = start.replace("08:09:02.433 UTC [25162]", "08:09:02.500 UTC [2]");
    assert_ne!(forged, start);
    let want: [Pair; 2] = [
        (Some("08:09:02.433".into()), Some("08:09:02.688".into()), Some("wal".into()), Some(21874)),
        (Some("08:09:02.500".into()), None, Some("wal".into()), None),
    ];
    let log = [start, forged, complete];
    let (_dir, store) = import(&[&log]);
    assert_eq!(pairs(&store), want);
    for cut in 1..log.len() {
        let (before, after) = log.split_at(cut);
        let (_dir, store) = follow(&[("a.log", before, false), ("a.log", after, false)]);
        assert_eq!(pairs(&store), want, "cut before line {cut}");
    }
}

#[test]
fn a_complete_after_a_restart_never_closes_a_start_from_before_it() {
    // The crash fixture's last start (no complete: immediate shutdown),
    // the next run's first line, and that run's first complete line,
    // written by a checkpointer that got the old one's pid back (as in
    // a container, where pids repeat from one start to the next).
    let before = fixture(CRASH);
    let after = fixture(AFTER_CRASH);
    let start = before.iter().rev().find(|l| l.contains("checkpoint starting: wal")).unwrap().clone();
    let complete = after.iter().find(|l| l.contains("checkpoint complete")).unwrap().replace("[29349]", "[28026]");
    assert!(start.contains("[28026]") && after[0].contains("starting PostgreSQL"));
    let want = [
        (Some("08:17:23.524".into()), None, Some("wal".into()), None),
        (None, Some("08:17:30.982".into()), None, Some(55_239)),
    ];
    let (_dir, store) = import(&[&[start, after[0].clone(), complete]]);
    assert_eq!(pairs(&store), want);
}

/// Reads `steps` in order into a new store, as a follower would: each
/// step appends lines to a file (created on its first step) and reads
/// that file on, its last entry held back or taken.
fn follow(steps: &[(&str, &[String], bool)]) -> (tempfile::TempDir, Store) {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let time = TimeContext::new(Some("UTC")).unwrap();
    for &(name, lines, hold) in steps {
        let file = dir.path().join(name);
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&file).unwrap();
        f.write_all(lines.concat().as_bytes()).unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), hold_last_entry: hold, ..Options::default() };
        ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
    }
    (dir, store)
}

/// A follower's reads cut the log anywhere: between two batches of one
/// file, or at a rotation whose old file's last entry is held back
/// (it may still get a DETAIL) while the new file is read. At every
/// cut through five checkpoints (a complete and the next start in the
/// same millisecond among them) the pairs are the log's.
#[test]
fn pairs_are_the_logs_wherever_a_follower_cuts_the_log() {
    let lines = fixture(NOISE);
    let lines = &lines[120..160];
    let want = pairs_in_text(lines);
    assert_eq!(want.len(), 5);
    for cut in 1..lines.len() {
        let (before, after) = lines.split_at(cut);
        let (_dir, store) = follow(&[("a.log", before, false), ("a.log", after, false)]);
        assert_eq!(pairs(&store), want, "one file read in two batches, cut before line {cut}");
        let (_dir, store) = follow(&[("a.log", before, true), ("b.log", after, true), ("a.log", &[], false)]);
        assert_eq!(pairs(&store), want, "rotated before line {cut}, the old file's last entry read last");
        let (_dir, store) = follow(&[("a.log", before, true), ("b.log", after, false), ("a.log", &[], false)]);
        assert_eq!(pairs(&store), want, "rotated before line {cut}, the new file read to its end first");
        for late in [1, 2, 3, 5, 8].into_iter().filter(|&late| late < cut) {
            let (read, tail) = before.split_at(cut - late);
            let (_dir, store) = follow(&[("a.log", read, false), ("b.log", after, false), ("a.log", tail, false)]);
            assert_eq!(pairs(&store), want, "rotated before line {cut}, the old file's last {late} lines read last");
        }
    }
}

/// Three files of a size rotation: the follower read the middle one
/// only partly before the newest, then the rest of it. A complete in
/// the newest file, read before the middle file's end, must not keep a
/// start whose own complete comes later from the middle file.
#[test]
fn pairs_are_the_logs_when_a_middle_file_is_finished_last() {
    let lines = fixture(NOISE);
    let lines = &lines[126..141];
    let want = pairs_in_text(lines);
    assert_eq!(want.len(), 4);
    for first in 1..lines.len() {
        for last in first + 1..lines.len() {
            let (old, rest) = lines.split_at(first);
            let (middle, new) = rest.split_at(last - first);
            for read in [0, 1] {
                let (head, tail) = middle.split_at(read.min(middle.len()));
                let steps =
                    [("a.log", old, false), ("b.log", head, false), ("c.log", new, false), ("b.log", tail, false)];
                let (_dir, store) = follow(&steps);
                assert_eq!(
                    pairs(&store),
                    want,
                    "files cut before lines {first} and {last}, {read} line(s) of the middle read first"
                );
            }
        }
    }
}

#[test]
fn files_imported_newest_first_pair_as_in_log_order() {
    // Two runs (a crash between them), each file ending with a server
    // shutdown or crash that closes its run.
    let (before, after) = (fixture(CRASH), fixture(AFTER_CRASH));
    let (_dir, in_order) = import(&[&before, &after]);
    let want = pairs(&in_order);
    assert_eq!(want.len(), pairs_in_text(&before).len() + pairs_in_text(&after).len());
    let (_dir, reversed) = import(&[&after, &before]);
    assert_eq!(pairs(&reversed), want);
}
