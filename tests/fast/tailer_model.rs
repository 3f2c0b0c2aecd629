//! Model-based property test of the tailer (the daemon's follower): random
//! sequences of write / partial write / rotate / copytruncate / truncate in
//! place / delete / restart / poll are applied both to real files and to an
//! in-memory model, and the store must hold exactly the model's events —
//! none lost, none doubled.
//!
//! Every line is a real-format `checkpoint starting:` line with its own
//! timestamp, so the model is simply the set of completed lines. Destructive
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

#[derive(Debug, Clone)]
enum Op {
    /// Complete lines.
    Write(u8),
    /// Half a line; the next write finishes it.
    Partial,
    /// logrotate's default: rename to .1, the writer reopens a new file.
    Rotate,
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
    /// An unfinished line waiting in the current file.
    pending: Option<String>,
    completed: Vec<String>,
}

impl World {
    fn path(&self) -> PathBuf {
        self.dir.join("postgresql.log")
    }

    fn line(&mut self) -> String {
        self.next_ms += 7;
        let (s, ms) = (self.next_ms / 1000, self.next_ms % 1000);
        let ts = format!("2026-11-22 {:02}:{:02}:{:02}.{ms:03} UTC", 8 + s / 3600, s / 60 % 60, s % 60);
        format!("{ts} [4242] LOG:  checkpoint starting: wal\n")
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
        logs: vec![format!("{}/postgresql.log*", dir.display())],
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

fn stored_starts(db: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT at FROM event WHERE kind = 'checkpoint_start' ORDER BY at").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn expected_starts(lines: &[String]) -> Vec<i64> {
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
    let mut w = World { dir: dir.clone(), next_ms: 0, pending: None, completed: Vec::new() };
    for op in ops {
        match op {
            Op::Write(n) => w.write(*n),
            Op::Partial => w.partial(),
            Op::Rotate => {
                w.finish_pending();
                settle(&mut f, &mut store);
                if w.path().exists() {
                    fs::rename(w.path(), dir.join("postgresql.log.1")).unwrap();
                }
                File::create(w.path()).unwrap();
            }
            Op::CopyTruncate => {
                w.finish_pending();
                settle(&mut f, &mut store);
                if w.path().exists() {
                    fs::copy(w.path(), dir.join("postgresql.log.1")).unwrap();
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
    let got = stored_starts(&db);
    let want = expected_starts(&w.completed);
    prop_assert_eq!(got.len(), want.len(), "events stored vs lines completed (ops {:?})", ops);
    prop_assert_eq!(got, want);
    Ok(())
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
