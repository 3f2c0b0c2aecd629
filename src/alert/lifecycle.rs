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
//! * an open alert with no finding any more is resolved ('cleared'), with a
//!   resolved notice if its firing notice was queued (and no silence applies);
//! * an open alert of a rule that is not enabled any more is closed
//!   ('rule_disabled') without a notice: the rule stopped looking, the
//!   problem was not seen going away.
//!
//! A firing notice counts as queued (queued_at) only once it is in the
//! outbox: with neither `[mail]` nor `[webhook]` configured, an alert is
//! recorded and its firing notice waits, like during a silence, until a
//! transport is configured; an alert that closes before then is never
//! mailed at all (no resolved mail for a firing mail nobody got).
//!
//! 'firing' -> 'notified' is the sender's move, once the server accepted the
//! firing notice. The unique index on open alerts per (cluster, rule, key)
//! makes a second evaluation find the open alert instead of firing again,
//! across restarts too; Message-IDs are stable per (alert, notice, sequence).

use std::collections::HashSet;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::alert::rules::Finding;
use crate::alert::Notice;
use crate::config::Config;
use crate::model::alert::{NoticeKind, Resolution, Severity};
use crate::store::alerts::{AlertContent, AlertRow, AlertTx};
use crate::store::{Store, StoreError};

/// One alert that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertChange {
    pub(crate) alert_id: i64,
    pub rule: String,
    pub(crate) key: String,
    pub(crate) severity: Severity,
    pub(crate) summary: String,
}

/// What one [`apply`] did for a cluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Changes {
    pub(crate) cluster: String,
    /// Opened now, or held back by a silence that ended or by the lack of a
    /// transport: firing notice queued (only recorded while no transport exists).
    pub fired: Vec<AlertChange>,
    /// Opened (or still open) while the rule is silenced: no notice.
    pub(crate) silenced: Vec<AlertChange>,
    /// Still open, refreshed, nothing queued.
    pub still_open: Vec<AlertChange>,
    /// Still open, reminder queued.
    pub(crate) reminded: Vec<AlertChange>,
    pub resolved: Vec<AlertChange>,
    /// Closed because their rule is not enabled any more: no notice.
    pub rule_disabled: Vec<AlertChange>,
    /// Every notice queued, in order (rendered only when `[mail]` or `[webhook]` is configured).
    pub(crate) notices: Vec<Notice>,
}

/// Applies one evaluation's findings for `cluster` (see the module
/// documentation); `enabled` names the rules that ran.
pub fn apply(
    store: &mut Store,
    config: &Config,
    enabled: &[&str],
    cluster: &str,
    findings: Vec<Finding>,
    now: Timestamp,
) -> Result<Changes, StoreError> {
    let tx = store.alerts_mut().begin(cluster)?;
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
        if enabled.contains(&alert.rule.as_str()) {
            resolve_alert(&tx, config, alert, now, &mut changes)?;
        } else {
            tx.resolve(alert.id, Resolution::RuleDisabled, now)?;
            changes.rule_disabled.push(change_of(alert));
        }
    }
    tx.commit()?;
    Ok(changes)
}

/// The rule ran and found nothing: resolved, with a resolved notice only
/// when the firing one is in the outbox (otherwise nobody was told it fired).
fn resolve_alert(
    tx: &AlertTx<'_>,
    config: &Config,
    alert: &AlertRow,
    now: Timestamp,
    changes: &mut Changes,
) -> Result<(), StoreError> {
    tx.resolve(alert.id, Resolution::Cleared, now)?;
    if alert.queued_at.is_some() && tx.silenced_until(&alert.rule, now)?.is_none() {
        let notice = stored_notice(tx, alert, NoticeKind::Resolved, 0);
        queue(tx, config, notice, changes)?;
    }
    changes.resolved.push(change_of(alert));
    Ok(())
}

/// Whether notices can be queued: `[mail]` or `[webhook]` is configured.
fn has_transport(config: &Config) -> bool {
    config.mail.is_some() || config.webhook.is_some()
}

fn open_alert(
    tx: &AlertTx<'_>,
    config: &Config,
    finding: &Finding,
    now: Timestamp,
    changes: &mut Changes,
) -> Result<(), StoreError> {
    let silenced = tx.silenced_until(finding.rule, now)?.is_some();
    let id = tx.insert(&content(finding), now, !silenced && has_transport(config))?;
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
) -> Result<(), StoreError> {
    tx.refresh(alert.id, &content(finding), now)?;
    let change = change(alert.id, finding);
    if tx.silenced_until(finding.rule, now)?.is_some() {
        changes.silenced.push(change);
    } else if alert.queued_at.is_none() && !has_transport(config) {
        // Still nowhere to send the firing notice: it keeps waiting.
        changes.still_open.push(change);
    } else if alert.queued_at.is_none() {
        // Fired during a silence that has ended, or before a transport was
        // configured: the held-back firing notice.
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
fn queue(tx: &AlertTx<'_>, config: &Config, notice: Notice, changes: &mut Changes) -> Result<(), StoreError> {
    // render() returns nothing without a transport; skipping it then also
    // keeps the store usable before any delivery is configured.
    if has_transport(config) {
        let messages = crate::alert::render::render(&notice, config);
        tx.queue(&messages)?;
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

fn change(alert_id: i64, f: &Finding) -> AlertChange {
    AlertChange {
        alert_id,
        rule: f.rule.to_string(),
        key: f.key.clone(),
        severity: f.severity,
        summary: f.summary.clone(),
    }
}

fn change_of(a: &AlertRow) -> AlertChange {
    AlertChange {
        alert_id: a.id,
        rule: a.rule.clone(),
        key: a.key.clone(),
        severity: a.severity,
        summary: a.summary.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
