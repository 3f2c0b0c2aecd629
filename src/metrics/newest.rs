//! Each cluster's newest event time, kept between scrapes: a scrape reads
//! only the events stored since the previous one (by id), where asking the
//! store for each cluster's newest event costs a few index seeks per kind
//! of event, 50 clusters a scrape.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::store::{Store, StoreError};

#[derive(Debug, Default)]
pub(crate) struct NewestEvents {
    /// The store's lowest event id when last read: when it moves, events
    /// were deleted and the times are read again from all of them (so too
    /// when the highest id falls below what was read: the newest events
    /// were forgotten).
    floor: Option<i64>,
    /// The tolerance the times were read with (a reload may change it).
    tolerance_us: i64,
    watermark: i64,
    /// Log time (µs) of each cluster's newest recognised event not dated ahead.
    pub(crate) newest: BTreeMap<String, i64>,
}

impl NewestEvents {
    pub(crate) fn update(&mut self, store: &Store, tolerance: Duration) -> Result<(), StoreError> {
        let floor = store.events().first_id()?;
        let tolerance_us = i64::try_from(tolerance.as_micros()).unwrap_or(i64::MAX);
        let newest_gone = store.events().last_id()?.unwrap_or(0) < self.watermark;
        if floor != self.floor || tolerance_us != self.tolerance_us || newest_gone {
            *self = NewestEvents { floor, tolerance_us, ..NewestEvents::default() };
        }
        for (cluster, max_id, at) in store.events().newest_after(self.watermark, tolerance_us)? {
            self.watermark = self.watermark.max(max_id);
            if let Some(at) = at {
                let newest = self.newest.entry(cluster).or_insert(at);
                *newest = (*newest).max(at);
            }
        }
        Ok(())
    }
}
