//! One cluster's findings: its server's logging settings, read from its conf
//! files, and whether the user walwatch runs as may read its logs.

use std::path::{Path, PathBuf};

use crate::config::ClusterConfig;
use crate::daemon::access::access_fix_for;
use crate::daemon::follow::listing;
use crate::settings::conf::ConfProblemKind;
use crate::settings::{data_directory_of, data_directory_version, read_server_conf, ServerConf};

use super::access::Account;
use super::finding::Finding;
use super::server::{self, Follows, Setting};
use super::syslog;

pub(super) fn check(cluster: &ClusterConfig, account: &Account, rsyslog_conf: &Path) -> Vec<Finding> {
    let (paths, problems) = listing(cluster);
    let format = followed_format(cluster, &paths);
    let follows = if cluster.logs.is_empty() { Follows::CurrentLogfiles } else { Follows::Globs(&format) };
    let (mut out, destination) = settings(cluster, &paths, &format, follows, account);
    out.extend(syslog::check(&format, destination.as_deref(), rsyslog_conf));
    out.extend(problems.iter().map(|(path, problem)| listing_problem(Path::new(path), problem, account)));
    if paths.is_empty() && problems.is_empty() {
        out.push(Finding::error(
            "logs",
            "no log file and no data_directory to find one in",
            "walwatch follows nothing for this cluster",
            "name the log files in the [[cluster]] logs of walwatch.toml, or its data_directory",
        ));
    }
    if !paths.is_empty() {
        // The daemon rereads current_logfiles to find each new file.
        let index =
            cluster.data_directory.as_ref().filter(|_| cluster.logs.is_empty()).map(|d| d.join("current_logfiles"));
        let read: Vec<PathBuf> = index.into_iter().chain(paths.iter().cloned()).collect();
        out.push(logs_readable(&read, account));
    }
    out
}

/// How walwatch reads the newest file: the configured format, else by its name
/// (PostgreSQL names its csvlog and jsonlog files .csv and .json).
fn followed_format(cluster: &ClusterConfig, paths: &[PathBuf]) -> String {
    if cluster.format != "auto" {
        return cluster.format.clone();
    }
    let ext = paths.last().and_then(|p| p.extension()).and_then(|e| e.to_str());
    match ext {
        Some("csv") => "csvlog",
        Some("json") => "jsonlog",
        _ => "stderr",
    }
    .into()
}

/// postgresql.conf: `config_file`, else the data directory's, else
/// Debian's for a cluster found as /var/log/postgresql/postgresql-15-main.log,
/// else that of the data directory a log lies in.
fn conf_sources(cluster: &ClusterConfig, paths: &[PathBuf]) -> (Option<PathBuf>, Option<PathBuf>) {
    if cluster.config_file.is_some() || cluster.data_directory.is_some() {
        return (cluster.config_file.clone(), cluster.data_directory.clone());
    }
    let debian = cluster.logs.iter().any(|g| g.starts_with("/var/log/postgresql/")).then(|| {
        let (version, name) = cluster.name.split_once('-')?;
        Some(PathBuf::from(format!("/etc/postgresql/{version}/{name}/postgresql.conf")))
    });
    match debian.flatten().filter(|p| p.exists()) {
        Some(conf) => (Some(conf), None),
        None => (None, paths.iter().find_map(|p| data_directory_of(p))),
    }
}

/// The findings on the server's conf, and its log_destination when known.
fn settings(
    cluster: &ClusterConfig,
    paths: &[PathBuf],
    format: &str,
    follows: Follows<'_>,
    account: &Account,
) -> (Vec<Finding>, Option<String>) {
    let (config_file, data_dir) = conf_sources(cluster, paths);
    let Some(conf) = read_server_conf(config_file.as_deref(), data_dir.as_deref()) else {
        let unknown = vec![Finding::warning(
            "postgresql.conf",
            "walwatch does not know where this cluster's postgresql.conf is",
            "log_checkpoints, log_line_prefix, lc_messages and log_destination cannot be checked, and walwatch's \
             settings and advice rest on the log and PostgreSQL's defaults only",
            "set config_file (Debian: /etc/postgresql/<version>/<cluster>/postgresql.conf) or data_directory in \
             the cluster's [[cluster]] table of walwatch.toml",
        )];
        return (unknown, None);
    };
    let unread = conf.parsed.problems.iter().find(|p| p.path == conf.main && p.kind != ConfProblemKind::Syntax);
    if let Some(problem) = unread {
        let unread = vec![Finding::warning(
            "postgresql.conf",
            problem.to_string(),
            "log_checkpoints, log_line_prefix, lc_messages and log_destination cannot be checked as this user",
            format!(
                "run walwatch doctor as root (or as the server's user); {}",
                access_fix_for(&conf.main, &account.name)
            ),
        )];
        return (unread, None);
    }
    let version = conf.data_directory.as_deref().and_then(data_directory_version);
    let main = conf.main.display().to_string();
    let get = |name| Setting::of(&conf.parsed, name, version);
    let destination = get("log_destination");
    let findings = vec![
        conf_finding(&conf, account),
        server::log_checkpoints(&get("log_checkpoints"), &main),
        server::log_line_prefix(&get("log_line_prefix"), format, &cluster.prefix, &main),
        server::lc_messages(&get("lc_messages"), &main),
        server::destination(&destination, &get("logging_collector"), follows, &main),
    ];
    (findings, Some(destination.value))
}

/// The conf as read, and whether walwatch's user may read it (its settings
/// and advice use it; without it they fall back to the log and the defaults).
fn conf_finding(conf: &ServerConf, account: &Account) -> Finding {
    const CHECK: &str = "postgresql.conf";
    if let Some(problem) = conf.parsed.problems.first() {
        return Finding::warning(
            CHECK,
            problem.to_string(),
            "PostgreSQL refuses a conf with errors on reload (\"configuration file contains errors; no changes \
             were applied\"), and walwatch does not record settings from it",
            "correct the line (see the server's log for what it refused), then reload",
        );
    }
    let user = &account.name;
    match account.may_read(&conf.main) {
        Ok(()) => Finding::ok(CHECK, format!("{} read; {user} may read it", conf.main.display())),
        Err(e) => Finding::warning(
            CHECK,
            format!("{user} cannot read {}: {e}", conf.main.display()),
            "walwatch settings, suggest and the alerts then know max_wal_size, checkpoint_timeout and the rest \
             only from the log's changes and PostgreSQL's defaults",
            conf_access_fix(&conf.main, user),
        ),
    }
}

/// Debian keeps the conf readable to all under /etc/postgresql; PGDG in
/// $PGDATA, which PostgreSQL lets its group read at 0750 (never more).
fn conf_access_fix(conf: &Path, user: &str) -> String {
    let settings = "or give the values walwatch needs in the cluster's [cluster.settings] table of walwatch.toml";
    if conf.starts_with("/etc/postgresql") {
        return format!("Debian installs it readable to all: `chmod 0644 {}`; {settings}", conf.display());
    }
    let dir = conf.parent().unwrap_or(Path::new("/")).display();
    format!(
        "`chmod 0640 {}` and `chmod 0750 {dir}` (PostgreSQL accepts a data directory its group may read), and put \
         {user} in group postgres (`usermod -aG postgres {user}`; the service: SupplementaryGroups=postgres); \
         {settings}",
        conf.display()
    )
}

/// A glob's directory that cannot be listed, a glob matching nothing, a
/// current_logfiles that cannot be read (as the daemon says them).
fn listing_problem(path: &Path, problem: &str, account: &Account) -> Finding {
    let fix = if problem.contains("ermission denied") {
        access_fix_for(path, &account.name)
    } else {
        "name the right files in the [[cluster]] logs of walwatch.toml (`SHOW log_directory;`, `SHOW \
         log_filename;`), or its data_directory"
            .into()
    };
    Finding::error(
        "logs",
        format!("{}: {problem}", path.display()),
        "walwatch follows nothing it cannot find or list",
        fix,
    )
}

/// Every file the daemon would read (current_logfiles first, the newest
/// log last), and its directory, as the service user.
fn logs_readable(paths: &[PathBuf], account: &Account) -> Finding {
    let user = &account.name;
    let mut denied = Vec::new();
    for path in paths {
        let dir = path.parent().unwrap_or(Path::new("/"));
        if let Err(e) = account.may_list(dir).and_then(|()| account.may_read(path)) {
            denied.push((path, e));
        }
    }
    let newest = paths.last().map(|p| p.display().to_string()).unwrap_or_default();
    let Some((first, _)) = denied.first() else {
        return Finding::ok(
            "logs",
            format!("{user} may read the {} file(s) walwatch reads, the newest {newest}", paths.len()),
        );
    };
    let list: Vec<String> = denied.iter().map(|(p, e)| format!("{} ({e})", p.display())).collect();
    Finding::error(
        "logs",
        format!(
            "{user} cannot read {} of the {} file(s) walwatch reads: {}",
            denied.len(),
            paths.len(),
            list.join(", ")
        ),
        "the daemon reads what its user may: no checkpoint of these files reaches the store, and the alerts and \
         the advice miss them",
        access_fix_for(first, user),
    )
}
