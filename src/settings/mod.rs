//! What walwatch knows about a cluster's settings, and where each value came
//! from. Sources, most trusted first: `[cluster.settings]` in walwatch's
//! config, the server's postgresql.conf (+ postgresql.auto.conf, include,
//! include_dir), `parameter "X" changed to "Y"` lines in the log, and the
//! defaults of the server's major version.
//!
//! The store keeps the timeline (table `setting`): `refresh` records the
//! config and conf-file values when they change; the log's changes are the
//! `parameter_changed` events import stored; [`current`] reads the store only,
//! so `walwatch suggest` works for a user who cannot read postgresql.conf.
//!
//! When none of these sets `checkpoint_timeout` or `max_wal_size` and the
//! conf files were never read, the checkpoints in the log tell them
//! ([`infer`]); such a value says so in its source. When the cluster's
//! config names neither config_file nor data_directory, a log file inside the
//! data directory (`$PGDATA/log/…`, `$PGDATA/pg_log/…`) points to it.
//!
//! Versions: `Settings::version` is the server's major version as PostgreSQL
//! 10+ numbers them (10 … 18); 9.6 is 9 (older releases are not supported and
//! read as 9.6). It comes from `[cluster.settings] server_version`, else the
//! log's latest `starting PostgreSQL …` (12+), else the data directory's
//! PG_VERSION. None: none of these, and the newest version's defaults and
//! units apply.

pub(crate) mod conf;
pub(crate) mod infer;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Serialize;

use crate::guc::units::{self, Parsed};
use crate::guc::{defaults, parse_version, version_name, KNOWN, SERVER_VERSION};
use crate::store::events::LogChange;
use crate::store::settings::{Observed, RowSource, SettingRow};
use crate::store::{Store, StoreError};

/// What the conf files and the log are searched for: the known settings and
/// wal_keep_segments, which wal_keep_size replaced in 13.
fn tracked(name: &str) -> bool {
    KNOWN.contains(&name) || name == "wal_keep_segments"
}

const MB: f64 = 1024.0 * 1024.0;

/// Where a value came from, most trusted first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ValueSource {
    /// `[cluster.settings]` in walwatch's config.
    Config,
    /// postgresql.conf or a file it includes, or postgresql.auto.conf.
    ConfFile { path: String, line: usize },
    /// A `parameter "X" changed to "Y"` line.
    Log {
        #[serde(serialize_with = "crate::timefmt::serialize")]
        at: Timestamp,
    },
    /// Worked out from the checkpoints in the log: no source above sets it.
    Inferred {
        /// How, in one sentence.
        how: String,
        /// The checkpoints or spacings it rests on.
        samples: usize,
    },
    /// PostgreSQL's default for the server's major version (or the newest when unknown).
    Default { version: Option<u32> },
}

/// One setting's value as PostgreSQL spells it ("1GB", "5min", "on").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Value {
    pub(crate) value: String,
    pub(crate) source: ValueSource,
}

/// The values in effect, by setting name, with the server's major version.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(crate) struct Settings {
    pub(crate) version: Option<u32>,
    pub(crate) values: BTreeMap<String, Value>,
    /// Settings left at their default that the log could have told, and why
    /// it did not (too few checkpoints of the kind needed, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) not_inferred: BTreeMap<String, String>,
    /// The conf files were read completely: a value at its default is then
    /// known to be (the files do not set it), not assumed.
    #[serde(skip)]
    pub(crate) defaults_read: bool,
    /// The log's `parameter "X" changed` lines read for these values, oldest
    /// first: what the sizing's latest change and the digest's day of
    /// changes need, without reading them again.
    #[serde(skip)]
    pub(crate) log_changes: Vec<LogChange>,
}

impl Settings {
    /// Whether `name` is at a default walwatch only assumes: nothing set it
    /// and the conf files were not read to confirm it. An unknown name is
    /// assumed too.
    pub(crate) fn assumed(&self, name: &str) -> bool {
        let default = self.values.get(name).is_none_or(|v| matches!(v.source, ValueSource::Default { .. }));
        default && !self.defaults_read
    }

    /// Every known setting at `version`'s default (None: the newest's).
    pub(crate) fn defaults(version: Option<u32>) -> Settings {
        let v = version.unwrap_or(units::NEWEST);
        let values = KNOWN
            .iter()
            .filter_map(|name| {
                let value = defaults::default(name, v)?.to_string();
                Some((name.to_string(), Value { value, source: ValueSource::Default { version } }))
            })
            .collect();
        Settings { version, values, not_inferred: BTreeMap::new(), defaults_read: false, log_changes: Vec::new() }
    }

    /// The value of `name` read in its unit for the server's version; None
    /// when unknown or not valid PostgreSQL.
    pub(crate) fn parsed(&self, name: &str) -> Option<Parsed> {
        let text = &self.values.get(name)?.value;
        // 9.6 counts max/min_wal_size in segments of this size.
        let segment = match name {
            "wal_segment_size" => units::DEFAULT_SEGMENT_BYTES,
            _ => self.bytes("wal_segment_size").unwrap_or(units::DEFAULT_SEGMENT_BYTES),
        };
        units::parse_with_segment(name, text, self.version, segment).ok()
    }

    /// A memory setting in bytes (max_wal_size, min_wal_size, wal_segment_size,
    /// wal_keep_size, checkpoint_flush_after, backend_flush_after).
    pub(crate) fn bytes(&self, name: &str) -> Option<f64> {
        match self.parsed(name)? {
            Parsed::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A memory setting in MB (max_wal_size, min_wal_size, wal_segment_size, wal_keep_size).
    pub(crate) fn mb(&self, name: &str) -> Option<f64> {
        self.bytes(name).map(|b| b / MB)
    }

    /// A memory setting in kB: the page-counted checkpoint_flush_after and
    /// backend_flush_after (8kB pages: the default 32 pages is 256 kB).
    #[cfg(test)]
    pub(crate) fn kb(&self, name: &str) -> Option<f64> {
        self.bytes(name).map(|b| b / 1024.0)
    }

    /// A time setting in seconds (checkpoint_timeout, checkpoint_warning, and
    /// commit_delay, which PostgreSQL counts in microseconds).
    pub(crate) fn seconds(&self, name: &str) -> Option<f64> {
        match self.parsed(name)? {
            Parsed::Seconds(s) => Some(s),
            Parsed::Integer(us) if name == "commit_delay" => Some(us as f64 / 1e6),
            _ => None,
        }
    }

    /// A plain number (checkpoint_completion_target; commit_delay in µs).
    pub(crate) fn number(&self, name: &str) -> Option<f64> {
        match self.parsed(name)? {
            Parsed::Number(x) => Some(x),
            Parsed::Integer(n) => Some(n as f64),
            _ => None,
        }
    }

    /// A boolean (fsync, full_page_writes); PostgreSQL's spellings (on/off/true/1/yes…
    /// and unique prefixes). synchronous_commit: false only when off, every
    /// other level (local, remote_write, on, remote_apply) waits for the local flush.
    pub(crate) fn flag(&self, name: &str) -> Option<bool> {
        match self.parsed(name)? {
            Parsed::Flag(b) => Some(b),
            Parsed::Word(w) => Some(!matches!(w.as_str(), "off" | "false" | "no" | "0")),
            _ => None,
        }
    }
}

impl fmt::Display for ValueSource {
    /// As `walwatch settings` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSource::Config => write!(f, "walwatch config"),
            ValueSource::ConfFile { path, line } => write!(f, "{path}:{line}"),
            ValueSource::Log { at } => write!(f, "log {}", crate::timefmt::table_time(*at)),
            ValueSource::Inferred { how, .. } => write!(f, "inferred from the log: {how}"),
            ValueSource::Default { version: Some(v) } => write!(f, "default (PG {})", version_name(*v)),
            ValueSource::Default { version: None } => {
                write!(f, "default (PG {}; server version unknown)", version_name(units::NEWEST))
            }
        }
    }
}

/// One change of one setting in one source: `old` is that source's previous
/// value (None: it did not set it before), `new` None: it stopped setting it
/// (line removed or commented out; `source` then names where it was).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SettingChange {
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) at: Timestamp,
    pub(crate) name: String,
    pub(crate) old: Option<String>,
    pub(crate) new: Option<String>,
    pub(crate) source: ValueSource,
}

/// Where one cluster's settings are read: walwatch's `[cluster.settings]`
/// and the server's conf files.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sources<'a> {
    /// The cluster's name in the store.
    pub(crate) name: &'a str,
    /// `[cluster.settings]`: name -> value as PostgreSQL spells it.
    pub(crate) configured: &'a BTreeMap<String, String>,
    /// postgresql.conf, when it is not `data_directory/postgresql.conf`.
    pub(crate) config_file: Option<&'a Path>,
    /// `$PGDATA`: postgresql.conf, postgresql.auto.conf and PG_VERSION.
    pub(crate) data_directory: Option<&'a Path>,
}

impl<'a> Sources<'a> {
    /// Where a configured cluster's settings are read.
    pub(crate) fn of(cluster: &'a crate::config::ClusterConfig) -> Sources<'a> {
        Sources {
            name: &cluster.name,
            configured: &cluster.settings,
            config_file: cluster.config_file.as_deref(),
            data_directory: cluster.data_directory.as_deref(),
        }
    }
}

/// Records what `[cluster.settings]` and the server's conf files say now.
///
/// The conf files are postgresql.conf (`config_file`, else
/// `data_directory/postgresql.conf`), what it includes, and
/// `data_directory/postgresql.auto.conf` (the data directory may also come
/// from the conf's own `data_directory`, or, when the config names neither,
/// from the log's path: [`data_directory_from_logs`]). They are read as a
/// whole: when one cannot be read or has a syntax error, nothing from them is
/// recorded this time and a warning says why. That is what PostgreSQL does on
/// reload too ("configuration file contains errors; no changes were
/// applied"), and a partial read would wrongly drop what an unreadable file sets.
pub(crate) fn refresh(store: &mut Store, cluster: &Sources<'_>, now: Timestamp) -> Result<(), StoreError> {
    let config: Vec<(String, Observed)> = KNOWN
        .iter()
        .chain([&SERVER_VERSION])
        .map(|name| {
            let value = cluster.configured.get(*name).cloned();
            (name.to_string(), Observed { value, path: None, line: None })
        })
        .collect();
    store.settings_mut().record(cluster.name, RowSource::Config, &config, now)?;
    if cluster.config_file.is_some() || cluster.data_directory.is_some() {
        return record_conf(store, cluster, now);
    }
    refresh_from_logs(store, cluster.name, now)
}

/// For a cluster whose config names no conf file (or that is only imported):
/// records the conf files of the data directory its logs lie in, if any.
pub(crate) fn refresh_from_logs(store: &mut Store, name: &str, now: Timestamp) -> Result<(), StoreError> {
    let Some(found) = data_directory_from_logs(store, name)? else { return Ok(()) };
    let empty = BTreeMap::new();
    let sources = Sources { name, configured: &empty, config_file: None, data_directory: Some(&found.path) };
    record_conf(store, &sources, now)
}

fn record_conf(store: &mut Store, cluster: &Sources<'_>, now: Timestamp) -> Result<(), StoreError> {
    if let Some(observed) = read_conf(cluster) {
        store.settings_mut().record(cluster.name, RowSource::ConfFile, &observed, now)?;
    }
    Ok(())
}

/// A data directory found from a log file's path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FoundDataDirectory {
    pub(crate) path: PathBuf,
    /// The log file it holds, as it was imported or followed.
    pub(crate) log: String,
}

/// How many directories above a log file the data directory may be:
/// `$PGDATA/log/x.log` is one, a dated subdirectory of log_directory two.
const DATA_DIRECTORY_DEPTH: usize = 3;

/// The data directory that holds one of the cluster's log files (the most
/// recently read first): a directory above it with PG_VERSION and a
/// postgresql.conf or postgresql.auto.conf, as PostgreSQL's default
/// log_directory (`log`, `pg_log` in 9.6) puts them. None when no log lies
/// inside one this process may look into. A relative log path is taken
/// from the current directory, as it was imported.
pub(crate) fn data_directory_from_logs(store: &Store, cluster: &str) -> Result<Option<FoundDataDirectory>, StoreError> {
    let Some(id) = store.clusters().find(cluster)? else { return Ok(None) };
    let found = store.sources().paths(id)?.into_iter().find_map(|log| {
        let path = data_directory_of(Path::new(&log))?;
        Some(FoundDataDirectory { path, log: log.clone() })
    });
    Ok(found)
}

/// The data directory a log file lies in (`$PGDATA/log/…`), if any.
pub(crate) fn data_directory_of(log: &Path) -> Option<PathBuf> {
    log.ancestors().skip(1).take(DATA_DIRECTORY_DEPTH).find(|d| is_data_directory(d)).map(Path::to_path_buf)
}

fn is_data_directory(dir: &Path) -> bool {
    let conf = ["postgresql.conf", "postgresql.auto.conf"].iter().any(|f| dir.join(f).is_file());
    !dir.as_os_str().is_empty() && dir.join("PG_VERSION").is_file() && conf
}

/// The tracked settings as the cluster's conf files set them, or None when
/// there is no conf file to read or it cannot be read completely.
/// A server's conf files as read: postgresql.conf, what it includes, and
/// the data directory's postgresql.auto.conf, later entries winning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerConf {
    /// postgresql.conf.
    pub(crate) main: PathBuf,
    /// The data directory given, else the conf's own absolute `data_directory`.
    pub(crate) data_directory: Option<PathBuf>,
    pub(crate) parsed: conf::Parsed,
}

/// Reads a server's conf files as PostgreSQL does (`config_file`, else
/// `data_directory/postgresql.conf`); None when neither is given. Problems
/// (unreadable, syntax) are in `parsed.problems`, for the caller to judge.
pub(crate) fn read_server_conf(config_file: Option<&Path>, data_directory: Option<&Path>) -> Option<ServerConf> {
    let main = config_file.map(Path::to_path_buf).or_else(|| Some(data_directory?.join("postgresql.conf")))?;
    let mut parsed = conf::Parsed::default();
    conf::read(&main, true, &mut parsed);
    let data_dir = data_directory.map(Path::to_path_buf).or_else(|| {
        let from_conf = PathBuf::from(&parsed.get("data_directory")?.value);
        from_conf.is_absolute().then_some(from_conf)
    });
    if let Some(dir) = &data_dir {
        conf::read(&dir.join("postgresql.auto.conf"), false, &mut parsed);
    }
    Some(ServerConf { main, data_directory: data_dir, parsed })
}

/// The data directory's major version from its PG_VERSION, if readable.
pub(crate) fn data_directory_version(data_dir: &Path) -> Option<u32> {
    parse_version(pg_version(data_dir).value.as_deref()?).ok()
}

fn read_conf(cluster: &Sources<'_>) -> Option<Vec<(String, Observed)>> {
    let ServerConf { main, data_directory: data_dir, parsed } =
        read_server_conf(cluster.config_file, cluster.data_directory)?;
    if !parsed.problems.is_empty() {
        for problem in &parsed.problems {
            tracing::warn!(cluster = %cluster.name, "{problem}");
        }
        tracing::warn!(
            cluster = %cluster.name,
            "the settings in {} and the files it includes are not recorded this time (see above); \
             walwatch uses what it read before, the log's changes and the defaults",
            main.display()
        );
        return None;
    }
    let observed = KNOWN
        .iter()
        .chain(&["wal_keep_segments"])
        .map(|name| {
            let entry = parsed.get(name);
            let observed = Observed {
                value: entry.map(|e| e.value.clone()),
                path: entry.map(|e| e.path.display().to_string()),
                line: entry.map(|e| e.line as i64),
            };
            (name.to_string(), observed)
        })
        .chain(data_dir.map(|dir| (SERVER_VERSION.to_string(), pg_version(&dir))))
        .collect();
    Some(observed)
}

/// The data directory's major version (PG_VERSION: "15", "9.6"); an
/// unreadable file only means walwatch does not learn it from there.
fn pg_version(data_dir: &std::path::Path) -> Observed {
    let path = data_dir.join("PG_VERSION");
    let value = std::fs::read_to_string(&path).ok().map(|t| t.trim().to_string()).filter(|v| parse_version(v).is_ok());
    let found = value.is_some();
    Observed { value, path: found.then(|| path.display().to_string()), line: found.then_some(1) }
}

/// The values in effect now for `cluster`, from the store, defaults filled in.
/// A cluster the store does not know gets the newest version's defaults.
pub(crate) fn current(store: &Store, cluster: &str) -> Result<Settings, StoreError> {
    let Some(id) = store.clusters().find(cluster)? else { return Ok(Settings::defaults(None)) };
    let logged = store.events().latest_server_version(id)?.as_deref().and_then(defaults::major);
    let known = Known {
        config: store.settings().latest(id, RowSource::Config)?,
        conf: store.settings().latest(id, RowSource::ConfFile)?,
        conf_read: store.settings().read_at(id, RowSource::ConfFile)?,
        log: store.events().parameter_changes(id)?,
    };
    let mut settings = resolve(version(&known, logged), &known);
    // Conf files read completely say what they do not set is at its default.
    if known.conf_read.is_none() {
        infer_from_log(store, cluster, &known.log, &mut settings)?;
    }
    settings.log_changes = known.log;
    Ok(settings)
}

/// The newest checkpoints the inference reads: days of history, bounded.
const INFERENCE_POINTS: usize = 5000;

/// checkpoint_timeout and max_wal_size from the log where only their
/// default is known, from the checkpoints after the latest logged change of
/// what they depend on.
fn infer_from_log(store: &Store, cluster: &str, log: &[LogChange], settings: &mut Settings) -> Result<(), StoreError> {
    let at_default = |s: &Settings, name: &str| matches!(s.values[name].source, ValueSource::Default { .. });
    // The newest starts, read once when both inferences want the same ones.
    let mut newest = None;
    if at_default(settings, "checkpoint_timeout") {
        let starts = newest.insert(store.checkpoints().recent_starts(cluster, None, INFERENCE_POINTS)?);
        settle(settings, "checkpoint_timeout", infer::checkpoint_timeout(starts));
    }
    if at_default(settings, "max_wal_size") {
        let since = last_change(log, &["checkpoint_completion_target"]);
        let starts = match (since, newest) {
            (None, Some(starts)) => starts,
            _ => store.checkpoints().recent_starts(cluster, since, INFERENCE_POINTS)?,
        };
        let rule = infer::TriggerRule {
            segment_mb: settings.mb("wal_segment_size").filter(|m| *m > 0.0).unwrap_or(16.0),
            completion_target: settings.number("checkpoint_completion_target").unwrap_or(0.9),
            completion_target_assumed: at_default(settings, "checkpoint_completion_target"),
            version: settings.version,
        };
        settle(settings, "max_wal_size", infer::max_wal_size(&starts, &rule));
    }
    Ok(())
}

/// The time of the latest logged change of any of `names`.
fn last_change(log: &[LogChange], names: &[&str]) -> Option<Timestamp> {
    log.iter().filter(|c| names.contains(&c.name.as_str())).map(|c| c.at).max()
}

fn settle(settings: &mut Settings, name: &str, outcome: infer::Outcome) {
    match outcome {
        Ok(found) => {
            let source = ValueSource::Inferred { how: found.how, samples: found.samples };
            settings.values.insert(name.to_string(), Value { value: found.value, source });
        }
        Err(why) => {
            settings.not_inferred.insert(name.to_string(), why);
        }
    }
}

/// The server's major version: walwatch's config, else the latest start in
/// the log (the binary that runs), else the data directory's PG_VERSION.
fn version(known: &Known, logged: Option<u32>) -> Option<u32> {
    let row = |rows: &[SettingRow]| {
        let row = rows.iter().find(|r| r.name == SERVER_VERSION)?;
        parse_version(row.value.as_deref()?).ok()
    };
    row(&known.config).or(logged).or_else(|| row(&known.conf))
}

/// Everything the store knows of one cluster's settings.
struct Known {
    config: Vec<SettingRow>,
    conf: Vec<SettingRow>,
    conf_read: Option<Timestamp>,
    /// Oldest first.
    log: Vec<LogChange>,
}

fn resolve(version: Option<u32>, known: &Known) -> Settings {
    let mut settings = Settings::defaults(version);
    settings.defaults_read = known.conf_read.is_some();
    for name in KNOWN {
        if let Some(value) = resolve_one(name, known) {
            settings.values.insert(name.to_string(), value);
        }
    }
    // Before 13 the kept WAL is wal_keep_segments segments.
    let default_keep =
        settings.values.get("wal_keep_size").is_some_and(|v| matches!(v.source, ValueSource::Default { .. }));
    if default_keep {
        if let Some(segments) = resolve_one("wal_keep_segments", known) {
            let n = units::parse("wal_keep_segments", &segments.value, version);
            let segment_mb = settings.mb("wal_segment_size").unwrap_or(16.0);
            if let Ok(Parsed::Integer(n)) = n {
                let value = format!("{}MB", (n as f64 * segment_mb).round() as i64);
                settings.values.insert("wal_keep_size".into(), Value { value, source: segments.source });
            }
        }
    }
    settings
}

/// The latest change walwatch knows of any of `names`, dated as precisely as
/// it can be: a `parameter "X" changed` line at its time; a change in the
/// config or the conf files at the latest `parameter` line that announced
/// the same value before the read that found it, else at that read. The
/// first read of a source is no change: it is where walwatch started looking.
#[cfg(test)]
pub(crate) fn latest_change(store: &Store, cluster: &str, names: &[&str]) -> Result<Option<SettingChange>, StoreError> {
    let Some(id) = store.clusters().find(cluster)? else { return Ok(None) };
    latest_change_given(store, id, names, &store.events().parameter_changes(id)?)
}

/// [`latest_change`] with the log's changes already read (those [`current`]
/// keeps in [`Settings::log_changes`]).
pub(crate) fn latest_change_in(
    store: &Store,
    cluster: &str,
    names: &[&str],
    log: &[LogChange],
) -> Result<Option<SettingChange>, StoreError> {
    let Some(id) = store.clusters().find(cluster)? else { return Ok(None) };
    latest_change_given(store, id, names, log)
}

fn latest_change_given(
    store: &Store,
    id: i64,
    names: &[&str],
    log: &[LogChange],
) -> Result<Option<SettingChange>, StoreError> {
    let version = store.events().latest_server_version(id)?.as_deref().and_then(defaults::major);
    let changes = merged(&store.settings().rows(id)?, log, version);
    // On a tie the file's change is taken (the last maximum): it knows the old value.
    Ok(changes.into_iter().filter(|c| names.contains(&c.name.as_str())).max_by_key(|c| c.at))
}

/// The changes of the files after walwatch's first read of each (the first
/// read is where walwatch started looking, no change), each dated at the
/// log line that announced it; then the log's changes that announced none.
/// So an `ALTER SYSTEM` is one change (the auto.conf's, with its old value,
/// at the time the server logged it), not two.
fn merged(rows: &[SettingRow], log: &[LogChange], version: Option<u32>) -> Vec<SettingChange> {
    let first_read =
        |config: bool| rows.iter().filter(|r| (r.source == RowSource::Config) == config).map(|r| r.since).min();
    let (config_from, conf_from) = (first_read(true), first_read(false));
    let mut announcers: BTreeSet<(Timestamp, &str)> = BTreeSet::new();
    let mut changes: Vec<SettingChange> = row_changes(rows)
        .into_iter()
        .filter(|c| {
            let first = if c.source == ValueSource::Config { config_from } else { conf_from };
            first.is_some_and(|first| c.at > first)
        })
        .filter(|c| !same_in_effect(c, version))
        .map(|mut c| {
            if let Some(line) = announcing_line(&c, log, version) {
                announcers.insert((line.at, line.name.as_str()));
                c.at = line.at;
            }
            c
        })
        .collect();
    let silent = log_changes(log).into_iter().filter(|c| !announcers.contains(&(c.at, c.name.as_str())));
    changes.extend(silent);
    changes
}

/// Whether a file's change leaves the value the server uses as it was:
/// `max_wal_size = '1024MB'` written where the default 1GB applied, `300`
/// over `'5min'`, a line set to the default taken out. PostgreSQL logs no
/// change then, and none is one: it would split the advice's evidence
/// into "before" and "after" a change that did not happen.
fn same_in_effect(change: &SettingChange, version: Option<u32>) -> bool {
    let default = defaults::default(&change.name, version.unwrap_or(units::NEWEST));
    let parse = |text: &str| units::parse(&change.name, text, version).ok();
    match (change.old.as_deref().or(default), change.new.as_deref().or(default)) {
        (Some(old), Some(new)) => old == new || parse(old).is_some_and(|old| Some(old) == parse(new)),
        _ => false,
    }
}

/// The latest log line that announced a change walwatch read in a file
/// (the same name and value, logged before the read), if there is one.
fn announcing_line<'a>(change: &SettingChange, log: &'a [LogChange], version: Option<u32>) -> Option<&'a LogChange> {
    let parse = |text: &str| units::parse(&change.name, text, version).ok();
    let same = |a: &str, b: &str| a == b || parse(a).is_some_and(|a| Some(a) == parse(b));
    let new = change.new.as_deref()?;
    log.iter().rev().find(|l| l.name == change.name && l.at <= change.at && same(&l.value, new))
}

/// The value of `name` from the most trusted source that sets it, None for the default.
///
/// `[cluster.settings]` wins over everything: the operator said so. Between
/// the conf files and the log, the newer information wins: a `parameter "X"
/// changed to "Y"` line logged after walwatch last read the conf files
/// completely is newer than what they said then (a reload walwatch has not
/// read the files for yet, or files it cannot read at all); otherwise the conf
/// files as last read are the newer information, and a name they do not set
/// is at its default (the server logged "… removed from configuration file,
/// reset to default" when it was taken out).
fn resolve_one(name: &str, known: &Known) -> Option<Value> {
    if let Some(row) = known.config.iter().find(|r| r.name == name && r.value.is_some()) {
        return Some(Value { value: row.value.clone()?, source: ValueSource::Config });
    }
    let log = known.log.iter().rev().find(|c| c.name == name);
    if let Some(change) = log.filter(|c| known.conf_read.is_none_or(|read| c.at > read)) {
        return Some(Value { value: change.value.clone(), source: ValueSource::Log { at: change.at } });
    }
    let row = known.conf.iter().find(|r| r.name == name)?;
    let source =
        ValueSource::ConfFile { path: row.path.clone().unwrap_or_default(), line: row.line.unwrap_or(0) as usize };
    Some(Value { value: row.value.clone()?, source })
}

/// Every change walwatch knows of the cluster's settings, oldest first, as
/// [`merged`] gives them: the config's and the conf files' after walwatch's
/// first read of each, dated at the log line that announced them, and the
/// log's own changes.
pub(crate) fn timeline(store: &Store, cluster: &str) -> Result<Vec<SettingChange>, StoreError> {
    let Some(id) = store.clusters().find(cluster)? else { return Ok(Vec::new()) };
    let version = store.events().latest_server_version(id)?.as_deref().and_then(defaults::major);
    let mut changes = merged(&store.settings().rows(id)?, &store.events().parameter_changes(id)?, version);
    changes.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.name.cmp(&b.name)));
    Ok(changes)
}

/// The rows where a source's value changed (not only its line).
fn row_changes(rows: &[SettingRow]) -> Vec<SettingChange> {
    let mut previous: BTreeMap<(String, bool), &SettingRow> = BTreeMap::new();
    let mut changes = Vec::new();
    for row in rows.iter().filter(|r| tracked(&r.name)) {
        let key = (row.name.clone(), row.source == RowSource::Config);
        let before = previous.insert(key, row);
        let old = before.and_then(|b| b.value.clone());
        if old == row.value {
            continue;
        }
        let source = match row.source {
            RowSource::Config => ValueSource::Config,
            RowSource::ConfFile => {
                // A removal is shown where the value was.
                let at = if row.value.is_some() { Some(row) } else { before };
                let path = at.and_then(|r| r.path.clone()).unwrap_or_default();
                ValueSource::ConfFile { path, line: at.and_then(|r| r.line).unwrap_or(0) as usize }
            }
        };
        changes.push(SettingChange { at: row.since, name: row.name.clone(), old, new: row.value.clone(), source });
    }
    changes
}

fn log_changes(log: &[LogChange]) -> Vec<SettingChange> {
    let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
    log.iter()
        .filter(|c| tracked(&c.name))
        .map(|c| {
            let old = previous.insert(&c.name, &c.value).map(String::from);
            SettingChange {
                at: c.at,
                name: c.name.clone(),
                old,
                new: Some(c.value.clone()),
                source: ValueSource::Log { at: c.at },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
