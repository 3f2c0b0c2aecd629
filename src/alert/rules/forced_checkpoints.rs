//! `forced_checkpoints`: WAL-triggered checkpoints (`checkpoint starting:
//! wal`, `xlog` before 12; restartpoints too) in the window. Told apart by
//! the start reason, never by a requested-checkpoint counter, which also
//! counts manual, backup and shutdown checkpoints.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{percent, Evidence, Finding, Rule, Window};
use crate::analyze::sizing::Suggestion;
use crate::analyze::storm::{self, Pacing, PacingTimeline};
use crate::config::value;
use crate::model::alert::{Severity, SuggestionText};
use crate::model::event::{PointKind, Trigger};
use crate::store::CheckpointRow;
use crate::store::StoreError;

/// `[alerts.forced_checkpoints]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ForcedCheckpoints {
    pub(crate) enabled: bool,
    #[serde(with = "value::interval")]
    pub(crate) window: Duration,
    /// At least this many WAL-triggered checkpoints in the window …
    #[serde(deserialize_with = "value::at_least_one")]
    pub(crate) min_count: u32,
    /// … making at least this share of the WAL- and time-triggered ones.
    #[serde(deserialize_with = "value::share")]
    pub(crate) min_share: f64,
}

impl Default for ForcedCheckpoints {
    fn default() -> Self {
        ForcedCheckpoints { enabled: true, window: Duration::from_secs(3600), min_count: 2, min_share: 0.1 }
    }
}

impl Rule for ForcedCheckpoints {
    const ID: &'static str = "forced_checkpoints";
    const DOC: &'static str = r#"WAL-triggered checkpoints ("checkpoint starting: wal"): max_wal_size is too
small for the WAL written. The notice carries the max_wal_size suggestion
and its SQL. Fires with at least min_count of them in the window making at
least min_share of the WAL- and time-triggered ones. One lone forced
checkpoint (a bulk COPY, a CREATE INDEX) is the "occasional" case the
PostgreSQL docs call no cause for alarm; two within an hour that are also
a tenth of the checkpoints (2 of 14 at checkpoint_timeout = 5min) mean the
normal load outruns max_wal_size."#;
    const USES_SUGGESTION: bool = true;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let w = evidence.window(self.window);
        Ok(check(&evidence.points(&w)?, &w, self, evidence.suggestion).into_iter().collect())
    }
}

pub(crate) fn check(
    points: &[CheckpointRow],
    window: &Window,
    rule: &ForcedCheckpoints,
    suggestion: Option<&Suggestion>,
) -> Option<Finding> {
    let started: Vec<(&CheckpointRow, jiff::Timestamp)> =
        points.iter().filter_map(|p| Some((p, p.started_at?))).filter(|(_, t)| window.contains(*t)).collect();
    let trigger = |p: &CheckpointRow, t: Trigger| p.trigger == Some(t);
    let forced: Vec<jiff::Timestamp> = started.iter().filter(|(p, _)| trigger(p, Trigger::Wal)).map(|(_, t)| *t).collect();
    let timed = started.iter().filter(|(p, _)| trigger(p, Trigger::Time)).count();
    let other = started.len() - forced.len() - timed;
    let count = forced.len();
    let share = if count + timed == 0 { 0.0 } else { count as f64 / (count + timed) as f64 };
    if count < rule.min_count as usize || share < rule.min_share {
        return None;
    }
    let restartpoints = started.iter().filter(|(p, _)| trigger(p, Trigger::Wal) && p.kind == PointKind::Restartpoint).count();
    let summary = format!(
        "{count} WAL-triggered checkpoints in {} ({} of the WAL- and time-triggered ones): max_wal_size is too small for the WAL written",
        window.describe(),
        percent(share)
    );
    let mut details = vec![
        format!(
            "In the {} up to {}: {count} checkpoints started because of WAL volume (`wal`), {timed} on schedule (`time`), {other} for other reasons (manual, shutdown, recovery).",
            window.describe(),
            crate::timefmt::rfc3339(window.end)
        ),
        "PostgreSQL starts a checkpoint early once the WAL written since the last one reaches about max_wal_size / (1 + checkpoint_completion_target) (PostgreSQL 11+), and paces every checkpoint against WAL as well as time: it aims to finish its writes before checkpoint_completion_target of that distance is written again, so at a high WAL rate it writes in seconds what a timed checkpoint spreads over minutes. Such checkpoints come more often than checkpoint_timeout, write the same hot pages again, and make every first change of a page after them log a full-page image, which adds more WAL.".to_string(),
    ];
    if restartpoints > 0 {
        details.push(format!("{restartpoints} of them are restartpoints on a standby: its own max_wal_size applies."));
    }
    let pacing = suggestion.and_then(|s| PacingTimeline::new(&s.current, Vec::new()).at(window.end));
    let largest = largest_storm(&started, pacing);
    details.extend(largest.as_ref().map(Storm::sentence));
    let advice = suggestion.and_then(advice);
    if advice.is_none() {
        details.push(no_advice(suggestion));
    }
    Some(Finding {
        rule: ForcedCheckpoints::ID,
        key: String::new(),
        severity: Severity::Warning,
        summary,
        details,
        figures: json!({
            "count": count,
            "timed": timed,
            "other": other,
            "restartpoints": restartpoints,
            "share": share,
            "min_count": rule.min_count,
            "min_share": rule.min_share,
            "first_at": forced.iter().min().map(|t| crate::timefmt::rfc3339(*t)),
            "last_at": forced.iter().max().map(|t| crate::timefmt::rfc3339(*t)),
            "suggested_max_wal_size_mb": suggestion.and_then(|s| s.suggested.max_wal_size_mb),
            "largest_write_mb": largest.as_ref().map(|l| l.mb),
            "largest_write_s": largest.as_ref().map(|l| l.write_s),
            "largest_pace_ratio": largest.as_ref().and_then(|l| l.pace_ratio),
            "window": window.figures(),
        }),
        suggestion: advice,
        evidence_at: forced.iter().max().copied(),
    })
}

/// The forced checkpoint that wrote the most, as the notice tells it.
#[derive(Debug, Clone, PartialEq)]
struct Storm {
    mb: f64,
    write_s: f64,
    pace_ratio: Option<f64>,
    spread_s: Option<f64>,
}

impl Storm {
    fn sentence(&self) -> String {
        let rate = self.mb / self.write_s;
        let pace = match (self.pace_ratio, self.spread_s) {
            (Some(ratio), Some(spread)) => format!(
                ": {ratio:.0}x the pace of a timed checkpoint, which spreads its writes over \
                 checkpoint_completion_target x checkpoint_timeout = {spread:.0} s"
            ),
            _ => String::new(),
        };
        format!(
            "The largest of them wrote {:.1} MB in {:.3} s ({rate:.1} MB/s){pace}.",
            self.mb, self.write_s
        )
    }
}

/// Of the WAL-triggered checkpoints, the one that wrote the most buffers
/// (with a write time to measure it by).
fn largest_storm(started: &[(&CheckpointRow, jiff::Timestamp)], pacing: Option<Pacing>) -> Option<Storm> {
    let forced = started.iter().map(|(p, _)| *p).filter(|p| p.trigger == Some(Trigger::Wal));
    let written = forced.filter_map(|p| Some((p, p.buffers_written?, p.write_s.filter(|w| *w > 0.0)?)));
    let (row, buffers, write_s) = written.max_by_key(|(_, b, _)| *b)?;
    Some(Storm {
        mb: buffers as f64 * storm::BLOCK_BYTES / (1024.0 * 1024.0),
        write_s,
        pace_ratio: pacing.and_then(|p| storm::pace_ratio(p, row.trigger, Some(write_s))),
        spread_s: pacing.map(|p| p.spread_s()),
    })
}

/// The max_wal_size advice and its SQL, when sizing has one.
fn advice(s: &Suggestion) -> Option<SuggestionText> {
    let sql = s.sql.clone()?;
    s.suggested.max_wal_size_mb?;
    Some(SuggestionText { text: s.explanation.clone(), sql })
}

fn no_advice(s: Option<&Suggestion>) -> String {
    match s.and_then(|s| s.explanation.first()) {
        Some(why) => format!("No max_wal_size value can be suggested yet: {why}"),
        None => "No max_wal_size value can be suggested yet (see `walwatch suggest`).".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::test_support::{at, point};
    use super::*;
    use crate::analyze::sizing::{Basis, Cost, Suggested};
    use crate::settings::Settings;

    fn window() -> Window {
        Window::ending(at("2026-11-22T12:00:00Z"), None, Duration::from_secs(3600))
    }

    fn rows(wal: usize, time: usize, manual: usize) -> Vec<CheckpointRow> {
        let mut out = Vec::new();
        let mut minute = 1;
        for (n, trigger) in [(wal, "wal"), (time, "time"), (manual, "manual")] {
            for _ in 0..n {
                out.push(point(&format!("2026-11-22T11:{minute:02}:00Z"), trigger));
                minute += 1;
            }
        }
        out
    }

    fn suggestion(sql: Option<&str>) -> Suggestion {
        Suggestion {
            cluster: "main".into(),
            current: Settings::default(),
            suggested: Suggested { max_wal_size_mb: sql.map(|_| 2048), min_wal_size_mb: None },
            basis: Basis {
                samples: 12,
                window: "7d".into(),
                peak_wal_rate_kb_s: Some(3000.0),
                projected_wal_per_timeout_mb: Some(900.0),
                forced_checkpoints: 3,
                forced_at_current_settings: 3,
                timed_checkpoints: 9,
                too_frequent: 0,
                checkpoints_without_distance: 0,
                settings_changed: None,
                left_out: Default::default(),
            },
            confidence: crate::analyze::sizing::Confidence::High,
            cost: Cost {
                pg_wal_mb: None,
                crash_recovery_wal_mb: None,
                replay_mb_s: None,
                replay_measured_at: None,
                crash_recovery_s: None,
            },
            bounds: None,
            curve: Vec::new(),
            explanation: vec!["Peak WAL rate 3000 kB/s.".into(), "2048MB = …".into()],
            sql: sql.map(String::from),
        }
    }

    #[test]
    fn fires_at_min_count_and_min_share() {
        let rule = ForcedCheckpoints::default(); // 2 and 0.1
        let f = check(&rows(2, 18, 3), &window(), &rule, None).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("forced_checkpoints", "", Severity::Warning));
        assert_eq!(f.figures["count"], 2);
        assert_eq!(f.figures["timed"], 18);
        assert_eq!(f.figures["other"], 3);
        assert_eq!(f.figures["share"], 0.1);
        assert_eq!(f.figures["first_at"], "2026-11-22T11:01:00.000+00:00");
        assert_eq!(f.figures["last_at"], "2026-11-22T11:02:00.000+00:00");
        assert_eq!(f.evidence_at, Some(at("2026-11-22T11:02:00Z")));
        assert!(f.summary.starts_with("2 WAL-triggered checkpoints in 1h (10% of"), "{}", f.summary);
        assert_eq!(f.suggestion, None);
        assert!(f.details.last().unwrap().starts_with("No max_wal_size value can be suggested yet"));
    }

    #[test]
    fn below_either_threshold_is_quiet() {
        let rule = ForcedCheckpoints::default();
        assert_eq!(check(&rows(1, 0, 0), &window(), &rule, None), None, "one is below min_count");
        assert_eq!(check(&rows(2, 19, 0), &window(), &rule, None), None, "2/21 is below 10%");
        assert_eq!(check(&[], &window(), &rule, None), None);
        // Manual and shutdown checkpoints never count as forced, however many.
        assert_eq!(check(&rows(0, 0, 50), &window(), &rule, None), None);
    }

    #[test]
    fn only_points_started_inside_the_window() {
        let rule = ForcedCheckpoints::default();
        let mut points = rows(1, 0, 0);
        points.push(point("2026-11-22T10:59:59Z", "wal"));
        assert_eq!(check(&points, &window(), &rule, None), None);
        points.push(point("2026-11-22T11:00:00Z", "wal"));
        assert_eq!(check(&points, &window(), &rule, None).unwrap().figures["count"], 2);
    }

    #[test]
    fn carries_the_max_wal_size_suggestion() {
        let sql = "ALTER SYSTEM SET max_wal_size = '2GB'; SELECT pg_reload_conf();";
        let s = suggestion(Some(sql));
        let f = check(&rows(3, 1, 0), &window(), &ForcedCheckpoints::default(), Some(&s)).unwrap();
        assert_eq!(f.suggestion, Some(SuggestionText { text: s.explanation.clone(), sql: sql.into() }));
        assert_eq!(f.figures["suggested_max_wal_size_mb"], 2048);
        assert_eq!(f.figures["share"], 0.75);
        // Sizing without a value (too few samples): the reason is in the details.
        let s = suggestion(None);
        let f = check(&rows(3, 1, 0), &window(), &ForcedCheckpoints::default(), Some(&s)).unwrap();
        assert_eq!(f.suggestion, None);
        assert_eq!(f.details.last().unwrap(), "No max_wal_size value can be suggested yet: Peak WAL rate 3000 kB/s.");
    }

    #[test]
    fn counts_restartpoints_separately_too() {
        let mut points = rows(3, 0, 1);
        points[1].kind = PointKind::Restartpoint;
        // A manual restartpoint is not a forced one.
        points[3].kind = PointKind::Restartpoint;
        let f = check(&points, &window(), &ForcedCheckpoints::default(), None).unwrap();
        assert_eq!((f.figures["count"].as_u64(), f.figures["restartpoints"].as_u64()), (Some(3), Some(1)));
        let standby = "1 of them are restartpoints on a standby: its own max_wal_size applies.";
        assert!(f.details.iter().any(|d| d == standby), "{:?}", f.details);
        // None among them: no word of standbys.
        let f = check(&rows(3, 0, 1), &window(), &ForcedCheckpoints::default(), None).unwrap();
        assert_eq!(f.figures["restartpoints"].as_u64(), Some(0));
        assert!(!f.details.iter().any(|d| d.contains("restartpoints on a standby")), "{:?}", f.details);
    }

    /// The notice names the forced checkpoint that wrote the most, its rate,
    /// and its pace once checkpoint_timeout is known (30 s x 0.9 = 27 s).
    #[test]
    fn the_largest_forced_checkpoint_is_told_with_its_pace() {
        let rule = ForcedCheckpoints::default();
        let mut points = rows(3, 1, 0);
        for (p, (buffers, write_s)) in points.iter_mut().zip([(2096, 2.67), (4000, 0.0), (100, 1.0), (9000, 270.0)]) {
            (p.buffers_written, p.write_s) = (Some(buffers), Some(write_s));
        }
        let f = check(&points, &window(), &rule, None).unwrap();
        let told = "The largest of them wrote 16.4 MB in 2.670 s (6.1 MB/s).";
        assert_eq!(f.details.iter().filter(|d| d.starts_with("The largest")).collect::<Vec<_>>(), [told]);
        assert_eq!((f.figures["largest_write_s"].as_f64(), f.figures["largest_pace_ratio"].as_f64()), (Some(2.67), None));
        let mut known = suggestion(Some("ALTER SYSTEM SET max_wal_size = '2GB';"));
        known.current = Settings::defaults(Some(15));
        known.current.defaults_read = true;
        known.current.values.get_mut("checkpoint_timeout").unwrap().value = "30s".into();
        let f = check(&points, &window(), &rule, Some(&known)).unwrap();
        let told = "The largest of them wrote 16.4 MB in 2.670 s (6.1 MB/s): 10x the pace of a timed checkpoint, \
                    which spreads its writes over checkpoint_completion_target x checkpoint_timeout = 27 s.";
        assert_eq!(f.details.iter().filter(|d| d.starts_with("The largest")).collect::<Vec<_>>(), [told]);
        assert_eq!(f.figures["largest_pace_ratio"].as_f64(), Some(27.0 / 2.67));
        assert_eq!(f.figures["largest_write_mb"].as_f64(), Some(2096.0 / 128.0));
        // No forced checkpoint with a write time: no sentence.
        let mut unmeasured = rows(3, 1, 0);
        unmeasured.iter_mut().for_each(|p| p.write_s = None);
        let f = check(&unmeasured, &window(), &rule, None).unwrap();
        assert!(!f.details.iter().any(|d| d.starts_with("The largest")), "{:?}", f.details);
    }
}
