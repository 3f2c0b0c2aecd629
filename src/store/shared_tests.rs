//! A store of made-up events for tests: cluster "main", one source, the
//! events stored through the writers' own path (`ingest::pairing::commit`).

use std::path::Path;

use jiff::Timestamp;

use crate::frame::Pos;
use crate::model::event::{Event, EventBody, PointKind};
use crate::store::{SourceSpec, Store};

/// One event: its log time, what it is, and how far ahead of walwatch's
/// clock (µs) it is recorded as having been when read.
pub(crate) struct Line {
    pub(crate) at: Timestamp,
    pub(crate) body: EventBody,
    pub(crate) ahead_us: Option<i64>,
}

pub(crate) fn start(at: &str, flag: &str, ahead_us: Option<i64>) -> Line {
    let body = EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec![flag.into()] };
    Line { at: at.parse().unwrap(), body, ahead_us }
}

/// Cluster "main" with `lines`, stored through the writers' own path;
/// `ahead_us` is then set exactly, as no test can read a line at a chosen
/// instant of the real clock.
pub(crate) fn store(dir: &Path, lines: Vec<Line>) -> Store {
    let mut store = Store::open(&dir.join("w.db")).unwrap();
    let cluster_id = store.clusters_mut().find_or_create("main").unwrap();
    let spec =
        SourceSpec { path: "/log/postgresql.log", meta: None, format: crate::frame::Format::Stderr, prefix: None };
    let (mut row, _) =
        store.sources_mut().find_or_create(cluster_id, b"2026-11-22 10:00:00.000 UTC [7] LOG:  a\n", &spec).unwrap();
    let events: Vec<Event> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| Event {
            at: l.at,
            pid: Some(7),
            offset: i as u64,
            line: i as u64 + 1,
            nth: 0,
            body: l.body.clone(),
        })
        .collect();
    let end = Pos { offset: lines.len() as u64, line: lines.len() as u64 + 1 };
    crate::ingest::pairing::commit(&mut store, &mut row, &spec, &events, end).unwrap();
    for (i, l) in lines.iter().enumerate() {
        for sql in [
            "UPDATE event SET ahead_us = ?1 WHERE offset = ?2",
            "UPDATE checkpoint SET start_ahead_us = ?1 WHERE start_offset = ?2",
            "UPDATE checkpoint SET complete_ahead_us = ?1 WHERE complete_offset = ?2",
        ] {
            store.conn.execute(sql, rusqlite::params![l.ahead_us, i as i64]).unwrap();
        }
    }
    store
}

/// Real PostgreSQL 15 logs: a forced-checkpoint storm amid noise, and a
/// crash with the run after it.
pub(crate) const NOISE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";
pub(crate) const CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log";
pub(crate) const AFTER_CRASH: &str = "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log";

/// Imports each `(cluster, file)` in the order given into a new store.
pub(crate) fn import(files: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    for (cluster, path) in files {
        let cluster = store.clusters_mut().find_or_create(cluster).unwrap();
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
    }
    (dir, store)
}
