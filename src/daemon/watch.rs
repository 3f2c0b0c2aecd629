//! What wakes the daemon: inotify events on the log directories (through
//! `notify`), signals, and a polling timer as the fallback for filesystems
//! and limits where inotify does not work.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Why the main loop woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Something changed in a watched directory.
    Changed,
    /// SIGHUP: reload the configuration.
    Reload,
    /// SIGTERM or SIGINT: commit and exit.
    Stop,
}

pub(crate) struct Wakeups {
    pub(crate) rx: Receiver<Wake>,
    /// Set at SIGTERM/SIGINT, so that a long read stops at its next chunk.
    pub(crate) stop: Arc<AtomicBool>,
    /// Never read: held so the channel stays open (the main loop's timed
    /// wait never sees "disconnected") whatever becomes of the watcher.
    _tx: Sender<Wake>,
    watcher: Option<RecommendedWatcher>,
}

impl Wakeups {
    /// Starts the signal thread; inotify watches are added with [`Wakeups::watch`].
    pub(crate) fn new() -> std::io::Result<Wakeups> {
        let (tx, rx) = mpsc::channel();
        let mut signals = Signals::new([SIGHUP, SIGINT, SIGTERM])?;
        let signal_tx = tx.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        std::thread::Builder::new().name("walwatch-signals".into()).spawn(move || {
            for sig in signals.forever() {
                let wake = if sig == SIGHUP { Wake::Reload } else { Wake::Stop };
                if wake == Wake::Stop {
                    stop_flag.store(true, Ordering::Relaxed);
                }
                if signal_tx.send(wake).is_err() {
                    return;
                }
            }
        })?;
        let watch_tx = tx.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Opens and closes are not changes, and our own reads (glob
            // opening the directory, current_logfiles) cause them: waking on
            // them would make the daemon spin.
            if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
                let _ = watch_tx.send(Wake::Changed);
            }
        })
        .map_err(|e| tracing::warn!(error = %e, "No inotify; polling only."))
        .ok();
        Ok(Wakeups { rx, stop, _tx: tx, watcher })
    }

    /// Watches `dirs` (replacing earlier watches); failures fall back to polling.
    pub(crate) fn watch(&mut self, dirs: &[PathBuf], previous: &[PathBuf]) {
        let Some(w) = self.watcher.as_mut() else { return };
        for d in previous {
            let _ = w.unwatch(d);
        }
        for d in dirs {
            if let Err(e) = w.watch(d, RecursiveMode::NonRecursive) {
                tracing::warn!(dir = %d.display(), error = %e, "Cannot watch a directory; polling it instead.");
            }
        }
    }
}
