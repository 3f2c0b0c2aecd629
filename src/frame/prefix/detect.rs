//! Inferring a file's `log_line_prefix` from its first lines.
//!
//! The level marker (`LOG:  `, `ERROR:  `, translated) ends the prefix on
//! every line, so the text before it is the prefix as printed. Candidates
//! come from a list of common prefixes and from the sample itself (each
//! distinct shape read token by token), and each is judged on the whole
//! sample by what PostgreSQL guarantees: the server's own lines carry no
//! session fields, and client sessions' lines carry them when the prefix
//! has any (see [`Score`]).

use std::cmp::Reverse;
use std::collections::HashMap;

use regex::Regex;

use super::{marker_alternation, DetectError, Prefix, PrefixError, PrefixMatch, TS, TS_MS, ZONE};
use crate::catalog::{Catalog, Classification};
use crate::frame::record::{LineLevel, LogSeverity, Secondary};

/// Common prefixes, the usual ones first (earlier wins a tie).
const CANDIDATES: &[&str] = &[
    "%m [%p] %q%u@%d ",
    "%m [%p] ",
    "%m [%p] %b ",
    "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
    "%t [%p]: [%l-1] user=%u,db=%d ",
    "%t [%p]: [%l-1] ",
    "%m [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
    "%m [%p]: [%l-1] user=%u,db=%d ",
    "%m [%p]: [%l-1] ",
    "%t:%r:%u@%d:[%p]: ",
    "%t:%r:%u@%d:[%p]:",
    "%m:%r:%u@%d:[%p]: ",
    "%m:%r:%u@%d:[%p]:",
    "%m [%p] %q[user=%u,db=%d,app=%a] ",
    "%m [%p] %q%u@%d %a ",
    "%m [%p-%l] %q%u@%d ",
    "%m [%p-%l] ",
    "%m %u %d [%p] ",
    "%t [%p] %q%u@%d ",
    "%t [%p] ",
    "%t-%c-",
    "%t-%c- ",
    "< %m > ",
    "< %m >",
    "%m ",
    "%t ",
    "",
];

/// Who wrote a sample line, as far as its message tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// A message only the server's own processes write (checkpoints,
    /// startup, shutdown, reloads: the catalog's events).
    Server,
    /// A client session's line: an error, a statement, a connection.
    Session,
    Unknown,
}

/// Messages (English) that only a client session's backend writes.
const SESSION_HEADS: &[&str] =
    &["connection received:", "connection authorized:", "disconnection:", "statement:", "duration:", "execute "];

/// One line of the sample: its text, where the first level marker starts
/// (the end of the prefix as printed), and who wrote it.
struct SampleLine<'a> {
    text: &'a str,
    /// None when no marker follows: not a log line of this format.
    head: Option<&'a str>,
    writer: Writer,
}

/// The lines detection learns from, and what their messages tell.
struct Sample<'a> {
    lines: Vec<SampleLine<'a>>,
    names: Names,
    /// The markers the sample's lines use: what inferred candidates are
    /// compiled with while they compete (every language's markers make a
    /// regex that takes milliseconds to build).
    markers: Vec<(String, LineLevel)>,
}

impl<'a> Sample<'a> {
    fn new(lines: &[&'a str], markers: &[(String, LineLevel)], catalog: &Catalog) -> Result<Sample<'a>, PrefixError> {
        let (alt, levels) = marker_alternation(markers)?;
        let marker_re = Regex::new(&alt).map_err(|source| PrefixError::Regex { spec: String::new(), source })?;
        let mut names = Names::default();
        let mut used: Vec<(String, LineLevel)> = Vec::new();
        let lines: Vec<SampleLine<'a>> = lines
            .iter()
            .map(|&text| {
                let Some(m) = marker_re.find(text) else {
                    return SampleLine { text, head: None, writer: Writer::Unknown };
                };
                let message = &text[m.end()..];
                names.learn(message);
                let level = levels[m.as_str()];
                if !used.iter().any(|(t, _)| t == m.as_str()) {
                    used.push((m.as_str().to_string(), level));
                }
                let writer = writer_of(level, message, catalog);
                SampleLine { text, head: Some(&text[..m.start()]), writer }
            })
            .collect();
        Ok(Sample { lines, names, markers: used })
    }
}

fn writer_of(level: LineLevel, message: &str, catalog: &Catalog) -> Writer {
    use LineLevel::{Primary, Secondary as S};
    match level {
        Primary(LogSeverity::Log) if !matches!(catalog.classify(message), Classification::Other) => Writer::Server,
        Primary(LogSeverity::Error | LogSeverity::Fatal) | S(Secondary::Statement) => Writer::Session,
        _ if SESSION_HEADS.iter().any(|h| message.starts_with(h)) => Writer::Session,
        _ => Writer::Unknown,
    }
}

/// User, database and application names the sample's `connection
/// authorized` lines give, so that a bare name in a prefix is given the
/// escape that prints it.
#[derive(Debug, Default)]
struct Names {
    users: Vec<String>,
    databases: Vec<String>,
    applications: Vec<String>,
}

impl Names {
    fn learn(&mut self, message: &str) {
        let Some(rest) = message.strip_prefix("connection authorized: ") else { return };
        for word in rest.split(' ') {
            let (list, value) = if let Some(v) = word.strip_prefix("user=") {
                (&mut self.users, v)
            } else if let Some(v) = word.strip_prefix("database=") {
                (&mut self.databases, v)
            } else if let Some(v) = word.strip_prefix("application_name=") {
                (&mut self.applications, v)
            } else {
                continue;
            };
            if !value.is_empty() && !list.iter().any(|n| n == value) && list.len() < 64 {
                list.push(value.to_string());
            }
        }
    }

    /// The escape that prints `word`, when the sample says: one list has it
    /// (`postgres`, a user and a database, says nothing).
    fn escape_of(&self, word: &str) -> Option<char> {
        let mut named = self.lists().filter(|(list, _)| list.iter().any(|n| n == word));
        match (named.next(), named.next()) {
            (Some((_, e)), None) => Some(e),
            _ => None,
        }
    }

    fn lists(&self) -> impl Iterator<Item = (&[String], char)> {
        [(&self.users[..], 'u'), (&self.databases[..], 'd'), (&self.applications[..], 'a')].into_iter()
    }

    /// Whether `m` reads a name into a field the connection lines never give
    /// it and another one does: `appdb` as the user when only `database=appdb`
    /// was seen.
    fn misread(&self, m: &PrefixMatch<'_>) -> bool {
        [(m.user, 'u'), (m.database, 'd'), (m.application, 'a')].into_iter().any(|(value, escape)| {
            let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else { return false };
            let mut known = self.lists().filter(|(list, _)| list.iter().any(|n| n == value)).map(|(_, e)| e);
            known.next().is_some_and(|first| first != escape && known.all(|e| e != escape))
        })
    }
}

/// Rank of a candidate on a sample; larger is better.
///
/// What PostgreSQL guarantees decides first: the server's own lines carry no
/// session fields, so a candidate that would read them as a client session's
/// (and have its checkpoints refused as forged) is wrong — `(%q%u@%d)` on
/// the checkpointer's `(@)`, or `db=%d ` swallowing `,client=`. Then the
/// candidate whose literal text explains more of the prefixes wins.
/// Session fields are credited when client sessions' lines show them, and
/// assumed (`%m [%p] %q%u@%d ` over `%m [%p] `: it parses the same lines and
/// refuses a session's look-alikes) only when the sample has no session
/// line that could say otherwise; when it has and none shows them, the
/// simpler prefix wins, so that [`Prefix::session_checkable`] never claims
/// a check the log cannot support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    matched: usize,
    /// It would read most of the server's lines as a client session's. Not
    /// a count: under the right prefix a session's look-alike (`RAISE LOG
    /// 'checkpoint starting: time'`) is refused too, and one of them in the
    /// sample must not tip the choice to a prefix that would accept it.
    refuses_server: Reverse<bool>,
    /// Lines whose names it puts in a field the connection lines never
    /// gave them (`%m %u %d ` on `appdb alice` when alice is the user).
    names_misread: Reverse<usize>,
    /// Pids it gives both a server process's lines and a client session's:
    /// one process is one or the other, so a reading that mixes them took
    /// another number (`%l`, `[%l]` where the pid is) for the pid.
    pids_mixed: Reverse<usize>,
    /// Bytes of the matched prefixes that literals (not fields) account for.
    literal: usize,
    /// Client sessions' lines in which it finds session fields.
    sessions_seen: usize,
    /// Session fields after `%q` that no sample line can confirm or refute.
    tail_assumed: bool,
    /// Fewer fields is simpler.
    fields: Reverse<usize>,
    /// Earlier candidates win ties.
    index: Reverse<usize>,
}

fn score(p: &Prefix, sample: &Sample<'_>, index: usize) -> Score {
    let (mut matched, mut literal, mut server, mut refused, mut seen) = (0, 0, 0, 0, 0);
    let (mut sessions, mut misread) = (0, 0);
    let mut writers: HashMap<u32, (bool, bool)> = HashMap::new();
    for line in &sample.lines {
        let Some(caps) = p.re.captures(line.text) else {
            continue;
        };
        let Some(marker) = caps.get(p.marker_group) else {
            continue;
        };
        let Some(m) = p.parse(line.text) else {
            continue;
        };
        matched += 1;
        misread += usize::from(sample.names.misread(&m));
        server += usize::from(line.writer == Writer::Server);
        sessions += usize::from(line.writer == Writer::Session);
        if let Some(pid) = m.pid {
            let seen = writers.entry(pid).or_default();
            seen.0 |= line.writer == Writer::Server;
            seen.1 |= line.writer == Writer::Session;
        }
        match (line.writer, m.is_session() || !server_backend(m.backend_type)) {
            (Writer::Server, true) => refused += 1,
            (Writer::Session, true) => seen += 1,
            _ => {}
        }
        let fields: usize = p.groups.iter().filter_map(|&(_, g)| caps.get(g)).map(|m| m.len()).sum();
        literal += marker.start().saturating_sub(fields);
    }
    Score {
        matched,
        refuses_server: Reverse(refused * 2 > server),
        names_misread: Reverse(misread),
        pids_mixed: Reverse(writers.values().filter(|(server, session)| *server && *session).count()),
        literal,
        sessions_seen: seen,
        // Sessions' lines it cannot read (a failed login's name broken
        // across lines) say nothing against it.
        tail_assumed: p.tail_group.is_some() && p.tail_fields > 0 && sessions == 0,
        fields: Reverse(p.head_fields + p.tail_fields),
        index: Reverse(index),
    }
}

/// `%b` as the server's own processes print it, or not printed.
fn server_backend(backend_type: Option<&str>) -> bool {
    match backend_type.map(str::trim) {
        None | Some("") => true,
        Some(b) => b != "client backend" && BACKEND_TYPES.contains(&b),
    }
}

/// Infer the prefix from the first lines of a file (lines starting with TAB
/// are continuation lines and are skipped). A prefix fits when it parses at
/// least one line and 90% of the lines that some candidate parses.
///
/// Lines that no candidate parses at all do not count against a fit: a
/// client that fails to log in with line breaks in its user name leaves such
/// lines (see [`super::Spanning`]), and a handful of them right after a
/// rotation must not make the new file unreadable.
#[cfg(test)]
pub(crate) fn detect(
    sample: &[&str],
    markers: &[(String, LineLevel)],
    catalog: &Catalog,
) -> Result<Prefix, DetectError> {
    detect_dated_by(sample, markers, catalog, Dates::Prefix)
}

/// What dates a log's lines: the prefix's `%m`/`%t`/`%n`, or the envelope
/// around it (syslog's header), when prefixes without a time are fine too
/// (pgBadger's syslog advice: `db=%d,user=%u,app=%a,client=%h `).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dates {
    Prefix,
    Envelope,
}

/// [`detect`], for lines that `dates` dates.
pub(crate) fn detect_dated_by(
    sample: &[&str],
    markers: &[(String, LineLevel)],
    catalog: &Catalog,
    dates: Dates,
) -> Result<Prefix, DetectError> {
    let lines: Vec<&str> = sample
        .iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .collect();
    if lines.is_empty() {
        return Err(DetectError::NoLines);
    }
    let sample = Sample::new(&lines, markers, catalog)?;
    let mut prefixes = candidates(markers)?;
    prefixes.extend(structural(&sample, dates));
    let best = best_fit(&prefixes, &sample)
        .ok_or_else(|| DetectError::NoMatch { first_line: lines[0].chars().take(200).collect() })?;
    // An inferred winner was compiled with the sample's markers only; the
    // file's later lines may use any.
    let all_levels = marker_alternation(markers)?.1.len();
    match best.levels.len() < all_levels {
        true => Ok(Prefix::compile(best.spec(), markers)?),
        false => Ok(best),
    }
}

/// [`CANDIDATES`] compiled, once per list of markers: detection runs for
/// every new file, and compiling a prefix with every language's markers
/// takes milliseconds.
fn candidates(markers: &[(String, LineLevel)]) -> Result<Vec<Prefix>, PrefixError> {
    use std::hash::{Hash, Hasher};
    type Cache = Vec<(u64, Vec<Prefix>)>;
    static CACHE: std::sync::Mutex<Cache> = std::sync::Mutex::new(Vec::new());
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    markers.hash(&mut hasher);
    let key = hasher.finish();
    let mut cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, compiled)) = cache.iter().find(|(k, _)| *k == key) {
        return Ok(compiled.clone());
    }
    let compiled: Vec<Prefix> =
        CANDIDATES.iter().map(|spec| Prefix::compile(spec, markers)).collect::<Result<_, _>>()?;
    cache.push((key, compiled.clone()));
    Ok(compiled)
}

/// The best-scoring prefix that fits (see [`detect`]); earlier ones win
/// ties. Prefixes with a field come first: a message's own lines (a logged
/// statement holding lines of a log) start with a level word as often as
/// a client likes, and the empty prefix reads them all; only where no
/// prefix with a field fits is the empty one (or a literal) judged on them.
fn best_fit(prefixes: &[Prefix], sample: &Sample<'_>) -> Option<Prefix> {
    let fielded: Vec<&Prefix> = prefixes.iter().filter(|p| p.spec().contains('%')).collect();
    best_of(&fielded, sample).or_else(|| best_of(&prefixes.iter().collect::<Vec<_>>(), sample))
}

fn best_of(prefixes: &[&Prefix], sample: &Sample<'_>) -> Option<Prefix> {
    let parseable = sample.lines.iter().filter(|l| prefixes.iter().any(|p| p.fits(l.text))).count();
    // A prefix that reads the server's own lines as a client's would have
    // every real checkpoint refused as forged: better no prefix at all.
    let fits = |s: &Score| s.matched > 0 && s.matched * 10 >= parseable * 9 && !s.refuses_server.0;
    prefixes
        .iter()
        .enumerate()
        .map(|(i, p)| (score(p, sample, i), p))
        .inspect(|(s, p)| tracing::trace!(spec = p.spec(), score = ?s, "log_line_prefix candidate"))
        .filter(|(s, _)| fits(s))
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, p)| (*p).clone())
}

/// `spec` with `%q` where what a server's line prints ends: the longest
/// start of `spec` that reads all of `server_head` (empty `%v`, `%u` …
/// included), when sessions print more after it.
fn with_session_tail(spec: &str, server_head: &str) -> Option<String> {
    cuts(spec).into_iter().rev().filter(|&k| k < spec.len()).find_map(|k| {
        let mut re = String::from("^");
        super::emit(&super::parse_spec(&spec[..k]), &mut re, &mut Vec::new(), &mut 0);
        re.push('$');
        let reads = Regex::new(&re).is_ok_and(|re| re.is_match(server_head));
        reads.then(|| format!("{}%q{}", &spec[..k], &spec[k..]))
    })
}

/// Byte offsets in `spec` between escapes and literal characters.
fn cuts(spec: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut it = spec.char_indices().peekable();
    while let Some((_, c)) = it.next() {
        if c == '%' {
            // `%`, an optional `-`, digits, the letter.
            while it.next_if(|(_, d)| *d == '-' || d.is_ascii_digit()).is_some() {}
            it.next();
        }
        out.push(it.peek().map_or(spec.len(), |(j, _)| *j));
    }
    out
}

/// `spec` with its `%p` exchanged with each of its `%l`s in turn, when it
/// has one `%p` and the order is not fixed (`[%p-%l]`, `[%l-1]`). A prefix
/// may print the line number twice (`%p line=%l [%l]`), and the one the
/// reading took for the pid may be either.
fn pid_and_line_swapped(spec: &str) -> Vec<String> {
    let fixed = ["%p-%l", "%l-"].iter().any(|f| spec.contains(f));
    if fixed || spec.matches("%p").count() != 1 {
        return Vec::new();
    }
    let pid = spec.find("%p").unwrap_or(0);
    spec.match_indices("%l")
        .map(|(line, _)| {
            let mut s = spec.to_string();
            s.replace_range(pid..pid + 2, "%l");
            s.replace_range(line..line + 2, "%p");
            s
        })
        .collect()
}

/// At most this many distinct prefixes are inferred from one sample.
const MAX_INFERRED: usize = 24;

/// Prefixes inferred from the text before the first marker of the lines:
/// the server's lines first (their prefix shows every literal with the
/// session fields empty), read with names kept literal; then the other
/// lines, read with bare names taken for session fields (`alice  appdb `
/// under `%-10u %-10d `), which the server's lines then confirm or refute.
fn structural(sample: &Sample<'_>, dates: Dates) -> Vec<Prefix> {
    let tokens = Tokens::new(&sample.names);
    let order = [(Writer::Server, false), (Writer::Unknown, false), (Writer::Session, true), (Writer::Unknown, true)];
    let mut specs: Vec<String> = Vec::new();
    let mut server_heads: Vec<&str> = Vec::new();
    'outer: for (writer, names_as_fields) in order {
        for line in sample.lines.iter().filter(|l| l.writer == writer) {
            let Some(head) = line.head else { continue };
            let spec = tokens.infer(head, names_as_fields);
            // `(%q%u@%d)` and `(%u@%d)` read the same session lines; only
            // the server's lines tell them apart.
            let plain = spec.replace("%q", "");
            // What sessions print after all that the server prints: `%q`.
            let tail = (names_as_fields && !spec.contains("%q"))
                .then(|| server_heads.iter().find_map(|h| with_session_tail(&spec, h)))
                .flatten();
            if writer == Writer::Server && server_heads.len() < 4 && !server_heads.contains(&head) {
                server_heads.push(head);
            }
            // `[%l]` after a bare `%p` reads like `%m [%p]` with a `%l` before
            // it: both are tried, and the score's pids_mixed tells them apart.
            let swapped = pid_and_line_swapped(&spec);
            for s in [Some(spec), Some(plain), tail].into_iter().flatten().chain(swapped) {
                if !specs.contains(&s) {
                    specs.push(s);
                }
            }
            if specs.len() >= MAX_INFERRED {
                break 'outer;
            }
        }
    }
    // Without a time there are no events to date, unless an envelope dates
    // them; and a spec inferred from such lines (`%q%u@%d ` from
    // `@postgres FATAL:  …`) is the rest of a prefix that a user name broke
    // across lines, not a prefix. (syslog sends such a rest as a message's
    // second part, which its sample leaves out.)
    let dated = |spec: &&String| dates == Dates::Envelope || ["%m", "%t", "%n"].iter().any(|e| spec.contains(e));
    specs
        .iter()
        .filter(dated)
        .filter(|spec| !literal_digits(spec))
        .filter_map(|spec| Prefix::compile(spec, &sample.markers).ok())
        .collect()
}

/// Whether `spec` has a digit outside its escapes. A digit the sample
/// shows on every line is still one that varies in the log: the hour of a
/// wrapper's time (`2024-01-16T16:…` read as `%xT16:`), a container's id.
/// A prefix inferred with one would read the first hour of a file and
/// refuse the next, so none is ever inferred; a prefix that truly has one
/// is given with `--prefix`. The exception is `%l-1`, syslog's chunk number
/// that prefixes copy (Cloud SQL's `[%l-1]`): it is always 1 in a prefix.
fn literal_digits(spec: &str) -> bool {
    let spec = spec.replace("%l-1", "%l");
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => {
                // `%-10u`: the padding's digits belong to the escape.
                let rest: String = chars.clone().take_while(|c| *c == '-' || c.is_ascii_digit()).collect();
                chars.nth(rest.len());
            }
            c if c.is_ascii_digit() => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
#[test]
fn digits_in_escapes_are_not_literal_digits() {
    assert!(!literal_digits("%m [%p] %-10u %-10d "));
    assert!(!literal_digits("%t [%p]: [%l-1] user=%u,db=%d "));
    assert!(literal_digits("%l-%x-%xT16:%x:%xZ app[%xd89d19dc012d8] lax [info]postgres | %m [%p] "));
    assert!(literal_digits("pg15: %m "));
    assert!(!literal_digits("%% %m "));
}

/// Recognisers for the structural inference.
struct Tokens<'n> {
    ts_ms: Regex,
    ts: Regex,
    epoch: Regex,
    session: Regex,
    bracket_pair: Regex,
    bracket: Regex,
    key: Regex,
    spaced_state: Regex,
    at: Regex,
    host: Regex,
    backend: Regex,
    tag: Regex,
    vxid: Regex,
    query_id: Regex,
    name: Regex,
    digits: Regex,
    names: &'n Names,
}

/// A user or database name as the structural inference reads one: what
/// PostgreSQL prints before authentication, or a run without separators.
/// (It starts with a letter: in `%l@` or `-1@` the digits are a number.)
const NAME: &str = "(?:\\[unknown\\]|[A-Za-z_][^\\s@\\[\\]\\(\\):,/|;=]*|)";

/// What `%b` prints (PostgreSQL 13–18).
const BACKEND_TYPES: &[&str] = &[
    "autovacuum launcher",
    "autovacuum worker",
    "logical replication launcher",
    "logical replication worker",
    "parallel worker",
    "background worker",
    "background writer",
    "client backend",
    "standalone backend",
    "slotsync worker",
    "checkpointer",
    "postmaster",
    "startup",
    "walreceiver",
    "walsender",
    "walsummarizer",
    "walwriter",
    "archiver",
    "io worker",
    "not initialized",
];

/// The session escapes a bare name is given, in order, when the sample's
/// connection lines do not say which it is.
const SESSION_ESCAPES: [char; 4] = ['u', 'd', 'a', 'h'];

/// Whether the field of `escape` (`%p`) can print `value` exactly.
fn prints(escape: &str, value: &str) -> bool {
    let field = escape.chars().nth(1).and_then(super::Field::from_escape);
    field.is_some_and(|f| Regex::new(&format!("^(?:{})$", f.pattern())).is_ok_and(|re| re.is_match(value)))
}

/// The pid in a `%c` (the session's start and pid in hex).
fn pid_of_session(id: &str) -> Option<u32> {
    id.rsplit_once('.').and_then(|(_, pid)| u32::from_str_radix(pid, 16).ok())
}

fn is_session_escape(escape: &str) -> bool {
    matches!(escape, "%u" | "%d" | "%a" | "%h" | "%r")
}

/// What a `key=` in a prefix usually labels.
fn escape_for_key(key: &str) -> Option<&'static str> {
    Some(match key.to_ascii_lowercase().as_str() {
        "user" | "usr" | "u" | "username" | "role" => "%u",
        "db" | "database" | "dbname" | "d" => "%d",
        "app" | "application" | "appname" | "application_name" | "a" => "%a",
        "client" | "host" | "remote" | "remote_host" | "clienthost" | "client_addr" | "addr" | "ip" | "h" => "%h",
        "pid" | "p" => "%p",
        "session" | "sess" | "sessid" | "sid" | "session_id" | "c" => "%c",
        "xid" | "tx" | "txid" | "x" => "%x",
        "vxid" | "v" => "%v",
        "sqlstate" | "state" | "e" | "sql_error_code" => "%e",
        "backend" | "backend_type" | "b" => "%b",
        "line" | "l" => "%l",
        "query_id" | "queryid" | "qid" | "q" => "%Q",
        "tag" | "cmd" | "command" | "i" => "%i",
        _ => return None,
    })
}

impl<'n> Tokens<'n> {
    fn new(names: &'n Names) -> Tokens<'n> {
        let r = |s: &str| Regex::new(s).expect("static regex");
        Tokens {
            ts_ms: r(&format!("^{TS_MS}{ZONE}")),
            ts: r(&format!("^{TS}{ZONE}")),
            epoch: r("^[0-9]{9,11}\\.[0-9]{3}"),
            session: r("^[0-9a-f]{6,}\\.[0-9a-f]{1,8}"),
            bracket_pair: r("^\\[([0-9]+)-([0-9]+)\\]"),
            bracket: r("^\\[[0-9]+\\]"),
            // A value holds a colon only as an IPv6 address (`db=%d: `).
            spaced_state: r("^([A-Za-z_]+) = [0-9A-Z]{5}"),
            key: r(&"^([A-Za-z_]+)=(?:\\[local\\]|\\[unknown\\]|(?:[0-9a-fA-F]{1,4}:|::)[0-9a-fA-F:]*[0-9a-fA-F](?:\\([0-9]+\\))?|(?:{V}+(?:[.\\-]{V}+)*)?)".replace("{V}", "[^,;:|/<>{}\\s\\]\\).\\-]")),
            at: r(&format!("^{NAME}@{NAME}")),
            // [local], IPv4 or IPv6, with an optional (port).
            host: r("^(?:\\[local\\]|[0-9]{1,3}(?:\\.[0-9]{1,3}){3}|(?:[0-9a-fA-F]{1,4}:|::)[0-9a-fA-F:]*[0-9a-fA-F])(?:\\([0-9]+\\))?"),
            backend: r(&format!("^(?:{})\\b", BACKEND_TYPES.join("|"))),
            // What `%i` prints: a command tag, or the backend's activity.
            tag: r("^(?:idle in transaction(?: \\(aborted\\))?|idle|authentication|startup|[A-Z]+(?: [A-Z]+)*)\\b"),
            vxid: r("^[0-9]+/[0-9]+\\b"),
            query_id: r("^-?[0-9]{10,}"),
            // `-` and `.` inside a name, not after it (`%u-`), nor before
            // digits (`%d-%e` prints `shop-00000`).
            name: r("^(?:\\[unknown\\]|[A-Za-z_][A-Za-z0-9_]*(?:[.\\-][A-Za-z_][A-Za-z0-9_]*)*)"),
            digits: r("^[0-9]+"),
            names,
        }
    }

    /// Build a spec from the text before the first marker of one line.
    /// With `names_as_fields`, a bare name (not `key=`, not a time) is a
    /// session field: the escape the sample's connection lines give it, else
    /// the next of `%u %d %a %h`; spaces after it beyond one are its padding.
    fn infer(&self, prefix: &str, names_as_fields: bool) -> String {
        let mut st = InferState::default();
        let mut rest = prefix;
        // Only at a token start (start of text or after a non-alphanumeric).
        let mut boundary = true;
        while let Some(c) = rest.chars().next() {
            let n = match self.token(rest, boundary, names_as_fields, &mut st) {
                Some(n) => n,
                None => {
                    if c == '%' {
                        st.spec.push('%');
                    }
                    st.spec.push(c);
                    boundary = !c.is_alphanumeric();
                    rest = &rest[c.len_utf8()..];
                    continue;
                }
            };
            boundary = true;
            rest = &rest[n..];
            if let Some(padding) = st.padding.take() {
                // `%-10u ` prints the name, spaces up to 10, then the literal space.
                let spaces = rest.len() - rest.trim_start_matches(' ').len();
                if spaces >= 2 {
                    let at = st.spec.rfind('%').unwrap_or(0);
                    st.spec.insert_str(at + 1, &format!("-{}", padding + spaces - 1));
                    rest = &rest[spaces - 1..];
                }
            }
        }
        st.spec
    }

    /// The length of the token at the start of `rest`, its escape pushed
    /// onto the spec; None when `rest` starts with literal text.
    fn token(&self, rest: &str, boundary: bool, names_as_fields: bool, st: &mut InferState) -> Option<usize> {
        if let Some(m) = self.ts_ms.find(rest) {
            let e = if st.have_ts { "%s" } else { "%m" };
            st.have_ts = true;
            return Some(st.push(m.end(), e));
        }
        if let Some(m) = self.ts.find(rest) {
            let e = if st.have_ts { "%s" } else { "%t" };
            st.have_ts = true;
            return Some(st.push(m.end(), e));
        }
        if !boundary {
            return self.numbered(rest, false, st);
        }
        if let Some(m) = self.epoch.find(rest) {
            return Some(st.push(m.end(), "%n"));
        }
        if let Some(m) = self.session.find(rest) {
            // `%c` is the session's start and pid in hex: a number that is
            // not that pid is no `%p` (`%m-%c-%l-`).
            st.session_pid = pid_of_session(m.as_str());
            return Some(st.push(m.end(), "%c"));
        }
        if let Some(m) = self.backend.find(rest) {
            return Some(st.push(m.end(), "%b"));
        }
        // Heroku's `sql_error_code = %e `: a SQLSTATE after a spaced `=`.
        if let Some(c) = self.spaced_state.captures(rest) {
            if escape_for_key(&c[1]) == Some("%e") {
                st.spec.push_str(&c[1]);
                st.spec.push_str(" = ");
                return Some(st.push(c[0].len(), "%e"));
            }
        }
        if let Some(c) = self.key.captures(rest) {
            let key = &c[1];
            // The server's lines print session fields empty: a value after
            // `user=` there is literal text.
            // Other fields' values must look like what they print (`pid=:`
            // is literal text).
            let value = &c[0][key.len() + 1..];
            let fits = |e: &&str| match (value.is_empty(), is_session_escape(e)) {
                (false, true) => names_as_fields,
                (_, true) => true,
                (_, false) => prints(e, value),
            };
            return Some(match escape_for_key(key).filter(fits) {
                Some(e) => {
                    // A labelled pid, line or session is known: a bare
                    // number after `pid=%p` is no pid, after `line=%l` no
                    // line, after `sess=%c` a pid only when it is the
                    // session's.
                    match e {
                        "%p" => st.have_pid = true,
                        "%l" => st.have_line = true,
                        "%c" => st.session_pid = pid_of_session(value),
                        _ => {}
                    }
                    st.spec.push_str(key);
                    st.spec.push('=');
                    st.push(c[0].len(), e)
                }
                // Unknown key: keep it literal and carry on after '='.
                None => st.push(key.len() + 1, &format!("{key}=")),
            });
        }
        if let (false, Some(m)) = (st.have_q, self.at.find(rest)) {
            st.have_q = true;
            return Some(st.push(m.end(), "%q%u@%d"));
        }
        if let (true, Some(m)) = (names_as_fields, self.host.find(rest)) {
            let e = if m.as_str().ends_with(')') { 'r' } else { 'h' };
            return Some(st.session_field(m.end(), e));
        }
        if names_as_fields {
            if let Some(n) = self.session_only(rest, st) {
                return Some(n);
            }
        }
        if let (true, Some(m)) = (names_as_fields, self.name.find(rest)) {
            // `shop-user=alice`: the name ends before a key.
            let mut name = m.as_str();
            if rest[name.len()..].starts_with('=') {
                name = &name[..name.rfind(['-', '.'])?];
            }
            // `psql-client backend`, `psql-alice`: the name ends before a
            // backend type, or after a name the connection lines give.
            let ends = |i: usize| {
                self.backend.is_match(&rest[i + 1..])
                    || (self.names.escape_of(name).is_none() && self.names.escape_of(&name[..i]).is_some())
            };
            if let Some(cut) = name.match_indices(['-', '.']).map(|(i, _)| i).find(|&i| ends(i)) {
                name = &name[..cut];
            }
            let e = self.names.escape_of(name).unwrap_or_else(|| st.next_session_escape());
            return Some(st.session_field(name.len(), e));
        }
        self.numbered(rest, true, st)
    }

    /// `[pid]`, `[pid-line]`, `[line]`, or a number: pid first, line second.
    /// Fields that print only in client sessions and are no session field
    /// for the trust check: a virtual transaction id, a query id, a command tag.
    fn session_only(&self, rest: &str, st: &mut InferState) -> Option<usize> {
        if let Some(m) = self.vxid.find(rest) {
            return Some(st.push(m.end(), "%v"));
        }
        if let Some(m) = self.query_id.find(rest) {
            return Some(st.push(m.end(), "%Q"));
        }
        let m = self.tag.find(rest)?;
        Some(st.push(m.end(), "%i"))
    }

    /// A `[pid]` further on: the bare numbers before it are something else.
    fn bracketed_pid(&self, rest: &str) -> bool {
        rest.char_indices()
            .any(|(i, c)| c == '[' && (self.bracket.is_match(&rest[i..]) || self.bracket_pair.is_match(&rest[i..])))
    }

    /// Bare digits only at a token start.
    fn numbered(&self, rest: &str, boundary: bool, st: &mut InferState) -> Option<usize> {
        if let Some(c) = self.bracket_pair.captures(rest) {
            let len = c[0].len();
            let s = if st.have_pid { format!("[%l-{}]", &c[2]) } else { "[%p-%l]".to_string() };
            st.have_pid = true;
            st.have_line = true;
            return Some(st.push(len, &s));
        }
        if let (Some(m), false) = (self.bracket.find(rest), st.have_pid && st.have_line) {
            let s = if st.have_pid { "[%l]" } else { "[%p]" };
            st.have_line |= st.have_pid;
            st.have_pid = true;
            return Some(st.push(m.end(), s));
        }
        let m = self.digits.find(rest).filter(|_| boundary)?;
        let other_than_the_sessions = st.session_pid.is_some_and(|pid| m.as_str().parse() != Ok(pid));
        let e = if !st.have_pid && !self.bracketed_pid(rest) && !other_than_the_sessions {
            st.have_pid = true;
            "%p"
        } else if !st.have_line {
            st.have_line = true;
            "%l"
        } else if m.len() == 5 && !rest[5..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
            // `%e`: the SQLSTATE, `00000` on every line but errors.
            "%e"
        } else {
            // Some other number (`%x`, or a repeated `%l`): it varies.
            "%x"
        };
        Some(st.push(m.end(), e))
    }
}

/// What [`Tokens::infer`] has seen so far of one prefix.
#[derive(Default)]
struct InferState {
    spec: String,
    have_ts: bool,
    have_pid: bool,
    have_line: bool,
    have_q: bool,
    /// The pid in the line's `%c`, once read.
    session_pid: Option<u32>,
    /// Session escapes already in the spec (`%u`, `%d`, …).
    used: Vec<char>,
    /// The printed width of the session field just pushed (for padding).
    padding: Option<usize>,
}

impl InferState {
    fn push(&mut self, len: usize, text: &str) -> usize {
        self.spec.push_str(text);
        self.used.extend(SESSION_ESCAPES.iter().filter(|&&e| text.contains(&format!("%{e}"))));
        len
    }

    /// The first of `%u %d %a %h` not yet in the spec.
    fn next_session_escape(&self) -> char {
        SESSION_ESCAPES.into_iter().find(|e| !self.used.contains(e)).unwrap_or('a')
    }

    /// A session field's escape for `len` bytes of a name or host.
    fn session_field(&mut self, len: usize, escape: char) -> usize {
        self.push(len, &format!("%{escape}"));
        self.padding = Some(len);
        len
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod random_prefixes_tests;
