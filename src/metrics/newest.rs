//! Each cluster's newest event time, kept between scrapes: a scrape reads
//! only the events and checkpoint rows stored since the previous one (by
//! id), where asking the store for each cluster's newest event costs a few
//! index seeks per kind of event, 50 clusters a scrape.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::store::{Store, StoreError};

#[derive(Debug, Default)]
pub(crate) struct NewestEvents {
    /// The store's lowest event and checkpoint row ids when last read: when
    /// either moves, rows were deleted and the times are read again from
    /// all of them (so too when a highest id falls below what was read: the
    /// newest were forgotten).
    floor: (Option<i64>, Option<i64>),
    /// The tolerance the times were read with (a reload may change it).
    tolerance_us: i64,
    /// The highest event id and checkpoint row id read.
    watermark: i64,
    row_watermark: i64,
    /// Log time (µs) of each cluster's newest recognised event not dated ahead.
    pub(crate) newest: BTreeMap<String, i64>,
}

impl NewestEvents {
    pub(crate) fn update(&mut self, store: &Store, tolerance: Duration) -> Result<(), StoreError> {
        let floor = (store.events().first_id()?, store.checkpoints().first_row()?);
        let tolerance_us = i64::try_from(tolerance.as_micros()).unwrap_or(i64::MAX);
        let newest_gone = store.events().last_id()?.unwrap_or(0) < self.watermark
            || store.checkpoints().last_row()?.unwrap_or(0) < self.row_watermark;
        if floor != self.floor || tolerance_us != self.tolerance_us || newest_gone {
            *self = NewestEvents { floor, tolerance_us, ..NewestEvents::default() };
        }
        for (cluster, max_id, at) in store.events().newest_after(self.watermark, tolerance_us)? {
            self.watermark = self.watermark.max(max_id);
            self.note(cluster, at);
        }
        for (cluster, max_id, at) in store.checkpoints().newest_lines_after(self.row_watermark, tolerance_us)? {
            self.row_watermark = self.row_watermark.max(max_id);
            self.note(cluster, at);
        }
        Ok(())
    }

    fn note(&mut self, cluster: String, at: Option<i64>) {
        if let Some(at) = at {
            let newest = self.newest.entry(cluster).or_insert(at);
            *newest = (*newest).max(at);
        }
    }
}
