//! `walwatch summary`: counts by trigger, warnings, setting changes, and
//! the time range of the log. Events dated more than [alerts.clock_skew]
//! tolerance ahead of walwatch's clock when read are counted like the
//! others but never are the first or last event (one line dated 2099 would
//! make the log seem to reach 2099); their number is shown on its own.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use jiff::Timestamp;
use serde::Serialize;

use crate::cli::{ReportFormat, SummaryArgs};
use crate::model::event::Trigger;
use crate::output::{self, grouped};
use crate::store::{Filter, PointCounts, Store, StoreError};
use crate::timefmt::table_time;

/// What `walwatch summary` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Summary {
    pub(crate) checkpoints: PointCounts,
    pub(crate) restartpoints: PointCounts,
    pub(crate) too_frequent: i64,
    pub(crate) parameter_changes: i64,
    /// Records the trust rule proved a client session wrote.
    pub(crate) rejected: i64,
    /// Lines that look like events but that their file's format or prefix
    /// did not fit (who wrote them cannot be said), in the files read for
    /// the clusters chosen: such a line has no time, so --since/--until do
    /// not apply.
    pub(crate) unmatched: i64,
    /// Checkpoints and restartpoints stored from a complete line cut short:
    /// their figures after the cut are unknown.
    pub(crate) truncated: i64,
    /// First and last event, leaving out those dated ahead.
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) first_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub(crate) last_at: Option<Timestamp>,
    /// Events dated more than the tolerance ahead of walwatch's clock when read (counted above, no first/last).
    pub(crate) dated_ahead: i64,
}

/// The counts cover every stored record; first and last event leave out
/// those dated more than `tolerance` ahead, which `dated_ahead` counts.
pub(crate) fn summary(store: &Store, filter: &Filter, tolerance: Duration) -> Result<Summary, StoreError> {
    let (checkpoints, events, sources) = (store.checkpoints(), store.events(), store.sources());
    Ok(Summary {
        checkpoints: checkpoints.counts(filter, "checkpoint")?,
        restartpoints: checkpoints.counts(filter, "restartpoint")?,
        too_frequent: events.count(filter, "too_frequent")?,
        parameter_changes: events.count(filter, "parameter_changed")?,
        rejected: events.count(filter, "rejected")? + sources.rejected_lines(filter)?,
        unmatched: sources.unmatched_lines(filter)?,
        truncated: checkpoints.truncated(filter)?,
        first_at: events.first_time(filter, tolerance)?,
        last_at: events.last_time(filter, tolerance)?,
        dated_ahead: events.count_dated_ahead(filter, tolerance)?,
    })
}

pub(crate) fn run(args: SummaryArgs) -> Result<ExitCode> {
    let filter = super::filter(&args.window, None)?;
    let super::Loaded { rules, db, .. } = super::config_and_db(&args.common)?;
    let store = Store::open_read_only(&db)?;
    super::check_cluster(&store, filter.cluster.as_deref())?;
    let summary = summary(&store, &filter, rules.clock_skew_tolerance())?;
    let mut out = std::io::stdout().lock();
    match args.format {
        ReportFormat::Json => output::json(&mut out, &summary)?,
        ReportFormat::Table => table(&mut out, &summary)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn table(out: &mut impl Write, s: &Summary) -> Result<()> {
    let mut header = vec!["", "started", "completed"];
    header.extend(Trigger::ALL.map(Trigger::as_str));
    let row = |name: &str, c: &PointCounts| {
        let mut r = vec![name.to_string(), grouped(c.started), grouped(c.completed)];
        r.extend(Trigger::ALL.map(|t| grouped(c.by_trigger.get(t))));
        r
    };
    let rows = vec![row("checkpoints", &s.checkpoints), row("restartpoints", &s.restartpoints)];
    output::table(out, &header, &rows, &header[1..])?;
    writeln!(out)?;
    writeln!(out, "too frequent warnings  {}", grouped(s.too_frequent))?;
    writeln!(out, "parameter changes      {}", grouped(s.parameter_changes))?;
    writeln!(out, "rejected (forged)      {}", grouped(s.rejected))?;
    writeln!(out, "unmatched (no fit)     {}", grouped(s.unmatched))?;
    if s.truncated > 0 {
        writeln!(out, "truncated (cut lines)  {} (figures after the cut unknown)", grouped(s.truncated))?;
    }
    let t = |t: &Option<jiff::Timestamp>| t.map(table_time).unwrap_or_else(|| "-".into());
    writeln!(out, "first event            {}", t(&s.first_at))?;
    writeln!(out, "last event             {}", t(&s.last_at))?;
    if s.dated_ahead > 0 {
        writeln!(out, "dated ahead of clock   {} (not first or last event; see `walwatch status`)", s.dated_ahead)?;
    }
    Ok(())
}
