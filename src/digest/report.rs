//! What one day's digest says, read from the store: per cluster the day's
//! `history --by day` row (so the mail and `walwatch history` can never
//! disagree), the day before and the 7-day median, a verdict, the alerts
//! fired and resolved, settings changed, the current `max_wal_size`
//! suggestion, recurring bursts and walwatch's own problems. Rendering is
//! [`super::render`]'s job; nothing here formats.

use std::time::Duration;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

use super::bursts::{self, Burst};
use crate::analyze::buckets::{self, By};
use crate::analyze::history::{self, Row};
use crate::analyze::sizing::{self, Suggestion};
use crate::analyze::storm::PacingTimeline;
use crate::config::Advices;
use crate::model::alert::Resolution;
use crate::settings::Settings;
use crate::store::alerts::AlertRow;
use crate::store::events::LogChange;
use crate::store::fan_out::fan_out;
use crate::store::{Store, StoreError};

/// The days before the digest's day that its 7-day median covers.
pub(crate) const MEDIAN_DAYS: usize = 7;

/// Everything one digest mail says.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) day: Date,
    /// The zone whose day it is, by name ("Europe/Berlin").
    pub(crate) zone: String,
    pub(crate) start: Zoned,
    pub(crate) end: Zoned,
    pub(crate) clusters: Vec<ClusterDay>,
    /// Days whose digest was never sent (downtime), named here instead.
    pub(crate) missed: Vec<Date>,
    pub(crate) missed_total: usize,
    /// Charts drawn: the first clusters' ([digest] max_charts).
    pub(crate) max_charts: usize,
}

impl Report {
    /// The clusters whose verdict is not "healthy" (a store without any
    /// cluster: one, walwatch itself, which has read no log).
    pub(crate) fn attention(&self) -> usize {
        if self.clusters.is_empty() {
            return 1;
        }
        self.clusters.iter().filter(|c| !c.healthy()).count()
    }

    /// True when every cluster is healthy and walwatch had nothing to say
    /// (what `skip_quiet_days` skips).
    pub(crate) fn quiet(&self) -> bool {
        self.attention() == 0 && self.missed_total == 0
    }
}

/// One cluster's day.
#[derive(Debug, Clone)]
pub(crate) struct ClusterDay {
    pub(crate) name: String,
    /// `walwatch history --by day` for the day, the day before, and the
    /// [`MEDIAN_DAYS`] days before it (oldest first).
    pub(crate) day: Row,
    pub(crate) previous: Row,
    pub(crate) week: Vec<Row>,
    /// The day by hour (the text part's sparklines).
    pub(crate) hours: Vec<Row>,
    /// Why the cluster needs attention; empty: healthy.
    pub(crate) reasons: Vec<String>,
    pub(crate) fired: Vec<AlertRow>,
    pub(crate) resolved: Vec<AlertRow>,
    /// Alerts still open at the end of the day (fired that day or before).
    pub(crate) open: usize,
    /// The suggestion as `walwatch suggest` gives it at the end of the day,
    /// kept only when it asks for a change (it has SQL).
    pub(crate) suggestion: Option<Suggestion>,
    pub(crate) changes: Vec<LogChange>,
    pub(crate) bursts: Vec<Burst>,
    /// The settings in effect now, as `walwatch settings` gives them (read
    /// once: the suggestion and the chart's absorb line both use them).
    pub(crate) settings: Settings,
    /// walwatch's own trouble with this cluster's logs.
    pub(crate) problems: Vec<String>,
}

impl ClusterDay {
    pub(crate) fn healthy(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// What the report is built from besides the store.
#[derive(Debug, Clone)]
pub(crate) struct Inputs<'a> {
    pub(crate) day: Date,
    pub(crate) tz: TimeZone,
    /// Empty: every cluster in the store.
    pub(crate) clusters: &'a [String],
    pub(crate) advice: &'a Advices,
    pub(crate) skew_tolerance: Duration,
    pub(crate) missed: Vec<Date>,
    pub(crate) missed_total: usize,
    pub(crate) max_charts: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Buckets(#[from] buckets::BucketError),
    #[error("the day {0} has no start in the time zone (out of the calendar's range)")]
    Calendar(Date),
    #[error("no cluster {0:?} in the store (known: {1})")]
    UnknownCluster(String, String),
}

/// Reads the digest of `inputs.day` from the store.
pub(crate) fn build(store: &Store, inputs: &Inputs<'_>) -> Result<Report, ReportError> {
    let start = inputs.day.to_zoned(inputs.tz.clone()).map_err(|_| ReportError::Calendar(inputs.day))?;
    let end = buckets::next(&start, By::Day)?;
    let names = cluster_names(store, inputs.clusters)?;
    // Each cluster's day is an independent read: a central's are read on every core.
    let mut clusters = fan_out(store, &names, |store, name| cluster_day(store, name, &start, &end, inputs))?;
    // Those needing attention first, then by name: the mail is read top down.
    clusters.sort_by(|a, b| a.healthy().cmp(&b.healthy()).then_with(|| a.name.cmp(&b.name)));
    Ok(Report {
        day: inputs.day,
        zone: inputs.tz.iana_name().unwrap_or("local time").to_string(),
        start,
        end,
        clusters,
        missed: inputs.missed.clone(),
        missed_total: inputs.missed_total,
        max_charts: inputs.max_charts,
    })
}

fn cluster_names(store: &Store, wanted: &[String]) -> Result<Vec<String>, ReportError> {
    let known = store.clusters().names()?;
    // An empty store gives a digest that says so: silence must mean broken.
    if wanted.is_empty() {
        return Ok(known);
    }
    for name in wanted {
        if !known.contains(name) {
            return Err(ReportError::UnknownCluster(name.clone(), known.join(", ")));
        }
    }
    Ok(wanted.to_vec())
}

fn cluster_day(
    store: &Store,
    name: &str,
    start: &Zoned,
    end: &Zoned,
    inputs: &Inputs<'_>,
) -> Result<ClusterDay, ReportError> {
    let first = buckets::back(start, By::Day, MEDIAN_DAYS)?;
    let days = buckets::cover(first.timestamp(), end.timestamp(), By::Day, &inputs.tz)?;
    let hours = buckets::cover(first.timestamp(), end.timestamp(), By::Hour, &inputs.tz)?;
    // Every change is read for the settings; the day's are among them.
    let settings = crate::settings::current(store, name)?;
    let pacing = PacingTimeline::with_current(store, name, &settings)?;
    // Days and hours of the same week, from one read.
    let [mut rows, hourly]: [Vec<Row>; 2] = history::rows_of_each(store, name, &[&days, &hours], &pacing)?
        .try_into()
        .map_err(|_| ReportError::Calendar(inputs.day))?;
    let day = rows.pop().ok_or(ReportError::Calendar(inputs.day))?;
    let previous = rows.last().cloned().unwrap_or_else(|| day.clone());
    let (from, to) = (start.timestamp(), end.timestamp());
    let alerts = store.alerts().list(Some(name), true)?;
    let in_day = |t: Timestamp| from <= t && t < to;
    let fired: Vec<AlertRow> = alerts.iter().filter(|a| in_day(a.fired_at)).cloned().collect();
    // Closed because its rule was switched off is no recovery to report.
    let cleared = |a: &&AlertRow| a.resolution != Some(Resolution::RuleDisabled);
    let resolved: Vec<AlertRow> =
        alerts.iter().filter(|a| a.resolved_at.is_some_and(in_day)).filter(cleared).cloned().collect();
    let open = alerts.iter().filter(|a| a.fired_at < to && a.resolved_at.is_none_or(|r| r >= to)).count();
    let changes: Vec<_> = settings.log_changes.iter().filter(|c| in_day(c.at)).cloned().collect();
    let suggestion = sizing::suggest(store, name, &settings, inputs.advice.of(name), inputs.skew_tolerance, to)?;
    let suggestion = suggestion.sql.is_some().then_some(suggestion);
    let bursts = bursts::recurring(&hourly, &sizing::Params::from_settings(&settings));
    let hours: Vec<Row> = hourly.into_iter().filter(|r| r.bucket_start.timestamp() >= from).collect();
    let problems = problems(store, name)?;
    let mut cluster = ClusterDay {
        name: name.to_string(),
        day,
        previous,
        week: rows,
        hours,
        reasons: Vec::new(),
        fired,
        resolved,
        open,
        suggestion,
        changes,
        bursts,
        problems,
        settings,
    };
    cluster.reasons = reasons(&cluster);
    Ok(cluster)
}

/// walwatch's own trouble reading the cluster's logs, as `status` shows it.
fn problems(store: &Store, name: &str) -> Result<Vec<String>, StoreError> {
    let mut out: Vec<String> = store
        .daemon()
        .problems(name)?
        .into_iter()
        .map(|(path, problem, since)| format!("{path}: {problem} (last seen {})", crate::timefmt::rfc3339(since)))
        .collect();
    out.extend(store.sources().unmatched(name)?.into_iter().map(|(path, n)| {
        format!("{path}: {n} lines look like checkpoint messages but fit neither the format nor the log_line_prefix")
    }));
    for status in store.daemon().cluster_status(Some(name))? {
        out.extend(status.sources.iter().filter_map(|s| behind(&s.path, s.read_to)));
    }
    Ok(out)
}

/// Unread log behind walwatch's position worth a line (a moment's lag is not).
const LAG_SAID: u64 = 1 << 20;

/// "FILE: 12.0 MB not read yet", from the file's size now.
fn behind(path: &str, read_to: u64) -> Option<String> {
    let size = std::fs::metadata(path).ok()?.len();
    let lag = size.saturating_sub(read_to);
    (lag >= LAG_SAID).then(|| format!("{path}: {:.1} MB not read yet (walwatch is behind)", lag as f64 / 1e6))
}

/// Why a cluster needs attention, most urgent first; empty when healthy.
fn reasons(c: &ClusterDay) -> Vec<String> {
    let d = &c.day;
    let mut out = Vec::new();
    let plural = |n: i64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if d.crashes > 0 {
        out.push(plural(d.crashes, "crash recovery", "crash recoveries"));
    }
    if d.forced() > 0 {
        out.push(format!(
            "{} (started by WAL volume, not checkpoint_timeout)",
            plural(d.forced(), "forced checkpoint", "forced checkpoints")
        ));
    }
    if d.too_frequent > 0 {
        out.push(plural(d.too_frequent, "\"too frequently\" warning", "\"too frequently\" warnings"));
    }
    if c.open > 0 {
        out.push(plural(c.open as i64, "alert open", "alerts open"));
    }
    if !c.problems.is_empty() {
        out.push(plural(c.problems.len() as i64, "problem reading its logs", "problems reading its logs"));
    }
    // A day with no checkpoint at all after days with some: logging off,
    // the server down or walwatch not reading — silence is not health.
    if d.is_empty() && c.week.iter().any(|r| !r.is_empty()) {
        out.push("nothing logged all day (server down, log_checkpoints off, or the log not read)".into());
    }
    out
}

/// The median of the days before, for a figure of a row (None: no day had one).
pub(crate) fn median(rows: &[Row], figure: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    let mut values: Vec<f64> = rows.iter().filter_map(figure).filter(|v| v.is_finite()).collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AdviceSection;

    fn inputs<'a>(day: &str, zone: &str, clusters: &'a [String], advice: &'a Advices) -> Inputs<'a> {
        Inputs {
            day: day.parse().unwrap(),
            tz: TimeZone::get(zone).unwrap(),
            clusters,
            advice,
            skew_tolerance: Duration::from_secs(300),
            missed: Vec::new(),
            missed_total: 0,
            max_charts: crate::config::MAX_CHARTS,
        }
    }

    #[test]
    fn a_dst_day_is_covered_whole_and_an_unknown_cluster_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        store.clusters_mut().find_or_create("db1").unwrap();
        let advice = Advices::from(AdviceSection::default());
        let hours = |r: &Report| r.start.timestamp().duration_until(r.end.timestamp()).as_hours();
        let spring = build(&store, &inputs("2026-03-29", "Europe/Berlin", &[], &advice)).unwrap();
        assert_eq!((hours(&spring), spring.zone.as_str(), spring.clusters.len()), (23, "Europe/Berlin", 1));
        assert_eq!(spring.clusters[0].hours.len(), 23, "one hour row per hour that exists");
        let autumn = build(&store, &inputs("2026-11-01", "America/New_York", &[], &advice)).unwrap();
        assert_eq!((hours(&autumn), autumn.clusters[0].hours.len()), (25, 25));
        // An empty store's cluster is healthy: nothing was ever logged, so nothing went silent.
        assert!(spring.clusters[0].healthy() && spring.quiet(), "{:?}", spring.clusters[0].reasons);
        let wanted = ["nope".to_string()];
        let e = build(&store, &inputs("2026-03-29", "UTC", &wanted, &advice)).unwrap_err();
        assert_eq!(e.to_string(), "no cluster \"nope\" in the store (known: db1)");
    }

    /// An alert closed because its rule was switched off is not among the
    /// day's resolved alerts (no recovery happened), nor open; one that
    /// cleared is resolved.
    #[test]
    fn an_alert_closed_by_switching_its_rule_off_is_not_reported_resolved() {
        use crate::model::alert::Severity;
        use crate::store::alerts::AlertContent;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        let tx = store.alerts_mut().begin("db1").unwrap();
        let figures = serde_json::json!({});
        for (rule, why) in [("forced_checkpoints", Resolution::Cleared), ("slow_sync", Resolution::RuleDisabled)] {
            let content = AlertContent {
                rule,
                key: rule,
                severity: Severity::Warning,
                summary: rule,
                details: &[],
                figures: &figures,
                suggestion: None,
                evidence_at: None,
            };
            let id = tx.insert(&content, at("2026-11-22T08:00:00Z"), false).unwrap();
            tx.resolve(id, why, at("2026-11-22T09:00:00Z")).unwrap();
        }
        tx.commit().unwrap();
        let advice = Advices::from(AdviceSection::default());
        let report = build(&store, &inputs("2026-11-22", "UTC", &[], &advice)).unwrap();
        let c = &report.clusters[0];
        let rules = |alerts: &[AlertRow]| {
            let mut names: Vec<String> = alerts.iter().map(|a| a.rule.clone()).collect();
            names.sort();
            names
        };
        assert_eq!(rules(&c.fired), ["forced_checkpoints", "slow_sync"]);
        assert_eq!(rules(&c.resolved), ["forced_checkpoints"]);
        assert_eq!(c.open, 0);
    }

    const SILENT: &str = "nothing logged all day (server down, log_checkpoints off, or the log not read)";

    /// A day without a single event after days with some needs attention,
    /// for that reason alone and in words, as long as one of the 7 days
    /// before it had events: 2026-11-23 to 2026-11-29 after the log of the
    /// 22nd; the 30th, whose week starts on the 23rd, is quiet again.
    #[test]
    fn a_silent_day_after_logged_ones_says_nothing_was_logged_all_day() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::store_with_the_std_log(dir.path());
        let advice = Advices::from(AdviceSection::default());
        let report = |day: &str| build(&store, &inputs(day, "UTC", &[], &advice)).unwrap();
        let logged = report("2026-11-22");
        assert_eq!(logged.clusters[0].day.forced(), 23);
        let busy =
            ["23 forced checkpoints (started by WAL volume, not checkpoint_timeout)", "24 \"too frequently\" warnings"];
        assert_eq!(logged.clusters[0].reasons, busy);
        for day in ["2026-11-23", "2026-11-29"] {
            let silent = report(day);
            let c = &silent.clusters[0];
            assert!(c.day.is_empty(), "{day}");
            assert_eq!(c.reasons, [SILENT], "{day}");
            assert_eq!((silent.attention(), silent.quiet()), (1, false), "{day}");
            let text = super::super::render::text(&silent);
            assert!(text.contains(&format!("== c: needs attention: {SILENT}\n")), "{day}: {text}");
            let subject = super::super::render::subject(&silent);
            assert_eq!(subject, format!("[walwatch] digest {day}: 1 of 1 clusters need attention"));
        }
        let week_later = report("2026-11-30");
        assert_eq!(week_later.clusters[0].reasons, Vec::<String>::new());
        assert!(week_later.quiet());
        let text = super::super::render::text(&week_later);
        assert!(text.contains("== c: healthy\n") && !text.contains("nothing logged"), "{text}");
    }

    /// The day is [start, end): an alert fired at its first instant is the
    /// day's, one fired at the end is the next day's. Open at the end of
    /// the day: fired before the end and not resolved before it. Each open
    /// alert and each reading problem is a reason for attention.
    #[test]
    fn alerts_and_problems_count_by_the_day_s_bounds() {
        use crate::model::alert::Severity;
        use crate::store::alerts::AlertContent;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        let tx = store.alerts_mut().begin("db1").unwrap();
        let figures = serde_json::json!({});
        // (key, fired, resolved)
        let alerts = [
            ("before", "2026-11-21T23:59:59.999999Z", None),
            ("first-instant", "2026-11-22T00:00:00Z", Some("2026-11-23T00:00:00Z")),
            ("resolved-in-the-day", "2026-11-22T10:00:00Z", Some("2026-11-22T23:59:59.999999Z")),
            ("at-the-end", "2026-11-23T00:00:00Z", None),
        ];
        for (key, fired, resolved) in alerts {
            let content = AlertContent {
                rule: "slow_sync",
                key,
                severity: Severity::Warning,
                summary: key,
                details: &[],
                figures: &figures,
                suggestion: None,
                evidence_at: None,
            };
            let id = tx.insert(&content, at(fired), false).unwrap();
            if let Some(r) = resolved {
                tx.resolve(id, Resolution::Cleared, at(r)).unwrap();
            }
        }
        tx.commit().unwrap();
        let cluster = store.clusters_mut().find_or_create("db1").unwrap();
        store.daemon_mut().set_problem(cluster, "/var/log/postgresql", Some("cannot list the directory")).unwrap();
        let advice = Advices::from(AdviceSection::default());
        let report = build(&store, &inputs("2026-11-22", "UTC", &[], &advice)).unwrap();
        let c = &report.clusters[0];
        let keys = |alerts: &[AlertRow]| {
            let mut keys: Vec<String> = alerts.iter().map(|a| a.key.clone()).collect();
            keys.sort();
            keys
        };
        assert_eq!(keys(&c.fired), ["first-instant", "resolved-in-the-day"]);
        assert_eq!(keys(&c.resolved), ["resolved-in-the-day"]);
        // "before" (never resolved) and "first-instant" (resolved at the end, not before it).
        assert_eq!(c.open, 2);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert!(c.problems[0].starts_with("/var/log/postgresql: cannot list the directory (last seen "));
        assert_eq!(c.reasons, ["2 alerts open", "1 problem reading its logs"]);
    }

    /// A crash and its recovery is the first reason a day needs attention
    /// (a real PostgreSQL 15 log killed with `pg_ctl stop -m immediate`).
    #[test]
    fn a_crash_recovery_is_a_reason_of_its_own() {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("c.db")).unwrap();
        let cluster = store.clusters_mut().find_or_create("c").unwrap();
        let logs =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-crashimm/log");
        let time = TimeContext::new(Some("UTC")).unwrap();
        for name in ["postgresql-2026-11-22_081334.log", "postgresql-2026-11-22_081730.log"] {
            let log = logs.join(name);
            ingest::import(&mut store, cluster, log.to_str().unwrap(), &Options::default(), &time).unwrap();
        }
        let advice = Advices::from(AdviceSection::default());
        let report = build(&store, &inputs("2026-11-22", "UTC", &[], &advice)).unwrap();
        let c = &report.clusters[0];
        assert_eq!(c.day.crashes, 1);
        assert_eq!(c.reasons.first().map(String::as_str), Some("1 crash recovery"), "{:?}", c.reasons);
    }

    #[test]
    fn a_megabyte_or_more_unread_is_a_problem_a_moment_s_lag_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("postgresql.log");
        std::fs::write(&path, vec![b'x'; 3_000_000]).unwrap();
        let p = path.to_str().unwrap();
        assert_eq!(behind(p, 0), Some(format!("{p}: 3.0 MB not read yet (walwatch is behind)")));
        assert_eq!(behind(p, 3_000_000 - (1 << 20)), Some(format!("{p}: 1.0 MB not read yet (walwatch is behind)")));
        assert_eq!(behind(p, 3_000_000 - (1 << 20) + 1), None);
        assert_eq!(behind(p, 3_000_000), None);
        assert_eq!(behind(dir.path().join("gone.log").to_str().unwrap(), 0), None, "a rotated-away file is not lag");
    }

    #[test]
    fn the_median_is_of_the_days_that_have_the_figure() {
        assert_eq!(median_of(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median_of(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median_of(&[f64::NAN]), None);
        assert_eq!(median_of(&[]), None);
    }

    fn median_of(values: &[f64]) -> Option<f64> {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        store.clusters_mut().find_or_create("c").unwrap();
        let tz = TimeZone::UTC;
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let end = start + jiff::SignedDuration::from_hours(24 * values.len() as i64);
        let days = buckets::cover(start, end, By::Day, &tz).unwrap();
        let rows = history::rows(&store, "c", &days).unwrap();
        let by_day: Vec<(Row, f64)> = rows.into_iter().zip(values.iter().copied()).collect();
        let rows: Vec<Row> = by_day.iter().map(|(r, _)| r.clone()).collect();
        median(&rows, |r| by_day.iter().find(|(d, _)| d.bucket_start == r.bucket_start).map(|(_, v)| *v))
    }
}
