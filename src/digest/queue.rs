//! The daemon's side: at each analysis pass, the schedule says whether a
//! day's digest is due; if so the report is read, rendered and queued in the
//! outbox together with the day's row in table digest (one transaction), so
//! a restart, a crash or a second daemon never queues a day twice. The
//! alert mails' sender delivers it (retries through SMTP outages, marked
//! sent only once accepted, the same Message-ID on a re-send).

use jiff::civil::Date;
use jiff::Timestamp;

use super::chart::ChartInput;
use super::render::{self, Picture};
use super::report::{self, Inputs, Report, ReportError};
use super::schedule::{Due, Schedule};
use crate::analyze::rules::RuleSet;
use crate::config::Config;
use crate::model::alert::{Channel, NoticeKind};
use crate::store::digests::DayRecord;
use crate::store::outbox::NewMessage;
use crate::store::{Store, StoreError};

/// What one look at the schedule did.
#[derive(Debug, Clone, PartialEq)]
pub enum Tick {
    /// No digest is configured (no `[mail]`, or `enabled = false`).
    Off,
    /// Nothing due; the next digest falls due at this instant.
    Waiting(Timestamp),
    /// A first start: this day is the baseline, nothing mailed.
    Baseline(Date),
    /// The day's digest was queued.
    Queued { day: Date, subject: String, message_id: String },
    /// A quiet day under `skip_quiet_days`: recorded, not mailed.
    Skipped(Date),
    /// Another process recorded the day first.
    Taken(Date),
}

#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("[digest] timezone: {0}")]
    Zone(#[from] jiff::Error),
    #[error("{0}")]
    Render(String),
}

/// Queues the digest due at `now`, if any.
pub fn tick(store: &mut Store, config: &Config, rules: &RuleSet, now: Timestamp) -> Result<Tick, DigestError> {
    let Some(mail) = config.mail.as_ref().filter(|_| config.digest.enabled) else { return Ok(Tick::Off) };
    let schedule = Schedule::of(&config.digest)?;
    let last = store.digests().last_day()?;
    let (day, missed, missed_total) = match schedule.due(now, last) {
        Due::Nothing => return Ok(Tick::Waiting(schedule.next_after(last.unwrap_or(schedule.latest_due(now))))),
        Due::Baseline(day) => {
            return Ok(match store.digests_mut().record(day, &DayRecord::Baseline, &[], now)? {
                true => Tick::Baseline(day),
                false => Tick::Taken(day),
            })
        }
        Due::Send { day, missed, missed_total } => (day, missed, missed_total),
    };
    let inputs = Inputs {
        day,
        tz: schedule.tz.clone(),
        clusters: &config.digest.clusters,
        advice: &config.advice,
        skew_tolerance: rules.clock_skew_tolerance(),
        missed,
        missed_total,
    };
    let report = report::build(store, &inputs)?;
    if config.digest.skip_quiet_days && report.quiet() {
        return Ok(match store.digests_mut().record(day, &DayRecord::Skipped, &[], now)? {
            true => Tick::Skipped(day),
            false => Tick::Taken(day),
        });
    }
    let to = recipients(config);
    let message_id = render::message_id(&report, &to);
    let payload = render::mail(&report, &pictures(store, &report), &mail.from, &to, &message_id, now)
        .map_err(DigestError::Render)?;
    let subject = render::subject(&report);
    let message = NewMessage {
        alert_id: None,
        notice: NoticeKind::Digest,
        channel: Channel::Mail,
        message_id: message_id.clone(),
        payload,
        queued_at: now,
    };
    let record = DayRecord::Queued { message_id: message_id.clone(), subject: subject.clone() };
    Ok(match store.digests_mut().record(day, &record, &[message], now)? {
        true => Tick::Queued { day, subject, message_id },
        false => Tick::Taken(day),
    })
}

/// `[digest] to`, else the alert recipients.
pub fn recipients(config: &Config) -> Vec<lettre::message::Mailbox> {
    match (&config.digest.to, &config.mail) {
        (to, _) if !to.is_empty() => to.clone(),
        (_, Some(mail)) => mail.to.to_vec(),
        (_, None) => Vec::new(),
    }
}

/// Each cluster's chart of the day (None where it cannot be drawn: the mail
/// goes out without it, and the log says why).
pub fn pictures(store: &Store, report: &Report) -> Vec<Option<Picture>> {
    let (from, to) = (report.start.timestamp(), report.end.timestamp());
    let tz = report.start.time_zone().clone();
    // The store is read here, on this connection; the drawing is done on
    // the machine's cores (below).
    let inputs: Vec<Result<ChartInput, String>> = report
        .clusters
        .iter()
        .map(|c| super::chart::input(store, &c.name, &c.settings, (from, to), tz.clone()).map_err(|e| e.to_string()))
        .collect();
    report
        .clusters
        .iter()
        .zip(draw_all(&inputs))
        .map(|(c, drawn)| {
            drawn
                .map_err(|e| tracing::warn!(cluster = %c.name, "the digest goes out without this cluster's chart: {e}"))
                .ok()
        })
        .collect()
}

/// Every chart drawn and deflated, in order, spread over the machine's
/// cores: the charts are a third of a digest's CPU (docs/dev/benchmarks.md) and one
/// needs nothing of another, so a fleet's digest takes about half the wall
/// time on two cores.
fn draw_all(inputs: &[Result<ChartInput, String>]) -> Vec<Result<Picture, String>> {
    let draw = |input: &Result<ChartInput, String>| -> Result<Picture, String> {
        let input = input.as_ref().map_err(Clone::clone)?;
        let png = super::chart::render_png(input).map_err(|e| e.to_string())?;
        Ok(Picture { png, alt: super::chart::alt_text(input) })
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, inputs.len().max(1));
    let per_thread = inputs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = inputs
            .chunks(per_thread)
            .map(|part| (part.len(), scope.spawn(move || part.iter().map(draw).collect::<Vec<_>>())))
            .collect();
        parts
            .into_iter()
            .flat_map(|(n, handle)| {
                handle.join().unwrap_or_else(|_| vec![Err("drawing the chart panicked".to_string()); n])
            })
            .collect()
    })
}
