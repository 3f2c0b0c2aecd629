//! What the checkpoints in the log say about two settings no line states:
//! `checkpoint_timeout` and `max_wal_size`. Used only where neither
//! walwatch's config, nor the conf files, nor a `parameter "X" changed` line
//! gives the value: a guessed 5min for a server that runs 30s sizes
//! max_wal_size ten times too big.
//!
//! * checkpoint_timeout: the checkpointer starts a time-triggered checkpoint
//!   `checkpoint_timeout` after the previous checkpoint (of any cause)
//!   started; it keeps that start in whole seconds, so each spacing is within
//!   a second of the timeout. When nothing was written since, it skips the checkpoint
//!   without a log line and waits another timeout: spacings are whole
//!   multiples (`checkpointer.c`, `CreateCheckPoint`'s "skipped because
//!   system is idle").
//! * max_wal_size: a WAL-triggered checkpoint is requested when a backend
//!   finishes the segment CheckPointSegments - 1 after the one holding the
//!   previous REDO, so its `distance` is more than CheckPointSegments - 1
//!   segments and, short of the WAL written before the checkpointer starts,
//!   at most CheckPointSegments. The smallest distance seen gives
//!   CheckPointSegments; [`trigger::sizes_for`] the max_wal_size values that
//!   give it with the checkpoint_completion_target in force.
//!
//! Restartpoints are left out: a standby retries them every 15 s and can
//! only start one at a replayed checkpoint record, so neither rule holds.
//! Evidence from the server's latest run is preferred (a restart may have
//! come with another postgresql.conf); older runs count when the latest has
//! too little.

use jiff::Timestamp;

use crate::guc::{trigger, units};
use crate::model::event::{PointKind, Trigger};
use crate::store::checkpoints::{PointStart, RecentStarts};

/// Spacings or WAL-triggered checkpoints needed before the log is believed.
pub(crate) const MIN_EVIDENCE: usize = 3;
/// How far a spacing of k timeouts may be from k x the timeout, in seconds.
/// The checkpointer keeps the last start in whole seconds and sleeps until
/// that second + k x the timeout, waking within the second after it, so
/// each start is up to a second past its mark whatever k is; a little more
/// for the time between its wakeup and the log line.
const SLACK_S: f64 = 1.2;
/// PostgreSQL's range of checkpoint_timeout (guc_tables.c), in seconds.
const TIMEOUT_RANGE_S: (f64, f64) = (30.0, 86_400.0);

/// A value worked out from the log, as PostgreSQL spells it, and how.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Inferred {
    pub(crate) value: String,
    /// One sentence, for `walwatch settings` and the advice.
    pub(crate) how: String,
    /// The spacings or checkpoints the value rests on.
    pub(crate) samples: usize,
}

/// The inferred value, or why the log does not tell it.
pub(crate) type Outcome = Result<Inferred, String>;

/// Items of evidence dated by the checkpoint start they come from.
type Dated<T> = Vec<(Timestamp, T)>;

/// The evidence from the latest server run when it holds enough, else all of it.
fn latest_run<T>(items: Dated<T>, restarts: &[Timestamp]) -> (Vec<T>, bool) {
    let last = restarts.iter().max();
    let recent = last.map_or(items.len(), |r| items.iter().filter(|(at, _)| at > r).count());
    let only_latest = recent >= MIN_EVIDENCE && recent < items.len();
    let keep = if only_latest { recent } else { items.len() };
    let skip = items.len() - keep;
    (items.into_iter().skip(skip).map(|(_, item)| item).collect(), only_latest)
}

fn checkpoints(starts: &RecentStarts) -> Vec<&PointStart> {
    starts.points.iter().filter(|p| p.kind == PointKind::Checkpoint).collect()
}

/// checkpoint_timeout from the spacing of time-triggered checkpoint starts.
pub(crate) fn checkpoint_timeout(starts: &RecentStarts) -> Outcome {
    let (gaps, only_latest) = latest_run(time_gaps(starts), &starts.restarts);
    if gaps.len() < MIN_EVIDENCE {
        return Err(format!(
            "{} time-triggered checkpoint(s) follow another checkpoint of the same server run in the log, \
             {MIN_EVIDENCE} needed to tell checkpoint_timeout",
            gaps.len()
        ));
    }
    let Some(period) = Period::of(&gaps) else {
        return Err(format!(
            "the {} spacings of time-triggered checkpoints ({}) have no common period of 30 s or more",
            gaps.len(),
            seconds_list(&gaps)
        ));
    };
    if period.support * 3 < gaps.len() * 2 {
        return Err(format!(
            "the {} spacings of time-triggered checkpoints ({}) have no common period: the most regular, {} s, \
             fits only {} of them",
            gaps.len(),
            seconds_list(&gaps),
            period.seconds,
            period.support
        ));
    }
    let run = if only_latest { " of the server's latest run" } else { "" };
    Ok(Inferred {
        value: units::time_text(period.seconds),
        how: format!(
            "{} of {} time-triggered checkpoints{run} started {} s, or a multiple (idle periods skip one), after \
             the previous checkpoint started",
            period.support,
            gaps.len(),
            period.seconds
        ),
        samples: period.support,
    })
}

/// Seconds from each checkpoint start to the next when the next is
/// time-triggered, within one server run; a shutdown or end-of-recovery
/// checkpoint is not where the checkpointer's clock starts.
fn time_gaps(starts: &RecentStarts) -> Dated<f64> {
    let restarted = |a: Timestamp, b: Timestamp| starts.restarts.iter().any(|r| *r > a && *r <= b);
    let outside_a_run = [Trigger::Shutdown, Trigger::EndOfRecovery];
    checkpoints(starts)
        .windows(2)
        .filter(|w| w[1].trigger == Some(Trigger::Time))
        .filter(|w| !w[0].trigger.is_some_and(|t| outside_a_run.contains(&t)))
        .filter(|w| !restarted(w[0].started_at, w[1].started_at))
        .filter_map(|w| {
            let seconds = (w[1].started_at - w[0].started_at).total(jiff::Unit::Second).ok()?;
            Some((w[1].started_at, seconds))
        })
        .collect()
}

/// The common period of a set of spacings, in whole seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Period {
    seconds: u64,
    /// The spacings within the slack of a whole multiple of it.
    support: usize,
}

impl Period {
    /// The candidate (each spacing rounded down and up, within PostgreSQL's
    /// range) that the most spacings are multiples of; on a tie the one they
    /// sit closest to, then the longest (a divisor of the period fits as
    /// well). Then the period those spacings give: their sum over their
    /// multiples, to the nearest second.
    fn of(gaps: &[f64]) -> Option<Period> {
        let (lo, hi) = TIMEOUT_RANGE_S;
        let mut candidates: Vec<f64> =
            gaps.iter().flat_map(|g| [g.floor(), g.ceil()]).filter(|c| (lo..=hi).contains(c)).collect();
        candidates.sort_by(f64::total_cmp);
        candidates.dedup();
        let score = |c: f64| {
            let fits: Vec<(f64, f64)> = gaps.iter().filter_map(|g| multiple(*g, c).map(|k| (*g, k))).collect();
            let off: f64 = fits.iter().map(|(g, k)| (g - k * c).abs() / k).sum::<f64>() / fits.len().max(1) as f64;
            (fits, off)
        };
        let best = candidates.into_iter().map(|c| (c, score(c))).max_by(|(c1, (f1, o1)), (c2, (f2, o2))| {
            f1.len().cmp(&f2.len()).then(o2.total_cmp(o1)).then(c1.total_cmp(c2))
        })?;
        let (_, (fits, _)) = best;
        let (sum, multiples) = fits.iter().fold((0.0, 0.0), |(s, n), (g, k)| (s + g, n + k));
        Some(Period { seconds: (sum / multiples).round() as u64, support: fits.len() })
    }
}

/// k when `gap` is within the slack of k x `period` (k >= 1).
fn multiple(gap: f64, period: f64) -> Option<f64> {
    let k = (gap / period).round();
    (k >= 1.0 && (gap - k * period).abs() <= SLACK_S).then_some(k)
}

fn seconds_list(gaps: &[f64]) -> String {
    const SHOWN: usize = 8;
    let mut shown: Vec<String> = gaps.iter().take(SHOWN).map(|g| format!("{g:.1}")).collect();
    if gaps.len() > SHOWN {
        shown.push(format!("… {} more", gaps.len() - SHOWN));
    }
    format!("{} s", shown.join(", "))
}

/// What the max_wal_size inference needs to know besides the log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TriggerRule {
    pub(crate) segment_mb: f64,
    pub(crate) completion_target: f64,
    /// Whether checkpoint_completion_target is only PostgreSQL's default.
    pub(crate) completion_target_assumed: bool,
    pub(crate) version: Option<u32>,
}

/// max_wal_size from the smallest distance of WAL-triggered checkpoints.
pub(crate) fn max_wal_size(starts: &RecentStarts, rule: &TriggerRule) -> Outcome {
    let distances: Dated<i64> = checkpoints(starts)
        .into_iter()
        .filter(|p| p.trigger == Some(Trigger::Wal))
        .filter_map(|p| Some((p.started_at, p.distance_kb?)))
        .collect();
    let (distances, only_latest) = latest_run(distances, &starts.restarts);
    if distances.len() < MIN_EVIDENCE {
        return Err(format!(
            "{} WAL-triggered checkpoint(s) with a logged distance, {MIN_EVIDENCE} needed to tell max_wal_size \
             (when WAL never reaches it, the log cannot say how large it is)",
            distances.len()
        ));
    }
    let smallest = *distances.iter().min().expect("at least MIN_EVIDENCE distances");
    let segment_kb = rule.segment_mb * 1024.0;
    let segments = ((smallest as f64 / segment_kb).ceil() as u64).max(1);
    let divisor = trigger::divisor(rule.version, rule.completion_target);
    let (low, high) = trigger::sizes_for(segments, divisor)
        .ok_or_else(|| format!("no max_wal_size gives a trigger of {segments}"))?;
    let mb = |s: u64| (s as f64 * rule.segment_mb).round() as u64;
    let value = roundest((low..=high).map(mb));
    let range = if low == high {
        format!("only max_wal_size {}", units::size_text(mb(low)))
    } else {
        format!("max_wal_size {} to {} (the roundest taken)", units::size_text(mb(low)), units::size_text(mb(high)))
    };
    let run = if only_latest { " of the server's latest run" } else { "" };
    let assumed = if rule.completion_target_assumed { ", its default" } else { "" };
    Ok(Inferred {
        value: units::size_text(value),
        how: format!(
            "the smallest distance of {} WAL-triggered checkpoints{run}, {smallest} kB, puts PostgreSQL's trigger \
             at {segments} segment(s) of {} MB (CheckPointSegments), which {range} gives with \
             checkpoint_completion_target {}{assumed}",
            distances.len(),
            rule.segment_mb,
            rule.completion_target
        ),
        samples: distances.len(),
    })
}

/// The size a DBA most likely wrote: the one divisible by the largest power of two.
fn roundest(sizes: impl Iterator<Item = u64>) -> u64 {
    sizes.max_by_key(|mb| (mb.trailing_zeros(), std::cmp::Reverse(*mb))).unwrap_or(0)
}

#[cfg(test)]
mod tests;
