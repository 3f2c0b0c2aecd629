use crate::model::event::{PointKind, Trigger};
use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::store::checkpoints::{PointStart, SizingHistory};
use crate::store::events::Replay;

fn pg(version: u32, max_mb: f64, cct: f64) -> Params {
    Params { max_wal_size_mb: max_mb, completion_target: cct, ..Params::test_defaults(version) }
}

fn t0() -> Timestamp {
    "2026-11-01T00:00:00Z".parse().unwrap()
}

fn at(secs: i64) -> Timestamp {
    t0() + SignedDuration::from_secs(secs)
}

fn point(secs: i64, trigger: &str, distance_kb: Option<i64>, added: i64) -> PointStart {
    let trigger = Some(Trigger::parse(trigger).expect("a trigger name"));
    PointStart { kind: PointKind::Checkpoint, started_at: at(secs), trigger, distance_kb, wal_files_added: Some(added) }
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
fn cycles_are_left_out_by_what_ends_them_never_by_their_length() {
    let history = SizingHistory {
        points: vec![
            point(0, "time", Some(1), 0),
            point(300, "time", Some(300_000), 0),   // 1000 kB/s
            point(400, "wal", Some(200_000), 2),    // 2000 kB/s
            point(400, "manual", Some(10), 0),      // a requested checkpoint: no rate
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
        without_distance: 0,
    };
    let c = cycles(&history, t0());
    let got: Vec<(i64, f64)> = c.usable.iter().map(|c| (c.at.duration_since(t0()).as_secs(), c.rate_kb_s)).collect();
    assert_eq!(got, vec![(300, 1000.0), (400, 2000.0), (2100, 100.0)]);
    assert_eq!(c.usable[0].from, at(0));
    let left_out: Vec<(LeftOut, usize)> = c.left_out.into_iter().collect();
    assert_eq!(left_out, [(LeftOut::Downtime, 4), (LeftOut::Manual, 1), (LeftOut::NoDistance, 1)]);
    // The window starts at 350 s: the cycle ending at 300 s is outside, its start still counts as a start.
    assert_eq!(cycles(&history, at(350)).usable.len(), 2);
}

#[test]
fn subsecond_wal_cycles_count_and_only_an_unseparated_pair_is_left_out() {
    // Under max_wal_size = 32MB at full speed: 16 MB every 0.3 s is the busiest
    // load, which a "shorter than 1 s" rule dropped.
    let ms =
        |ms: i64| PointStart { started_at: t0() + SignedDuration::from_millis(ms), ..point(0, "wal", Some(16_384), 0) };
    let history =
        SizingHistory { points: vec![ms(0), ms(300), ms(600), ms(600), ms(1600)], ..SizingHistory::default() };
    let c = cycles(&history, t0());
    let rates: Vec<f64> = c.usable.iter().map(|c| c.rate_kb_s.round()).collect();
    assert_eq!(rates, [54_613.0, 54_613.0, 16_384.0]);
    // Two starts in the same millisecond (or second, with %t): no time to divide by.
    assert_eq!(c.left_out.into_iter().collect::<Vec<_>>(), [(LeftOut::NoTime, 1)]);
}

fn steady(rate_kb_s: i64, n: i64, period: i64, trigger: &str) -> SizingHistory {
    SizingHistory {
        points: (0..=n).map(|i| point(i * period, trigger, Some(rate_kb_s * period), 0)).collect(),
        restarts: vec![],
        too_frequent: 3,
        replays: vec![crash(512 * 1_048_576, 4.0)],
        without_distance: 0,
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
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), None);
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
    assert_eq!(s.confidence.to_string(), "medium");
    let text = s.explanation.join("\n");
    assert!(text.contains("Raise max_wal_size from 32MB to 768MB."), "{text}");
    assert!(text.contains("The cycles were short (median 20 s against checkpoint_timeout 300 s)"), "{text}");
    // Numbers of a thousand and more read grouped, as in the tables.
    assert!(text.contains("started): 1,000.0 kB/s, so up to 293.0 MB of WAL per checkpoint_timeout (300s)."), "{text}");
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
    let enough = from_history("main", Settings::default(), &history, t0(), &pg(15, 2048.0, 0.9), &advice(), None);
    assert_eq!(enough.suggested.max_wal_size_mb, Some(128));
    assert_eq!(enough.sql, None);
    assert!(enough.explanation.iter().any(|e| e.contains("more than 4x the need")), "{:?}", enough.explanation);
    assert!(!enough.explanation.iter().any(|e| e.contains("cycles were short")), "timed 300 s cycles are not short");
    let tight = from_history("main", Settings::default(), &history, t0(), &pg(15, 512.0, 0.9), &advice(), None);
    assert!(tight.explanation.iter().any(|e| e == "The current max_wal_size 512MB is enough."));
}

#[test]
fn forced_checkpoints_never_lower_the_size() {
    // Rare bursts: 1 forced cycle in 40 is above the p95 rate.
    let mut history = steady(100, 40, 300, "time");
    history.points[20].trigger = Some(Trigger::Wal);
    history.points[20].distance_kb = Some(100_000 * 300);
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 2048.0, 0.9), &advice(), None);
    assert_eq!(s.suggested.max_wal_size_mb, Some(2048));
    assert_eq!(s.sql, None);
    assert!(s.explanation.iter().any(|e| e.contains("1 forced checkpoints came from bursts above the p95 rate")));
}

#[test]
fn too_few_samples_give_no_suggestion_and_say_why() {
    let history = steady(1000, 4, 20, "wal");
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 32.0, 0.9), &advice(), None);
    assert_eq!(s.suggested, Suggested { max_wal_size_mb: None, min_wal_size_mb: None });
    assert_eq!(s.sql, None);
    assert_eq!(s.confidence.to_string(), "low");
    assert!(s.explanation[1].starts_with("No suggestion: 4 usable cycles, fewer than the 5 needed"));
}

/// A 9.4 log: starts and completes, every complete without a distance.
fn without_distances(n: i64) -> SizingHistory {
    let mut history = steady(1000, n, 20, "wal");
    history.points.iter_mut().for_each(|p| p.distance_kb = None);
    history.without_distance = n + 1;
    history
}

#[test]
fn checkpoints_without_distance_say_postgresql_9_5_is_needed() {
    let s = from_history("main", Settings::default(), &without_distances(30), t0(), &pg(9, 32.0, 0.5), &advice(), None);
    assert_eq!(s.suggested, Suggested { max_wal_size_mb: None, min_wal_size_mb: None });
    assert_eq!(s.sql, None);
    assert_eq!((s.basis.samples, s.basis.checkpoints_without_distance, s.basis.forced_checkpoints), (0, 31, 31));
    assert_eq!(s.confidence.to_string(), "low");
    assert_eq!(
        s.explanation[1],
        "Left out of the rate: 30 cycles: 30 ending in a checkpoint with no distance logged (it never completed, or \
         PostgreSQL 9.4 or older)."
    );
    assert_eq!(
        s.explanation[2],
        "No suggestion: walwatch needs the WAL distance since the previous checkpoint (\"distance=… kB\" in \
         \"checkpoint complete\" lines, logged by PostgreSQL 9.5 and later), and the 31 checkpoints completed in \
         this window logged none: the server is PostgreSQL 9.4 or older."
    );
}

#[test]
fn a_few_checkpoints_without_distance_among_usable_cycles_change_nothing() {
    // An upgrade from 9.4 in the window: the old checkpoints are counted, the new ones sized from.
    let mut history = steady(1000, 30, 20, "wal");
    history.without_distance = 2;
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 32.0, 0.9), &advice(), None);
    assert_eq!((s.basis.samples, s.basis.checkpoints_without_distance), (30, 2));
    assert!(s.suggested.max_wal_size_mb.is_some());
    // Too few usable cycles with some undistanced ones: the usual reason, not the 9.5 one.
    let mut history = steady(1000, 4, 20, "wal");
    history.without_distance = 2;
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 32.0, 0.9), &advice(), None);
    assert!(s.explanation[1].starts_with("No suggestion: 4 usable cycles, fewer than the 5 needed"));
}

#[test]
fn files_added_on_most_cycles_suggest_min_wal_size() {
    let mut history = steady(1000, 10, 300, "time");
    for p in &mut history.points {
        p.wal_files_added = Some(3);
    }
    let s = from_history("main", Settings::default(), &history, t0(), &pg(15, 1024.0, 0.9), &advice(), None);
    // Typical cycle 292.97 MB x 1.9 = 556.6 MB -> 576MB, below the suggested max (768MB).
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert_eq!(s.suggested.min_wal_size_mb, Some(576));
    assert_eq!(
        s.sql.as_deref(),
        Some("ALTER SYSTEM SET min_wal_size = '576MB';\nSELECT pg_reload_conf();"),
        "max 1024 is already above 768"
    );
}

// --- Mutation tests (see mutants.md) ---

fn with(version: Option<u32>, values: &[(&str, &str)]) -> Settings {
    let mut s = Settings::defaults(version);
    for (name, value) in values {
        s.values.insert(
            name.to_string(),
            crate::settings::Value { value: value.to_string(), source: crate::settings::ValueSource::Config },
        );
    }
    s
}

#[test]
fn params_read_the_settings_and_fall_back_to_a_16_mb_segment() {
    let s = with(
        Some(15),
        &[
            ("max_wal_size", "2GB"),
            ("min_wal_size", "256MB"),
            ("checkpoint_timeout", "15min"),
            ("checkpoint_completion_target", "0.5"),
            ("wal_segment_size", "64MB"),
            ("wal_keep_size", "512MB"),
        ],
    );
    let p = Params::from_settings(&s);
    assert_eq!(
        p,
        Params {
            max_wal_size_mb: 2048.0,
            min_wal_size_mb: 256.0,
            timeout_s: 900.0,
            completion_target: 0.5,
            segment_mb: 64.0,
            wal_keep_mb: 512.0,
            version: Some(15),
        }
    );
    // A segment size of zero would divide by zero: PostgreSQL's 16 MB instead.
    let zero = with(Some(15), &[("wal_segment_size", "0")]);
    assert_eq!(zero.mb("wal_segment_size"), Some(0.0));
    assert_eq!(Params::from_settings(&zero).segment_mb, 16.0);
    // Nothing known at all: PostgreSQL 14+'s defaults.
    let none = Params::from_settings(&Settings::default());
    assert_eq!(
        (none.max_wal_size_mb, none.min_wal_size_mb, none.timeout_s, none.completion_target),
        (1024.0, 80.0, 300.0, 0.9)
    );
    assert_eq!((none.segment_mb, none.wal_keep_mb, none.version), (16.0, 0.0, None));
}

#[test]
fn the_two_cycle_divisor_ends_with_postgresql_10() {
    assert_eq!(pg(9, 1024.0, 0.5).divisor(), 2.5);
    assert_eq!(pg(10, 1024.0, 0.5).divisor(), 2.5);
    assert_eq!(pg(11, 1024.0, 0.5).divisor(), 1.5);
    let unknown = Params { version: None, ..pg(15, 1024.0, 0.5) };
    assert_eq!(unknown.divisor(), 1.5);
}

/// `steady` with WAL files added on the first `adding` of the `n` cycles.
fn adding_on(n: i64, adding: usize) -> SizingHistory {
    let mut history = steady(1000, n, 300, "time");
    for (i, p) in history.points.iter_mut().enumerate() {
        // Point 0 starts the first cycle; cycle k ends at point k.
        p.wal_files_added = Some(if (1..=adding).contains(&i) { 2 } else { 0 });
    }
    history
}

#[test]
fn min_wal_size_is_advised_only_when_files_were_added_on_most_cycles() {
    let p = pg(15, 1024.0, 0.9);
    let min = |h: &SizingHistory, p: &Params| {
        from_history("main", Settings::default(), h, t0(), p, &advice(), None).suggested.min_wal_size_mb
    };
    // Large cycles (292.97 MB each), but no file ever added: nothing to advise.
    assert_eq!(min(&adding_on(10, 0), &p), None);
    // Half of the cycles is not most of them; 6 of 10 is.
    assert_eq!(min(&adding_on(10, 5), &p), None);
    assert_eq!(min(&adding_on(10, 6), &p), Some(576));
    assert_eq!(min(&adding_on(10, 10), &p), Some(576));
    // No cycle with a known count: nothing to advise.
    let mut unknown = adding_on(10, 10);
    for point in &mut unknown.points {
        point.wal_files_added = None;
    }
    assert_eq!(min(&unknown, &p), None);
    // Already 576 MB: nothing to raise; one MB less, and it is raised.
    assert_eq!(min(&adding_on(10, 10), &Params { min_wal_size_mb: 576.0, ..p }), None);
    assert_eq!(min(&adding_on(10, 10), &Params { min_wal_size_mb: 575.0, ..p }), Some(576));
}

/// A crash recovery that replayed `bytes` in `seconds`.
fn crash(bytes: u64, seconds: f64) -> Replay {
    Replay { bytes, seconds, at: t0(), crash: true }
}

#[test]
fn replay_speed_needs_both_bytes_and_time() {
    let p = pg(15, 32.0, 0.9);
    let replay = |replays: Vec<Replay>| {
        let history = SizingHistory { replays, ..steady(1000, 30, 20, "wal") };
        from_history("main", Settings::default(), &history, t0(), &p, &advice(), None).cost
    };
    let none = replay(vec![]);
    assert_eq!((none.replay_mb_s, none.crash_recovery_s), (None, None));
    // A recovery that replayed nothing, and one logged with an elapsed time of 0.00 s.
    assert_eq!(replay(vec![crash(0, 2.0)]).replay_mb_s, None);
    assert_eq!(replay(vec![crash(8 * 1_048_576, 0.0)]).replay_mb_s, None);
    // Several recoveries: total bytes over total time.
    let two = replay(vec![crash(96 * 1_048_576, 1.0), crash(32 * 1_048_576, 3.0)]);
    assert_eq!((two.replay_mb_s, two.crash_recovery_s), (Some(32.0), Some(17.4)));
}

#[test]
fn pg_wal_cost_adds_wal_keep_size() {
    let history = steady(1000, 30, 20, "wal");
    let p = Params { wal_keep_mb: 100.4, ..pg(15, 32.0, 0.9) };
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), None);
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert_eq!(s.cost.pg_wal_mb, Some(768 + 101));
    let text = s.explanation.join("\n");
    assert!(text.contains("Cost: pg_wal may hold about 869MB (max_wal_size + wal_keep_size 100.4 MB)"), "{text}");
}

#[test]
fn confidence_is_high_from_four_times_the_minimum_samples_over_a_day() {
    let p = pg(15, 32.0, 0.9);
    let confidence = |n: i64, period: i64| {
        let history = steady(1000, n, period, "time");
        from_history("main", Settings::default(), &history, t0(), &p, &advice(), None).confidence
    };
    // 20 cycles (4 x min_samples 5) whose ends span 19 periods: 24 h or more.
    assert_eq!(confidence(20, 4548).to_string(), "high");
    assert_eq!(confidence(20, 4547).to_string(), "medium", "19 x 4547 s is just under 24 h");
    assert_eq!(confidence(19, 10_000).to_string(), "medium", "19 cycles over two days are still too few");
    assert_eq!(confidence(5, 86_400).to_string(), "medium");
    assert_eq!(confidence(4, 86_400).to_string(), "low");
}

/// Lines of a real PostgreSQL 15 log (fixture 15-stderr-default-noise).
const NOISE: &str = "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log";

#[test]
fn suggest_counts_the_cycle_that_ends_exactly_at_the_window_end() {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(NOISE);
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    ingest::import(&mut store, cluster, log.to_str().unwrap(), &opts, &time).unwrap();

    let settings = with(Some(15), &[("max_wal_size", "32MB"), ("checkpoint_timeout", "30s")]);
    let suggestion = |now: &str| {
        let now: Timestamp = now.parse().unwrap();
        suggest(&store, "c", &settings, &advice(), std::time::Duration::from_secs(60), now).unwrap()
    };
    let basis = |now: &str| suggestion(now).basis;
    // 14 WAL-triggered cycles (11 of them under a second: pgbench -i's load)
    // and the time-triggered ones ending at 08:09:39.062 and 08:10:36.239;
    // the manual checkpoint's (08:10:55.858) and the shutdown's are left out.
    assert_eq!(basis("2026-11-22T08:10:36.239Z").samples, 16, "the window includes its end");
    assert_eq!(basis("2026-11-22T08:10:36.238Z").samples, 15);
    let all = basis("2026-11-22T08:12:00Z");
    assert_eq!(all.samples, 16);
    assert_eq!(all.left_out.into_iter().collect::<Vec<_>>(), [(LeftOut::Downtime, 1), (LeftOut::Manual, 1)]);
    // The rate the WAL stayed under for 95 % of the time, not the bulk load's 100 MB/s.
    assert_eq!(all.peak_wal_rate_kb_s, Some(5799.4));
    assert_eq!(
        suggestion("2026-11-22T08:12:00Z").explanation[1],
        "Left out of the rate: 2 cycles: 1 spanning a shutdown, restart or recovery; 1 ending in a requested \
         checkpoint (CHECKPOINT, a base backup, CREATE DATABASE)."
    );
}

// --- Cycles weighted by time, evidence judged against the settings then ---

fn cycle(seconds: f64, rate_kb_s: f64) -> Cycle {
    Cycle { at: t0(), from: t0(), seconds, distance_kb: (seconds * rate_kb_s) as i64, rate_kb_s, wal_files_added: None }
}

#[test]
fn the_peak_is_the_rate_not_exceeded_for_p_percent_of_the_time() {
    // 15-stderr-default-noise's bulk load: 11 cycles of 0.2-0.5 s at 41-102 MB/s
    // (4.8 s in all) among 103 s of 0.2-5.8 MB/s. By count the p95 is 101555 kB/s.
    let mut cycles: Vec<Cycle> =
        [76_224.0, 78_971.0, 80_657.0, 101_555.0, 94_933.0, 97_332.0, 95_130.0, 66_085.0, 41_741.0, 51_795.0, 59_242.0]
            .iter()
            .map(|r| cycle(0.4, *r))
            .collect();
    cycles.extend([cycle(10.957, 4106.0), cycle(5.243, 3785.0), cycle(5.385, 5799.0)]);
    cycles.extend([cycle(29.857, 218.0), cycle(57.177, 150.0)]);
    let rates: Vec<f64> = cycles.iter().map(|c| c.rate_kb_s).collect();
    assert_eq!(percentile(&rates, 95.0), Some(101_555.0));
    // 113.02 s in all; up to 5799 kB/s covers 108.6 s (96.1 %), up to 4106 kB/s 103.2 s (91.3 %).
    assert_eq!(time_percentile(&cycles, 95.0), Some(5799.0));
    assert_eq!(time_percentile(&cycles, 90.0), Some(4106.0));
    assert_eq!(time_percentile(&cycles, 100.0), Some(101_555.0));
    // Equal times: the nearest rank.
    let even: Vec<Cycle> = (1..=20).map(|r| cycle(2.0, f64::from(r))).collect();
    assert_eq!(time_percentile(&even, 95.0), Some(19.0));
    assert_eq!(time_percentile(&even, 50.0), Some(10.0));
    assert_eq!(time_percentile(&[], 95.0), None);
}

/// A cycle without a finite rate or without duration weighs nothing: it is
/// never the percentile (a NaN rate sorts above every number; a cycle of
/// zero seconds at the lowest rate would be the p0).
#[test]
fn cycles_without_a_rate_or_a_duration_are_not_counted() {
    let nan = [cycle(10.0, 1000.0), cycle(10.0, f64::NAN)];
    assert_eq!(time_percentile(&nan, 100.0), Some(1000.0));
    let infinite = [cycle(10.0, 1000.0), cycle(10.0, f64::INFINITY)];
    assert_eq!(time_percentile(&infinite, 100.0), Some(1000.0));
    let instant = [cycle(0.0, 5.0), cycle(10.0, 1000.0), cycle(10.0, 2000.0)];
    assert_eq!(time_percentile(&instant, 0.0), Some(1000.0));
    assert_eq!(time_percentile(&[cycle(0.0, 5.0)], 95.0), None);
}

/// A history of `before` forced 20 s cycles at `rate_before` under 32MB,
/// then `after` time-driven 300 s cycles at `rate_after` under 1280MB (the
/// first of them spans the change).
fn changed_at_size(before: i64, rate_before: i64, after: i64, rate_after: i64) -> (SizingHistory, SettingChange) {
    let period_before = 20;
    let mut points: Vec<PointStart> =
        (0..=before).map(|i| point(i * period_before, "wal", Some(rate_before * period_before), 0)).collect();
    let last_forced = before * period_before;
    points.extend((1..=after).map(|i| point(last_forced + i * 300, "time", Some(rate_after * 300), 0)));
    let history = SizingHistory { points, ..SizingHistory::default() };
    // Reloaded a second after the last forced checkpoint started.
    let change_at = last_forced + 1;
    let change = SettingChange {
        at: at(change_at),
        name: "max_wal_size".into(),
        old: Some("32MB".into()),
        new: Some("1280MB".into()),
        source: crate::settings::ValueSource::Log { at: at(change_at) },
    };
    (history, change)
}

#[test]
fn forced_checkpoints_before_a_change_do_not_hold_the_size_and_enough_cycles_since_replace_them() {
    // 126 forced cycles at 1000 kB/s under 32MB, then 1280MB: 5 timed cycles at 500 kB/s
    // after the one that spans the change.
    let (history, change) = changed_at_size(126, 1000, 6, 500);
    let p = pg(15, 1280.0, 0.9);
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), Some(change.clone()));
    // W = 500 kB/s x 300 s = 146.5 MB; x 1.25 = 183.1 MB -> 25 segments (trigger 12 x 16 = 192 MB) -> 448MB.
    assert_eq!(s.suggested.max_wal_size_mb, Some(448));
    assert_eq!(s.sql, None, "1280MB is already above it");
    assert_eq!((s.basis.samples, s.basis.forced_checkpoints, s.basis.forced_at_current_settings), (5, 127, 0));
    assert_eq!(s.basis.settings_changed, Some(change));
    assert_eq!(s.basis.left_out.get(&LeftOut::OtherSettings), Some(&127));
    let text = s.explanation.join("\n");
    assert!(!text.contains("Keep max_wal_size at least"), "{text}");
    assert!(!text.contains("cycles were short"), "{text}");
    assert!(text.contains("Left out of the rate: 127 cycles: 127 run under the settings before the latest change."));
    // The time as tables show it (the system's zone in a unit test).
    let when = crate::timefmt::table_time("2026-11-01T00:42:01Z".parse().unwrap());
    assert!(
        text.contains(&format!(
            "max_wal_size changed from 32MB to 1280MB at {when} (logged): \
             the 127 forced checkpoints before ran under the old settings and do not count against the current \
             ones; the rate comes from the 5 cycles since."
        )),
        "{text}"
    );
    assert!(text.contains("The current max_wal_size 1280MB is enough."), "{text}");
    // Without the change known, the same history keeps the old verdict.
    let unaware = from_history("main", Settings::default(), &history, t0(), &p, &advice(), None);
    assert_eq!(unaware.basis.forced_at_current_settings, 127);
    assert!(unaware.explanation.iter().any(|e| e.starts_with("Keep max_wal_size at least 1280MB: 127 forced")));
}

#[test]
fn too_few_cycles_since_a_change_keep_the_older_ones_and_say_how_many_more_are_needed() {
    let (history, change) = changed_at_size(30, 1000, 4, 500);
    let p = pg(15, 1280.0, 0.9);
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), Some(change));
    assert_eq!((s.basis.samples, s.basis.forced_at_current_settings), (34, 0));
    assert_eq!(s.basis.left_out.get(&LeftOut::OtherSettings), None);
    let text = s.explanation.join("\n");
    assert!(
        text.contains(
            "only 3 cycles ran since, fewer than the 5 needed ([advice] min_samples): the rate still includes the \
             31 before, measured under the old settings, until 2 more have run."
        ),
        "{text}"
    );
    // 1000 kB/s covers 600 of 1800 s: the time-weighted p95 is still the old rate, but
    // nothing forced since the change holds 1280MB up: 768MB suffices.
    assert_eq!(s.suggested.max_wal_size_mb, Some(768));
    assert!(!text.contains("Keep max_wal_size"), "{text}");
}

#[test]
fn one_cycle_since_a_change_is_said_in_the_singular() {
    let (history, change) = changed_at_size(30, 1000, 2, 500);
    let p = pg(15, 1280.0, 0.9);
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), Some(change));
    let text = s.explanation.join("\n");
    assert!(text.contains("; only 1 cycle ran since, fewer than the 5 needed"), "{text}");
}

#[test]
fn a_first_logged_change_does_not_claim_the_value_before() {
    let (history, mut change) = changed_at_size(30, 1000, 6, 500);
    change.old = None;
    let p = pg(15, 1280.0, 0.9);
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), Some(change.clone()));
    let changed = |s: &Suggestion| s.explanation.iter().find(|e| e.contains(" changed")).cloned().unwrap_or_default();
    let when = crate::timefmt::table_time("2026-11-01T00:10:01Z".parse().unwrap());
    assert!(changed(&s).starts_with(&format!("max_wal_size changed to 1280MB at {when} (logged):")));
    // Set in a conf file where it was not before: from the default.
    change.source = crate::settings::ValueSource::ConfFile { path: "/d/postgresql.auto.conf".into(), line: 3 };
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), Some(change));
    assert!(changed(&s).starts_with(&format!(
        "max_wal_size changed from its default to 1280MB at {when} (in /d/postgresql.auto.conf:3):"
    )));
}

#[test]
fn a_change_before_the_window_changes_nothing() {
    let (history, mut change) = changed_at_size(30, 1000, 6, 500);
    change.at = at(-10);
    let p = pg(15, 32.0, 0.9);
    let s = from_history("main", Settings::default(), &history, t0(), &p, &advice(), Some(change));
    assert_eq!((s.basis.samples, s.basis.forced_at_current_settings), (36, 31));
    assert_eq!(s.basis.settings_changed, None);
    assert!(!s.explanation.iter().any(|e| e.contains("changed from")));
}
