//! A scrape's reading of the store, with what is kept between scrapes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::histogram::Histograms;
use super::{Advice, Params, ScrapeError, Snapshot};
use crate::store::{Store, StoreError};

/// How long a cluster's advice is reused while no checkpoint completes: its
/// window slides with the clock, slowly; recomputing it for 50 clusters on
/// every scrape would cost more than the rest of the scrape.
const ADVICE_FOR: Duration = Duration::from_secs(60);

const MB: f64 = 1024.0 * 1024.0;

/// Reads the store for each scrape; owned by the endpoint's thread.
#[derive(Debug, Default)]
pub struct Scraper {
    histograms: Histograms,
    advice: HashMap<String, (Instant, Advice)>,
}

impl Scraper {
    /// One scrape: a read-only connection of its own, every query in one
    /// read transaction so the numbers agree with each other.
    pub fn scrape(&mut self, db: &Path, params: &Params) -> Result<Snapshot, ScrapeError> {
        let store = Store::open_read_only(db)?;
        store.in_snapshot(|| self.read(&store, params))
    }

    fn read(&mut self, store: &Store, params: &Params) -> Result<Snapshot, ScrapeError> {
        let clusters = store.clusters()?;
        let touched = self.histograms.update(store)?;
        let mut snapshot = Snapshot {
            points: store.point_totals()?,
            too_frequent: store.event_totals("too_frequent")?.into_iter().collect(),
            histograms: self.histograms.clusters.clone(),
            alerts: open_alerts(store)?,
            lag: lag(store)?,
            ..Snapshot::default()
        };
        for name in &clusters {
            if let Some(newest) = store.log_times(name, params.skew_tolerance)?.newest {
                snapshot.last_event.insert(name.clone(), newest.as_millisecond() as f64 / 1000.0);
            }
            snapshot.advice.insert(name.clone(), self.advice(store, name, params, &touched)?);
        }
        self.advice.retain(|name, _| clusters.contains(name));
        snapshot.clusters = clusters;
        Ok(snapshot)
    }

    /// The cluster's advice, recomputed when a checkpoint completed since
    /// or the kept one is older than [`ADVICE_FOR`].
    fn advice(
        &mut self,
        store: &Store,
        name: &str,
        params: &Params,
        touched: &BTreeSet<String>,
    ) -> Result<Advice, StoreError> {
        let fresh = |at: &Instant| at.elapsed() < ADVICE_FOR;
        match self.advice.get(name) {
            Some((at, advice)) if fresh(at) && !touched.contains(name) => Ok(advice.clone()),
            _ => {
                let advice = compute_advice(store, name, params)?;
                self.advice.insert(name.to_string(), (Instant::now(), advice.clone()));
                Ok(advice)
            }
        }
    }
}

/// The settings in effect and `walwatch suggest`'s figures, as the command
/// computes them (without refreshing the settings from the conf files:
/// the daemon does that, and this connection only reads).
fn compute_advice(store: &Store, name: &str, params: &Params) -> Result<Advice, StoreError> {
    let settings = crate::settings::current(store, name)?;
    let s = crate::analyze::sizing::suggest(
        store,
        name,
        &settings,
        &params.advice,
        params.skew_tolerance,
        Timestamp::now(),
    )?;
    let values = [
        ("max_wal_size", settings.bytes("max_wal_size")),
        ("min_wal_size", settings.bytes("min_wal_size")),
        ("checkpoint_timeout", settings.seconds("checkpoint_timeout")),
        ("checkpoint_completion_target", settings.number("checkpoint_completion_target")),
    ];
    Ok(Advice {
        wal_rate: s.basis.peak_wal_rate_kb_s.map(|kb| kb * 1024.0),
        suggested_max_wal_size: s.suggested.max_wal_size_mb.map(|mb| mb as f64 * MB),
        settings: values.into_iter().filter_map(|(n, v)| Some((n, v?))).collect(),
    })
}

fn open_alerts(store: &Store) -> Result<BTreeMap<(String, String, String), i64>, StoreError> {
    let mut open = BTreeMap::new();
    for a in store.alerts(None, false)? {
        *open.entry((a.cluster, a.rule, a.severity.as_str().to_string())).or_insert(0) += 1;
    }
    Ok(open)
}

/// Each followed file's size now against how far walwatch read it, as
/// `status` shows it; a file that is gone has no lag to show.
fn lag(store: &Store) -> Result<Vec<(String, String, u64)>, StoreError> {
    let files = store.followed_files()?;
    Ok(files
        .into_iter()
        .filter_map(|(cluster, path, read_to)| {
            let size = std::fs::metadata(&path).ok()?.len();
            Some((cluster, path, size.saturating_sub(read_to)))
        })
        .collect())
}
