//! The suggestion in words: the sentences of `walwatch suggest`'s
//! explanation, built from the model's intermediate results. The numbers
//! themselves are worked out in the parent module; nothing here decides.

use super::bounds::Choice;
use super::{percentile, pg_size, required_mb, window_text, Cost, LeftOut, Model};
use crate::config::plural;
use crate::output::grouped_f;
use crate::settings::{Settings, ValueSource};

impl LeftOut {
    /// "N {this}" in the explanation.
    pub(super) fn reason(self) -> &'static str {
        match self {
            LeftOut::Downtime => "spanning a shutdown, restart or recovery",
            LeftOut::Manual => "ending in a requested checkpoint (CHECKPOINT, a base backup, CREATE DATABASE)",
            LeftOut::NoDistance => {
                "ending in a checkpoint with no distance logged (it never completed, or PostgreSQL 9.4 or older)"
            }
            LeftOut::NoTime => "whose two starts the log's timestamps do not separate",
            LeftOut::OtherSettings => "run under the settings before the latest change",
        }
    }
}

/// The model's inputs that no config, conf file or line stated and that
/// walwatch worked out from the log's checkpoints.
pub(super) fn inferred_inputs(current: &Settings) -> Option<String> {
    let inferred: Vec<String> = MODEL_INPUTS
        .iter()
        .filter_map(|name| current.values.get(*name).map(|v| (name, v)))
        .filter_map(|(name, v)| match &v.source {
            ValueSource::Inferred { how, .. } => Some(format!("{name} = {} ({how})", v.value)),
            _ => None,
        })
        .collect();
    (!inferred.is_empty()).then(|| {
        format!(
            "Inferred from the log, as neither the config nor the server's conf files or log lines state them: {}. \
             A config_file or data_directory walwatch may read, or [cluster.settings], wins over this.",
            inferred.join("; ")
        )
    })
}

/// The settings the model reads.
const MODEL_INPUTS: [&str; 4] =
    ["checkpoint_timeout", "checkpoint_completion_target", "max_wal_size", "wal_segment_size"];

/// The model's inputs walwatch could only take from PostgreSQL's defaults:
/// a server with checkpoint_timeout = 30s read as 5min gets a 10x suggestion.
pub(super) fn assumed_defaults(current: &Settings) -> Option<String> {
    let assumed: Vec<String> = MODEL_INPUTS
        .iter()
        .filter_map(|name| current.values.get(*name).map(|v| (name, v)))
        .filter(|(name, _)| current.assumed(name))
        .map(|(name, v)| match current.not_inferred.get(*name) {
            Some(why) => format!("{name} = {} (not inferred from the log: {why})", v.value),
            None => format!("{name} = {}", v.value),
        })
        .collect();
    (!assumed.is_empty()).then(|| {
        format!(
            "Assumed PostgreSQL's defaults for {}: neither the config ([cluster.settings], config_file, \
             data_directory) nor the log said otherwise. If the server sets them differently, tell walwatch.",
            assumed.join(", ")
        )
    })
}

impl Model<'_> {
    pub(super) fn explain(
        &self,
        max: Option<u64>,
        min: Option<u64>,
        cost: &Cost,
        choice: Option<&Choice>,
    ) -> Vec<String> {
        let p = self.params;
        let mut out = vec![format!(
            "Seen in the last {}: {} checkpoint cycles usable for a WAL rate, {} WAL-triggered (forced) and {} \
             time-triggered checkpoints, {} \"too frequently\" warnings.",
            window_text(self.advice.lookback),
            self.cycles.len(),
            self.forced,
            self.timed,
            self.too_frequent
        )];
        out.extend(self.left_out_text());
        out.extend(self.change_text());
        let (Some(peak), Some(w), Some(max)) = (self.peak_kb_s, self.projected_mb(), max) else {
            out.push(self.no_suggestion());
            return out;
        };
        // The formula gives the time-driven size; a bound may hold the suggestion below it.
        let time_driven = choice.map_or(max, |c| c.bounds.time_driven_max_wal_size_mb);
        let div = p.divisor();
        let divisor_text = if div >= 2.0 {
            "2 + checkpoint_completion_target (PostgreSQL 9.6/10)"
        } else {
            "1 + checkpoint_completion_target"
        };
        let per_timeout = peak * p.timeout_s / 1024.0;
        if self.overran > 0 && w > per_timeout * (1.0 + 1e-9) {
            // Overrunning cycles raised W above the rate's projection.
            out.push(format!(
                "Peak WAL rate (p{} by time of the cycles' distance / time since the previous checkpoint \
                 started): {} kB/s, {} MB per checkpoint_timeout ({}s); {} ran longer than checkpoint_timeout \
                 (a checkpoint that overran, or time checkpoints skipped while the server was idle) and count \
                 with their whole distance, since the next checkpoint cannot start sooner: up to {} MB of WAL \
                 between two checkpoint starts (p{} by time).",
                self.advice.percentile,
                grouped_f(peak, 1),
                grouped_f(per_timeout, 1),
                p.timeout_s,
                plural(self.overran, "cycle"),
                grouped_f(w, 1),
                self.advice.percentile
            ));
        } else {
            out.push(format!(
                "Peak WAL rate (p{} by time of the cycles' distance / time since the previous checkpoint \
                 started): {} kB/s, \
                 so up to {} MB of WAL per checkpoint_timeout ({}s).",
                self.advice.percentile,
                grouped_f(peak, 1),
                grouped_f(w, 1),
                p.timeout_s
            ));
        }
        out.push(format!(
            "PostgreSQL requests a checkpoint once the WAL since the last REDO reaches max_wal_size / ({divisor_text}) \
             - 1 segment. To stay time-driven: max_wal_size >= {div:.2} x ({} MB x headroom {} + {} MB segment) \
             = {} MB; {} MB in whole segments after PostgreSQL's rounding down; {} as a readable value.",
            grouped_f(w, 1),
            self.advice.headroom,
            p.segment_mb,
            grouped_f(div * (w * self.advice.headroom + p.segment_mb), 0),
            grouped_f(required_mb(w * self.advice.headroom, p), 0),
            pg_size(time_driven)
        ));
        if let Some(c) = choice {
            out.extend(c.sentences.iter().cloned());
        }
        match choice.and_then(|c| c.bounds.limiting.filter(|_| c.size != time_driven)) {
            Some(limiting) => out.push(format!(
                "Set max_wal_size to {} (now {}), held there by {limiting}.",
                pg_size(max),
                pg_size(p.max_wal_size_mb as u64)
            )),
            None => out.push(self.verdict(max)),
        }
        if let Some(note) = self.short_cycles_note() {
            out.push(note);
        }
        if let Some(m) = min {
            out.push(format!(
                "WAL files were created on most cycles: min_wal_size {} (typical cycle's WAL x {:.1}) lets PostgreSQL \
                 recycle segments instead.",
                pg_size(m),
                1.0 + p.completion_target
            ));
        }
        out.push(self.cost_text(max, cost));
        out.push(format!("Confidence: {} ({} samples).", self.confidence(), self.cycles.len()));
        out
    }

    /// Why there is no suggestion. A log whose checkpoints all lack the WAL
    /// distance (PostgreSQL 9.4 and older) is told so, not asked whether
    /// log_checkpoints is on: it is, and no number of samples would help.
    fn no_suggestion(&self) -> String {
        if self.cycles.is_empty() && self.without_distance > 0 {
            return format!(
                "No suggestion: walwatch needs the WAL distance since the previous checkpoint (\"distance=… kB\" in \
                 \"checkpoint complete\" lines, logged by PostgreSQL 9.5 and later), and the {} checkpoints \
                 completed in this window logged none: the server is PostgreSQL 9.4 or older.",
                self.without_distance
            );
        }
        format!(
            "No suggestion: {} usable cycles, fewer than the {} needed ([advice] min_samples). Cycles that span a \
             restart, shutdown or recovery do not count; is log_checkpoints on?",
            self.cycles.len(),
            self.advice.min_samples
        )
    }

    /// Every cycle that gave no rate, counted by why.
    fn left_out_text(&self) -> Option<String> {
        let parts: Vec<String> = self.left_out.iter().map(|(why, n)| format!("{n} {}", why.reason())).collect();
        let total: usize = self.left_out.values().sum();
        (total > 0).then(|| format!("Left out of the rate: {total} cycles: {}.", parts.join("; ")))
    }

    /// The latest settings change in the window and what it does to the evidence.
    fn change_text(&self) -> Option<String> {
        let change = self.change.as_ref()?;
        let c = &change.what;
        // A first `parameter` line does not say what the value was before.
        let from = match (&c.old, &c.source) {
            (Some(old), _) => format!(" from {old}"),
            (None, ValueSource::Log { .. }) => String::new(),
            (None, _) => " from its default".into(),
        };
        let to = c.new.clone().unwrap_or_else(|| "its default".into());
        let source = match &c.source {
            ValueSource::Log { .. } => "logged".to_string(),
            other => format!("in {other}"),
        };
        let head = format!(
            "{} changed{from} to {to} at {} ({}): the {} forced checkpoints before ran under the old settings and do \
             not count against the current ones",
            c.name,
            crate::timefmt::table_time(c.at),
            source,
            self.forced - self.forced_now
        );
        let min = self.advice.min_samples;
        let since = self.cycles.len() - if change.left_out { 0 } else { change.cycles_before };
        Some(if change.left_out || change.cycles_before == 0 {
            format!("{head}; the rate comes from the {since} cycles since.")
        } else {
            format!(
                "{head}; only {} ran since, fewer than the {min} needed ([advice] min_samples): the rate \
                 still includes the {} before, measured under the old settings, until {} more have run.",
                plural(since, "cycle"),
                change.cycles_before,
                min - since
            )
        })
    }

    /// Full-page writes restart at every checkpoint, so WAL measured over
    /// cycles much shorter than checkpoint_timeout overstates the rate the
    /// same load has once checkpoints are time-driven (1.4x in the closed-loop
    /// benchmark at 300 tps).
    fn short_cycles_note(&self) -> Option<String> {
        let seconds: Vec<f64> = self.cycles.iter().map(|c| c.seconds).collect();
        let median = percentile(&seconds, 50.0)?;
        let min = self.advice.min_samples;
        (self.forced_now > 0 && median < self.params.timeout_s / 2.0).then(|| {
            format!(
                "The cycles were short (median {median:.0} s against checkpoint_timeout {:.0} s): after each \
                 checkpoint every changed page goes to WAL whole (full_page_writes), so the rate measured under \
                 forced checkpoints is an upper bound. After a change, ask again once {min} checkpoint cycles have \
                 run under it (about {:.0} s): the cycles from before are then left out, and the suggestion may be \
                 smaller.",
                self.params.timeout_s,
                min as f64 * self.params.timeout_s
            )
        })
    }

    fn verdict(&self, max: u64) -> String {
        let current = self.params.max_wal_size_mb;
        if (max as f64) > current {
            return format!("Raise max_wal_size from {} to {}.", pg_size(current as u64), pg_size(max));
        }
        if self.forced_now > 0 {
            return format!(
                "Keep max_wal_size at least {}: {} forced checkpoints came from bursts above the p{} rate \
                 (set [advice] percentile = 100 to size for them).",
                pg_size(current as u64),
                self.forced_now,
                self.advice.percentile
            );
        }
        if current > 4.0 * max as f64 {
            return format!(
                "The current max_wal_size {} is more than 4x the need ({}): only informational, it costs pg_wal \
                 space and crash recovery time, not throughput.",
                pg_size(current as u64),
                pg_size(max)
            );
        }
        format!("The current max_wal_size {} is enough.", pg_size(current as u64))
    }

    fn cost_text(&self, max: u64, cost: &Cost) -> String {
        let disk = format!(
            "Cost: pg_wal may hold about {} (max_wal_size + wal_keep_size {} MB)",
            pg_size(cost.pg_wal_mb.unwrap_or(max)),
            self.params.wal_keep_mb
        );
        match (cost.crash_recovery_wal_mb, cost.replay_mb_s, cost.crash_recovery_s) {
            (Some(wal), Some(speed), Some(s)) => format!(
                "{disk}; a crash would replay up to about {} MB of WAL, {} s at the {} MB/s replay \
                 speed this log shows.",
                grouped_f(wal, 0),
                grouped_f(s, 0),
                grouped_f(speed, 1)
            ),
            (Some(wal), _, _) => format!(
                "{disk}; a crash would replay up to about {} MB of WAL (no recovery in this log to measure \
                 the replay speed).",
                grouped_f(wal, 0)
            ),
            _ => format!("{disk}."),
        }
    }
}
