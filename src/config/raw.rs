//! The file as written: every value keeps its span so that a semantic error
//! (bad format, unknown zone, duplicate name) points at the offending value.
//! Absent keys are `None` here and take the public types' `Default`, which
//! stays the single source of the defaults.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::advice::{AdviceSection, RawAdvice};
use super::alerts::RawAlerts;
use super::digest::{DigestSection, RawDigest};
use super::ingest::RawIngest;
use super::mail::{RawMail, RawWebhook};
use super::metrics::RawMetrics;
use super::problem::{absolute, interval, one_of, time_zone, Problem};
use super::{ClusterConfig, Config, DaemonSection, StartAt, StoreSection, FORMATS, LOG_LEVELS};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    store: Option<RawStore>,
    daemon: Option<RawDaemon>,
    advice: Option<RawAdvice>,
    alerts: Option<RawAlerts>,
    mail: Option<RawMail>,
    webhook: Option<RawWebhook>,
    digest: Option<RawDigest>,
    metrics: Option<RawMetrics>,
    ingest: Option<RawIngest>,
    #[serde(default, rename = "cluster")]
    clusters: Vec<Spanned<RawCluster>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStore {
    path: Option<Spanned<PathBuf>>,
    keep: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    poll_interval: Option<Spanned<String>>,
    /// Retired: walwatch 0.1 documented it but never used it.
    commit_interval: Option<toml::Value>,
    entry_settle: Option<Spanned<String>>,
    log_level: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: Spanned<String>,
    logs: Option<Vec<Spanned<String>>>,
    data_directory: Option<Spanned<PathBuf>>,
    format: Option<Spanned<String>>,
    prefix: Option<String>,
    timezone: Option<Spanned<String>>,
    start_at: Option<StartAt>,
    config_file: Option<Spanned<PathBuf>>,
    /// `[cluster.settings]`: values that win over every other source.
    #[serde(default)]
    settings: BTreeMap<String, Spanned<toml::Value>>,
    /// `[cluster.advice]`: `[advice]`'s keys, for this cluster.
    advice: Option<RawAdvice>,
}

impl RawConfig {
    /// `text` and `path` are the file's, kept for the rules' tables.
    pub(crate) fn validate(self, text: &str, path: &Path) -> Result<Config, Problem> {
        let store = self.store.map(RawStore::validate).transpose()?.unwrap_or_default();
        let daemon = self.daemon.map(RawDaemon::validate).transpose()?.unwrap_or_default();
        let advice = self.advice.map(RawAdvice::validate).transpose()?.unwrap_or_default();
        let mut names = HashSet::new();
        let mut clusters = Vec::with_capacity(self.clusters.len());
        for raw in self.clusters {
            let (span, raw) = (raw.span(), raw.into_inner());
            let name = raw.name.clone();
            let cluster = raw.validate(span, &store.path, &advice)?;
            if !names.insert(cluster.name.clone()) {
                let message = format!("duplicate cluster name {:?}: events are stored by cluster name", cluster.name);
                return Err(Problem::at(&name, message));
            }
            clusters.push(cluster);
        }
        let alerts = self.alerts.map(|a| a.validate(text, path)).transpose()?.unwrap_or_default();
        let mail = self.mail.map(RawMail::validate).transpose()?;
        let webhook = self.webhook.map(RawWebhook::validate).transpose()?;
        let names: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
        let digest = match self.digest {
            Some(raw) => raw.validate(mail.is_some(), &names)?,
            None => DigestSection::default_for(mail.is_some()),
        };
        let metrics = self.metrics.map(RawMetrics::validate).transpose()?.unwrap_or_default();
        let ingest = self.ingest.map(RawIngest::validate).transpose()?.unwrap_or_default();
        Ok(Config { store, daemon, clusters, advice, alerts, mail, webhook, digest, metrics, ingest })
    }
}

impl RawStore {
    fn validate(self) -> Result<StoreSection, Problem> {
        let mut store = StoreSection::default();
        if let Some(path) = self.path {
            store.path = absolute(&path)?.to_path_buf();
        }
        if let Some(keep) = &self.keep {
            store.keep = super::problem::keep(keep)?;
        }
        Ok(store)
    }
}

impl RawDaemon {
    fn validate(self) -> Result<DaemonSection, Problem> {
        let mut daemon = DaemonSection::default();
        if let Some(text) = &self.poll_interval {
            daemon.poll_interval = interval(text)?;
        }
        if self.commit_interval.is_some() {
            daemon.retired.push(
                "[daemon] commit_interval is no longer used: the daemon commits what it reads at the end of each read; \
                 remove it"
                    .into(),
            );
        }
        if let Some(text) = &self.entry_settle {
            daemon.entry_settle = interval(text)?;
        }
        if let Some(level) = self.log_level {
            daemon.log_level = Some(one_of(&level, &LOG_LEVELS, "log level")?);
        }
        Ok(daemon)
    }
}

impl RawCluster {
    fn validate(self, span: Range<usize>, store: &Path, advice: &AdviceSection) -> Result<ClusterConfig, Problem> {
        let defaults = ClusterConfig::default();
        let name = self.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(Problem::at(&self.name, "a cluster name must not be empty".into()));
        }
        let logs = self.logs.unwrap_or_default();
        let logs: Vec<String> = logs.iter().map(|glob| log_glob(glob, store)).collect::<Result<_, _>>()?;
        let data_directory = self.data_directory.as_ref().map(absolute).transpose()?.map(Path::to_path_buf);
        if logs.is_empty() && data_directory.is_none() {
            let message = format!("cluster {name:?} has neither logs nor data_directory: set at least one");
            return Err(Problem { span, message });
        }
        Ok(ClusterConfig {
            name,
            logs,
            data_directory,
            format: self.format.as_ref().map(|f| one_of(f, &FORMATS, "format")).transpose()?.unwrap_or(defaults.format),
            prefix: self.prefix.unwrap_or(defaults.prefix),
            timezone: self
                .timezone
                .as_ref()
                .map(|z| time_zone(z, "the server's log_timezone"))
                .transpose()?
                .or(defaults.timezone),
            start_at: self.start_at.unwrap_or(defaults.start_at),
            config_file: self.config_file.as_ref().map(absolute).transpose()?.map(Path::to_path_buf),
            settings: self.settings.iter().map(|(k, v)| Ok((k.clone(), setting(k, v)?))).collect::<Result<_, _>>()?,
            advice: self.advice.map(|a| a.validate_over(advice)).transpose()?,
        })
    }
}

/// A `logs` glob: absolute, and not matching the store (the daemon would
/// read its own database as a log, each read growing what it reads).
fn log_glob(glob: &Spanned<String>, store: &Path) -> Result<String, Problem> {
    let text = absolute(glob)?.to_string_lossy().into_owned();
    match super::store_file_matched(&text, store) {
        Some(file) => Err(Problem::at(
            glob,
            format!(
                "{text:?} matches walwatch's own store {} ([store] path): the daemon would read its database as a \
                 log; narrow the glob or move the store",
                file.display()
            ),
        )),
        None => Ok(text),
    }
}

/// A `[cluster.settings]` entry: a setting walwatch knows, with a value
/// PostgreSQL would accept (its units, its range), checked now rather than
/// when the advice first needs it. The version is unknown here: the newest
/// version's units apply (the same as every version's for values with a unit).
fn setting(name: &str, value: &Spanned<toml::Value>) -> Result<String, Problem> {
    let text = setting_text(value)?;
    if name == crate::guc::SERVER_VERSION {
        crate::guc::parse_version(&text).map_err(|e| Problem::at(value, e))?;
        return Ok(text);
    }
    if !crate::guc::KNOWN.contains(&name) {
        let known = crate::guc::KNOWN.join(", ");
        let message = format!("unknown setting {name:?}, expected one of {known}, {}", crate::guc::SERVER_VERSION);
        return Err(Problem::at(value, message));
    }
    crate::guc::units::parse_checked(name, &text, None)
        .map_err(|e| Problem::at(value, format!("invalid value for {name}: {e}")))?;
    Ok(text)
}

/// A `[cluster.settings]` value as PostgreSQL would spell it: "1GB", 0.9, true.
fn setting_text(value: &Spanned<toml::Value>) -> Result<String, Problem> {
    match value.get_ref() {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.into()),
        other => {
            Err(Problem::at(value, format!("a setting is a string, number or boolean, not a {}", other.type_str())))
        }
    }
}
