//! `checkpoint_logging_missing`: the log keeps growing but has had no
//! checkpoint line for factor × checkpoint_timeout: most likely
//! log_checkpoints is off, and every other rule is blind.
//!
//! Two kinds of evidence, either suffices:
//! * in log time: events kept coming (a reload, a warning, a restart) for
//!   longer than that after the last checkpoint line (an imported log);
//! * in wall-clock time: walwatch read new bytes of the cluster's files
//!   within that span, has been reading them for longer than it, and saw no
//!   checkpoint line in it (a followed log).
//!
//! An idle server skips timed checkpoints (no WAL since the last one), so a
//! log that grows only with connection lines can fire this too; the alert
//! is informational unless too-frequent warnings (written whatever
//! log_checkpoints says) prove checkpoints are happening.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

use super::{secs, Evidence, Finding, Rule};
use crate::config::value;
use crate::model::alert::Severity;
use crate::settings::Settings;
use crate::store::LogGrowth;
use crate::store::LogTimes;
use crate::store::{Store, StoreError};

/// `[alerts.checkpoint_logging_missing]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LoggingMissing {
    pub(crate) enabled: bool,
    /// No checkpoint line for factor × checkpoint_timeout.
    #[serde(deserialize_with = "factor")]
    pub(crate) factor: f64,
}

impl Default for LoggingMissing {
    fn default() -> Self {
        LoggingMissing { enabled: true, factor: 3.0 }
    }
}

fn factor<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    value::within(d, |v| (1.0..=100.0).contains(&v), "factor is from 1 to 100, e.g. 3.0")
}

impl Rule for LoggingMissing {
    const ID: &'static str = "checkpoint_logging_missing";
    const DOC: &'static str = r#"The log keeps growing but has had no checkpoint line for factor x
checkpoint_timeout: log_checkpoints is probably off (it defaults to on only
since PostgreSQL 15), and the other rules are blind. Three timeouts allow
for timed checkpoints skipped while the server was idle."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let observation = LogObservation::read(evidence.store, evidence.cluster, &evidence.times)?;
        Ok(check(&observation, self, evidence.settings, evidence.now).into_iter().collect())
    }
}

/// What the store knows about a cluster's log, for this rule.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct LogObservation {
    pub(crate) last_point_line_at: Option<Timestamp>,
    pub(crate) oldest_event_at: Option<Timestamp>,
    pub(crate) newest_event_at: Option<Timestamp>,
    /// The newest server start: a server that was down wrote nothing, checkpoints included.
    pub(crate) last_start_at: Option<Timestamp>,
    pub(crate) growth: LogGrowth,
    /// Too-frequent warnings after the last checkpoint line (all, when there is none).
    pub(crate) too_frequent_since: usize,
}

impl LogObservation {
    /// `times` leave out the events dated ahead: a checkpoint line dated 2099
    /// must not hide that the real ones stopped (see the module `rules`).
    pub(crate) fn read(store: &Store, cluster: &str, times: &LogTimes) -> Result<LogObservation, StoreError> {
        let last_point_line_at = times.last_point_line;
        let newest_event_at = times.newest;
        let since = last_point_line_at.map_or(Timestamp::MIN, |t| t + SignedDuration::from_micros(1));
        let too_frequent_since = match newest_event_at {
            Some(newest) if newest >= since => store.events().too_frequent(cluster, since, newest)?.len(),
            _ => 0,
        };
        Ok(LogObservation {
            last_point_line_at,
            oldest_event_at: times.oldest,
            newest_event_at,
            last_start_at: times.last_start,
            growth: store.sources().growth(cluster)?,
            too_frequent_since,
        })
    }
}

pub(crate) fn check(obs: &LogObservation, rule: &LoggingMissing, settings: &Settings, now: Timestamp) -> Option<Finding> {
    let timeout = settings.seconds("checkpoint_timeout")?;
    let gap_s = timeout * rule.factor;
    let gap = SignedDuration::try_from_secs_f64(gap_s).ok()?;
    let (silent_since, basis, evidence_at) = in_log_time(obs, gap).or_else(|| in_wall_clock(obs, gap, now))?;
    let severity = if obs.too_frequent_since > 0 { Severity::Warning } else { Severity::Info };
    let silent_s = evidence_at.unwrap_or(now).duration_since(silent_since).as_secs_f64();
    let since_text = match obs.last_point_line_at {
        Some(t) => format!("since {}", crate::timefmt::rfc3339(t)),
        None => "ever".to_string(),
    };
    let summary = format!(
        "no checkpoint line {since_text} ({} s, more than {} × checkpoint_timeout) while the log grows: is log_checkpoints off?",
        secs(silent_s.round()),
        rule.factor
    );
    let mut details = vec![match basis {
        "log" => format!(
            "The log has events up to {}, but its last checkpoint line is {} s older; checkpoint_timeout is {} s.",
            evidence_at.map(crate::timefmt::rfc3339).unwrap_or_default(),
            secs(silent_s.round()),
            secs(timeout)
        ),
        _ => format!(
            "walwatch read new log lines as late as {}, but no checkpoint line for {} s; checkpoint_timeout is {} s.",
            obs.growth.last_read.map(crate::timefmt::rfc3339).unwrap_or_default(),
            secs(silent_s.round()),
            secs(timeout)
        ),
    }];
    if obs.too_frequent_since > 0 {
        details.push(format!(
            "PostgreSQL warned {} times that checkpoints occur too frequently in that time, so checkpoints do happen: they are not logged.",
            obs.too_frequent_since
        ));
    } else {
        details.push("An idle server also skips timed checkpoints (no WAL written since the last one); if the server was idle, this alert resolves with the next checkpoint line.".to_string());
    }
    details.push(default_note(settings.version));
    Some(Finding {
        rule: LoggingMissing::ID,
        key: String::new(),
        severity,
        summary,
        details,
        figures: json!({
            "basis": basis,
            "silent_s": silent_s,
            "last_checkpoint_line_at": obs.last_point_line_at.map(crate::timefmt::rfc3339),
            "checkpoint_timeout_s": timeout,
            "factor": rule.factor,
            "too_frequent_since": obs.too_frequent_since,
        }),
        suggestion: None,
        evidence_at,
    })
}

/// Events continued for more than `gap` after the last checkpoint line (or the first event).
fn in_log_time(obs: &LogObservation, gap: SignedDuration) -> Option<(Timestamp, &'static str, Option<Timestamp>)> {
    let newest = obs.newest_event_at?;
    let since = obs.last_point_line_at.or(obs.oldest_event_at)?.max(obs.last_start_at.unwrap_or(Timestamp::MIN));
    (newest.duration_since(since) > gap).then_some((since, "log", Some(newest)))
}

/// New bytes read within the last `gap`, watched for longer than `gap`, no checkpoint line within it.
fn in_wall_clock(
    obs: &LogObservation,
    gap: SignedDuration,
    now: Timestamp,
) -> Option<(Timestamp, &'static str, Option<Timestamp>)> {
    let horizon = now.checked_sub(gap).ok()?;
    let grew = obs.growth.last_read.is_some_and(|t| t >= horizon);
    let first_read = obs.growth.first_read?;
    let watched = first_read <= horizon;
    let silent = obs.last_point_line_at.is_none_or(|t| t < horizon);
    let since = obs.last_point_line_at.map_or(first_read, |t| t.max(first_read));
    let since = since.max(obs.last_start_at.unwrap_or(Timestamp::MIN));
    (grew && watched && silent).then_some((since, "live", None))
}

/// log_checkpoints' default changed in PostgreSQL 15.
fn default_note(version: Option<u32>) -> String {
    let turn_on = "ALTER SYSTEM SET log_checkpoints = on; SELECT pg_reload_conf();";
    match version {
        Some(v) if v >= 15 => format!(
            "log_checkpoints is on by default since PostgreSQL 15, so someone turned it off (postgresql.conf, ALTER SYSTEM, or a per-database setting does not apply: it is server-wide). To turn it back on: {turn_on}"
        ),
        Some(_) => format!("log_checkpoints is off by default before PostgreSQL 15. To turn it on: {turn_on}"),
        None => format!(
            "log_checkpoints is off by default before PostgreSQL 15 and on from 15. To turn it on: {turn_on}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{at, settings};
    use super::*;

    fn s(version: u32) -> Settings {
        settings(version, &[("checkpoint_timeout", "5min")])
    }

    #[test]
    fn log_time_gap_over_three_timeouts_fires() {
        let rule = LoggingMissing::default(); // 3 × 300 s = 900 s
        let now = at("2026-11-29T00:00:00Z");
        let mut obs = LogObservation {
            last_point_line_at: Some(at("2026-11-22T10:00:00Z")),
            oldest_event_at: Some(at("2026-11-22T09:00:00Z")),
            newest_event_at: Some(at("2026-11-22T10:15:00Z")),
            ..Default::default()
        };
        assert_eq!(check(&obs, &rule, &s(15), now), None, "exactly 900 s is not more");
        obs.newest_event_at = Some(at("2026-11-22T10:15:01Z"));
        let f = check(&obs, &rule, &s(15), now).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("checkpoint_logging_missing", "", Severity::Info));
        assert_eq!(f.figures["basis"], "log");
        assert_eq!(f.figures["silent_s"], 901.0);
        assert_eq!(f.evidence_at, Some(at("2026-11-22T10:15:01Z")));
        assert!(f.details.last().unwrap().starts_with("log_checkpoints is on by default since PostgreSQL 15"));
        let f = check(&obs, &rule, &s(14), now).unwrap();
        assert!(f.details.last().unwrap().starts_with("log_checkpoints is off by default before PostgreSQL 15"));
        // Too-frequent warnings prove checkpoints happen unlogged.
        obs.too_frequent_since = 4;
        let f = check(&obs, &rule, &s(15), now).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.figures["too_frequent_since"], 4);
    }

    #[test]
    fn no_checkpoint_line_ever_counts_from_the_first_event() {
        let rule = LoggingMissing::default();
        let obs = LogObservation {
            oldest_event_at: Some(at("2026-11-22T09:00:00Z")),
            newest_event_at: Some(at("2026-11-22T10:00:00Z")),
            too_frequent_since: 2,
            ..Default::default()
        };
        let f = check(&obs, &rule, &s(15), at("2026-11-22T10:00:00Z")).unwrap();
        assert_eq!(f.figures["silent_s"], 3600.0);
        // A server down for hours and started again logged nothing meanwhile: the gap starts at its start.
        let restarted = LogObservation { last_start_at: Some(at("2026-11-22T09:50:00Z")), ..obs };
        assert_eq!(check(&restarted, &rule, &s(15), at("2026-11-22T10:00:00Z")), None);
        assert_eq!(f.figures["last_checkpoint_line_at"], serde_json::Value::Null);
        assert!(f.summary.starts_with("no checkpoint line ever (3600 s"), "{}", f.summary);
    }

    #[test]
    fn a_followed_log_that_grows_without_checkpoint_lines_fires() {
        let rule = LoggingMissing::default();
        let now = at("2026-11-22T12:00:00Z");
        let mut obs = LogObservation {
            last_point_line_at: Some(at("2026-11-22T11:40:00Z")),
            oldest_event_at: Some(at("2026-11-22T08:00:00Z")),
            newest_event_at: Some(at("2026-11-22T11:40:00Z")),
            last_start_at: None,
            growth: LogGrowth {
                first_read: Some(at("2026-11-22T08:00:00Z")),
                last_read: Some(at("2026-11-22T11:59:00Z")),
                bytes_read: 1000,
            },
            too_frequent_since: 0,
        };
        let f = check(&obs, &rule, &s(16), now).unwrap();
        assert_eq!(f.figures["basis"], "live");
        assert_eq!(f.figures["silent_s"], 1200.0);
        assert_eq!(f.evidence_at, None);
        // A checkpoint line within the last 900 s: quiet.
        obs.last_point_line_at = Some(at("2026-11-22T11:45:01Z"));
        obs.newest_event_at = obs.last_point_line_at;
        assert_eq!(check(&obs, &rule, &s(16), now), None);
        // Exactly 900 s ago is not more than 900 s.
        obs.last_point_line_at = Some(at("2026-11-22T11:45:00Z"));
        obs.newest_event_at = obs.last_point_line_at;
        assert_eq!(check(&obs, &rule, &s(16), now), None);
        // The log stopped growing (server down, or nothing to log): quiet.
        obs.last_point_line_at = Some(at("2026-11-22T11:00:00Z"));
        obs.newest_event_at = obs.last_point_line_at;
        obs.growth.last_read = Some(at("2026-11-22T11:44:59Z"));
        assert_eq!(check(&obs, &rule, &s(16), now), None);
        // Just imported (not watched for the span): quiet.
        obs.growth = LogGrowth { first_read: Some(at("2026-11-22T11:59:00Z")), last_read: Some(now), bytes_read: 10 };
        assert_eq!(check(&obs, &rule, &s(16), now), None);
    }

    #[test]
    fn unknown_timeout_or_empty_store_is_quiet() {
        let rule = LoggingMissing::default();
        let obs = LogObservation::default();
        assert_eq!(check(&obs, &rule, &s(15), at("2026-11-22T12:00:00Z")), None);
        let obs = LogObservation {
            oldest_event_at: Some(at("2026-11-22T01:00:00Z")),
            newest_event_at: Some(at("2026-11-22T10:00:00Z")),
            ..Default::default()
        };
        assert_eq!(check(&obs, &rule, &settings(15, &[]), at("2026-11-22T12:00:00Z")), None);
    }

    /// A real PostgreSQL 15 log (fixture 15-stderr-default-noise) as if
    /// log_checkpoints had been turned off after its line 153 (the complete
    /// line at 08:08:45.882): the checkpoint lines after it are left out,
    /// the too-frequent warnings stay, as PostgreSQL writes them regardless.
    #[test]
    fn the_observation_is_read_from_a_real_store() {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log");
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[152].contains("checkpoint complete") && lines[153].contains("too frequently"));
        let is_point = |l: &&str| l.contains("LOG:  checkpoint starting") || l.contains("LOG:  checkpoint complete");
        let kept: Vec<&str> =
            lines[..153].iter().chain(lines[153..].iter().filter(|l| !is_point(l))).copied().collect();
        // The warnings after the last checkpoint line's millisecond (the one
        // logged in the same millisecond cannot be told apart by time).
        let later_warnings =
            kept.iter().filter(|l| l.contains("too frequently") && l[11..23] > *"08:08:45.882").count();
        assert_eq!(later_warnings, 12);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("postgresql.log");
        std::fs::write(&file, kept.join("\n") + "\n").unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.clusters_mut().find_or_create("c").unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();

        let times = store.events().log_times("c", std::time::Duration::from_secs(300)).unwrap();
        let obs = LogObservation::read(&store, "c", &times).unwrap();
        assert_eq!(obs.last_point_line_at, Some(at("2026-11-22T08:08:45.882Z")));
        assert_eq!(obs.oldest_event_at, Some(at("2026-11-22T08:08:41.756Z")));
        assert_eq!(obs.newest_event_at, Some(at("2026-11-22T08:11:00.947Z")));
        assert_eq!(obs.last_start_at, Some(at("2026-11-22T08:08:41.767Z")));
        assert_eq!(obs.too_frequent_since, later_warnings);
        assert_eq!(obs.growth.bytes_read, (kept.join("\n").len() + 1) as i64);
        assert!(obs.growth.first_read.is_some() && obs.growth.first_read <= obs.growth.last_read);

        // 135 s without a checkpoint line against 3 x 30 s, and warnings that prove checkpoints happen.
        let f = check(
            &obs,
            &LoggingMissing::default(),
            &settings(15, &[("checkpoint_timeout", "30s")]),
            at("2026-11-22T08:12:00Z"),
        )
        .unwrap();
        assert_eq!((f.severity, f.figures["basis"].as_str()), (Severity::Warning, Some("log")));
        assert_eq!(f.figures["silent_s"], 135.065);
        assert_eq!(f.figures["too_frequent_since"], 12);
        assert_eq!(
            f.details[1],
            "PostgreSQL warned 12 times that checkpoints occur too frequently in that time, so checkpoints do happen: they are not logged."
        );
        // Without the warnings the same silence may be an idle server.
        let idle = LogObservation { too_frequent_since: 0, ..obs };
        let f = check(
            &idle,
            &LoggingMissing::default(),
            &settings(15, &[("checkpoint_timeout", "30s")]),
            at("2026-11-22T08:12:00Z"),
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f.details[1].starts_with("An idle server also skips timed checkpoints"), "{:?}", f.details);

        // The complete log: its last line is a checkpoint line's, nothing after it.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("postgresql.log");
        std::fs::write(&file, &text).unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let cluster = store.clusters_mut().find_or_create("c").unwrap();
        ingest::import(&mut store, cluster, file.to_str().unwrap(), &opts, &time).unwrap();
        let times = store.events().log_times("c", std::time::Duration::from_secs(300)).unwrap();
        let obs = LogObservation::read(&store, "c", &times).unwrap();
        assert_eq!((obs.last_point_line_at, obs.too_frequent_since), (Some(at("2026-11-22T08:11:00.934Z")), 0));
    }
}
