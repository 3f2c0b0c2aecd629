//! `checkpoint_overrun`: a time-triggered checkpoint that took longer than
//! its schedule. PostgreSQL paces a timed checkpoint's writes to end after
//! checkpoint_timeout × checkpoint_completion_target; one that runs past
//! that (by more than `slack`, since the sync phase legitimately follows the
//! paced writes) means the disk cannot absorb the writes at that pace.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

use super::{secs, Evidence, Finding, Rule, Window};
use crate::model::event::Trigger;
use crate::config::value;
use crate::model::alert::Severity;
use crate::settings::Settings;
use crate::store::CheckpointRow;
use crate::store::StoreError;

/// `[alerts.checkpoint_overrun]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct CheckpointOverrun {
    pub(crate) enabled: bool,
    #[serde(with = "value::interval")]
    pub(crate) window: Duration,
    /// Fires when total > checkpoint_timeout × checkpoint_completion_target × slack.
    #[serde(deserialize_with = "slack")]
    pub(crate) slack: f64,
}

impl Default for CheckpointOverrun {
    fn default() -> Self {
        CheckpointOverrun { enabled: true, window: Duration::from_secs(3600), slack: 1.1 }
    }
}

fn slack<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    value::within(d, |v| (1.0..=10.0).contains(&v), "slack is a factor from 1 to 10, e.g. 1.1")
}

impl Rule for CheckpointOverrun {
    const ID: &'static str = "checkpoint_overrun";
    const DOC: &'static str = r#"A time-triggered checkpoint whose total exceeds checkpoint_timeout x
checkpoint_completion_target x slack: the disk cannot write at the paced
rate. PostgreSQL paces the writes to end right at timeout x target and the
sync phase follows, so a healthy checkpoint ends a moment after it (15.011 s
against 15 s in a real PostgreSQL 13 log); slack 1.1 leaves 10 % (27 s at
the defaults), which only a disk that falls behind uses up."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let w = evidence.window(self.window);
        Ok(check(&evidence.points(&w)?, &w, self, evidence.settings).into_iter().collect())
    }
}

pub(crate) fn check(
    points: &[CheckpointRow],
    window: &Window,
    rule: &CheckpointOverrun,
    settings: &Settings,
) -> Option<Finding> {
    let timeout = settings.seconds("checkpoint_timeout")?;
    let target = settings.number("checkpoint_completion_target")?;
    let schedule = timeout * target;
    let limit = schedule * rule.slack;
    let timed = points.iter().filter(|p| p.trigger == Some(Trigger::Time));
    let inside = timed.filter(|p| p.started_at.is_some_and(|t| window.contains(t)));
    let over: Vec<&CheckpointRow> = inside.filter(|p| p.total_s.is_some_and(|s| s > limit)).collect();
    let worst = over.iter().max_by(|a, b| a.total_s.unwrap_or(0.0).total_cmp(&b.total_s.unwrap_or(0.0)))?;
    let worst_total = worst.total_s?;
    let count = over.len();
    let summary = format!(
        "{count} timed checkpoints overran their schedule in {}: up to {} s against {} s (checkpoint_timeout × checkpoint_completion_target): the disk cannot keep up",
        window.describe(),
        secs(worst_total),
        secs(schedule)
    );
    let details = vec![
        format!(
            "checkpoint_timeout = {} s and checkpoint_completion_target = {target}: PostgreSQL spreads a timed checkpoint's writes over {} s. This rule fires above {} s ({} × {}). The worst, started at {}, took total={} s (write={} s, sync={} s, {} buffers).",
            secs(timeout),
            secs(schedule),
            secs(limit),
            secs(schedule),
            rule.slack,
            worst.started_at.map(crate::timefmt::rfc3339).unwrap_or_default(),
            secs(worst_total),
            worst.write_s.map_or("?".into(), secs),
            worst.sync_s.map_or("?".into(), secs),
            worst.buffers_written.map_or("?".into(), |b| b.to_string()),
        ),
        "A long write phase: the storage cannot write the dirty buffers at the paced rate (check its throughput and other load on it). A long sync phase: see the slow_sync alert. The next checkpoint starts late, and crash recovery has more WAL to replay.".to_string(),
    ];
    Some(Finding {
        rule: CheckpointOverrun::ID,
        key: String::new(),
        severity: Severity::Warning,
        summary,
        details,
        figures: json!({
            "count": count,
            "max_total_s": worst_total,
            "schedule_s": schedule,
            "limit_s": limit,
            "checkpoint_timeout_s": timeout,
            "checkpoint_completion_target": target,
            "slack": rule.slack,
            "worst_at": worst.started_at.map(crate::timefmt::rfc3339),
            "window": window.figures(),
        }),
        suggestion: None,
        evidence_at: over.iter().filter_map(|p| p.completed_at.or(p.started_at)).max(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::test_support::{at, point, settings};
    use super::*;

    fn window() -> Window {
        Window::ending(at("2026-11-22T12:00:00Z"), None, Duration::from_secs(3600))
    }

    fn timed(total: f64) -> CheckpointRow {
        let mut p = point("2026-11-22T11:20:00Z", "time");
        p.total_s = Some(total);
        p
    }

    #[test]
    fn fires_above_timeout_times_target_times_slack() {
        // 300 s × 0.9 = 270 s schedule; × 1.1 = 297 s.
        let s = settings(15, &[("checkpoint_timeout", "5min"), ("checkpoint_completion_target", "0.9")]);
        let rule = CheckpointOverrun::default();
        // A healthy checkpoint ends just after its paced writes: quiet.
        assert_eq!(check(&[timed(270.2)], &window(), &rule, &s), None);
        assert_eq!(check(&[timed(297.0)], &window(), &rule, &s), None, "at the limit");
        let f = check(&[timed(297.5), timed(100.0), timed(310.0)], &window(), &rule, &s).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("checkpoint_overrun", "", Severity::Warning));
        assert_eq!(f.figures["count"], 2);
        assert_eq!(f.figures["max_total_s"], 310.0);
        assert_eq!(f.figures["schedule_s"], 270.0);
        assert!((f.figures["limit_s"].as_f64().unwrap() - 297.0).abs() < 1e-9);
        assert_eq!(f.evidence_at, Some(at("2026-11-22T11:20:01Z")));
    }

    #[test]
    fn slack_one_is_the_literal_schedule_and_only_timed_checkpoints_count() {
        let s = settings(13, &[("checkpoint_timeout", "30s"), ("checkpoint_completion_target", "0.5")]);
        let rule = CheckpointOverrun { slack: 1.0, ..Default::default() };
        assert_eq!(check(&[timed(15.0)], &window(), &rule, &s), None);
        assert_eq!(check(&[timed(15.011)], &window(), &rule, &s).unwrap().figures["max_total_s"], 15.011);
        let mut forced = timed(100.0);
        forced.trigger = Some(Trigger::Wal);
        assert_eq!(check(&[forced], &window(), &rule, &s), None);
    }

    #[test]
    fn unknown_settings_are_quiet() {
        let rule = CheckpointOverrun::default();
        assert_eq!(check(&[timed(1000.0)], &window(), &rule, &settings(15, &[])), None);
    }
}
