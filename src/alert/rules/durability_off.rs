//! `durability_off`: settings that trade crash safety for speed. fsync or
//! full_page_writes off can corrupt the cluster on a crash (critical);
//! synchronous_commit off loses at most the last moments of commits but
//! never corrupts (informational). One alert per setting (key = its name).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Evidence, Finding, Rule};
use crate::model::alert::Severity;
use crate::settings::{Settings, ValueSource};
use crate::store::StoreError;

/// `[alerts.durability_off]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct DurabilityOff {
    pub(crate) enabled: bool,
    /// Also report synchronous_commit = off (an informational alert).
    pub(crate) synchronous_commit: bool,
}

impl Default for DurabilityOff {
    fn default() -> Self {
        DurabilityOff { enabled: true, synchronous_commit: true }
    }
}

impl Rule for DurabilityOff {
    const ID: &'static str = "durability_off";
    const DOC: &'static str = r#"fsync or full_page_writes off: critical (a crash can corrupt the cluster).
synchronous_commit off: informational (a crash loses the last commits, no
corruption); false leaves synchronous_commit out."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        Ok(check(evidence.settings, self))
    }
}

pub(crate) fn check(settings: &Settings, rule: &DurabilityOff) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(off(
        settings,
        "fsync",
        Severity::Critical,
        "PostgreSQL does not wait for the disk: after an operating-system crash or power loss the cluster can be corrupted beyond repair, not just lose recent commits. Only acceptable for a throw-away instance (e.g. a bulk load that is redone from scratch on failure).",
    ));
    out.extend(off(
        settings,
        "full_page_writes",
        Severity::Critical,
        "A crash during a checkpoint can leave torn pages (half old, half new) that WAL replay cannot repair, unless the storage guarantees atomic writes of PostgreSQL's page size (e.g. ZFS).",
    ));
    if rule.synchronous_commit {
        out.extend(off(
            settings,
            "synchronous_commit",
            Severity::Info,
            "A crash can lose the commits of the last moments (up to three times wal_writer_delay), though they were reported as committed; the data stays consistent. This is a legitimate trade-off for data that can be lost; set it per transaction or per role rather than server-wide when only part of the workload qualifies.",
        ));
    }
    out
}

fn off(settings: &Settings, name: &'static str, severity: Severity, why: &str) -> Option<Finding> {
    if settings.flag(name)? {
        return None;
    }
    let value = settings.values.get(name)?;
    let (origin, evidence_at) = match &value.source {
        ValueSource::Config => ("walwatch's [cluster.settings]".to_string(), None),
        ValueSource::ConfFile { path, line } => (format!("{path}:{line}"), None),
        ValueSource::Log { at } => (format!("the server log at {}", crate::timefmt::rfc3339(*at)), Some(*at)),
        // Only checkpoint_timeout and max_wal_size are ever inferred, never a flag.
        ValueSource::Inferred { how, .. } => (format!("the log: {how}"), None),
        ValueSource::Default { .. } => ("the default".to_string(), None),
    };
    Some(Finding {
        rule: DurabilityOff::ID,
        key: name.to_string(),
        severity,
        summary: format!("{name} is off"),
        details: vec![
            format!("{name} = {} (from {origin}).", value.value),
            why.to_string(),
            format!("To turn it on: ALTER SYSTEM SET {name} = on; SELECT pg_reload_conf();"),
        ],
        figures: json!({ "setting": name, "value": value.value, "source": value.source }),
        suggestion: None,
        evidence_at,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{at, settings};
    use super::*;

    #[test]
    fn each_setting_off_is_its_own_alert() {
        let rule = DurabilityOff::default();
        let s = settings(15, &[("fsync", "off"), ("full_page_writes", "false"), ("synchronous_commit", "off")]);
        let found = check(&s, &rule);
        let keys: Vec<(&str, Severity)> = found.iter().map(|f| (f.key.as_str(), f.severity)).collect();
        assert_eq!(
            keys,
            [
                ("fsync", Severity::Critical),
                ("full_page_writes", Severity::Critical),
                ("synchronous_commit", Severity::Info)
            ]
        );
        assert!(found.iter().all(|f| f.rule == "durability_off"));
        assert_eq!(found[0].summary, "fsync is off");
        assert_eq!(found[1].figures["value"], "false");
        assert_eq!(found[0].details[0], "fsync = off (from the default).");
    }

    #[test]
    fn on_or_other_values_are_quiet() {
        let rule = DurabilityOff::default();
        let s = settings(15, &[("fsync", "on"), ("full_page_writes", "on"), ("synchronous_commit", "local")]);
        assert_eq!(check(&s, &rule), vec![]);
        assert_eq!(check(&settings(15, &[]), &rule), vec![]);
        // synchronous_commit can be left out of the rule.
        let s = settings(15, &[("synchronous_commit", "off")]);
        assert_eq!(check(&s, &DurabilityOff { synchronous_commit: false, ..rule }), vec![]);
    }

    #[test]
    fn a_change_in_the_log_is_the_evidence_time() {
        let mut s = settings(15, &[("fsync", "off")]);
        let when = at("2026-11-22T10:00:00Z");
        s.values.get_mut("fsync").unwrap().source = ValueSource::Log { at: when };
        let f = &check(&s, &DurabilityOff::default())[0];
        assert_eq!(f.evidence_at, Some(when));
        assert_eq!(f.details[0], "fsync = off (from the server log at 2026-11-22T10:00:00.000+00:00).");
    }
}
