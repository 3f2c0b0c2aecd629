//! `walwatch history`: one row per cluster and calendar bucket.
//!
//! # What a row counts
//! - `checkpoints` / `restartpoints`: points whose start line was read, by
//!   trigger, exactly as `summary` counts them: a start with several flag
//!   words has one trigger, the first of shutdown, end-of-recovery, wal, time
//!   that it carries, else manual (`Trigger::of`; e.g. `immediate force
//!   wait` is manual, `end-of-recovery immediate wait` end-of-recovery).
//! - A point belongs to the bucket of its start (its completion when only
//!   that was read), as in `checkpoints --since/--until`; so do its
//!   complete-line numbers (distance, buffers, times, WAL files).
//! - `forced_share`: wal ÷ (wal + time) over checkpoints and restartpoints
//!   together (a standby's forced restartpoints say the same as a primary's
//!   forced checkpoints); null when both are 0.
//! - `wal_rate_kb_s`: the WAL rate of each checkpoint cycle, defined and
//!   filtered exactly as `suggest` does ([`sizing::cycle`]): distance ÷ time
//!   since the previous start, cycles spanning a restart, ending in a
//!   requested checkpoint or without a distance left out. A cycle belongs to
//!   the bucket of the start that ends it. p50 and p95 are weighted by the
//!   time each cycle covers ([`sizing::time_percentile`], as suggest's peak);
//!   null when the bucket has no usable cycle.
//! - `write_s_p95`, `sync_s_p95`: nearest-rank percentiles over the
//!   completed points; null when none completed.
//! - `write_mb_s_p95`, `pace_ratio_p95`: the write storm ([`storm`]):
//!   nearest-rank percentiles of the rate each completed point wrote at,
//!   and of how many times faster than a timed checkpoint it wrote (over
//!   the WAL- and time-triggered points, judged by the settings in force
//!   when each ran); null when the bucket has none.
//! - `crashes`: crash recoveries: end-of-recovery checkpoints, plus crash
//!   restarts whose recovery logged none (a standby's).
//! - `server_starts`: `starting PostgreSQL` lines (PostgreSQL 12+); before
//!   12, which logs no such line, each `ready to accept connections` that
//!   follows neither a crash restart nor a promotion
//!   ([`Events::server_starts`](crate::store::events::Events)).
//! - `alerts_fired`: alerts whose `fired_at` (walwatch's clock, not the
//!   log's) lies in the bucket.
//!
//! # Empty buckets
//! Every bucket of the range is a row, zeros included: a day without a
//! checkpoint is news (logging off, server down), and sparklines over rows
//! with gaps left out would lie about time.
//!
//! # Cost
//! One pass over the cluster's points in time order (an index range) and one
//! per counted event kind; a row's percentile samples are held only while
//! its bucket is being read.

use jiff::Timestamp;
use serde::Serialize;

use crate::analyze::buckets::{rfc3339_local, Bucket};
use crate::analyze::sizing::{self, Cycle};
use crate::analyze::storm::{self, PacingTimeline};
use crate::model::event::{PointKind, Trigger};
use crate::store::checkpoints::HistoryPoint;
use crate::store::checkpoints::PointStart;
use crate::store::{Store, StoreError};

/// Started points by trigger: `summary`'s counts, keys and order.
pub(crate) use crate::store::ByTrigger as Triggers;

/// WAL rate per checkpoint cycle, kB/s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct Rates {
    pub(crate) p50: Option<f64>,
    pub(crate) p95: Option<f64>,
    pub(crate) max: Option<f64>,
}

/// One row of `walwatch history --format json`; the keys are a public interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub(crate) cluster: String,
    #[serde(serialize_with = "zoned")]
    pub(crate) bucket_start: jiff::Zoned,
    #[serde(serialize_with = "zoned")]
    pub(crate) bucket_end: jiff::Zoned,
    pub(crate) checkpoints: Triggers,
    pub(crate) restartpoints: Triggers,
    pub(crate) forced_share: Option<f64>,
    pub(crate) too_frequent: i64,
    pub(crate) wal_written_mb: f64,
    pub(crate) wal_rate_kb_s: Rates,
    pub(crate) write_s_p95: Option<f64>,
    pub(crate) write_mb_s_p95: Option<f64>,
    pub(crate) pace_ratio_p95: Option<f64>,
    pub(crate) sync_s_p95: Option<f64>,
    pub(crate) sync_s_max: Option<f64>,
    pub(crate) sync_longest_s_max: Option<f64>,
    pub(crate) buffers_written: i64,
    pub(crate) wal_files_added: i64,
    pub(crate) wal_files_removed: i64,
    pub(crate) wal_files_recycled: i64,
    pub(crate) server_starts: i64,
    pub(crate) crashes: i64,
    pub(crate) parameter_changes: i64,
    pub(crate) alerts_fired: i64,
}

fn zoned<S: serde::Serializer>(z: &jiff::Zoned, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339_local(z))
}

impl Row {
    /// Whether nothing at all was seen in the bucket.
    pub(crate) fn is_empty(&self) -> bool {
        self.checkpoints.total() + self.restartpoints.total() == 0
            && self.wal_written_mb == 0.0
            && self.write_s_p95.is_none()
            && [self.too_frequent, self.server_starts, self.crashes, self.parameter_changes, self.alerts_fired]
                .iter()
                .all(|n| *n == 0)
    }

    /// WAL-triggered checkpoints and restartpoints.
    pub(crate) fn forced(&self) -> i64 {
        self.checkpoints.wal + self.restartpoints.wal
    }
}

/// The change from `before` to `now` in %, to one decimal.
pub(crate) fn change(before: Option<f64>, now: Option<f64>) -> Option<f64> {
    match (before, now) {
        (Some(b), Some(n)) if b != 0.0 => Some(((n - b) / b * 1000.0).round() / 10.0),
        _ => None,
    }
}

/// The totals of one bucket while it is read; percentiles come from the
/// samples of the bucket being read only.
#[derive(Debug, Default)]
struct Acc {
    checkpoints: Triggers,
    restartpoints: Triggers,
    too_frequent: i64,
    distance_kb: i64,
    buffers_written: i64,
    wal_files: [i64; 3],
    server_starts: i64,
    crashes: i64,
    parameter_changes: i64,
    alerts_fired: i64,
    rates: Rates,
    write_s_p95: Option<f64>,
    write_mb_s_p95: Option<f64>,
    pace_ratio_p95: Option<f64>,
    sync_s_p95: Option<f64>,
    sync_s_max: Option<f64>,
    sync_longest_s_max: Option<f64>,
}

/// The percentile samples of the bucket being read.
#[derive(Debug, Default)]
struct Samples {
    cycles: Vec<Cycle>,
    write_s: Vec<f64>,
    write_mb_s: Vec<f64>,
    pace_ratio: Vec<f64>,
    sync_s: Vec<f64>,
}

impl Samples {
    fn close_into(&mut self, acc: &mut Acc) {
        let max =
            self.cycles.iter().map(|c| c.rate_kb_s).fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
        acc.rates = Rates {
            p50: sizing::time_percentile(&self.cycles, 50.0).map(round1),
            p95: sizing::time_percentile(&self.cycles, 95.0).map(round1),
            max: max.map(round1),
        };
        acc.write_s_p95 = sizing::percentile(&self.write_s, 95.0);
        acc.write_mb_s_p95 = sizing::percentile(&self.write_mb_s, 95.0).map(round1);
        acc.pace_ratio_p95 = sizing::percentile(&self.pace_ratio, 95.0).map(round1);
        acc.sync_s_p95 = sizing::percentile(&self.sync_s, 95.0);
        *self = Samples::default();
    }
}

/// The buckets of one cluster and the accumulators behind them.
struct Table<'a> {
    buckets: &'a [Bucket],
    starts: Vec<Timestamp>,
    accs: Vec<Acc>,
}

impl<'a> Table<'a> {
    fn new(buckets: &'a [Bucket]) -> Table<'a> {
        let starts = buckets.iter().map(|b| b.start.timestamp()).collect();
        Table { buckets, starts, accs: buckets.iter().map(|_| Acc::default()).collect() }
    }

    /// The range the table covers.
    fn range(&self) -> (Timestamp, Timestamp) {
        let first = self.starts.first().copied().unwrap_or(Timestamp::UNIX_EPOCH);
        (first, self.buckets.last().map_or(first, |b| b.end.timestamp()))
    }

    /// The accumulator of the bucket holding `t` (a binary search: the
    /// buckets are contiguous and sorted).
    fn index(&self, t: Timestamp) -> Option<usize> {
        let (from, to) = self.range();
        (from <= t && t < to).then(|| self.starts.partition_point(|s| *s <= t) - 1)
    }

    fn count(&mut self, t: Timestamp, field: Counter) {
        if let Some(i) = self.index(t) {
            *field(&mut self.accs[i]) += 1;
        }
    }
}

/// The field of a bucket an event kind adds to.
type Counter = fn(&mut Acc) -> &mut i64;

/// [`rows_paced`], the pacing settings read here.
#[cfg(test)]
pub(crate) fn rows(store: &Store, cluster: &str, buckets: &[Bucket]) -> Result<Vec<Row>, StoreError> {
    rows_paced(store, cluster, buckets, &PacingTimeline::load(store, cluster)?)
}

/// The rows of `cluster` over `buckets` (contiguous, in time order). The
/// caller reads the cluster's pacing settings once for every range it
/// asks: where nothing else says checkpoint_timeout, reading them infers
/// it from up to 5 000 checkpoint starts.
pub(crate) fn rows_paced(
    store: &Store,
    cluster: &str,
    buckets: &[Bucket],
    pacing: &PacingTimeline,
) -> Result<Vec<Row>, StoreError> {
    Ok(rows_of_each(store, cluster, &[buckets], pacing)?.remove(0))
}

/// [`rows`] for several bucketings at once (the digest's days and hours of
/// the same week) from one read of the store: the points and each event
/// kind are read once over the span of all of them and counted into each.
pub(crate) fn rows_of_each(
    store: &Store,
    cluster: &str,
    bucketings: &[&[Bucket]],
    pacing: &PacingTimeline,
) -> Result<Vec<Vec<Row>>, StoreError> {
    let mut tables: Vec<Table<'_>> = bucketings.iter().map(|b| Table::new(b)).collect();
    let Some((since, until)) = span(&tables) else { return Ok(bucketings.iter().map(|_| Vec::new()).collect()) };
    points(store, cluster, (since, until), pacing, &mut tables)?;
    let kinds: [(&str, Counter); 2] =
        [("too_frequent", |a| &mut a.too_frequent), ("parameter_changed", |a| &mut a.parameter_changes)];
    let mut count = |t: Timestamp, field: Counter| tables.iter_mut().for_each(|table| table.count(t, field));
    for (kind, field) in kinds {
        store.events().times(cluster, kind, since, until, |t| count(t, field))?;
    }
    store.events().server_starts(cluster, since, until, |t| count(t, |a| &mut a.server_starts))?;
    store.events().crashes_without_end_of_recovery(cluster, since, until, |t| count(t, |a| &mut a.crashes))?;
    store.alerts().fired_times(cluster, since, until, |t| count(t, |a| &mut a.alerts_fired))?;
    Ok(tables
        .into_iter()
        .map(|t| t.buckets.iter().zip(t.accs).map(|(b, acc)| row(cluster, b, acc)).collect())
        .collect())
}

/// The earliest start and latest end of the tables that have buckets.
fn span(tables: &[Table<'_>]) -> Option<(Timestamp, Timestamp)> {
    let ranges = tables.iter().filter(|t| !t.buckets.is_empty()).map(Table::range);
    ranges.reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

/// The single pass over the points: counts, sums, and the cycles between
/// consecutive starts ([`walk`]), into every table.
fn points(
    store: &Store,
    cluster: &str,
    (since, until): (Timestamp, Timestamp),
    pacing: &PacingTimeline,
    tables: &mut [Table<'_>],
) -> Result<(), StoreError> {
    // Per table: the bucket being read and its percentile samples.
    let mut reading: Vec<(Option<usize>, Samples)> = tables.iter().map(|_| (None, Samples::default())).collect();
    walk(store, cluster, since, until, |p, cycle| {
        for (table, (open, samples)) in tables.iter_mut().zip(reading.iter_mut()) {
            let Some(i) = table.index(p.at) else { continue };
            if let Some(o) = open.filter(|o| *o != i) {
                samples.close_into(&mut table.accs[o]);
            }
            *open = Some(i);
            add_point(&mut table.accs[i], samples, p, pacing);
            samples.cycles.extend(cycle.clone());
        }
    })?;
    for (table, (open, samples)) in tables.iter_mut().zip(reading.iter_mut()) {
        if let Some(o) = *open {
            samples.close_into(&mut table.accs[o]);
        }
    }
    Ok(())
}

/// Every point of `cluster` in `[since, until)` in time order, each with the
/// cycle its start ends when that gives a WAL rate ([`sizing::cycle`]; the
/// first cycle from the last start before `since`). The one pass behind
/// history's rows and the digest's chart, so that both count the same cycles.
pub(crate) fn walk(
    store: &Store,
    cluster: &str,
    since: Timestamp,
    until: Timestamp,
    mut each: impl FnMut(&HistoryPoint, Option<Cycle>),
) -> Result<(), StoreError> {
    let mut previous: Option<PointStart> = store.checkpoints().start_before(cluster, since)?;
    let from = previous.as_ref().map_or(since, |p| p.started_at);
    let restarts = store.events().restart_times(cluster, from, until)?;
    let restarted = |a: Timestamp, b: Timestamp| {
        let first_after = restarts.partition_point(|t| *t <= a);
        restarts.get(first_after).is_some_and(|t| *t <= b)
    };
    store.checkpoints().history(cluster, since, until, |p| {
        let mut cycle = None;
        if let Some(start) = p.start() {
            if let Some(a) = &previous {
                cycle = sizing::cycle(a, &start, restarted(a.started_at, start.started_at)).ok();
            }
            previous = Some(start);
        }
        each(&p, cycle);
    })
}

fn add_point(acc: &mut Acc, samples: &mut Samples, p: &HistoryPoint, pacing: &PacingTimeline) {
    if p.has_start {
        let trigger = p.trigger.unwrap_or(Trigger::Manual);
        match p.kind {
            PointKind::Checkpoint => acc.checkpoints.add(trigger, 1),
            PointKind::Restartpoint => acc.restartpoints.add(trigger, 1),
        }
        if trigger == Trigger::EndOfRecovery {
            acc.crashes += 1;
        }
    }
    acc.distance_kb += p.distance_kb.unwrap_or(0);
    acc.buffers_written += p.buffers_written.unwrap_or(0);
    for (sum, n) in acc.wal_files.iter_mut().zip([p.wal_files_added, p.wal_files_removed, p.wal_files_recycled]) {
        *sum += n.unwrap_or(0);
    }
    samples.write_s.extend(p.write_s);
    samples.write_mb_s.extend(storm::write_mb_s(p.buffers_written, p.write_s));
    let trigger = p.trigger.filter(|_| p.has_start);
    samples.pace_ratio.extend(pacing.at(p.at).and_then(|pace| storm::pace_ratio(pace, trigger, p.write_s)));
    samples.sync_s.extend(p.sync_s);
    acc.sync_s_max = max(acc.sync_s_max, p.sync_s);
    acc.sync_longest_s_max = max(acc.sync_longest_s_max, p.sync_longest_s);
}

fn max(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn row(cluster: &str, b: &Bucket, acc: Acc) -> Row {
    let all = acc.checkpoints.plus(&acc.restartpoints);
    let forced_share = (all.wal + all.time > 0).then(|| round3(all.wal as f64 / (all.wal + all.time) as f64));
    Row {
        cluster: cluster.to_string(),
        bucket_start: b.start.clone(),
        bucket_end: b.end.clone(),
        checkpoints: acc.checkpoints,
        restartpoints: acc.restartpoints,
        forced_share,
        too_frequent: acc.too_frequent,
        wal_written_mb: round1(acc.distance_kb as f64 / 1024.0),
        wal_rate_kb_s: acc.rates,
        write_s_p95: acc.write_s_p95,
        write_mb_s_p95: acc.write_mb_s_p95,
        pace_ratio_p95: acc.pace_ratio_p95,
        sync_s_p95: acc.sync_s_p95,
        sync_s_max: acc.sync_s_max,
        sync_longest_s_max: acc.sync_longest_s_max,
        buffers_written: acc.buffers_written,
        wal_files_added: acc.wal_files[0],
        wal_files_removed: acc.wal_files[1],
        wal_files_recycled: acc.wal_files[2],
        server_starts: acc.server_starts,
        crashes: acc.crashes,
        parameter_changes: acc.parameter_changes,
        alerts_fired: acc.alerts_fired,
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest reads days and hours in one pass: each bucketing gets
    /// exactly the rows it gets alone, on real logs (a crash restart, a
    /// storm of forced checkpoints and too-frequent warnings).
    #[test]
    fn rows_of_each_are_the_rows_of_each_bucketing_alone() {
        use crate::analyze::buckets::{cover, By};
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("h.db")).unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        let id = store.clusters_mut().find_or_create("c").unwrap();
        for file in [
            "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log",
            "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log",
            "tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            ingest::import(&mut store, id, path.to_str().unwrap(), &opts, &time).unwrap();
        }
        let tz = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
        let t = |s: &str| s.parse::<Timestamp>().unwrap();
        let days = cover(t("2026-11-20T00:00:00Z"), t("2026-11-23T00:00:00Z"), By::Day, &tz).unwrap();
        let hours = cover(t("2026-11-22T07:00:00Z"), t("2026-11-22T10:00:00Z"), By::Hour, &tz).unwrap();
        let later = cover(t("2026-11-22T08:15:00Z"), t("2026-11-22T09:00:00Z"), By::Hour, &tz).unwrap();
        let pacing = PacingTimeline::load(&store, "c").unwrap();
        let together = rows_of_each(&store, "c", &[&days, &hours, &later, &[]], &pacing).unwrap();
        let alone = [&days, &hours, &later].map(|b| rows(&store, "c", b).unwrap());
        assert_eq!(together[..3], alone);
        assert!(together[3].is_empty());
        // Not vacuous: the hours hold the storm and the crash.
        let sum = |rows: &[Row], f: fn(&Row) -> i64| rows.iter().map(f).sum::<i64>();
        assert!(sum(&alone[1], Row::forced) > 10, "{:?}", alone[1]);
        assert!(sum(&alone[1], |r| r.too_frequent) > 10);
        assert!(sum(&alone[1], |r| r.crashes) >= 1);
        assert!(alone[1].iter().any(|r| r.wal_rate_kb_s.p95.is_some()));
    }

    #[test]
    fn change_is_null_without_a_base() {
        assert_eq!(change(Some(10.0), Some(15.0)), Some(50.0));
        assert_eq!(change(Some(0.0), Some(15.0)), None);
        assert_eq!(change(None, Some(1.0)), None);
        assert_eq!(change(Some(3.0), Some(0.0)), Some(-100.0));
    }
}
