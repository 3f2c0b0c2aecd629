//! `too_frequent`: any "checkpoints are occurring too frequently (N seconds
//! apart)" in the window, with the smallest N. PostgreSQL writes it whatever
//! log_checkpoints says, for a WAL-triggered checkpoint less than
//! checkpoint_warning after the previous one.

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Evidence, Finding, Rule, Window};
use crate::config::value;
use crate::model::alert::Severity;
use crate::settings::Settings;
use crate::store::StoreError;

/// `[alerts.too_frequent]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TooFrequent {
    pub(crate) enabled: bool,
    #[serde(with = "value::interval")]
    pub(crate) window: Duration,
}

impl Default for TooFrequent {
    fn default() -> Self {
        TooFrequent { enabled: true, window: Duration::from_secs(3600) }
    }
}

impl Rule for TooFrequent {
    const ID: &'static str = "too_frequent";
    const DOC: &'static str = r#"Any "checkpoints are occurring too frequently" warning in the window (the
smallest seconds-apart is reported). PostgreSQL itself only writes it for
checkpoints closer than checkpoint_warning, so every one is worth a look."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let w = evidence.window(self.window);
        let warnings = evidence.store.events().too_frequent(evidence.cluster, w.start, w.end)?;
        Ok(check(&warnings, &w, evidence.settings).into_iter().collect())
    }
}

/// `warnings`: (log time, seconds apart; i64::MAX when the line had no figure).
pub(crate) fn check(warnings: &[(Timestamp, i64)], window: &Window, settings: &Settings) -> Option<Finding> {
    let inside: Vec<&(Timestamp, i64)> = warnings.iter().filter(|(t, _)| window.contains(*t)).collect();
    let last = inside.iter().map(|(t, _)| *t).max()?;
    let first = inside.iter().map(|(t, _)| *t).min()?;
    let count = inside.len();
    let smallest = inside.iter().map(|(_, s)| *s).filter(|s| *s != i64::MAX).min();
    let warning_s = settings.seconds("checkpoint_warning");
    let apart = smallest.map_or_else(String::new, |s| format!(", the closest {s} s apart"));
    let summary =
        format!("{count} \"checkpoints are occurring too frequently\" warnings in {}{apart}", window.describe());
    let threshold =
        warning_s.map_or_else(|| "checkpoint_warning".to_string(), |s| format!("checkpoint_warning ({s} s)"));
    let details = vec![
        format!(
            "PostgreSQL warned {count} times between {} and {} that a WAL-triggered checkpoint followed the previous one by less than {threshold}.",
            crate::timefmt::rfc3339(first),
            crate::timefmt::rfc3339(last)
        ),
        "Each warning is a checkpoint forced by WAL volume: raise max_wal_size (see the forced_checkpoints alert and `walwatch suggest`). A bulk load can set off a short run of them; a steady stream means the limit is too low for the normal load.".to_string(),
    ];
    Some(Finding {
        rule: TooFrequent::ID,
        key: String::new(),
        severity: Severity::Warning,
        summary,
        details,
        figures: json!({
            "count": count,
            "min_seconds": smallest,
            "first_at": crate::timefmt::rfc3339(first),
            "last_at": crate::timefmt::rfc3339(last),
            "checkpoint_warning_s": warning_s,
            "window": window.figures(),
        }),
        suggestion: None,
        evidence_at: Some(last),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{at, settings};
    use super::*;

    fn window() -> Window {
        Window::ending(at("2026-11-22T12:00:00Z"), None, Duration::from_secs(3600))
    }

    #[test]
    fn one_warning_fires_with_the_smallest_gap() {
        let s = settings(15, &[("checkpoint_warning", "30s")]);
        let warnings = [
            (at("2026-11-22T11:10:00Z"), 14),
            (at("2026-11-22T11:20:00Z"), 3),
            (at("2026-11-22T11:30:00Z"), i64::MAX),
            (at("2026-11-22T10:59:59Z"), 0), // before the window
        ];
        let f = check(&warnings, &window(), &s).unwrap();
        assert_eq!((f.rule, f.key.as_str(), f.severity), ("too_frequent", "", Severity::Warning));
        assert_eq!(f.figures["count"], 3);
        assert_eq!(f.figures["min_seconds"], 3);
        assert_eq!(f.figures["first_at"], "2026-11-22T11:10:00.000+00:00");
        assert_eq!(f.figures["checkpoint_warning_s"], 30.0);
        assert_eq!(f.evidence_at, Some(at("2026-11-22T11:30:00Z")));
        assert_eq!(f.summary, "3 \"checkpoints are occurring too frequently\" warnings in 1h, the closest 3 s apart");

        let f = check(&warnings[..1], &window(), &s).unwrap();
        assert_eq!((f.figures["count"].as_u64(), f.figures["min_seconds"].as_i64()), (Some(1), Some(14)));
        // "0 seconds apart" is a real figure, not a missing one.
        let f = check(&[(at("2026-11-22T11:00:00Z"), 0)], &window(), &s).unwrap();
        assert_eq!(f.figures["min_seconds"], 0);
    }

    #[test]
    fn none_in_the_window_is_quiet() {
        let s = settings(15, &[]);
        assert_eq!(check(&[], &window(), &s), None);
        assert_eq!(check(&[(at("2026-11-22T10:00:00Z"), 1)], &window(), &s), None);
    }
}
