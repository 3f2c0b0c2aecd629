//! PostgreSQL's settings as the server defines them, for the versions
//! walwatch reads (9.6 to 18): the names the advice and the alerts use,
//! their units ([`units`]) and defaults ([`defaults`]) per major version,
//! when max_wal_size triggers a checkpoint ([`trigger`]), and how a major
//! version is written. Knowledge only: no store, no files.
//! (GUC, "Grand Unified Configuration", is PostgreSQL's own name for its
//! settings.) [`crate::settings`] finds a cluster's values; `config` checks
//! `[cluster.settings]` against what is here.

pub(crate) mod defaults;
pub(crate) mod trigger;
pub mod units;

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

/// Not a PostgreSQL setting but known the same way: `[cluster.settings]
/// server_version = "11"` (9.6 to 11 do not log their version at start), the
/// log's `starting PostgreSQL 15.18 …`, or the data directory's PG_VERSION.
pub(crate) const SERVER_VERSION: &str = "server_version";

/// A major version as an operator writes it: "9.6" (9), "10" … ; older
/// releases are not supported.
pub(crate) fn parse_version(text: &str) -> Result<u32, String> {
    let t = text.trim();
    match t.parse::<u32>() {
        _ if t == "9.6" => Ok(9),
        Ok(v) if v >= 10 => Ok(v),
        _ => {
            Err(format!("{text:?} is not a PostgreSQL major version walwatch knows: 9.6, 10, 11, … {}", units::NEWEST))
        }
    }
}

/// "9.6" for 9, else the number.
pub(crate) fn version_name(major: u32) -> String {
    if major < 10 {
        "9.6".into()
    } else {
        major.to_string()
    }
}
