//! `walwatch settings`: the values walwatch knows, their source, the timeline.
//!
//! JSON (`--format json`), one object per cluster, sorted by name:
//! `[{"cluster": "main", "version": 15 | null, "current": {"max_wal_size":
//! {"value": "1GB", "source": {"kind": "default", "version": 15}}, …},
//! "timeline": [{"at": "…", "name": "max_wal_size", "old": "1GB" | null,
//! "new": "2GB" | null, "source": {…}}]}]`. A source is
//! `{"kind": "config"}`, `{"kind": "conf_file", "path", "line"}`,
//! `{"kind": "log", "at"}`, `{"kind": "inferred", "how", "samples"}` or
//! `{"kind": "default", "version"}`; `version` is the major version (9 is
//! 9.6), null when the log has not said it. `not_inferred` (name -> why;
//! left out when empty) says why a value the log could tell stayed at its
//! default; `data_directory_from_log` (`{"path", "log"}` or null) is the data
//! directory found from a log file inside it, when the config names none.
//! `replay_mb_s` (null without one) is the replay speed of the cluster's
//! crash recoveries, `replay_measured_at` the `redo done` of the newest,
//! `crash_recoveries` how many it comes from; `standby_replays` counts the
//! replays left out as a standby's or an archive recovery's (see
//! `analyze::recovery`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use jiff::Timestamp;
use serde::Serialize;

use crate::cli::{ReportFormat, SettingsArgs};
use crate::config;
use crate::output;
use crate::settings::{self, FoundDataDirectory, SettingChange, Value};
use crate::store::{Store, StoreError};

#[derive(Serialize)]
struct ClusterSettings {
    cluster: String,
    version: Option<u32>,
    current: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    not_inferred: BTreeMap<String, String>,
    data_directory_from_log: Option<FoundDataDirectory>,
    timeline: Vec<SettingChange>,
    replay_mb_s: Option<f64>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    replay_measured_at: Option<Timestamp>,
    crash_recoveries: usize,
    standby_replays: usize,
}

pub(crate) fn run(args: SettingsArgs) -> Result<ExitCode> {
    let super::Loaded { config, db, .. } = super::config_and_db(&args.common)?;
    let configured: Vec<&config::ClusterConfig> =
        config.clusters.iter().filter(|c| args.cluster.as_ref().is_none_or(|only| &c.name == only)).collect();
    let store = if configured.is_empty() { Store::open_read_only(&db)? } else { refreshed(&db, &configured)? };
    let names = cluster_names(&store, &configured, args.cluster.as_deref())?;
    let store = refreshed_from_logs(store, &db, &names, &configured)?;
    let report = names.into_iter().map(|name| describe(&store, &configured, name)).collect::<Result<Vec<_>>>()?;
    let mut out = std::io::stdout().lock();
    match args.format {
        ReportFormat::Json => output::json(&mut out, &report)?,
        ReportFormat::Table => table(&mut out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The store after recording what the configured clusters' settings are now;
/// a user who may not write the store still sees what it holds.
fn refreshed(db: &std::path::Path, clusters: &[&config::ClusterConfig]) -> Result<Store> {
    let mut store = match Store::open_existing(db) {
        Ok(store) => store,
        // A query makes no store: only `import` and the daemon do.
        Err(e @ StoreError::Missing { .. }) => return Err(e.into()),
        Err(e) => {
            tracing::warn!("{e}: the settings are shown as last recorded, not read again");
            return Ok(Store::open_read_only(db)?);
        }
    };
    let now = Timestamp::now();
    for cluster in clusters {
        settings::refresh(&mut store, &crate::settings::Sources::of(cluster), now)
            .with_context(|| format!("cannot record the settings of cluster {:?}", cluster.name))?;
    }
    Ok(store)
}

/// Whether walwatch's config says where `name`'s conf files are.
fn names_conf(configured: &[&config::ClusterConfig], name: &str) -> bool {
    configured.iter().any(|c| c.name == name && (c.config_file.is_some() || c.data_directory.is_some()))
}

/// The store after recording the conf files of the clusters whose log lies
/// in a data directory and whose config names none; as it was when there
/// are none or it may not be written.
fn refreshed_from_logs(
    store: Store,
    db: &std::path::Path,
    names: &[String],
    configured: &[&config::ClusterConfig],
) -> Result<Store> {
    let mut found = Vec::new();
    for name in names.iter().filter(|n| !names_conf(configured, n)) {
        if settings::data_directory_from_logs(&store, name)?.is_some() {
            found.push(name);
        }
    }
    if found.is_empty() {
        return Ok(store);
    }
    let mut store = match Store::open_existing(db) {
        Ok(writable) => writable,
        Err(e) => {
            tracing::warn!("{e}: the conf files in the data directories found from the logs are not read");
            return Ok(store);
        }
    };
    let now = Timestamp::now();
    for name in found {
        settings::refresh_from_logs(&mut store, name, now)
            .with_context(|| format!("cannot record the settings of cluster {name:?}"))?;
    }
    Ok(store)
}

/// The configured clusters and those only imported, or just `--cluster`.
fn cluster_names(store: &Store, configured: &[&config::ClusterConfig], only: Option<&str>) -> Result<Vec<String>> {
    let stored = store.clusters().names()?;
    let mut names: BTreeSet<String> = configured.iter().map(|c| c.name.clone()).collect();
    match only {
        Some(only) if names.contains(only) || stored.iter().any(|s| s == only) => Ok(vec![only.to_string()]),
        Some(only) => anyhow::bail!("no cluster {only:?} in the config or the store {}", store.path().display()),
        None => {
            names.extend(stored);
            Ok(names.into_iter().collect())
        }
    }
}

fn describe(store: &Store, configured: &[&config::ClusterConfig], name: String) -> Result<ClusterSettings> {
    let current = settings::current(store, &name)?;
    let timeline = settings::timeline(store, &name)?;
    let found = if names_conf(configured, &name) { None } else { settings::data_directory_from_logs(store, &name)? };
    let replays = store.events().replays(&name)?;
    let speed = crate::analyze::recovery::crash_speed(&replays);
    Ok(ClusterSettings {
        replay_mb_s: speed.map(|s| (s.mb_s * 10.0).round() / 10.0),
        replay_measured_at: speed.map(|s| s.measured_at),
        crash_recoveries: speed.map_or(0, |s| s.recoveries),
        standby_replays: replays.iter().filter(|r| !r.crash).count(),
        version: current.version,
        current: current.values,
        not_inferred: current.not_inferred,
        data_directory_from_log: found,
        timeline,
        cluster: name,
    })
}

fn table(out: &mut impl Write, report: &[ClusterSettings]) -> Result<()> {
    for (i, c) in report.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let version = c.version.map(crate::guc::version_name).unwrap_or_else(|| "version unknown".into());
        output::line(out, format!("cluster {} (PostgreSQL {version})", c.cluster))?;
        let rows: Vec<Vec<String>> =
            c.current.iter().map(|(name, v)| vec![name.clone(), v.value.clone(), v.source.to_string()]).collect();
        output::table(out, &["name", "value", "source"], &rows, &[])?;
        if let Some(found) = &c.data_directory_from_log {
            let (dir, log) = (found.path.display(), &found.log);
            output::line(out, format!("data directory {dir} (holds the log {log}): its conf files are read"))?;
        }
        for (name, why) in &c.not_inferred {
            output::line(out, format!("{name} not inferred from the log: {why}"))?;
        }
        writeln!(out, "{}", replay_line(c))?;
        if c.timeline.is_empty() {
            writeln!(out, "no changes recorded")?;
            continue;
        }
        writeln!(out, "changes:")?;
        let none = || "-".to_string();
        let rows: Vec<Vec<String>> = c
            .timeline
            .iter()
            .map(|ch| {
                vec![
                    crate::timefmt::table_time(ch.at),
                    ch.name.clone(),
                    ch.old.clone().unwrap_or_else(none),
                    ch.new.clone().unwrap_or_else(none),
                    ch.source.to_string(),
                ]
            })
            .collect();
        output::table(out, &["at", "name", "old", "new", "source"], &rows, &[])?;
    }
    Ok(())
}

/// The replay speed the recovery bound and `whatif` use, and where it comes from.
fn replay_line(c: &ClusterSettings) -> String {
    let line = match (c.replay_mb_s, c.replay_measured_at) {
        (Some(mb_s), Some(at)) => {
            let n = c.crash_recoveries;
            let plural = if n == 1 { "y" } else { "ies" };
            format!(
                "crash recovery replay speed: {} MB/s ({n} crash recover{plural}, the newest done {})",
                crate::output::grouped_f(mb_s, 1),
                crate::timefmt::table_time(at)
            )
        }
        _ => "crash recovery replay speed: not measured (no crash recovery in the log)".to_string(),
    };
    match c.standby_replays {
        0 => line,
        n => format!("{line}; {n} standby or archive replay{} left out", if n == 1 { "" } else { "s" }),
    }
}

#[cfg(test)]
mod tests {
    /// Values come from files and logs others write: the table shows a
    /// terminal escape or a bidi override in one escaped (output::shown).
    #[test]
    fn hostile_values_are_shown_escaped() {
        let c = super::ClusterSettings {
            cluster: "c".into(),
            version: Some(150000),
            current: Default::default(),
            not_inferred: [("max_wal_size".to_string(), "\u{1b}[2Jcleared".to_string())].into(),
            data_directory_from_log: None,
            timeline: Vec::new(),
            replay_mb_s: None,
            replay_measured_at: None,
            crash_recoveries: 0,
            standby_replays: 0,
        };
        let mut out = Vec::new();
        super::table(&mut out, &[c]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("max_wal_size not inferred from the log: \\u{1b}[2Jcleared\n"), "{text}");
    }
}
