//! Recurring bursts: forced checkpoints that come back in the same hours of
//! the day, day after day — a nightly ETL, a COPY job, a backup's VACUUM.
//! The p95 sizing model deliberately ignores the top 5 % of the time, so a
//! one-hour nightly job never moves `suggest`; the digest names it with the
//! `max_wal_size` that would absorb it, and the DBA decides whether that is
//! worth the disk.

use jiff::civil::Date;

use crate::analyze::history::Row;
use crate::analyze::sizing::{readable_mb, required_mb, Params};

/// A window recurs when it has forced checkpoints on this many days of the
/// ones looked at (three: twice may be chance, three times is a schedule).
pub(crate) const MIN_DAYS: usize = 3;

/// Forced checkpoints in the same local hours on several days.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Burst {
    /// Local hours `[from, to)` of the window, 0–24.
    pub(crate) from_hour: i8,
    pub(crate) to_hour: i8,
    /// The days with forced checkpoints in the window, oldest first.
    pub(crate) days: Vec<Date>,
    /// The days looked at (the digest's day and the week before it).
    pub(crate) of_days: usize,
    pub(crate) forced: i64,
    /// The highest WAL rate of a checkpoint cycle in the window, kB/s.
    pub(crate) peak_kb_s: Option<f64>,
    /// The max_wal_size whose trigger covers that rate for a whole
    /// checkpoint_timeout, in MB (None without a rate).
    pub(crate) absorbing_max_wal_size_mb: Option<u64>,
}

/// The recurring windows in `hours` (hour rows of one cluster, in time
/// order, covering whole days).
pub(crate) fn recurring(hours: &[Row], params: &Params) -> Vec<Burst> {
    let mut per_hour: [Vec<&Row>; 24] = Default::default();
    let mut all_days: Vec<Date> = hours.iter().map(|r| r.bucket_start.date()).collect();
    all_days.dedup();
    for row in hours.iter().filter(|r| r.forced() > 0) {
        per_hour[usize::from(row.bucket_start.hour().unsigned_abs()).min(23)].push(row);
    }
    let recurs = |rows: &Vec<&Row>| distinct_days(rows.iter().copied()).len() >= MIN_DAYS;
    let mut out = Vec::new();
    let mut hour = 0;
    while hour < 24 {
        if !recurs(&per_hour[hour]) {
            hour += 1;
            continue;
        }
        let from = hour;
        while hour < 24 && recurs(&per_hour[hour]) {
            hour += 1;
        }
        let rows: Vec<&Row> = per_hour[from..hour].iter().flatten().copied().collect();
        out.push(burst(from, hour, &rows, all_days.len(), params));
    }
    out
}

fn distinct_days<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<Date> {
    let mut days: Vec<Date> = rows.map(|r| r.bucket_start.date()).collect();
    days.sort();
    days.dedup();
    days
}

fn burst(from: usize, to: usize, rows: &[&Row], of_days: usize, params: &Params) -> Burst {
    let peak = rows.iter().filter_map(|r| r.wal_rate_kb_s.max).filter(|v| v.is_finite()).reduce(f64::max);
    let absorbing = peak.map(|kb_s| {
        let wal_mb = kb_s * params.timeout_s / 1024.0;
        readable_mb(required_mb(wal_mb, params), params.segment_mb)
    });
    Burst {
        from_hour: from as i8,
        to_hour: to as i8,
        days: distinct_days(rows.iter().copied()),
        of_days,
        forced: rows.iter().map(|r| r.forced()).sum(),
        peak_kb_s: peak,
        absorbing_max_wal_size_mb: absorbing,
    }
}

#[cfg(test)]
mod tests;
