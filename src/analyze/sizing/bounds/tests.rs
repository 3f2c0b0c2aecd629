//! The bounds on synthetic cycles: a steady 1000 kB/s under
//! checkpoint_timeout = 5min (PostgreSQL 15, cct 0.9), whose time-driven
//! size is 768MB (W = 293 MB, x 1.25, x 1.9 + a segment: 727 MB), replayed
//! by the real `whatif` model at each size.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::super::{from_history_probed, Params, Probe, Suggestion};
use crate::analyze::whatif::{self, Knot, Rules, Run, Schedule, Timeline, Wal};
use crate::config::AdviceSection;
use crate::model::event::{PointKind, Trigger};
use crate::settings::Settings;
use crate::store::checkpoints::{PointStart, SizingHistory};
use crate::store::events::Replay;

const CYCLES: i64 = 30;
const PERIOD_S: i64 = 300;
const RATE_KB_S: i64 = 1000;

fn t0() -> Timestamp {
    "2026-11-01T00:00:00Z".parse().unwrap()
}

/// Time checkpoints every 5 minutes at 1000 kB/s, and the crash recoveries given.
fn history(replays: Vec<Replay>) -> SizingHistory {
    let point = |i: i64| PointStart {
        kind: PointKind::Checkpoint,
        started_at: t0() + SignedDuration::from_secs(i * PERIOD_S),
        trigger: Some(Trigger::Time),
        distance_kb: Some(RATE_KB_S * PERIOD_S),
        wal_files_added: Some(0),
    };
    SizingHistory { points: (0..=CYCLES).map(point).collect(), replays, ..SizingHistory::default() }
}

/// The same WAL as a timeline, replayed under `mb` by the whatif model.
fn probe(mb: u64) -> Probe {
    let end = (CYCLES * PERIOD_S) as f64;
    let wal = Wal::new(vec![Knot { at: 0.0, lsn: 0.0 }, Knot { at: end, lsn: end * RATE_KB_S as f64 * 1024.0 }]);
    let timeline = Timeline { start: 0.0, end, wal, runs: vec![Run { from: 0.0, to: end }], ..Timeline::default() };
    let p = Params::test_defaults(15);
    let rules = Rules {
        max_wal_size_mb: mb as f64,
        min_wal_size_mb: p.min_wal_size_mb,
        timeout_s: p.timeout_s,
        completion_target: p.completion_target,
        wal_keep_mb: 0.0,
        warning_s: 30.0,
        segment_mb: p.segment_mb,
        version: p.version,
        segments: None,
    };
    let o = whatif::replay(&timeline, &Schedule::constant(rules));
    Probe {
        forced: o.checkpoints.wal,
        too_frequent: o.too_frequent,
        peak_pg_wal_mb: o.peak_pg_wal_mb,
        max_replay_mb: o.max_replay_mb,
    }
}

/// A crash recovery at `mb_s`.
fn speed(mb_s: u64) -> Vec<Replay> {
    vec![Replay { bytes: mb_s * 1_048_576, seconds: 1.0, at: t0(), crash: true }]
}

fn suggest(replays: Vec<Replay>, max_recovery_s: Option<u64>, max_pg_wal_mb: Option<u64>) -> Suggestion {
    let advice = AdviceSection {
        max_recovery: max_recovery_s.map(Duration::from_secs),
        max_pg_wal_mb,
        ..AdviceSection::default()
    };
    let p = Params::test_defaults(15);
    from_history_probed("main", Settings::default(), &history(replays), t0(), &p, &advice, None, Some(&probe))
}

fn has(s: &Suggestion, words: &str) -> bool {
    s.explanation.iter().any(|e| e.contains(words))
}

/// The time-driven size and what the replay says of it: no forced
/// checkpoint, a worst replay of about 570 s of WAL at 1000 kB/s (the
/// 300 s cycle plus the 270 s the next checkpoint spreads its writes over).
#[test]
fn the_model_and_the_replay_agree_on_the_time_driven_size() {
    let s = suggest(speed(100), None, None);
    assert_eq!((s.suggested.max_wal_size_mb, s.bounds.clone()), (Some(768), None));
    let p = probe(768);
    assert_eq!((p.forced, (p.max_replay_mb * 10.0).round() / 10.0), (0, 556.7));
    assert!(probe(256).forced > 0, "256MB is below the trigger: {:?}", probe(256));
}

#[test]
fn both_bounds_met_keep_the_time_driven_size() {
    let s = suggest(speed(100), Some(60), Some(20 * 1024));
    let b = s.bounds.clone().unwrap();
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert_eq!((b.limiting, b.time_driven_max_wal_size_mb, b.forced_at_suggested), (None, 768, 0));
    let r = b.max_recovery.unwrap();
    assert_eq!((r.limit_s, r.recovery_s, r.met), (60.0, Some(5.6), Some(true)));
    let d = b.max_pg_wal.unwrap();
    assert_eq!((d.limit_mb, d.met), (20 * 1024, true));
    assert!(d.peak_pg_wal_mb <= 768.0, "{d:?}");
    assert!(has(&s, "Bounds at 768MB: a crash at the worst moment of the window would replay 557 MB of WAL, 5.6 s at 100.0 MB/s: within max_recovery 1min; pg_wal would peak at"), "{:?}", s.explanation);
    assert_eq!(s.sql.as_deref(), None, "1GB now: nothing to raise");
}

/// At 2 MB/s the time-driven size's 557 MB take 278 s, beyond 2min: the
/// largest size whose worst replay takes at most 120 s (240 MB) is
/// suggested, with its forced checkpoints, and the other ways out.
#[test]
fn a_recovery_bound_holds_the_size_below_the_time_driven_one() {
    let s = suggest(speed(2), Some(120), None);
    let b = s.bounds.clone().unwrap();
    let size = s.suggested.max_wal_size_mb.unwrap();
    assert_eq!(b.limiting, Some("max_recovery"));
    assert!((32..768).contains(&size), "{size}");
    // The largest within: the next readable size up breaks it.
    assert!(probe(size).max_replay_mb / 2.0 <= 120.0);
    assert!(probe(size + 64).max_replay_mb / 2.0 > 120.0, "{size}");
    assert_eq!(b.max_recovery.unwrap().met, Some(true));
    assert_eq!(b.forced_at_suggested, probe(size).forced);
    assert!(b.forced_at_suggested > 0);
    assert_eq!(s.cost.crash_recovery_wal_mb, Some((probe(size).max_replay_mb * 10.0).round() / 10.0));
    assert!(has(&s, "No max_wal_size keeps checkpoints time-driven within the bounds: at 768MB a crash at the worst moment would take 278.4 s, beyond max_recovery 2min."), "{:?}", s.explanation);
    assert!(has(&s, "checkpoint_timeout = 2min (from 5min)"), "{:?}", s.explanation);
    assert!(has(&s, "checkpoint_completion_target = 0.5 (from 0.9)"), "{:?}", s.explanation);
    assert!(
        has(&s, "storage that replays at least 4.6 MB/s (today 2.0 MB/s) to replay 557 MB within max_recovery"),
        "{:?}",
        s.explanation
    );
    assert!(has(&s, &format!("Set max_wal_size to {} (now 1GB), held there by max_recovery.", super::pg_size(size))));
    // Below the current 1GB: the SQL lowers it.
    assert_eq!(
        s.sql.unwrap(),
        format!("ALTER SYSTEM SET max_wal_size = '{}';\nSELECT pg_reload_conf();", super::pg_size(size))
    );
}

#[test]
fn a_disk_bound_holds_the_size_below_the_time_driven_one() {
    let s = suggest(speed(100), None, Some(320));
    let b = s.bounds.clone().unwrap();
    let size = s.suggested.max_wal_size_mb.unwrap();
    assert_eq!(b.limiting, Some("max_pg_wal"));
    assert!(probe(size).peak_pg_wal_mb <= 320.0 && probe(size + 64).peak_pg_wal_mb > 320.0, "{size}");
    let d = b.max_pg_wal.unwrap();
    assert_eq!((d.limit_mb, d.met), (320, true));
    assert!(b.forced_at_suggested > 0);
    assert!(!has(&s, "storage that replays"), "no speed helps a disk bound");
}

/// Not even two segments recover within 1 s at 2 MB/s: the suggestion
/// stays time-driven, the bound is said broken, and what would help.
#[test]
fn no_size_meets_the_bound() {
    let s = suggest(speed(2), Some(1), None);
    let b = s.bounds.clone().unwrap();
    assert_eq!((s.suggested.max_wal_size_mb, b.limiting), (Some(768), Some("max_recovery")));
    assert_eq!(b.max_recovery.unwrap().met, Some(false));
    assert!(has(&s, "No max_wal_size keeps within max_recovery 1s, not even the smallest"), "{:?}", s.explanation);
    assert!(has(&s, "storage that replays at least 556.7 MB/s"), "{:?}", s.explanation);
}

/// Without a crash recovery to measure the speed, the recovery bound is
/// said unchecked, never passed.
#[test]
fn without_a_replay_speed_the_recovery_bound_cannot_be_checked() {
    let standby = vec![Replay { bytes: 36 * 1_048_576, seconds: 5.3, at: t0(), crash: false }];
    let s = suggest(standby, Some(120), None);
    let b = s.bounds.clone().unwrap();
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert_eq!(b.max_recovery.unwrap(), super::RecoveryBound { limit_s: 120.0, recovery_s: None, met: None });
    assert_eq!(b.limiting, None);
    assert!(has(&s, "max_recovery 2min cannot be checked: no crash recovery in this cluster's logs measured the replay speed (a crash at the worst moment would replay 557 MB of WAL)"), "{:?}", s.explanation);
}
