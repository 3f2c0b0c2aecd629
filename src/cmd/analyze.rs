//! `walwatch analyze`: the alert rules, once, on the stored history (e.g.
//! after an `import`), then one delivery pass unless --no-send.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use jiff::Timestamp;

use crate::alert::lifecycle::{self, Change, Report};
use crate::cli::{AnalyzeArgs, ConfigDbArgs, SummaryFormat};
use crate::config::{self, Config};
use crate::output;
use crate::store::{Store, StoreError};

pub fn run(args: AnalyzeArgs) -> Result<ExitCode> {
    let (config, path) = config_and_store(&args.common)?;
    let mut store = open_existing(&path)?;
    let now = Timestamp::now();
    let clusters = clusters(&store, args.cluster.as_deref())?;
    // What [cluster.settings] and the server's conf files say now, so the rules see it.
    for cluster in config.clusters.iter().filter(|c| clusters.contains(&c.name)) {
        crate::settings::refresh(&mut store, cluster, now)?;
    }
    let report = lifecycle::evaluate_clusters(&mut store, &config, &clusters, now)?;
    if !args.no_send {
        send(&mut store, &config, now)?;
    }
    let mut out = std::io::stdout().lock();
    match args.format {
        SummaryFormat::Json => output::json(&mut out, &report)?,
        SummaryFormat::Table => table(&mut out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// One delivery pass over the outbox.
fn send(_store: &mut Store, _config: &Config, _now: Timestamp) -> Result<()> {
    // DELIVERY CALL SITE: crate::alert::deliver::flush(&mut store, &config, now)
    // lands with the delivery helper; until then the queued notices wait in
    // the outbox for the daemon's sender.
    Ok(())
}

/// The configuration (--config, or the default file if present) and the
/// store: --db, else the config file's [store] path, else the default.
pub(super) fn config_and_store(common: &ConfigDbArgs) -> Result<(Config, PathBuf)> {
    let (config, source) = config::load_or_default(common.config.as_deref())?;
    let path = match (&common.db.db, source) {
        (Some(db), _) => db.clone(),
        (None, config::Source::File(_)) => config.store.path.clone(),
        (None, config::Source::Defaults(_)) => crate::store::default_path(),
    };
    Ok((config, path))
}

/// Opens an existing store for writing; never creates an empty one for a mistyped path.
pub(super) fn open_existing(path: &std::path::Path) -> Result<Store> {
    if !path.exists() {
        return Err(StoreError::Missing { path: path.into() }.into());
    }
    Ok(Store::open(path)?)
}

fn clusters(store: &Store, only: Option<&str>) -> Result<Vec<String>> {
    let all = store.clusters()?;
    match only {
        None => Ok(all),
        Some(name) if all.iter().any(|c| c == name) => Ok(vec![name.to_string()]),
        Some(name) if all.is_empty() => bail!("unknown cluster {name:?}: the store has no cluster yet"),
        Some(name) => bail!("unknown cluster {name:?}: the store has {}", all.join(", ")),
    }
}

fn table(out: &mut impl Write, report: &Report) -> Result<()> {
    let mut rows = Vec::new();
    for c in &report.clusters {
        let changes = &c.changes;
        let groups: [(&str, &Vec<Change>); 5] = [
            ("fired", &changes.fired),
            ("reminded", &changes.reminded),
            ("resolved", &changes.resolved),
            ("silenced", &changes.silenced),
            ("open", &changes.still_open),
        ];
        for (what, list) in groups {
            for ch in list {
                rows.push(vec![
                    c.cluster.clone(),
                    what.to_string(),
                    ch.alert_id.to_string(),
                    ch.rule.clone(),
                    ch.severity.as_str().to_string(),
                    ch.summary.clone(),
                ]);
            }
        }
    }
    if rows.is_empty() {
        writeln!(out, "{} clusters evaluated: no alerts", report.clusters.len())?;
        return Ok(());
    }
    output::table(out, &["cluster", "change", "id", "rule", "severity", "summary"], &rows, &["id"])?;
    Ok(())
}
