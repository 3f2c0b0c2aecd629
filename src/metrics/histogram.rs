//! The checkpoint histograms, counted from the store's completed checkpoints
//! and kept between scrapes: a scrape reads only the checkpoints completed
//! since the previous one (by the id of their complete line), so its cost
//! does not grow with the history.

use std::collections::BTreeMap;

use crate::analyze::storm;
use crate::model::event::Trigger;
use crate::store::checkpoints::Completed;
use crate::store::{Store, StoreError};

/// Upper bounds of the duration buckets (seconds). 2 and 5 are the
/// slow_sync rule's thresholds, so the rules file can count slow syncs.
pub(crate) const DURATION_BOUNDS: [f64; 14] =
    [0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0];

/// Upper bounds of the WAL distance buckets (bytes): 1 MiB to 64 GiB by 4.
pub(crate) const DISTANCE_BOUNDS: [f64; 9] = [
    1048576.0,
    4194304.0,
    16777216.0,
    67108864.0,
    268435456.0,
    1073741824.0,
    4294967296.0,
    17179869184.0,
    68719476736.0,
];

const MB: f64 = 1024.0 * 1024.0;

/// Upper bounds of the write-rate buckets (bytes/s): 1 MiB/s to 1 GiB/s by 4.
pub(crate) const RATE_BOUNDS: [f64; 6] = [1048576.0, 4194304.0, 16777216.0, 67108864.0, 268435456.0, 1073741824.0];

/// A histogram: counts per bucket (not cumulative; the last is +Inf), sum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hist {
    pub(crate) bounds: &'static [f64],
    /// `bounds.len() + 1` counts: one per bound, then the overflow.
    pub(crate) counts: Vec<u64>,
    pub(crate) sum: f64,
}

impl Hist {
    pub(crate) fn new(bounds: &'static [f64]) -> Hist {
        Hist { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0 }
    }

    /// A value lands in the first bucket whose bound is >= it (`le`).
    pub(crate) fn observe(&mut self, v: f64) {
        let i = self.bounds.iter().position(|b| v <= *b).unwrap_or(self.bounds.len());
        self.counts[i] += 1;
        self.sum += v;
    }

    pub(crate) fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// (upper bound, count) per bucket as the encoder takes them: not
    /// cumulative, +Inf last.
    pub(crate) fn buckets(&self) -> Vec<(f64, u64)> {
        self.bounds.iter().copied().chain([f64::INFINITY]).zip(self.counts.iter().copied()).collect()
    }
}

/// One cluster's histograms and its newest completed checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterHists {
    pub(crate) write: Hist,
    pub(crate) sync: Hist,
    pub(crate) total: Hist,
    pub(crate) distance: Hist,
    /// The rate each checkpoint wrote its buffers at ([`storm::write_mb_s`]).
    pub(crate) write_rate: Hist,
    /// The newest complete line by its time.
    pub(crate) last: Option<LastPoint>,
}

/// The figures of a cluster's newest completed checkpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LastPoint {
    pub(crate) completed_at_us: i64,
    pub(crate) distance_kb: Option<i64>,
    pub(crate) estimate_kb: Option<i64>,
    /// Bytes/s its buffers were written at.
    pub(crate) write_rate: Option<f64>,
    pub(crate) write_s: Option<f64>,
    pub(crate) trigger: Option<Trigger>,
}

impl Default for ClusterHists {
    fn default() -> Self {
        ClusterHists {
            write: Hist::new(&DURATION_BOUNDS),
            sync: Hist::new(&DURATION_BOUNDS),
            total: Hist::new(&DURATION_BOUNDS),
            distance: Hist::new(&DISTANCE_BOUNDS),
            write_rate: Hist::new(&RATE_BOUNDS),
            last: None,
        }
    }
}

impl ClusterHists {
    fn add(&mut self, c: &Completed) {
        let pairs = [(&mut self.write, c.write_s), (&mut self.sync, c.sync_s), (&mut self.total, c.total_s)];
        for (hist, value) in pairs {
            if let Some(v) = value {
                hist.observe(v);
            }
        }
        if let Some(kb) = c.distance_kb {
            self.distance.observe(kb as f64 * 1024.0);
        }
        let write_rate = storm::write_mb_s(c.buffers_written, c.write_s).map(|mb| mb * MB);
        if let Some(rate) = write_rate {
            self.write_rate.observe(rate);
        }
        if let Some(at) = c.completed_at_us {
            if self.last.is_none_or(|l| at >= l.completed_at_us) {
                self.last = Some(LastPoint {
                    completed_at_us: at,
                    distance_kb: c.distance_kb,
                    estimate_kb: c.estimate_kb,
                    write_rate,
                    write_s: c.write_s,
                    trigger: c.trigger,
                });
            }
        }
    }
}

/// The histograms of every cluster, as of the last complete line read.
#[derive(Debug, Default)]
pub(crate) struct Histograms {
    watermark: i64,
    /// Completed rows counted: when the store holds another number after
    /// the new ones are read, rows were deleted (pruning, `forget`) and
    /// everything is counted again, so no deleted row stays counted.
    rows: i64,
    pub(crate) clusters: BTreeMap<String, ClusterHists>,
}

impl Histograms {
    /// Reads what was completed since the last call.
    pub(crate) fn update(&mut self, store: &Store) -> Result<(), StoreError> {
        self.read_new(store)?;
        if self.rows != store.checkpoints().completed_total()? {
            *self = Histograms::default();
            self.read_new(store)?;
        }
        Ok(())
    }

    fn read_new(&mut self, store: &Store) -> Result<(), StoreError> {
        for row in store.checkpoints().completed_after(self.watermark)? {
            self.watermark = self.watermark.max(row.id);
            self.rows += 1;
            self.clusters.entry(row.cluster.clone()).or_default().add(&row);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_on_a_bound_counts_in_that_bucket_and_the_rest_overflow() {
        let mut h = Hist::new(&DURATION_BOUNDS);
        for v in [0.1, 0.2, 5.0, 5.01, 7200.0] {
            h.observe(v);
        }
        let b = h.buckets();
        assert_eq!(b[0], (0.1, 1));
        assert_eq!(b[1], (0.5, 1));
        assert_eq!(b[4], (5.0, 1));
        assert_eq!(b[5], (10.0, 1));
        assert_eq!(b[14], (f64::INFINITY, 1));
        assert_eq!((h.count(), h.sum), (5, 0.1 + 0.2 + 5.0 + 5.01 + 7200.0));
    }
}
