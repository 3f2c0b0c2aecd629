//! The max_wal_size suggestion from observed WAL distance.
//!
//! # The PostgreSQL rule
//! `xlog.c` (`CalculateCheckpointSegments`, `XLogCheckpointNeeded`):
//!
//! ```text
//! CheckPointSegments = floor(max_wal_size / segment / (1 + checkpoint_completion_target))   (PG 11+)
//!                      floor(max_wal_size / segment / (2 + checkpoint_completion_target))   (9.6, 10)
//! a checkpoint is requested ("checkpoint starting: wal") once the WAL written
//! since the last checkpoint's REDO reaches CheckPointSegments - 1 segments.
//! ```
//!
//! A time-triggered checkpoint starts `checkpoint_timeout` after the previous
//! one started. So checkpoints stay time-driven only while the WAL written in
//! one `checkpoint_timeout` stays below the trigger:
//!
//! ```text
//! max_wal_size >= (1 + cct) * (W + 1 segment),   W = peak WAL written between two starts
//! ```
//!
//! # Measuring W
//! Each `checkpoint complete` line logs `distance`: the WAL between the
//! previous checkpoint's REDO and this one's, i.e. written since the previous
//! checkpoint started. `distance / (time since the previous start)` is the
//! WAL rate of that cycle. Cycles are left out by what ends them, never by
//! their length (see [`LeftOut`]): those that span a shutdown, crash or
//! recovery (their time includes downtime), those ending in a requested
//! checkpoint, those without a distance. The peak rate is a high percentile
//! (`[advice] percentile`, p95) of the cycles in the lookback window weighted
//! by the time each covers: the rate the WAL stayed at or below for 95 % of
//! the time. Weighting by count instead let a bulk load's many sub-second
//! cycles (a few seconds in all, 100 MB/s) set W for a whole
//! checkpoint_timeout. `W = peak × checkpoint_timeout`, taken per cycle and
//! with the same percentile: a cycle longer than checkpoint_timeout (its
//! checkpoint started late because the one before it overran, or a time
//! checkpoint was skipped on an idle server) counts with its whole distance,
//! since that much WAL then lies between two starts; sized for the rate
//! alone, the next overrun would end in a forced checkpoint. Evidence from before
//! the latest change of max_wal_size, checkpoint_timeout or
//! checkpoint_completion_target is judged against the settings then: its
//! forced checkpoints do not hold the size up, and its cycles are left out
//! once `[advice] min_samples` cycles ran since.
//!
//! # The suggestion
//! `W × headroom` (default 1.25) is put through the rule above, rounded up to
//! whole segments, then to a readable value (next 64 MB up to 1 GB, next
//! 256 MB up to 4 GB, next GB above). It never goes below the current value while forced
//! checkpoints are seen at the current settings; a value far above the need only earns a note.
//!
//! This module holds the numbers; the sentences that explain them to a
//! person are built in `sizing/explain.rs` from the model's intermediate results.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

pub(crate) use crate::analyze::inputs::percentile;
pub(crate) use crate::analyze::inputs::Params;
use crate::analyze::recovery::{crash_speed, ReplaySpeed};
use crate::analyze::whatif::timeline::{Logged, TimelineError};
use crate::analyze::window::Window;
use crate::config::AdviceSection;
use crate::model::event::Trigger;
use crate::settings::{SettingChange, Settings};
use crate::store::checkpoints::{PointStart, SizingHistory};
use crate::store::events::Replay;
use crate::store::{Store, StoreError};

/// How far the suggestion can be trusted: low below `min_samples` cycles,
/// high with four times that over a day or more, medium between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Confidence {
    Low,
    Medium,
    High,
}

impl std::fmt::Display for Confidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        })
    }
}

fn settings_values<S: serde::Serializer>(settings: &Settings, serializer: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&settings.values, serializer)
}

/// `walwatch suggest --format json`; the keys are a public interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Suggestion {
    pub(crate) cluster: String,
    /// The settings the advice used, each with its source: in JSON the same
    /// `{name: {"value", "source"}}` as `walwatch settings`' `current`.
    #[serde(serialize_with = "settings_values")]
    pub(crate) current: Settings,
    pub(crate) suggested: Suggested,
    pub(crate) basis: Basis,
    /// "high", "medium" or "low" (too few samples: no suggestion).
    pub(crate) confidence: Confidence,
    pub(crate) cost: Cost,
    /// `[advice] max_recovery` and `max_pg_wal` at the suggested size; null
    /// when neither is set or there is no suggestion.
    pub(crate) bounds: Option<Bounds>,
    /// Forced checkpoints against size, by the replay of the window (`walwatch suggest` only; else empty).
    pub(crate) curve: Vec<CurvePoint>,
    /// Sentences, in order: what was seen, the formula with numbers, the cost, the confidence.
    pub(crate) explanation: Vec<String>,
    /// `ALTER SYSTEM …; SELECT pg_reload_conf();` or None when nothing should change.
    pub(crate) sql: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Suggested {
    pub(crate) max_wal_size_mb: Option<u64>,
    pub(crate) min_wal_size_mb: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Basis {
    /// Usable checkpoint cycles in the window.
    pub(crate) samples: usize,
    /// The lookback window, e.g. "7d".
    pub(crate) window: String,
    pub(crate) peak_wal_rate_kb_s: Option<f64>,
    pub(crate) projected_wal_per_timeout_mb: Option<f64>,
    /// WAL-triggered checkpoints in the window.
    pub(crate) forced_checkpoints: i64,
    /// Those since the latest settings change: the ones that say the current
    /// max_wal_size is too small (all of them when no change is known).
    pub(crate) forced_at_current_settings: i64,
    pub(crate) timed_checkpoints: i64,
    pub(crate) too_frequent: i64,
    /// Checkpoints in the window whose complete line has no `distance`
    /// (PostgreSQL 9.4 and older): nothing to size from.
    pub(crate) checkpoints_without_distance: i64,
    /// The latest change of max_wal_size, checkpoint_timeout or
    /// checkpoint_completion_target walwatch knows of, if any.
    pub(crate) settings_changed: Option<SettingChange>,
    /// Cycles in the window that gave no WAL rate, by why.
    pub(crate) left_out: BTreeMap<LeftOut, usize>,
}

/// What following the suggestion costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Cost {
    /// pg_wal may grow to about max_wal_size + wal_keep_size.
    pub(crate) pg_wal_mb: Option<u64>,
    /// WAL a crash just before a checkpoint completes would replay.
    pub(crate) crash_recovery_wal_mb: Option<f64>,
    /// The replay speed of the cluster's own crash recoveries, if any
    /// (a standby's replay is no measure of it).
    pub(crate) replay_mb_s: Option<f64>,
    /// The `redo done` of the newest crash recovery that speed comes from.
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) replay_measured_at: Option<Timestamp>,
    pub(crate) crash_recovery_s: Option<f64>,
}

/// One measured checkpoint cycle: from one checkpoint start to the next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cycle {
    /// The start of the checkpoint that ends the cycle.
    pub(crate) at: Timestamp,
    /// The start of the checkpoint before it, where the cycle's WAL begins.
    pub(crate) from: Timestamp,
    pub(crate) seconds: f64,
    pub(crate) distance_kb: i64,
    pub(crate) rate_kb_s: f64,
    pub(crate) wal_files_added: Option<i64>,
}

/// Why a cycle in the window gives no WAL rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LeftOut {
    /// It spans a shutdown, restart or recovery: its time includes downtime.
    Downtime,
    /// It ends in a requested checkpoint (CHECKPOINT, a base backup, CREATE
    /// DATABASE): when that came says nothing of the load, and back-to-back
    /// ones are milliseconds apart.
    Manual,
    /// Its checkpoint never completed, so no distance was logged.
    NoDistance,
    /// The log's timestamps do not separate its two starts (%t: whole seconds).
    NoTime,
    /// It ran before the latest change of max_wal_size, checkpoint_timeout or
    /// checkpoint_completion_target, and enough cycles ran since.
    OtherSettings,
}

/// The cycles in a window: those that give a WAL rate, and how many did not and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Cycles {
    pub(crate) usable: Vec<Cycle>,
    pub(crate) left_out: BTreeMap<LeftOut, usize>,
}

/// Checkpoints that end or follow a server run: their cycle includes downtime.
const NOT_A_CYCLE: [Trigger; 2] = [Trigger::Shutdown, Trigger::EndOfRecovery];

/// The cycles whose checkpoint started at or after `since`. Left out by
/// what ends them, never by their length: under a small max_wal_size the
/// busiest WAL-triggered cycles are shorter than a second.
pub(crate) fn cycles(history: &SizingHistory, since: Timestamp) -> Cycles {
    // A binary search per cycle, not a scan of every restart: a long log with
    // many restarts made that quadratic (a minute per alert pass).
    let mut restarts = history.restarts.clone();
    restarts.sort_unstable();
    let restarted = |from: Timestamp, to: Timestamp| {
        let first_after = restarts.partition_point(|t| *t <= from);
        restarts.get(first_after).is_some_and(|t| *t <= to)
    };
    let mut out = Cycles::default();
    for w in history.points.windows(2).filter(|w| w[1].started_at >= since) {
        let (a, b) = (&w[0], &w[1]);
        match cycle(a, b, restarted(a.started_at, b.started_at)) {
            Ok(c) => out.usable.push(c),
            Err(reason) => *out.left_out.entry(reason).or_default() += 1,
        }
    }
    out
}

/// The cycle from start `a` to the next start `b`, or why it gives no WAL
/// rate; `restarted`: a server (re)start lies between them. One rule for
/// `suggest` and `history` (the WAL rate per cycle).
pub(crate) fn cycle(a: &PointStart, b: &PointStart, restarted: bool) -> Result<Cycle, LeftOut> {
    let outside_a_run = [a, b].iter().any(|p| p.trigger.is_some_and(|t| NOT_A_CYCLE.contains(&t)));
    let seconds = (b.started_at - a.started_at).total(jiff::Unit::Second).unwrap_or(0.0);
    match b.distance_kb {
        _ if outside_a_run || restarted => Err(LeftOut::Downtime),
        _ if b.trigger == Some(Trigger::Manual) => Err(LeftOut::Manual),
        None => Err(LeftOut::NoDistance),
        Some(_) if seconds <= 0.0 => Err(LeftOut::NoTime),
        Some(distance_kb) => Ok(Cycle {
            at: b.started_at,
            from: a.started_at,
            seconds,
            distance_kb,
            rate_kb_s: distance_kb as f64 / seconds,
            wal_files_added: b.wal_files_added,
        }),
    }
}

/// The time-weighted percentile of the cycles' rates: the smallest rate such
/// that the cycles at or below it cover at least p% of the cycles' time.
pub(crate) fn time_percentile(cycles: &[Cycle], p: f64) -> Option<f64> {
    time_weighted(cycles, p, |c| c.rate_kb_s)
}

/// The time-weighted percentile of `value` over the cycles: the smallest
/// value such that the cycles at or below it cover at least p% of the
/// cycles' time. Cycles without a finite rate or without duration weigh nothing.
fn time_weighted(cycles: &[Cycle], p: f64, value: impl Fn(&Cycle) -> f64) -> Option<f64> {
    let mut by_value: Vec<(f64, f64)> =
        cycles.iter().filter(|c| c.rate_kb_s.is_finite() && c.seconds > 0.0).map(|c| (value(c), c.seconds)).collect();
    by_value.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = by_value.iter().map(|(_, s)| s).sum();
    let mut covered = 0.0;
    for (v, seconds) in &by_value {
        covered += seconds;
        // A relative epsilon: sums of fractions of a second are not exact.
        if covered >= total * (p / 100.0) * (1.0 - 1e-12) {
            return Some(*v);
        }
    }
    by_value.last().map(|(v, _)| *v)
}

/// How late a time-triggered checkpoint may start and still be on time:
/// PostgreSQL schedules it from the previous start in whole seconds, so
/// cycles of checkpoint_timeout + 0.9 s are usual, and no overrun.
const ON_TIME_S: f64 = 1.0;

/// The WAL, in kB, a cycle's load puts between two checkpoint starts once
/// checkpoints are time-driven: its rate over checkpoint_timeout, or its
/// whole distance when the cycle ran longer. A checkpoint cannot start
/// before the one before it ends, so after an overrun (or a time checkpoint
/// skipped on an idle server) the WAL since the REDO reaches the distance
/// before the next start: a trigger below it makes that next checkpoint a
/// forced one.
pub(crate) fn projected_kb(c: &Cycle, timeout_s: f64) -> f64 {
    c.rate_kb_s * c.seconds.max(timeout_s)
}

/// The smallest whole-segment max_wal_size whose trigger stays above `wal_mb`.
pub(crate) fn required_mb(wal_mb: f64, params: &Params) -> f64 {
    let mut segments = (wal_mb * params.divisor() / params.segment_mb).ceil().max(2.0);
    while params.trigger_mb(segments * params.segment_mb) < wal_mb {
        segments += 1.0;
    }
    segments * params.segment_mb
}

/// Up to a value a DBA would write: the next 64 MB up to 1 GB, the next
/// 256 MB up to 4 GB, the next GB above, and always whole segments. Finer
/// steps for small sizes keep the rounding from doubling a small need.
pub(crate) fn readable_mb(mb: f64, segment_mb: f64) -> u64 {
    let step = match mb {
        m if m <= 1024.0 => 64.0,
        m if m <= 4096.0 => 256.0,
        _ => 1024.0,
    };
    let step = (step / segment_mb).ceil().max(1.0) * segment_mb;
    ((mb / step).ceil().max(1.0) * step) as u64
}

/// "4GB", "1536MB": how the SQL and the text spell a size.
pub(crate) fn pg_size(mb: u64) -> String {
    crate::guc::units::size_text(mb)
}

/// The lookback window in the unit a DBA would use.
fn window_text(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s > 0 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s > 0 && s % 3600 == 0 => format!("{}h", s / 3600),
        _ => format!("{:#}", SignedDuration::try_from(d).unwrap_or(SignedDuration::ZERO)),
    }
}

/// The suggestion for `cluster` from its history in the lookback window.
pub(crate) fn suggest(
    store: &Store,
    cluster: &str,
    settings: &Settings,
    advice: &AdviceSection,
    skew_tolerance: std::time::Duration,
    now: Timestamp,
) -> Result<Suggestion, StoreError> {
    suggest_with(store, cluster, settings, advice, skew_tolerance, now, false)
}

/// [`suggest`], with `curve` worked out when `curve` is true.
pub(crate) fn suggest_with(
    store: &Store,
    cluster: &str,
    settings: &Settings,
    advice: &AdviceSection,
    skew_tolerance: std::time::Duration,
    now: Timestamp,
    curve: bool,
) -> Result<Suggestion, StoreError> {
    // The same window rule as the alerts: it ends now, or at the newest event
    // when the whole log is older (an import of last month's logs is still
    // advice); a line dated beyond the clock-skew tolerance is never the
    // newest event (see the clock_skew rule).
    let newest = store.events().log_times(cluster, skew_tolerance)?.newest;
    let window = Window::ending(now, newest, advice.lookback);
    let since = window.start;
    let until = window.end + SignedDuration::from_micros(1);
    let history = store.checkpoints().sizing_history(cluster, since, until)?;
    let params = Params::from_settings(settings);
    let changed = crate::settings::latest_change_in(store, cluster, &SIZING_SETTINGS, &settings.log_changes)?;
    let bounded = advice.max_recovery.is_some() || advice.max_pg_wal_mb.is_some();
    // The whatif replay of the window, only when something reads it.
    let logged = if bounded || curve { window_replay(store, cluster, since, until, settings)? } else { None };
    let probe = |mb: u64| probe_at(logged.as_ref(), mb);
    let probe: Option<&dyn Fn(u64) -> Probe> = logged.as_ref().map(|_| &probe as &dyn Fn(u64) -> Probe);
    let mut s = from_history_probed(cluster, settings.clone(), &history, since, &params, advice, changed, probe);
    if let (true, Some(probe)) = (curve, probe) {
        let speed = crash_speed(&history.replays).map(|s| s.mb_s);
        s.curve = curve_points(&s, &params, speed, probe);
    }
    Ok(s)
}

/// The logged period of the window, ready to replay; None without a checkpoint to start from.
fn window_replay(
    store: &Store,
    cluster: &str,
    since: Timestamp,
    until: Timestamp,
    settings: &Settings,
) -> Result<Option<Logged>, StoreError> {
    match crate::analyze::whatif::timeline::read(store, cluster, Some(since), Some(until), settings) {
        Ok(logged) => Ok(Some(logged)),
        Err(TimelineError::Empty(_)) => Ok(None),
        Err(TimelineError::Store(e)) => Err(e),
    }
}

fn probe_at(logged: Option<&Logged>, mb: u64) -> Probe {
    let o = logged.map(|l| l.at_size(mb as f64)).unwrap_or_default();
    Probe {
        forced: o.checkpoints.wal,
        too_frequent: o.too_frequent,
        peak_pg_wal_mb: o.peak_pg_wal_mb,
        max_replay_mb: o.max_replay_mb,
    }
}

/// One point of forced checkpoints against size: `suggest`'s `curve`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CurvePoint {
    pub(crate) max_wal_size_mb: u64,
    /// WAL-triggered checkpoints the replay of the window finds.
    pub(crate) forced: i64,
    pub(crate) too_frequent: i64,
    pub(crate) peak_pg_wal_mb: f64,
    /// A crash at the worst moment, at the crash recoveries' replay speed; null without one.
    pub(crate) recovery_s: Option<f64>,
}

/// The replay of the window at the current size, half the suggestion, the
/// suggestion and twice it (and the time-driven size when a bound held the
/// suggestion below it): how forced checkpoints fall with size.
fn curve_points(s: &Suggestion, params: &Params, speed: Option<f64>, probe: &dyn Fn(u64) -> Probe) -> Vec<CurvePoint> {
    let Some(size) = s.suggested.max_wal_size_mb else { return Vec::new() };
    let seg = params.segment_mb;
    let whole = |mb: f64| ((mb / seg).round().max(2.0) * seg) as u64;
    let mut sizes = vec![whole(params.max_wal_size_mb), whole(size as f64 / 2.0), size, 2 * size];
    // Held below the time-driven size by a bound: that size too.
    sizes.extend(s.bounds.as_ref().filter(|b| b.limiting.is_some()).map(|b| b.time_driven_max_wal_size_mb));
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|mb| {
            let p = probe(mb);
            CurvePoint {
                max_wal_size_mb: mb,
                forced: p.forced,
                too_frequent: p.too_frequent,
                peak_pg_wal_mb: round1(p.peak_pg_wal_mb),
                recovery_s: speed.filter(|r| *r > 0.0).map(|r| round1(p.max_replay_mb / r)),
            }
        })
        .collect()
}

/// The settings that decide when PostgreSQL checkpoints: evidence from
/// before their latest change was seen under other settings.
pub(crate) const SIZING_SETTINGS: [&str; 3] = ["max_wal_size", "checkpoint_timeout", "checkpoint_completion_target"];

/// The model on a history already read: cycles from `since` on, judged
/// against the settings in force since `changed` (when known).
#[cfg(test)]
pub(crate) fn from_history(
    cluster: &str,
    current: Settings,
    history: &SizingHistory,
    since: Timestamp,
    params: &Params,
    advice: &AdviceSection,
    changed: Option<SettingChange>,
) -> Suggestion {
    from_history_probed(cluster, current, history, since, params, advice, changed, None)
}

/// [`from_history`] with the bounds checked by `probe`: the replay of the
/// window at a given max_wal_size.
#[allow(clippy::too_many_arguments)]
pub(crate) fn from_history_probed(
    cluster: &str,
    current: Settings,
    history: &SizingHistory,
    since: Timestamp,
    params: &Params,
    advice: &AdviceSection,
    changed: Option<SettingChange>,
    probe: Option<&dyn Fn(u64) -> Probe>,
) -> Suggestion {
    let mut model = Model::new(history, since, params, advice, changed);
    model.probe = probe;
    let mut s = model.into_suggestion(cluster, current);
    s.explanation.extend(explain::inferred_inputs(&s.current));
    s.explanation.extend(explain::assumed_defaults(&s.current));
    s
}

/// The model's intermediate results, so that the explanation can show them.
struct Model<'a> {
    params: &'a Params,
    advice: &'a AdviceSection,
    /// The cycles the rate comes from.
    cycles: Vec<Cycle>,
    left_out: BTreeMap<LeftOut, usize>,
    forced: i64,
    forced_now: i64,
    timed: i64,
    too_frequent: i64,
    without_distance: i64,
    replays: Vec<Replay>,
    peak_kb_s: Option<f64>,
    /// W in kB: the time-weighted percentile of [`projected_kb`].
    projected_kb: Option<f64>,
    /// The replay of the window at a size, for the bounds; None: not checked.
    probe: Option<&'a dyn Fn(u64) -> Probe>,
    /// Usable cycles longer than checkpoint_timeout by more than [`ON_TIME_S`].
    overran: usize,
    change: Option<Change>,
}

/// The latest settings change inside the window, and what it did to the evidence.
struct Change {
    what: SettingChange,
    /// Usable cycles that started before it.
    cycles_before: usize,
    /// Whether those were left out (enough cycles ran since).
    left_out: bool,
}

impl<'a> Model<'a> {
    fn new(
        history: &SizingHistory,
        since: Timestamp,
        params: &'a Params,
        advice: &'a AdviceSection,
        changed: Option<SettingChange>,
    ) -> Model<'a> {
        let Cycles { usable, mut left_out } = cycles(history, since);
        let in_window: Vec<_> = history.points.iter().filter(|p| p.started_at >= since).collect();
        let count = |t: Trigger, from: Timestamp| {
            in_window.iter().filter(|p| p.trigger == Some(t) && p.started_at >= from).count() as i64
        };
        let changed = changed.filter(|c| c.at > since);
        let settings_from = changed.as_ref().map_or(since, |c| c.at);
        let (after, before): (Vec<Cycle>, Vec<Cycle>) = usable.into_iter().partition(|c| c.from >= settings_from);
        let drop_before = after.len() >= advice.min_samples && !before.is_empty();
        let change = changed.map(|what| Change { what, cycles_before: before.len(), left_out: drop_before });
        let cycles = if drop_before {
            left_out.insert(LeftOut::OtherSettings, before.len());
            after
        } else {
            [before, after].concat()
        };
        let peak_kb_s = time_percentile(&cycles, advice.percentile);
        let projected_kb = time_weighted(&cycles, advice.percentile, |c| projected_kb(c, params.timeout_s));
        let overran = cycles.iter().filter(|c| c.seconds > params.timeout_s + ON_TIME_S).count();
        Model {
            params,
            advice,
            forced: count(Trigger::Wal, since),
            forced_now: count(Trigger::Wal, settings_from),
            timed: count(Trigger::Time, since),
            too_frequent: history.too_frequent,
            without_distance: history.without_distance,
            replays: history.replays.clone(),
            peak_kb_s,
            projected_kb,
            probe: None,
            overran,
            cycles,
            left_out,
            change,
        }
    }

    fn enough(&self) -> bool {
        self.cycles.len() >= self.advice.min_samples
    }

    /// W: the peak WAL written between two checkpoint starts once they are
    /// time-driven, MB (the peak rate × checkpoint_timeout unless cycles
    /// overran, see [`projected_kb`]).
    fn projected_mb(&self) -> Option<f64> {
        self.projected_kb.map(|kb| kb / 1024.0)
    }

    /// The max_wal_size to suggest, MB.
    fn max_wal_size_mb(&self) -> Option<u64> {
        let need = required_mb(self.projected_mb()? * self.advice.headroom, self.params);
        let mut mb = readable_mb(need, self.params.segment_mb);
        let current = self.params.max_wal_size_mb.ceil() as u64;
        // Only forced checkpoints seen at the current settings say it is too small.
        if self.forced_now > 0 {
            mb = mb.max(current);
        }
        Some(mb)
    }

    /// min_wal_size advice when WAL files had to be created on most cycles:
    /// enough recycled segments for a typical cycle's WAL.
    fn min_wal_size_mb(&self, max_mb: u64) -> Option<u64> {
        let known: Vec<&Cycle> = self.cycles.iter().filter(|c| c.wal_files_added.is_some()).collect();
        let adding = known.iter().filter(|c| c.wal_files_added > Some(0)).count();
        if known.is_empty() || adding * 2 <= known.len() {
            return None;
        }
        let distances: Vec<f64> = known.iter().map(|c| c.distance_kb as f64 / 1024.0).collect();
        let typical = percentile(&distances, 50.0)? * (1.0 + self.params.completion_target);
        let mb = readable_mb(typical, self.params.segment_mb).min(max_mb);
        (mb as f64 > self.params.min_wal_size_mb).then_some(mb)
    }

    fn replay_speed(&self) -> Option<ReplaySpeed> {
        crash_speed(&self.replays)
    }

    fn confidence(&self) -> Confidence {
        let span = match (self.cycles.first(), self.cycles.last()) {
            (Some(a), Some(b)) => (b.at - a.at).total(jiff::Unit::Hour).unwrap_or(0.0),
            _ => 0.0,
        };
        match self.cycles.len() {
            n if n >= 4 * self.advice.min_samples && span >= 24.0 => Confidence::High,
            _ if self.enough() => Confidence::Medium,
            _ => Confidence::Low,
        }
    }

    fn into_suggestion(self, cluster: &str, current: Settings) -> Suggestion {
        let time_driven = self.enough().then(|| self.max_wal_size_mb()).flatten();
        let speed = self.replay_speed().map(|s| s.mb_s);
        let choice = time_driven
            .zip(self.probe)
            .and_then(|(mb, probe)| bounds::choose(mb, self.params, self.advice, speed, probe));
        let max = choice.as_ref().map_or(time_driven, |c| Some(c.size));
        let min = max.and_then(|m| self.min_wal_size_mb(m));
        let cost = self.cost(max, choice.as_ref());
        let explanation = self.explain(max, min, &cost, choice.as_ref());
        let held = choice.as_ref().is_some_and(|c| c.bounds.limiting.is_some());
        Suggestion {
            cluster: cluster.to_string(),
            current,
            suggested: Suggested { max_wal_size_mb: max, min_wal_size_mb: min },
            basis: Basis {
                samples: self.cycles.len(),
                window: window_text(self.advice.lookback),
                peak_wal_rate_kb_s: self.peak_kb_s.map(round1),
                projected_wal_per_timeout_mb: self.projected_mb().map(round1),
                forced_checkpoints: self.forced,
                forced_at_current_settings: self.forced_now,
                timed_checkpoints: self.timed,
                too_frequent: self.too_frequent,
                checkpoints_without_distance: self.without_distance,
                settings_changed: self.change.as_ref().map(|c| c.what.clone()),
                left_out: self.left_out.clone(),
            },
            confidence: self.confidence(),
            cost,
            bounds: choice.map(|c| c.bounds),
            curve: Vec::new(),
            explanation,
            sql: self.sql(max, min, held),
        }
    }

    fn cost(&self, max: Option<u64>, choice: Option<&bounds::Choice>) -> Cost {
        let speed = self.replay_speed();
        let replay = speed.map(|s| s.mb_s);
        let wal = match choice {
            // Held below the time-driven size: the replay's worst case at the size suggested.
            Some(c) if c.bounds.limiting.is_some() => Some(c.at_size.max_replay_mb),
            _ => self.projected_mb().map(|w| w * (1.0 + self.params.completion_target)),
        };
        Cost {
            pg_wal_mb: max.map(|m| m + self.params.wal_keep_mb.ceil() as u64),
            crash_recovery_wal_mb: wal.map(round1),
            replay_mb_s: replay.map(round1),
            replay_measured_at: speed.map(|s| s.measured_at),
            crash_recovery_s: wal.zip(replay).map(|(w, r)| round1(w / r)),
        }
    }

    /// `held`: a bound holds the size, which may then lower the current one.
    fn sql(&self, max: Option<u64>, min: Option<u64>, held: bool) -> Option<String> {
        let mut sql = String::new();
        let current = self.params.max_wal_size_mb;
        if let Some(m) = max.filter(|m| *m as f64 > current || (held && *m as f64 != current)) {
            sql.push_str(&format!("ALTER SYSTEM SET max_wal_size = '{}';\n", pg_size(m)));
        }
        if let Some(m) = min {
            sql.push_str(&format!("ALTER SYSTEM SET min_wal_size = '{}';\n", pg_size(m)));
        }
        (!sql.is_empty()).then(|| sql + "SELECT pg_reload_conf();")
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

mod bounds;
mod explain;

pub(crate) use bounds::{Bounds, Probe};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod shapes;
