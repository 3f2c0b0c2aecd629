//! One finding of `walwatch doctor` and how the report shows it.

use std::io::{self, Write};

use crate::output::line;

use serde::Serialize;

/// How bad a finding is; an error makes `doctor` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warning,
    Error,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Error => "error",
        }
    }
}

/// What was checked, what was found, why it matters and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Finding {
    /// None for walwatch's own checks (store, mail, daemon).
    pub(crate) cluster: Option<String>,
    pub(crate) check: &'static str,
    pub(crate) status: Status,
    pub(crate) message: String,
    /// What is lost while it is so; empty when ok.
    pub(crate) why: String,
    /// The exact change to make; empty when ok.
    pub(crate) fix: String,
}

impl Finding {
    pub(crate) fn ok(check: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            cluster: None,
            check,
            status: Status::Ok,
            message: message.into(),
            why: String::new(),
            fix: String::new(),
        }
    }

    pub(crate) fn warning(
        check: &'static str,
        message: impl Into<String>,
        why: &str,
        fix: impl Into<String>,
    ) -> Finding {
        Finding::bad(Status::Warning, check, message, why, fix)
    }

    pub(crate) fn error(check: &'static str, message: impl Into<String>, why: &str, fix: impl Into<String>) -> Finding {
        Finding::bad(Status::Error, check, message, why, fix)
    }

    fn bad(
        status: Status,
        check: &'static str,
        message: impl Into<String>,
        why: &str,
        fix: impl Into<String>,
    ) -> Finding {
        let (message, why, fix) = (message.into(), why.to_string(), fix.into());
        Finding { cluster: None, check, status, message, why, fix }
    }

    pub(crate) fn of(mut self, cluster: &str) -> Finding {
        self.cluster = Some(cluster.to_string());
        self
    }
}

/// The report: findings grouped under their cluster (walwatch's own last),
/// each not-ok one followed by its why and fix, then the count.
pub(crate) fn table(out: &mut impl Write, findings: &[Finding]) -> io::Result<()> {
    let mut current: Option<Option<&str>> = None;
    for f in findings {
        let group = f.cluster.as_deref();
        if current != Some(group) {
            match group {
                Some(name) => line(out, format!("cluster {name}:"))?,
                None => line(out, "walwatch:")?,
            }
            current = Some(group);
        }
        line(out, format!("  {:<8} {}: {}", f.status.label(), f.check, f.message))?;
        if f.status != Status::Ok {
            line(out, format!("           why: {}", f.why))?;
            line(out, format!("           fix: {}", f.fix))?;
        }
    }
    line(out, summary(findings))
}

/// "2 errors, 1 warning, 9 ok"
pub(crate) fn summary(findings: &[Finding]) -> String {
    let count = |s: Status| findings.iter().filter(|f| f.status == s).count();
    let n = |k: usize, what: &str| if k == 1 { format!("1 {what}") } else { format!("{k} {what}s") };
    format!("{}, {}, {} ok", n(count(Status::Error), "error"), n(count(Status::Warning), "warning"), count(Status::Ok))
}
