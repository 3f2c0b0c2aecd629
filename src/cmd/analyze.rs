//! `walwatch analyze`: the alert rules, once, on the stored history (e.g.
//! after an `import`), then one delivery pass unless --no-send.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use jiff::Timestamp;

use crate::alert::evaluate::{self, Evaluation};
use crate::alert::lifecycle::AlertChange;
use crate::cli::{AnalyzeArgs, ReportFormat};
use crate::config::Config;
use crate::output;
use crate::store::Store;

pub(crate) fn run(args: AnalyzeArgs) -> Result<ExitCode> {
    let super::Loaded { config, rules, db: path } = super::config_and_db(&args.common)?;
    let mut store = Store::open_existing(&path)?;
    let now = Timestamp::now();
    let clusters = super::clusters(&store, args.cluster.as_deref())?;
    // What [cluster.settings] and the server's conf files say now, so the rules see it.
    for cluster in config.clusters.iter().filter(|c| clusters.contains(&c.name)) {
        crate::settings::refresh(&mut store, &crate::settings::Sources::of(cluster), now)?;
    }
    let report = evaluate::clusters(&mut store, &config, &rules, &clusters, now)?;
    if !args.no_send {
        // Messages are queued at their render time, just after `now`.
        send(&mut store, &config, Timestamp::now())?;
    }
    let mut out = std::io::stdout().lock();
    match args.format {
        ReportFormat::Json => output::json(&mut out, &report)?,
        ReportFormat::Table => table(&mut out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// One delivery pass over the outbox.
fn send(store: &mut Store, config: &Config, now: Timestamp) -> Result<()> {
    let report = crate::outbox::flush(store, config, now)?;
    if report.failed() > 0 {
        // Not an error: the outbox keeps them and the daemon's sender retries.
        super::note(format_args!(
            "walwatch: {} notifications not delivered yet; they stay queued and are retried",
            report.failed()
        ));
    }
    Ok(())
}

fn table(out: &mut impl Write, report: &Evaluation) -> Result<()> {
    let mut rows = Vec::new();
    for c in &report.clusters {
        let changes = &c.changes;
        let groups: [(&str, &Vec<AlertChange>); 6] = [
            ("fired", &changes.fired),
            ("reminded", &changes.reminded),
            ("resolved", &changes.resolved),
            ("rule_disabled", &changes.rule_disabled),
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
