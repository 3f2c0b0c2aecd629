//! `wal_files_added`: most checkpoint cycles had to create new WAL segment
//! files (`N WAL file(s) added`) instead of recycling old ones: min_wal_size
//! is below the WAL a cycle needs, and backends wait while new 16 MB files
//! are created and zero-filled.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{percent, Evidence, Finding, Rule, Window};
use crate::model::event::Trigger;
use crate::analyze::sizing::Suggestion;
use crate::config::value;
use crate::model::alert::{Severity, SuggestionText};
use crate::settings::Settings;
use crate::store::CheckpointRow;
use crate::store::StoreError;

/// `[alerts.wal_files_added]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct WalFilesAdded {
    pub(crate) enabled: bool,
    #[serde(with = "value::interval")]
    pub(crate) window: Duration,
    /// The share of cycles that added WAL files …
    #[serde(deserialize_with = "value::share")]
    pub(crate) min_share: f64,
    /// … over at least this many cycles.
    #[serde(deserialize_with = "value::at_least_one")]
    pub(crate) min_cycles: u32,
}

impl Default for WalFilesAdded {
    fn default() -> Self {
        WalFilesAdded { enabled: true, window: Duration::from_secs(86_400), min_share: 0.5, min_cycles: 6 }
    }
}

impl Rule for WalFilesAdded {
    const ID: &'static str = "wal_files_added";
    const DOC: &'static str = r#"New WAL files created ("N WAL file(s) added") on at least min_share of at
least min_cycles WAL- and time-triggered checkpoints in the window:
min_wal_size is below what a cycle uses, and backends wait while files are
created. A day covers the daily load cycle; "most" (half) of six or more
cycles is a pattern, not a burst."#;
    const USES_SUGGESTION: bool = true;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let w = evidence.window(self.window);
        let points = evidence.points(&w)?;
        Ok(check(&points, &w, self, evidence.settings, evidence.suggestion).into_iter().collect())
    }
}

pub(crate) fn check(
    points: &[CheckpointRow],
    window: &Window,
    rule: &WalFilesAdded,
    settings: &Settings,
    suggestion: Option<&Suggestion>,
) -> Option<Finding> {
    // Load-driven cycles only: a shutdown or manual checkpoint says nothing about the steady state.
    let cycle = |p: &&CheckpointRow| matches!(p.trigger, Some(Trigger::Wal | Trigger::Time));
    let inside = |p: &&CheckpointRow| p.completed_at.is_some_and(|t| window.contains(t));
    let cycles: Vec<(&CheckpointRow, i64)> =
        points.iter().filter(cycle).filter(inside).filter_map(|p| Some((p, p.wal_files_added?))).collect();
    let adding: Vec<&(&CheckpointRow, i64)> = cycles.iter().filter(|(_, n)| *n > 0).collect();
    let share = if cycles.is_empty() { 0.0 } else { adding.len() as f64 / cycles.len() as f64 };
    if cycles.len() < rule.min_cycles as usize || share < rule.min_share {
        return None;
    }
    let files: i64 = adding.iter().map(|(_, n)| n).sum();
    let min_wal = settings.mb("min_wal_size");
    let suggested = suggestion.and_then(|s| s.suggested.min_wal_size_mb);
    let summary = format!(
        "{} of {} checkpoint cycles in {} created new WAL files ({files} files): min_wal_size{} is too small",
        adding.len(),
        cycles.len(),
        window.describe(),
        min_wal.map_or(String::new(), |mb| format!(" ({mb} MB)")),
    );
    let details = vec![
        format!(
            "{} of the WAL- and time-triggered checkpoints that completed in the {} up to {} added WAL segment files instead of recycling old ones.",
            percent(share),
            window.describe(),
            crate::timefmt::rfc3339(window.end)
        ),
        "PostgreSQL keeps at least min_wal_size of WAL files for reuse; when a cycle needs more, new files are created and zero-filled while backends wait for them. A min_wal_size that covers the WAL of a normal cycle avoids it, at the cost of that much disk in pg_wal.".to_string(),
    ];
    let advice = suggested.map(|mb| SuggestionText {
        text: vec![format!(
            "Set min_wal_size to {mb} MB, the WAL a normal checkpoint cycle uses (see `walwatch suggest`)."
        )],
        sql: format!("ALTER SYSTEM SET min_wal_size = '{mb}MB'; SELECT pg_reload_conf();"),
    });
    Some(Finding {
        rule: WalFilesAdded::ID,
        key: String::new(),
        severity: Severity::Info,
        summary,
        details,
        figures: json!({
            "cycles": cycles.len(),
            "cycles_adding": adding.len(),
            "files_added": files,
            "share": share,
            "min_wal_size_mb": min_wal,
            "suggested_min_wal_size_mb": suggested,
            "window": window.figures(),
        }),
        suggestion: advice,
        evidence_at: adding.iter().filter_map(|(p, _)| p.completed_at).max(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::test_support::{at, point, settings};
    use super::*;

    fn window() -> Window {
        Window::ending(at("2026-11-22T12:00:00Z"), None, Duration::from_secs(86_400))
    }

    fn cycles(adding: &[i64]) -> Vec<CheckpointRow> {
        adding
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut p = point(&format!("2026-11-22T11:{i:02}:00Z"), if i % 2 == 0 { "wal" } else { "time" });
                p.wal_files_added = Some(*n);
                p
            })
            .collect()
    }

    #[test]
    fn fires_when_most_cycles_add_files() {
        let rule = WalFilesAdded::default(); // 0.5 of at least 6
        let s = settings(15, &[("min_wal_size", "80MB")]);
        let f = check(&cycles(&[1, 2, 0, 3, 0, 0]), &window(), &rule, &s, None).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("wal_files_added", "", Severity::Info));
        assert_eq!(f.figures["cycles"], 6);
        assert_eq!(f.figures["cycles_adding"], 3);
        assert_eq!(f.figures["files_added"], 6);
        assert_eq!(f.figures["share"], 0.5);
        assert_eq!(f.figures["min_wal_size_mb"], 80.0);
        assert_eq!(f.evidence_at, Some(at("2026-11-22T11:03:01Z")));
        assert_eq!(f.suggestion, None);
    }

    #[test]
    fn quiet_below_share_or_cycles() {
        let rule = WalFilesAdded::default();
        let s = settings(15, &[]);
        assert_eq!(check(&cycles(&[1, 0, 0, 3, 0, 0]), &window(), &rule, &s, None), None, "2 of 6");
        assert_eq!(check(&cycles(&[1, 1, 1, 1, 1]), &window(), &rule, &s, None), None, "5 cycles only");
        // Manual and shutdown checkpoints are not cycles.
        let mut points = cycles(&[1, 1, 1, 0, 0, 0]);
        points[0].trigger = Some(Trigger::Shutdown);
        assert_eq!(check(&points, &window(), &rule, &s, None), None);
    }
}
