//! A scrape's reading of the store, with what is kept between scrapes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::histogram::Histograms;
use super::newest::NewestEvents;
use super::{Advice, Params, ScrapeError, Snapshot};
use crate::store::{Store, StoreError};

/// How long a cluster's advice is kept while none of its checkpoints
/// completes: its window slides with the clock, slowly.
const ADVICE_FOR: Duration = Duration::from_secs(60);

const MB: f64 = 1024.0 * 1024.0;

/// The advice of each cluster, as the [`Advisor`] last computed it: a
/// scrape only reads it, so that the settings and the suggest model (a
/// dozen queries a cluster, 50 clusters) never run on the scrape's time.
pub type AdviceBoard = Arc<Mutex<BTreeMap<String, Advice>>>;

/// Reads the store for each scrape; owned by the endpoint's thread.
#[derive(Debug, Default)]
pub struct Scraper {
    histograms: Histograms,
    newest: NewestEvents,
    advice: AdviceBoard,
}

impl Scraper {
    /// A scraper showing the advice that `board`'s [`Advisor`] computes.
    pub fn new(board: AdviceBoard) -> Scraper {
        Scraper { histograms: Histograms::default(), newest: NewestEvents::default(), advice: board }
    }

    /// One scrape: a read-only connection of its own, every query in one
    /// read transaction so the numbers agree with each other.
    pub fn scrape(&mut self, db: &Path, params: &Params) -> Result<Snapshot, ScrapeError> {
        let store = Store::open_read_only(db)?;
        store.in_snapshot(|| self.read(&store, params))
    }

    fn read(&mut self, store: &Store, params: &Params) -> Result<Snapshot, ScrapeError> {
        let clusters = store.clusters().names()?;
        self.histograms.update(store)?;
        let mut snapshot = Snapshot {
            points: store.checkpoints().started_totals()?,
            too_frequent: store.events().totals("too_frequent")?.into_iter().collect(),
            histograms: self.histograms.clusters.clone(),
            alerts: open_alerts(store)?,
            lag: lag(store, params.followed.as_deref())?,
            advice: self.advice.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            listeners: store.listeners().all()?,
            ..Snapshot::default()
        };
        self.newest.update(store, params.skew_tolerance)?;
        for (name, at_us) in &self.newest.newest {
            snapshot.last_event.insert(name.clone(), *at_us as f64 / 1e6);
        }
        snapshot.last_event.retain(|name, _| clusters.contains(name));
        snapshot.advice.retain(|name, _| clusters.contains(name));
        snapshot.clusters = clusters;
        Ok(snapshot)
    }
}

/// Computes the clusters' advice onto a board, on a thread of its own: a
/// cluster's again when one of its checkpoints completed or its advice is
/// older than [`ADVICE_FOR`].
#[derive(Debug)]
pub struct Advisor {
    board: AdviceBoard,
    computed: HashMap<String, Instant>,
    /// The newest complete line seen; None before the first pass.
    watermark: Option<i64>,
}

impl Advisor {
    pub fn new(board: AdviceBoard) -> Advisor {
        Advisor { board, computed: HashMap::new(), watermark: None }
    }

    /// One pass over the store's clusters; `stopping` is asked between
    /// two clusters, so that a daemon's stop never waits for a whole pass.
    pub fn refresh(&mut self, db: &Path, params: &Params, stopping: &dyn Fn() -> bool) -> Result<(), ScrapeError> {
        let store = Store::open_read_only(db)?;
        let clusters = store.clusters().names()?;
        let touched = self.touched(&store)?;
        for name in &clusters {
            let fresh = self.computed.get(name).is_some_and(|at| at.elapsed() < ADVICE_FOR);
            if fresh && !touched.contains(name) {
                continue;
            }
            if stopping() {
                return Ok(());
            }
            let advice = compute_advice(&store, name, params)?;
            self.board.lock().unwrap_or_else(PoisonError::into_inner).insert(name.clone(), advice);
            self.computed.insert(name.clone(), Instant::now());
        }
        self.board.lock().unwrap_or_else(PoisonError::into_inner).retain(|name, _| clusters.contains(name));
        self.computed.retain(|name, _| clusters.contains(name));
        Ok(())
    }

    /// The clusters with a checkpoint completed since the last pass (none
    /// on the first: every cluster's advice is computed then anyway).
    fn touched(&mut self, store: &Store) -> Result<BTreeSet<String>, StoreError> {
        let Some(after) = self.watermark else {
            self.watermark = Some(store.checkpoints().last_row()?.unwrap_or(0));
            return Ok(BTreeSet::new());
        };
        let rows = store.checkpoints().completed_after(after)?;
        self.watermark = Some(rows.iter().map(|r| r.id).fold(after, i64::max));
        Ok(rows.into_iter().map(|r| r.cluster).collect())
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
        params.advice.of(name),
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
        pacing: crate::analyze::storm::PacingTimeline::load(store, name)?.at(Timestamp::now()),
    })
}

fn open_alerts(store: &Store) -> Result<BTreeMap<(String, String, String), i64>, StoreError> {
    let mut open = BTreeMap::new();
    for a in store.alerts().list(None, false)? {
        *open.entry((a.cluster, a.rule, a.severity.as_str().to_string())).or_insert(0) += 1;
    }
    Ok(open)
}

/// Each followed file's size now against how far walwatch read it, as
/// `status` shows it; a file that is gone has no lag to show.
/// A file shipped by a Vector agent (`[ingest]`) is compared with its spool.
fn lag(store: &Store, followed: Option<&[String]>) -> Result<Vec<(String, String, u64)>, StoreError> {
    let files = store.sources().newest_per_path()?;
    let shipped = crate::receive::streams::shipped_sizes(store)?;
    Ok(files
        .into_iter()
        .filter(|(cluster, path, _)| shipped.contains_key(path) || followed.is_none_or(|f| f.contains(cluster)))
        .filter_map(|(cluster, path, read_to)| {
            let size = shipped.get(&path).copied().or_else(|| Some(std::fs::metadata(&path).ok()?.len()))?;
            Some((cluster, path, size.saturating_sub(read_to)))
        })
        .collect())
}
