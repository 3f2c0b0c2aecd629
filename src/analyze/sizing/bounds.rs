//! `[advice] max_recovery` and `max_pg_wal`: the suggestion held within
//! the recovery time and the pg_wal space a DBA allows.
//!
//! The time-driven size (the model's) is the smallest that keeps checkpoints
//! time-driven at the sized peak. Worst-case recovery and pg_wal only grow
//! with max_wal_size (a crash replays the WAL since the last completed REDO:
//! about max_wal_size while checkpoints are WAL-driven, `(1 + cct) x W` once
//! they are time-driven), so when the time-driven size keeps within both
//! bounds it is the answer, and when it does not, no size does both: the
//! suggestion is then the largest size within the bounds, its forced
//! checkpoints said, with what else would help. Both figures come from the
//! `whatif` replay of the window at each size ([`Probe`]).

use serde::Serialize;

use super::{pg_size, readable_mb, round1, Params};
use crate::config::AdviceSection;
use crate::output::grouped_f;

/// What the replay of the window gives at one max_wal_size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Probe {
    /// WAL-triggered checkpoints.
    pub(crate) forced: i64,
    pub(crate) too_frequent: i64,
    pub(crate) peak_pg_wal_mb: f64,
    /// The most WAL a crash at the worst moment would replay.
    pub(crate) max_replay_mb: f64,
}

/// The bounds at the suggested size: `suggest`'s `bounds` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Bounds {
    /// null when `[advice] max_recovery` is not set.
    pub(crate) max_recovery: Option<RecoveryBound>,
    /// null when `[advice] max_pg_wal` is not set.
    pub(crate) max_pg_wal: Option<PgWalBound>,
    /// The bound that held the suggestion below the time-driven size
    /// ("max_recovery" or "max_pg_wal"), null when none did.
    pub(crate) limiting: Option<&'static str>,
    /// The smallest size that keeps checkpoints time-driven at the sized peak.
    pub(crate) time_driven_max_wal_size_mb: u64,
    /// WAL-triggered checkpoints the replay of the window finds at the suggested size.
    pub(crate) forced_at_suggested: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct RecoveryBound {
    pub(crate) limit_s: f64,
    /// A crash at the worst moment at the suggested size; null without a measured replay speed.
    pub(crate) recovery_s: Option<f64>,
    /// null: cannot be checked (no crash recovery measured the replay speed).
    pub(crate) met: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct PgWalBound {
    pub(crate) limit_mb: u64,
    pub(crate) peak_pg_wal_mb: f64,
    pub(crate) met: bool,
}

/// The chosen size and the sentences that say why.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Choice {
    pub(crate) size: u64,
    pub(crate) bounds: Bounds,
    /// The replay at the chosen size.
    pub(crate) at_size: Probe,
    pub(crate) sentences: Vec<String>,
}

/// One size against the bounds.
struct Check {
    probe: Probe,
    recovery_s: Option<f64>,
    recovery_ok: Option<bool>,
    disk_ok: Option<bool>,
}

impl Check {
    /// No bound is known to be broken (an unchecked recovery is not).
    fn within(&self) -> bool {
        self.recovery_ok != Some(false) && self.disk_ok != Some(false)
    }

    /// The bound this size breaks, recovery first.
    fn broken(&self) -> Option<&'static str> {
        match (self.recovery_ok, self.disk_ok) {
            (Some(false), _) => Some("max_recovery"),
            (_, Some(false)) => Some("max_pg_wal"),
            _ => None,
        }
    }
}

struct Judge<'a> {
    advice: &'a AdviceSection,
    speed: Option<f64>,
    probe: &'a dyn Fn(u64) -> Probe,
}

impl Judge<'_> {
    fn limit_s(&self) -> Option<f64> {
        self.advice.max_recovery.map(|d| d.as_secs_f64())
    }

    fn check(&self, mb: u64) -> Check {
        let probe = (self.probe)(mb);
        let recovery_s = self.speed.filter(|s| *s > 0.0).map(|s| probe.max_replay_mb / s);
        Check {
            recovery_ok: self.limit_s().and_then(|limit| recovery_s.map(|r| r <= limit)),
            disk_ok: self.advice.max_pg_wal_mb.map(|limit| probe.peak_pg_wal_mb <= limit as f64),
            recovery_s,
            probe,
        }
    }
}

/// The size within `advice`'s bounds, from the time-driven size
/// `time_driven`; None when no bound is set.
pub(super) fn choose(
    time_driven: u64,
    params: &Params,
    advice: &AdviceSection,
    speed: Option<f64>,
    probe: &dyn Fn(u64) -> Probe,
) -> Option<Choice> {
    if advice.max_recovery.is_none() && advice.max_pg_wal_mb.is_none() {
        return None;
    }
    let judge = Judge { advice, speed, probe };
    let first = judge.check(time_driven);
    let mut sentences = Vec::new();
    let (size, check, limiting) = if first.within() {
        (time_driven, first, None)
    } else {
        let below = smaller_sizes(time_driven, params.segment_mb).into_iter().map(|mb| (mb, judge.check(mb)));
        let limiting = first.broken();
        match below.into_iter().find(|(_, c)| c.within()) {
            Some((mb, c)) => {
                sentences.push(held_below(&judge, time_driven, &first, mb, &c));
                (mb, c, limiting)
            }
            None => {
                sentences.push(unreachable(&judge, &first));
                (time_driven, first, limiting)
            }
        }
    };
    sentences.insert(0, bounds_text(&judge, size, &check));
    if let Some(limiting) = limiting {
        sentences.push(what_else(&judge, params, limiting, &judge.check(time_driven)));
    }
    let bounds = Bounds {
        max_recovery: judge.limit_s().map(|limit_s| RecoveryBound {
            limit_s,
            recovery_s: check.recovery_s.map(round1),
            met: check.recovery_ok,
        }),
        max_pg_wal: advice.max_pg_wal_mb.map(|limit_mb| PgWalBound {
            limit_mb,
            peak_pg_wal_mb: round1(check.probe.peak_pg_wal_mb),
            met: check.disk_ok == Some(true),
        }),
        limiting,
        time_driven_max_wal_size_mb: time_driven,
        forced_at_suggested: check.probe.forced,
    };
    Some(Choice { size, bounds, at_size: check.probe, sentences })
}

/// The readable sizes below `mb`, largest first, down to two segments.
fn smaller_sizes(mb: u64, segment_mb: f64) -> Vec<u64> {
    let steps = (1..=16).map(|i| i * 64).chain((5..=16).map(|i| i * 256)).chain((5..).map(|i| i * 1024));
    let mut sizes: Vec<u64> =
        steps.take_while(|s| *s < mb).map(|s| readable_mb(s as f64, segment_mb)).filter(|s| *s < mb).collect();
    let least = (2.0 * segment_mb) as u64;
    if least < mb {
        sizes.insert(0, least);
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes.reverse();
    sizes
}

/// Each bound set, at the suggested size.
fn bounds_text(judge: &Judge, size: u64, c: &Check) -> String {
    let mut parts = Vec::new();
    if let Some(limit) = judge.limit_s() {
        let replay = grouped_f(c.probe.max_replay_mb, 0);
        parts.push(match (c.recovery_s, judge.speed) {
            (Some(s), Some(speed)) => format!(
                "a crash at the worst moment of the window would replay {replay} MB of WAL, {} s at {} MB/s: {} \
                 max_recovery {}",
                grouped_f(s, 1),
                grouped_f(speed, 1),
                if s <= limit { "within" } else { "beyond" },
                seconds_text(limit)
            ),
            _ => format!(
                "max_recovery {} cannot be checked: no crash recovery in this cluster's logs measured the replay \
                 speed (a crash at the worst moment would replay {replay} MB of WAL)",
                seconds_text(limit)
            ),
        });
    }
    if let Some(limit) = judge.advice.max_pg_wal_mb {
        parts.push(format!(
            "pg_wal would peak at {} MB: {} max_pg_wal {}",
            grouped_f(c.probe.peak_pg_wal_mb, 0),
            if c.probe.peak_pg_wal_mb <= limit as f64 { "within" } else { "beyond" },
            pg_size(limit)
        ));
    }
    format!("Bounds at {}: {}.", pg_size(size), parts.join("; "))
}

/// The time-driven size breaks a bound; a smaller one keeps within them.
fn held_below(judge: &Judge, time_driven: u64, first: &Check, mb: u64, c: &Check) -> String {
    let broken = match first.broken() {
        Some("max_recovery") => format!(
            "at {} a crash at the worst moment would take {} s, beyond max_recovery {}",
            pg_size(time_driven),
            grouped_f(first.recovery_s.unwrap_or(0.0), 1),
            seconds_text(judge.limit_s().unwrap_or(0.0))
        ),
        _ => format!(
            "at {} pg_wal would peak at {} MB, beyond max_pg_wal {}",
            pg_size(time_driven),
            grouped_f(first.probe.peak_pg_wal_mb, 0),
            pg_size(judge.advice.max_pg_wal_mb.unwrap_or(0))
        ),
    };
    format!(
        "No max_wal_size keeps checkpoints time-driven within the bounds: {broken}. The largest size within them \
         is {}, which leaves {} WAL-triggered (forced) checkpoints over the window (the replay finds {} at {}).",
        pg_size(mb),
        c.probe.forced,
        first.probe.forced,
        pg_size(time_driven)
    )
}

/// Not even the smallest size keeps within the bounds.
fn unreachable(judge: &Judge, first: &Check) -> String {
    let what = match first.broken() {
        Some("max_recovery") => format!("max_recovery {}", seconds_text(judge.limit_s().unwrap_or(0.0))),
        _ => format!("max_pg_wal {}", pg_size(judge.advice.max_pg_wal_mb.unwrap_or(0))),
    };
    format!(
        "No max_wal_size keeps within {what}, not even the smallest: the suggestion stays the time-driven size, and \
         the bound needs one of the changes below."
    )
}

/// What else brings the worst case within the bound, with numbers: WAL
/// between two checkpoint starts grows with checkpoint_timeout, and a crash
/// replays up to (1 + cct) of it, as pg_wal holds.
fn what_else(judge: &Judge, params: &Params, limiting: &str, at_time_driven: &Check) -> String {
    let (value, limit) = match limiting {
        "max_recovery" => (at_time_driven.recovery_s.unwrap_or(0.0), judge.limit_s().unwrap_or(0.0)),
        _ => (at_time_driven.probe.peak_pg_wal_mb, judge.advice.max_pg_wal_mb.unwrap_or(0) as f64),
    };
    let share = if value > 0.0 { limit / value } else { 1.0 };
    let mut out = Vec::new();
    // Down to a value a DBA would write: whole minutes, or 10 s steps below one.
    let exact = params.timeout_s * share;
    let timeout = if exact >= 60.0 { (exact / 60.0).floor() * 60.0 } else { (exact / 10.0).floor() * 10.0 };
    if timeout >= 30.0 && timeout < params.timeout_s {
        out.push(format!(
            "checkpoint_timeout = {} (from {}): about {:.0} % of the WAL between two checkpoints, so of the worst \
             replay and of pg_wal; checkpoints {:.1}x as often, each followed by full-page images of every page \
             changed again (full_page_writes), so the load writes more WAL",
            crate::guc::units::time_text(timeout as u64),
            crate::guc::units::time_text(params.timeout_s as u64),
            100.0 * timeout / params.timeout_s,
            params.timeout_s / timeout
        ));
    } else if timeout < 30.0 {
        out.push(format!(
            "not a shorter checkpoint_timeout (it would need {:.0} s, below PostgreSQL's 30 s minimum)",
            exact
        ));
    }
    let cct = params.completion_target;
    if cct > 0.5 {
        out.push(format!(
            "checkpoint_completion_target = 0.5 (from {cct}): the WAL after the last completed REDO is at most \
             (1 + cct) x W, so about {:.0} % of the worst replay and of pg_wal, with each checkpoint's writes \
             packed into half of checkpoint_timeout (a larger one only lengthens both)",
            100.0 * 1.5 / (1.0 + cct)
        ));
    }
    if limiting == "max_recovery" && judge.limit_s().is_some_and(|l| l > 0.0) {
        out.push(format!(
            "storage that replays at least {} MB/s (today {} MB/s) to replay {} MB within max_recovery",
            grouped_f(at_time_driven.probe.max_replay_mb / judge.limit_s().unwrap_or(1.0), 1),
            grouped_f(judge.speed.unwrap_or(0.0), 1),
            grouped_f(at_time_driven.probe.max_replay_mb, 0)
        ));
    }
    if out.is_empty() {
        return format!("What else keeps checkpoints time-driven within {limiting}: nothing walwatch can work out.");
    }
    format!("What else keeps checkpoints time-driven within {limiting}: {}.", out.join("; "))
}

/// "2min", "90s" as a config would write it.
fn seconds_text(s: f64) -> String {
    crate::guc::units::time_text(s.round() as u64)
}

#[cfg(test)]
mod tests;
