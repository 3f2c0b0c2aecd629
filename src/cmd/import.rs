//! `walwatch import`: read log files into the store.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::{FormatArg, ImportArgs};
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::ingest::{self, ImportReport, Options};
use crate::store::Store;

pub fn run(args: ImportArgs) -> Result<ExitCode> {
    let path = super::db_path(&args.db);
    let mut store = Store::open(&path)?;
    let time = TimeContext::new(args.timezone.as_deref()).context("invalid --timezone")?;
    let opts = Options {
        format: match args.format {
            FormatArg::Auto => None,
            FormatArg::Stderr => Some(Format::Stderr),
            FormatArg::Csvlog => Some(Format::Csvlog),
            FormatArg::Jsonlog => Some(Format::Jsonlog),
            FormatArg::Syslog => Some(Format::Syslog),
        },
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
    let mut failed = 0;
    let mut stdout = std::io::stdout().lock();
    for file in &args.files {
        let cluster = args.cluster.clone().unwrap_or_else(|| crate::config::cluster_name(file));
        let cluster_id = store.cluster_id(&cluster)?;
        match ingest::import(&mut store, cluster_id, file, &opts, &time) {
            Ok(report) => print_report(&mut stdout, &cluster, &report)?,
            Err(err) => {
                failed += 1;
                eprintln!("walwatch: {err}");
            }
        }
    }
    if failed > 0 {
        eprintln!(
            "walwatch: {failed} of {} file(s) could not be imported completely; what was read before the error is kept",
            args.files.len()
        );
        return Ok(ExitCode::from(super::EXIT_FAILURE));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(out: &mut impl Write, cluster: &str, r: &ImportReport) -> Result<()> {
    writeln!(
        out,
        "{} (cluster {cluster}, {}{})",
        r.name,
        r.format,
        r.prefix.as_ref().map(|p| format!(", prefix '{p}'")).unwrap_or_default()
    )?;
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
    writeln!(out, "  rejected {}, unparsed {}, new in store {}", r.rejected, r.unparsed, r.stored)?;
    for w in &r.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}
