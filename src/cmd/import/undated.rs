//! `walwatch import --undated`: what a log without times says in file
//! order, printed; nothing is stored (see `ingest::undated`).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::ImportArgs;
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::ingest::{self, Options, UndatedPoint, UndatedReport};
use crate::model::event::{PointKind, Trigger};
use crate::output::{self, grouped};

/// checkpoint_completion_target's default since PostgreSQL 14 (0.5 before).
const DEFAULT_CCT: f64 = 0.9;

pub(super) fn run(args: &ImportArgs) -> Result<ExitCode> {
    use clap::ValueEnum;
    let time = TimeContext::new(args.timezone.as_deref()).context("invalid --timezone")?;
    let opts = Options {
        format: args.format.to_possible_value().and_then(|v| Format::named(v.get_name())),
        prefix: Some(args.prefix.clone()).filter(|p| p != "auto"),
        ..Options::default()
    };
    let mut failed = 0;
    let mut stdout = std::io::stdout().lock();
    for file in &args.files {
        match ingest::read_undated(file, &opts, &time) {
            Ok(report) => {
                for line in text(&report) {
                    output::line(&mut stdout, line)?;
                }
            }
            Err(err) => {
                failed += 1;
                stdout.flush()?;
                output::line(&mut std::io::stderr().lock(), format!("walwatch: {err}"))?;
            }
        }
    }
    if failed > 0 {
        return Ok(ExitCode::from(super::super::EXIT_FAILURE));
    }
    Ok(ExitCode::SUCCESS)
}

/// The report, line by line.
pub(super) fn text(r: &UndatedReport) -> Vec<String> {
    let mut out = vec![
        format!("{} (undated: stderr, prefix '{}', read in file order; nothing stored)", r.name, r.prefix),
        format!("  lines {}, entries {}", r.lines, r.entries),
    ];
    let events: Vec<String> = r.events.iter().map(|(k, n)| format!("{k} {n}")).collect();
    out.push(format!("  events: {}", if events.is_empty() { "none".to_string() } else { events.join(", ") }));
    out.push(format!("  rejected {}, unmatched {}, unparsed {}", r.rejected, r.unmatched, r.unparsed));
    for kind in [PointKind::Checkpoint, PointKind::Restartpoint] {
        let points: Vec<&UndatedPoint> = r.points.iter().filter(|p| p.kind == kind).collect();
        if points.is_empty() {
            continue;
        }
        let started = points.iter().filter(|p| p.trigger.is_some()).count();
        let completed = points.iter().filter(|p| p.completed).count();
        let truncated = points.iter().filter(|p| p.truncated).count();
        let triggers: Vec<String> = Trigger::ALL
            .iter()
            .map(|t| format!("{t} {}", points.iter().filter(|p| p.trigger == Some(*t)).count()))
            .collect();
        let cut = if truncated > 0 { format!(" ({truncated} cut short)") } else { String::new() };
        out.push(format!(
            "  {kind}s: started {started}, completed {completed}{cut}; by trigger: {}",
            triggers.join(", ")
        ));
        out.extend(distances(&points, cct(r)));
    }
    if r.points.is_empty() {
        out.push("  no checkpoint lines: is log_checkpoints on?".to_string());
    }
    out.push(
        "  without times, how often checkpoints come, the WAL rate and what checkpoint_timeout needs cannot be said: \
         add %m to log_line_prefix"
            .to_string(),
    );
    out
}

/// checkpoint_completion_target: the last value the log sets, else the
/// default (and which of the two, for the report).
fn cct(r: &UndatedReport) -> (f64, bool) {
    let set = r.changes.iter().rev().find(|(name, _)| name == "checkpoint_completion_target");
    match set.and_then(|(_, v)| v.parse::<f64>().ok()) {
        Some(v) if (0.0..=1.0).contains(&v) => (v, true),
        _ => (DEFAULT_CCT, false),
    }
}

/// The distances between checkpoints, and the bound on max_wal_size they
/// give alone: a checkpoint `d` kB after the one before starts by WAL
/// unless max_wal_size exceeds `d × (1 + checkpoint_completion_target)`.
fn distances(points: &[&UndatedPoint], (cct, from_log): (f64, bool)) -> Vec<String> {
    let mut known: Vec<i64> = points.iter().filter_map(|p| p.distance_kb).collect();
    if known.is_empty() {
        return vec!["    no distance in the complete lines (PostgreSQL 9.5+ prints it)".to_string()];
    }
    known.sort_unstable();
    let (smallest, largest) = (known[0], known[known.len() - 1]);
    let median = known[known.len() / 2];
    let estimate = points.iter().filter_map(|p| p.estimate_kb).max();
    let mut out = vec![format!(
        "    distance (kB): {} known, smallest {}, median {}, largest {}{}",
        known.len(),
        grouped(smallest),
        grouped(median),
        grouped(largest),
        estimate.map(|e| format!("; estimate at most {}", grouped(e))).unwrap_or_default()
    )];
    let bound = (largest as f64 * (1.0 + cct)).ceil() as i64;
    let whose =
        if from_log { "as the log sets it" } else { "the default since PostgreSQL 14; the log does not set it" };
    out.push(format!(
        "    max_wal_size: for checkpoints {} kB apart to start by time rather than by WAL, it must exceed {} kB \
         ({} MB) = largest distance x (1 + checkpoint_completion_target {cct}, {whose})",
        grouped(largest),
        grouped(bound),
        grouped((bound + 1023) / 1024),
    ));
    out
}
