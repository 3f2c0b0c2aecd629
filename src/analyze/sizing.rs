//! The max_wal_size suggestion from observed WAL distance. (Being written:
//! the model is documented here once implemented.)

use jiff::Timestamp;
use serde::Serialize;

use crate::config::AdviceSection;
use crate::settings::Settings;
use crate::store::{Store, StoreError};

/// `walwatch suggest --format json`; the keys are a public interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    pub cluster: String,
    /// The settings the advice used, each with its source.
    pub current: Settings,
    pub suggested: Suggested,
    pub basis: Basis,
    /// Sentences, in order: what was seen, the formula with numbers, the cost, the confidence.
    pub explanation: Vec<String>,
    /// `ALTER SYSTEM …; SELECT pg_reload_conf();` or None when nothing should change.
    pub sql: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggested {
    pub max_wal_size_mb: Option<u64>,
    pub min_wal_size_mb: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Basis {
    /// Usable checkpoint cycles in the window.
    pub samples: usize,
    /// The lookback window, e.g. "7d".
    pub window: String,
    pub peak_wal_rate_kb_s: Option<f64>,
    pub projected_wal_per_timeout_mb: Option<f64>,
    pub forced_checkpoints: i64,
    pub timed_checkpoints: i64,
    pub too_frequent: i64,
}

/// The suggestion for `cluster` from its history in the lookback window before `now`.
pub fn suggest(
    _store: &Store,
    _cluster: &str,
    _settings: &Settings,
    _advice: &AdviceSection,
    _now: Timestamp,
) -> Result<Suggestion, StoreError> {
    todo!("sizing")
}
