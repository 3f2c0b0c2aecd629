//! The daemon's analysis: settings re-read from the server's conf files, the
//! alert rules run when new events arrived (and every minute, for the rules
//! about time passing: a log without checkpoint lines, an alert to resolve,
//! a reminder due), and the sender thread that delivers the outbox.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::config::{ClusterConfig, Config};
use crate::store::Store;

/// Event-driven passes are at least this far apart: a burst of checkpoint
/// lines is judged once, when it has landed, not once per commit.
const RULES_AFTER_EVENTS: Duration = Duration::from_secs(2);
/// Time-driven passes.
const RULES_EVERY: Duration = Duration::from_secs(60);
/// postgresql.conf may change without a `parameter changed` line (until the
/// server reloads, which logs one); re-read it now and then.
const SETTINGS_EVERY: Duration = Duration::from_secs(300);

pub struct Alerting {
    new_events: bool,
    last_rules: Option<Instant>,
    last_settings: Option<Instant>,
    sender: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Alerting {
    /// Starts the sender when `[mail]` or `[webhook]` is configured.
    pub fn start(store_path: &Path, config: &Config) -> Alerting {
        let mut a = Alerting { new_events: true, last_rules: None, last_settings: None, sender: None };
        a.start_sender(store_path, config);
        a
    }

    /// SIGHUP: the sender takes the new transports; settings are re-read.
    pub fn reload(&mut self, store_path: &Path, config: &Config) {
        self.stop();
        self.start_sender(store_path, config);
        self.last_settings = None;
        self.new_events = true;
    }

    fn start_sender(&mut self, store_path: &Path, config: &Config) {
        if config.mail.is_none() && config.webhook.is_none() {
            tracing::info!("No [mail] or [webhook] configured: alerts are kept in the store only.");
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        match crate::alert::deliver::spawn_sender(store_path.to_path_buf(), config.clone(), stop.clone()) {
            Ok(handle) => self.sender = Some((stop, handle)),
            Err(e) => tracing::error!(error = %e, "Cannot start the alert sender; alerts stay queued in the store."),
        }
    }

    /// After a pass over the logs that stored `stored` events.
    pub fn after_poll<'a>(
        &mut self,
        store: &mut Store,
        config: &Config,
        clusters: impl Iterator<Item = &'a ClusterConfig>,
        stored: u64,
    ) {
        self.new_events |= stored > 0;
        let since = |t: Option<Instant>| t.map_or(Duration::MAX, |t| t.elapsed());
        if since(self.last_settings) >= SETTINGS_EVERY {
            refresh_settings(store, clusters);
            self.last_settings = Some(Instant::now());
        }
        let due =
            (self.new_events && since(self.last_rules) >= RULES_AFTER_EVENTS) || since(self.last_rules) >= RULES_EVERY;
        if due {
            match crate::alert::lifecycle::evaluate_all(store, config, Timestamp::now()) {
                Ok(report) => tracing::debug!(?report, "Alert rules evaluated."),
                Err(e) => tracing::error!(error = %e, "Cannot evaluate the alert rules; retrying at the next pass."),
            }
            self.last_rules = Some(Instant::now());
            self.new_events = false;
        }
    }

    /// Stops the sender (it sees the flag within 100 ms).
    pub fn stop(&mut self) {
        if let Some((stop, handle)) = self.sender.take() {
            stop.store(true, Ordering::Relaxed);
            if handle.join().is_err() {
                tracing::error!("The alert sender thread panicked.");
            }
        }
    }
}

fn refresh_settings<'a>(store: &mut Store, clusters: impl Iterator<Item = &'a ClusterConfig>) {
    let now = Timestamp::now();
    for cluster in clusters {
        if let Err(e) = crate::settings::refresh(store, cluster, now) {
            tracing::warn!(cluster = %cluster.name, error = %e, "Cannot record the cluster's settings.");
        }
    }
}
