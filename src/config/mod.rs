//! The daemon's configuration: a TOML file (default
//! `/etc/walwatch/walwatch.toml`), validated as a whole before anything runs,
//! so that a typo is reported at startup with its file:line:column instead of
//! silently watching nothing.
//!
//! `config/walwatch.toml` in the repository documents every key at its
//! default. With no `[[cluster]]`, [`discover`] finds the usual layouts.

mod advice;
mod alerts;
mod digest;
mod discover;
mod ingest;
mod mail;
mod metrics;
mod position;
mod problem;
mod raw;

pub use advice::AdviceSection;
pub(crate) use advice::Advices;
pub(crate) use alerts::value;
pub use alerts::{AlertsSection, RuleTables};
pub(crate) use digest::DigestSection;
#[cfg(test)]
pub(crate) use digest::MAX_CHARTS;
pub(crate) use ingest::{IngestCluster, DEFAULT_NAME as DEFAULT_INGEST_NAME};
pub use ingest::{IngestSection, SUGGESTED_PORT as SUGGESTED_INGEST_PORT};
pub(crate) use mail::{MailSection, WebhookSection};
pub use mail::{MailTransport, PasswordSource, Retry, SmtpSecurity, SmtpSettings};
pub(crate) use metrics::MetricsSection;
pub use metrics::SUGGESTED_PORT as SUGGESTED_METRICS_PORT;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

pub(crate) use discover::cluster_name;
pub use discover::{current_logfiles, discover};

/// Where the configuration is read when `--config` is not given.
pub(crate) const DEFAULT_PATH: &str = "/etc/walwatch/walwatch.toml";

/// The formats `import --format` accepts; "auto" detects from the content.
pub(crate) const FORMATS: [&str; 15] = [
    "auto",
    "stderr",
    "csvlog",
    "jsonlog",
    "syslog",
    "cloudsql",
    "cnpg",
    "journald-json",
    "journald",
    "azure",
    "docker-json",
    "cri",
    "docker",
    "flyio",
    "heroku",
];

/// The values of `[daemon] log_level`.
pub(crate) const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A configuration that has been parsed and validated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    pub store: StoreSection,
    pub daemon: DaemonSection,
    /// Empty: discover the clusters ([`discover`]).
    pub clusters: Vec<ClusterConfig>,
    pub advice: AdviceSection,
    pub alerts: AlertsSection,
    /// None: alerts are kept in the store, not mailed.
    pub mail: Option<MailSection>,
    pub webhook: Option<WebhookSection>,
    pub digest: DigestSection,
    /// `[metrics]`: the Prometheus endpoint, off by default.
    pub metrics: MetricsSection,
    /// `[ingest]`: the receiver for Vector agents' log lines, off by default.
    pub ingest: IngestSection,
}

/// `[store]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSection {
    /// The SQLite database; the service's StateDirectory by default.
    pub path: PathBuf,
    /// How long rows are kept (the daemon prunes older ones daily); None:
    /// forever (`keep = "forever"` or `"off"`).
    pub keep: Option<Duration>,
}

/// `[store] keep` by default: a year and a bit, so a year ago can be compared.
pub(crate) const DEFAULT_KEEP: Duration = Duration::from_secs(400 * 86_400);

/// The shortest `keep`: a unit typo ("400s") must not empty the store.
pub(crate) const MIN_KEEP: Duration = Duration::from_secs(86_400);

/// "keeps 400 days" / "keeps 36h": how `status`, `config check` and the
/// daemon's log say a `keep`.
pub(crate) fn keep_text(keep: Duration) -> String {
    let days = keep.as_secs() / 86_400;
    if keep.as_secs().is_multiple_of(86_400) {
        format!("keeps {}", plural(days as usize, "day"))
    } else {
        format!("keeps {}", crate::timefmt::format_duration(keep))
    }
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection { path: PathBuf::from("/var/lib/walwatch/walwatch.db"), keep: Some(DEFAULT_KEEP) }
    }
}

/// `[daemon]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonSection {
    /// How often files are polled when change notification is unavailable.
    pub poll_interval: Duration,
    /// How long a file must stay unchanged before its last entry is taken as
    /// complete (its HINT/DETAIL/continuation lines may follow in a later write).
    pub entry_settle: Duration,
    /// One of [`LOG_LEVELS`]; None: `RUST_LOG`, else info.
    pub log_level: Option<String>,
    /// Keys that are accepted but do nothing — an older walwatch's, or one
    /// not in effect yet — each with what to do about it: `config check`
    /// and the daemon say so instead of refusing a config that ran before,
    /// or letting a user wait for what will not happen.
    pub retired: Vec<String>,
}

impl Default for DaemonSection {
    fn default() -> Self {
        DaemonSection {
            poll_interval: Duration::from_secs(1),
            entry_settle: Duration::from_millis(100),
            log_level: None,
            retired: Vec::new(),
        }
    }
}

/// One `[[cluster]]`: a PostgreSQL server whose log is followed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// Unique; the name events are stored under.
    pub name: String,
    /// Absolute glob patterns of the log files (rotated copies included).
    pub logs: Vec<String>,
    /// `$PGDATA`: its `current_logfiles` names the file being written.
    pub data_directory: Option<PathBuf>,
    /// One of [`FORMATS`].
    pub format: String,
    /// The server's log_line_prefix, or "auto" to infer it.
    pub prefix: String,
    /// The server's log_timezone (a known IANA name).
    pub timezone: Option<String>,
    pub start_at: StartAt,
    /// The server's postgresql.conf when it is not `data_directory/postgresql.conf`
    /// (Debian: /etc/postgresql/15/main/postgresql.conf).
    pub config_file: Option<PathBuf>,
    /// `[cluster.settings]`: name -> value as PostgreSQL spells it; wins over every other source.
    pub settings: BTreeMap<String, String>,
    /// `[cluster.advice]`: `[advice]` with the keys it gives changed for
    /// this cluster (a server with its own recovery or disk limits); None:
    /// `[advice]` as it is.
    pub advice: Option<AdviceSection>,
}

impl Config {
    /// `[advice]` and the clusters' `[cluster.advice]`, by cluster name.
    pub(crate) fn advices(&self) -> Advices {
        let own = self.clusters.iter().filter_map(|c| Some((c.name.clone(), c.advice.clone()?)));
        Advices::new(self.advice.clone(), own.collect())
    }

    /// The advice settings of `cluster`: its `[cluster.advice]`, else `[advice]`.
    pub(crate) fn advice_for(&self, cluster: &str) -> &AdviceSection {
        let own = self.clusters.iter().find(|c| c.name == cluster).and_then(|c| c.advice.as_ref());
        own.unwrap_or(&self.advice)
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            name: String::new(),
            logs: Vec::new(),
            data_directory: None,
            format: "auto".into(),
            prefix: "auto".into(),
            timezone: None,
            start_at: StartAt::Beginning,
            config_file: None,
            settings: BTreeMap::new(),
            advice: None,
        }
    }
}

/// Where a file that walwatch has never seen is first read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    /// The whole file: history already in the log is imported.
    #[default]
    Beginning,
    /// Only what is written after walwatch starts.
    End,
}

impl StartAt {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StartAt::Beginning => "beginning",
            StartAt::End => "end",
        }
    }
}

/// Where a configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// Read from this file.
    File(PathBuf),
    /// The default file does not exist: built-in defaults.
    Defaults(PathBuf),
}

#[derive(Debug, Error)]
pub enum ConfigError {
    /// A `--config` path that does not exist (the default path may be absent).
    #[error("config file {} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read config file {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// Syntax, unknown key, wrong type or invalid value. `key` is the dotted
    /// path (`cluster.format`) when the position lies within a key or value.
    #[error("{}:{line}:{column}: {}{message}", path.display(), key.as_deref().map(|k| format!("{k}: ")).unwrap_or_default())]
    Invalid { path: PathBuf, line: usize, column: usize, key: Option<String>, message: String },
    /// The store the daemon uses ($STATE_DIRECTORY or --db) lies under a cluster's glob.
    #[error(
        "cluster {cluster:?}: logs glob {glob:?} matches walwatch's own store {}: the daemon would read its \
         database as a log; narrow the glob or move the store",
        store.display()
    )]
    FollowsStore { cluster: String, glob: String, store: PathBuf },
}

/// The store's files: the database and SQLite's companions beside it.
pub(crate) fn store_files(db: &Path) -> Vec<PathBuf> {
    let mut files = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files
}

/// The store file (database, -wal, -shm or -journal) that `glob` matches,
/// by name: as `glob::glob` does, a wildcard never matches a `/`.
pub(crate) fn store_file_matched(glob: &str, db: &Path) -> Option<PathBuf> {
    let pattern = glob::Pattern::new(glob).ok()?;
    let options = glob::MatchOptions { require_literal_separator: true, ..glob::MatchOptions::new() };
    store_files(db).into_iter().find(|f| pattern.matches_path_with(f, options))
}

/// The daemon's check of the store it actually uses (the config's own
/// `[store] path` is checked when the config is parsed).
pub(crate) fn check_store_not_followed(config: &Config, db: &Path) -> Result<(), ConfigError> {
    for cluster in &config.clusters {
        if let Some(glob) = cluster.logs.iter().find(|g| store_file_matched(g, db).is_some()) {
            let (cluster, glob) = (cluster.name.clone(), glob.clone());
            return Err(ConfigError::FollowsStore { cluster, glob, store: db.to_path_buf() });
        }
    }
    Ok(())
}

/// Who opens the store: the daemon's default is the service's store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreUser {
    Daemon,
    Command,
}

/// The one answer to "which store": `--db`; else `[store] path` when the
/// config sets it to something other than the default; else the systemd
/// StateDirectory ($STATE_DIRECTORY, the service's); else
/// /var/lib/walwatch/walwatch.db for the daemon, for a command that read a
/// config file (the installed service's) and for the `walwatch` user; else
/// the per-user XDG state directory.
pub(crate) fn store_path(flag: Option<&Path>, config: &Config, source: &ConfigSource, user: StoreUser) -> PathBuf {
    let service = StoreSection::default().path;
    if let Some(db) = flag {
        return db.to_path_buf();
    }
    if config.store.path != service {
        return config.store.path.clone();
    }
    if let Some(dir) = std::env::var_os("STATE_DIRECTORY").filter(|d| !d.is_empty()) {
        let first = dir.to_string_lossy().split(':').next().unwrap_or_default().to_string();
        return PathBuf::from(first).join("walwatch.db");
    }
    let from_file = matches!(source, ConfigSource::File(_));
    if user == StoreUser::Daemon || from_file || std::env::var("USER").is_ok_and(|u| u == "walwatch") {
        return service;
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    state.join("walwatch").join("walwatch.db")
}

/// `/etc/walwatch/walwatch.toml`
pub fn default_path() -> PathBuf {
    PathBuf::from(DEFAULT_PATH)
}

/// Reads and validates the file at `path`; it must exist.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => ConfigError::NotFound { path: path.to_path_buf() },
        _ => ConfigError::Read { path: path.to_path_buf(), source },
    })?;
    parse(&text, path)
}

/// Parses and validates `text`; `path` only names the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let raw: raw::RawConfig = toml::from_str(text).map_err(|e| invalid(text, path, problem::Problem::from_toml(&e)))?;
    raw.validate(text, path).map_err(|problem| invalid(text, path, problem))
}

/// `problem` as the error a user reads: file:line:column and the key.
fn invalid(text: &str, path: &Path, problem: problem::Problem) -> ConfigError {
    let (line, column) = position::line_column(text, problem.span.start);
    let key = position::key_path(text, problem.span.start);
    ConfigError::Invalid { path: path.to_path_buf(), line, column, key, message: problem.message }
}

/// `--config PATH` (must exist) or the default path, which may be absent:
/// then the built-in defaults apply, so a fresh install runs with discovery.
pub fn load_or_default(path: Option<&Path>) -> Result<(Config, ConfigSource), ConfigError> {
    load_or_default_at(path, &default_path())
}

/// [`load_or_default`] with `default` in place of [`default_path`], so tests
/// do not depend on what the machine has in /etc/walwatch.
pub fn load_or_default_at(path: Option<&Path>, default: &Path) -> Result<(Config, ConfigSource), ConfigError> {
    if let Some(path) = path {
        return Ok((load(path)?, ConfigSource::File(path.to_path_buf())));
    }
    match load(default) {
        Ok(config) => Ok((config, ConfigSource::File(default.to_path_buf()))),
        Err(ConfigError::NotFound { .. }) => Ok((Config::default(), ConfigSource::Defaults(default.to_path_buf()))),
        Err(e) => Err(e),
    }
}

/// The human report of `config check`, but for the alert rules, which
/// this module does not know (`walwatch config check` adds them).
pub(crate) fn describe(config: &Config, source: &ConfigSource, root: &Path) -> String {
    let mut out = match source {
        ConfigSource::File(p) => format!("config {} is valid", p.display()),
        ConfigSource::Defaults(p) => format!("no config file at {}: using the defaults", p.display()),
    };
    if config.clusters.is_empty() && config.ingest.listen.is_some() {
        out.push_str(": no [[cluster]]: only what Vector agents ship is read ([ingest])\n");
    } else if config.clusters.is_empty() {
        out.push_str(": no [[cluster]], so clusters are discovered\n");
        out.push_str(&discover(root).to_string());
    } else {
        let names: Vec<String> = config.clusters.iter().map(short_description).collect();
        out.push_str(&format!(": {} ({})\n", plural(config.clusters.len(), "cluster"), names.join(", ")));
        for cluster in &config.clusters {
            out.push_str(&format!("  {}\n", cluster.describe()));
        }
    }
    let daemon = &config.daemon;
    let keep = config.store.keep.map_or_else(|| "keeps everything".into(), keep_text);
    out.push_str(&format!(
        "store {} ({keep}); poll every {}, log level {}\n",
        config.store.path.display(),
        crate::timefmt::format_duration(daemon.poll_interval),
        daemon.log_level.as_deref().unwrap_or("from RUST_LOG (default info)"),
    ));
    if let Some(listen) = config.metrics.listen {
        out.push_str(&format!("metrics served at http://{listen}/metrics\n"));
    }
    if let Some(listen) = config.ingest.listen {
        let auth = if config.ingest.token_file.is_some() { "bearer tokens" } else { "no token (loopback only)" };
        let scheme = if config.ingest.tls.is_some() { "https" } else { "http" };
        out.push_str(&format!("Vector agents' lines taken at {scheme}://{listen}/ingest/vector ({auth})\n"));
    }
    for note in &daemon.retired {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

/// "main: 1 glob" / "15: data directory"
fn short_description(cluster: &ClusterConfig) -> String {
    let mut parts = Vec::new();
    if !cluster.logs.is_empty() {
        parts.push(plural(cluster.logs.len(), "glob"));
    }
    if cluster.data_directory.is_some() {
        parts.push("data directory".to_string());
    }
    format!("{}: {}", cluster.name, parts.join(" + "))
}

pub(crate) fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

impl ClusterConfig {
    /// One line: name, sources and how they are read.
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("{}:", self.name);
        if !self.logs.is_empty() {
            out.push_str(&format!(" logs {}", self.logs.join(" ")));
        }
        if let Some(dir) = &self.data_directory {
            out.push_str(&format!(" data_directory {}", dir.display()));
        }
        out.push_str(&format!(" (format {}, prefix {:?}", self.format, self.prefix));
        if let Some(tz) = &self.timezone {
            out.push_str(&format!(", timezone {tz}"));
        }
        out.push_str(&format!(", start at {})", self.start_at.as_str()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_matching_the_store_or_its_companions() {
        let db = Path::new("/var/lib/walwatch/walwatch.db");
        assert_eq!(store_file_matched("/var/lib/walwatch/*", db), Some(db.to_path_buf()));
        assert_eq!(store_file_matched("/var/lib/walwatch/*-wal", db), Some("/var/lib/walwatch/walwatch.db-wal".into()));
        assert_eq!(store_file_matched("/var/lib/walwatch/walwatch.db*", db), Some(db.to_path_buf()));
        // As glob::glob: a wildcard does not cross a `/`.
        assert_eq!(store_file_matched("/var/lib/*", db), None);
        assert_eq!(store_file_matched("/var/log/postgresql/*.log", db), None);
    }
}
