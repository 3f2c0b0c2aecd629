//! `walwatch config check`: validate the configuration file.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::alert::rules::RuleSet;
use crate::cli::ConfigCommand;
use crate::config::{Config, MailTransport};

pub(crate) fn run(cmd: ConfigCommand) -> Result<ExitCode> {
    match cmd {
        ConfigCommand::Check(args) => {
            crate::output::lines(&mut std::io::stdout().lock(), &check(args.config.as_deref(), Path::new("/"))?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Validates the configuration at `path` (or the default one) with its
/// rules' tables and describes it, with what discovery under `root` finds
/// when no cluster is given.
pub fn check(path: Option<&Path>, root: &Path) -> Result<String> {
    let (config, source) = crate::config::load_or_default(path)?;
    let rules = RuleSet::configure(&config.alerts)?;
    // What a start or a reload reads besides the file: the receiver would
    // not start (or a reload would keep the old one) without them.
    let ingest = crate::receive::check(&config.ingest);
    if !ingest.is_empty() {
        anyhow::bail!("{}", ingest.join("\n"));
    }
    Ok(format!(
        "{}{}{}",
        crate::config::describe(&config, &source, root),
        reading_lines(&config),
        alerting_line(&config, &rules)
    ))
}

/// What keeps the daemon from reading each configured cluster's logs, as
/// this user sees them (run it as the service's user to see what it sees):
/// a valid config that follows nothing is still said to be wrong.
fn reading_lines(config: &Config) -> String {
    let mut out = String::new();
    for cluster in &config.clusters {
        for (path, problem) in crate::daemon::follow::listing_problems(cluster) {
            out += &format!("warning: cluster {}: {path}: {problem}\n", cluster.name);
        }
    }
    out
}

/// Which rules run and where their notices go.
fn alerting_line(config: &Config, rules: &RuleSet) -> String {
    let mut sinks = Vec::new();
    if let Some(mail) = &config.mail {
        let how = match &mail.transport {
            MailTransport::Smtp(smtp) => format!("smtp {}:{}", smtp.host, smtp.port),
            MailTransport::Sendmail { command } => format!("sendmail {}", command.display()),
            MailTransport::File { directory } => format!(".eml files in {}", directory.display()),
        };
        sinks.push(format!("mail to {} via {how}", crate::config::plural(mail.to.len(), "recipient")));
    }
    if let Some(webhook) = &config.webhook {
        // Only the origin: a webhook URL often carries its token in the path or query.
        let origin = webhook.url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        sinks.push(format!("webhook {origin}/…"));
    }
    let delivery = if sinks.is_empty() { "none: alerts are kept in the store".to_string() } else { sinks.join(", ") };
    let (enabled, all) = (rules.enabled().len(), crate::alert::rules::REGISTRY.len());
    format!("alert rules: {enabled} of {all} enabled; delivery: {delivery}\n")
}
