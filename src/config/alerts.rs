//! `[alerts]`: which rules run, their thresholds, and reminders. One
//! sub-table per rule id (`[alerts.forced_checkpoints]`, …), each with
//! `enabled` and its thresholds; the defaults are argued for in
//! config/walwatch.toml.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::raw::{interval, Problem};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertsSection {
    /// Re-notify an open, unacknowledged alert this often; None: never.
    pub reminder_interval: Option<Duration>,
    pub forced_checkpoints: ForcedCheckpointsRule,
    pub too_frequent: TooFrequentRule,
    pub slow_sync: SlowSyncRule,
    pub checkpoint_overrun: CheckpointOverrunRule,
    pub checkpoint_logging_missing: LoggingMissingRule,
    pub durability_off: DurabilityOffRule,
    pub wal_files_added: WalFilesAddedRule,
    pub clock_skew: ClockSkewRule,
}

impl AlertsSection {
    /// Whether the rule with this id runs; unknown ids do not.
    pub fn enabled(&self, rule: &str) -> bool {
        match rule {
            "forced_checkpoints" => self.forced_checkpoints.enabled,
            "too_frequent" => self.too_frequent.enabled,
            "slow_sync" => self.slow_sync.enabled,
            "checkpoint_overrun" => self.checkpoint_overrun.enabled,
            "checkpoint_logging_missing" => self.checkpoint_logging_missing.enabled,
            "durability_off" => self.durability_off.enabled,
            "wal_files_added" => self.wal_files_added.enabled,
            "clock_skew" => self.clock_skew.enabled,
            _ => false,
        }
    }
}

/// `[alerts.forced_checkpoints]`: WAL-triggered checkpoints in a window.
#[derive(Debug, Clone, PartialEq)]
pub struct ForcedCheckpointsRule {
    pub enabled: bool,
    pub window: Duration,
    /// At least this many WAL-triggered checkpoints in the window …
    pub min_count: u32,
    /// … making at least this share of the WAL- and time-triggered ones.
    pub min_share: f64,
}

impl Default for ForcedCheckpointsRule {
    fn default() -> Self {
        ForcedCheckpointsRule { enabled: true, window: Duration::from_secs(3600), min_count: 2, min_share: 0.1 }
    }
}

/// `[alerts.too_frequent]`: any "checkpoints are occurring too frequently" in a window.
#[derive(Debug, Clone, PartialEq)]
pub struct TooFrequentRule {
    pub enabled: bool,
    pub window: Duration,
}

impl Default for TooFrequentRule {
    fn default() -> Self {
        TooFrequentRule { enabled: true, window: Duration::from_secs(3600) }
    }
}

/// `[alerts.slow_sync]`: a checkpoint's sync phase or single-file fsync too long.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowSyncRule {
    pub enabled: bool,
    pub window: Duration,
    /// The sync phase (`sync=`) over this many seconds.
    pub sync_s: f64,
    /// The longest single-file fsync (`longest=`) over this many seconds.
    pub longest_file_s: f64,
}

impl Default for SlowSyncRule {
    fn default() -> Self {
        SlowSyncRule { enabled: true, window: Duration::from_secs(3600), sync_s: 5.0, longest_file_s: 2.0 }
    }
}

/// `[alerts.checkpoint_overrun]`: a timed checkpoint longer than its schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointOverrunRule {
    pub enabled: bool,
    pub window: Duration,
    /// Fires when total > checkpoint_timeout × checkpoint_completion_target × slack.
    pub slack: f64,
}

impl Default for CheckpointOverrunRule {
    fn default() -> Self {
        CheckpointOverrunRule { enabled: true, window: Duration::from_secs(3600), slack: 1.1 }
    }
}

/// `[alerts.checkpoint_logging_missing]`: the log grows, no checkpoint line.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggingMissingRule {
    pub enabled: bool,
    /// No checkpoint line for factor × checkpoint_timeout.
    pub factor: f64,
}

impl Default for LoggingMissingRule {
    fn default() -> Self {
        LoggingMissingRule { enabled: true, factor: 3.0 }
    }
}

/// `[alerts.durability_off]`: fsync / full_page_writes off (critical), synchronous_commit off (info).
#[derive(Debug, Clone, PartialEq)]
pub struct DurabilityOffRule {
    pub enabled: bool,
    /// Also report synchronous_commit = off (an informational alert).
    pub synchronous_commit: bool,
}

impl Default for DurabilityOffRule {
    fn default() -> Self {
        DurabilityOffRule { enabled: true, synchronous_commit: true }
    }
}

/// `[alerts.wal_files_added]`: new WAL files created on most checkpoint cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct WalFilesAddedRule {
    pub enabled: bool,
    pub window: Duration,
    /// The share of cycles that added WAL files …
    pub min_share: f64,
    /// … over at least this many cycles.
    pub min_cycles: u32,
}

impl Default for WalFilesAddedRule {
    fn default() -> Self {
        WalFilesAddedRule { enabled: true, window: Duration::from_secs(86_400), min_share: 0.5, min_cycles: 6 }
    }
}

/// `[alerts.clock_skew]`: events dated more than `tolerance` ahead of
/// walwatch's clock when it read them. Their times never end a rule's window
/// nor count as a log's newest event, whether this alert is enabled or not.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockSkewRule {
    pub enabled: bool,
    /// How far ahead an event may be dated before it is flagged.
    pub tolerance: Duration,
    /// The alert covers the events read this long ago or later.
    pub window: Duration,
}

impl ClockSkewRule {
    /// Above this a wrong log_timezone (whole hours) could pass unflagged.
    const MAX_TOLERANCE: Duration = Duration::from_secs(3600);
}

impl Default for ClockSkewRule {
    fn default() -> Self {
        ClockSkewRule { enabled: true, tolerance: Duration::from_secs(300), window: Duration::from_secs(86_400) }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlerts {
    reminder_interval: Option<Spanned<String>>,
    forced_checkpoints: Option<RawForced>,
    too_frequent: Option<RawTooFrequent>,
    slow_sync: Option<RawSlowSync>,
    checkpoint_overrun: Option<RawOverrun>,
    checkpoint_logging_missing: Option<RawLoggingMissing>,
    durability_off: Option<RawDurability>,
    wal_files_added: Option<RawWalFilesAdded>,
    clock_skew: Option<RawClockSkew>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawForced {
    enabled: Option<bool>,
    window: Option<Spanned<String>>,
    min_count: Option<Spanned<i64>>,
    min_share: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTooFrequent {
    enabled: Option<bool>,
    window: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlowSync {
    enabled: Option<bool>,
    window: Option<Spanned<String>>,
    sync_s: Option<Spanned<f64>>,
    longest_file_s: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverrun {
    enabled: Option<bool>,
    window: Option<Spanned<String>>,
    slack: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoggingMissing {
    enabled: Option<bool>,
    factor: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDurability {
    enabled: Option<bool>,
    synchronous_commit: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWalFilesAdded {
    enabled: Option<bool>,
    window: Option<Spanned<String>>,
    min_share: Option<Spanned<f64>>,
    min_cycles: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClockSkew {
    enabled: Option<bool>,
    tolerance: Option<Spanned<String>>,
    window: Option<Spanned<String>>,
}

impl RawAlerts {
    pub fn validate(self) -> Result<AlertsSection, Problem> {
        let mut a = AlertsSection::default();
        if let Some(text) = &self.reminder_interval {
            a.reminder_interval = if text.get_ref() == "off" { None } else { Some(interval(text)?) };
        }
        if let Some(r) = self.forced_checkpoints {
            let d = &mut a.forced_checkpoints;
            set(&mut d.enabled, r.enabled);
            window(&mut d.window, &r.window)?;
            if let Some(n) = &r.min_count {
                d.min_count = at_least_one(n)?;
            }
            if let Some(s) = &r.min_share {
                d.min_share = share(s)?;
            }
        }
        if let Some(r) = self.too_frequent {
            set(&mut a.too_frequent.enabled, r.enabled);
            window(&mut a.too_frequent.window, &r.window)?;
        }
        if let Some(r) = self.slow_sync {
            let d = &mut a.slow_sync;
            set(&mut d.enabled, r.enabled);
            window(&mut d.window, &r.window)?;
            if let Some(s) = &r.sync_s {
                d.sync_s = positive(s, "sync_s is a number of seconds above 0, e.g. 5.0")?;
            }
            if let Some(s) = &r.longest_file_s {
                d.longest_file_s = positive(s, "longest_file_s is a number of seconds above 0, e.g. 2.0")?;
            }
        }
        if let Some(r) = self.checkpoint_overrun {
            let d = &mut a.checkpoint_overrun;
            set(&mut d.enabled, r.enabled);
            window(&mut d.window, &r.window)?;
            if let Some(s) = &r.slack {
                d.slack = within(s, |v| (1.0..=10.0).contains(&v), "slack is a factor from 1 to 10, e.g. 1.1")?;
            }
        }
        if let Some(r) = self.checkpoint_logging_missing {
            let d = &mut a.checkpoint_logging_missing;
            set(&mut d.enabled, r.enabled);
            if let Some(f) = &r.factor {
                d.factor = within(f, |v| (1.0..=100.0).contains(&v), "factor is from 1 to 100, e.g. 3.0")?;
            }
        }
        if let Some(r) = self.durability_off {
            set(&mut a.durability_off.enabled, r.enabled);
            set(&mut a.durability_off.synchronous_commit, r.synchronous_commit);
        }
        if let Some(r) = self.wal_files_added {
            let d = &mut a.wal_files_added;
            set(&mut d.enabled, r.enabled);
            window(&mut d.window, &r.window)?;
            if let Some(s) = &r.min_share {
                d.min_share = share(s)?;
            }
            if let Some(n) = &r.min_cycles {
                d.min_cycles = at_least_one(n)?;
            }
        }
        if let Some(r) = self.clock_skew {
            a.clock_skew = r.validate()?;
        }
        Ok(a)
    }
}

impl RawClockSkew {
    fn validate(self) -> Result<ClockSkewRule, Problem> {
        let mut d = ClockSkewRule::default();
        set(&mut d.enabled, self.enabled);
        window(&mut d.window, &self.window)?;
        if let Some(text) = &self.tolerance {
            d.tolerance = interval(text)?;
            if d.tolerance > ClockSkewRule::MAX_TOLERANCE {
                let message = "tolerance is at most \"1h\" (a wrong log_timezone is off by whole hours), e.g. \"5m\"";
                return Err(Problem::at(text, format!("{message}, not {:?}", text.get_ref())));
            }
        }
        Ok(d)
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

fn window(slot: &mut Duration, text: &Option<Spanned<String>>) -> Result<(), Problem> {
    if let Some(text) = text {
        *slot = interval(text)?;
    }
    Ok(())
}

fn at_least_one(n: &Spanned<i64>) -> Result<u32, Problem> {
    let v = *n.get_ref();
    u32::try_from(v).ok().filter(|v| *v >= 1).ok_or_else(|| Problem::at(n, format!("must be at least 1, not {v}")))
}

fn share(value: &Spanned<f64>) -> Result<f64, Problem> {
    within(value, |v| v > 0.0 && v <= 1.0, "a share is above 0 and at most 1, e.g. 0.5")
}

fn positive(value: &Spanned<f64>, message: &str) -> Result<f64, Problem> {
    within(value, |v| v > 0.0, message)
}

fn within(value: &Spanned<f64>, ok: impl Fn(f64) -> bool, message: &str) -> Result<f64, Problem> {
    let v = *value.get_ref();
    if v.is_finite() && ok(v) {
        Ok(v)
    } else {
        Err(Problem::at(value, format!("{message}, not {v}")))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::{parse, ConfigError};

    use super::*;

    fn alerts(text: &str) -> Result<AlertsSection, ConfigError> {
        parse(text, Path::new("w.toml")).map(|c| c.alerts)
    }

    fn error(text: &str) -> String {
        alerts(text).unwrap_err().to_string()
    }

    #[test]
    fn defaults_when_absent_or_empty() {
        assert_eq!(alerts("").unwrap(), AlertsSection::default());
        assert_eq!(alerts("[alerts]\n").unwrap(), AlertsSection::default());
        let d = AlertsSection::default();
        assert_eq!(d.reminder_interval, None);
        assert!(d.enabled("forced_checkpoints") && d.enabled("wal_files_added"));
        assert!(!d.enabled("no_such_rule"));
    }

    #[test]
    fn reads_every_key() {
        let a = alerts(
            "[alerts]\nreminder_interval = \"4h\"\n\
             [alerts.forced_checkpoints]\nenabled = false\nwindow = \"30m\"\nmin_count = 3\nmin_share = 0.25\n\
             [alerts.too_frequent]\nwindow = \"2h\"\n\
             [alerts.slow_sync]\nsync_s = 1.5\nlongest_file_s = 0.5\nwindow = \"10m\"\n\
             [alerts.checkpoint_overrun]\nslack = 1.0\n\
             [alerts.checkpoint_logging_missing]\nfactor = 4.0\n\
             [alerts.durability_off]\nsynchronous_commit = false\n\
             [alerts.wal_files_added]\nmin_share = 0.75\nmin_cycles = 10\nwindow = \"7d\"\n\
             [alerts.clock_skew]\nenabled = false\ntolerance = \"30s\"\nwindow = \"2h\"\n",
        )
        .unwrap();
        assert_eq!(a.reminder_interval, Some(Duration::from_secs(4 * 3600)));
        assert_eq!(
            a.forced_checkpoints,
            ForcedCheckpointsRule { enabled: false, window: Duration::from_secs(1800), min_count: 3, min_share: 0.25 }
        );
        assert!(!a.enabled("forced_checkpoints"));
        assert_eq!(a.too_frequent.window, Duration::from_secs(7200));
        assert_eq!(
            a.slow_sync,
            SlowSyncRule { enabled: true, window: Duration::from_secs(600), sync_s: 1.5, longest_file_s: 0.5 }
        );
        assert_eq!(a.checkpoint_overrun.slack, 1.0);
        assert_eq!(a.checkpoint_logging_missing.factor, 4.0);
        assert!(!a.durability_off.synchronous_commit);
        assert_eq!(
            a.wal_files_added,
            WalFilesAddedRule {
                enabled: true,
                window: Duration::from_secs(7 * 86_400),
                min_share: 0.75,
                min_cycles: 10
            }
        );
        assert_eq!(
            a.clock_skew,
            ClockSkewRule { enabled: false, tolerance: Duration::from_secs(30), window: Duration::from_secs(7200) }
        );
        assert!(!a.enabled("clock_skew"));
        assert_eq!(alerts("[alerts]\nreminder_interval = \"off\"\n").unwrap().reminder_interval, None);
    }

    #[test]
    fn errors_point_at_the_value() {
        assert_eq!(
            error("[alerts]\n[alerts.forced_checkpoints]\nmin_share = 1.5\n"),
            "w.toml:3:13: alerts.forced_checkpoints.min_share: a share is above 0 and at most 1, e.g. 0.5, not 1.5"
        );
        // Without the [alerts] header the position is still exact (config/position.rs names no key then).
        assert!(error("[alerts.forced_checkpoints]\nmin_share = 1.5\n").starts_with("w.toml:2:13: "));
        assert_eq!(
            error("[alerts]\n[alerts.wal_files_added]\nmin_cycles = 0\n"),
            "w.toml:3:14: alerts.wal_files_added.min_cycles: must be at least 1, not 0"
        );
        let e = error("[alerts]\nreminder_interval = \"soon\"\n");
        assert!(e.starts_with("w.toml:2:21: alerts.reminder_interval: invalid duration \"soon\""), "{e}");
        let e = error("[alerts.slow_sync]\nsync = 5.0\n");
        assert!(e.starts_with("w.toml:2:1: ") && e.contains("unknown field `sync`"), "{e}");
        let e = error("[alerts.no_such_rule]\nenabled = true\n");
        assert!(e.contains("unknown field `no_such_rule`"), "{e}");
        let e = error("[alerts.checkpoint_overrun]\nslack = 0.5\n");
        assert!(e.ends_with("slack is a factor from 1 to 10, e.g. 1.1, not 0.5"), "{e}");
        assert_eq!(
            error("[alerts]\n[alerts.clock_skew]\ntolerance = \"2h\"\n"),
            "w.toml:3:13: alerts.clock_skew.tolerance: tolerance is at most \"1h\" (a wrong log_timezone is off by whole hours), e.g. \"5m\", not \"2h\""
        );
        assert_eq!(
            alerts("[alerts.clock_skew]\ntolerance = \"1h\"\n").unwrap().clock_skew.tolerance,
            Duration::from_secs(3600)
        );
        let e = error("[alerts]\n[alerts.clock_skew]\ntolerance = \"0s\"\n");
        assert!(e.contains("alerts.clock_skew.tolerance: duration \"0s\" must be positive"), "{e}");
        let e = error("[alerts]\n[alerts.slow_sync]\nsync_s = -1.0\n");
        assert!(e.contains("alerts.slow_sync.sync_s: sync_s is a number of seconds above 0"), "{e}");
    }
}
