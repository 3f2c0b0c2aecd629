//! The daily prune (`[store] keep`, store/retention.rs) on a thread of its own
//! with its own store connection: the main loop keeps reading logs while
//! it runs, and both only ever wait for one small transaction of the other.
//! Due at start when the last prune is a day old, then every day. A failed
//! prune is logged as an error and recorded for `walwatch status`; the
//! daemon goes on, and the next try is a day later.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use jiff::Timestamp;

use crate::store::retention::{prune_time, PruneOutcome, RetentionRecord};
use crate::store::{Store, StoreError};

/// How long a stop waits for the thread (it stops between two batches).
const JOIN_WAIT: Duration = Duration::from_secs(2);

pub(crate) struct Pruner {
    keep: Arc<Mutex<Option<Duration>>>,
    /// Dropped to stop the thread (its wait ends at once).
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Pruner {
    /// Starts the thread; with `keep` None (forever) it only waits for a reload.
    pub(crate) fn start(db: &Path, keep: Option<Duration>) -> Pruner {
        let shared = Arc::new(Mutex::new(keep));
        let (stop, stopped) = mpsc::channel();
        let (db, keep) = (db.to_path_buf(), shared.clone());
        let thread = std::thread::Builder::new()
            .name("prune".into())
            .spawn(move || run(&db, &keep, &stopped))
            .map_err(|e| tracing::error!(error = %e, "Cannot start the daily prune; the store is not pruned."))
            .ok();
        Pruner { keep: shared, stop: Some(stop), thread }
    }

    /// SIGHUP: the new `keep` applies from the next prune.
    pub(crate) fn reload(&self, keep: Option<Duration>) {
        *self.keep.lock().unwrap_or_else(|e| e.into_inner()) = keep;
    }

    pub(crate) fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let deadline = std::time::Instant::now() + JOIN_WAIT;
            while !thread.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Until the channel closes: wait for the next due time, prune, repeat.
fn run(db: &Path, keep: &Mutex<Option<Duration>>, stopped: &mpsc::Receiver<()>) {
    let mut store = match Store::open(db) {
        Ok(store) => store,
        Err(e) => {
            tracing::error!(error = %e, "Cannot open the store for the daily prune; the store is not pruned.");
            return;
        }
    };
    let stop = || matches!(stopped.try_recv(), Err(mpsc::TryRecvError::Disconnected));
    loop {
        let wait = match store.retention().next_due(Timestamp::now()) {
            Ok(at) => at.duration_since(Timestamp::now()).unsigned_abs(),
            Err(e) => {
                tracing::error!(error = %e, "Cannot read when the store was last pruned; trying again in an hour.");
                Duration::from_secs(3600)
            }
        };
        match stopped.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let current = *keep.lock().unwrap_or_else(|e| e.into_inner());
        // Forever: look again in an hour, in case a reload set a keep. After
        // a failure that could not even be recorded, an hour too, not a spin.
        let pause = match current {
            Some(keep) => !report(store.retention_mut().prune_if_due(keep, Timestamp::now(), &stop), keep),
            None => true,
        };
        if pause && stopped.recv_timeout(Duration::from_secs(3600)) != Err(RecvTimeoutError::Timeout) {
            return;
        }
    }
}

/// Never silent: every prune is logged, a failure as an error (false).
fn report(result: Result<Option<PruneOutcome>, StoreError>, keep: Duration) -> bool {
    match result {
        Ok(Some(o)) if o.pruned.stopped => {
            tracing::info!(rows = o.pruned.own_rows(), "Prune interrupted by the stop; the next one reports its rows.")
        }
        Ok(Some(o)) => {
            let p = o.pruned;
            tracing::info!(
                rows = p.rows(),
                // Deleted by a prune that was killed or stopped before it could say so.
                earlier = p.earlier,
                checkpoints = p.checkpoints,
                events = p.events,
                settings = p.settings,
                alerts = p.alerts + p.outbox + p.silences,
                batches = p.batches,
                freed_pages = o.reclaimed.pages,
                "Pruned the store: it {}; rows before {} deleted.",
                RetentionRecord::keep_text(keep),
                prune_time(o.cutoff)
            );
            if !o.reclaimed.incremental && p.rows() > 0 {
                tracing::warn!("{}", crate::store::retention::NOT_INCREMENTAL);
            }
        }
        Ok(None) => {}
        Err(e) => {
            tracing::error!(error = %e, "The daily prune failed; the daemon goes on, the next try is in a day.");
            return false;
        }
    }
    true
}
