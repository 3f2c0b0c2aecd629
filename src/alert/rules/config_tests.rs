//! The `[alerts.<id>]` tables read through the registry: defaults, every
//! key, and errors that point at the value (file:line:column and key).

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::config::parse;

fn rules(text: &str) -> Result<RuleSet, ConfigError> {
    RuleSet::configure(&parse(text, Path::new("w.toml"))?.alerts)
}

fn error(text: &str) -> String {
    rules(text).unwrap_err().to_string()
}

#[test]
fn defaults_when_absent_or_empty() {
    for text in ["", "[alerts]\n", "[alerts.slow_sync]\n"] {
        let r = rules(text).unwrap();
        assert_eq!(r.get::<SlowSync>(), &SlowSync::default(), "{text:?}");
        assert_eq!(r.enabled().len(), 9, "{text:?}");
    }
    let config = parse("", Path::new("w.toml")).unwrap();
    assert_eq!(config.alerts.reminder_interval, None);
}

#[test]
fn reads_every_key() {
    let text = "[alerts]\nreminder_interval = \"4h\"\n\
         [alerts.forced_checkpoints]\nenabled = false\nwindow = \"30m\"\nmin_count = 3\nmin_share = 0.25\n\
         [alerts.too_frequent]\nwindow = \"2h\"\n\
         [alerts.slow_sync]\nsync_s = 1.5\nlongest_file_s = 0.5\nwindow = \"10m\"\n\
         [alerts.checkpoint_overrun]\nslack = 1.0\n\
         [alerts.checkpoint_logging_missing]\nfactor = 4.0\n\
         [alerts.durability_off]\nsynchronous_commit = false\n\
         [alerts.wal_files_added]\nmin_share = 0.75\nmin_cycles = 10\nwindow = \"7d\"\n\
         [alerts.clock_skew]\nenabled = false\ntolerance = \"30s\"\nwindow = \"2h\"\n";
    let config = parse(text, Path::new("w.toml")).unwrap();
    assert_eq!(config.alerts.reminder_interval, Some(Duration::from_secs(4 * 3600)));
    let r = RuleSet::configure(&config.alerts).unwrap();
    assert_eq!(
        r.get::<ForcedCheckpoints>(),
        &ForcedCheckpoints { enabled: false, window: Duration::from_secs(1800), min_count: 3, min_share: 0.25 }
    );
    assert_eq!(r.get::<TooFrequent>().window, Duration::from_secs(7200));
    assert_eq!(
        r.get::<SlowSync>(),
        &SlowSync { enabled: true, window: Duration::from_secs(600), sync_s: 1.5, longest_file_s: 0.5 }
    );
    assert_eq!(r.get::<CheckpointOverrun>().slack, 1.0);
    assert_eq!(r.get::<LoggingMissing>().factor, 4.0);
    assert!(!r.get::<DurabilityOff>().synchronous_commit);
    assert_eq!(
        r.get::<WalFilesAdded>(),
        &WalFilesAdded { enabled: true, window: Duration::from_secs(7 * 86_400), min_share: 0.75, min_cycles: 10 }
    );
    assert_eq!(
        r.get::<ClockSkew>(),
        &ClockSkew { enabled: false, tolerance: Duration::from_secs(30), window: Duration::from_secs(7200) }
    );
    // The tolerance applies whether clock_skew runs or not.
    assert_eq!(r.clock_skew_tolerance(), Duration::from_secs(30));
    let enabled = r.enabled();
    assert_eq!(
        enabled,
        [
            "too_frequent",
            "slow_sync",
            "checkpoint_overrun",
            "checkpoint_logging_missing",
            "logs_not_read",
            "durability_off",
            "wal_files_added"
        ]
    );
    // wal_files_added still carries the suggestion.
    assert!(r.uses_suggestion());
    let none = rules("[alerts.forced_checkpoints]\nenabled = false\n[alerts.wal_files_added]\nenabled = false\n");
    assert!(!none.unwrap().uses_suggestion());
    let off = parse("[alerts]\nreminder_interval = \"off\"\n", Path::new("w.toml")).unwrap();
    assert_eq!(off.alerts.reminder_interval, None);
}

#[test]
fn errors_point_at_the_value() {
    assert_eq!(
        error("[alerts]\n[alerts.forced_checkpoints]\nmin_share = 1.5\n"),
        "w.toml:3:13: alerts.forced_checkpoints.min_share: a share is above 0 and at most 1, e.g. 0.5, not 1.5"
    );
    // Without the [alerts] header the position is still exact (config/position.rs names no key then).
    assert!(error("[alerts.forced_checkpoints]\nmin_share = 1.5\n").starts_with("w.toml:2:13: "));
    assert_eq!(
        error("[alerts]\n[alerts.wal_files_added]\nmin_cycles = 0\n"),
        "w.toml:3:14: alerts.wal_files_added.min_cycles: must be at least 1, not 0"
    );
    let e = error("[alerts]\nreminder_interval = \"soon\"\n");
    assert!(e.starts_with("w.toml:2:21: alerts.reminder_interval: invalid duration \"soon\""), "{e}");
    let e = error("[alerts.slow_sync]\nsync = 5.0\n");
    assert!(e.starts_with("w.toml:2:1: ") && e.contains("unknown field `sync`"), "{e}");
    assert_eq!(
        error("[alerts]\n[alerts.no_such_rule]\nenabled = true\n"),
        "w.toml:2:9: alerts: unknown field `no_such_rule`, expected one of `reminder_interval`, \
         `forced_checkpoints`, `too_frequent`, `slow_sync`, `checkpoint_overrun`, `checkpoint_logging_missing`, \
         `logs_not_read`, `durability_off`, `wal_files_added`, `clock_skew`"
    );
    let e = error("[alerts.checkpoint_overrun]\nslack = 0.5\n");
    assert!(e.ends_with("slack is a factor from 1 to 10, e.g. 1.1, not 0.5"), "{e}");
    assert_eq!(
        error("[alerts]\n[alerts.clock_skew]\ntolerance = \"2h\"\n"),
        "w.toml:3:13: alerts.clock_skew.tolerance: tolerance is at most \"1h\" (a wrong log_timezone is off by whole hours), e.g. \"5m\", not \"2h\""
    );
    assert_eq!(
        rules("[alerts.clock_skew]\ntolerance = \"1h\"\n").unwrap().clock_skew_tolerance(),
        Duration::from_secs(3600)
    );
    let e = error("[alerts]\n[alerts.clock_skew]\ntolerance = \"0s\"\n");
    assert!(e.contains("alerts.clock_skew.tolerance: duration \"0s\" must be positive"), "{e}");
    let e = error("[alerts]\n[alerts.slow_sync]\nsync_s = -1.0\n");
    assert!(e.contains("alerts.slow_sync.sync_s: sync_s is a number of seconds above 0"), "{e}");
    let e = error("[alerts]\n[alerts.slow_sync]\nwindow = \"soon\"\n");
    assert!(e.starts_with("w.toml:3:10: alerts.slow_sync.window: invalid duration \"soon\""), "{e}");
    let e = error("[alerts]\nslow_sync = 3\n");
    assert!(e.starts_with("w.toml:2:13: alerts.slow_sync: "), "{e}");
}
