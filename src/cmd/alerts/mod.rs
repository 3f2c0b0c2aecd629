//! `walwatch alerts`: list, ack, silence, silences, unsilence, test-mail.

mod silences;

use std::process::ExitCode;

use anyhow::{bail, Result};
use jiff::{SignedDuration, Timestamp};

use crate::alert::rules;
use crate::cli::{AlertsArgs, AlertsCommand, AlertsListArgs, ConfigDbArgs, OutputFormat};
use crate::output::{self, cell};
use crate::store::alerts::AlertRow;
use crate::store::silences::SilenceOutcome;
use crate::store::Store;
use crate::timefmt::{rfc3339, table_time};

// resolution last: added after the others, so CSV readers by position keep working.
const HEADER: [&str; 11] = [
    "id",
    "cluster",
    "rule",
    "severity",
    "state",
    "fired_at",
    "notified_at",
    "resolved_at",
    "acked",
    "summary",
    "resolution",
];

pub(crate) fn run(args: AlertsArgs) -> Result<ExitCode> {
    match args.command {
        None => list(args.list),
        Some(AlertsCommand::Ack { common, id }) => {
            let path = super::config_and_db(&common)?.db;
            let mut store = Store::open_existing(&path)?;
            match store.alerts_mut().ack(id, Timestamp::now())? {
                None => bail!("no alert with id {id} (see `walwatch alerts --all`)"),
                Some(false) => say(format_args!("alert {id} was already acknowledged")),
                Some(true) => say(format_args!("alert {id} acknowledged: no more reminders for it")),
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(AlertsCommand::Silence { common, rule, cluster, duration }) => {
            if !rules::ids().any(|id| id == rule) {
                bail!("unknown rule {rule:?}: the rules are {}", rules::ids().collect::<Vec<_>>().join(", "));
            }
            let length = crate::timefmt::parse_duration(&duration).map_err(|e| anyhow::anyhow!("--for: {e}"))?;
            let length = SignedDuration::try_from(length)?;
            let path = super::config_and_db(&common)?.db;
            let mut store = Store::open_existing(&path)?;
            let now = Timestamp::now();
            let until = now.checked_add(length)?;
            match store.silences_mut().start(&rule, cluster.as_deref(), until, now)? {
                SilenceOutcome::UnknownCluster => {
                    let known = store.clusters().names()?;
                    let c = cluster.unwrap_or_default();
                    bail!("no cluster {c:?} in {} (known: {})", path.display(), known.join(", "))
                }
                SilenceOutcome::Silenced { .. } => {
                    let scope = cluster.map_or("all clusters".to_string(), |c| format!("cluster {c}"));
                    say(format_args!("{rule} silenced on {scope} until {}", rfc3339(until)));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(AlertsCommand::Silences { common, all, format }) => silences::list(&common, all, format),
        Some(AlertsCommand::Unsilence { common, id }) => silences::unsilence(&common, id),
        Some(AlertsCommand::TestMail { common }) => test_mail(&common),
    }
}

/// What an ack or a silence did, on stdout unless `-q`.
fn say(text: std::fmt::Arguments) {
    if !super::quiet() {
        // A rule or cluster name from the config or the store.
        let _ = crate::output::line(&mut std::io::stdout().lock(), text.to_string());
    }
}

/// Queues a test notice and sends it at once; the outcome per channel on stdout.
fn test_mail(common: &ConfigDbArgs) -> Result<ExitCode> {
    let super::Loaded { config, db: path, .. } = super::config_and_db(common)?;
    let mut store = Store::open_existing(&path)?;
    let outcome = crate::alert::test_mail(&mut store, &config, Timestamp::now())?;
    crate::output::lines(&mut std::io::stdout().lock(), &outcome.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn list(args: AlertsListArgs) -> Result<ExitCode> {
    let path = super::config_and_db(&args.common)?.db;
    let store = Store::open_read_only(&path)?;
    super::clusters(&store, args.cluster.as_deref())?;
    let rows = store.alerts().list(args.cluster.as_deref(), args.all)?;
    let mut out = std::io::stdout().lock();
    match args.format {
        OutputFormat::Json => output::json(&mut out, &rows)?,
        OutputFormat::Csv => {
            output::csv(&mut out, &HEADER, &rows.iter().map(|a| cells(a, rfc3339)).collect::<Vec<_>>())?
        }
        OutputFormat::Table => {
            let rows: Vec<Vec<String>> = rows.iter().map(|a| cells(a, table_time)).collect();
            output::table(&mut out, &HEADER, &rows, &["id"])?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A row's cells, times written by `at` (RFC 3339 UTC in CSV, local in a table).
fn cells(a: &AlertRow, at: fn(Timestamp) -> String) -> Vec<String> {
    let time = |t: &Option<Timestamp>| cell(&t.map(at));
    vec![
        a.id.to_string(),
        a.cluster.clone(),
        a.rule.clone(),
        a.severity.as_str().to_string(),
        a.state.to_string(),
        at(a.fired_at),
        time(&a.notified_at),
        time(&a.resolved_at),
        if a.acked { "yes" } else { "no" }.to_string(),
        a.summary.clone(),
        cell(&a.resolution.map(|r| r.as_str())),
    ]
}
