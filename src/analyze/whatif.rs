//! `walwatch whatif`: the logged WAL timeline replayed through PostgreSQL's
//! checkpoint rules under other settings.
//!
//! # The timeline
//! The log tells where WAL stood at each checkpoint start: the `redo lsn` of
//! the complete line (PostgreSQL 16+), else the running sum of `distance`
//! (the WAL between two REDO pointers). Between two starts WAL is taken to
//! grow at an even rate ([`Wal`]). The server's runs ([`Run`]) bound when the
//! checkpointer can act; checkpoints no setting decides (CHECKPOINT, base
//! backups, shutdowns, end of recovery: [`Fixed`]) happen where the log has
//! them.
//!
//! # PostgreSQL's rules, per setting ([`Rules`])
//! * WAL trigger (`XLogCheckpointNeeded`): a checkpoint is requested when a
//!   backend finishes the segment `CheckPointSegments - 1` after the one
//!   holding the REDO of the latest started checkpoint, i.e. when WAL reaches
//!   `(segment of REDO + CheckPointSegments) x segment size`;
//!   `CheckPointSegments = max(1, (int) (max_wal_size in segments / (1 + cct)))`
//!   (`2 + cct` in 9.6 and 10). A request during a checkpoint waits for it.
//! * Time trigger (`checkpointer.c`): `checkpoint_timeout` after the previous
//!   start, in whole seconds; skipped without a log line when no WAL was
//!   written since the previous checkpoint, the clock restarting all the same.
//! * Pacing (`IsCheckpointOnSchedule`): the writes end when either
//!   `cct x checkpoint_timeout` has passed or `cct x CheckPointSegments`
//!   segments of WAL were written since the start, whichever comes first; the
//!   sync phase then takes what the log's checkpoints took.
//! * "too frequently": a checkpoint requested by WAL that starts less than
//!   `checkpoint_warning` after the previous start (whole seconds).
//! * pg_wal (`RemoveOldXlogFiles`, `XLOGfileslop`, `KeepLogSeg`): at the end
//!   of a checkpoint the segments before its REDO (the previous one's in 9.6
//!   and 10), less those wal_keep_size holds, go; they are recycled as future
//!   segments up to `REDO + 1.1 x (1 + cct) x CheckPointDistanceEstimate`,
//!   clamped to [min_wal_size, max_wal_size] from the REDO, the rest removed.
//! * Crash recovery replays from the REDO of the last completed checkpoint:
//!   the worst moment is just before a checkpoint completes.
//!
//! # What the replay cannot know
//! The WAL a load writes depends on the checkpoints themselves: after each one
//! every page changed again is logged whole (full_page_writes). With rarer
//! checkpoints the same load writes less WAL, so predictions for larger sizes
//! are conservative (more forced checkpoints, more WAL); for smaller sizes
//! they are optimistic. Replication slots and archive backlog that hold WAL
//! back are not in the log, nor is the I/O a checkpoint's writes need (a
//! checkpoint is assumed to keep to its pace).

use crate::guc::trigger;
use crate::model::event::Trigger;
use crate::store::checkpoints::ByTrigger;

/// Seconds since the replay's origin.
pub(crate) type Secs = f64;

/// WAL position, in bytes since the timeline's origin.
pub(crate) type Lsn = f64;

/// What WAL a finished write of less than this since the previous
/// checkpoint leaves it: the checkpoint record itself. A time checkpoint
/// with no more WAL since is skipped ("idle").
const IDLE_BYTES: f64 = 512.0;

/// How long after its whole second the checkpointer's timer starts a time
/// checkpoint: the log's time checkpoints start 0.05 to 0.2 s past it.
pub(crate) const WAKE_S: f64 = 0.1;

/// A known WAL position at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Knot {
    pub(crate) at: Secs,
    pub(crate) lsn: Lsn,
}

/// The WAL position over time: linear between the knots, flat before the
/// first and after the last.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Wal {
    knots: Vec<Knot>,
}

impl Wal {
    /// The knots in time order; WAL never goes back (a knot below the one
    /// before it is raised to it).
    pub(crate) fn new(mut knots: Vec<Knot>) -> Wal {
        knots.retain(|k| k.at.is_finite() && k.lsn.is_finite());
        knots.sort_by(|a, b| a.at.total_cmp(&b.at));
        let mut high = f64::NEG_INFINITY;
        for k in &mut knots {
            high = high.max(k.lsn);
            k.lsn = high;
        }
        Wal { knots }
    }

    #[cfg(test)]
    pub(crate) fn knots(&self) -> &[Knot] {
        &self.knots
    }

    /// The WAL position at `t`.
    pub(crate) fn at(&self, t: Secs) -> Lsn {
        let i = self.knots.partition_point(|k| k.at <= t);
        match (i.checked_sub(1).map(|j| self.knots[j]), self.knots.get(i)) {
            (None, Some(k)) => k.lsn,
            (Some(k), None) => k.lsn,
            (Some(a), Some(b)) if b.at > a.at => a.lsn + (b.lsn - a.lsn) * (t - a.at) / (b.at - a.at),
            (Some(a), Some(_)) => a.lsn,
            (None, None) => 0.0,
        }
    }

    /// The first time at or after `from` when WAL has reached `lsn`, None
    /// when it never does.
    pub(crate) fn reaches(&self, lsn: Lsn, from: Secs) -> Option<Secs> {
        if self.at(from) >= lsn {
            return Some(from);
        }
        let i = self.knots.partition_point(|k| k.at <= from);
        let mut prev = Knot { at: from, lsn: self.at(from) };
        for k in &self.knots[i..] {
            if k.lsn >= lsn {
                let t = prev.at + (k.at - prev.at) * (lsn - prev.lsn) / (k.lsn - prev.lsn);
                return Some(t.clamp(prev.at, k.at));
            }
            prev = *k;
        }
        None
    }
}

/// A time the server was up: the checkpointer's clock starts at `from`,
/// and no time or WAL checkpoint starts at or after `to`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Run {
    pub(crate) from: Secs,
    pub(crate) to: Secs,
}

/// A checkpoint no setting decides, where the log has it: CHECKPOINT, a base
/// backup, CREATE DATABASE, a shutdown, the end of a recovery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fixed {
    pub(crate) at: Secs,
    pub(crate) end: Secs,
    pub(crate) trigger: Trigger,
}

/// What a replay reads: the WAL, the runs, the fixed checkpoints.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Timeline {
    pub(crate) start: Secs,
    pub(crate) end: Secs,
    pub(crate) wal: Wal,
    /// In time order, not overlapping.
    pub(crate) runs: Vec<Run>,
    /// In time order.
    pub(crate) fixed: Vec<Fixed>,
    /// The sync phase after a checkpoint's writes, seconds (what the log's
    /// time and WAL checkpoints took besides their writes).
    pub(crate) sync_s: f64,
    /// Each logged time or WAL checkpoint's start, with how long its writes
    /// took where that was longer than its pace allowed (the disk, not the
    /// schedule, set the time), else 0: until the next, a checkpoint's
    /// writes take at least this long. In time order.
    pub(crate) slow_writes: Vec<(Secs, f64)>,
}

impl Timeline {
    /// The least time the writes of a checkpoint starting at `s` take.
    fn write_floor(&self, s: Secs) -> f64 {
        let i = self.slow_writes.partition_point(|(at, _)| *at <= s + WAKE_S);
        i.checked_sub(1).map_or(0.0, |j| self.slow_writes[j].1)
    }
}

/// The settings one replay runs under, from some time on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rules {
    pub(crate) max_wal_size_mb: f64,
    pub(crate) min_wal_size_mb: f64,
    pub(crate) timeout_s: f64,
    pub(crate) completion_target: f64,
    pub(crate) wal_keep_mb: f64,
    /// checkpoint_warning; 0 disables the warning.
    pub(crate) warning_s: f64,
    pub(crate) segment_mb: f64,
    pub(crate) version: Option<u32>,
    /// CheckPointSegments when the log tells it but not max_wal_size (a
    /// value in force before a change whose old value no line states).
    pub(crate) segments: Option<u64>,
}

impl Rules {
    /// CheckPointSegments: max_wal_size in whole segments over the divisor, at least 1.
    pub(crate) fn checkpoint_segments(&self) -> u64 {
        self.segments.unwrap_or_else(|| {
            let segments = (self.max_wal_size_mb / self.segment_mb).floor().max(0.0) as u64;
            trigger::checkpoint_segments(segments, trigger::divisor(self.version, self.completion_target))
        })
    }

    fn segment_bytes(&self) -> f64 {
        self.segment_mb * MB
    }

    /// 9.6 and 10 keep the WAL of two cycles.
    fn two_cycles(&self) -> bool {
        self.version.is_some_and(|v| v < 11)
    }
}

const MB: f64 = 1024.0 * 1024.0;

/// The settings from each time on: the first applies from the start.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schedule(pub(crate) Vec<(Secs, Rules)>);

impl Schedule {
    #[cfg(test)]
    pub(crate) fn constant(rules: Rules) -> Schedule {
        Schedule(vec![(f64::NEG_INFINITY, rules)])
    }

    /// The rules in force at `t`.
    pub(crate) fn at(&self, t: Secs) -> Rules {
        let i = self.0.partition_point(|(from, _)| *from <= t);
        self.0[i.saturating_sub(1)].1
    }

    /// The first change strictly after `t`.
    fn change_after(&self, t: Secs) -> Option<Secs> {
        self.0.iter().map(|(from, _)| *from).find(|from| *from > t)
    }
}

/// When the writes of a checkpoint starting at `s` with REDO `lsn` end by
/// its pace alone: `cct x checkpoint_timeout` later, or once `cct x
/// CheckPointSegments` segments of WAL followed, whichever is first.
pub(crate) fn paced_end(wal: &Wal, s: Secs, lsn: Lsn, rules: &Rules) -> Secs {
    let segments = rules.checkpoint_segments() as f64;
    let by_time = s + rules.completion_target * rules.timeout_s;
    let by_wal = wal.reaches(lsn + rules.completion_target * segments * rules.segment_bytes(), s);
    by_wal.map_or(by_time, |w| w.min(by_time))
}

/// What one replay predicts over the timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) checkpoints: ByTrigger,
    pub(crate) too_frequent: i64,
    /// The most WAL segments pg_wal held at once, in MB.
    pub(crate) peak_pg_wal_mb: f64,
    /// The most WAL a crash at the worst moment would have replayed, MB.
    pub(crate) max_replay_mb: f64,
}

/// A checkpoint in progress.
#[derive(Debug, Clone, Copy)]
struct Running {
    end: Secs,
    redo: Lsn,
}

/// The replay's state: what PostgreSQL's checkpointer and pg_wal hold.
struct Sim<'a> {
    timeline: &'a Timeline,
    schedule: &'a Schedule,
    out: Outcome,
    /// Start of the latest checkpoint (performed or skipped), for the clock.
    last_start: Secs,
    /// REDO of the latest started checkpoint (RedoRecPtr).
    redo: Lsn,
    /// REDO of the latest completed one (where recovery would start), and
    /// whether one completed in this run (CheckPointDistanceEstimate is
    /// the checkpointer's own and restarts at 0 with it).
    completed_redo: Lsn,
    running: Option<Running>,
    wal_requested: bool,
    estimate: f64,
    /// Lowest and highest segment in pg_wal.
    keep_seg: f64,
    top_seg: f64,
}

/// The timeline replayed under `schedule`.
pub(crate) fn replay(timeline: &Timeline, schedule: &Schedule) -> Outcome {
    let start = timeline.start;
    let rules = schedule.at(start);
    let seg = rules.segment_bytes();
    let redo = timeline.wal.at(start);
    let first = (redo / seg).floor();
    let mut sim = Sim {
        timeline,
        schedule,
        out: Outcome::default(),
        last_start: start,
        redo,
        completed_redo: redo,
        running: None,
        wal_requested: false,
        estimate: 0.0,
        keep_seg: first,
        // As after a checkpoint at the start with no estimate yet: min_wal_size's worth recycled ahead.
        top_seg: first.max(first + segments_of(rules.min_wal_size_mb, &rules) - 1.0),
    };
    let mut fixed = timeline.fixed.iter().filter(|f| f.at >= start && f.at < timeline.end).peekable();
    for (i, run) in timeline.runs.iter().enumerate() {
        let bound = timeline.runs.get(i + 1).map_or(timeline.end, |r| r.from).min(timeline.end);
        let run = Run { from: run.from.max(start), to: run.to.min(bound) };
        if run.from >= bound {
            continue;
        }
        if i > 0 || run.from > start {
            // A new checkpointer: its clock and its estimate start afresh.
            sim.last_start = run.from;
            sim.estimate = 0.0;
            sim.wal_requested = false;
        }
        sim.run(run, bound, &mut fixed);
    }
    let end = timeline.end;
    sim.crash_point(end);
    sim.out
}

fn segments_of(mb: f64, rules: &Rules) -> f64 {
    (mb / rules.segment_mb).floor()
}

impl Sim<'_> {
    fn seg(&self, t: Secs) -> f64 {
        self.schedule.at(t).segment_bytes()
    }

    /// When WAL requests a checkpoint after `from`, under the rules then.
    fn wal_request(&self, from: Secs) -> Option<Secs> {
        let rules = self.schedule.at(from);
        let seg = rules.segment_bytes();
        let boundary = ((self.redo / seg).floor() + rules.checkpoint_segments() as f64) * seg;
        self.timeline.wal.reaches(boundary, from)
    }

    /// One server run: checkpoints by time and WAL inside `run`, fixed ones
    /// and completions up to `bound` (the next run's start).
    fn run<'f>(&mut self, run: Run, bound: Secs, fixed: &mut std::iter::Peekable<impl Iterator<Item = &'f Fixed>>) {
        let mut t = run.from;
        loop {
            let up = |at: Option<Secs>| at.filter(|a| *a < run.to);
            let next_fixed = fixed.peek().map(|f| f.at).filter(|a| *a < bound);
            if let Some(c) = self.running {
                let request = if self.wal_requested { None } else { up(self.wal_request(t)) };
                let end = c.end.min(bound);
                let change = self.schedule.change_after(t).filter(|c| *c < end);
                match (request, next_fixed) {
                    // A request worked out under settings that change before it.
                    (Some(r), _) if change.is_some_and(|c| r >= c) => t = change.expect("checked"),
                    (Some(r), _) if r < end && next_fixed.is_none_or(|f| r < f) => {
                        self.wal_requested = true;
                        t = r;
                    }
                    // A CHECKPOINT asked for meanwhile hurries the running one.
                    (_, Some(f)) if f < end => {
                        self.complete(f);
                        t = f;
                    }
                    _ => {
                        self.complete(end);
                        t = end;
                        if end >= bound {
                            return;
                        }
                    }
                }
                continue;
            }
            let rules = self.schedule.at(t);
            let timer = up(Some((self.last_start.floor() + rules.timeout_s + WAKE_S).max(t)));
            let request = up(if self.wal_requested { Some(t) } else { self.wal_request(t) });
            let next = [timer, request].into_iter().flatten().min_by(f64::total_cmp);
            // Worked out under settings that change before: again under the new ones.
            if let Some(c) = self.schedule.change_after(t).filter(|c| next.is_some_and(|n| n >= *c)) {
                if next_fixed.is_none_or(|f| f > c) {
                    t = c;
                    continue;
                }
            }
            match (next_fixed, next) {
                (Some(f), n) if n.is_none_or(|n| f <= n) => {
                    let f = *fixed.next().expect("peeked");
                    self.start_fixed(f);
                    t = f.at;
                }
                (_, Some(s)) => {
                    let by_wal = request.is_some_and(|r| r <= s);
                    self.start(s, by_wal);
                    t = s;
                }
                (_, None) => {
                    self.crash_point(run.to);
                    return;
                }
            }
        }
    }

    /// A time or WAL checkpoint starts at `s`.
    fn start(&mut self, s: Secs, by_wal: bool) {
        let rules = self.schedule.at(s);
        let lsn = self.timeline.wal.at(s);
        if !by_wal && lsn - self.completed_redo.max(self.redo) < IDLE_BYTES {
            // Nothing written since the last checkpoint: skipped, the clock restarts.
            self.last_start = s;
            return;
        }
        let trigger = if by_wal { Trigger::Wal } else { Trigger::Time };
        self.begin(s, trigger, rules.warning_s);
        let writes_end = paced_end(&self.timeline.wal, s, lsn, &rules).max(s + self.timeline.write_floor(s));
        self.running = Some(Running { end: writes_end + self.timeline.sync_s, redo: lsn });
    }

    fn start_fixed(&mut self, f: Fixed) {
        let warning_s = self.schedule.at(f.at).warning_s;
        self.begin(f.at, f.trigger, warning_s);
        self.running = Some(Running { end: f.end.max(f.at), redo: self.timeline.wal.at(f.at) });
    }

    /// Counts a start and takes its REDO; a pending WAL request goes with it
    /// (the checkpointer merges the requests' flags), and may warn.
    fn begin(&mut self, s: Secs, trigger: Trigger, warning_s: f64) {
        let by_wal = self.wal_requested || trigger == Trigger::Wal;
        if by_wal && warning_s > 0.0 && s.floor() - self.last_start.floor() < warning_s {
            self.out.too_frequent += 1;
        }
        self.out.checkpoints.add(trigger, 1);
        self.wal_requested = false;
        self.last_start = s;
        self.redo = self.timeline.wal.at(s);
    }

    /// A crash just before `t` would replay from the last completed REDO;
    /// pg_wal holds up to the segment WAL is in.
    fn crash_point(&mut self, t: Secs) {
        let lsn = self.timeline.wal.at(t);
        self.out.max_replay_mb = self.out.max_replay_mb.max((lsn - self.completed_redo) / MB);
        self.top_seg = self.top_seg.max((lsn / self.seg(t)).floor());
        let files = self.top_seg - self.keep_seg + 1.0;
        self.out.peak_pg_wal_mb = self.out.peak_pg_wal_mb.max(files * self.schedule.at(t).segment_mb);
    }

    /// The running checkpoint completes at `e`: the estimate, then the old
    /// segments removed or recycled.
    fn complete(&mut self, e: Secs) {
        let Some(c) = self.running.take() else { return };
        self.crash_point(e);
        let rules = self.schedule.at(e);
        let seg = rules.segment_bytes();
        let prior = self.completed_redo;
        let nbytes = c.redo - prior;
        self.estimate = if self.estimate < nbytes { nbytes } else { 0.9 * self.estimate + 0.1 * nbytes };
        self.completed_redo = c.redo;
        let last_redo = if rules.two_cycles() { prior } else { c.redo };
        let current = (self.timeline.wal.at(e) / seg).floor();
        let keep_segments = segments_of(rules.wal_keep_mb, &rules);
        let keep = (last_redo / seg).floor().min(current - keep_segments).max(self.keep_seg);
        let freed = keep - self.keep_seg;
        let factor = if rules.two_cycles() { 2.0 } else { 1.0 } + rules.completion_target;
        let redo_seg = (last_redo / seg).floor();
        let recycle = ((last_redo + 1.10 * factor * self.estimate) / seg)
            .ceil()
            .max(redo_seg + segments_of(rules.min_wal_size_mb, &rules) - 1.0)
            .min(redo_seg + segments_of(rules.max_wal_size_mb, &rules) - 1.0);
        let slots = (recycle - self.top_seg).max(0.0);
        self.top_seg += freed.min(slots);
        self.keep_seg = keep;
    }
}

pub(crate) mod timeline;

#[cfg(test)]
mod tests;
