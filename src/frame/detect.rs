//! Which format a source is in, from its first bytes.

use super::formats::{azure, cloudsql, cnpg, csvlog, journald, syslog, wrapper};

/// How many JSON lines of a source's head are looked at to tell an
/// envelope format from jsonlog.
const JSON_SNIFF_LINES: usize = 20;

/// The log formats walwatch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Stderr,
    Csvlog,
    Jsonlog,
    Syslog,
    /// Cloud SQL's log exported from Cloud Logging (JSON lines).
    CloudSql,
    /// CloudNativePG's JSON lines.
    Cnpg,
    /// `journalctl -o json`.
    JournaldJson,
    /// `journalctl`'s plain output of a server logging to stderr.
    Journald,
    /// Azure Database for PostgreSQL's diagnostic log records (JSON lines).
    Azure,
    /// Docker's json-file driver.
    DockerJson,
    /// A container runtime's (CRI) log file, as Kubernetes keeps them.
    Cri,
    /// `docker logs`, `docker compose logs`, `kubectl logs` (with or without `--timestamps`).
    Docker,
    /// `fly logs`.
    Flyio,
    /// Heroku Postgres in logplex.
    Heroku,
}

/// Every format, in the order `--format` lists them.
const ALL: [Format; 14] = [
    Format::Stderr,
    Format::Csvlog,
    Format::Jsonlog,
    Format::Syslog,
    Format::CloudSql,
    Format::Cnpg,
    Format::JournaldJson,
    Format::Journald,
    Format::Azure,
    Format::DockerJson,
    Format::Cri,
    Format::Docker,
    Format::Flyio,
    Format::Heroku,
];

impl Format {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Format::Stderr => "stderr",
            Format::Csvlog => "csvlog",
            Format::Jsonlog => "jsonlog",
            Format::Syslog => "syslog",
            Format::CloudSql => "cloudsql",
            Format::Cnpg => "cnpg",
            Format::JournaldJson => "journald-json",
            Format::Journald => "journald",
            Format::Azure => "azure",
            Format::DockerJson => "docker-json",
            Format::Cri => "cri",
            Format::Docker => "docker",
            Format::Flyio => "flyio",
            Format::Heroku => "heroku",
        }
    }

    /// The format named `name` (as [`Format::as_str`] spells it).
    pub(crate) fn named(name: &str) -> Option<Format> {
        ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// Guesses the format from the first bytes of a source.
    pub(crate) fn detect(head: &[u8]) -> Format {
        let first = head.split(|&b| b == b'\n').find(|l| !l.is_empty()).unwrap_or_default();
        if first.first() == Some(&b'{') {
            Format::detect_json(head)
        } else if csvlog::looks_like(first) || csvlog::starts_with_record(head) {
            Format::Csvlog
        } else if syslog::looks_like(first) {
            Format::Syslog
        } else if journald::looks_like_plain(first) || journald::looks_like_status(first) {
            Format::Journald
        } else {
            Format::wrapper_of(first).unwrap_or(Format::Stderr)
        }
    }

    /// Which JSON lines: PostgreSQL's jsonlog, or an envelope around its
    /// lines. An export may start with another program's entries (an audit
    /// log's, the operator's): the first lines that tell decide.
    fn detect_json(head: &[u8]) -> Format {
        let lines = head.split(|&b| b == b'\n').filter(|l| l.first() == Some(&b'{')).take(JSON_SNIFF_LINES);
        lines.filter_map(Format::envelope_of).next().unwrap_or(Format::Jsonlog)
    }

    /// The container or platform wrapper around a text line, if any: the
    /// most specific shape first (`heroku` and `flyio` lines start with the
    /// time `docker --timestamps` starts with).
    fn wrapper_of(line: &[u8]) -> Option<Format> {
        if wrapper::looks_like_heroku(line) {
            Some(Format::Heroku)
        } else if wrapper::looks_like_flyio(line) {
            Some(Format::Flyio)
        } else if wrapper::looks_like_cri(line) {
            Some(Format::Cri)
        } else if wrapper::looks_like_docker(line) {
            Some(Format::Docker)
        } else {
            None
        }
    }

    fn envelope_of(line: &[u8]) -> Option<Format> {
        if wrapper::looks_like_docker_json(line) {
            Some(Format::DockerJson)
        } else if cloudsql::looks_like(line) {
            Some(Format::CloudSql)
        } else if cnpg::looks_like(line) {
            Some(Format::Cnpg)
        } else if journald::looks_like_json(line) {
            Some(Format::JournaldJson)
        } else if azure::looks_like(line) {
            Some(Format::Azure)
        } else {
            None
        }
    }

    /// [`Format::detect`], with the name as the tie-breaker: PostgreSQL's
    /// collector names csvlog files `.csv` and jsonlog files `.json`, and a
    /// first record cut short (a huge one, or a stream ending early) must
    /// not turn a csvlog file into an stderr one, whose reading would take
    /// the lines inside quoted fields for log lines.
    pub(crate) fn detect_named(name: &str, head: &[u8]) -> Format {
        let base = name.trim_end_matches(".gz").trim_end_matches(".zst");
        match Format::detect(head) {
            Format::Stderr if base.ends_with(".csv") => Format::Csvlog,
            Format::Stderr if base.ends_with(".json") => Format::Jsonlog,
            found => found,
        }
    }
}
