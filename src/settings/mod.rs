//! What walwatch knows about a cluster's settings, and where each value came
//! from. Sources, most trusted first: `[cluster.settings]` in walwatch's
//! config, the server's postgresql.conf (+ postgresql.auto.conf, include,
//! include_dir), `parameter "X" changed to "Y"` lines in the log, and the
//! defaults of the server's major version.
//!
//! The store keeps the timeline (table `setting`): [`refresh`] records the
//! config and conf-file values, the log's changes are recorded as they are
//! imported; [`current`] reads the store only, so `walwatch suggest` works
//! for a user who cannot read postgresql.conf.

use jiff::Timestamp;
use serde::Serialize;
use std::collections::BTreeMap;

use crate::config::ClusterConfig;
use crate::store::{Store, StoreError};

/// The settings the advice and the alerts read.
pub const KNOWN: [&str; 13] = [
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "checkpoint_warning",
    "wal_segment_size",
    "fsync",
    "full_page_writes",
    "synchronous_commit",
    "commit_delay",
    "checkpoint_flush_after",
    "backend_flush_after",
    "wal_keep_size",
];

/// Where a value came from, most trusted first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `[cluster.settings]` in walwatch's config.
    Config,
    /// postgresql.conf or a file it includes, or postgresql.auto.conf.
    ConfFile { path: String, line: usize },
    /// A `parameter "X" changed to "Y"` line.
    Log {
        #[serde(serialize_with = "crate::timefmt::serialize")]
        at: Timestamp,
    },
    /// PostgreSQL's default for the server's major version (or the newest when unknown).
    Default { version: Option<u32> },
}

/// One setting's value as PostgreSQL spells it ("1GB", "5min", "on").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value {
    pub value: String,
    pub source: Source,
}

/// The values in effect, by setting name, with the server's major version.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Settings {
    pub version: Option<u32>,
    pub values: BTreeMap<String, Value>,
}

impl Settings {
    /// A memory setting in MB (max_wal_size, min_wal_size, wal_segment_size, wal_keep_size).
    pub fn mb(&self, _name: &str) -> Option<f64> {
        todo!("settings: unit conversion")
    }
    /// A time setting in seconds (checkpoint_timeout, checkpoint_warning, commit_delay).
    pub fn seconds(&self, _name: &str) -> Option<f64> {
        todo!("settings: unit conversion")
    }
    /// A plain number (checkpoint_completion_target).
    pub fn number(&self, _name: &str) -> Option<f64> {
        todo!("settings: number")
    }
    /// A boolean (fsync, full_page_writes); PostgreSQL's spellings (on/off/true/1/yes…).
    pub fn flag(&self, _name: &str) -> Option<bool> {
        todo!("settings: boolean")
    }
}

/// Records what `[cluster.settings]` and the server's conf files say now.
pub fn refresh(_store: &mut Store, _cluster: &ClusterConfig, _now: Timestamp) -> Result<(), StoreError> {
    todo!("settings: refresh")
}

/// The values in effect now for `cluster`, from the store, defaults filled in.
pub fn current(_store: &Store, _cluster: &str) -> Result<Settings, StoreError> {
    todo!("settings: current")
}
