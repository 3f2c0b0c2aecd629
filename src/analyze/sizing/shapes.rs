//! The advice's edge shapes and the invariants it keeps: cycles longer than
//! checkpoint_timeout, a load whose percentile and median lie far apart,
//! min_wal_size against max_wal_size, and every [advice] value within its
//! caps on arbitrary histories.

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use super::*;
use crate::model::event::{PointKind, Trigger};
use crate::store::checkpoints::{PointStart, SizingHistory};

fn t0() -> Timestamp {
    "2026-11-01T00:00:00Z".parse().unwrap()
}

/// PostgreSQL 15 with 16 MB segments, checkpoint_timeout 5min, cct 0.9.
fn pg15(max_mb: f64, min_mb: f64) -> Params {
    Params {
        max_wal_size_mb: max_mb,
        min_wal_size_mb: min_mb,
        timeout_s: 300.0,
        completion_target: 0.9,
        segment_mb: 16.0,
        wal_keep_mb: 0.0,
        version: Some(15),
    }
}

/// One cycle of a history: seconds since the previous start, its trigger,
/// the distance of the checkpoint that ends it, and the WAL files it added.
#[derive(Debug, Clone, Copy)]
struct Step {
    seconds: f64,
    trigger: Trigger,
    distance_kb: i64,
    added: Option<i64>,
}

fn step(seconds: f64, trigger: Trigger, distance_kb: i64, added: i64) -> Step {
    Step { seconds, trigger, distance_kb, added: Some(added) }
}

/// The starts of `steps` after a first time-triggered start at t0.
fn history(steps: &[Step]) -> SizingHistory {
    let first = PointStart {
        kind: PointKind::Checkpoint,
        started_at: t0(),
        trigger: Some(Trigger::Time),
        distance_kb: Some(1),
        wal_files_added: Some(0),
    };
    let mut at = t0();
    let mut points = vec![first];
    for s in steps {
        at += SignedDuration::from_millis((s.seconds * 1000.0).round() as i64);
        points.push(PointStart {
            kind: PointKind::Checkpoint,
            started_at: at,
            trigger: Some(s.trigger),
            distance_kb: Some(s.distance_kb),
            wal_files_added: s.added,
        });
    }
    SizingHistory { points, ..SizingHistory::default() }
}

fn advise(steps: &[Step], params: &Params, advice: &AdviceSection) -> Suggestion {
    from_history("main", Settings::default(), &history(steps), t0(), params, advice, None)
}

/// A server whose checkpoints take 15 minutes against checkpoint_timeout =
/// 5min (the disk cannot keep up): each time checkpoint starts when the one
/// before it ends, 900 s after it, with 900 s of WAL since its REDO. Sized
/// for the rate over 300 s (768MB: the WAL trigger at 368 MB), the next
/// 879 MB cycle would be a forced checkpoint; its whole distance counts.
#[test]
fn overrunning_cycles_are_sized_for_their_whole_distance() {
    let steps = vec![step(900.0, Trigger::Time, 900_000, 3); 10];
    let s = advise(&steps, &pg15(4096.0, 80.0), &AdviceSection::default());
    assert_eq!(s.basis.peak_wal_rate_kb_s, Some(1000.0));
    // 900,000 kB = 878.9 MB between starts; x 1.25 = 1098.6 MB -> 2128 MB in segments -> 2304MB.
    assert_eq!(s.basis.projected_wal_per_timeout_mb, Some(878.9));
    assert_eq!(s.suggested.max_wal_size_mb, Some(2304));
    let p = pg15(4096.0, 80.0);
    assert!(p.trigger_mb(2304.0) >= 878.9, "the suggested size's trigger covers an overrunning cycle's WAL");
    // The typical cycle's 878.9 MB x 1.9 = 1670 MB -> 1792MB, under the suggested max.
    assert_eq!(s.suggested.min_wal_size_mb, Some(1792));
    assert_eq!(s.sql.as_deref(), Some("ALTER SYSTEM SET min_wal_size = '1792MB';\nSELECT pg_reload_conf();"));
    let text = s.explanation.join("\n");
    assert!(
        text.contains(
            "1,000.0 kB/s, 293.0 MB per checkpoint_timeout (300s); 10 cycles ran longer than checkpoint_timeout \
             (a checkpoint that overran, or time checkpoints skipped while the server was idle) and count with \
             their whole distance, since the next checkpoint cannot start sooner: up to 878.9 MB of WAL between two \
             checkpoint starts (p95 by time)."
        ),
        "{text}"
    );
    assert!(text.contains("max_wal_size >= 1.90 x (878.9 MB x headroom 1.25 + 16 MB segment)"), "{text}");
    // A cycle of exactly checkpoint_timeout is not an overrun: the rate's projection, and its sentence.
    let on_time = advise(&vec![step(300.0, Trigger::Time, 300_000, 0); 10], &p, &AdviceSection::default());
    assert_eq!(on_time.basis.projected_wal_per_timeout_mb, Some(293.0));
    assert_eq!(on_time.suggested.max_wal_size_mb, Some(768));
    assert!(on_time.explanation.iter().any(|e| e.contains("so up to 293.0 MB of WAL per checkpoint_timeout (300s).")));
    // Nor is one started up to a second late, as PostgreSQL's whole-second
    // schedule does: its WAL counts as it is (1000 kB/s x 301 s), without the overrun's sentence.
    let late = advise(&vec![step(301.0, Trigger::Time, 301_000, 0); 10], &p, &AdviceSection::default());
    assert_eq!(late.basis.projected_wal_per_timeout_mb, Some(293.9));
    assert!(late.explanation.iter().any(|e| e.contains("so up to 293.9 MB of WAL per checkpoint_timeout (300s).")));
    // An overrun that is not the percentile's cycle leaves W at the rate's
    // projection, and the explanation says nothing of overruns.
    let mut quiet_overrun = vec![step(300.0, Trigger::Time, 300_000, 0); 10];
    quiet_overrun.push(step(900.0, Trigger::Time, 9_000, 0));
    let s = advise(&quiet_overrun, &p, &AdviceSection::default());
    assert_eq!(s.basis.projected_wal_per_timeout_mb, Some(293.0));
    assert!(s.explanation.iter().any(|e| e.contains("so up to 293.0 MB of WAL per checkpoint_timeout (300s).")));
    assert!(!s.explanation.iter().any(|e| e.contains("ran longer")), "{:?}", s.explanation);
    // A second and a millisecond late is an overrun.
    let overran = advise(&vec![step(301.001, Trigger::Time, 301_001, 0); 10], &p, &AdviceSection::default());
    assert!(overran.explanation.iter().any(|e| e.contains("10 cycles ran longer than checkpoint_timeout")));
}

/// Cycles shorter than checkpoint_timeout still project their rate over a
/// whole checkpoint_timeout; only the longer ones count with their distance.
#[test]
fn short_and_overrunning_cycles_are_each_projected_by_their_own_length() {
    let c = |seconds: f64, rate: f64| Cycle {
        at: t0(),
        from: t0(),
        seconds,
        distance_kb: (seconds * rate) as i64,
        rate_kb_s: rate,
        wal_files_added: None,
    };
    assert_eq!(projected_kb(&c(20.0, 1000.0), 300.0), 300_000.0);
    assert_eq!(projected_kb(&c(300.0, 1000.0), 300.0), 300_000.0);
    assert_eq!(projected_kb(&c(300.5, 1000.0), 300.0), 300_500.0);
    assert_eq!(projected_kb(&c(3600.0, 10.0), 300.0), 36_000.0);
}

/// A load whose time-weighted p95 and median lie ten times apart: 17
/// cycles at 200 kB/s and 3 at 2000 kB/s, all 300 s (15 % of the time at
/// the high rate). The p95 is the high rate, the p50 and p85 the low one; a
/// model taking the median for the peak halves nothing here, it gives a
/// tenth. min_wal_size comes from the median cycle, not the peak.
#[test]
fn the_peak_is_the_configured_percentile_by_time_not_the_median() {
    let mut steps = vec![step(300.0, Trigger::Time, 60_000, 1); 17];
    steps.extend(vec![step(300.0, Trigger::Time, 600_000, 1); 3]);
    let p = pg15(4096.0, 80.0);
    let at = |percentile: f64| advise(&steps, &p, &AdviceSection { percentile, ..AdviceSection::default() });
    let p95 = at(95.0);
    assert_eq!(p95.basis.peak_wal_rate_kb_s, Some(2000.0));
    // 585.9 MB per checkpoint_timeout; x 1.25 = 732.4 MB -> 1440 MB in segments -> 1536MB.
    assert_eq!(p95.suggested.max_wal_size_mb, Some(1536));
    // The median cycle's 58.6 MB x 1.9 = 111.3 MB -> 128MB (the p95 cycle's would be 1280MB).
    assert_eq!(p95.suggested.min_wal_size_mb, Some(128));
    assert!(p95.explanation.iter().any(|e| e.starts_with("Peak WAL rate (p95 by time")), "{:?}", p95.explanation);
    // 85 % of the time is at 200 kB/s: up to p85 the low rate, above it the high one.
    assert_eq!(at(85.0).basis.peak_wal_rate_kb_s, Some(200.0));
    assert_eq!(at(85.1).basis.peak_wal_rate_kb_s, Some(2000.0));
    let median = at(50.0);
    assert_eq!(median.basis.peak_wal_rate_kb_s, Some(200.0));
    // 58.6 MB; x 1.25 = 73.2 MB -> 192MB.
    assert_eq!(median.suggested.max_wal_size_mb, Some(192));
    assert_eq!(median.suggested.min_wal_size_mb, Some(128));
    // By count the p95 would be the same here; by time it is not when the
    // fast cycles are short: 3 cycles of 30 s at 2000 kB/s are 1.7 % of the time.
    let mut short = vec![step(300.0, Trigger::Time, 60_000, 0); 17];
    short.extend(vec![step(30.0, Trigger::Wal, 60_000, 0); 3]);
    let s = advise(&short, &p, &AdviceSection::default());
    assert_eq!(s.basis.peak_wal_rate_kb_s, Some(200.0));
    assert_eq!(s.basis.forced_at_current_settings, 3);
    // Forced at the current settings: never below the current 4096MB.
    assert_eq!(s.suggested.max_wal_size_mb, Some(4096));
}

/// A nightly batch on a server idle the rest of the time (PostgreSQL skips
/// time checkpoints when nothing was written): 11 busy cycles of 300 s with
/// 500 MB of WAL and WAL files added, then 10 idle cycles of 10 h with 16 MB.
/// The busy cycles are 0.9 % of the time, so the p95 sizes for the idle
/// load (128MB), while the median cycle is a busy one (500 MB x 1.9 =
/// 950 MB): min_wal_size is capped at the suggested max_wal_size, never above.
#[test]
fn min_wal_size_never_exceeds_the_suggested_max_wal_size() {
    let mut steps = vec![step(300.0, Trigger::Time, 512_000, 5); 11];
    steps.extend(vec![step(36_000.0, Trigger::Time, 16_384, 0); 10]);
    let s = advise(&steps, &pg15(1024.0, 32.0), &AdviceSection::default());
    assert_eq!(s.basis.projected_wal_per_timeout_mb, Some(16.0));
    assert_eq!(s.suggested.max_wal_size_mb, Some(128));
    assert_eq!(s.suggested.min_wal_size_mb, Some(128));
    assert_eq!(s.sql.as_deref(), Some("ALTER SYSTEM SET min_wal_size = '128MB';\nSELECT pg_reload_conf();"));
    // Already at that size: nothing to raise.
    let s = advise(&steps, &pg15(1024.0, 128.0), &AdviceSection::default());
    assert_eq!(s.suggested.min_wal_size_mb, None);
    assert_eq!(s.sql, None);
}

// --- Invariants on arbitrary histories ---

/// The smallest value among the cycles whose cycles at or below it cover at
/// least `p` % of their time: the definition, by brute force.
fn by_definition(cycles: &[(f64, f64)], p: f64) -> Option<f64> {
    let total: f64 = cycles.iter().map(|(_, s)| s).sum();
    let mut values: Vec<f64> = cycles.iter().map(|(v, _)| *v).collect();
    values.sort_by(f64::total_cmp);
    values.into_iter().find(|v| {
        let covered: f64 = cycles.iter().filter(|(w, _)| w <= v).map(|(_, s)| s).sum();
        covered >= total * p / 100.0 * (1.0 - 1e-12)
    })
}

fn trigger() -> impl Strategy<Value = Trigger> {
    prop_oneof![Just(Trigger::Time), Just(Trigger::Wal)]
}

fn a_step() -> impl Strategy<Value = Step> {
    // From a bulk load's sub-second forced cycles to a day without WAL.
    (prop_oneof![0.2..30.0, 30.0..600.0, 600.0..90_000.0], trigger(), 1..4_000_000i64, prop::option::of(0..6i64))
        .prop_map(|(seconds, trigger, distance_kb, added)| Step { seconds, trigger, distance_kb, added })
}

fn params() -> impl Strategy<Value = Params> {
    (
        prop_oneof![Just(Some(10)), Just(Some(11)), Just(Some(15)), Just(None)],
        prop_oneof![Just(16.0), Just(64.0)],
        4.0..1024.0f64,
        2.0..64.0f64,
        prop_oneof![Just(30.0), Just(300.0), Just(3600.0)],
        0.1..1.0f64,
    )
        .prop_map(|(version, segment_mb, max_segments, min_segments, timeout_s, completion_target)| Params {
            max_wal_size_mb: (max_segments.round() * segment_mb),
            min_wal_size_mb: (min_segments.round() * segment_mb),
            timeout_s,
            completion_target,
            segment_mb,
            wal_keep_mb: 0.0,
            version,
        })
}

/// `[advice]` anywhere within what the config accepts.
fn advice() -> impl Strategy<Value = AdviceSection> {
    (prop_oneof![Just(100.0), 0.1..100.0f64], prop_oneof![Just(1.0), Just(10.0), 1.0..10.0f64], 1..8usize).prop_map(
        |(percentile, headroom, min_samples)| AdviceSection {
            percentile,
            headroom,
            min_samples,
            ..AdviceSection::default()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Whatever the history and the [advice] values: the peak and W are the
    /// configured percentile by time, the suggested max_wal_size keeps W x
    /// headroom under PostgreSQL's WAL trigger, goes below the current size
    /// only without forced checkpoints, and min_wal_size, when advised, is
    /// above the current one and never above the suggested max_wal_size.
    #[test]
    fn the_advice_keeps_its_invariants(steps in prop::collection::vec(a_step(), 0..30), p in params(), a in advice()) {
        let s = advise(&steps, &p, &a);
        let history = history(&steps);
        let cycles = cycles(&history, t0()).usable;
        prop_assert_eq!(s.basis.samples, cycles.len());
        let rates: Vec<(f64, f64)> = cycles.iter().map(|c| (c.rate_kb_s, c.seconds)).collect();
        let peak = by_definition(&rates, a.percentile);
        prop_assert_eq!(s.basis.peak_wal_rate_kb_s, peak.map(round1));
        let projected: Vec<(f64, f64)> =
            cycles.iter().map(|c| (c.rate_kb_s * c.seconds.max(p.timeout_s), c.seconds)).collect();
        let w_mb = by_definition(&projected, a.percentile).map(|kb| kb / 1024.0);
        prop_assert_eq!(s.basis.projected_wal_per_timeout_mb, w_mb.map(round1));
        let forced = steps.iter().filter(|s| s.trigger == Trigger::Wal).count() as i64;
        prop_assert_eq!(s.basis.forced_at_current_settings, forced);

        let Some(max) = s.suggested.max_wal_size_mb else {
            prop_assert!(cycles.len() < a.min_samples, "no suggestion from {} cycles", cycles.len());
            prop_assert_eq!(s.suggested.min_wal_size_mb, None);
            prop_assert_eq!(s.sql, None);
            return Ok(());
        };
        prop_assert!(cycles.len() >= a.min_samples);
        let need = w_mb.unwrap() * a.headroom;
        prop_assert!(p.trigger_mb(max as f64) >= need, "trigger of {max}MB below {need} MB");
        prop_assert_eq!(max as f64 % p.segment_mb, 0.0, "whole segments");
        let sized = readable_mb(required_mb(need, &p), p.segment_mb);
        let current = p.max_wal_size_mb.ceil() as u64;
        prop_assert_eq!(max, if forced > 0 { sized.max(current) } else { sized });
        if let Some(min) = s.suggested.min_wal_size_mb {
            // Also under the size in force once the SQL ran: the suggested
            // one when it is raised, else the current one, which is larger.
            prop_assert!(min <= max, "min_wal_size {min}MB above max_wal_size {max}MB");
            prop_assert!(min as f64 > p.min_wal_size_mb);
        }
        let sql = s.sql.clone().unwrap_or_default();
        prop_assert_eq!(sql.contains("max_wal_size"), max as f64 > p.max_wal_size_mb, "{}", sql);
        prop_assert_eq!(sql.contains("min_wal_size"), s.suggested.min_wal_size_mb.is_some(), "{}", sql);
    }
}
