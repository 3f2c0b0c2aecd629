//! The daemon's analysis: settings re-read from the server's conf files, the
//! alert rules run when new events arrived (and every minute, for the rules
//! about time passing: a log without checkpoint lines, an alert to resolve,
//! a reminder due), and the sender threads that deliver the outbox.
//!
//! The pass runs on a thread of its own with its own store connection, so
//! the main loop keeps reading logs, pinging the watchdog and answering
//! SIGTERM however long a pass takes; a stop cancels the running statement
//! (SQLite rolls the pass back: it is redone at the next start).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::alert::rules::RuleSet;
use crate::config::{ClusterConfig, Config};
use crate::store::Store;

/// Event-driven passes are at least this far apart: a burst of checkpoint
/// lines is judged once, when it has landed, not once per commit.
const RULES_AFTER_EVENTS: Duration = Duration::from_secs(2);
/// Time-driven passes.
const RULES_EVERY: Duration = Duration::from_secs(60);
/// A pass waits this many times the previous pass's duration after it, so
/// analysis takes at most a fifth of a core however large the history.
const PASS_SPACING: u32 = 4;
/// postgresql.conf may change without a `parameter changed` line (until the
/// server reloads, which logs one); re-read it now and then.
const SETTINGS_EVERY: Duration = Duration::from_secs(300);
/// How long a stop waits for a thread before leaving it to the process exit
/// (the senders and the analysis thread, told together: at most twice this).
const JOIN_WAIT: Duration = Duration::from_millis(800);

pub(crate) struct Alerting {
    new_events: bool,
    last_rules: Option<Instant>,
    last_settings: Option<Instant>,
    analyst: Option<Analyst>,
    senders: Option<(Arc<AtomicBool>, Vec<JoinHandle<()>>)>,
}

impl Alerting {
    /// Starts the analysis thread, and a sender per channel when `[mail]`
    /// or `[webhook]` is configured.
    pub(crate) fn start(store_path: &Path, config: &Config) -> Alerting {
        let analyst = Analyst::start(store_path)
            .map_err(|e| tracing::error!(error = %e, "Cannot start the alert rules; alerts are not evaluated."))
            .ok();
        let mut a = Alerting { new_events: true, last_rules: None, last_settings: None, analyst, senders: None };
        a.start_senders(store_path, config);
        a
    }

    /// SIGHUP: the senders take the new transports; settings are re-read.
    pub(crate) fn reload(&mut self, store_path: &Path, config: &Config) {
        self.stop_senders();
        self.start_senders(store_path, config);
        self.last_settings = None;
        self.new_events = true;
    }

    fn start_senders(&mut self, store_path: &Path, config: &Config) {
        if config.mail.is_none() && config.webhook.is_none() {
            tracing::info!("No [mail] or [webhook] configured: alerts are kept in the store only.");
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        match crate::outbox::spawn_senders(store_path.to_path_buf(), config.clone(), stop.clone()) {
            Ok(handles) => self.senders = Some((stop, handles)),
            Err(e) => tracing::error!(error = %e, "Cannot start the alert sender; alerts stay queued in the store."),
        }
    }

    /// After a pass over the logs that stored `stored` events. While the
    /// daemon is `behind` (catching up), only the time-driven pass runs: the
    /// history is judged once it has landed.
    pub(crate) fn after_poll<'a>(
        &mut self,
        config: &Config,
        rules: &RuleSet,
        clusters: impl Iterator<Item = &'a ClusterConfig>,
        stored: u64,
        behind: bool,
    ) {
        self.new_events |= stored > 0;
        let Some(analyst) = &self.analyst else { return };
        if analyst.busy.load(Ordering::Relaxed) {
            return;
        }
        let since = |t: Option<Instant>| t.map_or(Duration::MAX, |t| t.elapsed());
        let spacing = RULES_AFTER_EVENTS.max(analyst.last_took() * PASS_SPACING);
        let due = (self.new_events && !behind && since(self.last_rules) >= spacing)
            || since(self.last_rules) >= RULES_EVERY.max(spacing);
        if !due {
            return;
        }
        let settings = since(self.last_settings) >= SETTINGS_EVERY;
        let job = Job {
            config: config.clone(),
            rules: rules.clone(),
            settings_of: settings.then(|| clusters.cloned().collect()),
        };
        if analyst.run(job) {
            if settings {
                self.last_settings = Some(Instant::now());
            }
            self.last_rules = Some(Instant::now());
            self.new_events = false;
        }
    }

    /// Stops the analysis (cancelling a running pass) and the senders
    /// (abandoning a send in progress: its message stays queued).
    pub(crate) fn stop(&mut self) {
        // Both told at once: they wind down side by side.
        if let Some((stop, _)) = &self.senders {
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(analyst) = self.analyst.take() {
            analyst.stop();
        }
        self.stop_senders();
    }

    fn stop_senders(&mut self) {
        if let Some((stop, handles)) = self.senders.take() {
            stop.store(true, Ordering::Relaxed);
            for handle in handles {
                join_within(handle, JOIN_WAIT, "alert sender", || {});
            }
        }
    }
}

/// One alert pass: settings first when due (`settings_of`), then the rules.
struct Job {
    config: Config,
    rules: RuleSet,
    settings_of: Option<Vec<ClusterConfig>>,
}

/// The analysis thread and what the main loop needs to steer it.
struct Analyst {
    jobs: Sender<Job>,
    busy: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// How long the last pass took, in ms.
    took_ms: Arc<AtomicU64>,
    interrupt: crate::store::Interrupt,
    handle: JoinHandle<()>,
}

impl Analyst {
    fn start(store_path: &Path) -> anyhow::Result<Analyst> {
        let store = Store::open(store_path)?;
        // As the daemon's own connection: no close-time checkpoint delaying exit on SIGTERM.
        store.skip_checkpoint_on_close()?;
        let interrupt = store.interrupt_handle();
        let (jobs, rx) = mpsc::channel::<Job>();
        let busy = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let took_ms = Arc::new(AtomicU64::new(0));
        let (b, s, t) = (busy.clone(), stop.clone(), took_ms.clone());
        let handle = std::thread::Builder::new().name("walwatch-rules".into()).spawn(move || {
            let mut store = store;
            for job in rx {
                let started = Instant::now();
                pass(&mut store, &job, &s);
                t.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                b.store(false, Ordering::Relaxed);
            }
        })?;
        Ok(Analyst { jobs, busy, stop, took_ms, interrupt, handle })
    }

    fn last_took(&self) -> Duration {
        Duration::from_millis(self.took_ms.load(Ordering::Relaxed))
    }

    /// Hands a pass to the thread; false if the thread is gone.
    fn run(&self, job: Job) -> bool {
        self.busy.store(true, Ordering::Relaxed);
        let sent = self.jobs.send(job).is_ok();
        if !sent {
            self.busy.store(false, Ordering::Relaxed);
        }
        sent
    }

    /// Ends the thread: no new pass, the running statement cancelled (again
    /// and again: an interrupt only hits a statement that is running).
    fn stop(self) {
        let Analyst { jobs, stop, interrupt, handle, .. } = self;
        stop.store(true, Ordering::Relaxed);
        drop(jobs);
        join_within(handle, JOIN_WAIT, "alert rules", || interrupt.interrupt());
    }
}

/// One pass on the analysis thread. Errors are logged: the next pass retries.
fn pass(store: &mut Store, job: &Job, stop: &AtomicBool) {
    if let Some(clusters) = &job.settings_of {
        refresh_settings(store, clusters, stop);
    }
    let started = Instant::now();
    match crate::alert::evaluate::all_until(store, &job.config, &job.rules, Timestamp::now(), stop) {
        Ok(report) => {
            let fired: usize = report.clusters.iter().map(|c| c.changes.fired.len()).sum();
            let ms = started.elapsed().as_millis() as u64;
            // Quiet passes every minute would only fill the journal.
            if fired > 0 || ms >= 1000 {
                tracing::info!(ms, fired, "Alert rules evaluated.");
            } else {
                tracing::debug!(ms, fired, "Alert rules evaluated.");
            }
        }
        Err(_) if stop.load(Ordering::Relaxed) => tracing::info!("Alert pass cancelled by the stop."),
        Err(e) => tracing::error!(error = %e, "Cannot evaluate the alert rules; retrying at the next pass."),
    }
    if !stop.load(Ordering::Relaxed) {
        digest(store, job);
    }
}

/// Queues the daily digest when one is due (the sender threads deliver it).
/// A failure is logged loudly and retried at the next pass: nothing was
/// recorded, so the day is still due.
fn digest(store: &mut Store, job: &Job) {
    use crate::digest::queue::Tick;
    match crate::digest::queue::tick(store, &job.config, &job.rules, Timestamp::now()) {
        Ok(Tick::Queued { day, subject, message_id }) => {
            tracing::info!(%day, %message_id, "Daily digest queued: {subject}")
        }
        Ok(Tick::Baseline(day)) => {
            tracing::info!(%day, "Daily digest: first start, {day} is the baseline; the first digest covers the next day.")
        }
        Ok(Tick::Skipped(day)) => tracing::info!(%day, "Daily digest: a quiet day, not mailed (skip_quiet_days)."),
        Ok(Tick::Off | Tick::Waiting(_) | Tick::Taken(_)) => {}
        Err(e) => tracing::error!(error = %e, "Cannot queue the daily digest; retrying at the next pass."),
    }
}

fn refresh_settings(store: &mut Store, clusters: &[ClusterConfig], stop: &AtomicBool) {
    let now = Timestamp::now();
    for cluster in clusters.iter().take_while(|_| !stop.load(Ordering::Relaxed)) {
        if let Err(e) = crate::settings::refresh(store, &crate::settings::Sources::of(cluster), now) {
            tracing::warn!(cluster = %cluster.name, error = %e, "Cannot record the cluster's settings.");
        }
    }
}

/// Joins `handle`, calling `nudge` every 10 ms while it runs; after `wait`
/// the thread is left to the process exit (it holds nothing that must be
/// saved: a pass or a send not finished is redone at the next start).
fn join_within(handle: JoinHandle<()>, wait: Duration, what: &str, nudge: impl Fn()) {
    let deadline = Instant::now() + wait;
    while !handle.is_finished() {
        if Instant::now() >= deadline {
            tracing::warn!("The {what} thread did not stop within {wait:?}; exiting without it.");
            return;
        }
        nudge();
        std::thread::sleep(Duration::from_millis(10));
    }
    if handle.join().is_err() {
        tracing::error!("The {what} thread panicked.");
    }
}
