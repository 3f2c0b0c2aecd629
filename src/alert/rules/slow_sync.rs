//! `slow_sync`: a checkpoint whose sync phase (`sync=`) or longest
//! single-file fsync (`longest=`) exceeded its threshold: the storage
//! stalled while the kernel flushed what the checkpoint had written.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

use super::{secs, Evidence, Finding, Rule, Window};
use crate::config::value;
use crate::model::alert::Severity;
use crate::settings::Settings;
use crate::store::CheckpointRow;
use crate::store::StoreError;

/// `[alerts.slow_sync]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SlowSync {
    pub(crate) enabled: bool,
    #[serde(with = "value::interval")]
    pub(crate) window: Duration,
    /// The sync phase (`sync=`) over this many seconds.
    #[serde(deserialize_with = "sync_s")]
    pub(crate) sync_s: f64,
    /// The longest single-file fsync (`longest=`) over this many seconds.
    #[serde(deserialize_with = "longest_file_s")]
    pub(crate) longest_file_s: f64,
}

impl Default for SlowSync {
    fn default() -> Self {
        SlowSync { enabled: true, window: Duration::from_secs(3600), sync_s: 5.0, longest_file_s: 2.0 }
    }
}

fn sync_s<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    value::within(d, |v| v > 0.0, "sync_s is a number of seconds above 0, e.g. 5.0")
}

fn longest_file_s<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    value::within(d, |v| v > 0.0, "longest_file_s is a number of seconds above 0, e.g. 2.0")
}

impl Rule for SlowSync {
    const ID: &'static str = "slow_sync";
    const DOC: &'static str = r#"A checkpoint's sync phase (sync=) over sync_s seconds, or one file's fsync
(longest=) over longest_file_s: the storage stalled on the writes the
kernel held back. With checkpoint_flush_after at its Linux default the
sync phase takes well under a second; 5 s (2 s for a single file) is a
stall that commits feel."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let w = evidence.window(self.window);
        Ok(check(&evidence.points(&w)?, &w, self, evidence.settings).into_iter().collect())
    }
}

pub(crate) fn check(points: &[CheckpointRow], window: &Window, rule: &SlowSync, settings: &Settings) -> Option<Finding> {
    let completed = points.iter().filter(|p| p.completed_at.is_some_and(|t| window.contains(t)));
    let over = |p: &&CheckpointRow| {
        p.sync_s.is_some_and(|s| s > rule.sync_s) || p.sync_longest_s.is_some_and(|s| s > rule.longest_file_s)
    };
    let slow: Vec<&CheckpointRow> = completed.filter(over).collect();
    let worst_sync = slow.iter().filter_map(|p| p.sync_s).fold(None, max);
    let worst_file = slow.iter().filter_map(|p| p.sync_longest_s).fold(None, max);
    let last = slow.iter().filter_map(|p| p.completed_at).max()?;
    let worst = slow.iter().max_by(|a, b| a.sync_s.unwrap_or(0.0).total_cmp(&b.sync_s.unwrap_or(0.0)))?;
    let count = slow.len();
    let summary = format!(
        "{count} checkpoints with a slow sync phase in {} (up to {} s; longest single file {} s): the storage stalls on fsync",
        window.describe(),
        worst_sync.map_or("?".into(), secs),
        worst_file.map_or("?".into(), secs),
    );
    let mut details = vec![format!(
        "Thresholds: sync phase over {} s or one file's fsync over {} s. The worst checkpoint completed at {}: sync={} s over {} files, longest={} s, write={} s, total={} s.",
        secs(rule.sync_s),
        secs(rule.longest_file_s),
        worst.completed_at.map(crate::timefmt::rfc3339).unwrap_or_default(),
        worst.sync_s.map_or("?".into(), secs),
        worst.sync_files.map_or("?".into(), |n| n.to_string()),
        worst.sync_longest_s.map_or("?".into(), secs),
        worst.write_s.map_or("?".into(), secs),
        worst.total_s.map_or("?".into(), secs),
    )];
    details.extend(flush_advice(settings));
    Some(Finding {
        rule: SlowSync::ID,
        key: String::new(),
        severity: Severity::Warning,
        summary,
        details,
        figures: json!({
            "count": count,
            "max_sync_s": worst_sync,
            "max_longest_s": worst_file,
            "sync_s_threshold": rule.sync_s,
            "longest_file_s_threshold": rule.longest_file_s,
            "worst_at": worst.completed_at.map(crate::timefmt::rfc3339),
            "checkpoint_flush_after": settings.values.get("checkpoint_flush_after").map(|v| &v.value),
            "backend_flush_after": settings.values.get("backend_flush_after").map(|v| &v.value),
            "window": window.figures(),
        }),
        suggestion: None,
        evidence_at: Some(last),
    })
}

fn max(acc: Option<f64>, v: f64) -> Option<f64> {
    Some(acc.map_or(v, |a| a.max(v)))
}

/// What to look at, from the settings in effect: the flush-after settings
/// (effective on Linux, where PostgreSQL can use sync_file_range) and the
/// kernel's dirty-page limits.
fn flush_advice(settings: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    let value = |name: &str| settings.values.get(name).map(|v| v.value.clone());
    match (settings.mb("checkpoint_flush_after"), value("checkpoint_flush_after")) {
        (Some(0.0), Some(v)) => out.push(format!(
            "checkpoint_flush_after = {v}: the checkpointer leaves its writes in the kernel's page cache, so the final fsync has to flush them all at once. PostgreSQL's default on Linux is 256kB, which asks the kernel to write back as the checkpoint goes."
        )),
        (_, Some(v)) => out.push(format!(
            "checkpoint_flush_after = {v} (Linux: the checkpointer asks the kernel to write back every {v}); if the sync phase is still slow, other writers fill the page cache: see backend_flush_after and the kernel limits below."
        )),
        _ => {}
    }
    if let (Some(mb), Some(v)) = (settings.mb("backend_flush_after"), value("backend_flush_after")) {
        if mb == 0.0 {
            out.push(format!(
                "backend_flush_after = {v}: pages written by backends (not the checkpointer) also pile up as dirty pages until the checkpoint's fsync; a value such as 512kB bounds them (Linux only)."
            ));
        }
    }
    out.push("Kernel (Linux): vm.dirty_background_bytes / vm.dirty_bytes (or the _ratio forms, a share of RAM: gigabytes on a large host) set how much dirty data may wait for writeback. Lower limits (e.g. vm.dirty_background_bytes = 64MB) start writeback earlier and shorten the fsync stall.".to_string());
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::test_support::{at, point, settings};
    use super::*;

    fn window() -> Window {
        Window::ending(at("2026-11-22T12:00:00Z"), None, Duration::from_secs(3600))
    }

    fn with(sync: f64, longest: f64) -> CheckpointRow {
        let mut p = point("2026-11-22T11:30:00Z", "time");
        p.sync_s = Some(sync);
        p.sync_longest_s = Some(longest);
        p
    }

    #[test]
    fn thresholds_are_exclusive() {
        let rule = SlowSync::default(); // 5 s, 2 s
        let s = settings(15, &[("checkpoint_flush_after", "256kB"), ("backend_flush_after", "0")]);
        assert_eq!(check(&[with(5.0, 2.0)], &window(), &rule, &s), None, "at the thresholds");
        assert_eq!(check(&[with(1.0, 1.0)], &window(), &rule, &s), None, "under both");
        let f = check(&[with(5.001, 0.1)], &window(), &rule, &s).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("slow_sync", "", Severity::Warning));
        assert_eq!(f.figures["count"], 1);
        assert_eq!(f.figures["max_sync_s"], 5.001);
        assert_eq!(f.figures["max_longest_s"], 0.1);
        assert_eq!(f.evidence_at, Some(at("2026-11-22T11:30:01Z")));
        let f = check(&[with(0.5, 2.001), with(0.1, 0.1), with(7.25, 3.0)], &window(), &rule, &s).unwrap();
        assert_eq!(f.figures["count"], 2);
        assert_eq!(f.figures["max_sync_s"], 7.25);
        assert_eq!(f.figures["max_longest_s"], 3.0);
        assert!(f
            .summary
            .starts_with("2 checkpoints with a slow sync phase in 1h (up to 7.25 s; longest single file 3 s)"));
    }

    #[test]
    fn advice_follows_the_flush_settings() {
        let rule = SlowSync::default();
        let off = settings(15, &[("checkpoint_flush_after", "0"), ("backend_flush_after", "0")]);
        let f = check(&[with(9.0, 1.0)], &window(), &rule, &off).unwrap();
        assert!(
            f.details[1].starts_with("checkpoint_flush_after = 0: the checkpointer leaves its writes"),
            "{:?}",
            f.details
        );
        assert!(f.details[2].starts_with("backend_flush_after = 0:"));
        assert!(f.details[3].contains("vm.dirty_background_bytes"));
        let on = settings(15, &[("checkpoint_flush_after", "256kB"), ("backend_flush_after", "512kB")]);
        let f = check(&[with(9.0, 1.0)], &window(), &rule, &on).unwrap();
        assert_eq!(f.details.len(), 3);
        assert!(f.details[1].starts_with("checkpoint_flush_after = 256kB (Linux"));
    }

    #[test]
    fn outside_the_window_or_unknown_is_quiet() {
        let rule = SlowSync::default();
        let s = settings(15, &[]);
        let mut old = with(30.0, 30.0);
        old.completed_at = Some(at("2026-11-22T10:00:00Z"));
        assert_eq!(check(&[old], &window(), &rule, &s), None);
        let mut unknown = with(0.0, 0.0);
        unknown.sync_s = None;
        unknown.sync_longest_s = None;
        assert_eq!(check(&[unknown], &window(), &rule, &s), None);
    }
}
