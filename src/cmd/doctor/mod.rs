//! `walwatch doctor`: whether PostgreSQL logs what walwatch needs, whether
//! walwatch may read it, and whether the store, the mail and the daemon
//! work. Every finding is ok, warning or error with why it matters and the
//! exact fix; any error makes the exit status 1.

mod access;
mod cluster;
mod finding;
mod ingest;
mod listeners;
mod server;
mod service;
mod syslog;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::cli::{DoctorArgs, ReportFormat};
use crate::config::{ClusterConfig, Config};
use access::Account;
use finding::Status;

pub(crate) fn run(args: DoctorArgs) -> Result<ExitCode> {
    let super::Loaded { config, db, .. } = super::config_and_db(&args.common)?;
    let account = Account::resolve(args.user.as_deref())?;
    let mut findings = Vec::new();
    for cluster in clusters(&config, &args)? {
        let found = cluster::check(&cluster, &account, &args.rsyslog_conf);
        findings.extend(found.into_iter().map(|f| f.of(&cluster.name)));
    }
    findings.extend(ingest::check(&config.ingest, &db, &account));
    findings.extend(service::check(&config, &db, &account));
    let running = crate::store::Store::open_read_only(&db)
        .map_err(anyhow::Error::from)
        .and_then(|s| super::status::daemon_summary(&s))
        .is_ok_and(|d| !d.down && !d.never);
    findings.extend(listeners::check(&config, &db, running));
    let mut out = std::io::stdout().lock();
    match args.format {
        ReportFormat::Json => crate::output::json(&mut out, &findings)?,
        ReportFormat::Table if !super::quiet() => finding::table(&mut out, &findings)?,
        ReportFormat::Table => {}
    }
    let failed = findings.iter().any(|f| f.status == Status::Error);
    Ok(ExitCode::from(if failed { super::EXIT_FAILURE } else { 0 }))
}

/// `--data-directory`, else the configured clusters (else the discovered
/// ones; none on a central walwatch, `[ingest]` without `[[cluster]]`),
/// `--cluster` picking one.
fn clusters(config: &Config, args: &DoctorArgs) -> Result<Vec<ClusterConfig>> {
    let configured = &config.clusters;
    if let Some(dir) = &args.data_directory {
        let name = dir.display().to_string();
        return Ok(vec![ClusterConfig { name, data_directory: Some(dir.clone()), ..ClusterConfig::default() }]);
    }
    let all = match configured.is_empty() {
        true if config.ingest.listen.is_some() && args.cluster.is_none() => return Ok(Vec::new()),
        true => crate::config::discover(Path::new("/")).clusters,
        false => configured.to_vec(),
    };
    if all.is_empty() {
        bail!("no [[cluster]] in the config and none discovered: name one in walwatch.toml, or pass --data-directory");
    }
    match &args.cluster {
        None => Ok(all),
        Some(name) => match all.iter().find(|c| &c.name == name) {
            Some(c) => Ok(vec![c.clone()]),
            None => {
                let known: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
                bail!("no cluster {name:?} (known: {})", known.join(", "))
            }
        },
    }
}
