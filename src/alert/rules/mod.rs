//! The alert rules: each reads the stored history and the settings and says
//! what is wrong now, as zero or more [`Finding`]s. A rule is one file: its
//! id, its `[alerts.<id>]` table (the rule's own type, read with serde), the
//! evidence it reads and its check ([`Rule`]); [`REGISTRY`] lists them, and
//! everything else — the enabled set, evaluation, `config check`, the
//! documented defaults in config/walwatch.toml — comes from that list.
//! Adding a rule is one new file and one line in [`REGISTRY`]. Rule ids are
//! stable: they name the alerts, the config tables and the `walwatch alerts
//! silence RULE` argument.
//!
//! Each rule's `check` is a pure function of the evidence its
//! [`Rule::evaluate`] read through [`Evidence`] (checkpoint rows, warnings,
//! log growth), the [`Settings`], its thresholds and the evaluation window,
//! so it is tested with hand-built inputs.
//!
//! **The evaluation window.** A rule with a `window` looks at the log times
//! `[end - window, end]`. `end` is the evaluation time `now` (the daemon
//! evaluates at wall-clock time, and the log it follows is current), except
//! when the cluster's newest stored event is older than `now - window`: then
//! the log is history (last week's files given to `walwatch import`) and its
//! newest event is the log's own "now", so `walwatch analyze` reports what
//! the log shows instead of an empty window. A log that is current but quiet
//! (newest event inside the window) is evaluated at `now`, so alerts resolve
//! once the window has passed without new evidence.
//!
//! **Events dated ahead.** A window never ends after `now`, and an event
//! dated more than `[alerts.clock_skew] tolerance` ahead of walwatch's clock
//! when it was read never counts as the newest event: one line dated 2099
//! (injected into the log, or from a server whose clock was once far ahead)
//! would otherwise make every window end in 2099, empty, and resolve every
//! alert. Such events are still in the windows once their time has come (a
//! server a few minutes ahead loses nothing), and the `clock_skew` rule
//! reports them.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::analyze::sizing::Suggestion;
use crate::config::{AlertsSection, ConfigError, RuleTables};
use crate::model::alert::{Severity, SuggestionText};
use crate::settings::Settings;
use crate::store::{CheckpointRow, LogTimes};
use crate::store::{Store, StoreError};

pub(crate) use crate::analyze::window::Window;

pub(crate) use clock_skew::ahead_text;

/// Declares each rule's module, exports its type and lists it in
/// [`REGISTRY`], in the order given.
macro_rules! registry {
    ($($vis:vis $module:ident::$rule:ident),* $(,)?) => {
        $(mod $module; $vis use $module::$rule;)*

        /// Every rule, in the order they are evaluated and listed.
        pub(crate) const REGISTRY: &[Registered] = &[$(register::<$rule>()),*];
    };
}

// A new rule: its file in this directory, and one line here.
registry! {
    pub(crate) forced_checkpoints::ForcedCheckpoints,
    pub too_frequent::TooFrequent,
    pub(crate) slow_sync::SlowSync,
    pub(crate) checkpoint_overrun::CheckpointOverrun,
    pub(crate) logging_missing::LoggingMissing,
    pub(crate) logs_not_read::LogsNotRead,
    pub(crate) durability_off::DurabilityOff,
    pub(crate) wal_files_added::WalFilesAdded,
    pub clock_skew::ClockSkew,
}

/// One alert rule. The type is its `[alerts.<id>]` table: serde reads it
/// (`#[serde(default, deny_unknown_fields)]`, values checked by their
/// `deserialize_with`), `Default` holds the documented defaults and
/// `Serialize` writes them into config/walwatch.toml.
pub trait Rule: Serialize + DeserializeOwned + Default + fmt::Debug + Send + Sync + 'static {
    /// Stable: names the alerts, the config table and `alerts silence RULE`.
    const ID: &'static str;
    /// What the rule means and why its defaults: the comment above its
    /// table in config/walwatch.toml, one line per line.
    const DOC: &'static str;
    /// The rule carries the max_wal_size suggestion, which is computed
    /// (reading the whole lookback) only when an enabled rule does.
    const USES_SUGGESTION: bool = false;

    fn enabled(&self) -> bool;

    /// Reads what the rule needs and checks it.
    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError>;
}

/// A rule in [`REGISTRY`]: its id and how to read its table.
pub(crate) struct Registered {
    pub(crate) id: &'static str,
    read: fn(&RuleTables) -> Result<Arc<dyn Configured>, ConfigError>,
    #[cfg(test)]
    documented: fn() -> String,
}

/// Every rule id, in registry order.
pub(crate) fn ids() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|r| r.id)
}

const fn register<R: Rule>() -> Registered {
    Registered {
        id: R::ID,
        read: read::<R>,
        #[cfg(test)]
        documented: documented::<R>,
    }
}

fn read<R: Rule>(tables: &RuleTables) -> Result<Arc<dyn Configured>, ConfigError> {
    Ok(Arc::new(tables.read::<R>(R::ID)?.unwrap_or_default()))
}

/// `[alerts.<id>]`, its comment and its keys at their defaults.
#[cfg(test)]
fn documented<R: Rule>() -> String {
    let doc: String = R::DOC.lines().map(|line| format!("## {line}\n").replace("## \n", "##\n")).collect();
    let keys = toml::to_string(&R::default()).expect("a rule's defaults serialize to TOML");
    format!("[alerts.{}]\n{doc}{keys}", R::ID)
}

/// A rule with its configuration, behind the registry.
trait Configured: fmt::Debug + Send + Sync {
    fn id(&self) -> &'static str;
    fn enabled(&self) -> bool;
    fn uses_suggestion(&self) -> bool;
    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError>;
    fn as_any(&self) -> &dyn Any;
}

impl<R: Rule> Configured for R {
    fn id(&self) -> &'static str {
        R::ID
    }

    fn enabled(&self) -> bool {
        Rule::enabled(self)
    }

    fn uses_suggestion(&self) -> bool {
        R::USES_SUGGESTION
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        Rule::evaluate(self, evidence)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Every rule of [`REGISTRY`] with its configuration.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Arc<dyn Configured>>,
}

impl Default for RuleSet {
    /// Every rule at its defaults.
    fn default() -> Self {
        RuleSet::configure(&AlertsSection::default()).expect("the defaults are valid")
    }
}

impl RuleSet {
    /// Reads every rule's `[alerts.<id>]`; a table no rule owns is an error.
    pub fn configure(alerts: &AlertsSection) -> Result<RuleSet, ConfigError> {
        let ids: Vec<&str> = REGISTRY.iter().map(|r| r.id).collect();
        if let Some(unknown) = alerts.rules.ids().find(|id| !ids.contains(id)) {
            return Err(alerts.rules.unknown(unknown, &ids));
        }
        let rules = REGISTRY.iter().map(|r| (r.read)(&alerts.rules)).collect::<Result<_, _>>()?;
        Ok(RuleSet { rules })
    }

    /// Rule `R`'s configuration.
    pub fn get<R: Rule>(&self) -> &R {
        self.rules.iter().find_map(|r| r.as_any().downcast_ref::<R>()).expect("every registered rule is configured")
    }

    /// The ids of the rules that run, in registry order.
    pub fn enabled(&self) -> Vec<&'static str> {
        self.rules.iter().filter(|r| r.enabled()).map(|r| r.id()).collect()
    }

    /// How far ahead an event may be dated before its time is not believed
    /// (`[alerts.clock_skew] tolerance`); applies whether that rule runs or not.
    pub(crate) fn clock_skew_tolerance(&self) -> Duration {
        self.get::<ClockSkew>().tolerance
    }

    /// Whether an enabled rule carries the max_wal_size suggestion.
    pub(crate) fn uses_suggestion(&self) -> bool {
        self.rules.iter().any(|r| r.enabled() && r.uses_suggestion())
    }

    /// Runs every enabled rule for `cluster` at `now`. `suggestion` is the
    /// max_wal_size advice that forced_checkpoints and wal_files_added carry.
    pub(crate) fn evaluate(
        &self,
        store: &Store,
        cluster: &str,
        settings: &Settings,
        suggestion: Option<&Suggestion>,
        now: Timestamp,
    ) -> Result<Vec<Finding>, StoreError> {
        let times = store.events().log_times(cluster, self.clock_skew_tolerance())?;
        let evidence = Evidence { store, cluster, settings, suggestion, now, times };
        let mut findings = Vec::new();
        for rule in self.rules.iter().filter(|r| r.enabled()) {
            findings.extend(rule.evaluate(&evidence)?);
        }
        Ok(findings)
    }
}

/// The `[alerts.<id>]` tables of config/walwatch.toml: every rule's comment
/// and keys at their defaults, in registry order, one blank line apart.
#[cfg(test)]
pub(crate) fn documented_defaults() -> String {
    REGISTRY.iter().map(|r| (r.documented)()).collect::<Vec<_>>().join("\n")
}

/// What a rule may read for one cluster at one evaluation.
pub struct Evidence<'a> {
    pub(crate) store: &'a Store,
    pub(crate) cluster: &'a str,
    pub(crate) settings: &'a Settings,
    /// The max_wal_size advice, when an enabled rule uses it.
    pub(crate) suggestion: Option<&'a Suggestion>,
    pub(crate) now: Timestamp,
    /// The cluster's log times, without the events dated ahead.
    pub(crate) times: LogTimes,
}

impl Evidence<'_> {
    /// A window of `length` ending now or at the log's newest event (see [`Window::ending`]).
    pub(crate) fn window(&self, length: Duration) -> Window {
        Window::ending(self.now, self.times.newest, length)
    }

    /// The checkpoints and restartpoints started in `window`.
    pub(crate) fn points(&self, window: &Window) -> Result<Vec<CheckpointRow>, StoreError> {
        self.store.checkpoints().between(self.cluster, window.start, window.end)
    }
}

/// Something a rule found wrong. (rule, key) identifies the alert it opens
/// or keeps open; `key` separates several alerts of one rule (durability_off
/// uses the setting name) and is "" otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub key: String,
    pub severity: Severity,
    /// One line; may contain log-derived text (escaped by the renderers).
    pub summary: String,
    pub details: Vec<String>,
    /// The numbers behind the summary, for `--format json` and the tests.
    pub figures: serde_json::Value,
    /// Advice with its SQL (forced_checkpoints: max_wal_size; wal_files_added: min_wal_size).
    pub suggestion: Option<SuggestionText>,
    /// Log time of the latest evidence; None when the evidence is a setting with no log time.
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub evidence_at: Option<Timestamp>,
}

/// Seconds with at most 3 decimals, as PostgreSQL logs them.
fn secs(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

#[cfg(test)]
mod config_tests;

#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::BTreeMap;

    use jiff::Timestamp;

    use crate::settings::{Settings, Value, ValueSource};
    use crate::store::CheckpointRow;

    pub(crate) fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// Settings as the settings module would fill them, from (name, value) pairs.
    pub(crate) fn settings(version: u32, pairs: &[(&str, &str)]) -> Settings {
        let values: BTreeMap<String, Value> = pairs
            .iter()
            .map(|(k, v)| {
                (k.to_string(), Value { value: v.to_string(), source: ValueSource::Default { version: Some(version) } })
            })
            .collect();
        Settings { version: Some(version), values, ..Settings::default() }
    }

    /// A completed checkpoint started at `start` with `trigger`.
    pub(crate) fn point(start: &str, trigger: &str) -> CheckpointRow {
        let started = at(start);
        CheckpointRow {
            cluster: "main".into(),
            kind: crate::model::event::PointKind::Checkpoint,
            trigger: Some(crate::model::event::Trigger::parse(trigger).expect("a trigger name")),
            flags: vec![trigger.into()],
            started_at: Some(started),
            completed_at: Some(started + jiff::SignedDuration::from_secs(1)),
            buffers_written: Some(10),
            buffers_pct: Some(0.1),
            slru_buffers_written: None,
            wal_files_added: Some(0),
            wal_files_removed: Some(0),
            wal_files_recycled: Some(1),
            write_s: Some(0.5),
            sync_s: Some(0.1),
            total_s: Some(0.7),
            sync_files: Some(3),
            sync_longest_s: Some(0.05),
            sync_average_s: Some(0.02),
            distance_kb: Some(16384),
            estimate_kb: Some(16384),
            lsn: None,
            redo_lsn: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::at;
    use super::*;

    /// evaluate() on a real store: last week's log (two forced checkpoints)
    /// plus one line read 5 minutes (the default tolerance) ahead, or one
    /// microsecond more. Within the tolerance that line is the log's newest
    /// event, so the log is current and the window ends now, without last
    /// week's checkpoints; beyond it, the line is ignored, the window stays
    /// on last week's log, and clock_skew reports the line.
    #[test]
    fn the_tolerance_decides_whether_a_line_dated_ahead_is_the_newest_event() {
        use crate::store::shared_tests::{start, store, Line};
        let now = at("2026-11-22T12:00:00Z");
        let evaluate_with = |ahead_us: i64| {
            let dir = tempfile::tempdir().unwrap();
            let lines = vec![
                start("2026-11-15T07:30:00Z", "wal", None),
                start("2026-11-15T08:00:00Z", "wal", None),
                // Read at 11:59:55, dated ahead_us later.
                Line {
                    at: at("2026-11-22T11:59:55Z") + jiff::SignedDuration::from_micros(ahead_us),
                    ..start("2026-11-22T00:00:00Z", "time", Some(ahead_us))
                },
            ];
            let s = store(dir.path(), lines);
            let findings = RuleSet::default().evaluate(&s, "main", &Settings::default(), None, now).unwrap();
            findings.into_iter().map(|f| (f.rule, f.figures)).collect::<Vec<_>>()
        };
        let tolerance = 300_000_000;

        let inside = evaluate_with(tolerance);
        let rules: Vec<&str> = inside.iter().map(|(r, _)| *r).collect();
        assert_eq!(rules, Vec::<&str>::new(), "current log, nothing in the last hour: {inside:?}");

        let outside = evaluate_with(tolerance + 1);
        let rules: Vec<&str> = outside.iter().map(|(r, _)| *r).collect();
        assert_eq!(rules, ["forced_checkpoints", "clock_skew"], "{outside:?}");
        let forced = &outside[0].1;
        assert_eq!(forced["count"], 2);
        assert_eq!(forced["window"]["end"], "2026-11-15T08:00:00.000+00:00");
        let skew = &outside[1].1;
        assert_eq!(skew["count"], 1);
        assert_eq!(skew["max_ahead_s"], 300.000001);
        assert_eq!(skew["most_ahead_read_at"], "2026-11-22T11:59:55.000+00:00");
        assert_eq!(skew["window"]["end"], "2026-11-22T12:00:00.000+00:00");
    }

    #[test]
    fn every_rule_runs_by_default_in_registry_order() {
        let ids: Vec<&str> = REGISTRY.iter().map(|r| r.id).collect();
        assert_eq!(RuleSet::default().enabled(), ids);
        assert_eq!(ids.len(), 9);
        assert_eq!(RuleSet::default().clock_skew_tolerance(), Duration::from_secs(300));
        assert!(RuleSet::default().uses_suggestion());
    }

    /// config/walwatch.toml documents every rule at its defaults: its
    /// `[alerts.<id>]` tables are what the registry generates. After
    /// changing a rule, `WALWATCH_BLESS=1 cargo test --lib
    /// the_example_config_documents_every_rule` rewrites them.
    #[test]
    fn the_example_config_documents_every_rule() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/walwatch.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let start = 1 + text.find("\n[alerts.").expect("the example config has rule tables");
        let end = start + text[start..].find("\n## One [[cluster]]").expect("the cluster section follows the rules");
        let generated = documented_defaults();
        if std::env::var_os("WALWATCH_BLESS").is_some() {
            std::fs::write(&path, format!("{}{generated}{}", &text[..start], &text[end..])).unwrap();
            return;
        }
        assert_eq!(&text[start..end], generated, "run with WALWATCH_BLESS=1 to regenerate");
        // Every table parses back to the defaults it documents.
        let config = crate::config::parse(&text, &path).unwrap();
        assert_eq!(config.alerts.rules.ids().count(), REGISTRY.len());
        let rules = RuleSet::configure(&config.alerts).unwrap();
        assert_eq!(format!("{rules:?}"), format!("{:?}", RuleSet::default()));
    }
}
