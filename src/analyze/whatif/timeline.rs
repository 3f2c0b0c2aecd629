//! From the store to the replay's inputs: the logged WAL timeline, the
//! server's runs, the checkpoints no setting decides, and the settings in
//! force over the period (logged changes included).

use jiff::Timestamp;

use super::{Fixed, Knot, Rules, Run, Schedule, Secs, Timeline, Wal};
use crate::analyze::inputs::{percentile, Params};
use crate::model::event::{PointKind, Trigger};
use crate::settings::Settings;
use crate::store::checkpoints::{ByTrigger, CheckpointRow};
use crate::store::events::parse_lsn;
use crate::store::{Filter, Store, StoreError};

/// Settings whose changes the replay follows.
const FOLLOWED: [&str; 6] = [
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "wal_keep_size",
    "checkpoint_warning",
];

/// Time and WAL checkpoints told apart from the rest need this much slack
/// around checkpoint_timeout: PostgreSQL keeps the start in whole seconds.
const SLACK_S: f64 = 1.5;

/// The logged period, ready to replay.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Logged {
    pub(crate) origin: Timestamp,
    pub(crate) timeline: Timeline,
    /// The settings in force over the period.
    pub(crate) schedule: Schedule,
    /// The log's own checkpoints after the origin, by trigger, and its warnings.
    pub(crate) checkpoints: ByTrigger,
    pub(crate) too_frequent: i64,
    /// Replay speed of the log's crash recoveries, MB/s.
    pub(crate) replay_mb_s: Option<f64>,
    /// Whether positions come from `redo lsn` (PostgreSQL 16+) rather than summed distances.
    pub(crate) from_lsn: bool,
}

impl Logged {
    /// The period replayed with max_wal_size `mb` throughout, the other
    /// settings as they were in force.
    pub(crate) fn at_size(&self, mb: f64) -> super::Outcome {
        let sized = |r: &Rules| Rules { max_wal_size_mb: mb, segments: None, ..*r };
        let schedule = Schedule(self.schedule.0.iter().map(|(at, r)| (*at, sized(r))).collect());
        super::replay(&self.timeline, &schedule)
    }
}

/// Why there is nothing to replay.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TimelineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "cluster {0:?} has no checkpoint with a WAL position in this period (\"distance=\" or \"redo lsn=\" in \
         \"checkpoint complete\" lines; a standby's restartpoints do not count)"
    )]
    Empty(String),
}

/// Marks of the server's runs in the event table.
const STOPS: [&str; 3] = ["shutdown_request", "server_shutdown", "crash_reinit"];
const STARTS: [&str; 3] = ["server_start", "redo_start", "crash_reinit"];
const MARKS: [&str; 5] = ["shutdown_request", "server_shutdown", "crash_reinit", "server_start", "redo_start"];

/// One checkpoint of the log with its WAL position.
struct Point {
    at: Timestamp,
    end: Option<Timestamp>,
    trigger: Option<Trigger>,
    lsn: f64,
    write_s: f64,
    total_s: f64,
    completed: bool,
}

/// The period `[since, until)` of `cluster` from the store.
pub(crate) fn read(
    store: &Store,
    cluster: &str,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    settings: &Settings,
) -> Result<Logged, TimelineError> {
    let filter = Filter { cluster: Some(cluster.into()), since, until, trigger: None };
    let checkpoint = |r: &CheckpointRow| r.kind == PointKind::Checkpoint && r.started_at.is_some();
    let mut rows: Vec<CheckpointRow> = store.checkpoints().list(&filter)?.into_iter().filter(checkpoint).collect();
    // The checkpoint before --since is where the replay starts: its REDO and its clock.
    if let Some(since) = since {
        if let Some(last) = store.checkpoints().last_checkpoint_before(cluster, since)? {
            rows.insert(0, last);
        }
    }
    let params = Params::from_settings(settings);
    let segment = params.segment_mb * MB;
    let points = positions(&rows, segment);
    let first = points.first().ok_or_else(|| TimelineError::Empty(cluster.to_string()))?;
    let last_time = points.iter().map(|p| p.end.unwrap_or(p.at)).max().unwrap_or(first.at);
    let window_from = since.unwrap_or(first.at);
    let window_to = until.unwrap_or(last_time + jiff::SignedDuration::from_secs(1));
    let mut marks: Vec<(Timestamp, &str)> = Vec::new();
    // From the log's start: the server start before the first checkpoint is where the replay begins.
    let marks_from = since.unwrap_or(Timestamp::MIN);
    for kind in MARKS {
        store.events().times(cluster, kind, marks_from, window_to, |t| marks.push((t, kind)))?;
    }
    marks.sort();
    // The replay starts at the server start just before the first checkpoint, if the log has it.
    let start_mark = marks.iter().filter(|(t, k)| *t <= first.at && STARTS.contains(k)).map(|(t, _)| *t).next_back();
    let origin = start_mark.unwrap_or(first.at);
    // Seconds are counted from a whole second: the checkpointer's clock keeps whole seconds.
    let whole = jiff::Timestamp::from_second(origin.as_second()).unwrap_or(origin);
    let secs = |t: Timestamp| (t - whole).total(jiff::Unit::Second).unwrap_or(0.0);
    let start = secs(origin);
    marks.retain(|(t, _)| *t >= origin);
    let end = marks.iter().map(|(t, _)| *t).chain([last_time]).max().map_or(0.0, secs);
    let end = until.map_or(end, |u| end.min(secs(u)));

    let current = rules_of(&params, settings);
    let schedule = schedule(store, cluster, settings, current, &points, origin, secs)?;

    let mut knots = Vec::new();
    if start_mark.is_some() {
        // WAL stood at the first checkpoint's previous REDO when the server started.
        let prior = rows_distance(&rows, 0).map_or(first.lsn, |d| first.lsn - d);
        knots.push(Knot { at: start, lsn: prior });
    }
    for (i, p) in points.iter().enumerate() {
        let at = secs(p.at);
        knots.push(Knot { at, lsn: p.lsn });
        // A time checkpoint long after the previous start that did not overrun:
        // the ones between were skipped, nothing was written until a timeout before it.
        if let Some(prev) = i.checked_sub(1).map(|j| &points[j]) {
            let timeout = schedule.at(at).timeout_s;
            let gap = at - secs(prev.at);
            let overran = prev.end.is_some_and(|e| at - secs(e) < SLACK_S);
            if p.trigger == Some(Trigger::Time) && gap > timeout + SLACK_S && !overran {
                knots.push(Knot { at: at.floor() - timeout + super::WAKE_S, lsn: prev.lsn });
            }
        }
    }
    // WAL does not move while the server is down: up to a stop it is where the
    // next checkpoint found it; after a start, where the one before left it.
    for (t, kind) in &marks {
        let at = secs(*t);
        let next = points.iter().find(|p| p.at >= *t);
        let prev = points.iter().rev().find(|p| p.at < *t);
        let lsn = match (STOPS.contains(kind), next, prev) {
            // Before a shutdown or crash: where the shutdown or end-of-recovery checkpoint found it.
            (true, Some(n), _) if matches!(n.trigger, Some(Trigger::Shutdown | Trigger::EndOfRecovery)) => n.lsn,
            (false, Some(n), _) if n.trigger == Some(Trigger::EndOfRecovery) => n.lsn,
            (_, _, Some(p)) => p.lsn,
            // Before the first checkpoint: the origin's knot says where WAL stood.
            (_, _, None) => continue,
        };
        knots.push(Knot { at, lsn });
    }
    let runs = runs(&marks, secs, start, end);
    let fixed = points
        .iter()
        .filter_map(|p| {
            let trigger =
                p.trigger.filter(|t| matches!(t, Trigger::Manual | Trigger::Shutdown | Trigger::EndOfRecovery))?;
            let at = secs(p.at);
            Some(Fixed { at, end: p.end.map_or(at, secs), trigger })
        })
        .filter(|f| f.at > start || start_mark.is_some())
        .collect();
    let syncs: Vec<f64> = points
        .iter()
        .filter(|p| p.completed && matches!(p.trigger, Some(Trigger::Wal | Trigger::Time)))
        .map(|p| (p.total_s - p.write_s).max(0.0))
        .collect();
    let sync_s = percentile(&syncs, 50.0).unwrap_or(0.0);

    let wal = Wal::new(knots);
    // Checkpoints whose writes took longer than their pace under the settings then: the disk's time.
    let slow_writes = points
        .iter()
        .filter(|p| p.completed && matches!(p.trigger, Some(Trigger::Wal | Trigger::Time)))
        .map(|p| {
            let at = secs(p.at);
            let paced = super::paced_end(&wal, at, p.lsn, &schedule.at(at)) - at;
            // Up to the next checkpoint of the log; 0 where the pace set the time.
            (at, if p.write_s > paced * 1.1 + 0.05 { p.write_s } else { 0.0 })
        })
        .collect();

    let mut checkpoints = ByTrigger::default();
    for p in points.iter().filter(|p| p.at > origin || start_mark.is_some()) {
        if let Some(t) = p.trigger {
            checkpoints.add(t, 1);
        }
    }
    let warn_from = if start_mark.is_some() { origin } else { origin + jiff::SignedDuration::from_micros(1) };
    let too_frequent = store.events().too_frequent(cluster, warn_from, until.unwrap_or(window_to))?.len() as i64;
    let history = store.checkpoints().sizing_history(cluster, window_from, window_to)?;
    let replay_mb_s = crate::analyze::recovery::crash_speed(&history.replays).map(|s| s.mb_s);
    let from_lsn = rows.iter().all(|r| r.redo_lsn.as_deref().and_then(parse_lsn).is_some());
    Ok(Logged {
        origin,
        timeline: Timeline { start, end, wal, runs, fixed, sync_s, slow_writes },
        schedule,
        checkpoints,
        too_frequent,
        replay_mb_s,
        from_lsn,
    })
}

const MB: f64 = 1024.0 * 1024.0;

fn rows_distance(rows: &[CheckpointRow], i: usize) -> Option<f64> {
    rows.get(i)?.distance_kb.map(|d| d as f64 * 1024.0)
}

/// Each checkpoint's REDO as a WAL position: the logged `redo lsn` when
/// every row has one, else the running sum of distances (each from the
/// previous completed checkpoint's REDO), shifted so that WAL checkpoints
/// start just past a segment boundary, as PostgreSQL requests them.
fn positions(rows: &[CheckpointRow], segment: f64) -> Vec<Point> {
    let lsns: Option<Vec<f64>> =
        rows.iter().map(|r| r.redo_lsn.as_deref().and_then(parse_lsn).map(|l| l as f64)).collect();
    let mut out: Vec<Point> = rows
        .iter()
        .map(|r| Point {
            at: r.started_at.expect("filtered"),
            end: r.completed_at,
            trigger: r.trigger,
            lsn: 0.0,
            write_s: r.write_s.unwrap_or(0.0),
            total_s: r.total_s.unwrap_or(0.0),
            completed: r.completed_at.is_some(),
        })
        .collect();
    match lsns {
        Some(lsns) if !lsns.is_empty() => {
            let base = (lsns[0] / segment).floor() * segment;
            for (p, l) in out.iter_mut().zip(lsns) {
                p.lsn = l - base;
            }
        }
        _ => {
            let mut completed_at = 0.0;
            for (p, r) in out.iter_mut().zip(rows) {
                // Distances are truncated to whole kB: half a kB back on average.
                p.lsn = match r.distance_kb {
                    Some(d) => completed_at + d as f64 * 1024.0 + 512.0,
                    None => completed_at,
                };
                if p.completed {
                    completed_at = p.lsn;
                }
            }
            let offset = alignment(&out, segment);
            for p in &mut out {
                p.lsn += offset;
            }
        }
    }
    out
}

/// The shift that puts the WAL checkpoints' REDO closest past a segment
/// boundary (the worst of them), from the first 200.
fn alignment(points: &[Point], segment: f64) -> f64 {
    let wal: Vec<f64> = points.iter().filter(|p| p.trigger == Some(Trigger::Wal)).take(200).map(|p| p.lsn).collect();
    let worst = |o: f64| wal.iter().map(|l| (l + o).rem_euclid(segment)).fold(0.0, f64::max);
    wal.iter()
        .map(|l| (segment - l.rem_euclid(segment)).rem_euclid(segment))
        .min_by(|a, b| worst(*a).total_cmp(&worst(*b)))
        .unwrap_or(0.0)
}

/// The server's runs from its start and stop marks: a stop ends one, a start
/// after it opens the next; a start while up is a restart the log did not
/// see end (the checkpointer starts again).
fn runs(marks: &[(Timestamp, &str)], secs: impl Fn(Timestamp) -> Secs, start: Secs, end: Secs) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut from = Some(start);
    for (t, kind) in marks {
        let at = secs(*t).max(start);
        let (stop, start) = (STOPS.contains(kind), STARTS.contains(kind));
        if stop || (start && *kind != "server_start" && from.is_some_and(|f| at > f)) {
            if let Some(f) = from.take() {
                runs.push(Run { from: f, to: at });
            }
        }
        if start && from.is_none() {
            from = Some(at);
        }
    }
    if let Some(f) = from {
        runs.push(Run { from: f, to: end });
    }
    runs.retain(|r| r.to > r.from);
    runs
}

/// The rules of the settings as they are now.
fn rules_of(params: &Params, settings: &Settings) -> Rules {
    Rules {
        max_wal_size_mb: params.max_wal_size_mb,
        min_wal_size_mb: params.min_wal_size_mb,
        timeout_s: params.timeout_s,
        completion_target: params.completion_target,
        wal_keep_mb: params.wal_keep_mb,
        warning_s: settings.seconds("checkpoint_warning").unwrap_or(30.0),
        segment_mb: params.segment_mb,
        version: params.version,
        segments: None,
    }
}

/// The settings in force over the period: the current ones back to the
/// latest change, then each change undone going back. A change whose old
/// value no source states (a first `parameter` line) falls back to the
/// version's default, except max_wal_size: its trigger is then read from the
/// WAL checkpoints before the change (their smallest distance).
fn schedule(
    store: &Store,
    cluster: &str,
    settings: &Settings,
    current: Rules,
    points: &[Point],
    origin: Timestamp,
    secs: impl Fn(Timestamp) -> Secs,
) -> Result<Schedule, StoreError> {
    let mut changes: Vec<_> = crate::settings::timeline(store, cluster)?
        .into_iter()
        .filter(|c| FOLLOWED.contains(&c.name.as_str()) && c.at > origin)
        .collect();
    changes.sort_by_key(|c| c.at);
    let defaults = Settings::defaults(settings.version);
    let mut entries = vec![(f64::NEG_INFINITY, current)];
    let mut text = settings.clone();
    let mut rules = current;
    for change in changes.iter().rev() {
        let at = secs(change.at);
        let old = change.old.clone().or_else(|| defaults.values.get(&change.name).map(|v| v.value.clone()));
        if let (Some(old), Some(value)) = (old, text.values.get_mut(&change.name)) {
            value.value = old;
        }
        let mut before = rules_of(&Params::from_settings(&text), &text);
        if change.name == "max_wal_size" && change.old.is_none() {
            before.segments = inferred_segments(points, change.at, rules.segment_mb);
        } else {
            before.segments = rules.segments.filter(|_| change.name != "max_wal_size");
        }
        // The entry so far applies from this change on.
        entries[0].0 = at;
        entries.insert(0, (f64::NEG_INFINITY, before));
        rules = before;
    }
    Ok(Schedule(entries))
}

/// CheckPointSegments from the smallest distance of the WAL checkpoints
/// before `until` (at least three, as the settings inference asks).
fn inferred_segments(points: &[Point], until: Timestamp, segment_mb: f64) -> Option<u64> {
    let mut prev: Option<&Point> = None;
    let mut distances = Vec::new();
    for p in points.iter().take_while(|p| p.at < until) {
        if let (Some(a), Some(Trigger::Wal)) = (prev, p.trigger) {
            distances.push(p.lsn - a.lsn);
        }
        if p.completed {
            prev = Some(p);
        }
    }
    if distances.len() < 3 {
        return None;
    }
    let smallest = distances.iter().copied().fold(f64::INFINITY, f64::min);
    Some(((smallest / (segment_mb * MB)).ceil() as u64).max(1))
}
