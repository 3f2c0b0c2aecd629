//! Model-based property test of the tailer (the daemon's follower): random
//! sequences of write / partial write / rotate / copytruncate / truncate in
//! place / delete / restart / poll are applied both to real files and to an
//! in-memory model, and the store must hold exactly the model's events —
//! none lost, none doubled.
//!
//! The lines are real-format `checkpoint starting:` and `checkpoint
//! complete:` lines in turn, each with its own timestamp, so the model is
//! simply the set of completed lines, and each complete must close the
//! start before it whatever file each was read from, and in which order. Destructive
//! operations (truncate in place, delete) are preceded by polls until the
//! files are read to their end, as the daemon's inotify wake-ups would do; a line destroyed before anyone could
//! read it is not a loss walwatch could prevent.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use walwatch::config::{ClusterConfig, StartAt};
use walwatch::daemon::follow::Follower;
use walwatch::store::Store;

/// A real PostgreSQL 15 complete line's message.
const COMPLETE: &str = "checkpoint complete: wrote 33 buffers (0.8%); 0 WAL file(s) added, 1 removed, 0 recycled; \
                        write=0.208 s, sync=0.095 s, total=0.344 s; sync files=30, longest=0.071 s, average=0.004 s; \
                        distance=12284 kB, estimate=12284 kB";

#[derive(Debug, Clone)]
enum Op {
    /// Complete lines.
    Write(u8),
    /// Half a line; the next write finishes it.
    Partial,
    /// logrotate's default: rename to .1, the writer reopens a new file.
    Rotate,
    /// PostgreSQL's own rotation (log_rotation_size with a timestamped
    /// log_filename): the writer goes on in a file of a new name, whenever
    /// it likes: the follower may not have read the old file's end.
    NewName,
    /// logrotate's copytruncate: copy to .1, truncate the original.
    CopyTruncate,
    /// log_truncate_on_rotation: same file, content replaced.
    TruncateInPlace,
    /// The current file is deleted; the writer starts a new one.
    Delete,
    /// The daemon restarts (open files closed; the store remains).
    Restart,
    Poll,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u8..20).prop_map(Op::Write),
        2 => Just(Op::Partial),
        1 => Just(Op::Rotate),
        2 => Just(Op::NewName),
        1 => Just(Op::CopyTruncate),
        1 => Just(Op::TruncateInPlace),
        1 => Just(Op::Delete),
        1 => Just(Op::Restart),
        4 => Just(Op::Poll),
    ]
}

/// The writer side: the real file and the lines it completed.
struct World {
    dir: PathBuf,
    next_ms: u64,
    /// Lines made so far (odd: a start, even: a complete).
    lines: u64,
    /// An unfinished line waiting in the current file.
    pending: Option<String>,
    completed: Vec<String>,
    /// The current file's number (its name); each NewName adds one.
    file_no: u32,
}

impl World {
    fn path(&self) -> PathBuf {
        self.dir.join(format!("postgresql-{:03}.log", self.file_no))
    }

    /// Starts and completes in turn, as one checkpointer logs them.
    /// A start is dated the millisecond of the complete before it, as
    /// when PostgreSQL starts the next forced checkpoint at once.
    fn line(&mut self) -> String {
        self.lines += 1;
        let start = self.lines % 2 == 1;
        if !start {
            self.next_ms += 7;
        }
        let (s, ms) = (self.next_ms / 1000, self.next_ms % 1000);
        let ts = format!("2026-11-22 {:02}:{:02}:{:02}.{ms:03} UTC", 8 + s / 3600, s / 60 % 60, s % 60);
        match start {
            true => format!("{ts} [4242] LOG:  checkpoint starting: wal\n"),
            false => format!("{ts} [4242] LOG:  {COMPLETE}\n"),
        }
    }

    fn append(&self, text: &str) {
        OpenOptions::new().create(true).append(true).open(self.path()).unwrap().write_all(text.as_bytes()).unwrap();
    }

    fn finish_pending(&mut self) {
        if let Some(line) = self.pending.take() {
            let half = line.len() / 2;
            self.append(&line[half..]);
            self.completed.push(line);
        }
    }

    fn write(&mut self, n: u8) {
        self.finish_pending();
        for _ in 0..n {
            let line = self.line();
            self.append(&line);
            self.completed.push(line);
        }
    }

    fn partial(&mut self) {
        self.finish_pending();
        let line = self.line();
        self.append(&line[..line.len() / 2]);
        self.pending = Some(line);
    }
}

fn follower(store: &mut Store, dir: &Path) -> Follower {
    let config = ClusterConfig {
        name: "model".into(),
        logs: vec![format!("{}/postgresql-*.log*", dir.display())],
        data_directory: None,
        format: "stderr".into(),
        prefix: "%m [%p] %q%u@%d ".into(),
        timezone: Some("UTC".into()),
        start_at: StartAt::Beginning,
        ..ClusterConfig::default()
    };
    Follower::new(store, &config, None).unwrap()
}

/// Polls until no last entry is held back: the daemon does this on its own
/// once a file has been quiet for a moment.
fn settle(f: &mut Follower, store: &mut Store) {
    for _ in 0..5 {
        if !f.poll(store).unwrap() {
            return;
        }
    }
    panic!("a held-back entry was never flushed");
}

fn stored_events(db: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT at FROM line WHERE kind IN ('checkpoint_start', 'checkpoint_complete') ORDER BY at")
        .unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn expected_events(lines: &[String]) -> Vec<i64> {
    let mut v: Vec<i64> = lines
        .iter()
        .map(|l| {
            let civil = jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M:%S%.f", &l[..23]).unwrap();
            civil.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp().as_microsecond()
        })
        .collect();
    v.sort();
    v
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let dir = tmp.path().join("log");
    fs::create_dir(&dir).unwrap();
    let mut store = Store::open(&db).unwrap();
    let mut f = follower(&mut store, &dir);
    let mut w = World { dir: dir.clone(), next_ms: 0, lines: 0, pending: None, completed: Vec::new(), file_no: 0 };
    for op in ops {
        match op {
            Op::Write(n) => w.write(*n),
            Op::Partial => w.partial(),
            Op::Rotate => {
                w.finish_pending();
                settle(&mut f, &mut store);
                if w.path().exists() {
                    fs::rename(w.path(), w.path().with_extension("log.1")).unwrap();
                }
                File::create(w.path()).unwrap();
            }
            Op::CopyTruncate => {
                w.finish_pending();
                settle(&mut f, &mut store);
                if w.path().exists() {
                    fs::copy(w.path(), w.path().with_extension("log.1")).unwrap();
                    OpenOptions::new().write(true).truncate(true).open(w.path()).unwrap();
                }
            }
            Op::TruncateInPlace => {
                w.finish_pending();
                settle(&mut f, &mut store);
                if w.path().exists() {
                    OpenOptions::new().write(true).truncate(true).open(w.path()).unwrap();
                }
            }
            Op::Delete => {
                w.finish_pending();
                settle(&mut f, &mut store);
                let _ = fs::remove_file(w.path());
            }
            Op::NewName => {
                w.finish_pending();
                w.file_no += 1;
            }
            Op::Restart => {
                drop(f);
                f = follower(&mut store, &dir);
            }
            Op::Poll => {
                settle(&mut f, &mut store);
            }
        }
    }
    w.finish_pending();
    settle(&mut f, &mut store);
    let got = stored_events(&db);
    let want = expected_events(&w.completed);
    prop_assert_eq!(got.len(), want.len(), "events stored vs lines completed (ops {:?})", ops);
    prop_assert_eq!(got, want);
    let (starts, completes) = w.completed.iter().fold((0, 0), |(s, c), l| match l.contains("starting") {
        true => (s + 1, c),
        false => (s, c + 1),
    });
    // Each complete closes the start before it, whatever file it came from and when it was read.
    prop_assert_eq!(pairs(&db), (starts, completes, 0), "rows, completed rows, rows without a start (ops {:?})", ops);
    Ok(())
}

/// (rows, rows with a complete, rows without a start) of table checkpoint.
fn pairs(db: &Path) -> (i64, i64, i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT count(*), count(complete_source_id), count(*) - count(start_source_id) FROM checkpoint",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn the_store_holds_exactly_the_completed_lines(ops in proptest::collection::vec(op(), 1..40)) {
        run(&ops)?;
    }
}

#[test]
fn a_line_split_across_a_poll_is_stored_once() {
    run(&[Op::Write(3), Op::Partial, Op::Poll, Op::Write(2), Op::Poll]).unwrap();
}
