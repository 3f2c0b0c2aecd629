//! The daily digest: one mail a day covering the previous
//! local day for every cluster.
//!
//! [`schedule`] decides which day is due; [`report`] reads that day from
//! the store (the numbers are `walwatch history --by day`'s), [`bursts`]
//! finds forced checkpoints that recur at the same hours; [`render`] makes
//! the mail; [`queue`] records the day and queues the mail in the outbox in
//! one transaction, so each day is queued once and delivered by the
//! outbox like every other message (retries, stable Message-ID).

pub(crate) mod bursts;
pub(crate) mod chart;
pub mod queue;
pub(crate) mod render;
pub(crate) mod report;
pub mod schedule;

/// A store holding a real PostgreSQL 15 log of 2026-11-22 (UTC), as cluster "c".
#[cfg(test)]
pub(crate) fn store_with_the_std_log(dir: &std::path::Path) -> crate::store::Store {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    let mut store = crate::store::Store::open(&dir.join("d.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log");
    let time = TimeContext::new(Some("UTC")).unwrap();
    ingest::import(&mut store, cluster, log.to_str().unwrap(), &Options::default(), &time).unwrap();
    store
}
