//! What the server's conf files say about its logging, judged against what
//! walwatch needs: pure functions of the values, so each verdict is tested
//! without a server.

use crate::catalog::Catalog;
use crate::classify::trust::residual_risk;
use crate::frame::prefix::Prefix;
use crate::guc::defaults;
use crate::guc::units::boolean;
use crate::settings::conf::Parsed;

use super::finding::Finding;

/// The prefix doctor proposes: time with milliseconds, the pid, and the
/// session fields after `%q`, which Debian ships and the trust check reads
/// completely (README: Trusting what the log says).
pub(crate) const GOOD_PREFIX: &str = "%m [%p] %q%u@%d ";

/// A server setting as its conf files leave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    pub(crate) name: &'static str,
    pub(crate) value: String,
    /// "file:line" where it is set; None: the version's default.
    pub(crate) set_at: Option<String>,
    /// Set by ALTER SYSTEM (postgresql.auto.conf), which wins over postgresql.conf.
    pub(crate) by_alter_system: bool,
}

impl Setting {
    /// `name` as `parsed` sets it, else the default of `version` (None: the newest).
    pub(crate) fn of(parsed: &Parsed, name: &'static str, version: Option<u32>) -> Setting {
        match parsed.get(name) {
            Some(e) => Setting {
                name,
                value: e.value.clone(),
                set_at: Some(format!("{}:{}", e.path.display(), e.line)),
                by_alter_system: e.path.file_name().is_some_and(|f| f == "postgresql.auto.conf"),
            },
            None => {
                let default = defaults::default(name, version.unwrap_or(u32::MAX)).unwrap_or_default();
                Setting { name, value: default.to_string(), set_at: None, by_alter_system: false }
            }
        }
    }

    /// "on (postgresql.conf:245)", "'%m [%p] ' (the default)"
    fn shown(&self, value: &str) -> String {
        match &self.set_at {
            Some(at) => format!("{value} ({at})"),
            None => format!("{value} (the default)"),
        }
    }
}

/// How a changed setting takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Apply {
    Reload,
    Restart,
}

/// The exact change: the line for postgresql.conf (or ALTER SYSTEM, when
/// that is where the current value comes from: it would win over the file).
pub(crate) fn fix_line(setting: &Setting, line: &str, conf: &str, apply: Apply) -> String {
    let then = match apply {
        Apply::Reload => "then reload (SELECT pg_reload_conf();)",
        Apply::Restart => "then restart PostgreSQL (this setting needs a restart)",
    };
    if setting.by_alter_system {
        let (name, value) = line.split_once(" = ").unwrap_or((setting.name, line));
        return format!("ALTER SYSTEM SET {name} = {value}; {then}");
    }
    format!("set `{line}` in {conf}, {then}")
}

pub(crate) fn log_checkpoints(s: &Setting, conf: &str) -> Finding {
    const CHECK: &str = "log_checkpoints";
    match boolean(&s.value) {
        Some(true) => Finding::ok(CHECK, s.shown("on")),
        Some(false) => Finding::error(
            CHECK,
            s.shown("off"),
            "PostgreSQL logs no checkpoint: walwatch records none, its alerts never fire and suggest has no WAL \
             distance to size max_wal_size from",
            fix_line(s, "log_checkpoints = on", conf, Apply::Reload),
        ),
        None => Finding::error(
            CHECK,
            s.shown(&format!("{:?}, not a boolean", s.value)),
            "PostgreSQL refuses the value and keeps the previous one: whether checkpoints are logged is unknown",
            fix_line(s, "log_checkpoints = on", conf, Apply::Reload),
        ),
    }
}

/// The prefix of a log walwatch reads as `format`; `configured` is the
/// `[[cluster]] prefix` walwatch reads it with ("auto": detected).
pub(crate) fn log_line_prefix(s: &Setting, format: &str, configured: &str, conf: &str) -> Finding {
    const CHECK: &str = "log_line_prefix";
    let spec = &s.value;
    if !matches!(format, "stderr" | "syslog") {
        return Finding::ok(CHECK, format!("not used: walwatch reads the {format} file, whose fields stand apart"));
    }
    let fix = fix_line(s, &format!("log_line_prefix = '{GOOD_PREFIX}'"), conf, Apply::Reload);
    let prefix = match Prefix::compile(spec, Catalog::global().markers()) {
        Ok(p) => p,
        Err(e) => return Finding::error(CHECK, s.shown(&format!("'{spec}'")), &e.to_string(), fix),
    };
    if configured != "auto" && configured != spec.as_str() {
        return Finding::error(
            CHECK,
            s.shown(&format!("'{spec}', but walwatch is told prefix = {configured:?}")),
            "walwatch reads the log with the prefix its [[cluster]] names: lines of another prefix do not fit, and \
             the daemon stops reading the file as a misfit",
            format!("set prefix = \"auto\" (or {spec:?}) in the [[cluster]] table of walwatch.toml"),
        );
    }
    prefix_verdict(s, &prefix, format, fix)
}

fn prefix_verdict(s: &Setting, prefix: &Prefix, format: &str, fix: String) -> Finding {
    const CHECK: &str = "log_line_prefix";
    let shown = s.shown(&format!("'{}'", prefix.spec()));
    let (time, pid) = (prefix.dates_every_line(), prefix.names_every_process());
    let lost_time = "without a time (%m, %t or %n) before %q walwatch cannot date the checkpointer's lines: it \
                     cannot detect the prefix nor store when a checkpoint ran";
    let lost_pid = "without the pid (%p) before %q walwatch cannot tell which process wrote a line: a DETAIL, HINT \
                    or CONTEXT line of a session running at the same time is attached to the checkpointer's entry, \
                    and lines a client splices into the log through its user name are not refused (README: Trusting \
                    what the log says)";
    match (time, pid) {
        (false, false) => {
            return Finding::error(
                CHECK,
                format!("{shown} has no time and no pid"),
                &format!("{lost_time}; {lost_pid}"),
                fix,
            )
        }
        (false, true) => return Finding::error(CHECK, format!("{shown} has no time"), lost_time, fix),
        (true, false) => return Finding::error(CHECK, format!("{shown} has no pid"), lost_pid, fix),
        (true, true) => {}
    }
    let weak = prefix.spanning().is_some_and(|sp| sp.server_lines_join() || !sp.head_has_pid());
    match residual_risk(format, Some(prefix)) {
        Some(risk) if !prefix.session_checkable() || weak => {
            Finding::warning(CHECK, format!("{shown} does not show which lines client sessions wrote"), &risk, fix)
        }
        _ => Finding::ok(CHECK, format!("{shown}: time, pid and the session fields the trust check reads")),
    }
}

/// Languages whose messages anyone (and every log tool) reads.
fn english(value: &str) -> bool {
    let lang = value.split(['.', '@']).next().unwrap_or_default();
    matches!(lang, "C" | "POSIX") || lang == "en" || lang.starts_with("en_")
}

pub(crate) fn lc_messages(s: &Setting, conf: &str) -> Finding {
    const CHECK: &str = "lc_messages";
    let fix = fix_line(s, "lc_messages = 'C'", conf, Apply::Reload);
    if s.value.is_empty() {
        return Finding::warning(
            CHECK,
            s.shown("''"),
            "the server takes the language of the environment it was started in: a start from another shell or \
             service manager can switch the log's language unnoticed",
            fix,
        );
    }
    if english(&s.value) {
        return Finding::ok(CHECK, s.shown(&format!("'{}'", s.value)));
    }
    Finding::warning(
        CHECK,
        s.shown(&format!("'{}': the log is translated", s.value)),
        "walwatch reads PostgreSQL's own translations of the messages it knows, but a wording a later minor \
         release changes, or a language without a translation of a message, is missed until walwatch learns it; \
         pgBadger, grep-based monitoring and anyone you ask for help read English",
        fix,
    )
}

/// How walwatch finds a cluster's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follows<'a> {
    /// `data_directory`: the files `current_logfiles` names.
    CurrentLogfiles,
    /// `logs` globs, read as this format ("auto" resolved from the files).
    Globs(&'a str),
}

/// log_destination and logging_collector against how walwatch follows the log.
pub(crate) fn destination(dest: &Setting, collector: &Setting, follows: Follows<'_>, conf: &str) -> Finding {
    const CHECK: &str = "log_destination";
    let dests: Vec<String> = dest.value.split(',').map(|d| d.trim().to_ascii_lowercase()).collect();
    let collecting = boolean(&collector.value) == Some(true);
    let shown =
        format!("log_destination = '{}', logging_collector = {}", dest.value, if collecting { "on" } else { "off" });
    let collector_on = fix_line(collector, "logging_collector = on", conf, Apply::Restart);
    if follows == Follows::CurrentLogfiles && !collecting {
        return Finding::error(
            CHECK,
            format!("{shown}: walwatch follows current_logfiles, which only the logging collector writes"),
            "without the collector PostgreSQL writes no current_logfiles and no log files of its own: walwatch \
             follows nothing",
            format!("{collector_on}; or name the files in the [[cluster]] logs of walwatch.toml"),
        );
    }
    let structured: Vec<&String> = dests.iter().filter(|d| *d == "csvlog" || *d == "jsonlog").collect();
    if !structured.is_empty() && !collecting {
        return Finding::error(
            CHECK,
            format!("{shown}: {} needs the logging collector", structured[0]),
            "PostgreSQL writes csvlog and jsonlog only through the logging collector: without it nothing of them is \
             written",
            collector_on,
        );
    }
    if let Follows::Globs(format) = follows {
        let needed = if format == "syslog" { "syslog" } else { format };
        if ["stderr", "csvlog", "jsonlog", "syslog"].contains(&needed) && !dests.iter().any(|d| d == needed) {
            return Finding::error(
                CHECK,
                format!("{shown}, but walwatch reads its logs as {format}"),
                "the server does not write the format walwatch follows: nothing new reaches walwatch",
                fix_line(dest, &format!("log_destination = '{needed}'"), conf, Apply::Reload),
            );
        }
    }
    Finding::ok(CHECK, format!("{shown}: {}", follows_text(follows)))
}

fn follows_text(follows: Follows<'_>) -> String {
    match follows {
        Follows::CurrentLogfiles => "walwatch follows the files current_logfiles names".into(),
        Follows::Globs(format) => format!("walwatch follows the {format} files of its logs globs"),
    }
}

#[cfg(test)]
mod tests;
