//! One evaluation: for each cluster, its settings and max_wal_size
//! suggestion, the alert rules ([`crate::alert::rules`]) on the stored
//! history, and their findings applied to the alerts
//! ([`crate::alert::lifecycle`]), which queues the notices. It ties the
//! rules to the lifecycle, so it sits beside both; the daemon runs it as
//! events land and every minute, `walwatch analyze` once.

use jiff::Timestamp;
use serde::Serialize;
use thiserror::Error;

use crate::alert::lifecycle::{self, Changes};
use crate::alert::rules::{Finding, RuleSet};
use crate::analyze::sizing;
use crate::config::Config;
use crate::store::{Store, StoreError};

#[derive(Debug, Error)]
pub enum EvaluateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the alert pass was stopped")]
    Stopped,
}

/// One cluster's evaluation: what the rules found and what changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterEvaluation {
    pub(crate) cluster: String,
    pub findings: Vec<Finding>,
    pub changes: Changes,
}

/// Every cluster's evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) evaluated_at: Timestamp,
    pub clusters: Vec<ClusterEvaluation>,
}

/// Runs every enabled rule for every cluster in the store and applies the
/// findings. The daemon calls this periodically and after commits that
/// stored checkpoint events; `walwatch analyze` once.
pub fn all(store: &mut Store, config: &Config, rules: &RuleSet, now: Timestamp) -> Result<Evaluation, EvaluateError> {
    let names = store.clusters().names()?;
    clusters(store, config, rules, &names, now)
}

/// [`all`] that gives up between clusters once `stop` is raised
/// (the daemon's stop; a statement running then is cancelled by the caller).
pub(crate) fn all_until(
    store: &mut Store,
    config: &Config,
    rules: &RuleSet,
    now: Timestamp,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Evaluation, EvaluateError> {
    let mut reports = Vec::new();
    for name in store.clusters().names()? {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(EvaluateError::Stopped);
        }
        reports.push(cluster(store, config, rules, &name, now)?);
    }
    Ok(Evaluation { evaluated_at: now, clusters: reports })
}

/// [`all`] for the named clusters only.
pub(crate) fn clusters(
    store: &mut Store,
    config: &Config,
    rules: &RuleSet,
    names: &[String],
    now: Timestamp,
) -> Result<Evaluation, EvaluateError> {
    let mut reports = Vec::with_capacity(names.len());
    for name in names {
        reports.push(cluster(store, config, rules, name, now)?);
    }
    Ok(Evaluation { evaluated_at: now, clusters: reports })
}

/// The rules for one cluster, with its settings and max_wal_size suggestion, then [`lifecycle::apply`].
pub(crate) fn cluster(
    store: &mut Store,
    config: &Config,
    rules: &RuleSet,
    cluster: &str,
    now: Timestamp,
) -> Result<ClusterEvaluation, EvaluateError> {
    let settings = crate::settings::current(store, cluster)?;
    // Sizing reads the whole lookback window: only when a rule will carry its advice.
    let suggestion = if rules.uses_suggestion() {
        let tolerance = rules.clock_skew_tolerance();
        Some(sizing::suggest(store, cluster, &settings, config.advice_for(cluster), tolerance, now)?)
    } else {
        None
    };
    let findings = rules.evaluate(store, cluster, &settings, suggestion.as_ref(), now)?;
    let changes = lifecycle::apply(store, config, &rules.enabled(), cluster, findings.clone(), now)?;
    Ok(ClusterEvaluation { cluster: cluster.to_string(), findings, changes })
}

#[cfg(test)]
mod tests;
