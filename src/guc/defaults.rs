//! PostgreSQL's built-in defaults of the known settings, per major version
//! 9.6 to 18 (guc.c / guc_tables.c of each release, as SHOW prints them).
//!
//! Only checkpoint_completion_target changed in that range (0.5 → 0.9 in 14),
//! and wal_keep_size replaced wal_keep_segments in 13 (both default to 0).
//! checkpoint_flush_after is 256kB on Linux and 0 where the kernel has no
//! sync_file_range; walwatch reads Linux logs, so 256kB.
//! max_wal_size and min_wal_size are 64 and 5 WAL segments: 1GB and 80MB with
//! the usual 16MB segments (a cluster initdb'd with another --wal-segsize
//! should say so in `[cluster.settings]`).

use super::units::NEWEST;

/// The oldest major version walwatch knows; 9.6 is written 9.
pub(crate) const OLDEST: u32 = 9;

/// The default of `name` in major `version` (9 means 9.6), as PostgreSQL
/// spells it; None for a setting walwatch does not know. A version outside
/// 9.6–18 gets the nearest known version's defaults.
pub(crate) fn default(name: &str, version: u32) -> Option<&'static str> {
    let v = version.clamp(OLDEST, NEWEST);
    Some(match name {
        "max_wal_size" => "1GB",
        "min_wal_size" => "80MB",
        "checkpoint_timeout" => "5min",
        "checkpoint_completion_target" if v < 14 => "0.5",
        "checkpoint_completion_target" => "0.9",
        "checkpoint_warning" => "30s",
        "wal_segment_size" => "16MB",
        "fsync" | "full_page_writes" | "synchronous_commit" => "on",
        "commit_delay" => "0",
        "checkpoint_flush_after" => "256kB",
        "backend_flush_after" => "0",
        // Before 13 the setting is wal_keep_segments, also 0: nothing kept.
        "wal_keep_size" | "wal_keep_segments" => "0",
        // What `walwatch doctor` checks of the server's logging.
        "log_checkpoints" if v < 15 => "off",
        "log_checkpoints" => "on",
        "log_line_prefix" if v < 10 => "",
        "log_line_prefix" => "%m [%p] ",
        "log_destination" => "stderr",
        "logging_collector" => "off",
        "log_file_mode" => "0600",
        // initdb writes the locale it ran in; absent, the server's environment decides.
        "lc_messages" => "",
        _ => return None,
    })
}

/// The major version of a version string from the log ("15.18", "9.6.10",
/// "18beta1"): 9 for 9.x, else the first number.
pub(crate) fn major(version: &str) -> Option<u32> {
    let first: String = version.chars().take_while(char::is_ascii_digit).collect();
    first.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guc::KNOWN;

    #[test]
    fn every_known_setting_has_a_default_in_every_version() {
        for v in OLDEST..=NEWEST {
            for name in KNOWN {
                let text = default(name, v).unwrap_or_else(|| panic!("{name} in {v}"));
                crate::guc::units::parse_checked(name, text, Some(v)).unwrap_or_else(|e| panic!("{name} {v}: {e}"));
            }
        }
    }

    #[test]
    fn completion_target_changed_in_14() {
        assert_eq!(default("checkpoint_completion_target", 9), Some("0.5"));
        assert_eq!(default("checkpoint_completion_target", 13), Some("0.5"));
        assert_eq!(default("checkpoint_completion_target", 14), Some("0.9"));
        assert_eq!(default("checkpoint_completion_target", 18), Some("0.9"));
        assert_eq!(default("work_mem", 15), None);
    }

    #[test]
    fn log_checkpoints_is_on_by_default_from_15() {
        assert_eq!(default("log_checkpoints", 14), Some("off"));
        assert_eq!(default("log_checkpoints", 15), Some("on"));
        assert_eq!(default("log_line_prefix", 9), Some(""));
        assert_eq!(default("log_line_prefix", 10), Some("%m [%p] "));
    }

    #[test]
    fn majors() {
        assert_eq!(major("15.18"), Some(15));
        assert_eq!(major("9.6.10"), Some(9));
        assert_eq!(major("18beta1"), Some(18));
        assert_eq!(major("x"), None);
    }
}
