//! Batching over a log larger than one batch: the real import of a
//! generated PostgreSQL 15 log (copies of the lines of fixture
//! 15-stderr-default-noise, each copy an hour later) into a real SQLite
//! store. No fixture reaches [`Batch::MAX_EVENTS`], so without this the
//! mid-import commits never run in a test.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use jiff::civil::DateTime;
use jiff::SignedDuration;

use super::batch::Batch;
use super::{import, Options};
use crate::frame::time::TimeContext;
use crate::frame::CHUNK_BYTES;
use crate::store::Store;

const FIXTURE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
const PREFIX: &str = "%m [%p] %q%u@%d ";
const CHECKPOINTER: &str = " [25162] ";
/// `%m` as PostgreSQL prints it: "2026-11-22 08:08:44.053 UTC ".
const TIME_LEN: usize = 23;
/// Copies of the template: four read chunks, a full batch after the second
/// and the rest (fewer than MAX_EVENTS events) at the end.
const COPIES: usize = 420;

/// One stored event as the test compares it.
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    kind: String,
    at_us: i64,
    offset: i64,
    line: i64,
}

/// The fixture's checkpointer lines (checkpoints, too-frequent warnings
/// and their HINTs), with every 190th client `duration:` line as noise
/// between them: about 300 bytes of log per event, so a 2 MiB read chunk
/// holds fewer than MAX_EVENTS events and a batch fills over several chunks.
fn template() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
    let mut durations = 0;
    let mut keep = |l: &&str| {
        if l.contains(CHECKPOINTER) {
            return ["checkpoint starting", "checkpoint complete", "occurring too frequently", "HINT:  "]
                .iter()
                .any(|m| l.contains(m));
        }
        let noise = l.contains(" LOG:  duration: ") && !l.to_lowercase().contains("checkpoint");
        durations += usize::from(noise);
        noise && durations % 190 == 1
    };
    text.lines().filter(|l| keep(l)).map(String::from).collect()
}

/// The kind walwatch must store for a template line, if it is an event.
fn kind_of(line: &str) -> Option<&'static str> {
    if !line.contains(CHECKPOINTER) || line.contains("HINT:  ") {
        return None;
    }
    Some(if line.contains("checkpoint starting") {
        "checkpoint_start"
    } else if line.contains("checkpoint complete") {
        "checkpoint_complete"
    } else {
        "too_frequent"
    })
}

/// Writes `copies` copies of the template, copy k shifted by k hours;
/// returns the events the file holds, in file order.
fn generate(path: &Path, copies: usize) -> Vec<Stored> {
    let template = template();
    let (mut log, mut want) = (String::new(), Vec::new());
    for k in 0..copies {
        for (i, line) in template.iter().enumerate() {
            let time: DateTime = line[..TIME_LEN].parse().unwrap();
            let shifted = time + SignedDuration::from_hours(k as i64);
            let line = format!("{}{}", shifted.strftime("%Y-%m-%d %H:%M:%S%.3f"), &line[TIME_LEN..]);
            if let Some(kind) = kind_of(&line) {
                let at = shifted.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp();
                let line_no = (k * template.len() + i + 1) as i64;
                want.push(Stored {
                    kind: kind.into(),
                    at_us: at.as_microsecond(),
                    offset: log.len() as i64,
                    line: line_no,
                });
            }
            log.push_str(&line);
            log.push('\n');
        }
    }
    std::fs::write(path, log).unwrap();
    want
}

fn stored(db: &Path) -> Vec<Stored> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT kind, at, offset, line FROM line ORDER BY offset, nth").unwrap();
    let rows = stmt
        .query_map([], |r| Ok(Stored { kind: r.get(0)?, at_us: r.get(1)?, offset: r.get(2)?, line: r.get(3)? }))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

thread_local! {
    /// The store being imported into, and the event count another
    /// connection sees after each chunk (the import calls `alive` on the
    /// test's own thread, after the chunk's commit if there was one).
    static WATCH: RefCell<(Option<PathBuf>, Vec<i64>)> = const { RefCell::new((None, Vec::new())) };
}

fn count_committed() {
    WATCH.with_borrow_mut(|(db, seen)| {
        let conn = rusqlite::Connection::open(db.as_ref().unwrap()).unwrap();
        seen.push(conn.query_row("SELECT count(*) FROM line", [], |r| r.get(0)).unwrap());
    });
}

#[test]
fn a_log_over_the_batch_limit_is_stored_whole_in_full_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    let want = generate(&file, COPIES);
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(want.len() > 2 * Batch::MAX_EVENTS, "{} events", want.len());
    assert!(size / want.len() as u64 > (CHUNK_BYTES / Batch::MAX_EVENTS) as u64, "a chunk must not fill a batch");

    WATCH.set((Some(db.clone()), Vec::new()));
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), alive: Some(count_committed), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    let report = import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();

    assert_eq!((report.stored, report.rejected, report.bytes), (want.len() as u64, 0, size));
    assert_eq!((report.name.as_str(), report.format), (file.to_str().unwrap(), "stderr"));
    let got = stored(&db);
    let first_difference = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!((got.len(), first_difference), (want.len(), None));
    assert_eq!(got, want);

    // What another reader saw after each chunk: nothing until a batch was
    // full, then that whole batch (more than one chunk's worth), and
    // nothing more until the end: the third chunk alone does not fill one.
    let (_, seen) = WATCH.take();
    let mut mid_import: Vec<i64> = seen.clone();
    mid_import.dedup();
    let steps: Vec<i64> = mid_import.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!((seen.first(), steps.len()), (Some(&0), 1), "{seen:?}");
    assert!(seen.len() >= 3, "a chunk after the full batch: {seen:?}");
    assert!(steps.iter().all(|&s| s >= Batch::MAX_EVENTS as i64), "{seen:?}");
    assert!(*mid_import.last().unwrap() < want.len() as i64, "the last part is committed after the read: {seen:?}");
}

/// The report counts each kind of line that looks like an event but is not
/// one: a checkpoint line in an unknown shape (unparsed and unreadable), a
/// client session's look-alike (rejected), a look-alike inside a logged
/// statement (rejected), and a look-alike spliced into a statement's text
/// that ends in a stray quote (unparsed).
#[test]
fn the_report_counts_unparsed_and_rejected_lines_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    std::fs::write(
        &file,
        "2026-11-22 08:08:44.053 UTC [25162] LOG:  checkpoint starting: time\n\
         2026-11-22 08:08:45.053 UTC [25162] LOG:  checkpoint complete: wrote lots of buffers, nothing else\n\
         2026-11-22 08:08:46.053 UTC [31000] alice@db LOG:  checkpoint starting: wal\n\
         2026-11-22 08:08:47.053 UTC [31001] bob@db LOG:  statement: SELECT 'x\n\
         2026-11-22 08:08:47.054 UTC [25162] LOG:  checkpoint starting: wal'\n\
         2026-11-22 08:08:48.053 UTC [31002] carol@db LOG:  statement: SELECT 1 -- x\n  LOG:  checkpoint starting: wal\n",
    )
    .unwrap();
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    let report = import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
    assert_eq!(report.event_count(), 1, "{:?}", report.events);
    assert_eq!((report.rejected, report.unparsed, report.unreadable), (2, 2, 2));
    assert_eq!(report.first_rejected.map(|(line, _)| line), Some(3));
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    assert!(report.warnings[0].starts_with("line 2: a checkpoint_complete line in a shape"), "{:?}", report.warnings);
}

/// A record with a checkpoint line's head but no time walwatch can read is
/// counted unparsed and unreadable, and nothing is stored for it: here the
/// server's log_timezone set by a reload to a POSIX zone of its own
/// (`XYZT-1`, printed as the abbreviation "XYZT"), read without
/// `--timezone`. The checkpoint before the reload (real lines of the
/// fixture, lines 1554 and 1577) is read as usual; the next one (lines
/// 1992 and 2053, an hour later in the new zone's local time) cannot be dated.
#[test]
fn a_record_without_a_readable_time_is_counted_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (start, complete) = (lines[1553], lines[1576]);
    let in_new_zone = |l: &str| l.replace("2026-11-22 08:", "2026-11-22 09:").replace(" UTC [", " XYZT [");
    let (next_start, next_complete) = (in_new_zone(lines[1991]), in_new_zone(lines[2052]));
    assert!(start.contains("checkpoint starting: wal") && complete.contains("checkpoint complete: "));
    assert!(next_start.starts_with("2026-11-22 09:09:07.818 XYZT [25162] LOG:  checkpoint starting: wal"));
    assert!(next_complete.starts_with("2026-11-22 09:09:08.318 XYZT [25162] LOG:  checkpoint complete: "));
    let log = [
        start,
        complete,
        "2026-11-22 08:09:05.100 UTC [25160] LOG:  received SIGHUP, reloading configuration files",
        "2026-11-22 08:09:05.101 UTC [25160] LOG:  parameter \"log_timezone\" changed to \"XYZT-1\"",
        &next_start,
        &next_complete,
    ];
    std::fs::write(&file, log.map(|l| format!("{l}\n")).concat()).unwrap();
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), ..Options::default() };
    let no_timezone = TimeContext::new(None).unwrap();
    let report = import(&mut store, cluster, file.to_str().unwrap(), &opts, &no_timezone).unwrap();
    assert_eq!(report.misfit, None);
    let events: Vec<(&str, u64)> = report.events.iter().map(|(k, n)| (*k, *n)).collect();
    let want = [("checkpoint_complete", 1), ("checkpoint_start", 1), ("config_reload", 1), ("parameter_changed", 1)];
    assert_eq!(events, want);
    assert_eq!((report.unparsed, report.unreadable, report.rejected, report.unmatched), (2, 2, 0, 0));
    let kinds: Vec<String> = stored(&db).into_iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["checkpoint_start", "checkpoint_complete", "config_reload", "parameter_changed"]);
}

/// Lines forged inside a logged statement of a csvlog record (the real
/// fixture 15-csvlog-forged: a string literal holding four lines in the
/// log's own format, lines 30–34) are each refused and stored as a
/// rejection of that record, never as an event; with the five records a
/// client's RAISE LOG wrote, nine rejections in all (its truth.json).
#[test]
fn lines_forged_inside_a_csvlog_statement_are_each_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-csvlog-forged/log/postgresql-2026-11-22_081152.csv");
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let time = TimeContext::new(Some("UTC")).unwrap();
    let report = import(&mut store, cluster, file.to_str().unwrap(), &Options::default(), &time).unwrap();
    assert_eq!(report.format, "csvlog");
    let events: Vec<(&str, u64)> = report.events.iter().map(|(k, n)| (*k, *n)).collect();
    assert_eq!(
        events,
        [
            ("checkpoint_complete", 8),
            ("checkpoint_start", 8),
            ("config_reload", 1),
            ("parameter_changed", 1),
            ("server_ready", 1),
            ("server_shutdown", 1),
            ("server_start", 1),
            ("shutdown_request", 1),
            ("too_frequent", 6),
        ]
    );
    assert_eq!((report.rejected, report.unparsed, report.unreadable), (9, 0, 0));
    assert_eq!(report.first_rejected.map(|(line, _)| line), Some(24));

    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT line, nth, json_extract(data, '$.looked_like') FROM event WHERE kind = 'rejected' AND nth > 0 ORDER BY nth")
        .unwrap();
    let embedded: Vec<(i64, i64, String)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    let at_30 = |nth, kind: &str| (30, nth, kind.to_string());
    assert_eq!(
        embedded,
        [
            at_30(1, "checkpoint_start"),
            at_30(2, "checkpoint_complete"),
            at_30(3, "too_frequent"),
            at_30(4, "too_frequent")
        ]
    );
    // Nothing of the forged lines (dated 08:11:56.271) is a checkpoint.
    let forged: i64 = conn
        .query_row(
            "SELECT count(*) FROM checkpoint WHERE started_at = ?1 OR completed_at = ?1",
            [1_795_335_116_271_000i64],
            |r| r.get(0),
        )
        .unwrap();
    let rows: i64 = conn.query_row("SELECT count(*) FROM checkpoint", [], |r| r.get(0)).unwrap();
    assert_eq!((forged, rows), (0, 8));
}

/// The progress told after every chunk of an import that resumes counts
/// the bytes this import read, not the offset it reached: the fixture's
/// first 2000 lines read, then the rest appended and read.
#[test]
fn a_resumed_import_tells_the_bytes_it_read_this_time() {
    use super::{import_watched, Progress};
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
    let cut = text.match_indices('\n').nth(1999).unwrap().0 + 1;
    std::fs::write(&file, &text[..cut]).unwrap();
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some(PREFIX.into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    let path = file.to_str().unwrap();
    let first = import(&mut store, cluster, path, &opts, &time).unwrap();
    assert_eq!(first.bytes, cut as u64);

    std::fs::write(&file, &text).unwrap();
    let told = RefCell::new(Vec::new());
    let report = import_watched(&mut store, cluster, path, &opts, &time, &|p| told.borrow_mut().push(p)).unwrap();
    let size = text.len() as u64;
    assert_eq!((report.resumed_at, report.bytes), (cut as u64, size - cut as u64));
    let told = told.into_inner();
    assert!(!told.is_empty());
    assert!(told.iter().all(|p| p.read == p.read_to - cut as u64), "{told:?}");
    assert_eq!(
        told.last(),
        Some(&Progress { read_to: size, read: size - cut as u64, total: Some(size), events: report.event_count() })
    );
}
