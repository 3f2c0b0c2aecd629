//! walwatch's own findings: the store, the mail, the daemon.

use std::path::Path;

use crate::config::Config;
use crate::store::Store;

use super::super::{error_text, status};
use super::access::Account;
use super::finding::Finding;

pub(super) fn check(config: &Config, db: &Path, account: &Account) -> Vec<Finding> {
    vec![store(db, account), mail(config), daemon(db)]
}

/// The daemon writes the store, and SQLite its -wal and -journal beside it.
fn store(db: &Path, account: &Account) -> Finding {
    const CHECK: &str = "store";
    let user = &account.name;
    let dir = db.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let fix = format!(
        "let {user} write it: `chown -R {user}: {}` (the packaged unit's StateDirectory=walwatch does this for \
         /var/lib/walwatch), or point [store] path in walwatch.toml at a directory {user} owns",
        dir.display()
    );
    let why = "the daemon records every event in the store: it cannot run without writing it";
    if !db.exists() {
        let exists = dir.exists();
        return match account.may_write(if exists { dir } else { nearest_existing(dir) }) {
            Ok(()) => Finding::ok(CHECK, format!("{} does not exist yet; {user} may create it", db.display())),
            Err(e) => Finding::error(CHECK, format!("{user} cannot create {}: {e}", db.display()), why, fix),
        };
    }
    if let Err(e) = account.may_write(db).and_then(|()| account.may_write(dir)) {
        return Finding::error(CHECK, format!("{user} cannot write {}: {e}", db.display()), why, fix);
    }
    match Store::open_read_only(db) {
        Ok(_) => Finding::ok(CHECK, format!("{} is writable by {user}", db.display())),
        Err(e) => Finding::error(
            CHECK,
            e.to_string(),
            "walwatch cannot use this file as its store",
            "point [store] path (or --db) at walwatch's store",
        ),
    }
}

fn nearest_existing(dir: &Path) -> &Path {
    dir.ancestors().find(|d| d.exists()).unwrap_or(Path::new("/"))
}

/// `[mail]` configured, and its server answering (connect and EHLO: nothing is sent).
fn mail(config: &Config) -> Finding {
    const CHECK: &str = "mail";
    let Some(mail) = &config.mail else {
        if config.webhook.is_some() {
            return Finding::ok(CHECK, "no [mail]: alerts go to the [webhook] only");
        }
        return Finding::warning(
            CHECK,
            "no [mail] and no [webhook]",
            "alerts and the daily digest are kept in the store only: no one is told when checkpoints go wrong",
            "add a [mail] section to walwatch.toml (transport = \"smtp\", [mail.smtp] host, from, to; see \
             config/walwatch.toml), then `walwatch alerts test-mail`",
        );
    };
    match crate::outbox::probe(mail) {
        Ok(answer) => Finding::ok(CHECK, answer),
        Err(e) => Finding::error(
            CHECK,
            e.to_string(),
            "alerts and the digest are queued but not delivered until it works",
            "check [mail] in walwatch.toml (host, port, security, credentials) and that this machine may reach the \
             server (firewall); then `walwatch alerts test-mail`",
        ),
    }
}

/// As `walwatch status` judges the daemon: its heartbeat and its process,
/// and how far behind the followed files it is.
fn daemon(db: &Path) -> Finding {
    const CHECK: &str = "daemon";
    let why = "nothing follows the logs: no event is recorded and no alert fires";
    let start = "`systemctl enable --now walwatch`";
    let restart = "`systemctl restart walwatch`; why it stopped: `journalctl -u walwatch`";
    if !db.exists() {
        return Finding::warning(CHECK, format!("none has run: there is no store at {} yet", db.display()), why, start);
    }
    let summary = match Store::open_read_only(db).map_err(anyhow::Error::from).and_then(|s| status::daemon_summary(&s))
    {
        Ok(s) => s,
        Err(e) => return Finding::error(CHECK, error_text(&e), "whether a daemon runs cannot be told", restart),
    };
    let line = summary.line.trim_start_matches("daemon: ").to_string();
    if summary.down {
        return Finding::error(CHECK, line, why, restart);
    }
    if summary.never {
        return Finding::warning(CHECK, line, why, start);
    }
    if !summary.behind.is_empty() {
        return Finding::warning(
            CHECK,
            format!("{line}; behind: {}", summary.behind.join("; ")),
            "events and alerts come late by as much as is not read yet",
            "see `walwatch status` and `journalctl -u walwatch` for what slows it (a slow disk, a log flood)",
        );
    }
    Finding::ok(CHECK, format!("{line}, keeping up"))
}
