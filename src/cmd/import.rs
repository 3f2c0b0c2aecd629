//! `walwatch import`: read log files into the store.

mod json;
mod progress;
mod undated;

use std::collections::hash_map::{Entry, HashMap};
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use clap::ValueEnum;

use crate::cli::{FormatArg, ImportArgs, ReportFormat};
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::ingest::{self, ImportReport, Options};
use crate::output;
use crate::store::Store;

pub(crate) fn run(args: ImportArgs) -> Result<ExitCode> {
    if args.undated {
        return undated::run(&args);
    }
    let path = super::config_and_db(&args.common)?.db;
    let (mut store, created) = Store::open_creating(&path)?;
    if let Some(created) = created {
        super::note(format_args!("walwatch: {created}"));
    }
    // One reading of times per cluster: what a cluster's log says of its
    // zone (see `TimeContext::learn_zone`) holds for its next files, never
    // for another cluster's.
    TimeContext::new(args.timezone.as_deref()).context("invalid --timezone")?;
    let mut times: HashMap<String, TimeContext> = HashMap::new();
    let opts = Options {
        // The value's name is the format's (`auto`: none, detected).
        format: args.format.to_possible_value().and_then(|v| Format::named(v.get_name())),
        prefix: Some(args.prefix.clone()).filter(|p| p != "auto"),
        new_files_from_end: false,
        hold_last_entry: false,
        // PostgreSQL ends every entry with a line break; a file without one
        // at its end and untouched for two seconds was cut short for good
        // (a crash, a copy) and its last entry counts.
        finished_after: Some(std::time::Duration::from_secs(2)),
        stop: None,
        alive: None,
    };
    let (mut failed, mut misfits, mut damaged) = (0, 0, 0);
    let mut stdout = std::io::stdout().lock();
    let as_json = args.report == ReportFormat::Json;
    let mut reports = Vec::new();
    for file in &args.files {
        let cluster = args.cluster.clone().unwrap_or_else(|| crate::config::cluster_name(file));
        let cluster_id = store.clusters_mut().find_or_create(&cluster)?;
        let bar = progress::Bar::new(super::quiet());
        let time = match times.entry(cluster.clone()) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(new) => {
                let time = TimeContext::new(args.timezone.as_deref())?;
                ingest::remember_zone(&store, cluster_id, &time)?;
                new.insert(time)
            }
        };
        let result = ingest::import_watched(&mut store, cluster_id, file, &opts, time, &|p| bar.update(p));
        // The report and errors go where the bar was drawn: gone first.
        bar.clear();
        match result {
            Ok(report) => {
                if as_json {
                    reports.push(json::FileJson::of(&cluster, &report));
                } else if !super::quiet() {
                    print_report(&mut stdout, &cluster, &report)?;
                }
                if report.truncated > 0 && report.misfit.is_none() {
                    damaged += 1;
                    stdout.flush()?;
                    output::line(
                        &mut std::io::stderr().lock(),
                        format!(
                            "walwatch: {}: {} complete line(s) were cut short; what they say before the cut is stored, \
                             the checkpoints marked truncated (import the whole log to have the rest)",
                            report.name, report.truncated
                        ),
                    )?;
                }
                if let Some(why) = &report.misfit {
                    misfits += 1;
                    stdout.flush()?;
                    let mut stderr = std::io::stderr().lock();
                    for line in misfit_text(&report, why) {
                        output::line(&mut stderr, line)?;
                    }
                }
            }
            Err(err) => {
                failed += 1;
                output::line(&mut std::io::stderr().lock(), format!("walwatch: {err}"))?;
                reports.push(json::FileJson::Failed { file: file.clone(), cluster, error: err.to_string() });
            }
        }
    }
    if as_json {
        output::json(&mut stdout, &reports)?;
    }
    if failed > 0 {
        eprintln!(
            "walwatch: {failed} of {} file(s) could not be imported completely; what was read before the error is kept",
            args.files.len()
        );
        return Ok(ExitCode::from(super::EXIT_FAILURE));
    }
    if misfits > 0 {
        return Ok(ExitCode::from(super::EXIT_MISFIT));
    }
    if damaged > 0 {
        return Ok(ExitCode::from(super::EXIT_PROBLEMS));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `import` says on stderr about a file whose lines did not fit, line
/// by line: why, how it was read, the first such line, and what to pass
/// instead.
fn misfit_text(r: &ImportReport, why: &str) -> Vec<String> {
    let mut text = vec![format!("walwatch: {}: {why}; nothing of it was recorded as read", r.name)];
    match (&r.first_unmatched, r.first_rejected) {
        (Some((line, shown)), _) => text.push(format!("walwatch:   first such line (line {line}): {shown}")),
        (None, Some((line, reason))) => text.push(format!("walwatch:   first line refused (line {line}): {reason}")),
        (None, None) => {}
    }
    text.push(way_out(r));
    text
}

/// What to do about a file none of whose events was read: every line fit
/// but was refused (the trust checks, which no option turns off; only a
/// wrong prefix can make the checkpointer's lines look like a client's), or
/// lines did not fit (another format or prefix).
fn way_out(r: &ImportReport) -> String {
    const PREFIX: &str = "its log_line_prefix with --prefix (the value of `SHOW log_line_prefix;`)";
    if r.unmatched == 0 && r.unreadable == 0 {
        let prefix = match &r.prefix {
            Some(_) => format!("; if that is not the server's prefix, pass {PREFIX}"),
            None => String::new(),
        };
        return format!(
            "walwatch:   every such line fit the {} and was refused: only the process that logs an event may write it \
             (docs/guide/logs.md, Trusting what the log says){prefix}",
            r.layout()
        );
    }
    format!(
        "walwatch:   it was read as {}; pass the server's log format with --format ({}) \
         and {PREFIX}, or leave both at auto to detect them",
        r.layout(),
        format_names()
    )
}

/// The values `--format` takes besides auto, as `--help` lists them.
fn format_names() -> String {
    let named = FormatArg::value_variants().iter().filter(|f| **f != FormatArg::Auto);
    named.filter_map(|f| f.to_possible_value()).map(|v| v.get_name().to_string()).collect::<Vec<_>>().join(", ")
}

fn print_report(out: &mut impl Write, cluster: &str, r: &ImportReport) -> Result<()> {
    let prefix = r.prefix.as_ref().map(|p| format!(", prefix '{p}'")).unwrap_or_default();
    output::line(out, format!("{} (cluster {cluster}, {}{prefix})", r.name, r.format))?;
    if r.resumed_at > 0 {
        writeln!(out, "  resumed at byte {} (already imported before)", r.resumed_at)?;
    }
    writeln!(
        out,
        "  bytes {}, lines {}, entries {}, {:.3} s, {:.1} MB/s",
        r.bytes,
        r.frame.lines,
        r.frame.entries,
        r.seconds,
        r.mb_per_s()
    )?;
    let events: Vec<String> = r.events.iter().map(|(k, n)| format!("{k} {n}")).collect();
    writeln!(out, "  events: {}", if events.is_empty() { "none".to_string() } else { events.join(", ") })?;
    writeln!(
        out,
        "  rejected {}, unmatched {}, unparsed {}, new in store {}",
        r.rejected, r.unmatched, r.unparsed, r.stored
    )?;
    if r.truncated > 0 {
        writeln!(out, "  truncated {} (complete lines cut short: figures after the cut unknown)", r.truncated)?;
    }
    for w in &r.warnings {
        output::line(out, format!("  warning: {w}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use crate::cli::FormatArg;
    use crate::config::FORMATS;
    use crate::frame::Format;

    /// `--format`'s values, the config's `format` values and the formats
    /// walwatch reads are one list.
    #[test]
    fn every_format_value_names_a_format() {
        let names: Vec<String> =
            FormatArg::value_variants().iter().map(|v| v.to_possible_value().unwrap().get_name().to_string()).collect();
        assert_eq!(names, FORMATS);
        for name in &names[1..] {
            assert_eq!(Format::named(name).map(Format::as_str), Some(name.as_str()));
        }
    }
}
