//! Whose pid a syslog line carries. PostgreSQL's syslog(3) messages name
//! their sender in the tag (`postgres[21760]:`), but that is text the
//! sender writes: any local user can run `logger -t postgres
//! --id=<checkpointer pid> '[91-1] … LOG:  checkpoint starting: wal'`.
//! journald records the pid and uid the kernel gives for the socket's
//! sender; rsyslog writes the claimed pid unless told to take the kernel's
//! (imuxsock's `SysSock.UsePIDFromSystem`, imjournal's `UsePid="system"`).
//! With the kernel's pid, a line whose `%p` names another process is
//! refused (`frame::formats::syslog`). This reads rsyslog's config as rsyslogd
//! does — the main file and what it includes — for those settings.

use std::path::{Path, PathBuf};

use super::finding::Finding;

const CHECK: &str = "syslog";

/// The line that makes imuxsock take the sender's pid from the kernel.
pub(crate) const IMUXSOCK_LINE: &str = r#"module(load="imuxsock" SysSock.UsePIDFromSystem="on")"#;
const IMUXSOCK_LEGACY: &str = "$SystemLogUsePIDFromSystem on";
const IMJOURNAL_LINE: &str = r#"module(load="imjournal" UsePid="system")"#;

const FORGED: &str = "any local user can send lines tagged with the checkpointer's pid (`logger -t postgres \
     --id=<checkpointer pid> '[91-1] <time> [<pid>] LOG:  checkpoint starting: wal'`): the syslog file then holds \
     them under that pid, exactly as the server's own, and walwatch stores them as checkpoints";

/// The syslog finding of a cluster whose server logs to syslog
/// (`destination` holds its log_destination, when known) or whose log
/// walwatch reads as `format`; None when neither is syslog.
pub(crate) fn check(format: &str, destination: Option<&str>, rsyslog_conf: &Path) -> Option<Finding> {
    let to_syslog = destination.is_some_and(|d| d.split(',').any(|d| d.trim().eq_ignore_ascii_case("syslog")));
    match format {
        "journald-json" => Some(Finding::ok(
            CHECK,
            "walwatch reads journald's entries, whose _PID and _UID journald takes from the kernel: a line whose %p \
             is not its sender's, or sent by another uid than the server's, is refused",
        )),
        "journald" => Some(Finding::warning(
            CHECK,
            "journalctl's plain output shows each line's sender pid but not its uid, and walwatch reads the lines \
             without it",
            "any local user can send lines tagged as the server's (`logger -t postgres`) into the journal; walwatch \
             cannot tell them from the server's in this output",
            "export the journal as JSON (`journalctl -o json -u <the server's unit>`) and read it with format = \
             \"journald-json\": walwatch then refuses entries of another uid than the server's",
        )),
        "syslog" => Some(rsyslog(rsyslog_conf)),
        _ if to_syslog => Some(rsyslog(rsyslog_conf)),
        _ => None,
    }
}

/// What rsyslog's config says about the pid it writes.
fn rsyslog(conf: &Path) -> Finding {
    let files = match read_config(conf) {
        Ok(files) => files,
        Err(e) => {
            return Finding::warning(
                CHECK,
                format!("cannot read rsyslog's config {}: {e}", conf.display()),
                &format!("whether the syslog daemon writes the sender's real pid is unknown; without it {FORGED}"),
                format!(
                    "run walwatch doctor as root, or pass --rsyslog-conf with the config rsyslogd runs with; it \
                     needs `{IMUXSOCK_LINE}`"
                ),
            )
        }
    };
    verdict(&Inputs::of(&files), conf)
}

/// An input of rsyslog that receives local messages, as the config loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Input {
    /// "file:line" of the module's load.
    at: String,
    /// It writes the pid the kernel gives for the sender.
    vouched: bool,
}

/// imuxsock (the /dev/log socket, or journald's forward of it) and imjournal.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Inputs {
    imuxsock: Option<Input>,
    imjournal: Option<Input>,
}

fn verdict(inputs: &Inputs, conf: &Path) -> Finding {
    let conf = conf.display();
    let loaded: Vec<(&str, &Input)> = [("imuxsock", &inputs.imuxsock), ("imjournal", &inputs.imjournal)]
        .into_iter()
        .filter_map(|(n, i)| Some((n, i.as_ref()?)))
        .collect();
    if loaded.is_empty() {
        return Finding::warning(
            CHECK,
            format!("{conf} (and what it includes) loads neither imuxsock nor imjournal"),
            &format!("PostgreSQL's syslog(3) messages reach the syslog daemon some other way, and whether it writes the sender's real pid is unknown; without it {FORGED}"),
            format!("load the socket input with the kernel's pid: `{IMUXSOCK_LINE}` in {conf}, then restart rsyslog"),
        );
    }
    let claimed: Vec<&(&str, &Input)> = loaded.iter().filter(|(_, i)| !i.vouched).collect();
    let Some((name, input)) = claimed.first() else {
        let at: Vec<String> = loaded.iter().map(|(n, i)| format!("{n} at {}", i.at)).collect();
        return Finding::ok(
            CHECK,
            format!(
                "rsyslog writes the pid the kernel gives for each sender ({}): a line whose %p names another process \
                 is refused; a local user can still send lines under its own pid (README: Trusting what the log says)",
                at.join(", ")
            ),
        );
    };
    let fix = match *name {
        "imuxsock" => format!(
            "add SysSock.UsePIDFromSystem=\"on\" to the imuxsock load at {}: `{IMUXSOCK_LINE}` (legacy syntax: \
             `{IMUXSOCK_LEGACY}` after `$ModLoad imuxsock`), then restart rsyslog (systemctl restart rsyslog)",
            input.at
        ),
        _ => format!(
            "add UsePid=\"system\" to the imjournal load at {}: `{IMJOURNAL_LINE}`, then restart rsyslog (systemctl \
             restart rsyslog)",
            input.at
        ),
    };
    Finding::warning(
        CHECK,
        format!("{} loads {name} without the kernel's pid: rsyslog writes the pid the sender claims", input.at),
        FORGED,
        format!("{fix}; or log to stderr, csvlog or jsonlog files, which only the server writes"),
    )
}

/// The config's files, the main one first, each with its text, in the order
/// rsyslogd reads them (an include's files where the include stands, in
/// name order). Only the main file must be readable.
fn read_config(main: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
    let text = std::fs::read_to_string(main)?;
    add(main.to_path_buf(), text, &mut files, 0);
    Ok(files)
}

/// Includes nest at most this deep (rsyslogd's own limit is about as small).
const MAX_INCLUDE_DEPTH: usize = 8;

fn add(path: PathBuf, text: String, files: &mut Vec<(PathBuf, String)>, depth: usize) {
    let includes: Vec<String> = statements(&text).iter().filter_map(Statement::include).collect();
    files.push((path, text));
    if depth >= MAX_INCLUDE_DEPTH {
        return;
    }
    for pattern in includes {
        let mut found: Vec<PathBuf> = glob::glob(&pattern).into_iter().flatten().flatten().collect();
        if found.is_empty() && !pattern.contains(['*', '?', '[']) {
            found.push(PathBuf::from(&pattern));
        }
        found.sort();
        for file in found {
            if let Ok(text) = std::fs::read_to_string(&file) {
                add(file, text, files, depth + 1);
            }
        }
    }
}

/// One statement of rsyslog's config: a legacy `$Directive value` line, or
/// a RainerScript object `name(param="value" …)`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Statement {
    Legacy { line: usize, name: String, value: String },
    Object { line: usize, name: String, params: Vec<(String, String)> },
}

impl Statement {
    fn param(&self, key: &str) -> Option<&str> {
        match self {
            Statement::Object { params, .. } => {
                params.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str())
            }
            Statement::Legacy { .. } => None,
        }
    }

    fn is(&self, object: &str) -> bool {
        matches!(self, Statement::Object { name, .. } if name.eq_ignore_ascii_case(object))
    }

    fn line(&self) -> usize {
        match self {
            Statement::Legacy { line, .. } | Statement::Object { line, .. } => *line,
        }
    }

    /// The files an include names (`$IncludeConfig glob`, `include(file="glob")`).
    fn include(&self) -> Option<String> {
        match self {
            Statement::Legacy { name, value, .. } if name.eq_ignore_ascii_case("$IncludeConfig") => Some(value.clone()),
            s if s.is("include") => s.param("file").map(String::from),
            _ => None,
        }
    }

    /// The module a load names (`module(load="x")`, `$ModLoad x`).
    fn loads(&self) -> Option<&str> {
        match self {
            Statement::Legacy { name, value, .. } if name.eq_ignore_ascii_case("$ModLoad") => {
                Some(value.trim_end_matches(".so"))
            }
            s if s.is("module") => s.param("load"),
            _ => None,
        }
    }
}

/// rsyslog's boolean values.
fn on(value: &str) -> bool {
    matches!(value.trim().to_ascii_lowercase().as_str(), "on" | "yes" | "1")
}

impl Inputs {
    fn of(files: &[(PathBuf, String)]) -> Inputs {
        let mut inputs = Inputs::default();
        let mut legacy_pid = false;
        for (path, text) in files {
            for s in statements(text) {
                let at = format!("{}:{}", path.display(), s.line());
                match s.loads() {
                    // SysSock.Use="off" (RHEL, with imjournal): no system socket.
                    Some(m) if m.eq_ignore_ascii_case("imuxsock") && s.param("SysSock.Use").is_none_or(on) => {
                        let vouched = s.param("SysSock.UsePIDFromSystem").is_some_and(on);
                        inputs.imuxsock.get_or_insert(Input { at, vouched: false }).vouched |= vouched;
                    }
                    Some(m) if m.eq_ignore_ascii_case("imjournal") => {
                        let vouched = s.param("UsePid").is_some_and(|v| v.eq_ignore_ascii_case("system"))
                            || s.param("UsePidFromSystem").is_some_and(on);
                        inputs.imjournal.get_or_insert(Input { at, vouched: false }).vouched |= vouched;
                    }
                    _ => {}
                }
                if let Statement::Legacy { name, value, .. } = &s {
                    legacy_pid |= name.eq_ignore_ascii_case("$SystemLogUsePIDFromSystem") && on(value);
                }
                // A listener of its own on /dev/log instead of the system socket.
                let own_dev_log = s.is("input")
                    && s.param("type").is_some_and(|t| t.eq_ignore_ascii_case("imuxsock"))
                    && s.param("Socket") == Some("/dev/log")
                    && s.param("UsePIDFromSystem").is_some_and(on);
                if own_dev_log {
                    if let Some(i) = inputs.imuxsock.as_mut() {
                        i.vouched = true;
                    }
                }
            }
        }
        if let Some(i) = inputs.imuxsock.as_mut() {
            i.vouched |= legacy_pid;
        }
        inputs
    }
}

/// The statements of a config text: comments (`#` to the end of the line,
/// `/* … */`) dropped, an object's parameters gathered over its lines.
fn statements(text: &str) -> Vec<Statement> {
    let clean = strip_comments(text);
    let mut out = Vec::new();
    let chars: Vec<char> = clean.chars().collect();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start_line = line;
        if c == '$' {
            let end = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |p| i + p);
            let text: String = chars[i..end].iter().collect();
            let (name, value) = text.split_once(char::is_whitespace).unwrap_or((&text, ""));
            out.push(Statement::Legacy { line: start_line, name: name.into(), value: value.trim().into() });
            i = end;
            continue;
        }
        // A word directly followed (spaces allowed) by '(' opens an object.
        let word_end =
            chars[i..].iter().position(|c| !(c.is_ascii_alphanumeric() || *c == '_')).map_or(chars.len(), |p| i + p);
        let mut j = word_end;
        while j < chars.len() && (chars[j] == ' ' || chars[j] == '\t') {
            j += 1;
        }
        if word_end > i && chars.get(j) == Some(&'(') {
            let name: String = chars[i..word_end].iter().collect();
            let (params, end, newlines) = object_params(&chars, j + 1);
            out.push(Statement::Object { line: start_line, name, params });
            line += newlines;
            i = end;
            continue;
        }
        // Anything else (a selector line, a filter, a quoted string): skipped
        // to its end, keeping track of lines.
        let end = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |p| i + p);
        i = end.max(i + 1);
    }
    out
}

/// `name="value"` pairs from just after an object's `(` to its `)`; returns
/// them, where the object ends and the newlines it spans.
fn object_params(chars: &[char], mut i: usize) -> (Vec<(String, String)>, usize, usize) {
    let (mut params, mut newlines) = (Vec::new(), 0);
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            newlines += usize::from(chars[i] == '\n');
            i += 1;
        }
        match chars.get(i) {
            None => return (params, i, newlines),
            Some(')') => return (params, i + 1, newlines),
            _ => {}
        }
        let key_end =
            chars[i..].iter().position(|c| c.is_whitespace() || *c == '=' || *c == ')').map_or(chars.len(), |p| i + p);
        let key: String = chars[i..key_end].iter().collect();
        i = key_end;
        while i < chars.len() && chars[i].is_whitespace() {
            newlines += usize::from(chars[i] == '\n');
            i += 1;
        }
        if chars.get(i) != Some(&'=') {
            i = i.max(key_end + 1).min(chars.len());
            continue;
        }
        i += 1;
        while i < chars.len() && chars[i].is_whitespace() {
            newlines += usize::from(chars[i] == '\n');
            i += 1;
        }
        let value = match chars.get(i) {
            Some(&q @ ('"' | '\'')) => {
                let end = chars[i + 1..].iter().position(|&c| c == q).map_or(chars.len(), |p| i + 1 + p);
                let value: String = chars[i + 1..end.min(chars.len())].iter().collect();
                newlines += value.matches('\n').count();
                i = (end + 1).min(chars.len());
                value
            }
            _ => {
                let end = chars[i..].iter().position(|c| c.is_whitespace() || *c == ')').map_or(chars.len(), |p| i + p);
                let value: String = chars[i..end].iter().collect();
                i = end;
                value
            }
        };
        params.push((key, value));
    }
}

/// The text without comments; newlines kept, so line numbers stay right.
/// `/*` opens a comment only where a word could start, outside a legacy
/// `$` line: `$IncludeConfig /etc/rsyslog.d/*.conf` is a path.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        let line = out.rsplit('\n').next().unwrap_or_default();
        let word_start = line.chars().last().is_none_or(|p| p.is_whitespace() || p == '(' || p == ')');
        let legacy = line.trim_start().starts_with('$');
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (Some(_), c) => out.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                out.push(c);
            }
            (None, '#') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            (None, '/') if chars.peek() == Some(&'*') && word_start && !legacy => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            (None, c) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
