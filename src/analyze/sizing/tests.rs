use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::store::history::{PointStart, Replay, SizingHistory};

fn pg(version: u32, max_mb: f64, cct: f64) -> Params {
    Params {
        max_wal_size_mb: max_mb,
        min_wal_size_mb: 80.0,
        timeout_s: 300.0,
        completion_target: cct,
        segment_mb: 16.0,
        wal_keep_mb: 0.0,
        version: Some(version),
    }
}

fn t0() -> Timestamp {
    "2026-11-01T00:00:00Z".parse().unwrap()
}

fn at(secs: i64) -> Timestamp {
    t0() + SignedDuration::from_secs(secs)
}

fn point(secs: i64, trigger: &str, distance_kb: Option<i64>, added: i64) -> PointStart {
    PointStart { started_at: at(secs), trigger: Some(trigger.into()), distance_kb, wal_files_added: Some(added) }
}

#[test]
fn trigger_follows_postgresql_per_version() {
    // The defaults' CheckPointSegments from messages.md: 25 (9.6/10), 42 (11-13), 33 (14+).
    assert_eq!(pg(10, 1024.0, 0.5).trigger_mb(1024.0), 24.0 * 16.0);
    assert_eq!(pg(13, 1024.0, 0.5).trigger_mb(1024.0), 41.0 * 16.0);
    assert_eq!(pg(15, 1024.0, 0.9).trigger_mb(1024.0), 32.0 * 16.0);
    // A tiny max_wal_size still has a trigger of at least zero segments past the REDO.
    assert_eq!(pg(15, 32.0, 0.9).trigger_mb(32.0), 0.0);
}

#[test]
fn required_size_is_the_smallest_whole_segment_size_whose_trigger_covers_the_wal() {
    let p = pg(15, 1024.0, 0.9);
    // 512 MB per timeout: 61 and 62 segments trigger at 496 MB, 63 at 512 MB.
    assert_eq!(required_mb(512.0, &p), 63.0 * 16.0);
    assert!(p.trigger_mb(required_mb(512.0, &p)) >= 512.0);
    assert!(p.trigger_mb(required_mb(512.0, &p) - 16.0) < 512.0);
    // 9.6/10 keep two cycles: the same WAL needs more.
    let old = pg(10, 1024.0, 0.5);
    assert_eq!(required_mb(512.0, &old), 83.0 * 16.0);
    assert!(old.trigger_mb(1328.0) >= 512.0 && old.trigger_mb(1312.0) < 512.0);
}

#[test]
fn readable_sizes_step_by_64_mb_then_256_mb_then_gb_in_whole_segments() {
    assert_eq!(readable_mb(1008.0, 16.0), 1024);
    assert_eq!(readable_mb(1025.0, 16.0), 1280);
    assert_eq!(readable_mb(100.0, 16.0), 128);
    assert_eq!(readable_mb(304.0, 16.0), 320);
    assert_eq!(readable_mb(10.0, 16.0), 64);
    assert_eq!(readable_mb(4096.0, 16.0), 4096);
    assert_eq!(readable_mb(4097.0, 16.0), 5120);
    assert_eq!(readable_mb(300.0, 1024.0), 1024);
    assert_eq!(pg_size(5120), "5GB");
    assert_eq!(pg_size(1280), "1280MB");
}

#[test]
fn percentile_is_nearest_rank() {
    let v: Vec<f64> = (1..=20).map(f64::from).collect();
    assert_eq!(percentile(&v, 95.0), Some(19.0));
    assert_eq!(percentile(&v, 100.0), Some(20.0));
    assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 50.0), Some(2.0));
    assert_eq!(percentile(&[5.0, 1.0, 2.0, 3.0, 4.0], 95.0), Some(5.0));
    assert_eq!(percentile(&[], 95.0), None);
    assert_eq!(percentile(&[f64::NAN], 95.0), None);
}

#[test]
fn cycles_skip_shutdowns_restarts_missing_distances_and_subsecond_gaps() {
    let history = SizingHistory {
        points: vec![
            point(0, "time", Some(1), 0),
            point(300, "time", Some(300_000), 0),   // 1000 kB/s
            point(400, "wal", Some(200_000), 2),    // 2000 kB/s
            point(400, "manual", Some(10), 0),      // 0 s after: no rate
            point(500, "shutdown", Some(5_000), 0), // ends the run
            point(900, "end-of-recovery", Some(1), 0),
            point(1200, "time", Some(90_000), 0), // follows end-of-recovery
            point(1500, "time", Some(60_000), 0), // 200 kB/s, but a crash restart lies between
            point(1800, "time", None, 0),         // never completed
            point(2100, "time", Some(30_000), 1), // 100 kB/s
        ],
        restarts: vec![at(1400)],
        too_frequent: 0,
        replays: vec![],
    };
    let c = cycles(&history, t0());
    let got: Vec<(i64, f64)> = c.iter().map(|c| (c.at.duration_since(t0()).as_secs(), c.rate_kb_s)).collect();
    assert_eq!(got, vec![(300, 1000.0), (400, 2000.0), (2100, 100.0)]);
    // The window starts at 350 s: the cycle ending at 300 s is outside, its start still counts as a start.
    assert_eq!(cycles(&history, at(350)).len(), 2);
}

fn steady(rate_kb_s: i64, n: i64, period: i64, trigger: &str) -> SizingHistory {
    SizingHistory {
        points: (0..=n).map(|i| point(i * period, trigger, Some(rate_kb_s * period), 0)).collect(),
        restarts: vec![],
        too_frequent: 3,
        replays: vec![Replay { bytes: 512 * 1_048_576, seconds: 4.0 }],
    }
}

fn advice() -> AdviceSection {
    AdviceSection::default()
}

#[test]
fn forced_checkpoints_give_a_size_from_the_formula_with_sql_and_cost() {
    // 1000 kB/s under max_wal_size=32MB: forced every 20 s.
    let history = steady(1000, 30, 20, "wal");
    let p = pg(15, 32.0, 0.9);
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice());
    // W = 1000 kB/s x 300 s = 292.97 MB; x 1.25 = 366.2 MB; 46 segments (trigger 368 MB) = 736 MB -> 768MB.
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert_eq!(s.basis.samples, 30);
    assert_eq!(s.basis.window, "7d");
    assert_eq!(s.basis.peak_wal_rate_kb_s, Some(1000.0));
    assert_eq!(s.basis.projected_wal_per_timeout_mb, Some(293.0));
    assert_eq!((s.basis.forced_checkpoints, s.basis.timed_checkpoints, s.basis.too_frequent), (31, 0, 3));
    assert_eq!(s.sql.as_deref(), Some("ALTER SYSTEM SET max_wal_size = '768MB';\nSELECT pg_reload_conf();"));
    assert_eq!(s.cost.pg_wal_mb, Some(768));
    assert_eq!(s.cost.replay_mb_s, Some(128.0));
    // W x (1 + cct) = 556.6 MB at 128 MB/s.
    assert_eq!(s.cost.crash_recovery_wal_mb, Some(556.6));
    assert_eq!(s.cost.crash_recovery_s, Some(4.3));
    assert_eq!(s.confidence, "medium");
    let text = s.explanation.join("\n");
    assert!(text.contains("Raise max_wal_size from 32MB to 768MB."), "{text}");
    assert!(text.contains("The cycles were short (median 20 s against checkpoint_timeout 300 s)"), "{text}");
    assert!(
        text.contains(
            "1.90 x (293.0 MB x headroom 1.25 + 16 MB segment) = 726 MB; 736 MB in whole segments after PostgreSQL's \
         rounding down; 768MB as a readable value."
        ),
        "{text}"
    );
}

#[test]
fn enough_size_is_kept_and_far_too_much_is_only_a_note() {
    let history = steady(100, 10, 300, "time");
    // W = 29.3 MB -> 36.6 MB with headroom -> 8 segments (trigger 48 MB) = 128 MB.
    let enough = from_history("main", Settings::default(), &history, t0(), &pg(15, 2048.0, 0.9), &advice());
    assert_eq!(enough.suggested.max_wal_size_mb, Some(128));
    assert_eq!(enough.sql, None);
    assert!(enough.explanation.iter().any(|e| e.contains("more than 4x the need")), "{:?}", enough.explanation);
    assert!(!enough.explanation.iter().any(|e| e.contains("cycles were short")), "timed 300 s cycles are not short");
    let tight = from_history("main", Settings::default(), &history, t0(), &pg(15, 512.0, 0.9), &advice());
    assert!(tight.explanation.iter().any(|e| e == "The current max_wal_size 512MB is enough."));
}

#[test]
fn forced_checkpoints_never_lower_the_size() {
    // Rare bursts: 1 forced cycle in 40 is above the p95 rate.
    let mut history = steady(100, 40, 300, "time");
    history.points[20].trigger = Some("wal".into());
    history.points[20].distance_kb = Some(100_000 * 300);
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 2048.0, 0.9), &advice());
    assert_eq!(s.suggested.max_wal_size_mb, Some(2048));
    assert_eq!(s.sql, None);
    assert!(s.explanation.iter().any(|e| e.contains("1 forced checkpoints came from bursts above the p95 rate")));
}

#[test]
fn too_few_samples_give_no_suggestion_and_say_why() {
    let history = steady(1000, 4, 20, "wal");
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 32.0, 0.9), &advice());
    assert_eq!(s.suggested, Suggested { max_wal_size_mb: None, min_wal_size_mb: None });
    assert_eq!(s.sql, None);
    assert_eq!(s.confidence, "low");
    assert!(s.explanation[1].starts_with("No suggestion: 4 usable cycles, fewer than the 5 needed"));
}

#[test]
fn files_added_on_most_cycles_suggest_min_wal_size() {
    let mut history = steady(1000, 10, 300, "time");
    for p in &mut history.points {
        p.wal_files_added = Some(3);
    }
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 1024.0, 0.9), &advice());
    // Typical cycle 292.97 MB x 1.9 = 556.6 MB -> 576MB, below the suggested max (768MB).
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert_eq!(s.suggested.min_wal_size_mb, Some(576));
    assert_eq!(
        s.sql.as_deref(),
        Some("ALTER SYSTEM SET min_wal_size = '576MB';\nSELECT pg_reload_conf();"),
        "max 1024 is already above 768"
    );
}
