use super::*;
use crate::settings::ValueSource;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn change(at: &str, name: &str, old: Option<&str>, new: Option<&str>) -> SettingChange {
    SettingChange {
        at: t(at),
        name: name.into(),
        old: old.map(String::from),
        new: new.map(String::from),
        source: ValueSource::Log { at: t(at) },
    }
}

const FIVE_MIN: Pacing = Pacing { timeout_s: 300.0, completion_target: 0.9 };

#[test]
fn write_rate_is_buffers_times_the_block_over_the_write_time() {
    // 37 120 buffers of 8 kB = 290 MB, written in 9.7 s.
    let rate = write_mb_s(Some(37_120), Some(9.7)).unwrap();
    assert!((rate - 290.0 / 9.7).abs() < 1e-9, "{rate}");
    assert_eq!(write_mb_s(Some(128), Some(2.0)), Some(0.5));
    assert_eq!(write_mb_s(Some(0), Some(2.0)), Some(0.0));
    assert_eq!(write_mb_s(Some(128), Some(0.0)), None);
    assert_eq!(write_mb_s(None, Some(1.0)), None);
    assert_eq!(write_mb_s(Some(1), None), None);
    assert_eq!(write_mb_s(Some(-1), Some(1.0)), None);
}

#[test]
fn pace_ratio_is_the_timed_spread_over_the_write_time() {
    let wal = Some(Trigger::Wal);
    assert_eq!(pace_ratio(FIVE_MIN, wal, Some(9.0)), Some(30.0));
    assert_eq!(pace_ratio(FIVE_MIN, Some(Trigger::Time), Some(270.0)), Some(1.0));
    assert_eq!(pace_ratio(FIVE_MIN, wal, Some(0.0)), None);
    assert_eq!(pace_ratio(FIVE_MIN, wal, None), None);
    for unpaced in [None, Some(Trigger::Manual), Some(Trigger::Shutdown), Some(Trigger::EndOfRecovery)] {
        assert_eq!(pace_ratio(FIVE_MIN, unpaced, Some(0.5)), None, "{unpaced:?}");
    }
    let zero = Pacing { timeout_s: 300.0, completion_target: 0.0 };
    assert_eq!(pace_ratio(zero, wal, Some(1.0)), None);
}

#[test]
fn each_checkpoint_is_paced_by_the_settings_in_force_when_it_ran() {
    let mut current = Settings::defaults(Some(15)); // 5min, 0.9
    current.defaults_read = true; // the conf files say they are the defaults
    let changes = vec![
        change("2026-11-22T10:00:00Z", "checkpoint_timeout", Some("30s"), Some("15min")),
        change("2026-11-22T12:00:00Z", "checkpoint_completion_target", Some("0.5"), Some("0.9")),
        change("2026-11-22T14:00:00Z", "checkpoint_timeout", Some("15min"), None),
    ];
    let timeline = PacingTimeline::new(&current, changes);
    let at = |s: &str| timeline.at(t(s)).unwrap();
    // Before any change: the values the first changes replaced.
    assert_eq!(at("2026-11-22T09:00:00Z"), Pacing { timeout_s: 30.0, completion_target: 0.5 });
    assert_eq!(at("2026-11-22T10:00:00Z"), Pacing { timeout_s: 900.0, completion_target: 0.5 });
    assert_eq!(at("2026-11-22T13:00:00Z"), Pacing { timeout_s: 900.0, completion_target: 0.9 });
    // A setting removed: today's value.
    assert_eq!(at("2026-11-22T15:00:00Z"), Pacing { timeout_s: 300.0, completion_target: 0.9 });
    // No change known: today's values.
    let plain = PacingTimeline::new(&current, Vec::new());
    assert_eq!(plain.at(t("2026-11-22T09:00:00Z")), Some(FIVE_MIN));
    assert_eq!(PacingTimeline::default().at(t("2026-11-22T09:00:00Z")), None);
}

/// A timeout only assumed at its default paces nothing, except where a
/// logged change says what it was.
#[test]
fn an_assumed_checkpoint_timeout_gives_no_pace() {
    let assumed = Settings::defaults(Some(15));
    assert!(assumed.assumed("checkpoint_timeout"));
    assert_eq!(PacingTimeline::new(&assumed, Vec::new()).at(t("2026-11-22T09:00:00Z")), None);
    let changed = vec![change("2026-11-22T10:00:00Z", "checkpoint_timeout", None, Some("1min"))];
    let timeline = PacingTimeline::new(&assumed, changed);
    assert_eq!(timeline.at(t("2026-11-22T09:00:00Z")), None);
    assert_eq!(timeline.at(t("2026-11-22T11:00:00Z")), Some(Pacing { timeout_s: 60.0, completion_target: 0.9 }));
}

/// A target written as an integer ("1") is still a number; a change of
/// another setting paces nothing.
#[test]
fn whole_number_targets_and_other_settings() {
    let mut current = Settings::defaults(Some(15));
    current.defaults_read = true;
    let changes = vec![
        change("2026-11-22T10:00:00Z", "checkpoint_completion_target", Some("0.9"), Some("1")),
        change("2026-11-22T11:00:00Z", "max_wal_size", Some("1GB"), Some("2GB")),
    ];
    let timeline = PacingTimeline::new(&current, changes);
    assert_eq!(timeline.at(t("2026-11-22T12:00:00Z")), Some(Pacing { timeout_s: 300.0, completion_target: 1.0 }));
    assert_eq!(timeline.at(t("2026-11-22T09:00:00Z")), Some(FIVE_MIN));
}
