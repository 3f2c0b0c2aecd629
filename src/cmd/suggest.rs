//! `walwatch suggest`: max_wal_size advice from the observed WAL distance.
//! With `--cluster` the JSON is one object, otherwise an array of them.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use jiff::Timestamp;

use crate::analyze::sizing::{self, pg_size, Suggestion};
use crate::cli::{ReportFormat, SuggestArgs};
use crate::output;

pub(crate) fn run(args: SuggestArgs) -> Result<ExitCode> {
    let super::Loaded { config, rules, db } = super::config_and_db(&args.common)?;
    let mut store = super::writable_or_read_only(&db)?;
    let now = Timestamp::now();
    let clusters = super::clusters(&store, args.cluster.as_deref())?;
    let mut suggestions = Vec::with_capacity(clusters.len());
    let mut earliest: Option<Timestamp> = None;
    for name in &clusters {
        // An imported cluster's log may lie in its data directory, whose conf files then count.
        let refreshed = match config.clusters.iter().find(|c| &c.name == name) {
            Some(cluster) => crate::settings::refresh(&mut store, &crate::settings::Sources::of(cluster), now),
            None => crate::settings::refresh_from_logs(&mut store, name, now),
        };
        // A DBA reading the service's store may not be allowed to write it:
        // the settings the daemon recorded still apply.
        if let Err(e) = refreshed {
            tracing::warn!("cluster {name:?}: settings not refreshed from its config files: {e}");
        }
        let settings = crate::settings::current(&store, name)?;
        let s = sizing::suggest_with(
            &store,
            name,
            &settings,
            config.advice_for(name),
            rules.clock_skew_tolerance(),
            now,
            true,
        )?;
        warn_without_distance(&s);
        // The same window `suggest` reads: its start, against what was pruned.
        let newest = store.events().log_times(name, rules.clock_skew_tolerance())?.newest;
        let window = crate::analyze::window::Window::ending(now, newest, config.advice_for(name).lookback);
        earliest = Some(earliest.map_or(window.start, |e| e.min(window.start)));
        suggestions.push(s);
    }
    super::history::note_pruned(&store, earliest, "the lookback window has no cycles before it")?;
    let mut out = std::io::stdout().lock();
    match (args.format, args.cluster.is_some()) {
        (ReportFormat::Json, true) => output::json(&mut out, &suggestions[0])?,
        (ReportFormat::Json, false) => output::json(&mut out, &suggestions)?,
        (ReportFormat::Table, _) => suggestions.iter().try_for_each(|s| text(&mut out, s))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// A log of PostgreSQL 9.4 or older can never be sized from, however long:
/// said on stderr as well as in the explanation, so that a script reading
/// only the JSON's numbers still shows why there are none.
fn warn_without_distance(s: &Suggestion) {
    if s.basis.samples == 0 && s.basis.checkpoints_without_distance > 0 {
        tracing::warn!(
            "cluster {:?}: no suggestion: its {} checkpoints logged no WAL distance; walwatch needs \"distance=\" \
             in \"checkpoint complete\" lines (PostgreSQL 9.5+)",
            s.cluster,
            s.basis.checkpoints_without_distance
        );
    }
}

/// The crash recoveries' replay speed and when the newest was measured.
fn replay_speed(s: &Suggestion) -> String {
    match (s.cost.replay_mb_s, s.cost.replay_measured_at) {
        (Some(mb_s), Some(at)) => {
            format!("{} MB/s (crash recovery, newest {})", output::grouped_f(mb_s, 1), crate::timefmt::table_time(at))
        }
        _ => "not measured (no crash recovery in the log)".into(),
    }
}

/// Each bound set: its limit, the value at the suggested size, met or not.
fn bounds_rows(out: &mut impl Write, b: &sizing::Bounds) -> Result<()> {
    let verdict = |met: Option<bool>| match met {
        Some(true) => "met",
        Some(false) => "NOT met",
        None => "cannot be checked (no replay speed measured)",
    };
    if let Some(r) = &b.max_recovery {
        let value = r.recovery_s.map_or("-".into(), |s| format!("{} s", output::grouped_f(s, 1)));
        let limit = crate::guc::units::time_text(r.limit_s.round() as u64);
        writeln!(out, "  max_recovery            {limit}: worst crash {value}, {}", verdict(r.met))?;
    }
    if let Some(d) = &b.max_pg_wal {
        let peak = output::grouped_f(d.peak_pg_wal_mb, 0);
        writeln!(out, "  max_pg_wal              {}: peak {peak} MB, {}", pg_size(d.limit_mb), verdict(Some(d.met)))?;
    }
    if let Some(limiting) = b.limiting {
        let time_driven = pg_size(b.time_driven_max_wal_size_mb);
        writeln!(out, "  limited by              {limiting} (time-driven needs {time_driven})")?;
    }
    Ok(())
}

/// Forced checkpoints against size, by the replay of the window.
fn curve_table(out: &mut impl Write, s: &Suggestion) -> Result<()> {
    if s.curve.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n  The window replayed at other sizes (walwatch whatif):")?;
    let rows: Vec<Vec<String>> = s
        .curve
        .iter()
        .map(|p| {
            let mark = if Some(p.max_wal_size_mb) == s.suggested.max_wal_size_mb { " *" } else { "" };
            vec![
                format!("  {}{mark}", pg_size(p.max_wal_size_mb)),
                p.forced.to_string(),
                p.too_frequent.to_string(),
                format!("{} MB", output::grouped_f(p.peak_pg_wal_mb, 0)),
                p.recovery_s.map_or("-".into(), |r| format!("{} s", output::grouped_f(r, 1))),
            ]
        })
        .collect();
    let header = ["  max_wal_size", "forced", "too_frequent", "peak_pg_wal", "recovery"];
    output::table(out, &header, &rows, &header[1..])?;
    Ok(())
}

fn text(out: &mut impl Write, s: &Suggestion) -> Result<()> {
    let size = |mb: Option<u64>| mb.map(pg_size).unwrap_or_else(|| "-".into());
    output::line(out, format!("cluster {}", s.cluster))?;
    writeln!(out, "  suggested max_wal_size  {}", size(s.suggested.max_wal_size_mb))?;
    writeln!(out, "  suggested min_wal_size  {}", size(s.suggested.min_wal_size_mb))?;
    writeln!(out, "  confidence              {}", s.confidence)?;
    writeln!(out, "  replay speed            {}", replay_speed(s))?;
    if let Some(b) = &s.bounds {
        bounds_rows(out, b)?;
    }
    for (name, value) in &s.current.values {
        if ["max_wal_size", "min_wal_size", "checkpoint_timeout", "checkpoint_completion_target"]
            .contains(&name.as_str())
        {
            let inferred = matches!(value.source, crate::settings::ValueSource::Inferred { .. });
            let note = if inferred { " (inferred from the log)" } else { "" };
            output::line(out, format!("  current {name:<28} {}{note}", value.value))?;
        }
    }
    writeln!(out)?;
    for sentence in &s.explanation {
        output::line(out, format!("  {sentence}"))?;
    }
    curve_table(out, s)?;
    if let Some(sql) = &s.sql {
        writeln!(out, "\n  To apply:")?;
        for statement in sql.lines() {
            output::line(out, format!("    {statement}"))?;
        }
    }
    writeln!(out)?;
    Ok(())
}
