//! `walwatch import --undated`: what a log without times says in file
//! order, printed; nothing is stored (see `ingest::undated`).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use serde::Serialize;

use crate::cli::{ImportArgs, ReportFormat};
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::ingest::{self, Options, UndatedPoint, UndatedReport};
use crate::model::event::{PointKind, Trigger};
use crate::output::{self, grouped};
use crate::store::ByTrigger;

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
    let mut reports = Vec::new();
    for file in &args.files {
        match ingest::read_undated(file, &opts, &time) {
            Ok(report) if args.report == ReportFormat::Json => reports.push(FileJson::Read(Box::new(json(&report)))),
            Ok(report) => {
                for line in text(&report) {
                    output::line(&mut stdout, line)?;
                }
            }
            Err(err) => {
                failed += 1;
                stdout.flush()?;
                output::line(&mut std::io::stderr().lock(), format!("walwatch: {err}"))?;
                reports.push(FileJson::Failed { file: file.clone(), error: err.to_string() });
            }
        }
    }
    if args.report == ReportFormat::Json {
        output::json(&mut stdout, &reports)?;
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
    for summary in [Points::of(r, PointKind::Checkpoint), Points::of(r, PointKind::Restartpoint)].iter().flatten() {
        let triggers: Vec<String> =
            Trigger::ALL.iter().map(|t| format!("{t} {}", summary.by_trigger.get(*t))).collect();
        let cut = if summary.truncated > 0 { format!(" ({} cut short)", summary.truncated) } else { String::new() };
        out.push(format!(
            "  {}s: started {}, completed {}{cut}; by trigger: {}",
            summary.kind,
            summary.started,
            summary.completed,
            triggers.join(", ")
        ));
        out.extend(distances(summary, cct(r)));
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

/// One kind of point of an undated log, counted: the report's figures,
/// printed as text or JSON.
#[derive(Debug, Serialize)]
struct Points {
    kind: PointKind,
    started: usize,
    completed: usize,
    truncated: usize,
    by_trigger: ByTrigger,
    distance_kb: Option<Distances>,
    /// The largest `estimate=` of the complete lines.
    estimate_kb_max: Option<i64>,
    /// What max_wal_size must exceed for points the largest distance apart
    /// to start by time (null without distances).
    max_wal_size_must_exceed_kb: Option<i64>,
}

/// The distances the complete lines print, in kB.
#[derive(Debug, Serialize)]
struct Distances {
    known: usize,
    smallest: i64,
    median: i64,
    largest: i64,
}

impl Points {
    /// The points of `kind` in `r`; None when it has none.
    fn of(r: &UndatedReport, kind: PointKind) -> Option<Points> {
        let points: Vec<&UndatedPoint> = r.points.iter().filter(|p| p.kind == kind).collect();
        if points.is_empty() {
            return None;
        }
        let count = |t: Trigger| points.iter().filter(|p| p.trigger == Some(t)).count() as i64;
        let mut known: Vec<i64> = points.iter().filter_map(|p| p.distance_kb).collect();
        known.sort_unstable();
        let distance_kb = known.last().map(|_| Distances {
            known: known.len(),
            smallest: known[0],
            median: known[known.len() / 2],
            largest: known[known.len() - 1],
        });
        Some(Points {
            kind,
            started: points.iter().filter(|p| p.trigger.is_some()).count(),
            completed: points.iter().filter(|p| p.completed).count(),
            truncated: points.iter().filter(|p| p.truncated).count(),
            by_trigger: ByTrigger {
                shutdown: count(Trigger::Shutdown),
                end_of_recovery: count(Trigger::EndOfRecovery),
                wal: count(Trigger::Wal),
                time: count(Trigger::Time),
                manual: count(Trigger::Manual),
            },
            distance_kb,
            estimate_kb_max: points.iter().filter_map(|p| p.estimate_kb).max(),
            max_wal_size_must_exceed_kb: known.last().map(|&largest| bound_kb(largest, cct(r).0)),
        })
    }
}

/// What max_wal_size must exceed for checkpoints `largest` kB apart to
/// start by time: a checkpoint `d` kB after the one before starts by WAL
/// unless max_wal_size exceeds `d × (1 + checkpoint_completion_target)`.
fn bound_kb(largest: i64, cct: f64) -> i64 {
    (largest as f64 * (1.0 + cct)).ceil() as i64
}

/// The distances between checkpoints, and the bound on max_wal_size they
/// give alone.
fn distances(points: &Points, (cct, from_log): (f64, bool)) -> Vec<String> {
    let Some(d) = &points.distance_kb else {
        return vec!["    no distance in the complete lines (PostgreSQL 9.5+ prints it)".to_string()];
    };
    let mut out = vec![format!(
        "    distance (kB): {} known, smallest {}, median {}, largest {}{}",
        d.known,
        grouped(d.smallest),
        grouped(d.median),
        grouped(d.largest),
        points.estimate_kb_max.map(|e| format!("; estimate at most {}", grouped(e))).unwrap_or_default()
    )];
    let bound = bound_kb(d.largest, cct);
    let whose =
        if from_log { "as the log sets it" } else { "the default since PostgreSQL 14; the log does not set it" };
    out.push(format!(
        "    max_wal_size: for checkpoints {} kB apart to start by time rather than by WAL, it must exceed {} kB \
         ({} MB) = largest distance x (1 + checkpoint_completion_target {cct}, {whose})",
        grouped(d.largest),
        grouped(bound),
        grouped((bound + 1023) / 1024),
    ));
    out
}

/// One file of `import --undated --report json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum FileJson {
    Read(Box<UndatedJson>),
    Failed { file: String, error: String },
}

/// `import --undated --report json`: the text report's figures; the keys
/// are a public interface.
#[derive(Debug, Serialize)]
struct UndatedJson {
    file: String,
    /// Always "undated": nothing of it was stored.
    mode: &'static str,
    format: &'static str,
    prefix: String,
    lines: u64,
    entries: u64,
    events: std::collections::BTreeMap<&'static str, u64>,
    rejected: u64,
    unmatched: u64,
    unparsed: u64,
    checkpoints: Option<Points>,
    restartpoints: Option<Points>,
    checkpoint_completion_target: Cct,
    /// Every checkpoint and restartpoint, in file order.
    points: Vec<PointJson>,
}

#[derive(Debug, Serialize)]
struct Cct {
    value: f64,
    /// "log" (the last value it sets) or "default" (PostgreSQL 14+'s).
    source: &'static str,
}

#[derive(Debug, Serialize)]
struct PointJson {
    kind: PointKind,
    line: u64,
    trigger: Option<&'static str>,
    completed: bool,
    truncated: bool,
    distance_kb: Option<i64>,
    estimate_kb: Option<i64>,
}

fn json(r: &UndatedReport) -> UndatedJson {
    let (value, from_log) = cct(r);
    UndatedJson {
        file: r.name.clone(),
        mode: "undated",
        format: "stderr",
        prefix: r.prefix.clone(),
        lines: r.lines,
        entries: r.entries,
        events: r.events.clone(),
        rejected: r.rejected,
        unmatched: r.unmatched,
        unparsed: r.unparsed,
        checkpoints: Points::of(r, PointKind::Checkpoint),
        restartpoints: Points::of(r, PointKind::Restartpoint),
        checkpoint_completion_target: Cct { value, source: if from_log { "log" } else { "default" } },
        points: r
            .points
            .iter()
            .map(|p| PointJson {
                kind: p.kind,
                line: p.line,
                trigger: p.trigger.map(Trigger::as_str),
                completed: p.completed,
                truncated: p.truncated,
                distance_kb: p.distance_kb,
                estimate_kb: p.estimate_kb,
            })
            .collect(),
    }
}
