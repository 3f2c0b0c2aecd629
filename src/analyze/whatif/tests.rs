use super::*;

/// PostgreSQL 15 with 16 MB segments, min_wal_size 80MB, cct 0.9, 5min, warning 30s.
fn pg15(max_wal_size_mb: f64) -> Rules {
    Rules {
        max_wal_size_mb,
        min_wal_size_mb: 80.0,
        timeout_s: 300.0,
        completion_target: 0.9,
        wal_keep_mb: 0.0,
        warning_s: 30.0,
        segment_mb: 16.0,
        version: Some(15),
        segments: None,
    }
}

/// WAL at `mb_s` MB/s from 0 to `end`, one run, nothing fixed.
fn steady(mb_s: f64, end: Secs) -> Timeline {
    Timeline {
        start: 0.0,
        end,
        wal: Wal::new(vec![Knot { at: 0.0, lsn: 0.0 }, Knot { at: end, lsn: mb_s * end * MB }]),
        runs: vec![Run { from: 0.0, to: end }],
        fixed: vec![],
        sync_s: 0.0,
        slow_writes: vec![],
    }
}

fn counts(o: &Outcome) -> (i64, i64, i64, i64, i64) {
    let c = o.checkpoints;
    (c.wal, c.time, c.manual, c.shutdown, c.end_of_recovery)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn the_wal_position_is_linear_between_knots_and_flat_outside() {
    let wal = Wal::new(vec![Knot { at: 10.0, lsn: 100.0 }, Knot { at: 0.0, lsn: 0.0 }, Knot { at: 20.0, lsn: 50.0 }]);
    // Sorted, and never backwards: the knot at 20 s is raised to 100.
    assert_eq!(wal.knots()[2], Knot { at: 20.0, lsn: 100.0 });
    assert_eq!(wal.at(-5.0), 0.0);
    assert_eq!(wal.at(5.0), 50.0);
    assert_eq!(wal.at(15.0), 100.0);
    assert_eq!(wal.at(99.0), 100.0);
    assert_eq!(wal.reaches(25.0, 0.0), Some(2.5));
    assert_eq!(wal.reaches(25.0, 4.0), Some(4.0));
    assert_eq!(wal.reaches(100.0, 0.0), Some(10.0));
    assert_eq!(wal.reaches(100.5, 0.0), None);
    assert_eq!(Wal::default().at(3.0), 0.0);
}

#[test]
fn checkpoint_segments_follow_postgresql_s_rounding() {
    assert_eq!(pg15(1024.0).checkpoint_segments(), 33);
    assert_eq!(pg15(64.0).checkpoint_segments(), 2);
    assert_eq!(pg15(32.0).checkpoint_segments(), 1);
    // A size that is not whole segments is truncated first: 40MB is 2 segments.
    assert_eq!(pg15(40.0).checkpoint_segments(), 1);
    assert_eq!(Rules { version: Some(10), completion_target: 0.5, ..pg15(1024.0) }.checkpoint_segments(), 25);
    assert_eq!(Rules { segments: Some(7), ..pg15(1024.0) }.checkpoint_segments(), 7);
}

#[test]
fn a_load_below_the_trigger_stays_time_driven() {
    // 1 MB/s for 10 minutes under 1GB: the trigger (33 segments, 528 MB) is
    // never reached; the time checkpoint at 300.1 s (the timer's second,
    // plus its wakeup) ends its writes 0.9 x 300 s later, at 570.1 s, before
    // 0.9 x 33 segments of WAL followed it. A crash just before replays all.
    let o = replay(&steady(1.0, 600.0), &Schedule::constant(pg15(1024.0)));
    assert_eq!(counts(&o), (0, 1, 0, 0, 0));
    assert_eq!(o.too_frequent, 0);
    assert!(close(o.max_replay_mb, 570.1), "{o:?}");
    // Segments 0..=35 before the first removal: 36 x 16 MB. After it, 18..=53
    // (18 recycled ahead, up to the estimate's 58): 36 again.
    assert!(close(o.peak_pg_wal_mb, 576.0), "{o:?}");
}

#[test]
fn a_small_max_wal_size_forces_back_to_back_checkpoints_that_warn() {
    // 16 MB/s for 10 s under 64MB (CheckPointSegments 2): a request every
    // 32 MB, at 2, 4, 6 and 8 s (10 s is the end); each warns (2 s apart).
    let o = replay(&steady(16.0, 10.0), &Schedule::constant(pg15(64.0)));
    assert_eq!(counts(&o), (4, 0, 0, 0, 0));
    assert_eq!(o.too_frequent, 4);
    // Each writes until 0.9 x 2 segments more WAL: a crash then replays 32 + 28.8 MB.
    assert!(close(o.max_replay_mb, 60.8), "{o:?}");
    // min_wal_size's 5 segments at the start are the most pg_wal holds.
    assert!(close(o.peak_pg_wal_mb, 80.0), "{o:?}");
}

#[test]
fn the_warning_needs_checkpoint_warning_on() {
    let rules = Rules { warning_s: 0.0, ..pg15(64.0) };
    let o = replay(&steady(16.0, 10.0), &Schedule::constant(rules));
    assert_eq!((o.checkpoints.wal, o.too_frequent), (4, 0));
    // 2 s apart is not less than a warning of 2 s.
    let o = replay(&steady(16.0, 10.0), &Schedule::constant(Rules { warning_s: 2.0, ..pg15(64.0) }));
    assert_eq!((o.checkpoints.wal, o.too_frequent), (4, 0));
    let o = replay(&steady(16.0, 10.0), &Schedule::constant(Rules { warning_s: 3.0, ..pg15(64.0) }));
    assert_eq!((o.checkpoints.wal, o.too_frequent), (4, 4));
}

#[test]
fn a_request_during_a_checkpoint_waits_for_it() {
    // 64MB, 16 MB/s, but each checkpoint takes 3 s more to sync: the
    // request at 4 s waits for the end at 2 + 1.8 + 3 = 6.8 s.
    let mut t = steady(16.0, 10.0);
    t.sync_s = 3.0;
    let o = replay(&t, &Schedule::constant(pg15(64.0)));
    // Starts at 2 and 6.8 (its request came at 6 s, during the first).
    assert_eq!(counts(&o), (2, 0, 0, 0, 0));
}

#[test]
fn an_idle_server_skips_time_checkpoints() {
    // 1 MB in the first second, nothing after: one time checkpoint at 30 s,
    // then 60 s and 90 s are skipped.
    let t = Timeline {
        start: 0.0,
        end: 100.0,
        wal: Wal::new(vec![Knot { at: 0.0, lsn: 0.0 }, Knot { at: 1.0, lsn: MB }]),
        runs: vec![Run { from: 0.0, to: 100.0 }],
        fixed: vec![],
        sync_s: 0.0,
        slow_writes: vec![],
    };
    let o = replay(&t, &Schedule::constant(Rules { timeout_s: 30.0, ..pg15(1024.0) }));
    assert_eq!(counts(&o), (0, 1, 0, 0, 0));
}

#[test]
fn fixed_checkpoints_happen_as_logged_and_restart_the_clock() {
    // A CHECKPOINT at 5 s: the time checkpoint comes at 305 s, not 300 s,
    // and the shutdown ends the run at 500 s.
    let mut t = steady(1.0, 600.0);
    t.runs = vec![Run { from: 0.0, to: 500.0 }];
    t.fixed = vec![
        Fixed { at: 5.0, end: 6.0, trigger: Trigger::Manual },
        Fixed { at: 500.0, end: 501.0, trigger: Trigger::Shutdown },
    ];
    let o = replay(&t, &Schedule::constant(pg15(1024.0)));
    assert_eq!(counts(&o), (0, 1, 1, 1, 0));
    // Without the CHECKPOINT the time checkpoint is at 300 s: the same count.
    t.fixed.remove(0);
    let o = replay(&t, &Schedule::constant(Rules { timeout_s: 200.0, ..pg15(1024.0) }));
    // 200 and 400 s; 600 s is after the shutdown.
    assert_eq!(counts(&o), (0, 2, 0, 1, 0));
}

#[test]
fn a_restart_starts_the_checkpointer_s_clock_again() {
    // Two runs of 400 s with a 100 s gap: 300 s after each start.
    let mut t = steady(0.1, 900.0);
    t.runs = vec![Run { from: 0.0, to: 400.0 }, Run { from: 500.0, to: 900.0 }];
    let o = replay(&t, &Schedule::constant(pg15(1024.0)));
    assert_eq!(counts(&o), (0, 2, 0, 0, 0));
}

#[test]
fn a_change_of_settings_applies_from_its_time() {
    // 16 MB/s for 20 s: 64MB for the first 10 s (4 checkpoints at 2..8 s),
    // then 1GB: none more.
    let t = steady(16.0, 20.0);
    let schedule = Schedule(vec![(f64::NEG_INFINITY, pg15(64.0)), (10.0, pg15(1024.0))]);
    let o = replay(&t, &schedule);
    assert_eq!(counts(&o), (4, 0, 0, 0, 0));
    assert_eq!(schedule.at(9.9).max_wal_size_mb, 64.0);
    assert_eq!(schedule.at(10.0).max_wal_size_mb, 1024.0);
}

#[test]
fn wal_keep_size_holds_segments_back() {
    let plain = replay(&steady(1.0, 600.0), &Schedule::constant(pg15(1024.0)));
    let kept = replay(&steady(1.0, 600.0), &Schedule::constant(Rules { wal_keep_mb: 1024.0, ..pg15(1024.0) }));
    // Nothing is removed at 570.1 s: segments 0..=37 at the end (600 MB).
    assert!(close(plain.peak_pg_wal_mb, 576.0), "{plain:?}");
    assert!(close(kept.peak_pg_wal_mb, 608.0), "{kept:?}");
}

#[test]
fn an_empty_timeline_predicts_nothing() {
    let t = Timeline { start: 0.0, end: 0.0, ..Timeline::default() };
    let o = replay(&t, &Schedule::constant(pg15(1024.0)));
    assert_eq!(counts(&o), (0, 0, 0, 0, 0));
    assert_eq!(o.max_replay_mb, 0.0);
}
