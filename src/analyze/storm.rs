//! The write storm of a checkpoint, measured from its complete line: the
//! rate it wrote its buffers at, and how many times faster than a timed
//! checkpoint would have written them.
//!
//! PostgreSQL paces every checkpoint that is not IMMEDIATE so that its
//! writes end when `checkpoint_completion_target` of the time to the next
//! one has passed — of `checkpoint_timeout`, or of the WAL that triggers
//! the next request, whichever runs out first (`IsCheckpointOnSchedule`).
//! A timed checkpoint therefore writes over about `cct × checkpoint_timeout`;
//! a checkpoint requested by WAL at a high WAL rate has seconds. The ratio
//! of the two is the pace ratio: 1 for a timed checkpoint, 28 for one that
//! wrote the same buffers in a 28th of the time.

use jiff::Timestamp;

use crate::guc::units::{self, Parsed};
use crate::model::event::Trigger;
use crate::settings::{self, SettingChange, Settings};
use crate::store::{Store, StoreError};

/// PostgreSQL's block size (BLCKSZ): 8 kB in every packaged build; the log
/// counts buffers, not bytes.
pub(crate) const BLOCK_BYTES: f64 = 8192.0;

const MB: f64 = 1024.0 * 1024.0;

/// The two settings that pace a checkpoint, as they were at one time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pacing {
    pub(crate) timeout_s: f64,
    pub(crate) completion_target: f64,
}

impl Pacing {
    /// The time a timed checkpoint spreads its writes over.
    pub(crate) fn spread_s(&self) -> f64 {
        self.timeout_s * self.completion_target
    }
}

/// The rate a checkpoint wrote at, in MB/s: its buffers over its write
/// phase. None when the log lacks either figure or the write took no
/// measurable time.
pub(crate) fn write_mb_s(buffers: Option<i64>, write_s: Option<f64>) -> Option<f64> {
    let (buffers, write_s) = (buffers?, write_s?);
    (write_s > 0.0 && buffers >= 0).then(|| buffers as f64 * BLOCK_BYTES / MB / write_s)
}

/// How many times faster than a timed checkpoint it wrote: the spread a
/// timed one has over its write time. Only for the checkpoints PostgreSQL
/// paces, those requested by WAL or by the timeout: a `CHECKPOINT`, a
/// shutdown or the end of recovery write at full speed by design. None
/// also when the write time is missing or zero.
pub(crate) fn pace_ratio(pacing: Pacing, trigger: Option<Trigger>, write_s: Option<f64>) -> Option<f64> {
    let write_s = write_s?;
    let paced = matches!(trigger, Some(Trigger::Wal | Trigger::Time));
    (paced && write_s > 0.0 && pacing.spread_s() > 0.0).then(|| pacing.spread_s() / write_s)
}

/// A cluster's pacing settings over time: the values in force now (the
/// conf, the config, the log's changes, inference, defaults) and every
/// known change of either, so that each checkpoint is judged by what was
/// in force when it ran.
///
/// `checkpoint_timeout` must be known — set somewhere walwatch reads, or
/// inferred from the log's time-triggered checkpoints — not only assumed
/// at its default: it ranges from 30 s to a day, and a ratio against an
/// assumed 5 minutes could be off by a factor of ten. An assumed
/// `checkpoint_completion_target` is taken (0.5 to 0.9 by version and
/// habit: the ratio is off by at most 1.8×, and most servers keep it).
#[derive(Debug, Clone, Default)]
pub(crate) struct PacingTimeline {
    timeout_s: Option<f64>,
    completion_target: Option<f64>,
    /// The changes of each, oldest first, their values parsed once: a
    /// history reads them for every checkpoint of every cluster.
    timeouts: Vec<Step>,
    targets: Vec<Step>,
}

/// One change of a setting: when, the value it set and the one it replaced
/// (None: not set, or not a value of the setting's kind).
#[derive(Debug, Clone)]
struct Step {
    at: Timestamp,
    new: Option<f64>,
    old: Option<f64>,
}

const TIMEOUT: &str = "checkpoint_timeout";
const TARGET: &str = "checkpoint_completion_target";

impl PacingTimeline {
    /// What the store knows of `cluster`'s pacing settings.
    pub(crate) fn load(store: &Store, cluster: &str) -> Result<PacingTimeline, StoreError> {
        PacingTimeline::with_current(store, cluster, &settings::current(store, cluster)?)
    }

    /// [`PacingTimeline::load`] with the values in force now already read.
    pub(crate) fn with_current(store: &Store, cluster: &str, current: &Settings) -> Result<PacingTimeline, StoreError> {
        // Every change: each value is looked up by its own name.
        Ok(PacingTimeline::new(current, settings::timeline(store, cluster)?))
    }

    /// From the values in force now and the changes, oldest first.
    pub(crate) fn new(current: &Settings, changes: Vec<SettingChange>) -> PacingTimeline {
        let version = current.version;
        PacingTimeline {
            timeout_s: current.seconds(TIMEOUT).filter(|_| !current.assumed(TIMEOUT)),
            completion_target: current.number(TARGET),
            timeouts: steps(&changes, TIMEOUT, |t| seconds(t, version)),
            targets: steps(&changes, TARGET, |t| number(t, version)),
        }
    }

    /// The settings in force at `at`: the latest change at or before it, else
    /// the value the first later change replaced, else today's. None while
    /// `checkpoint_timeout` is not known.
    pub(crate) fn at(&self, at: Timestamp) -> Option<Pacing> {
        let timeout_s = value_at(&self.timeouts, at).or(self.timeout_s)?;
        let completion_target = value_at(&self.targets, at).or(self.completion_target)?;
        Some(Pacing { timeout_s, completion_target })
    }
}

/// The changes of `name` among `changes` (oldest first), parsed.
fn steps(changes: &[SettingChange], name: &str, parse: impl Fn(&str) -> Option<f64>) -> Vec<Step> {
    let value = |v: &Option<String>| v.as_deref().and_then(&parse);
    changes
        .iter()
        .filter(|c| c.name == name)
        .map(|c| Step { at: c.at, new: value(&c.new), old: value(&c.old) })
        .collect()
}

/// The value the latest step at or before `at` set, else the one the first
/// step after it replaced.
fn value_at(steps: &[Step], at: Timestamp) -> Option<f64> {
    match steps.partition_point(|s| s.at <= at).checked_sub(1) {
        Some(latest) => steps[latest].new,
        None => steps.first().and_then(|s| s.old),
    }
}

fn seconds(text: &str, version: Option<u32>) -> Option<f64> {
    match units::parse(TIMEOUT, text, version).ok()? {
        Parsed::Seconds(s) => Some(s),
        _ => None,
    }
}

fn number(text: &str, version: Option<u32>) -> Option<f64> {
    match units::parse(TARGET, text, version).ok()? {
        Parsed::Number(x) => Some(x),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
