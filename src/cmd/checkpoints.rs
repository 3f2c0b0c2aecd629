//! `walwatch checkpoints`: one row per checkpoint or restartpoint.

use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::cli::{CheckpointsArgs, OutputFormat};
use crate::model::event::Trigger;
use crate::output::{self, cell};
use crate::store::CheckpointRow;
use crate::store::Store;
use crate::timefmt::rfc3339;

const HEADER: [&str; 22] = [
    "cluster",
    "kind",
    "trigger",
    "flags",
    "started_at",
    "completed_at",
    "buffers_written",
    "buffers_pct",
    "slru_buffers_written",
    "wal_files_added",
    "wal_files_removed",
    "wal_files_recycled",
    "write_s",
    "sync_s",
    "total_s",
    "sync_files",
    "sync_longest_s",
    "sync_average_s",
    "distance_kb",
    "estimate_kb",
    "lsn",
    "redo_lsn",
];

pub fn run(args: CheckpointsArgs) -> Result<ExitCode> {
    let trigger = match args.trigger.as_deref().map(|t| (t, Trigger::parse(t))) {
        Some((t, None)) => {
            let names: Vec<&str> = Trigger::ALL.iter().map(|t| t.as_str()).collect();
            bail!("unknown --trigger {t:?}: use one of {}", names.join(", "));
        }
        Some((_, known)) => known,
        None => None,
    };
    let filter = super::filter(&args.window, trigger)?;
    let store = Store::open_read_only(&super::db_path(&args.db))?;
    let rows = store.checkpoints(&filter)?;
    let mut out = std::io::stdout().lock();
    match args.format {
        OutputFormat::Json => output::json(&mut out, &rows)?,
        OutputFormat::Csv => output::csv(&mut out, &HEADER, &rows.iter().map(cells).collect::<Vec<_>>())?,
        OutputFormat::Table => {
            let header = [
                "cluster",
                "kind",
                "trigger",
                "started_at",
                "completed_at",
                "buffers",
                "write_s",
                "sync_s",
                "total_s",
                "distance_kb",
                "estimate_kb",
            ];
            let table: Vec<Vec<String>> = rows.iter().map(table_cells).collect();
            output::table(&mut out, &header, &table, &header[5..])?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn time(t: &Option<jiff::Timestamp>) -> String {
    t.map(rfc3339).unwrap_or_default()
}

fn cells(r: &CheckpointRow) -> Vec<String> {
    vec![
        r.cluster.clone(),
        r.kind.to_string(),
        cell(&r.trigger),
        r.flags.join(" "),
        time(&r.started_at),
        time(&r.completed_at),
        cell(&r.buffers_written),
        cell(&r.buffers_pct),
        cell(&r.slru_buffers_written),
        cell(&r.wal_files_added),
        cell(&r.wal_files_removed),
        cell(&r.wal_files_recycled),
        cell(&r.write_s),
        cell(&r.sync_s),
        cell(&r.total_s),
        cell(&r.sync_files),
        cell(&r.sync_longest_s),
        cell(&r.sync_average_s),
        cell(&r.distance_kb),
        cell(&r.estimate_kb),
        cell(&r.lsn),
        cell(&r.redo_lsn),
    ]
}

fn table_cells(r: &CheckpointRow) -> Vec<String> {
    vec![
        r.cluster.clone(),
        r.kind.to_string(),
        r.trigger.map_or_else(|| "?".into(), |t| t.to_string()),
        time(&r.started_at),
        time(&r.completed_at),
        cell(&r.buffers_written),
        cell(&r.write_s),
        cell(&r.sync_s),
        cell(&r.total_s),
        cell(&r.distance_kb),
        cell(&r.estimate_kb),
    ]
}
