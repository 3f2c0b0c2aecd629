//! `walwatch alerts silences` and `walwatch alerts unsilence ID`.

use std::process::ExitCode;

use anyhow::{bail, Result};
use jiff::Timestamp;

use crate::cli::{ConfigDbArgs, OutputFormat};
use crate::output;
use crate::store::silences::{SilenceRow, UnsilenceOutcome};
use crate::store::Store;
use crate::timefmt::{rfc3339, table_time};

const HEADER: [&str; 6] = ["id", "rule", "cluster", "from", "until", "active"];

/// Lists the running silences (all with `all`), newest first.
pub(crate) fn list(common: &ConfigDbArgs, all: bool, format: OutputFormat) -> Result<ExitCode> {
    let path = crate::cmd::config_and_db(common)?.db;
    let store = Store::open_read_only(&path)?;
    let rows = store.silences().list(all, Timestamp::now())?;
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Json => output::json(&mut out, &rows)?,
        OutputFormat::Csv => {
            output::csv(&mut out, &HEADER, &rows.iter().map(|s| cells(s, rfc3339)).collect::<Vec<_>>())?
        }
        OutputFormat::Table if rows.is_empty() && !crate::cmd::quiet() => {
            let which = if all { "no silences" } else { "no silence running (--all: ended ones too)" };
            println!("{which}");
        }
        OutputFormat::Table => {
            output::table(&mut out, &HEADER, &rows.iter().map(|s| cells(s, table_time)).collect::<Vec<_>>(), &["id"])?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Ends silence `id` now; an unknown or ended one is an error (exit 1).
pub(crate) fn unsilence(common: &ConfigDbArgs, id: i64) -> Result<ExitCode> {
    let path = crate::cmd::config_and_db(common)?.db;
    let mut store = Store::open_existing(&path)?;
    match store.silences_mut().end(id, Timestamp::now())? {
        UnsilenceOutcome::Unknown => bail!("no silence with id {id} (see `walwatch alerts silences --all`)"),
        UnsilenceOutcome::AlreadyEnded(at) => bail!("silence {id} already ended at {}", rfc3339(at)),
        UnsilenceOutcome::Ended => super::say(format_args!("silence {id} ended: its rule notifies again")),
    }
    Ok(ExitCode::SUCCESS)
}

/// A row's cells, times written by `at` (RFC 3339 UTC in CSV, local in a table).
fn cells(s: &SilenceRow, at: fn(Timestamp) -> String) -> Vec<String> {
    vec![
        s.id.to_string(),
        s.rule.clone(),
        s.cluster.clone().unwrap_or_else(|| "(all)".to_string()),
        at(s.from),
        at(s.until),
        if s.active { "yes" } else { "no" }.to_string(),
    ]
}
