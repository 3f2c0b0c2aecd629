//! What the advice's models both read: PostgreSQL's WAL settings as
//! numbers ([`Params`]) and the percentile rule. Apart from the models, so
//! that the sizing model may replay the window through `whatif` and
//! `whatif` may read the settings without either reaching back up.

use crate::settings::Settings;

/// The numbers the model needs, out of the settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Params {
    pub(crate) max_wal_size_mb: f64,
    pub(crate) min_wal_size_mb: f64,
    pub(crate) timeout_s: f64,
    pub(crate) completion_target: f64,
    pub(crate) segment_mb: f64,
    pub(crate) wal_keep_mb: f64,
    pub(crate) version: Option<u32>,
}

impl Params {
    /// Settings are filled with version defaults by `settings::current`;
    /// the fallbacks here are PostgreSQL 14+'s defaults for a partial set.
    pub(crate) fn from_settings(s: &Settings) -> Params {
        Params {
            max_wal_size_mb: s.mb("max_wal_size").unwrap_or(1024.0),
            min_wal_size_mb: s.mb("min_wal_size").unwrap_or(80.0),
            timeout_s: s.seconds("checkpoint_timeout").unwrap_or(300.0),
            completion_target: s.number("checkpoint_completion_target").unwrap_or(0.9),
            segment_mb: s.mb("wal_segment_size").filter(|m| *m > 0.0).unwrap_or(16.0),
            wal_keep_mb: s.mb("wal_keep_size").unwrap_or(0.0),
            version: s.version,
        }
    }

    /// 1 + cct from PG 11 on; 2 + cct in 9.6 and 10, which kept two cycles of WAL.
    pub(crate) fn divisor(&self) -> f64 {
        crate::guc::trigger::divisor(self.version, self.completion_target)
    }

    /// WAL since the last REDO at which a checkpoint is requested, in MB.
    pub(crate) fn trigger_mb(&self, max_wal_size_mb: f64) -> f64 {
        let segments = (max_wal_size_mb / self.segment_mb / self.divisor()).floor().max(1.0);
        (segments - 1.0) * self.segment_mb
    }

    /// For tests: PostgreSQL `version` at its defaults (max_wal_size 1GB,
    /// min_wal_size 80MB, checkpoint_timeout 5min, cct 0.9, 16 MB segments,
    /// no wal_keep_size).
    #[cfg(test)]
    pub(crate) fn test_defaults(version: u32) -> Params {
        Params {
            max_wal_size_mb: 1024.0,
            min_wal_size_mb: 80.0,
            timeout_s: 300.0,
            completion_target: 0.9,
            segment_mb: 16.0,
            wal_keep_mb: 0.0,
            version: Some(version),
        }
    }
}

/// Nearest-rank percentile: the smallest value with at least p% of the values at or below it.
pub(crate) fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}
