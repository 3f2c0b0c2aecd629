//! The daemon's daily prune on a given store, timed (bench/prune-bench.sh):
//! `prune_bench STORE NOW KEEP_DAYS` prunes to NOW - KEEP_DAYS in the
//! daemon's batches, then reclaims the space by incremental vacuum, and
//! prints one line of `key=value` figures: rows, batches, the CPU and wall
//! seconds of each phase (CPU of this process's main thread, from
//! /proc/self/schedstat: both phases run on it), pages before and after.

use std::path::Path;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use walwatch::store::retention::BATCH;
use walwatch::store::Store;

/// The main thread's CPU time so far.
fn cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/self/schedstat").unwrap_or_default();
    let ns = text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
    Duration::from_nanos(ns)
}

fn pages(db: &Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let get = |p: &str| conn.pragma_query_value(None, p, |r| r.get::<_, i64>(0)).unwrap();
    (get("page_count"), get("freelist_count"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, now, days] = &args[..] else {
        eprintln!("usage: prune_bench STORE NOW KEEP_DAYS");
        std::process::exit(2);
    };
    let db = Path::new(db);
    let now: Timestamp = now.parse().expect("NOW: RFC 3339");
    let cutoff = now - SignedDuration::from_hours(24 * days.parse::<i64>().expect("KEEP_DAYS"));
    let (pages_before, _) = pages(db);
    let mut store = Store::open(db).expect("open");
    let never = || false;
    let (c0, w0) = (cpu(), Instant::now());
    let pruned = store.retention_mut().prune(cutoff, BATCH, &never).expect("prune");
    let (c1, w1) = (cpu(), Instant::now());
    let (_, free) = pages(db);
    let reclaimed = store.retention_mut().reclaim(&never).expect("reclaim");
    let (c2, w2) = (cpu(), Instant::now());
    drop(store);
    let (pages_after, _) = pages(db);
    println!(
        "rows={} checkpoints={} events={} batches={} largest_batch={} prune_cpu_s={:.3} prune_wall_s={:.3} \
         free_pages={free} vacuum_cpu_s={:.3} vacuum_wall_s={:.3} vacuum_steps={} incremental={} \
         pages_before={pages_before} pages_after={pages_after}",
        pruned.rows(),
        pruned.checkpoints,
        pruned.events,
        pruned.batches,
        pruned.largest_batch,
        (c1 - c0).as_secs_f64(),
        (w1 - w0).as_secs_f64(),
        (c2 - c1).as_secs_f64(),
        (w2 - w1).as_secs_f64(),
        reclaimed.steps,
        reclaimed.incremental,
    );
}
