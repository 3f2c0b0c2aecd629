//! PostgreSQL's `log_line_prefix`, compiled into one anchored regex that
//! matches the prefix and the (translated) level marker that follows it.
//!
//! `stderr` lines look like `<prefix><marker><message>`, e.g.
//! `2026-11-22 08:04:20.708 UTC [21752] LOG:  checkpoint starting: time`
//! with `log_line_prefix = '%m [%p] '` and marker `LOG:  `.
//!
//! Free-text fields (`%u %d %a %h %r %L %i %b`) match lazily and may be empty;
//! the first reading (leftmost-first, lazy fields, the `%q` tail preferred
//! when it fits) that is followed directly by a marker wins.

mod detect;
mod spanning;

use std::collections::HashMap;

use regex::Regex;

use crate::frame::record::LineLevel;
#[cfg(test)]
pub(crate) use detect::detect;
pub(crate) use detect::{detect_dated_by, Dates};
pub(crate) use spanning::Spanning;

/// Why a `log_line_prefix` could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum PrefixError {
    #[error("no level markers were given (such as \"LOG:  \")")]
    NoMarkers,
    #[error("an empty level marker was given")]
    EmptyMarker,
    #[error("log_line_prefix {spec:?} could not be compiled: {source}")]
    Regex {
        spec: String,
        #[source]
        source: regex::Error,
    },
}

/// Why [`detect()`] could not find the prefix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DetectError {
    #[error(
        "cannot detect the log_line_prefix: the sample has no log lines; pass it with \
         --prefix '<log_line_prefix>' (the value of `SHOW log_line_prefix;` on the server)"
    )]
    NoLines,
    #[error(
        "cannot detect the log_line_prefix from lines like {first_line:?}; pass it with \
         --prefix '<log_line_prefix>' (the value of `SHOW log_line_prefix;` on the server)"
    )]
    NoMatch {
        /// The first sample line, at most 200 characters.
        first_line: String,
    },
    #[error(transparent)]
    Prefix(#[from] PrefixError),
}

/// The fields of one line, borrowed from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PrefixMatch<'a> {
    /// `%t` / `%m`: raw text including the zone. (`%s`, the session start, is
    /// not the log time and is not reported.)
    pub(crate) timestamp: Option<&'a str>,
    /// `%n`.
    pub(crate) epoch: Option<&'a str>,
    /// `%p`.
    pub(crate) pid: Option<u32>,
    /// `%u`.
    pub(crate) user: Option<&'a str>,
    /// `%d`.
    pub(crate) database: Option<&'a str>,
    /// `%a`.
    pub(crate) application: Option<&'a str>,
    /// `%h` or `%r`.
    pub(crate) remote_host: Option<&'a str>,
    /// `%b`.
    pub(crate) backend_type: Option<&'a str>,
    /// `%c`.
    pub(crate) session_id: Option<&'a str>,
    /// `%l`.
    pub(crate) line_num: Option<u64>,
    /// The part after `%q` was present.
    pub(crate) q_tail: bool,
    /// Which marker followed the prefix.
    pub(crate) level: LineLevel,
    /// The text after the marker.
    pub(crate) message: &'a str,
}

impl PrefixMatch<'_> {
    /// A client session wrote the line: the `%q` tail printed, or a field
    /// only sessions fill in (`%u %d %a %h %r`) is not blank.
    pub(crate) fn is_session(&self) -> bool {
        let non_empty = |f: Option<&str>| f.is_some_and(|v| !v.trim().is_empty());
        self.q_tail
            || non_empty(self.user)
            || non_empty(self.database)
            || non_empty(self.application)
            || non_empty(self.remote_host)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Application,
    User,
    Database,
    RemoteHostPort,
    RemoteHost,
    LocalAddr,
    BackendType,
    Pid,
    LeaderPid,
    Timestamp,
    TimestampMs,
    Epoch,
    CommandTag,
    SqlState,
    SessionId,
    LineNum,
    SessionStart,
    Vxid,
    Xid,
    QueryId,
}

const FREE: &str = ".*?";
const ZONE: &str = "(?:[A-Za-z]+|[+-][0-9]{2}(?::?[0-9]{2}){0,2})";
const TS: &str = "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} ";
const TS_MS: &str = "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} ";

impl Field {
    fn from_escape(c: char) -> Option<Field> {
        Some(match c {
            'a' => Field::Application,
            'u' => Field::User,
            'd' => Field::Database,
            'r' => Field::RemoteHostPort,
            'h' => Field::RemoteHost,
            'L' => Field::LocalAddr,
            'b' => Field::BackendType,
            'p' => Field::Pid,
            'P' => Field::LeaderPid,
            't' => Field::Timestamp,
            'm' => Field::TimestampMs,
            'n' => Field::Epoch,
            'i' => Field::CommandTag,
            'e' => Field::SqlState,
            'c' => Field::SessionId,
            'l' => Field::LineNum,
            's' => Field::SessionStart,
            'v' => Field::Vxid,
            'x' => Field::Xid,
            'Q' => Field::QueryId,
            _ => return None,
        })
    }

    fn pattern(self) -> String {
        match self {
            Field::Application
            | Field::User
            | Field::Database
            | Field::RemoteHostPort
            | Field::RemoteHost
            | Field::LocalAddr
            | Field::BackendType
            | Field::CommandTag => FREE.to_string(),
            Field::Pid | Field::LineNum | Field::Xid => "[0-9]+".to_string(),
            Field::LeaderPid => "[0-9]*".to_string(),
            Field::Timestamp | Field::SessionStart => format!("{TS}{ZONE}"),
            Field::TimestampMs => format!("{TS_MS}{ZONE}"),
            Field::Epoch => "[0-9]+\\.[0-9]{3}".to_string(),
            Field::SqlState => "[0-9A-Z]{5}".to_string(),
            Field::SessionId => "[0-9a-f]+\\.[0-9a-f]+".to_string(),
            Field::Vxid => "(?:[0-9]+/[0-9]+)?".to_string(),
            Field::QueryId => "-?[0-9]+".to_string(),
        }
    }

    /// Only client sessions fill it in.
    fn is_session(self) -> bool {
        matches!(
            self,
            Field::Application
                | Field::User
                | Field::Database
                | Field::RemoteHostPort
                | Field::RemoteHost
                | Field::BackendType
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Field(Field, i32),
    Q,
}

/// Split a `log_line_prefix` like `elog.c`'s `log_status_format()` does.
fn parse_spec(spec: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut it = spec.chars();
    'outer: while let Some(c) = it.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        let Some(mut e) = it.next() else { break };
        if e == '%' {
            lit.push('%');
            continue;
        }
        let mut padding: i32 = 0;
        if e <= '9' {
            // process_log_prefix_padding(): [-]digits, and a format that ends
            // inside the padding stops the whole prefix.
            let mut sign = 1;
            if e == '-' {
                sign = -1;
                match it.next() {
                    Some(n) => e = n,
                    None => break,
                }
            }
            let mut p: i32 = 0;
            while let Some(d) = e.to_digit(10).filter(|_| e.is_ascii_digit()) {
                p = p.saturating_mul(10).saturating_add(d as i32);
                match it.next() {
                    Some(n) => e = n,
                    None => break 'outer,
                }
            }
            padding = sign * p;
        }
        if e == 'q' {
            flush(&mut lit, &mut out);
            out.push(Piece::Q);
        } else if let Some(f) = Field::from_escape(e) {
            flush(&mut lit, &mut out);
            out.push(Piece::Field(f, padding));
        }
        // Unknown escapes print nothing.
    }
    flush(&mut lit, &mut out);
    out
}

fn flush(lit: &mut String, out: &mut Vec<Piece>) {
    if !lit.is_empty() {
        out.push(Piece::Lit(std::mem::take(lit)));
    }
}

/// The regex alternation of the markers, longest first (ties: lexicographic).
fn marker_alternation(markers: &[(String, LineLevel)]) -> Result<(String, HashMap<String, LineLevel>), PrefixError> {
    if markers.is_empty() {
        return Err(PrefixError::NoMarkers);
    }
    let mut levels: HashMap<String, LineLevel> = HashMap::with_capacity(markers.len());
    for (text, level) in markers {
        if text.is_empty() {
            return Err(PrefixError::EmptyMarker);
        }
        levels.entry(text.clone()).or_insert(*level);
    }
    let mut texts: Vec<&String> = levels.keys().collect();
    texts.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    let alt = texts.iter().map(|t| regex::escape(t)).collect::<Vec<_>>().join("|");
    Ok((alt, levels))
}

/// A compiled `log_line_prefix`.
#[derive(Debug, Clone)]
pub struct Prefix {
    spec: String,
    re: Regex,
    /// Capture group of each field, in spec order.
    groups: Vec<(Field, usize)>,
    tail_group: Option<usize>,
    marker_group: usize,
    levels: HashMap<String, LineLevel>,
    session_checkable: bool,
    /// Fields before `%q` / after `%q` (for [`detect`]'s ranking).
    head_fields: usize,
    tail_fields: usize,
    /// Set when a client can break the prefix across lines (`%u`, `%d`);
    /// built on first use (three more large regexes: detection compiles
    /// dozens of candidate prefixes that are never read with).
    spanning: std::sync::Arc<std::sync::OnceLock<Option<Spanning>>>,
    /// What [`Spanning::build`] needs.
    pieces: Vec<Piece>,
    q: Option<usize>,
    markers_alt: std::sync::Arc<str>,
    longest_marker: usize,
    /// The regex up to (not including) the marker group.
    head_re: std::sync::Arc<str>,
    /// [`Prefix::may_be_secondary`]'s regex, built on first use.
    secondary: std::sync::Arc<std::sync::OnceLock<Option<Regex>>>,
}

impl Prefix {
    /// `markers`: the literal texts that may follow the prefix, with their
    /// level, e.g. `("LOG:  ", Primary(Log))`, `("ASTUCE :  ", Secondary(Hint))`.
    pub fn compile(spec: &str, markers: &[(String, LineLevel)]) -> Result<Prefix, PrefixError> {
        let (alt, levels) = marker_alternation(markers)?;
        let pieces = parse_spec(spec);
        let q = pieces.iter().position(|p| *p == Piece::Q);
        let (head, tail) = match q {
            Some(i) => (&pieces[..i], &pieces[i + 1..]),
            None => (&pieces[..], &pieces[..0]),
        };

        let mut re = String::from("(?s)^");
        let mut groups = Vec::new();
        let mut ngroups = 0usize;
        emit(head, &mut re, &mut groups, &mut ngroups);
        let tail_outputs = tail.iter().any(|p| !matches!(p, Piece::Q));
        let tail_group = if tail_outputs {
            ngroups += 1;
            let g = ngroups;
            re.push('(');
            emit(tail, &mut re, &mut groups, &mut ngroups);
            re.push_str(")?");
            Some(g)
        } else {
            None
        };
        ngroups += 1;
        let marker_group = ngroups;
        let head_re: std::sync::Arc<str> = re.as_str().into();
        re.push('(');
        re.push_str(&alt);
        re.push(')');

        let re = Regex::new(&re).map_err(|source| PrefixError::Regex { spec: spec.to_string(), source })?;
        let longest_marker = levels.keys().map(String::len).max().unwrap_or(0);
        let count = |ps: &[Piece]| ps.iter().filter(|p| matches!(p, Piece::Field(..))).count();
        let session_checkable =
            tail_outputs || pieces.iter().any(|p| matches!(p, Piece::Field(f, _) if f.is_session()));
        Ok(Prefix {
            spec: spec.to_string(),
            re,
            groups,
            tail_group,
            marker_group,
            levels,
            session_checkable,
            head_fields: count(head),
            tail_fields: count(tail),
            spanning: Default::default(),
            pieces,
            q,
            markers_alt: alt.into(),
            longest_marker,
            head_re,
            secondary: Default::default(),
        })
    }

    /// `line` has no trailing newline. None when the line does not start with
    /// this prefix followed by a marker.
    pub(crate) fn parse<'a>(&self, line: &'a str) -> Option<PrefixMatch<'a>> {
        let caps = self.re.captures(line)?;
        let marker = caps.get(self.marker_group)?;
        let level = *self.levels.get(marker.as_str())?;
        let mut m = PrefixMatch {
            timestamp: None,
            epoch: None,
            pid: None,
            user: None,
            database: None,
            application: None,
            remote_host: None,
            backend_type: None,
            session_id: None,
            line_num: None,
            q_tail: self.tail_group.is_some_and(|g| caps.get(g).is_some()),
            level,
            message: &line[marker.end()..],
        };
        for &(field, g) in &self.groups {
            let Some(c) = caps.get(g) else { continue };
            let v = c.as_str();
            let slot = match field {
                Field::Timestamp | Field::TimestampMs => &mut m.timestamp,
                Field::Epoch => &mut m.epoch,
                Field::User => &mut m.user,
                Field::Database => &mut m.database,
                Field::Application => &mut m.application,
                Field::RemoteHost | Field::RemoteHostPort => &mut m.remote_host,
                Field::BackendType => &mut m.backend_type,
                Field::SessionId => &mut m.session_id,
                Field::Pid => {
                    if m.pid.is_none() {
                        m.pid = v.parse().ok();
                    }
                    continue;
                }
                Field::LineNum => {
                    if m.line_num.is_none() {
                        m.line_num = v.parse().ok();
                    }
                    continue;
                }
                Field::LeaderPid
                | Field::LocalAddr
                | Field::CommandTag
                | Field::SqlState
                | Field::SessionStart
                | Field::Vxid
                | Field::Xid
                | Field::QueryId => continue,
            };
            if slot.is_none() {
                *slot = Some(v);
            }
        }
        Some(m)
    }

    /// Whether `line` starts with this prefix and a marker ([`Prefix::parse`]
    /// would find it), without extracting the fields: cheaper.
    pub(crate) fn fits(&self, line: &str) -> bool {
        self.re.is_match(line)
    }

    /// False when [`Prefix::parse`] cannot read `line` as a secondary line
    /// (DETAIL, HINT, CONTEXT, …): a match test, without the captures that
    /// make `parse` costly. Framing asks it of the line after every entry,
    /// which is nearly always the next entry's first line, parsed again then.
    /// Exact where it says false: a reading of `line` that ends at a
    /// secondary marker is a match of the prefix with only those markers.
    pub(crate) fn may_be_secondary(&self, line: &str) -> bool {
        let re = self.secondary.get_or_init(|| {
            let alt = self.levels.iter().filter(|(_, l)| matches!(l, LineLevel::Secondary(_))).map(|(t, _)| t);
            let alt = alt.map(|t| regex::escape(t)).collect::<Vec<_>>().join("|");
            (!alt.is_empty()).then(|| Regex::new(&format!("{}(?:{alt})", self.head_re)).ok()).flatten()
        });
        // Without its regex (no secondary marker, or one that did not
        // build, which cannot be as the full regex did) nothing is ruled out.
        re.as_ref().is_none_or(|re| re.is_match(line))
    }

    /// The `log_line_prefix` this was compiled from.
    pub(crate) fn spec(&self) -> &str {
        &self.spec
    }

    /// True when the prefix can show that a line came from a client session:
    /// it has `%u`, `%d`, `%a`, `%h`, `%r` or `%b`, or a `%q` followed by
    /// something that prints.
    pub(crate) fn session_checkable(&self) -> bool {
        self.session_checkable
    }

    /// The fields every line carries: those before `%q` (what follows it
    /// is printed for client sessions only, never for the checkpointer).
    fn head(&self) -> impl Iterator<Item = Field> + '_ {
        self.pieces.iter().take_while(|p| !matches!(p, Piece::Q)).filter_map(|p| match p {
            Piece::Field(f, _) => Some(*f),
            _ => None,
        })
    }

    /// Every line, the checkpointer's included, carries its time (`%m`, `%t` or `%n`).
    pub(crate) fn dates_every_line(&self) -> bool {
        self.head().any(|f| matches!(f, Field::Timestamp | Field::TimestampMs | Field::Epoch))
    }

    /// Every line, the checkpointer's included, carries its process id (`%p`).
    pub(crate) fn names_every_process(&self) -> bool {
        self.head().any(|f| f == Field::Pid)
    }

    /// Present when the prefix prints `%u` or `%d`, which a client can fill
    /// with line breaks before it has even logged in (see [`Spanning`]).
    pub(crate) fn spanning(&self) -> Option<&Spanning> {
        self.spanning
            .get_or_init(|| Spanning::build(&self.pieces, self.q, &self.markers_alt, self.longest_marker))
            .as_ref()
    }
}

fn emit(pieces: &[Piece], re: &mut String, groups: &mut Vec<(Field, usize)>, ngroups: &mut usize) {
    for p in pieces {
        match p {
            Piece::Lit(s) => re.push_str(&regex::escape(s)),
            // A second %q has no effect.
            Piece::Q => {}
            Piece::Field(f, padding) => {
                *ngroups += 1;
                groups.push((*f, *ngroups));
                // Padding: right-aligned (`%10p`) puts spaces before, left-aligned
                // (`%-10u`) after the value; the capture excludes them.
                if *padding > 0 {
                    re.push_str(" *");
                }
                re.push('(');
                re.push_str(&f.pattern());
                re.push(')');
                if *padding < 0 {
                    re.push_str(" *");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::record::{LogSeverity, Secondary};

    fn markers() -> Vec<(String, LineLevel)> {
        use LineLevel::{Primary as P, Secondary as S};
        let list: &[(&str, LineLevel)] = &[
            ("LOG:  ", P(LogSeverity::Log)),
            ("ERROR:  ", P(LogSeverity::Error)),
            ("WARNING:  ", P(LogSeverity::Warning)),
            ("FATAL:  ", P(LogSeverity::Fatal)),
            ("PANIC:  ", P(LogSeverity::Panic)),
            ("NOTICE:  ", P(LogSeverity::Notice)),
            ("INFO:  ", P(LogSeverity::Info)),
            ("DEBUG:  ", P(LogSeverity::Debug)),
            ("DETAIL:  ", S(Secondary::Detail)),
            ("HINT:  ", S(Secondary::Hint)),
            ("CONTEXT:  ", S(Secondary::Context)),
            ("STATEMENT:  ", S(Secondary::Statement)),
            ("QUERY:  ", S(Secondary::Query)),
            ("LOCATION:  ", S(Secondary::Location)),
            ("BACKTRACE:  ", S(Secondary::Backtrace)),
            // de
            ("FEHLER:  ", P(LogSeverity::Error)),
            ("WARNUNG:  ", P(LogSeverity::Warning)),
            ("TIPP:  ", S(Secondary::Hint)),
            ("ANWEISUNG:  ", S(Secondary::Statement)),
            ("ZUSAMMENHANG:  ", S(Secondary::Context)),
            // fr
            ("ERREUR:  ", P(LogSeverity::Error)),
            ("ATTENTION:  ", P(LogSeverity::Warning)),
            ("ASTUCE :  ", S(Secondary::Hint)),
            ("DÉTAIL:  ", S(Secondary::Detail)),
            ("DÉTAIL : ", S(Secondary::Detail)),
            ("CONTEXTE :  ", S(Secondary::Context)),
            ("INSTRUCTION :  ", S(Secondary::Statement)),
            // ja
            ("ヒント:  ", S(Secondary::Hint)),
            ("詳細:  ", S(Secondary::Detail)),
            ("エラー:  ", P(LogSeverity::Error)),
            ("文:  ", S(Secondary::Statement)),
            // tr, without the two spaces
            ("İPUCU:", S(Secondary::Hint)),
            // duplicate: first wins
            ("LOG:  ", P(LogSeverity::Debug)),
        ];
        list.iter().map(|(t, l)| (t.to_string(), *l)).collect()
    }

    fn compile(spec: &str) -> Prefix {
        Prefix::compile(spec, &markers()).unwrap()
    }

    const LOG: LineLevel = LineLevel::Primary(LogSeverity::Log);
    const HINT: LineLevel = LineLevel::Secondary(Secondary::Hint);

    // Snippets of the fixture logs (log_line_prefix in the comment).
    // "%m [%p] %q%u@%d "
    const DEBIAN: &[&str] = &[
        "2026-11-22 08:04:20.708 UTC [21752] LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",
        "2026-11-22 08:04:20.721 UTC [21762] LOG:  database system was shut down at 2026-11-22 08:04:20 UTC",
        "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres CONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE",
        "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres STATEMENT:  DO $$ BEGIN RAISE LOG 'checkpoint starting: wal'; END $$;",
        "2026-11-22 08:08:15.258 UTC [24978] postgres@postgres ERROR:  invalid input syntax for type integer: \"checkpoint starting: wal\" at character 8",
        "2026-11-22 08:08:41.767 UTC [25160] LOG:  database system is ready to accept connections",
    ];
    // "%m [%p] %b "
    const BACKEND: &[&str] = &[
        "2026-11-22 08:08:08.907 UTC [24682] postmaster LOG:  listening on IPv4 address \"127.0.0.1\", port 55440",
        "2026-11-22 08:08:08.927 UTC [24692] startup LOG:  database system was shut down at 2026-11-22 08:08:08 UTC",
        "2026-11-22 08:08:14.938 UTC [24690] checkpointer HINT:  Consider increasing the configuration parameter \"max_wal_size\".",
        "2026-11-22 08:08:14.980 UTC [24920] client backend CONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE",
        "2026-11-22 08:08:14.981 UTC [24920] client backend LOG:  statement: SELECT 'forged:",
    ];
    // "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h "
    const PGBADGER: &[&str] = &[
        "2026-11-22 03:04:20 EST [21710]: [3-1] user=,db=,app=,client= LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu",
        "2026-11-22 03:04:20 EST [21747]: [1-1] user=,db=,app=,client= LOG:  database system was shut down at 2026-11-22 03:04:20 EST",
        "2026-11-22 08:29:00 UTC [2090]: [6-1] user=,db=,app=,client= LOG:  database system is ready to accept connections",
    ];
    // "%m [%p] %q%u@%d " with lc_messages de / fr / ja
    const I18N: &[&str] = &[
        "2026-11-22 09:09:04.611 CET [25665] LOG:  PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit startet",
        "2026-11-22 09:09:06.886 CET [25667] TIPP:  Erhöhen Sie eventuell den Konfigurationsparameter »max_wal_size«.",
        "2026-11-22 09:09:07.373 CET [25699] LOG:  les points de vérification (checkpoints) arrivent trop fréquemment",
        "2026-11-22 09:09:07.373 CET [25699] ASTUCE :  Augmentez le paramètre de configuration « max_wal_size ».",
        "2026-11-22 17:09:04.924 JST [25708] LOG:  データベースシステムは 2026-11-22 17:09:04 JST にシャットダウンしました",
        "2026-11-22 17:09:07.330 JST [25706] ヒント:  設定パラメータ\"max_wal_size\"を増やすことを検討してください",
        "2026-11-22 13:53:00.442 IST [32382] LOG:  starting PostgreSQL 17.10 on x86_64-pc-linux-gnu",
    ];

    #[test]
    fn default_debian_prefix() {
        let p = compile("%m [%p] %q%u@%d ");
        assert!(p.session_checkable());
        assert_eq!(p.spec(), "%m [%p] %q%u@%d ");
        for l in DEBIAN.iter().chain(I18N) {
            assert!(p.parse(l).is_some(), "{l}");
        }
        let m = p.parse(DEBIAN[1]).unwrap();
        assert_eq!(m.timestamp, Some("2026-11-22 08:04:20.721 UTC"));
        assert_eq!(m.pid, Some(21762));
        assert_eq!(m.level, LOG);
        assert!(!m.q_tail);
        assert_eq!((m.user, m.database), (None, None));
        assert_eq!(m.message, "database system was shut down at 2026-11-22 08:04:20 UTC");

        let m = p.parse(DEBIAN[4]).unwrap();
        assert!(m.q_tail);
        assert_eq!((m.user, m.database), (Some("postgres"), Some("postgres")));
        assert_eq!(m.level, LineLevel::Primary(LogSeverity::Error));
        assert!(m.message.starts_with("invalid input syntax"));

        let m = p.parse(I18N[1]).unwrap();
        assert_eq!(m.level, HINT);
        assert_eq!(m.timestamp, Some("2026-11-22 09:09:06.886 CET"));
        let m = p.parse(I18N[3]).unwrap();
        assert_eq!(m.level, HINT);
        assert!(m.message.starts_with("Augmentez"));
        let m = p.parse(I18N[5]).unwrap();
        assert_eq!(m.level, HINT);
        assert_eq!(m.timestamp, Some("2026-11-22 17:09:07.330 JST"));
    }

    #[test]
    fn backend_type() {
        let p = compile("%m [%p] %b ");
        assert!(p.session_checkable());
        for l in BACKEND {
            assert!(p.parse(l).is_some(), "{l}");
        }
        assert_eq!(p.parse(BACKEND[2]).unwrap().backend_type, Some("checkpointer"));
        let m = p.parse(BACKEND[4]).unwrap();
        assert_eq!(m.backend_type, Some("client backend"));
        assert_eq!(m.message, "statement: SELECT 'forged:");
        // The default prefix does not fit these lines.
        assert!(compile("%m [%p] ").parse(BACKEND[0]).is_none());
        assert!(!compile("%m [%p] ").session_checkable());
    }

    #[test]
    fn pgbadger_empty_fields() {
        let p = compile("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
        for l in PGBADGER {
            assert!(p.parse(l).is_some(), "{l}");
        }
        let m = p.parse(PGBADGER[0]).unwrap();
        assert_eq!(m.timestamp, Some("2026-11-22 03:04:20 EST"));
        assert_eq!(m.pid, Some(21710));
        assert_eq!(m.line_num, Some(3));
        assert_eq!(m.user, Some(""));
        assert_eq!(m.database, Some(""));
        assert_eq!(m.application, Some(""));
        assert_eq!(m.remote_host, Some(""));
        assert!(!m.q_tail);
        let s = "2026-11-22 03:05:00 EST [22000]: [1-1] user=alice,db=shop,app=psql,client=10.0.0.7 ERROR:  boom";
        let m = p.parse(s).unwrap();
        assert_eq!(m.user, Some("alice"));
        assert_eq!(m.database, Some("shop"));
        assert_eq!(m.application, Some("psql"));
        assert_eq!(m.remote_host, Some("10.0.0.7"));
        assert_eq!(m.message, "boom");
    }

    #[test]
    fn hostile_application_name() {
        let p = compile("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
        let s = "2026-11-22 03:05:00 EST [22000]: [1-1] user=eve,db=x,app=LOG:  checkpoint starting: time,client=[local] LOG:  statement: select 1";
        let m = p.parse(s).unwrap();
        assert_eq!(m.application, Some("LOG:  checkpoint starting: time"));
        assert_eq!(m.remote_host, Some("[local]"));
        assert_eq!(m.message, "statement: select 1");

        // A user name that imitates a background line is still a session line:
        // the %q tail is preferred when it fits.
        let p = compile("%m [%p] %q%u@%d ");
        let s =
            "2026-11-22 08:08:15.253 UTC [24978] LOG:  checkpoint starting: time@postgres LOG:  statement: select 1";
        let m = p.parse(s).unwrap();
        assert!(m.q_tail);
        assert_eq!(m.user, Some("LOG:  checkpoint starting: time"));
        assert_eq!(m.message, "statement: select 1");

        // %a last: the first marker after a lazy match ends the prefix (accepted
        // limitation), but the line is still recognised as a session line.
        let p = compile("%m [%p] %q%u@%d %a ");
        let s = "2026-11-22 08:08:15.253 UTC [24978] eve@db my app LOG:  fake LOG:  real";
        let m = p.parse(s).unwrap();
        assert!(m.q_tail);
        assert_eq!(m.application, Some("my app"));
        assert_eq!(m.message, "fake LOG:  real");
    }

    #[test]
    fn q_with_and_without_tail() {
        let p = compile("%m [%p] %q[user=%u,db=%d,app=%a] ");
        let bg = "2026-11-22 08:04:20.708 UTC [21752] LOG:  checkpoint starting: time";
        let m = p.parse(bg).unwrap();
        assert!(!m.q_tail);
        assert_eq!(m.user, None);
        assert_eq!(m.application, None);
        let sess = "2026-11-22 08:04:20.708 UTC [21800] [user=bob,db=app,app=[unknown]] LOG:  connection authorized";
        let m = p.parse(sess).unwrap();
        assert!(m.q_tail);
        assert_eq!(m.user, Some("bob"));
        assert_eq!(m.application, Some("[unknown]"));
        // Nothing after %q: nothing optional, nothing to tell sessions apart.
        let p = compile("%m [%p] %q");
        assert!(!p.session_checkable());
        assert!(!p.parse(bg).unwrap().q_tail);
        // Text after %q only is enough to tell a session.
        let p = compile("%m [%p] %qsession ");
        assert!(p.session_checkable());
        assert!(p.parse(bg).is_some());
        assert!(p.parse("2026-11-22 08:04:20.708 UTC [1] session LOG:  x").unwrap().q_tail);
    }

    #[test]
    fn padding() {
        let p = compile("%m [%10p] %-10u|%-8d|%5a| ");
        let s = "2026-11-22 08:04:20.708 UTC [     21752] bob       |shop    | psql| LOG:  hello";
        let m = p.parse(s).unwrap();
        assert_eq!(m.pid, Some(21752));
        assert_eq!(m.user, Some("bob"));
        assert_eq!(m.database, Some("shop"));
        assert_eq!(m.application, Some("psql"));
        assert_eq!(m.message, "hello");
        // Background process: padded fields print spaces only.
        let s = "2026-11-22 08:04:20.708 UTC [     21752]           |        |     | LOG:  hello";
        let m = p.parse(s).unwrap();
        assert_eq!(m.user, Some(""));
        assert_eq!(m.database, Some(""));
        assert_eq!(m.application, Some(""));
        // Longer than the width: no padding at all.
        let s = "2026-11-22 08:04:20.708 UTC [1234567890123] a_very_long_user|shop    |application| LOG:  x";
        let m = p.parse(s).unwrap();
        assert_eq!(m.pid, None, "does not fit u32");
        assert_eq!(m.user, Some("a_very_long_user"));
        assert_eq!(m.application, Some("application"));
    }

    /// `%P`: a parallel worker prints its leader's pid there, every other
    /// process nothing. The line's pid stays the worker's own.
    #[test]
    fn a_parallel_workers_leader_pid() {
        let p = compile("%m [%p:%P] %q%u@%d ");
        let worker = "2026-11-22 08:10:00.120 UTC [24990:24978] postgres@shop ERROR:  division by zero";
        let m = p.parse(worker).unwrap();
        assert_eq!((m.pid, m.user, m.database), (Some(24990), Some("postgres"), Some("shop")));
        assert_eq!(m.message, "division by zero");
        let leader = "2026-11-22 08:10:00.121 UTC [24978:] postgres@shop CONTEXT:  parallel worker";
        let m = p.parse(leader).unwrap();
        assert_eq!(
            (m.pid, m.level, m.message),
            (Some(24978), LineLevel::Secondary(Secondary::Context), "parallel worker")
        );
        let m = p.parse("2026-11-22 08:10:05.002 UTC [24690:] LOG:  checkpoint starting: time").unwrap();
        assert_eq!((m.pid, m.q_tail), (Some(24690), false));
        // A leader pid is a number.
        assert!(p.parse("2026-11-22 08:10:00.120 UTC [24990:main] postgres@shop ERROR:  x").is_none());
    }

    /// A field without padding is read with the spaces a client put in it
    /// (`SET application_name = ' pgAdmin 4 '`), and where the prefix has no
    /// space, a line with one is not read.
    #[test]
    fn unpadded_fields_keep_their_spaces() {
        let p = compile("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
        let s = "2026-11-22 03:05:00 EST [22000]: [2-1] user=alice,db=shop,app= pgAdmin 4 ,client=10.0.0.7 LOG:  statement: select 1";
        let m = p.parse(s).unwrap();
        assert_eq!(m.application, Some(" pgAdmin 4 "));
        assert_eq!((m.user, m.database, m.remote_host), (Some("alice"), Some("shop"), Some("10.0.0.7")));
        let p = compile("%m [%p] %q%u@%d ");
        assert!(p.parse("  2026-11-22 08:04:20.708 UTC [21752] LOG:  checkpoint starting: time").is_none());
        assert!(p.parse("2026-11-22 08:04:20.708 UTC  [21752] LOG:  checkpoint starting: time").is_none());
        assert!(p.parse("2026-11-22 08:04:20.708 UTC [ 21752] LOG:  checkpoint starting: time").is_none());
        let m = p.parse("2026-11-22 08:08:15.253 UTC [24978]  eve@shop LOG:  statement: select 1").unwrap();
        assert_eq!((m.user, m.database), (Some(" eve"), Some("shop")));
    }

    /// A line is a session's when the `%q` part printed or any one of the
    /// session fields is not blank: each alone decides it.
    #[test]
    fn each_session_field_alone_makes_a_session_line() {
        let p = compile("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
        let line = |fields: &str| format!("2026-11-22 03:05:00 EST [22000]: [1-1] {fields} LOG:  connection received");
        for (fields, session) in [
            ("user=,db=,app=,client=", false),
            ("user=alice,db=,app=,client=", true),
            ("user=,db=shop,app=,client=", true),
            ("user=,db=,app=psql,client=", true),
            ("user=,db=,app=,client=[local]", true),
            ("user=,db=,app= ,client=", false),
        ] {
            let l = line(fields);
            assert_eq!(p.parse(&l).unwrap().is_session(), session, "{l}");
        }
        // `%r` fills the same field as `%h`.
        let p = compile("%t:%r:%u@%d:[%p]:");
        let m = p.parse("2026-11-22 03:05:00 UTC:10.0.0.7(51234):@:[22000]:LOG:  connection received").unwrap();
        assert_eq!((m.remote_host, m.is_session()), (Some("10.0.0.7(51234)"), true));
        let m = p.parse("2026-11-22 03:05:00 UTC::@:[2090]:LOG:  checkpoint starting: time").unwrap();
        assert!(!m.is_session());
        // The `%q` part alone, with no field in it.
        let p = compile("%m [%p] %qsession ");
        assert!(p.parse("2026-11-22 08:04:20.708 UTC [1] session LOG:  x").unwrap().is_session());
        assert!(!p.parse("2026-11-22 08:04:20.708 UTC [1] LOG:  x").unwrap().is_session());
    }

    /// `fits` says yes exactly where `parse` reads the line.
    #[test]
    fn fits_where_parse_reads() {
        let p = compile("%m [%p] %q%u@%d ");
        for l in DEBIAN.iter().chain(I18N) {
            assert!(p.fits(l), "{l}");
        }
        for l in BACKEND.iter().chain(PGBADGER).chain(&["", "\tcontinued", "LOG:  x"]) {
            assert!(!p.fits(l), "{l}");
            assert!(p.parse(l).is_none(), "{l}");
        }
    }

    #[test]
    fn spec_mechanics() {
        // %% is a literal; unknown escapes print nothing; a trailing % or padding is ignored.
        let p = compile("%%%p%% %Z%y[%l] %");
        let m = p.parse("%42% [7] LOG:  x").unwrap();
        assert_eq!((m.pid, m.line_num), (Some(42), Some(7)));
        assert!(compile("%p %-").parse("1 LOG:  x").is_some());
        assert!(compile("%p %12").parse("1 LOG:  x").is_some());
        // "% p": a space is an unknown escape, then a literal 'p'.
        assert!(compile("% p ").parse("p LOG:  x").is_some());
        // Regex metacharacters in literals.
        let p = compile("(%p) .*+?^$ ");
        assert!(p.parse("(3) .*+?^$ LOG:  x").is_some());
        assert!(p.parse("(3) abcdef LOG:  x").is_none());
        assert_eq!(
            parse_spec("%-10u%5p%q%%"),
            vec![Piece::Field(Field::User, -10), Piece::Field(Field::Pid, 5), Piece::Q, Piece::Lit("%".into())]
        );
    }

    #[test]
    fn all_escapes() {
        let spec = "%a|%u|%d|%r|%h|%L|%b|%p|%P|%t|%m|%n|%i|%e|%c|%l|%s|%v|%x|%Q| ";
        let p = compile(spec);
        let s = "psql|bob|shop|10.0.0.7(51234)|10.0.0.7|10.0.0.1|client backend|4242||2026-11-22 08:04:20 UTC|2026-11-22 08:04:20.708 UTC|1763798660.708|SELECT|42P01|6740b1c4.1092|12|2026-11-22 08:00:00 UTC|3/37|0|-1234567890123| ERROR:  relation does not exist";
        let m = p.parse(s).unwrap();
        assert_eq!(m.application, Some("psql"));
        assert_eq!(m.user, Some("bob"));
        assert_eq!(m.database, Some("shop"));
        assert_eq!(m.remote_host, Some("10.0.0.7(51234)"));
        assert_eq!(m.backend_type, Some("client backend"));
        assert_eq!(m.pid, Some(4242));
        assert_eq!(m.timestamp, Some("2026-11-22 08:04:20 UTC"));
        assert_eq!(m.epoch, Some("1763798660.708"));
        assert_eq!(m.session_id, Some("6740b1c4.1092"));
        assert_eq!(m.line_num, Some(12));
        assert_eq!(m.message, "relation does not exist");
        // Background process: empty %v, %P.
        let s = "||||||checkpointer|4243||2026-11-22 08:04:20 UTC|2026-11-22 08:04:20.708 UTC|1763798660.708||00000|6740b1c4.1093|1|2026-11-22 08:00:00 UTC||0|0| LOG:  checkpoint starting: time";
        let m = p.parse(s).unwrap();
        assert_eq!(m.user, Some(""));
        assert_eq!(m.backend_type, Some("checkpointer"));
        assert_eq!(m.message, "checkpoint starting: time");
    }

    #[test]
    fn epoch_and_numeric_zones() {
        let p = compile("%n [%p] ");
        let m = p.parse("1763798660.708 [21752] LOG:  x").unwrap();
        assert_eq!(m.epoch, Some("1763798660.708"));
        assert_eq!(m.timestamp, None);
        assert!(p.parse("1763798660 [21752] LOG:  x").is_none());
        let p = compile("%m [%p] ");
        for z in ["-03", "+0530", "+05:30", "ACDT", "+00"] {
            let l = format!("2026-11-22 10:00:00.000 {z} [1] LOG:  x");
            assert_eq!(p.parse(&l).unwrap().timestamp, Some(&l[..23 + 1 + z.len()]), "{l}");
        }
        let p = compile("%t [%p] ");
        assert!(p.parse("2026-11-22 10:00:00 -03 [1] LOG:  x").is_some());
        assert!(p.parse("2026-11-22 10:00:00.000 -03 [1] LOG:  x").is_none());
    }

    #[test]
    fn no_match() {
        let p = compile("%m [%p] ");
        assert!(p.parse("").is_none());
        assert!(p.parse("\tcontinuation LOG:  x").is_none());
        assert!(p.parse("2026-11-22 08:04:20.708 UTC [21752] SOMETHING:  x").is_none());
        assert!(p.parse("2026-11-22 08:04:20.708 UTC [abc] LOG:  x").is_none());
        assert!(p.parse("2026-11-22 08:04:20 UTC [1] LOG:  x").is_none());
        assert!(p.parse("xx 2026-11-22 08:04:20.708 UTC [1] LOG:  x").is_none());
        // Marker without its two spaces is not the marker.
        assert!(p.parse("2026-11-22 08:04:20.708 UTC [1] LOG: x").is_none());
        // Custom marker without spaces.
        let m = p.parse("2026-11-22 08:04:20.708 UTC [1] İPUCU:x").unwrap();
        assert_eq!((m.level, m.message), (HINT, "x"));
        // Empty prefix (9.6 default).
        let p = compile("");
        assert!(!p.session_checkable());
        assert_eq!(p.parse("LOG:  checkpoint starting: time").unwrap().message, "checkpoint starting: time");
        assert!(p.parse("2026-11-22 LOG:  x").is_none());
        // Longest marker first, duplicate marker: first level wins.
        assert_eq!(p.parse("LOG:  x").unwrap().level, LOG);
    }

    #[test]
    fn compile_errors() {
        assert!(matches!(Prefix::compile("%m ", &[]), Err(PrefixError::NoMarkers)));
        assert!(matches!(Prefix::compile("%m ", &[(String::new(), LOG)]), Err(PrefixError::EmptyMarker)));
        assert!(matches!(detect(&["x"], &[]), Err(DetectError::Prefix(PrefixError::NoMarkers))));
    }

    fn detect(lines: &[&str], markers: &[(String, LineLevel)]) -> Result<Prefix, DetectError> {
        super::detect(lines, markers, crate::catalog::Catalog::global())
    }

    fn detected(lines: &[&str]) -> String {
        detect(lines, &markers()).unwrap().spec().to_string()
    }

    #[test]
    fn detect_common() {
        assert_eq!(detected(DEBIAN), "%m [%p] %q%u@%d ");
        // Background lines only: the %q variant parses a superset, so it wins.
        assert_eq!(detected(I18N), "%m [%p] %q%u@%d ");
        assert_eq!(detected(BACKEND), "%m [%p] %b ");
        assert_eq!(detected(PGBADGER), "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
        assert_eq!(detected(&["LOG:  checkpoint starting: time", "HINT:  x"]), "");
        // Background-only sample: the %q variant is assumed (it still parses
        // a server with the upstream '%m [%p] ' exactly the same way).
        let p = detect(&DEBIAN[..2], &markers()).unwrap();
        assert_eq!(p.spec(), "%m [%p] %q%u@%d ");
        // One session line among many background ones decides it.
        let mut lines = vec![DEBIAN[0]; 30];
        lines.push(DEBIAN[2]);
        assert_eq!(detected(&lines), "%m [%p] %q%u@%d ");
        // Empty pgbadger fields: the full spec explains more of the text than
        // "user=%u,db=%d " with db=",app=,client=".
        assert_eq!(detected(&PGBADGER[..1]), "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
        // Continuation lines and CR are ignored; a few junk lines are tolerated.
        let mut lines: Vec<&str> = Vec::new();
        for _ in 0..10 {
            lines.extend_from_slice(DEBIAN);
        }
        lines.push("\tcontinued");
        lines.push("garbage that is not a log line");
        lines.push("2026-11-22 08:04:20.708 UTC [21752] LOG:  x\r");
        assert_eq!(detected(&lines), "%m [%p] %q%u@%d ");
        // pgbadger with sessions: the full prefix wins over the shorter one.
        let s = [
            PGBADGER[0],
            "2026-11-22 03:05:00 EST [22000]: [1-1] user=alice,db=shop,app=psql,client=10.0.0.7 LOG:  statement: select 1",
        ];
        assert_eq!(detected(&s), "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
    }

    #[test]
    fn detect_structural() {
        let lines = [
            "2026-11-22 08:04:20.708 UTC pid=21752 line=1 user= db= LOG:  checkpoint starting: time",
            "2026-11-22 08:04:21.708 UTC pid=21753 line=2 user=bob db=shop ERROR:  x",
            "2026-11-22 08:04:21.708 UTC pid=21753 line=3 user=bob db=shop STATEMENT:  select",
        ];
        let p = detect(&lines, &markers()).unwrap();
        assert_eq!(p.spec(), "%m pid=%p line=%l user=%u db=%d ");
        let m = p.parse(lines[1]).unwrap();
        assert_eq!((m.pid, m.user, m.database), (Some(21753), Some("bob"), Some("shop")));

        let lines = [
            "{2026-11-22 08:04:20 CET} 21752/7 [checkpointer] LOG:  checkpoint starting: time",
            "{2026-11-22 08:04:21 CET} 21753/1 [checkpointer] LOG:  checkpoint complete",
        ];
        let p = detect(&lines, &markers()).unwrap();
        assert_eq!(p.spec(), "{%t} %p/%l [%b] ");

        let lines = ["1763798660.708 [21752]: [1-1] LOG:  a", "1763798661.708 [21752]: [2-1] HINT:  b"];
        let p = detect(&lines, &markers()).unwrap();
        assert_eq!(p.spec(), "%n [%p]: [%l-1] ");
        assert_eq!(p.parse(lines[1]).unwrap().level, HINT);
    }

    #[test]
    fn detect_failure_message() {
        let long = format!("no prefix here {}", "y".repeat(400));
        let e = detect(&[&long, "nothing"], &markers()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("--prefix '<log_line_prefix>'"), "{msg}");
        assert!(msg.contains("SHOW log_line_prefix;"), "{msg}");
        assert!(msg.contains("no prefix here yyy"), "{msg}");
        match e {
            DetectError::NoMatch { first_line } => assert_eq!(first_line.chars().count(), 200),
            other => panic!("{other:?}"),
        }
        assert!(matches!(detect(&["\tonly continuation", ""], &markers()), Err(DetectError::NoLines)));
        // Lines too different from each other: below 90%.
        let mixed =
            ["2026-11-22 08:04:20.708 UTC [1] LOG:  a", "2026-11-22 08:04:20 UTC [1] LOG:  a", "LOG:  x", "foo: bar"];
        assert!(detect(&mixed, &markers()).is_err());
    }

    #[test]
    fn fuzz_never_panics() {
        let alphabet: Vec<char> = "%-0123456789audrhLbpPtmnieclsvxqQ%[]: @=,.LOG\u{e9}\u{30d2}\t ".chars().collect();
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mk = list_markers_small();
        for round in 0..300 {
            let len = (next() % 16) as usize;
            let spec: String = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            let p = Prefix::compile(&spec, &mk).unwrap();
            for _ in 0..20 {
                let len = (next() % 60) as usize;
                let line: String = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
                if let Some(m) = p.parse(&line) {
                    assert!(line.ends_with(m.message));
                }
            }
            if round % 20 == 0 {
                let lines = [spec.as_str(), "LOG:  x", "%", line_from(&spec)];
                let _ = detect(&lines, &mk);
            }
        }
    }

    fn line_from(spec: &str) -> &str {
        spec.get(..spec.len() / 2).unwrap_or("")
    }

    fn list_markers_small() -> Vec<(String, LineLevel)> {
        vec![("LOG:  ".into(), LOG), ("HINT:  ".into(), HINT)]
    }

    #[test]
    fn many_markers() {
        // Hundreds of markers, any language.
        let mut mk = markers();
        for i in 0..500 {
            mk.push((format!("NIVEAU{i}:  "), LOG));
        }
        let p = Prefix::compile("%m [%p] %q%u@%d ", &mk).unwrap();
        let m = p.parse("2026-11-22 08:04:20.708 UTC [1] NIVEAU499:  x").unwrap();
        assert_eq!(m.message, "x");
        for l in DEBIAN {
            assert!(p.parse(l).is_some());
        }
    }
}
