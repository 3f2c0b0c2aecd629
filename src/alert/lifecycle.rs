//! The alert lifecycle: rule findings become alerts (firing -> notified ->
//! resolved), with one notification per firing.
//!
//! [`apply`] takes everything the rules found for one cluster at one
//! evaluation and, in one transaction with the notices it queues:
//! * a finding with no open alert of its (rule, key) opens one in state
//!   'firing' and queues its firing notice, unless the rule is silenced for
//!   the cluster: then the alert is recorded and its firing notice waits for
//!   the silence to end (if the alert is still open then);
//! * a finding with an open alert refreshes it (summary, details, evidence),
//!   queues the held-back firing notice once no silence applies, and queues a
//!   reminder when `[alerts] reminder_interval` has passed since the last
//!   notice and the alert is not acknowledged;
//! * an open alert with no finding any more is resolved, with a resolved
//!   notice if its firing notice went out (and no silence applies).
//!
//! 'firing' -> 'notified' is the sender's move, once the server accepted the
//! firing notice. The unique index on open alerts per (cluster, rule, key)
//! makes a second evaluation find the open alert instead of firing again,
//! across restarts too; Message-IDs are stable per (alert, notice, sequence).

use std::collections::HashSet;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use thiserror::Error;

use crate::alert::{Notice, NoticeKind, Severity};
use crate::analyze::rules::{self, Finding};
use crate::config::Config;
use crate::store::alerts::{AlertContent, AlertRow, AlertTx};
use crate::store::{Store, StoreError};

#[derive(Debug, Error)]
pub enum LifecycleError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot queue a notification in the outbox: {0}")]
    Outbox(rusqlite::Error),
    #[error("the alert pass was stopped")]
    Stopped,
}

/// One alert that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub alert_id: i64,
    pub rule: String,
    pub key: String,
    pub severity: Severity,
    pub summary: String,
}

/// What one [`apply`] did for a cluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Changes {
    pub cluster: String,
    /// Opened now, or opened during a silence that has ended: firing notice queued.
    pub fired: Vec<Change>,
    /// Opened (or still open) while the rule is silenced: no notice.
    pub silenced: Vec<Change>,
    /// Still open, refreshed, nothing queued.
    pub still_open: Vec<Change>,
    /// Still open, reminder queued.
    pub reminded: Vec<Change>,
    pub resolved: Vec<Change>,
    /// Every notice queued, in order (rendered only when [mail] or [webhook] is configured).
    pub notices: Vec<Notice>,
}

/// One cluster's evaluation: what the rules found and what changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    pub cluster: String,
    pub findings: Vec<Finding>,
    pub changes: Changes,
}

/// Every cluster's evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub evaluated_at: Timestamp,
    pub clusters: Vec<ClusterReport>,
}

/// Runs every enabled rule for every cluster in the store and applies the
/// findings. The daemon calls this periodically and after commits that
/// stored checkpoint events; `walwatch analyze` once.
pub fn evaluate_all(store: &mut Store, config: &Config, now: Timestamp) -> Result<Report, LifecycleError> {
    let clusters = store.clusters()?;
    evaluate_clusters(store, config, &clusters, now)
}

/// [`evaluate_all`] that gives up between clusters once `stop` is raised
/// (the daemon's stop; a statement running then is cancelled by the caller).
pub fn evaluate_all_until(
    store: &mut Store,
    config: &Config,
    now: Timestamp,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Report, LifecycleError> {
    let mut reports = Vec::new();
    for cluster in store.clusters()? {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(LifecycleError::Stopped);
        }
        reports.push(evaluate_cluster(store, config, &cluster, now)?);
    }
    Ok(Report { evaluated_at: now, clusters: reports })
}

/// [`evaluate_all`] for the named clusters only.
pub fn evaluate_clusters(
    store: &mut Store,
    config: &Config,
    clusters: &[String],
    now: Timestamp,
) -> Result<Report, LifecycleError> {
    let mut reports = Vec::with_capacity(clusters.len());
    for cluster in clusters {
        reports.push(evaluate_cluster(store, config, cluster, now)?);
    }
    Ok(Report { evaluated_at: now, clusters: reports })
}

/// The rules for one cluster, with its settings and max_wal_size suggestion, then [`apply`].
pub fn evaluate_cluster(
    store: &mut Store,
    config: &Config,
    cluster: &str,
    now: Timestamp,
) -> Result<ClusterReport, LifecycleError> {
    let settings = crate::settings::current(store, cluster)?;
    let alerts = &config.alerts;
    // Sizing reads the whole lookback window: only when a rule will carry its advice.
    let suggestion = if alerts.forced_checkpoints.enabled || alerts.wal_files_added.enabled {
        Some(crate::analyze::sizing::suggest(
            store,
            cluster,
            &settings,
            &config.advice,
            config.alerts.clock_skew.tolerance,
            now,
        )?)
    } else {
        None
    };
    let findings = rules::evaluate(store, cluster, alerts, &settings, suggestion.as_ref(), now)?;
    let changes = apply(store, config, cluster, findings.clone(), now)?;
    Ok(ClusterReport { cluster: cluster.to_string(), findings, changes })
}

/// Applies one evaluation's findings for `cluster` (see the module documentation).
pub fn apply(
    store: &mut Store,
    config: &Config,
    cluster: &str,
    findings: Vec<Finding>,
    now: Timestamp,
) -> Result<Changes, LifecycleError> {
    let tx = store.alert_tx(cluster)?;
    let open = tx.open_alerts()?;
    let mut changes = Changes { cluster: cluster.to_string(), ..Changes::default() };
    let mut found = HashSet::new();
    for finding in &findings {
        if !found.insert((finding.rule.to_string(), finding.key.clone())) {
            continue; // a rule reports a key once; a repeat would only overwrite
        }
        let existing = open.iter().find(|a| a.rule == finding.rule && a.key == finding.key);
        match existing {
            None => open_alert(&tx, config, finding, now, &mut changes)?,
            Some(alert) => keep_alert(&tx, config, alert, finding, now, &mut changes)?,
        }
    }
    for alert in open.iter().filter(|a| !found.contains(&(a.rule.clone(), a.key.clone()))) {
        tx.resolve(alert.id, now)?;
        if alert.queued_at.is_some() && tx.silenced_until(&alert.rule, now)?.is_none() {
            let notice = stored_notice(&tx, alert, NoticeKind::Resolved, 0);
            queue(&tx, config, notice, &mut changes)?;
        }
        changes.resolved.push(change_of(alert));
    }
    tx.commit()?;
    Ok(changes)
}

fn open_alert(
    tx: &AlertTx<'_>,
    config: &Config,
    finding: &Finding,
    now: Timestamp,
    changes: &mut Changes,
) -> Result<(), LifecycleError> {
    let silenced = tx.silenced_until(finding.rule, now)?.is_some();
    let id = tx.insert(&content(finding), now, !silenced)?;
    let change = change(id, finding);
    if silenced {
        changes.silenced.push(change);
    } else {
        queue(tx, config, notice(tx, id, finding, NoticeKind::Firing, now, 0), changes)?;
        changes.fired.push(change);
    }
    Ok(())
}

fn keep_alert(
    tx: &AlertTx<'_>,
    config: &Config,
    alert: &AlertRow,
    finding: &Finding,
    now: Timestamp,
    changes: &mut Changes,
) -> Result<(), LifecycleError> {
    tx.refresh(alert.id, &content(finding), now)?;
    let change = change(alert.id, finding);
    if tx.silenced_until(finding.rule, now)?.is_some() {
        changes.silenced.push(change);
    } else if alert.queued_at.is_none() {
        // Fired during a silence that has ended: the held-back firing notice.
        tx.mark_queued(alert.id, now)?;
        queue(tx, config, notice(tx, alert.id, finding, NoticeKind::Firing, alert.fired_at, 0), changes)?;
        changes.fired.push(change);
    } else if let Some(n) = reminder_due(alert, config, now) {
        tx.mark_reminded(alert.id, n, now)?;
        queue(tx, config, notice(tx, alert.id, finding, NoticeKind::Reminder, alert.fired_at, n), changes)?;
        changes.reminded.push(change);
    } else {
        changes.still_open.push(change);
    }
    Ok(())
}

/// The sequence number of the reminder due now, if one is.
fn reminder_due(alert: &AlertRow, config: &Config, now: Timestamp) -> Option<u32> {
    let interval = SignedDuration::try_from(config.alerts.reminder_interval?).ok()?;
    if alert.acked_at.is_some() {
        return None;
    }
    let last = alert.reminded_at.or(alert.notified_at).or(alert.queued_at)?;
    (now >= last.checked_add(interval).ok()?).then_some(alert.reminders + 1)
}

/// Records `notice` and, when a transport is configured, renders and queues
/// it in the same transaction as the alert change.
fn queue(tx: &AlertTx<'_>, config: &Config, notice: Notice, changes: &mut Changes) -> Result<(), LifecycleError> {
    // render() returns nothing without a transport; skipping it then also
    // keeps the store usable before any delivery is configured.
    if config.mail.is_some() || config.webhook.is_some() {
        let messages = crate::alert::deliver::render(&notice, config);
        crate::store::outbox::insert(tx.transaction(), &messages).map_err(LifecycleError::Outbox)?;
    }
    changes.notices.push(notice);
    Ok(())
}

fn content(finding: &Finding) -> AlertContent<'_> {
    AlertContent {
        rule: finding.rule,
        key: &finding.key,
        severity: finding.severity,
        summary: &finding.summary,
        details: &finding.details,
        figures: &finding.figures,
        suggestion: finding.suggestion.as_ref(),
        evidence_at: finding.evidence_at,
    }
}

fn notice(tx: &AlertTx<'_>, id: i64, f: &Finding, kind: NoticeKind, fired_at: Timestamp, sequence: u32) -> Notice {
    Notice {
        alert_id: Some(id),
        kind,
        severity: f.severity,
        cluster: tx.cluster().to_string(),
        rule: f.rule.to_string(),
        summary: f.summary.clone(),
        details: f.details.clone(),
        suggestion: f.suggestion.clone(),
        fired_at,
        sequence,
    }
}

/// A notice from the alert as stored (resolved: the rule has nothing to say now).
fn stored_notice(tx: &AlertTx<'_>, a: &AlertRow, kind: NoticeKind, sequence: u32) -> Notice {
    Notice {
        alert_id: Some(a.id),
        kind,
        severity: a.severity,
        cluster: tx.cluster().to_string(),
        rule: a.rule.clone(),
        summary: a.summary.clone(),
        details: a.details.clone(),
        suggestion: None,
        fired_at: a.fired_at,
        sequence,
    }
}

fn change(alert_id: i64, f: &Finding) -> Change {
    Change { alert_id, rule: f.rule.to_string(), key: f.key.clone(), severity: f.severity, summary: f.summary.clone() }
}

fn change_of(a: &AlertRow) -> Change {
    Change {
        alert_id: a.id,
        rule: a.rule.clone(),
        key: a.key.clone(),
        severity: a.severity,
        summary: a.summary.clone(),
    }
}

#[cfg(test)]
mod tests;
