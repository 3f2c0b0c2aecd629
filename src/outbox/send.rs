//! The sender: every due outbox message goes out through its channel,
//! whatever it is (an alert's notice, the digest, a test message); a
//! failure is recorded with an exponential, capped backoff and the rest go
//! on. The daemon runs a thread per channel ([`spawn_senders`]), so a mail
//! server that never answers does not hold up the webhook; `walwatch
//! analyze` and `walwatch alerts test-mail` run one [`flush`].
//!
//! A send runs on a thread of its own that the sender waits for, watching
//! its stop flag: at stop it gives the send up instead of waiting for the
//! peer's timeout. The message was claimed but not accepted, so it goes back
//! to the queue, due at once (never marked sent, never lost); if the server
//! accepted it in the last instant, the next start sends the same message
//! (same Message-ID) again — at least once, as after a crash.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::transport::{MailSender, WebhookSender};
use super::{message_id_of, Channel, DeliverError};
use crate::config::{Config, MailTransport, Retry};
use crate::store::outbox::OutboxRow;
use crate::store::Store;

/// What one flush did to one message.
#[derive(Debug, Clone, PartialEq)]
pub struct SendOutcome {
    pub message_id: String,
    pub(crate) channel: Channel,
    pub(crate) alert_id: Option<i64>,
    /// Err: why it was not accepted (also the row's last_error).
    pub result: Result<(), String>,
    /// For a failure: when it is tried again.
    pub(crate) retry_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlushReport {
    pub outcomes: Vec<SendOutcome>,
}

impl FlushReport {
    pub fn sent(&self) -> usize {
        self.outcomes.iter().filter(|o| o.result.is_ok()).count()
    }

    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.sent()
    }
}

/// Sends every message due at `now`. Only store errors end it early; a
/// transport failure is recorded on the row (attempts, last_error,
/// next_attempt_at) and reported in the outcome.
pub fn flush(store: &mut Store, config: &Config, now: Timestamp) -> Result<FlushReport, DeliverError> {
    flush_channel(store, config, now, None, &AtomicBool::new(false))
}

/// [`flush`] for one channel (None: all), giving up when `stop` is raised:
/// a send in progress is abandoned and its message re-queued, due at once.
pub(crate) fn flush_channel(
    store: &mut Store,
    config: &Config,
    now: Timestamp,
    channel: Option<Channel>,
    stop: &AtomicBool,
) -> Result<FlushReport, DeliverError> {
    let due = store.outbox().due(now)?;
    let mut senders = Senders::default();
    // A channel that failed in this flush is not tried again for the other
    // messages: with the server down, each attempt would only wait for its timeout.
    let mut down: HashMap<&'static str, String> = HashMap::new();
    let mut report = FlushReport::default();
    for row in due.into_iter().filter(|r| channel.is_none_or(|c| c == r.channel)) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if !store.outbox_mut().claim(row.id, now, now + lease(config, row.channel))? {
            continue; // another sender took it
        }
        let result = match down.get(row.channel.as_str()) {
            Some(reason) => Err(format!("not tried after a failure in the same round: {reason}")),
            None => match senders.send(config, &row, stop) {
                Some(result) => result,
                None => {
                    // Claimed, not accepted: back in the queue, due now (attempts counts it).
                    store.outbox_mut().mark_failed(row.id, ABANDONED, now)?;
                    tracing::info!(channel = row.channel.as_str(), message_id = %row.message_id, "{ABANDONED}");
                    break;
                }
            },
        };
        let retry_at = match &result {
            Ok(()) => {
                store.outbox_mut().mark_sent(row.id, now)?;
                None
            }
            Err(e) => {
                down.entry(row.channel.as_str()).or_insert_with(|| e.clone());
                let at = now + backoff(retry_of(config, row.channel), row.attempts);
                store.outbox_mut().mark_failed(row.id, e, at)?;
                Some(at)
            }
        };
        report.outcomes.push(SendOutcome {
            message_id: row.message_id,
            channel: row.channel,
            alert_id: row.alert_id,
            result,
            retry_at,
        });
    }
    Ok(report)
}

/// When the next unsent message is due (None: the queue is empty).
pub fn next_due(store: &Store) -> Result<Option<Timestamp>, DeliverError> {
    Ok(store.outbox().next_due()?)
}

/// The last_error of a message whose send was given up at stop.
const ABANDONED: &str = "walwatch stopped before the server answered; queued again";

/// Transports built on first use in a flush; a setup error (unreadable
/// password file) fails that channel's messages, not the flush.
#[derive(Default)]
struct Senders {
    mail: Option<Result<Arc<MailSender>, String>>,
    webhook: Option<Result<Arc<WebhookSender>, String>>,
}

impl Senders {
    /// The transport's answer, or None when `stop` was raised first.
    fn send(&mut self, config: &Config, row: &OutboxRow, stop: &AtomicBool) -> Option<Result<(), String>> {
        let payload = row.payload.clone();
        match row.channel {
            Channel::Mail => {
                let Some(mail) = &config.mail else {
                    return Some(Err("queued for mail, but [mail] is not configured any more".into()));
                };
                let sender =
                    self.mail.get_or_insert_with(|| MailSender::new(mail).map(Arc::new).map_err(|e| e.to_string()));
                let sender = match sender {
                    Ok(s) => s.clone(),
                    Err(e) => return Some(Err(e.clone())),
                };
                // The configuration says who receives a kind of mail; the renderer wrote the same in To.
                let to = config.mail_recipients(row.notice);
                abandonable(stop, move || sender.send_to(&payload, &to))
            }
            Channel::Webhook => {
                let Some(webhook) = &config.webhook else {
                    return Some(Err("queued for the webhook, but [webhook] is not configured any more".into()));
                };
                let sender = self
                    .webhook
                    .get_or_insert_with(|| WebhookSender::new(webhook).map(Arc::new).map_err(|e| e.to_string()));
                let sender = match sender {
                    Ok(s) => s.clone(),
                    Err(e) => return Some(Err(e.clone())),
                };
                let id = message_id_of(&row.message_id).to_string();
                abandonable(stop, move || sender.send(&id, &payload))
            }
        }
    }
}

/// Runs `send` on a thread of its own and waits for its answer, looking at
/// `stop` every [`STEP`]: None when the stop came first (the thread is left
/// to finish or to die with the process; nothing waits for it).
fn abandonable(
    stop: &AtomicBool,
    send: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Option<Result<(), String>> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("walwatch-send".into()).spawn(move || {
        let _ = tx.send(send());
    });
    if let Err(e) = spawned {
        return Some(Err(format!("cannot start a thread for the send: {e}")));
    }
    loop {
        match rx.recv_timeout(STEP) {
            Ok(result) => return Some(result),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Some(Err("the send thread panicked".into())),
            Err(mpsc::RecvTimeoutError::Timeout) if stop.load(Ordering::Relaxed) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

fn retry_of(config: &Config, channel: Channel) -> Retry {
    let configured = match channel {
        Channel::Mail => config.mail.as_ref().map(|m| m.retry),
        Channel::Webhook => config.webhook.as_ref().map(|w| w.retry),
    };
    configured.unwrap_or_default()
}

/// `initial × 2^failures`, at most `max`.
fn backoff(retry: Retry, failures_before: i64) -> SignedDuration {
    let factor = 2u32.saturating_pow(failures_before.clamp(0, 30) as u32);
    let delay = retry.initial.saturating_mul(factor).min(retry.max);
    SignedDuration::try_from(delay).unwrap_or(SignedDuration::from_hours(1))
}

/// How long a claimed message is left alone by other senders: longer than
/// one send can take, so only a crashed sender's claim ever expires.
fn lease(config: &Config, channel: Channel) -> SignedDuration {
    let send_time = match (channel, &config.mail, &config.webhook) {
        // Connect, EHLO, STARTTLS, AUTH, MAIL, RCPT…, DATA: each may take the timeout.
        (Channel::Mail, Some(mail), _) => match &mail.transport {
            MailTransport::Smtp(smtp) => smtp.timeout.saturating_mul(8),
            _ => Duration::from_secs(60),
        },
        (Channel::Webhook, _, Some(webhook)) => webhook.timeout,
        _ => Duration::ZERO,
    };
    SignedDuration::try_from(send_time + Duration::from_secs(30)).unwrap_or(SignedDuration::from_mins(10))
}

/// Sends one message now through `[mail]`'s transport to `to`, without the
/// outbox (`walwatch digest --to`: the user waits for the answer).
pub(crate) fn send_now(
    mail: &crate::config::MailSection,
    payload: &str,
    to: &[lettre::message::Mailbox],
) -> Result<(), DeliverError> {
    MailSender::new(mail)?.send_to(payload, to).map_err(DeliverError::TestFailed)
}

/// [`spawn_senders`] under one handle, which ends once they all have.
pub fn spawn_sender(store_path: PathBuf, config: Config, stop: Arc<AtomicBool>) -> std::io::Result<JoinHandle<()>> {
    let handles = spawn_senders(store_path, config, stop)?;
    std::thread::Builder::new().name("walwatch-senders".into()).spawn(move || {
        for handle in handles {
            if handle.join().is_err() {
                tracing::error!("An alert sender thread panicked.");
            }
        }
    })
}

/// The daemon's sender threads, one per configured channel: each sends
/// what is due on its channel, then sleeps until the next message is due or
/// a second passes (the daemon queues new notices through its own
/// connection), in short steps so `stop` is seen within 100 ms.
pub(crate) fn spawn_senders(
    store_path: PathBuf,
    config: Config,
    stop: Arc<AtomicBool>,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut channels = Vec::new();
    if config.mail.is_some() {
        channels.push(Channel::Mail);
    }
    if config.webhook.is_some() {
        channels.push(Channel::Webhook);
    }
    let config = Arc::new(config);
    let mut handles = Vec::new();
    for channel in channels {
        let (path, config, flag) = (store_path.clone(), config.clone(), stop.clone());
        let name = format!("walwatch-{}", channel.as_str());
        let spawned = std::thread::Builder::new().name(name).spawn(move || sender_loop(&path, &config, channel, &flag));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                // The ones already running must not outlive a failed start.
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }
    Ok(handles)
}

const WAKE_EVERY: Duration = Duration::from_secs(1);
const STEP: Duration = Duration::from_millis(100);

fn sender_loop(store_path: &std::path::Path, config: &Config, channel: Channel, stop: &AtomicBool) {
    let mut log = OutageLog::default();
    let mut store = None;
    while !stop.load(Ordering::Relaxed) {
        let s = match &mut store {
            Some(s) => s,
            None => match Store::open(store_path) {
                Ok(s) => {
                    // As the daemon's own connection: a slow close-time checkpoint must not delay exit on SIGTERM.
                    if let Err(e) = s.skip_checkpoint_on_close() {
                        tracing::debug!("alert sender: {e}");
                    }
                    store.insert(s)
                }
                Err(e) => {
                    log.store_error(&e.to_string());
                    sleep(Duration::from_secs(5), stop);
                    continue;
                }
            },
        };
        let now = Timestamp::now();
        let wait = match next_due(s) {
            Ok(Some(due)) if due <= now => match flush_channel(s, config, now, Some(channel), stop) {
                // What is due may be the other channel's: then wait, do not spin.
                Ok(report) if report.outcomes.is_empty() => WAKE_EVERY,
                Ok(report) => {
                    log.report(&report);
                    Duration::ZERO
                }
                Err(e) => {
                    log.store_error(&e.to_string());
                    WAKE_EVERY
                }
            },
            Ok(Some(due)) => Duration::try_from(due.duration_since(now)).unwrap_or(WAKE_EVERY).min(WAKE_EVERY),
            Ok(None) => WAKE_EVERY,
            Err(e) => {
                log.store_error(&e.to_string());
                WAKE_EVERY
            }
        };
        sleep(wait, stop);
    }
}

/// Sleeps `total` in steps, returning early when `stop` is set.
fn sleep(total: Duration, stop: &AtomicBool) {
    let mut left = total;
    while !left.is_zero() && !stop.load(Ordering::Relaxed) {
        let step = left.min(STEP);
        std::thread::sleep(step);
        left -= step;
    }
}

/// One warning when a channel starts failing, one info line when it works
/// again; the retries in between only at debug level.
#[derive(Default)]
struct OutageLog {
    failing: HashMap<&'static str, u64>,
    store_failing: bool,
}

impl OutageLog {
    fn report(&mut self, report: &FlushReport) {
        self.store_failing = false;
        for o in &report.outcomes {
            let channel = o.channel.as_str();
            match &o.result {
                Ok(()) => {
                    if let Some(n) = self.failing.remove(channel) {
                        tracing::info!(
                            channel,
                            failures = n,
                            "{channel} delivery works again after {n} failed attempts"
                        );
                    }
                    tracing::info!(channel, message_id = %o.message_id, "sent");
                }
                Err(e) => {
                    let n = self.failing.entry(channel).or_insert(0);
                    *n += 1;
                    if *n == 1 {
                        tracing::warn!(channel, message_id = %o.message_id, "{channel} delivery failed: {e}; retrying with backoff");
                    } else {
                        tracing::debug!(channel, message_id = %o.message_id, "{channel} delivery still failing: {e}");
                    }
                }
            }
        }
    }

    fn store_error(&mut self, e: &str) {
        if !std::mem::replace(&mut self.store_failing, true) {
            tracing::error!("alert sender: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let retry = Retry { initial: Duration::from_secs(30), max: Duration::from_secs(600) };
        let secs: Vec<i64> = (0..8).map(|n| backoff(retry, n).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 600, 600, 600]);
        assert_eq!(backoff(retry, i64::MAX).as_secs(), 600);
    }
}
