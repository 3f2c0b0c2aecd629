//! `walwatch run`: the daemon's lifecycle.
//!
//! Order matters: load and check the config, open the store, tell systemd
//! READY (running is ready: catching up on old logs can take minutes). Then:
//! wake on inotify, a signal or the poll timer; read what is new in rounds
//! of bounded length (each chunk committed with its offset), going round
//! again at once while behind; after every round send a heartbeat and a
//! watchdog keep-alive; run the alert rules on their own thread when new
//! events arrived (a sender thread per channel delivers what they queue);
//! once a day a thread of its own prunes the store to `[store] keep`.
//! SIGHUP reloads the clusters and the transports, SIGTERM commits and exits
//! without waiting for an alert pass or a network peer.

pub(crate) mod access;
mod alerting;
pub mod follow;
mod listeners;
pub(crate) mod notify;
mod retention;
pub(crate) mod watch;

use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use jiff::Timestamp;

use crate::alert::rules::RuleSet;
use crate::config::{self, Config};
use crate::metrics::{self, Endpoint};
use crate::receive::Receiver;
use crate::store::lock::DaemonLock;
use crate::store::Store;
use alerting::Alerting;
use follow::Follower;
use retention::Pruner;
use watch::{Wake, Wakeups};

/// How often the heartbeat is written at most (status calls a daemon dead after three misses).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);

/// How long changes are gathered before a pass: bounds the passes (and the
/// CPU) under a stream of writes, at a small cost in latency.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// How long one round of reading may go on before the daemon looks at its
/// signals and pings the watchdog (a round ends between two files).
const ROUND: Duration = Duration::from_millis(250);

struct Daemon {
    config_path: Option<PathBuf>,
    config: Config,
    rules: RuleSet,
    store: Store,
    followers: Vec<Follower>,
    wake: Wakeups,
    watched: Vec<PathBuf>,
    started_at: Timestamp,
    last_heartbeat: Option<Instant>,
    /// Some file's last entry is held back until the file is quiet.
    pending: bool,
    /// The last round ended before every file was read: go round again at once.
    behind: bool,
    alerting: Alerting,
    pruner: Pruner,
    /// `[metrics] listen`: the Prometheus endpoint, on its own thread.
    metrics: Option<Endpoint>,
    /// `[ingest] listen`: the receiver of Vector agents' batches, on its own thread.
    receiver: Option<Receiver>,
    /// What the last reload could not apply to a listener that serves on
    /// with its previous settings, by listener.
    reload_problems: listeners::ReloadProblems,
}

/// Runs until SIGTERM/SIGINT.
pub(crate) fn run(config_path: Option<&Path>, store_override: Option<&Path>) -> Result<()> {
    // Signal handlers first: a SIGHUP or SIGTERM during start-up must not kill us.
    let wake = Wakeups::new().context("cannot set up signal handling")?;
    let (config, source) = config::load_or_default(config_path)?;
    let rules = RuleSet::configure(&config.alerts)?;
    let db = config::store_path(store_override, &config, &source, config::StoreUser::Daemon);
    // Reading our own store as a log would feed itself: refuse to start.
    config::check_store_not_followed(&config, &db)?;
    // One daemon per store, before anything is read or written; held until run() returns.
    let _lock = DaemonLock::acquire(&db)?;
    let (mut store, created) = Store::open_creating(&db)?;
    if let Some(created) = created {
        tracing::info!("{created}");
    }
    store.skip_checkpoint_on_close()?;
    tracing::info!(config = ?source, store = %db.display(), "Starting.");
    for note in &config.daemon.retired {
        tracing::warn!("{note}");
    }
    let clusters = follow::clusters(&config);
    descriptors(&config);
    // Before any file is read: an address that cannot be bound stops the start.
    let metrics = start_metrics(&config, &rules, &db, names(&clusters))?;
    let receiver = start_receiver(&config, &db)?;
    let followers = follow::followers(&mut store, &clusters, &wake.stop, config.daemon.entry_settle);
    let alerting = Alerting::start(&db, &config);
    let pruner = Pruner::start(&db, config.store.keep);
    let mut daemon = Daemon {
        config_path: config_path.map(Path::to_path_buf),
        config,
        rules,
        store,
        followers,
        wake,
        watched: Vec::new(),
        started_at: Timestamp::now(),
        last_heartbeat: None,
        pending: false,
        behind: true,
        alerting,
        pruner,
        metrics,
        receiver,
        reload_problems: Default::default(),
    };
    daemon.rewatch();
    notify::ready(&daemon.status_line());
    daemon.main_loop();
    notify::stopping();
    daemon.alerting.stop();
    daemon.pruner.stop();
    if let Some(endpoint) = daemon.metrics.take() {
        endpoint.stop();
    }
    if let Some(receiver) = daemon.receiver.take() {
        receiver.stop();
    }
    if let Err(e) = daemon.store.listeners_mut().keep(&[]) {
        tracing::warn!(error = %e, "Cannot clear the listeners' state in the store.");
    }
    daemon.store.daemon_mut().mark_stopped()?;
    tracing::info!("Stopped.");
    Ok(())
}

impl Daemon {
    fn main_loop(&mut self) {
        loop {
            // A held-back last entry is flushed once its file stays quiet for a short while.
            let daemon = &self.config.daemon;
            let timeout = match (self.behind, self.pending) {
                (true, _) => Duration::ZERO,
                (false, true) => daemon.entry_settle.min(daemon.poll_interval),
                (false, false) => daemon.poll_interval,
            };
            let wake = match self.wake.rx.recv_timeout(timeout) {
                Ok(w) => Some(w),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let wakes = self.coalesce(wake);
            if wakes.contains(&Wake::Stop) {
                self.poll_all();
                return;
            }
            if wakes.contains(&Wake::Reload) {
                self.reload();
            }
            self.poll_all();
        }
    }

    /// Gathers the wake-ups that follow a change for a short moment, so a
    /// stream of writes costs one pass per [`DEBOUNCE`], not one per write.
    /// A stop request ends the wait at once.
    fn coalesce(&self, first: Option<Wake>) -> Vec<Wake> {
        let mut wakes: Vec<Wake> = first.into_iter().collect();
        if wakes == [Wake::Changed] {
            let deadline = Instant::now() + DEBOUNCE;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                match self.wake.rx.recv_timeout(left) {
                    Ok(w) => {
                        wakes.push(w);
                        if w == Wake::Stop {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        }
        wakes.extend(self.wake.rx.try_iter());
        wakes
    }

    /// One round over every follower, ending after [`ROUND`] (between two
    /// files) or at a stop request; `behind` says whether it was cut short.
    fn poll_all(&mut self) {
        let was_behind = self.behind;
        let deadline = Instant::now() + ROUND;
        self.pending = false;
        self.behind = false;
        let mut stored = 0;
        for f in &mut self.followers {
            match f.poll_until(&mut self.store, Some(deadline)) {
                Ok(round) => {
                    self.pending |= round.pending;
                    self.behind |= round.unfinished;
                }
                Err(e) => {
                    tracing::error!(cluster = %f.name, error = %e, "Cannot store events; retrying at the next poll.")
                }
            }
            stored += f.take_stored();
        }
        stored += self.receiver.as_ref().map_or(0, Receiver::take_stored);
        if was_behind != self.behind {
            let status = if self.behind { "catching up on the logs".to_string() } else { self.status_line() };
            tracing::info!("{}", if self.behind { "Catching up on the logs." } else { "Caught up on the logs." });
            notify::status(&status);
        }
        let clusters = self.followers.iter().map(Follower::config);
        self.alerting.after_poll(&self.config, &self.rules, clusters, stored, self.behind);
        self.beat();
    }

    fn beat(&mut self) {
        notify::watchdog();
        if self.last_heartbeat.is_some_and(|t| t.elapsed() < HEARTBEAT_EVERY) {
            return;
        }
        let interval = HEARTBEAT_EVERY.max(self.config.daemon.poll_interval).as_millis() as i64;
        match self.store.daemon_mut().heartbeat(std::process::id(), self.started_at, interval) {
            Ok(()) => self.last_heartbeat = Some(Instant::now()),
            Err(e) => tracing::warn!(error = %e, "Cannot write the heartbeat."),
        }
        let seen = listeners::Seen {
            config: &self.config,
            metrics: self.metrics.as_ref(),
            receiver: self.receiver.as_ref(),
            reload_problems: &self.reload_problems,
        };
        if let Err(e) = listeners::record(&mut self.store, &seen) {
            tracing::warn!(error = %e, "Cannot record the listeners' state.");
        }
    }

    /// SIGHUP: a new config; clusters added or removed without a restart.
    fn reload(&mut self) {
        notify::reloading();
        match self.load() {
            Ok((config, rules)) => {
                let clusters = follow::clusters(&config);
                // Keep followers whose cluster did not change: they hold open files.
                let mut kept: Vec<Follower> = Vec::new();
                for f in self.followers.drain(..) {
                    if clusters.contains(f.config()) {
                        kept.push(f);
                    }
                }
                let new: Vec<_> = clusters.into_iter().filter(|c| !kept.iter().any(|f| f.config() == c)).collect();
                kept.extend(follow::followers(&mut self.store, &new, &self.wake.stop, config.daemon.entry_settle));
                self.followers = kept;
                self.alerting.reload(self.store.path(), &config);
                self.pruner.reload(config.store.keep);
                self.reload_metrics(&config, &rules);
                self.reload_receiver(&config);
                self.config = config;
                self.rules = rules;
                self.rewatch();
                self.behind = true;
                tracing::info!(clusters = self.followers.len(), "Reloaded the configuration.");
            }
            Err(e) => tracing::error!(error = %e, "Keeping the old configuration: the new one is invalid."),
        }
        notify::ready(&self.status_line());
    }

    /// The config at the path the daemon started with, its rules read, and
    /// checked against the store.
    fn load(&self) -> anyhow::Result<(Config, RuleSet)> {
        let (config, _) = config::load_or_default(self.config_path.as_deref())?;
        let rules = RuleSet::configure(&config.alerts)?;
        config::check_store_not_followed(&config, self.store.path())?;
        Ok((config, rules))
    }

    /// The endpoint takes the new settings; a new `listen` moves it: the new
    /// address is bound first and the old one closed only then, so a reload
    /// whose address cannot be bound keeps the endpoint where it was (and
    /// says so) instead of leaving the daemon without one.
    /// Called before `self.config` is replaced.
    fn reload_metrics(&mut self, config: &Config, rules: &RuleSet) {
        let followed: Vec<String> = self.followers.iter().map(|f| f.name.clone()).collect();
        // Against where it serves, not the old config: a move that failed is tried again.
        if config.metrics.listen == self.metrics.as_ref().map(Endpoint::listen) {
            if let Some(endpoint) = &self.metrics {
                endpoint.reload(metrics_params(config, rules, followed));
            }
            return;
        }
        match start_metrics(config, rules, self.store.path(), followed.clone()) {
            Ok(moved) => {
                self.reload_problems.remove(listeners::METRICS);
                if let Some(old) = std::mem::replace(&mut self.metrics, moved) {
                    tracing::info!(address = %old.addr(), "Stopped serving metrics at http://{}/metrics.", old.addr());
                    old.stop();
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "Keeping the metrics endpoint where it was: the new [metrics] listen cannot be served.");
                let problem = format!("a reload could not apply the new [metrics] settings; serving on as before: {e}");
                self.reload_problems.insert(listeners::METRICS, problem);
                if let Some(endpoint) = &self.metrics {
                    endpoint.reload(metrics_params(config, rules, followed));
                }
            }
        }
    }

    /// The same `[ingest]`: the tokens are read again. Other settings
    /// restart the receiver, but only once what they need was read and
    /// bound: a token file, certificate or address that cannot be used
    /// keeps the receiver serving with its previous settings (and says so
    /// in `status`). On the same address the socket is handed over, never
    /// closed.
    fn reload_receiver(&mut self, config: &Config) {
        const INGEST: &str = listeners::INGEST;
        if let Some(receiver) = self.receiver.as_ref().filter(|r| r.section() == &config.ingest) {
            match receiver.reload_tokens() {
                Ok(n) => {
                    tracing::info!(tokens = n, "Read the ingest tokens again.");
                    self.reload_problems.remove(INGEST);
                }
                Err(e) => {
                    tracing::error!(error = %e, "Keeping the ingest tokens in force.");
                    let problem = format!("a reload could not read the tokens; the previous ones stay in force: {e}");
                    self.reload_problems.insert(INGEST, problem);
                }
            }
            return;
        }
        if self.receiver.is_none() && config.ingest.listen.is_none() {
            return;
        }
        let prepared = match Receiver::prepare(&config.ingest, self.receiver.as_ref()) {
            Ok(prepared) => prepared,
            Err(e) if self.receiver.is_some() => {
                tracing::error!(error = %e, "Keeping the ingest receiver with its previous settings: the new [ingest] cannot be served.");
                let problem = format!("a reload could not apply the new [ingest] settings; serving on as before: {e}");
                self.reload_problems.insert(INGEST, problem);
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "Cannot take shipped log lines with the new [ingest] settings.");
                self.reload_problems.insert(INGEST, e.to_string());
                return;
            }
        };
        self.reload_problems.remove(INGEST);
        if let Some(old) = self.receiver.take() {
            old.stop();
        }
        let Some(prepared) = prepared else { return };
        match Receiver::start(prepared, self.store.path()) {
            Ok(receiver) => {
                announce(&receiver);
                self.receiver = Some(receiver);
            }
            Err(e) => {
                tracing::error!(error = %e, "Cannot take shipped log lines with the new [ingest] settings.");
                self.reload_problems.insert(INGEST, e.to_string());
            }
        }
    }

    fn rewatch(&mut self) {
        let dirs: Vec<PathBuf> = self.followers.iter().flat_map(|f| f.watch_dirs()).collect();
        self.wake.watch(&dirs, &self.watched);
        self.watched = dirs;
    }

    fn status_line(&self) -> String {
        let names: Vec<&str> = self.followers.iter().map(|f| f.name.as_str()).collect();
        format!("following {} cluster(s): {}", names.len(), names.join(", "))
    }
}

fn metrics_params(config: &Config, rules: &RuleSet, followed: Vec<String>) -> metrics::Params {
    let skew_tolerance = rules.clock_skew_tolerance();
    metrics::Params { skew_tolerance, advice: config.advices(), followed: Some(followed) }
}

fn names(clusters: &[config::ClusterConfig]) -> Vec<String> {
    clusters.iter().map(|c| c.name.clone()).collect()
}

/// The receiver of Vector agents' batches when `[ingest] listen` is set.
fn start_receiver(config: &Config, db: &Path) -> Result<Option<Receiver>> {
    let Some(prepared) = Receiver::prepare(&config.ingest, None)? else { return Ok(None) };
    let receiver = Receiver::start(prepared, db)?;
    announce(&receiver);
    Ok(Some(receiver))
}

/// Descriptors walwatch needs beside its listeners' connections: the
/// store, the logs followed, the open spools, the mail and the watches.
const RESERVED_FILES: u64 = 1024;

/// Raises the soft limit on open files to the hard one (outside systemd,
/// whose unit sets both), and says so loudly when the listeners' connection
/// bounds do not fit under it: a flood would then meet EMFILE instead of
/// walwatch's own refusal.
fn descriptors(config: &Config) {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(soft), Some(hard)) = (limit.current, limit.maximum) {
        if soft < hard
            && setrlimit(Resource::Nofile, rustix::process::Rlimit { current: Some(hard), maximum: Some(hard) }).is_ok()
        {
            limit.current = Some(hard);
        }
    }
    let mut need = RESERVED_FILES;
    if config.metrics.listen.is_some() {
        need += crate::serve::Limits::metrics().max_connections as u64;
    }
    if config.ingest.listen.is_some() {
        need += config.ingest.max_connections as u64;
    }
    if let Some(soft) = limit.current.filter(|&soft| soft < need) {
        tracing::error!(limit = soft, needed = need, "The open-file limit ({soft}) is below what the listeners' max_connections need ({need}): raise LimitNOFILE (ulimit -n) or lower [ingest] max_connections.");
    }
}

fn announce(r: &Receiver) {
    tracing::info!(address = %r.addr(), "Taking Vector agents' batches at {}://{}{}.", r.scheme(), r.addr(), crate::receive::PATH);
}

/// The Prometheus endpoint when `[metrics] listen` is set.
fn start_metrics(config: &Config, rules: &RuleSet, db: &Path, followed: Vec<String>) -> Result<Option<Endpoint>> {
    let Some(addr) = config.metrics.listen else { return Ok(None) };
    let endpoint = Endpoint::start(addr, db, metrics_params(config, rules, followed))?;
    tracing::info!(address = %endpoint.addr(), "Serving metrics at http://{}/metrics.", endpoint.addr());
    Ok(Some(endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The metrics leave out of a cluster's newest event the events dated
    /// further ahead than the configured tolerance, not the default's
    /// (tests/fast/clock_skew_tolerance.rs checks the scrape with it).
    #[test]
    fn the_metrics_read_the_configured_clock_skew_tolerance() {
        let config = config::parse("[alerts.clock_skew]\ntolerance = \"7m\"\n", Path::new("walwatch.toml")).unwrap();
        let rules = RuleSet::configure(&config.alerts).unwrap();
        let params = metrics_params(&config, &rules, vec!["main".into()]);
        assert_eq!(params.skew_tolerance, Duration::from_secs(420));
        assert_eq!(params.followed, Some(vec!["main".to_string()]));
    }
}
