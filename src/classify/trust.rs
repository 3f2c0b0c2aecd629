//! Trust: only the process that logs an event may produce it.
//!
//! Checkpoint, restartpoint and too-frequent lines come from the
//! checkpointer (the startup process runs the end-of-recovery checkpoint
//! before PostgreSQL 15; a single-user backend checkpoints on its own),
//! setting changes and lifecycle lines from the postmaster, redo lines from
//! the startup process. A client can make the server log any text
//! (`RAISE LOG`, a logged statement, an error quoting its input), so a record
//! is refused when anything shows a client session wrote it:
//!
//! * session fields in the prefix (`%u %d %a %h %r` non-empty, the `%q` tail
//!   present) or in csvlog/jsonlog columns;
//! * a `backend_type` (`%b`, csvlog 13+, jsonlog) that is not the right process;
//! * a CONTEXT or STATEMENT line (PL/pgSQL `RAISE`, `log_min_error_statement`);
//! * a severity other than LOG;
//! * the framing's own doubt ([`Origin::doubt`](crate::frame::Origin)):
//!   lines a client spliced into another entry's prefix through a user or
//!   database name with line breaks (`frame::spliced`), a syslog line whose
//!   prefix names another pid than its sender.
//!
//! With a prefix that shows none of these (e.g. `%m [%p] `), only the
//! CONTEXT/STATEMENT and severity checks remain; the importer warns once.

use crate::frame::prefix::Prefix;
use crate::frame::{LogSeverity, Record};

/// What a log's format still lets a client make the server write, and the
/// setting that closes it; None when nothing (csvlog, jsonlog, or a prefix
/// that names the writing process and prints no name a client sends).
pub(crate) fn residual_risk(format: &str, prefix: Option<&Prefix>) -> Option<String> {
    const CLOSED: &str = "log_destination = 'jsonlog' (PostgreSQL 15+) or 'csvlog', or log_line_prefix = '%m [%p] %b ', leaves no such room";
    let prefix = match (format, prefix) {
        ("stderr" | "syslog", Some(p)) => p,
        _ => return None,
    };
    if prefix.spanning().is_some() {
        return Some(format!(
            "log_line_prefix '{}' prints the user and database names clients send before they log in, line breaks included; walwatch refuses the lines they splice into the log (README: Trusting what the log says), but {CLOSED}",
            prefix.spec()
        ));
    }
    if !prefix.session_checkable() {
        return Some(format!(
            "log_line_prefix '{}' does not tell client sessions from the checkpointer: a client's RAISE LOG is refused only for its CONTEXT line; {CLOSED}",
            prefix.spec()
        ));
    }
    None
}

/// Backend types allowed to log each kind of event, and the refusal that
/// names them when the line's `backend_type` is another.
fn allowed_backends(kind: &str) -> (&'static [&'static str], &'static str) {
    match kind {
        "checkpoint_start" | "checkpoint_complete" | "restartpoint_start" | "restartpoint_complete" => (
            &["checkpointer", "startup", "standalone backend"],
            "its backend_type is not checkpointer, startup or standalone backend, the processes that log checkpoints",
        ),
        "too_frequent" | "recovery_restart_point" => {
            (&["checkpointer"], "its backend_type is not checkpointer, the process that logs this event")
        }
        "redo_start" | "redo_done" | "archive_recovery_done" => {
            (&["startup"], "its backend_type is not startup, the process that logs recovery")
        }
        _ => (&["postmaster"], "its backend_type is not postmaster, the process that logs this event"),
    }
}

/// Ok when `record` may be a real `kind` event; otherwise the reason it is not.
pub(crate) fn verdict(record: &Record, kind: &str) -> Result<(), &'static str> {
    if record.severity != LogSeverity::Log {
        return Err("severity is not LOG");
    }
    if let Some(doubt) = record.origin.doubt {
        return Err(doubt);
    }
    if record.origin.session {
        return Err("written by a client session");
    }
    if let Some(backend) = &record.origin.backend_type {
        let (allowed, refusal) = allowed_backends(kind);
        if !allowed.contains(&backend.as_str()) {
            return Err(refusal);
        }
    }
    if record.context.is_some() {
        return Err("raised from a function (CONTEXT line)");
    }
    if record.statement.is_some() {
        return Err("tied to a client statement (STATEMENT line)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Origin;

    fn record(origin: Origin) -> Record {
        Record {
            offset: 0,
            line: 1,
            time: None,
            origin,
            severity: LogSeverity::Log,
            message: "checkpoint starting: wal".into(),
            detail: None,
            hint: None,
            context: None,
            statement: None,
            cut: crate::frame::Cut::Whole,
        }
    }

    #[test]
    fn background_checkpointer_line_is_trusted() {
        let r = record(Origin {
            pid: Some(1),
            backend_type: Some("checkpointer".into()),
            session: false,
            session_checkable: true,
            doubt: None,
            uid: None,
        });
        assert_eq!(verdict(&r, "checkpoint_start"), Ok(()));
    }

    #[test]
    fn session_backend_context_and_severity_are_refused() {
        let mut r = record(Origin { session: true, ..Origin::default() });
        assert_eq!(verdict(&r, "checkpoint_start"), Err("written by a client session"));
        r.origin = Origin { backend_type: Some("client backend".into()), ..Origin::default() };
        assert!(verdict(&r, "checkpoint_start").is_err());
        r.origin = Origin::default();
        r.context = Some("PL/pgSQL function inline_code_block line 1 at RAISE".into());
        assert!(verdict(&r, "checkpoint_start").is_err());
        r.context = None;
        r.severity = LogSeverity::Warning;
        assert!(verdict(&r, "checkpoint_start").is_err());
        r.severity = LogSeverity::Log;
        r.origin.backend_type = Some("checkpointer".into());
        assert!(verdict(&r, "parameter_changed").is_err());
    }

    /// Which backend types `verdict` accepts for each kind, among all
    /// PostgreSQL 15's background types and a client backend.
    #[test]
    fn each_kind_is_trusted_only_from_the_processes_that_log_it() {
        const TYPES: [&str; 6] =
            ["checkpointer", "startup", "standalone backend", "postmaster", "client backend", "walwriter"];
        let trusted = |kind: &str| -> Vec<&str> {
            let trusted_from = |backend: &str| {
                let origin = Origin { backend_type: Some(backend.into()), ..Origin::default() };
                verdict(&record(origin), kind).is_ok()
            };
            TYPES.into_iter().filter(|b| trusted_from(b)).collect()
        };
        let points = ["checkpointer", "startup", "standalone backend"];
        for kind in ["checkpoint_start", "checkpoint_complete", "restartpoint_start", "restartpoint_complete"] {
            assert_eq!(trusted(kind), points, "{kind}");
        }
        for kind in ["too_frequent", "recovery_restart_point"] {
            assert_eq!(trusted(kind), ["checkpointer"], "{kind}");
        }
        for kind in ["redo_start", "redo_done", "archive_recovery_done"] {
            assert_eq!(trusted(kind), ["startup"], "{kind}");
        }
        for kind in ["parameter_changed", "server_start", "server_ready", "config_reload"] {
            assert_eq!(trusted(kind), ["postmaster"], "{kind}");
        }
    }

    fn prefix(spec: &str) -> Prefix {
        Prefix::compile(spec, crate::catalog::Catalog::global().markers()).unwrap()
    }

    #[test]
    fn residual_risk_names_the_room_each_format_leaves_and_the_setting_that_closes_it() {
        let debian = prefix("%m [%p] %q%u@%d ");
        let bare = prefix("%m [%p] ");
        let closed = prefix("%m [%p] %b ");
        let spliced = residual_risk("stderr", Some(&debian)).unwrap();
        assert!(
            spliced.starts_with("log_line_prefix '%m [%p] %q%u@%d ' prints the user and database names clients send before they log in, line breaks included; walwatch refuses the lines they splice"),
            "{spliced}"
        );
        let unchecked = residual_risk("syslog", Some(&bare)).unwrap();
        assert!(
            unchecked.starts_with("log_line_prefix '%m [%p] ' does not tell client sessions from the checkpointer: a client's RAISE LOG is refused only for its CONTEXT line; "),
            "{unchecked}"
        );
        for text in [&spliced, &unchecked] {
            assert!(text.ends_with("log_line_prefix = '%m [%p] %b ', leaves no such room"), "{text}");
        }
        assert_eq!(residual_risk("stderr", Some(&closed)), None);
        assert_eq!(residual_risk("syslog", Some(&closed)), None);
        // Structured formats carry every field apart: no prefix, no room.
        assert_eq!(residual_risk("csvlog", None), None);
        assert_eq!(residual_risk("jsonlog", Some(&debian)), None);
        assert_eq!(residual_risk("stderr", None), None);
    }
}
