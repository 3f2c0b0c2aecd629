use jiff::{SignedDuration, Timestamp};

use super::*;

fn t0() -> Timestamp {
    "2026-11-22T08:00:00Z".parse().unwrap()
}

fn at_ms(ms: i64) -> Timestamp {
    t0() + SignedDuration::from_millis(ms)
}

fn start(ms: i64, trigger: Trigger, distance_kb: Option<i64>) -> PointStart {
    PointStart {
        kind: PointKind::Checkpoint,
        started_at: at_ms(ms),
        trigger: Some(trigger),
        distance_kb,
        wal_files_added: Some(0),
    }
}

/// Checkpoint starts at these times (ms), all time-triggered but the first (manual).
fn timed(starts_ms: &[i64]) -> RecentStarts {
    let points = starts_ms
        .iter()
        .enumerate()
        .map(|(i, ms)| start(*ms, if i == 0 { Trigger::Manual } else { Trigger::Time }, Some(100)))
        .collect();
    RecentStarts { points, restarts: vec![] }
}

fn rule(version: u32, cct: f64) -> TriggerRule {
    TriggerRule { segment_mb: 16.0, completion_target: cct, completion_target_assumed: true, version: Some(version) }
}

fn wal(distances_kb: &[i64]) -> RecentStarts {
    let points = distances_kb.iter().enumerate().map(|(i, d)| start(i as i64 * 5000, Trigger::Wal, Some(*d))).collect();
    RecentStarts { points, restarts: vec![] }
}

#[test]
fn timeout_from_spacings_within_a_second_and_their_multiples() {
    // 15-stderr-default-std (checkpoint_timeout = 30s): a wal start at
    // 08:05:25.752, then time at 08:05:55.081, 08:06:25.062 and, after an
    // idle period, 08:07:25.157 (two timeouts).
    let starts = timed(&[325_752, 355_081, 385_062, 445_157]);
    let got = checkpoint_timeout(&starts).unwrap();
    assert_eq!(got.value, "30s");
    assert_eq!(got.samples, 3);
    assert_eq!(
        got.how,
        "3 of 3 time-triggered checkpoints started 30 s, or a multiple (idle periods skip one), after the previous \
         checkpoint started"
    );
}

#[test]
fn timeout_in_minutes_is_spelled_as_show_does_and_jitter_rounds_away() {
    // 5min with the checkpointer's sub-second wobble both ways.
    let starts = timed(&[0, 299_400, 599_700, 900_300, 1_199_900, 1_500_100]);
    let got = checkpoint_timeout(&starts).unwrap();
    assert_eq!((got.value.as_str(), got.samples), ("5min", 5));
}

#[test]
fn the_smallest_common_spacing_wins_over_its_multiples() {
    // Mostly 60 s apart (idle every other timeout), some 30 s: the timeout is 30 s.
    let starts = timed(&[0, 60_100, 120_300, 150_200, 210_500, 240_400, 300_600]);
    let got = checkpoint_timeout(&starts).unwrap();
    assert_eq!((got.value.as_str(), got.samples), ("30s", 6));
    // Only ever 60 s apart: the log cannot tell 30 s skipping every other from 60 s.
    let starts = timed(&[0, 60_100, 120_300, 180_200]);
    assert_eq!(checkpoint_timeout(&starts).unwrap().value, "1min");
}

#[test]
fn a_time_checkpoint_after_a_wal_one_counts_from_the_wal_ones_start() {
    let mut starts = timed(&[0, 30_000, 60_100]);
    starts.points.push(start(71_000, Trigger::Wal, Some(100)));
    starts.points.push(start(101_050, Trigger::Time, Some(100)));
    let got = checkpoint_timeout(&starts).unwrap();
    assert_eq!((got.value.as_str(), got.samples), ("30s", 3));
}

#[test]
fn too_few_or_irregular_spacings_say_why() {
    let two = timed(&[0, 30_000, 60_000]);
    assert_eq!(
        checkpoint_timeout(&two).unwrap_err(),
        "2 time-triggered checkpoint(s) follow another checkpoint of the same server run in the log, 3 needed to \
         tell checkpoint_timeout"
    );
    // Spacings across a shutdown, a restart or a restartpoint are no evidence:
    // of these five only the first (manual to time) is.
    let mut across = timed(&[0, 30_000, 60_000, 90_000, 120_000, 150_000]);
    across.points[2].trigger = Some(Trigger::Shutdown);
    across.points[4].kind = PointKind::Restartpoint;
    across.restarts.push(at_ms(140_000));
    assert!(checkpoint_timeout(&across).unwrap_err().starts_with("1 time-triggered checkpoint(s)"));
    // 40, 47 and 73 s: the best period fits one of three.
    let irregular = timed(&[0, 40_000, 87_000, 160_000]);
    assert_eq!(
        checkpoint_timeout(&irregular).unwrap_err(),
        "the 3 spacings of time-triggered checkpoints (40.0, 47.0, 73.0 s) have no common period: the most \
         regular, 73 s, fits only 1 of them"
    );
}

#[test]
fn the_latest_run_wins_when_it_has_enough_evidence() {
    // 45s before a restart, 30s after it (conf edited, server restarted: no log line says so).
    let mut starts = timed(&[0, 45_000, 90_000, 135_000, 180_000]);
    let after = [210_000, 240_000, 270_000, 300_000];
    starts.points.extend(after.iter().map(|ms| start(*ms, Trigger::Time, Some(100))));
    starts.restarts.push(at_ms(200_000));
    let got = checkpoint_timeout(&starts).unwrap();
    assert_eq!((got.value.as_str(), got.samples), ("30s", 3));
    assert!(got.how.starts_with("3 of 3 time-triggered checkpoints of the server's latest run started 30 s"));
    // With too little after the restart, the runs before count too: 4 of the
    // 6 spacings are 45 s (30 s is no divisor of 45 s).
    starts.points.pop();
    let got = checkpoint_timeout(&starts).unwrap();
    assert_eq!((got.value.as_str(), got.samples), ("45s", 4));
    assert!(got.how.starts_with("4 of 6 time-triggered checkpoints started 45 s"), "{}", got.how);
}

#[test]
fn max_wal_size_from_the_smallest_wal_distance() {
    // 15-stderr-default-std at 32MB: distances of about one segment.
    let starts = wal(&[12_284, 21_781, 16_365, 16_384, 16_388]);
    let got = max_wal_size(&starts, &rule(15, 0.9)).unwrap();
    assert_eq!((got.value.as_str(), got.samples), ("32MB", 5));
    assert_eq!(
        got.how,
        "the smallest distance of 5 WAL-triggered checkpoints, 12284 kB, puts PostgreSQL's trigger at 1 segment(s) \
         of 16 MB (CheckPointSegments), which max_wal_size 32MB to 48MB (the roundest taken) gives with \
         checkpoint_completion_target 0.9, its default"
    );
    // The 14+ default, 1GB: CheckPointSegments 33; 33 segments = 540672 kB at most.
    let got = max_wal_size(&wal(&[540_000, 529_000, 545_000]), &rule(15, 0.9)).unwrap();
    assert_eq!(got.value, "1GB");
    assert!(got.how.contains("33 segment(s)") && got.how.contains("1008MB to 1GB"), "{}", got.how);
    // 1280MB (80 segments): CheckPointSegments 42, sizes 80 and 81 segments.
    let got = max_wal_size(&wal(&[688_000, 672_100, 690_000]), &rule(15, 0.9)).unwrap();
    assert_eq!(got.value, "1280MB");
}

#[test]
fn max_wal_size_follows_the_version_and_the_completion_target() {
    // 9.6/10 divide by 2 + cct: 1GB with cct 0.5 is 25 segments.
    let old = TriggerRule { completion_target_assumed: false, ..rule(10, 0.5) };
    let got = max_wal_size(&wal(&[400_000, 405_000, 409_600]), &old).unwrap();
    assert_eq!(got.value, "1GB");
    assert!(got.how.ends_with("checkpoint_completion_target 0.5"), "{}", got.how);
    // 11-13 with cct 0.5: 42 segments, distances above 41 x 16384 kB.
    assert_eq!(max_wal_size(&wal(&[675_000, 680_000, 688_128]), &rule(13, 0.5)).unwrap().value, "1GB");
    // A distance of no more than 41 segments: 62 segments, 992MB.
    assert_eq!(max_wal_size(&wal(&[671_000, 680_000, 688_128]), &rule(13, 0.5)).unwrap().value, "992MB");
    // 64 MB segments: 1GB is 16 segments, 16 / 1.9 = 8.
    let big = TriggerRule { segment_mb: 64.0, ..rule(15, 0.9) };
    let got = max_wal_size(&wal(&[500_000, 524_288, 510_000]), &big).unwrap();
    assert_eq!(got.value, "1GB");
}

#[test]
fn max_wal_size_needs_wal_triggered_checkpoints_and_says_so() {
    let none = timed(&[0, 30_000, 60_000, 90_000]);
    assert_eq!(
        max_wal_size(&none, &rule(15, 0.9)).unwrap_err(),
        "0 WAL-triggered checkpoint(s) with a logged distance, 3 needed to tell max_wal_size (when WAL never \
         reaches it, the log cannot say how large it is)"
    );
    let mut unfinished = wal(&[16_000, 16_384, 16_380]);
    unfinished.points[0].distance_kb = None;
    assert!(max_wal_size(&unfinished, &rule(15, 0.9)).unwrap_err().starts_with("2 WAL-triggered"));
    // A standby's restartpoints start at replayed checkpoint records: no evidence.
    let mut standby = wal(&[16_000, 16_384, 16_380, 16_200]);
    for p in &mut standby.points {
        p.kind = PointKind::Restartpoint;
    }
    assert!(max_wal_size(&standby, &rule(15, 0.9)).unwrap_err().starts_with("0 WAL-triggered"));
}

#[test]
fn roundest_prefers_the_largest_power_of_two_then_the_smaller() {
    assert_eq!(roundest([1008, 1024].into_iter()), 1024);
    assert_eq!(roundest([32, 48].into_iter()), 32);
    assert_eq!(roundest([1280, 1296].into_iter()), 1280);
    assert_eq!(roundest([48].into_iter()), 48);
}
