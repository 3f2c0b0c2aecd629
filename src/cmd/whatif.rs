//! `walwatch whatif`: the logged WAL timeline replayed under other
//! settings (see [`crate::analyze::whatif`]); without a setting, under the
//! ones in force, against what the log shows.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::analyze::whatif::timeline::{self, Logged};
use crate::analyze::whatif::{self as model, Outcome, Rules, Schedule};
use crate::cli::{ReportFormat, WhatifArgs};
use crate::guc::units::{self, Parsed};
use crate::output::{self, grouped_f};
use crate::store::checkpoints::ByTrigger;

/// One setting's prediction: `walwatch whatif --format json` is an array of
/// these; the keys are a public interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Prediction {
    pub(crate) max_wal_size_mb: u64,
    pub(crate) checkpoint_timeout_s: u64,
    pub(crate) checkpoints: ByTrigger,
    pub(crate) too_frequent: i64,
    pub(crate) peak_pg_wal_mb: f64,
    pub(crate) max_replay_mb: f64,
    /// At the replay speed of the log's crash recoveries; None without one.
    pub(crate) recovery_s: Option<f64>,
}

/// What the replay cannot know, said under the table.
const LIMITS: &str = "The replay keeps the WAL the log shows. Full-page writes follow each checkpoint, so with rarer \
                      checkpoints the same load writes less WAL: forced checkpoints, pg_wal and replay for larger \
                      sizes are upper bounds, for smaller sizes lower ones. Replication slots and archive backlog \
                      are not in the log.";

pub(crate) fn run(args: WhatifArgs) -> Result<ExitCode> {
    let asked = Asked::of(&args)?;
    let super::Loaded { config, db, .. } = super::config_and_db(&args.common)?;
    let mut store = super::writable_or_read_only(&db)?;
    let filter = super::filter(&args.window, None)?;
    let known = super::clusters(&store, args.window.cluster.as_deref())?;
    let name = match known.as_slice() {
        [one] => one.clone(),
        [] => anyhow::bail!("the store {} holds no cluster yet: import a log first", store.path().display()),
        many => anyhow::bail!("the store holds several clusters ({}): name one with --cluster", many.join(", ")),
    };
    let now = jiff::Timestamp::now();
    let refreshed = match config.clusters.iter().find(|c| c.name == name) {
        Some(cluster) => crate::settings::refresh(&mut store, &crate::settings::Sources::of(cluster), now),
        None => crate::settings::refresh_from_logs(&mut store, &name, now),
    };
    if let Err(e) = refreshed {
        tracing::warn!("cluster {name:?}: settings not refreshed from its config files: {e}");
    }
    let settings = crate::settings::current(&store, &name)?;
    let logged = timeline::read(&store, &name, filter.since, filter.until, &settings)?;
    let predictions = predict(&logged, &asked);
    let mut out = std::io::stdout().lock();
    match args.format {
        ReportFormat::Json => output::json(&mut out, &predictions)?,
        ReportFormat::Table => text(&mut out, &name, &logged, &predictions, asked.sizes.is_empty())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// One prediction per --max-wal-size (the settings in force when none).
fn predict(logged: &Logged, asked: &Asked) -> Vec<Prediction> {
    let overridden = |mut r: Rules, max: Option<f64>| {
        if let Some(mb) = max {
            r.max_wal_size_mb = mb;
            r.segments = None;
        }
        if let Some(s) = asked.timeout_s {
            r.timeout_s = s;
        }
        if let Some(c) = asked.completion_target {
            r.completion_target = c;
        }
        r
    };
    let sizes: Vec<Option<f64>> =
        if asked.sizes.is_empty() { vec![None] } else { asked.sizes.iter().copied().map(Some).collect() };
    sizes
        .into_iter()
        .map(|max| {
            let schedule = Schedule(logged.schedule.0.iter().map(|(at, r)| (*at, overridden(*r, max))).collect());
            let o = model::replay(&logged.timeline, &schedule);
            let last = schedule.at(f64::INFINITY);
            prediction(&o, &last, logged.replay_mb_s)
        })
        .collect()
}

fn prediction(o: &Outcome, rules: &Rules, replay_mb_s: Option<f64>) -> Prediction {
    Prediction {
        max_wal_size_mb: rules.max_wal_size_mb.round() as u64,
        checkpoint_timeout_s: rules.timeout_s.round() as u64,
        checkpoints: o.checkpoints,
        too_frequent: o.too_frequent,
        peak_pg_wal_mb: round1(o.peak_pg_wal_mb),
        max_replay_mb: round1(o.max_replay_mb),
        recovery_s: replay_mb_s.filter(|s| *s > 0.0).map(|s| round1(o.max_replay_mb / s)),
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn text(out: &mut impl Write, cluster: &str, logged: &Logged, ps: &[Prediction], in_force: bool) -> Result<()> {
    let t = &logged.timeline;
    let span = std::time::Duration::from_secs_f64((t.end - t.start).max(0.0).round());
    output::line(
        out,
        format!(
            "cluster {cluster}: {} of log from {}, WAL from {}",
            crate::timefmt::format_duration(span),
            crate::timefmt::table_time(logged.origin),
            if logged.from_lsn { "the logged redo LSNs" } else { "the logged distances" }
        ),
    )?;
    const HEADER: [&str; 9] =
        ["max_wal_size", "timeout", "wal", "time", "other", "too_frequent", "peak_pg_wal", "max_replay", "recovery"];
    let counts = |c: &ByTrigger| [c.wal, c.time, c.manual + c.shutdown + c.end_of_recovery].map(|n| n.to_string());
    let mut rows = Vec::new();
    if in_force {
        let mut row = vec!["logged".to_string(), String::new()];
        row.extend(counts(&logged.checkpoints));
        row.extend([logged.too_frequent.to_string(), "-".into(), "-".into(), "-".into()]);
        rows.push(row);
    }
    for p in ps {
        let size = units::size_text(p.max_wal_size_mb);
        let mut row = vec![if in_force { format!("{size} *") } else { size }, units::time_text(p.checkpoint_timeout_s)];
        row.extend(counts(&p.checkpoints));
        row.extend([
            p.too_frequent.to_string(),
            format!("{} MB", grouped_f(p.peak_pg_wal_mb, 0)),
            format!("{} MB", grouped_f(p.max_replay_mb, 0)),
            p.recovery_s.map_or_else(|| "-".to_string(), |s| format!("{} s", grouped_f(s, 1))),
        ]);
        rows.push(row);
    }
    output::table(out, &HEADER, &rows, &HEADER[2..])?;
    writeln!(out)?;
    if in_force {
        output::line(
            out,
            "* the settings in force (logged changes included), next to what the log shows: how far they differ is \
             how far the replay can be trusted on this log.",
        )?;
    }
    match logged.replay_mb_s {
        Some(s) => {
            output::line(out, format!("recovery: at the {} MB/s replay speed this log shows.", grouped_f(s, 1)))?
        }
        None => output::line(out, "recovery: no crash recovery in this log to measure the replay speed.")?,
    }
    output::line(out, LIMITS)?;
    Ok(())
}

/// A value on the command line that PostgreSQL would refuse.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("--{flag} {value:?}: {why}")]
pub(crate) struct BadValue {
    flag: &'static str,
    value: String,
    why: String,
}

/// The settings asked for on the command line, read as PostgreSQL reads them.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Asked {
    /// max_wal_size values, MB; empty: the settings in force.
    pub(crate) sizes: Vec<f64>,
    pub(crate) timeout_s: Option<f64>,
    pub(crate) completion_target: Option<f64>,
}

impl Asked {
    pub(crate) fn of(args: &WhatifArgs) -> Result<Asked, BadValue> {
        let read = |flag: &'static str, name: &str, text: &str| {
            units::parse_checked(name, text, None).map_err(|why| BadValue { flag, value: text.into(), why })
        };
        let bad = |flag: &'static str, text: &str, why: &str| BadValue { flag, value: text.into(), why: why.into() };
        let mut sizes = Vec::new();
        for text in &args.max_wal_size {
            match read("max-wal-size", "max_wal_size", text)? {
                // Two segments of the default size: PostgreSQL refuses less.
                Parsed::Bytes(b) if b >= 2.0 * 16.0 * MB => sizes.push(b / MB),
                Parsed::Bytes(_) => {
                    return Err(bad("max-wal-size", text, "PostgreSQL needs at least 2 WAL segments (32MB)"))
                }
                _ => return Err(bad("max-wal-size", text, "not a size")),
            }
        }
        let timeout_s = match args.checkpoint_timeout.as_deref() {
            Some(text) => match read("checkpoint-timeout", "checkpoint_timeout", text)? {
                Parsed::Seconds(s) => Some(s),
                _ => return Err(bad("checkpoint-timeout", text, "not a time")),
            },
            None => None,
        };
        let completion_target = match args.checkpoint_completion_target.as_deref() {
            Some(text) => match read("checkpoint-completion-target", "checkpoint_completion_target", text)? {
                Parsed::Number(x) => Some(x),
                _ => return Err(bad("checkpoint-completion-target", text, "not a number")),
            },
            None => None,
        };
        Ok(Asked { sizes, timeout_s, completion_target })
    }
}

const MB: f64 = 1024.0 * 1024.0;
