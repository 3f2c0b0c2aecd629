//! The daemon's side: at each analysis pass, the schedule says whether a
//! day's digest is due; if so the report is read, rendered and queued in the
//! outbox together with the day's row in table digest (one transaction), so
//! a restart, a crash or a second daemon never queues a day twice. The
//! outbox delivers it as it does every message (retries through SMTP
//! outages, marked sent only once accepted, the same Message-ID on a
//! re-send).

use jiff::civil::Date;
use jiff::Timestamp;

use super::chart::ChartInput;
use super::render::{self, Picture};
use super::report::{self, Inputs, Report, ReportError};
use super::schedule::{Due, Schedule};
use crate::alert::rules::RuleSet;
use crate::config::Config;
use crate::model::alert::{Channel, NoticeKind};
use crate::outbox::NewMessage;
use crate::store::digests::DayRecord;
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
    let advices = config.advices();
    let inputs = Inputs {
        day,
        tz: schedule.tz.clone(),
        clusters: &config.digest.clusters,
        advice: &advices,
        skew_tolerance: rules.clock_skew_tolerance(),
        missed,
        missed_total,
        max_charts: config.digest.max_charts,
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

/// `[digest] to`, else the alert recipients: the To of the digest, and
/// the envelope the outbox sends it with.
pub(crate) fn recipients(config: &Config) -> Vec<lettre::message::Mailbox> {
    config.mail_recipients(NoticeKind::Digest)
}

/// Each cluster's chart of the day, for the first `max_charts` clusters
/// (None where it cannot be drawn: the mail goes out without it, and the
/// log says why; None past the limit, which the mail names).
pub(crate) fn pictures(store: &Store, report: &Report) -> Vec<Option<Picture>> {
    let (from, to) = (report.start.timestamp(), report.end.timestamp());
    let tz = report.start.time_zone().clone();
    // The store is read here, on this connection; the drawing is done on
    // the machine's cores (below).
    let inputs: Vec<Result<ChartInput, String>> = report
        .clusters
        .iter()
        .take(report.max_charts)
        .map(|c| {
            let mut input = super::chart::input(store, &c.name, &c.settings, (from, to), tz.clone());
            // The line at the suggested size: the day's suggestion, when it changes something.
            let size = c.suggestion.as_ref().and_then(|s| s.suggested.max_wal_size_mb);
            if let (Ok(input), Some(mb)) = (&mut input, size) {
                input.suggested = super::chart::suggested_line(&c.settings, mb);
            }
            input.map_err(|e| e.to_string())
        })
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
        .chain(std::iter::repeat_with(|| None))
        .take(report.clusters.len())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::digests::DayRecord;

    fn config() -> Config {
        config_with("")
    }

    /// The mail and digest settings, with `digest` lines added to `[digest]`.
    fn config_with(digest: &str) -> Config {
        let text = format!(
            "[mail]\ntransport = \"smtp\"\nfrom = \"walwatch <w@db1.example.com>\"\nto = [\"a@example.com\"]\n\
             [mail.smtp]\nhost = \"127.0.0.1\"\nport = 25\nsecurity = \"none\"\n\
             [digest]\ntimezone = \"UTC\"\n{digest}"
        );
        crate::config::parse(&text, std::path::Path::new("t.toml")).unwrap()
    }

    /// The text part of a queued mail, decoded.
    fn text_part(payload: &str) -> String {
        let mail = mailparse::parse_mail(payload.as_bytes()).unwrap();
        fn find(p: &mailparse::ParsedMail<'_>) -> Option<String> {
            if p.ctype.mimetype == "text/plain" {
                return p.get_body().ok();
            }
            p.subparts.iter().find_map(find)
        }
        find(&mail).unwrap()
    }

    /// The day a digest is recorded under is the day its mail reports: the
    /// store's row, the subject, the Message-ID and the text all name the
    /// same day, and the text has that day's figures (the log of
    /// 2026-11-22: 28 checkpoints, 23 forced; the 23rd: nothing logged).
    #[test]
    fn the_day_recorded_is_the_day_the_mail_reports() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = super::super::store_with_the_std_log(dir.path());
        let config = config();
        let rules = RuleSet::configure(&config.alerts).unwrap();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        let day = |s: &str| s.parse::<Date>().unwrap();
        assert_eq!(
            tick(&mut store, &config, &rules, at("2026-11-22T15:00:00Z")).unwrap(),
            Tick::Baseline(day("2026-11-21"))
        );
        let mut texts = Vec::new();
        for (now, reported) in [("2026-11-23T07:00:00Z", "2026-11-22"), ("2026-11-24T07:00:00Z", "2026-11-23")] {
            let Tick::Queued { day: queued, subject, message_id } = tick(&mut store, &config, &rules, at(now)).unwrap()
            else {
                panic!("nothing queued at {now}");
            };
            assert_eq!(queued, day(reported));
            assert_eq!(store.digests().last_day().unwrap(), Some(day(reported)));
            let record = DayRecord::Queued { message_id: message_id.clone(), subject: subject.clone() };
            assert_eq!(store.digests().day(day(reported)).unwrap(), Some(record));
            assert_eq!(subject, format!("[walwatch] digest {reported}: 1 of 1 clusters need attention"));
            assert!(message_id.starts_with(&format!("<walwatch.digest.{reported}.")), "{message_id}");
            let rows = store.outbox().all().unwrap();
            let row = rows.iter().find(|r| r.message_id == message_id).unwrap();
            assert!(row.payload.contains(&format!("Subject: {subject}\r\n")), "{}", row.payload);
            texts.push(text_part(&row.payload).replace("\r\n", "\n"));
            // The cluster's chart of the day, drawn and attached to the HTML part.
            let mail = mailparse::parse_mail(row.payload.as_bytes()).unwrap();
            let charts = mail.parts().filter(|p| p.ctype.mimetype == "image/png").count();
            assert_eq!(charts, 1, "{reported}");
        }
        assert!(texts[0].starts_with("walwatch digest of Sunday 2026-11-22 (UTC)\n"), "{}", texts[0]);
        assert!(
            texts[0].contains(
                "== c: needs attention: 23 forced checkpoints (started by WAL volume, not checkpoint_timeout)"
            ),
            "{}",
            texts[0]
        );
        assert!(texts[1].starts_with("walwatch digest of Monday 2026-11-23 (UTC)\n"), "{}", texts[1]);
        let silent =
            "== c: needs attention: nothing logged all day (server down, log_checkpoints off, or the log not read)";
        assert!(texts[1].contains(silent), "{}", texts[1]);
        assert_eq!(store.digests().day(day("2026-11-24")).unwrap(), None);
    }

    /// A quiet day (every cluster healthy: 2026-11-30, a week after the
    /// log) is mailed, to `[digest] to` when set; under `skip_quiet_days`
    /// it is recorded as skipped and nothing is queued.
    #[test]
    fn a_quiet_day_is_mailed_unless_skip_quiet_days() {
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        let day: Date = "2026-11-30".parse().unwrap();
        for (extra, skip) in [("to = [\"dba@example.com\"]\n", false), ("skip_quiet_days = true\n", true)] {
            let dir = tempfile::tempdir().unwrap();
            let mut store = super::super::store_with_the_std_log(dir.path());
            let config = config_with(extra);
            let rules = RuleSet::configure(&config.alerts).unwrap();
            assert_eq!(
                tick(&mut store, &config, &rules, at("2026-11-30T15:00:00Z")).unwrap(),
                Tick::Baseline(day.yesterday().unwrap())
            );
            let ticked = tick(&mut store, &config, &rules, at("2026-12-01T07:00:00Z")).unwrap();
            let rows = store.outbox().all().unwrap();
            if skip {
                assert_eq!(ticked, Tick::Skipped(day));
                assert_eq!(store.digests().day(day).unwrap(), Some(DayRecord::Skipped));
                assert!(rows.is_empty(), "{rows:?}");
                continue;
            }
            let Tick::Queued { day: queued, subject, .. } = ticked else { panic!("{ticked:?}") };
            assert_eq!((queued, subject.as_str()), (day, "[walwatch] digest 2026-11-30: all healthy"));
            assert_eq!(rows.len(), 1);
            assert!(rows[0].payload.contains("\r\nTo: dba@example.com\r\n"), "{}", rows[0].payload);
        }
        let mail_to = recipients(&config());
        assert_eq!(mail_to.iter().map(|m| m.email.to_string()).collect::<Vec<_>>(), ["a@example.com"]);
    }
    /// Charts for the first `max_charts` clusters in the mail's order, the
    /// same pictures as without the limit; the others none, and the HTML
    /// says how many were drawn.
    #[test]
    fn charts_stop_at_max_charts_and_the_mail_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = super::super::store_with_the_std_log(dir.path());
        for quiet in ["x", "y"] {
            store.clusters_mut().find_or_create(quiet).unwrap();
        }
        let advice = crate::config::Advices::from(crate::config::AdviceSection::default());
        let report_of = |max_charts: usize| {
            let inputs = Inputs {
                day: "2026-11-22".parse().unwrap(),
                tz: jiff::tz::TimeZone::UTC,
                clusters: &[],
                advice: &advice,
                skew_tolerance: std::time::Duration::from_secs(300),
                missed: Vec::new(),
                missed_total: 0,
                max_charts,
            };
            report::build(&store, &inputs).unwrap()
        };
        let drawn =
            |pictures: &[Option<Picture>]| pictures.iter().map(|p| p.as_ref().map(|p| p.png.len())).collect::<Vec<_>>();
        let all = report_of(3);
        let names: Vec<&str> = all.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["c", "x", "y"]);
        let every = pictures(&store, &all);
        assert!(every[0].as_ref().is_some_and(|p| p.png.starts_with(b"\x89PNG")), "c's day is drawn");
        assert!(!render::html(&all, &every).contains("max_charts"));

        let one = report_of(1);
        let first = pictures(&store, &one);
        assert_eq!(drawn(&first), [every[0].as_ref().map(|p| p.png.len()), None, None]);
        assert_eq!(first[0].as_ref().unwrap().png, every[0].as_ref().unwrap().png);
        let html = render::html(&one, &first);
        assert!(
            html.contains("Charts for the first 1 of 3 clusters (those needing attention first); [digest] max_charts sets how many."),
            "{html}"
        );
        assert_eq!(html.matches("<img ").count(), 1);
        assert_eq!(drawn(&pictures(&store, &report_of(0))), [None, None, None]);
    }
}
