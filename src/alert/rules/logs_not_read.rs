//! `logs_not_read`: the daemon cannot read some of the cluster's logs — a
//! data directory whose current_logfiles it cannot read, a log directory it
//! cannot list (RHEL/PGDG keep `$PGDATA` at 0700), a glob matching no file,
//! a file it cannot open, or a file whose lines did not fit the cluster's
//! format or prefix. Every other rule is blind to what it does not read, so
//! this is said as loudly as a missing checkpoint line. The evidence is what
//! the daemon recorded (table file_problem, also shown by `walwatch status`);
//! the alert resolves once the daemon reads them.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Evidence, Finding, Rule};
use crate::model::alert::Severity;
use crate::store::StoreError;

/// `[alerts.logs_not_read]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LogsNotRead {
    pub(crate) enabled: bool,
}

impl Default for LogsNotRead {
    fn default() -> Self {
        LogsNotRead { enabled: true }
    }
}

impl Rule for LogsNotRead {
    const ID: &'static str = "logs_not_read";
    const DOC: &'static str = r#"The daemon cannot read some of the cluster's logs: current_logfiles or a
log directory it may not read (RHEL/PGDG keep $PGDATA at 0700), a glob that
matches no file, a file it cannot open, or one whose lines did not fit the
cluster's format or prefix. The other rules see nothing of those logs.
Each problem carries its fix; `walwatch status` lists them too."#;

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn evaluate(&self, evidence: &Evidence<'_>) -> Result<Vec<Finding>, StoreError> {
        let problems = evidence.store.daemon().problems(evidence.cluster)?;
        Ok(check(&problems).into_iter().collect())
    }
}

/// `problems`: (path, problem, when the daemon last saw it).
pub(crate) fn check(problems: &[(String, String, Timestamp)]) -> Option<Finding> {
    let (path, problem, _) = problems.first()?;
    let more = match problems.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let summary = format!("walwatch cannot read the logs at {path}{more}: it sees nothing of them");
    let mut details: Vec<String> = problems.iter().map(|(p, what, _)| format!("{p}: {what}")).collect();
    details.push(format!("The first problem: {problem}."));
    details.push("The alert resolves once the daemon reads them; `walwatch status` shows what is still wrong.".into());
    let listed: Vec<serde_json::Value> = problems
        .iter()
        .map(|(p, what, seen)| json!({ "path": p, "problem": what, "seen_at": crate::timefmt::rfc3339(*seen) }))
        .collect();
    Some(Finding {
        rule: LogsNotRead::ID,
        key: String::new(),
        severity: Severity::Warning,
        summary,
        details,
        figures: json!({ "count": problems.len(), "problems": listed }),
        suggestion: None,
        evidence_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::at;
    use super::*;

    #[test]
    fn every_problem_is_in_the_alert_and_none_is_quiet() {
        assert_eq!(check(&[]), None);
        let seen = at("2026-11-22T12:00:00Z");
        let problems = vec![
            ("/var/lib/pgsql/15/data/log".to_string(), "cannot list the directory: Permission denied".into(), seen),
            ("/srv/pg/*.log".to_string(), "matches no file".into(), seen),
        ];
        let f = check(&problems).unwrap();
        assert_eq!((f.rule, f.severity), ("logs_not_read", Severity::Warning));
        assert_eq!(
            f.summary,
            "walwatch cannot read the logs at /var/lib/pgsql/15/data/log (and 1 more): it sees nothing of them"
        );
        assert_eq!(f.details[1], "/srv/pg/*.log: matches no file");
        assert_eq!(f.figures["count"], 2);
        assert_eq!(f.figures["problems"][0]["seen_at"], "2026-11-22T12:00:00.000+00:00");
    }
}
