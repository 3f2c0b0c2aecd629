//! The receiver's streams without the daemon: a real SQLite store and
//! real spool files in a temporary directory, batches made from a real
//! server's log (the 15 fixture run).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::receive::spool_dir::SpoolDir;

const FILE: &str = "/var/log/postgresql/postgresql-15-main.log";

fn log() -> Vec<u8> {
    fixture("15-stderr-default-std")
}

fn fixture(run: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run).join("log");
    let file = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path();
    std::fs::read(file).unwrap()
}

/// The events the agent makes of `content`: one per line, a TAB line
/// joined to the one before, each with its offset.
fn shipped(host: &str, content: &[u8]) -> Vec<Shipped> {
    let mut out: Vec<Shipped> = Vec::new();
    let mut offset = 0u64;
    for line in content.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        match out.last_mut() {
            Some(last) if text.first() == Some(&b'\t') => {
                last.message.push(b'\n');
                last.message.extend_from_slice(text);
            }
            _ => out.push(Shipped { host: host.into(), file: FILE.into(), offset, message: text.to_vec() }),
        }
        offset += line.len() as u64;
    }
    out
}

struct Central {
    _dir: tempfile::TempDir,
    db: PathBuf,
    spool: PathBuf,
    store: Store,
    streams: Option<Streams>,
}

impl Central {
    fn new() -> Central {
        let dir = tempfile::tempdir().unwrap();
        let (db, spool) = (dir.path().join("w.db"), dir.path().join("w-ingest"));
        let mut store = Store::open(&db).unwrap();
        let streams = Some(recover(&mut store, &spool));
        Central { _dir: dir, db, spool, store, streams }
    }

    /// The daemon stopped and started again: streams recovered from the store.
    fn restart(&mut self) {
        self.streams = None;
        self.store = Store::open(&self.db).unwrap();
        self.streams = Some(recover(&mut self.store, &self.spool));
    }

    fn streams(&mut self) -> &mut Streams {
        self.streams.as_mut().unwrap()
    }

    fn take(&mut self, batch: &[Shipped]) -> Taken {
        let store = &mut self.store;
        self.streams.as_mut().unwrap().take(store, batch.to_vec()).unwrap()
    }

    fn row(&self, host: &str) -> crate::store::StreamRow {
        self.store.streams().all().unwrap().into_iter().find(|r| r.host == host).unwrap()
    }

    fn checkpoints(&self, cluster: &str) -> i64 {
        let conn = rusqlite::Connection::open(&self.db).unwrap();
        conn.query_row(
            "SELECT count(*) FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id WHERE c.name = ?1",
            [cluster],
            |r| r.get(0),
        )
        .unwrap()
    }
}

fn recover(store: &mut Store, spool: &Path) -> Streams {
    let dir = SpoolDir::claim(spool, store).unwrap();
    Streams::recover(store, dir, Vec::new(), Duration::ZERO).unwrap()
}

/// A local import's checkpoint rows of `content`, the reference.
fn imported(content: &[u8]) -> i64 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("postgresql-15-main.log");
    std::fs::write(&path, content).unwrap();
    let mut store = Store::open(&dir.path().join("l.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("local").unwrap();
    let source = Source::open(path.to_str().unwrap()).unwrap();
    ingest::import_source(&mut store, cluster, source, &Options::default(), &TimeContext::new(None).unwrap()).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("l.db")).unwrap();
    conn.query_row("SELECT count(*) FROM checkpoint", [], |r| r.get(0)).unwrap()
}

#[test]
fn each_line_is_taken_once_whatever_is_sent_again() {
    let mut c = Central::new();
    let lines = shipped("db-1", &log());
    assert!(lines.len() > 100);
    let first = c.take(&lines[..60]);
    assert_eq!((first.lines, first.duplicates), (60, 0));
    // The same batch again (a lost answer), then one overlapping it.
    assert_eq!((c.take(&lines[..60]).lines, c.take(&lines[..60]).duplicates), (0, 60));
    let overlap = c.take(&lines[40..100]);
    assert_eq!((overlap.lines, overlap.duplicates), (40, 20));
    // A line sent twice within one batch counts once.
    let twice: Vec<Shipped> = [&lines[100..110], &lines[105..110]].concat();
    assert_eq!((c.take(&twice).lines, c.row("db-1").duplicates), (10, 60 + 60 + 20 + 5));
    c.take(&lines[110..]);
    let row = c.row("db-1");
    assert_eq!((row.lines, row.generation), (lines.len() as u64, 0));
    // The spool is the log, byte for byte; what it read, an import reads.
    assert_eq!(std::fs::read(c.spool.join("1-0.log")).unwrap(), log());
    let store = &mut c.store;
    c.streams.as_mut().unwrap().settle(store).unwrap();
    assert_eq!(c.checkpoints("db-1:15-main"), imported(&log()));
}

#[test]
fn a_file_written_anew_under_its_path_is_a_new_generation() {
    let mut c = Central::new();
    let old = shipped("db-1", &log());
    c.take(&old);
    // copytruncate: offsets from 0 again, other lines.
    let mut anew = log();
    anew.splice(
        0..0,
        b"2026-11-22 09:00:00.000 UTC [1] LOG:  database system is ready to accept connections\n".iter().copied(),
    );
    let new = shipped("db-1", &anew);
    let taken = c.take(&new[..30]);
    assert_eq!((taken.lines, c.row("db-1").generation), (30, 1));
    // The old content read to its end and its spool removed; its index kept.
    assert!(!c.spool.join("1-0.log").exists() && c.spool.join("1-0.idx").exists());
    // A batch sent again across the change: the old lines by the old index.
    let across: Vec<Shipped> = [&old[old.len() - 5..], &new[..5]].concat();
    let again = c.take(&across);
    assert_eq!((again.lines, again.duplicates), (0, 10));
    assert_eq!(c.row("db-1").generation, 1);
}

#[test]
fn bytes_written_but_not_committed_are_cut_off_at_the_next_start() {
    let mut c = Central::new();
    let lines = shipped("db-1", &log());
    c.take(&lines[..50]);
    let committed = c.row("db-1");
    // A request wrote lines and the index, then the process died before the
    // store recorded them.
    let forged = b"2026-11-22 08:10:00.000 UTC [2] LOG:  checkpoint starting: wal\n";
    let mut spool = std::fs::OpenOptions::new().append(true).open(c.spool.join("1-0.log")).unwrap();
    std::io::Write::write_all(&mut spool, forged).unwrap();
    let mut index = std::fs::OpenOptions::new().append(true).open(c.spool.join("1-0.idx")).unwrap();
    std::io::Write::write_all(&mut index, &[7u8; 16]).unwrap();
    c.restart();
    let len = |f: &str| std::fs::metadata(c.spool.join(f)).unwrap().len();
    assert_eq!((len("1-0.log"), len("1-0.idx")), (committed.spool_len, committed.index_len));
    // The agent sends the rest (its answer never came): all taken once.
    let rest = c.take(&lines[50..]);
    assert_eq!((rest.lines, rest.duplicates), (lines.len() as u64 - 50, 0));
    assert_eq!(std::fs::read(c.spool.join("1-0.log")).unwrap(), log());
    assert!(c.store.streams().damaged(None).unwrap().is_empty());
}

#[test]
fn a_cut_spool_is_set_aside_and_its_file_goes_on() {
    let mut c = Central::new();
    let (one, two) = (shipped("db-1", &log()), shipped("db-2", &log()));
    c.take(&one[..40]);
    c.take(&two[..40]);
    let before = c.row("db-1");
    std::fs::OpenOptions::new().write(true).open(c.spool.join("1-0.log")).unwrap().set_len(10).unwrap();
    c.restart();
    let damaged = c.store.streams().damaged(None).unwrap();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    let Damage::Spool { reason, kept, .. } = &damaged[0].damage else { panic!("{damaged:?}") };
    assert!(reason.contains("it holds 10 bytes but"), "{reason}");
    assert!(Path::new(&format!("{kept}.log")).exists() && kept.contains("quarantine"), "{kept}");
    assert_eq!((damaged[0].host.as_str(), damaged[0].generation), ("db-1", 0));
    let after = c.row("db-1");
    assert_eq!((after.generation, after.accepted_end, after.spool_len), (before.generation + 1, 0, 0));
    // Both hosts go on: db-1 in its new generation, db-2 untouched.
    assert_eq!(c.take(&one[40..]).lines, one.len() as u64 - 40);
    assert_eq!(c.take(&two[40..]).lines, two.len() as u64 - 40);
    assert_eq!(c.row("db-2").generation, 0);
    // Cut while running: found at the next write, not only at a start.
    std::fs::OpenOptions::new().write(true).open(c.spool.join("2-0.log")).unwrap().set_len(5).unwrap();
    let again = shipped("db-2", &[log(), log()].concat());
    assert!(c.take(&again[two.len()..two.len() + 10]).lines == 10);
    let damaged = c.store.streams().damaged(None).unwrap();
    assert_eq!((c.row("db-2").generation, damaged.len()), (1, 2));
    // Set aside as it was found, not cut back to what was committed.
    let Damage::Spool { kept, .. } = &damaged[1].damage else { panic!("{damaged:?}") };
    assert_eq!(std::fs::metadata(format!("{kept}.log")).unwrap().len(), 5);
}

#[test]
fn bytes_never_shipped_are_recorded_where_they_are() {
    let mut c = Central::new();
    let lines = shipped("db-1", &fixture("15-stderr-default-i18n-fr"));
    // Contiguous lines, joined continuation lines included: no gap.
    assert!(lines.iter().any(|l| l.message.contains(&b'\n')), "the log has continuation lines");
    c.take(&lines[..30]);
    assert!(c.store.streams().damaged(None).unwrap().is_empty());
    // Line 30 and 31 never come (over the agent's max_line_bytes, say).
    let gap_start = lines[30].offset;
    let gap = lines[32].offset - gap_start;
    c.take(&lines[32..40]);
    // Across batches too: the stream's next offset is kept in the store.
    c.restart();
    c.take(&lines[41..]);
    let gaps: Vec<Damage> = c.store.streams().damaged(None).unwrap().into_iter().map(|d| d.damage).collect();
    let one = lines[41].offset - lines[40].offset;
    assert_eq!(
        gaps,
        [Damage::Gap { offset: gap_start, bytes: gap }, Damage::Gap { offset: lines[40].offset, bytes: one }]
    );
}

#[test]
fn bytes_that_are_not_utf8_reach_the_spool_as_written() {
    let mut c = Central::new();
    let mut content = log();
    let at = content.iter().position(|&b| b == b'\n').unwrap() + 1;
    let odd =
        b"2026-11-22 08:04:21.000 UTC [99] postgres@\xff\xfe\xe9 FATAL:  database \"\xff\xfe\xe9\" does not exist\n";
    content.splice(at..at, odd.iter().copied());
    let body: Vec<serde_json::Value> = shipped("db-1", &content)
        .iter()
        .map(|l| {
            // As Vector sends it with encoding.charset = "x-user-defined".
            let text: String = l
                .message
                .iter()
                .map(|&b| if b < 0x80 { b as char } else { char::from_u32(0xF700 + b as u32).unwrap() })
                .collect();
            serde_json::json!({"message": text, "host": l.host, "file": l.file, "offset": l.offset})
        })
        .collect();
    let events = super::super::body::events(serde_json::to_string(&body).unwrap().as_bytes()).unwrap();
    c.take(&events);
    assert_eq!(std::fs::read(c.spool.join("1-0.log")).unwrap(), content);
    assert!(c.store.streams().damaged(None).unwrap().is_empty(), "offsets and lengths agree byte for byte");
}

#[test]
fn hundreds_of_files_keep_a_bounded_number_of_spools_open() {
    let mut c = Central::new();
    let line = b"2026-11-25 07:00:00.123 UTC [812] LOG:  checkpoint starting: time".to_vec();
    let batch: Vec<Shipped> = (0..300)
        .map(|i| Shipped {
            host: "db-1".into(),
            file: format!("/pg/{i}/postgresql.log"),
            offset: 0,
            message: line.clone(),
        })
        .collect();
    assert_eq!(c.take(&batch).lines, 300);
    let open = c.streams().open.values().filter(|s| s.spool.is_open()).count();
    assert_eq!(open, OPEN_SPOOLS);
    // A closed one is opened again for its next line, and the oldest closed.
    let next = Shipped { offset: line.len() as u64 + 1, ..batch[0].clone() };
    assert_eq!(c.take(&[next]).lines, 1);
    assert_eq!(c.streams().open.values().filter(|s| s.spool.is_open()).count(), OPEN_SPOOLS);
    assert!(c.streams().open[&("db-1".to_string(), "/pg/0/postgresql.log".to_string())].spool.is_open());
    // The least recently used is closed, not the first by name: /pg/237
    // was written before /pg/238 but sends again now; /pg/1 opening then
    // closes /pg/238.
    let is_open = |c: &mut Central, i: usize| {
        c.streams().open[&("db-1".to_string(), format!("/pg/{i}/postgresql.log"))].spool.is_open()
    };
    assert!(is_open(&mut c, 237) && is_open(&mut c, 238));
    let again = |i: usize| Shipped { offset: line.len() as u64 + 1, ..batch[i].clone() };
    assert_eq!(c.take(&[again(237)]).lines, 1);
    assert_eq!(c.take(&[again(1)]).lines, 1);
    assert!(is_open(&mut c, 237) && !is_open(&mut c, 238));
}

/// A week of a statement-heavy log (the noise run, each copy a day later).
fn busy_week() -> Vec<u8> {
    let day = String::from_utf8(fixture("15-stderr-default-noise")).unwrap();
    assert!(day.matches("2026-11-22").count() > 1000, "the noise run is dated 2026-11-22");
    (0..7).flat_map(|k| day.replace("2026-11-22", &format!("2026-11-{}", 22 + k)).into_bytes()).collect()
}

#[test]
fn what_the_store_has_read_leaves_the_disk_and_nothing_else_changes() {
    use std::os::unix::fs::MetadataExt;
    let content = busy_week();
    let lines = shipped("db-1", &content);
    let mut c = Central::new();
    for batch in lines.chunks(2000) {
        c.take(batch);
    }
    let store = &mut c.store;
    c.streams.as_mut().unwrap().settle(store).unwrap();
    assert_eq!(c.checkpoints("db-1:15-main"), imported(&content));

    // Same length and offsets, the head whole, the read part's blocks given back.
    let spool = c.spool.join("1-0.log");
    let md = std::fs::metadata(&spool).unwrap();
    assert_eq!(md.len(), content.len() as u64);
    let allocated = md.blocks() * 512;
    assert!(content.len() > 7 << 20, "{}", content.len());
    assert!(allocated <= KEEP_BYTES_AT_MOST, "{allocated} bytes on disk for {} read", content.len());
    let kept = std::fs::read(&spool).unwrap();
    assert_eq!(kept[..64 * 1024], content[..64 * 1024], "the head stays whole");
    let tail = content.len() - (64 << 10);
    assert_eq!(kept[tail..], content[tail..], "the last 64 KiB read stays whole");

    // A batch sent again is still known by the index, also after a restart,
    // and the file goes on.
    assert_eq!(c.take(&lines[..500]).duplicates, 500);
    c.restart();
    assert_eq!(c.take(&lines[lines.len() - 500..]).duplicates, 500);
    let more = shipped("db-1", &[content.clone(), fixture("15-stderr-default-std")].concat());
    assert_eq!(c.take(&more[lines.len()..]).lines, (more.len() - lines.len()) as u64);
    let store = &mut c.store;
    c.streams.as_mut().unwrap().settle(store).unwrap();
    assert_eq!(c.checkpoints("db-1:15-main"), imported(&[content, fixture("15-stderr-default-std")].concat()));
}

/// The head, the 64 KiB before the read position, one release step not
/// given back yet, and a block's rounding at each end.
const KEEP_BYTES_AT_MOST: u64 = 3 * (64 << 10) + 2 * 4096;

/// A real log reloaded into Asia/Shanghai (tests/fixtures/cst), shipped up
/// to just after the reload line, the central restarted, then the rest:
/// the stream opened again reads `CST` in the zone the store keeps for the
/// cluster, as China's, not as US Central hours ahead.
#[test]
fn a_zone_the_log_set_holds_for_the_stream_after_a_restart() {
    let mut c = Central::new();
    let text = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cst/reload-asia-shanghai.log"))
        .unwrap();
    let lines = shipped("db-cn", &text);
    let reload = lines.iter().position(|l| l.message.windows(12).any(|w| w == b"log_timezone")).unwrap();
    c.take(&lines[..reload + 2]);
    let store = &mut c.store;
    c.streams.as_mut().unwrap().settle(store).unwrap();
    c.restart();
    c.take(&lines[reload + 2..]);
    let store = &mut c.store;
    c.streams.as_mut().unwrap().settle(store).unwrap();
    let conn = rusqlite::Connection::open(&c.db).unwrap();
    let last: i64 = conn.query_row("SELECT max(at) FROM line", [], |r| r.get(0)).unwrap();
    // The shutdown's last line, 03:34:09.902 CST: 19:34:09.902 UTC.
    let want: jiff::Timestamp = "2026-11-28T19:34:09.902Z".parse().unwrap();
    assert_eq!(last, want.as_microsecond());
}

/// What the receiver answers 503 (try again) for: the store locked by
/// another writer, and nothing else. (The daemon tier holds a real lock past
/// the busy timeout; here the errors SQLite gives are built as it gives them.)
#[test]
fn only_a_locked_store_is_busy() {
    let sql = |code| {
        ReceiveError::Store(StoreError::Sql {
            path: "w.db".into(),
            source: rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None),
        })
    };
    assert!(sql(rusqlite::ffi::SQLITE_BUSY).busy());
    assert!(sql(rusqlite::ffi::SQLITE_LOCKED).busy());
    assert!(!sql(rusqlite::ffi::SQLITE_FULL).busy());
    assert!(!sql(rusqlite::ffi::SQLITE_IOERR).busy());
    let spool = ReceiveError::Spool { path: "1-0.log".into(), source: std::io::Error::other("x") };
    assert!(!spool.busy());
}

/// The events stored since the last call, once: what wakes the alert rules.
#[test]
fn the_events_stored_are_counted_once() {
    let mut c = Central::new();
    let lines = shipped("db-1", &log());
    let taken = c.take(&lines[..60]);
    assert!(taken.events > 0);
    assert_eq!(c.streams().take_stored(), taken.events);
    assert_eq!(c.streams().take_stored(), 0);
    let rest = c.take(&lines[60..]);
    let store = &mut c.store;
    let settled = c.streams.as_mut().unwrap().settle(store).unwrap();
    assert_eq!(c.streams().take_stored(), rest.events + settled);
}

/// A file's held-back last entry is read by `settle` once the file has
/// been quiet for the settle time, not before; a file holding nothing back
/// is not read at all.
#[test]
fn the_last_entry_waits_for_the_settle_time() {
    let dir = tempfile::tempdir().unwrap();
    let (db, spool) = (dir.path().join("w.db"), dir.path().join("w-ingest"));
    let mut store = Store::open(&db).unwrap();
    let claimed = SpoolDir::claim(&spool, &mut store).unwrap();
    let mut streams = Streams::recover(&mut store, claimed, Vec::new(), Duration::from_millis(300)).unwrap();
    let lines = shipped("db-1", &log());
    let taken = streams.take(&mut store, lines[..60].to_vec()).unwrap();
    assert!(streams.pending(), "the batch's last entry waits");
    assert_eq!(streams.settle(&mut store).unwrap(), 0, "not quiet yet");
    std::thread::sleep(Duration::from_millis(400));
    let settled = streams.settle(&mut store).unwrap();
    assert_eq!((settled, streams.pending()), (1, false));
    assert_eq!(streams.take_stored(), taken.events + 1);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(streams.settle(&mut store).unwrap(), 0);
}

/// A batch that ends one content and begins the next (copytruncate between
/// two reads of the agent): the lines of both count, each once.
#[test]
fn a_batch_across_a_change_of_content_counts_the_lines_of_both() {
    let mut c = Central::new();
    let old = shipped("db-1", &log());
    c.take(&old[..old.len() - 10]);
    let mut anew = log();
    anew.splice(
        0..0,
        b"2026-11-22 09:00:00.000 UTC [1] LOG:  database system is ready to accept connections\n".iter().copied(),
    );
    let new = shipped("db-1", &anew);
    // Five lines sent again, the ten never sent, then the new content's.
    let across: Vec<Shipped> = [&old[old.len() - 15..], &new[..7]].concat();
    let taken = c.take(&across);
    assert_eq!((taken.lines, taken.duplicates, c.row("db-1").generation), (17, 5, 1));
    assert_eq!((c.row("db-1").lines, c.row("db-1").accepted_end), (old.len() as u64 + 7, new[6].offset + 1));
}

/// Rules the shipped lines do not fit (a wrong prefix; csvlog for a
/// stderr log): the lines are kept in the spool, nothing is stored, and
/// the problem says what to set.
#[test]
fn lines_that_do_not_fit_the_rule_are_kept_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (db, spool) = (dir.path().join("w.db"), dir.path().join("w-ingest"));
    let mut store = Store::open(&db).unwrap();
    let rule = |host: &str, format: &str, prefix: &str| IngestCluster {
        host: host.into(),
        file: "*".into(),
        name: "{host}".into(),
        format: format.into(),
        prefix: prefix.into(),
        timezone: None,
    };
    let rules = vec![rule("db-1", "stderr", "%t [%p]: [%l-1] user=%u,db=%d "), rule("db-2", "csvlog", "auto")];
    let claimed = SpoolDir::claim(&spool, &mut store).unwrap();
    let mut streams = Streams::recover(&mut store, claimed, rules, Duration::ZERO).unwrap();
    for (n, host) in [(1, "db-1"), (2, "db-2")] {
        let lines = shipped(host, &log());
        let taken = streams.take(&mut store, lines.clone()).unwrap();
        assert_eq!((taken.lines, taken.events), (lines.len() as u64, 0), "{host}");
        let status = &store.daemon().cluster_status(Some(host)).unwrap()[0];
        assert_eq!(status.problems.len(), 1, "{:?}", status.problems);
        let (path, problem) = &status.problems[0];
        assert_eq!(path, &format!("{host}:{FILE}"));
        let fix = "; kept in the spool: set format/prefix in [[ingest.cluster]] and reload";
        assert!(problem.ends_with(fix), "{problem}");
        assert_eq!(std::fs::read(spool.join(format!("{n}-0.log"))).unwrap(), log());
    }
}

/// How shipped files are named in `status`, and their spools' sizes by
/// that name (what the lag is measured against).
#[test]
fn shipped_files_by_name_and_size() {
    assert_eq!(shown("db-1", FILE, 0), format!("db-1:{FILE}"));
    assert_eq!(shown("db-1", FILE, 1), format!("db-1:{FILE} (content #2)"));
    let mut c = Central::new();
    c.take(&shipped("db-1", &log()));
    let other = fixture("16-stderr-default-std");
    c.take(&shipped("db-2", &other));
    let sizes = shipped_sizes(&c.store).unwrap();
    let want =
        HashMap::from([(shown("db-1", FILE, 0), log().len() as u64), (shown("db-2", FILE, 0), other.len() as u64)]);
    assert_eq!(sizes, want);
}

/// A held-back last entry longer than what a release keeps behind the read
/// position (a logged statement of 200 kB): giving the read part back to
/// the filesystem never reaches into it.
#[test]
fn a_long_held_back_entry_is_never_given_back() {
    let mut c = Central::new();
    let first = busy_week();
    let first_lines = shipped("db-1", &first);
    c.take(&first_lines);
    let statement = format!(
        "2026-11-29 08:00:00.000 UTC [4242] postgres@postgres LOG:  statement: SELECT '{}';\n",
        "x".repeat(200 << 10)
    );
    let more = [first.clone(), fixture("15-stderr-default-std"), statement.clone().into_bytes()].concat();
    let lines = shipped("db-1", &more);
    c.take(&lines[first_lines.len()..]);
    assert!(c.streams().pending(), "the statement waits for lines that may belong to it");
    let spool = std::fs::read(c.spool.join("1-0.log")).unwrap();
    assert_eq!(spool.len(), more.len());
    assert_eq!(&spool[more.len() - statement.len()..], statement.as_bytes());
}
