//! Why a cluster's logs cannot be found or read, and how to let walwatch
//! read them: the daemon never follows nothing silently. A data directory
//! whose `current_logfiles` cannot be read, a log directory that cannot be
//! listed (RHEL/PGDG keep `$PGDATA` at 0700), a glob that matches no file:
//! each is a problem the daemon records for `walwatch status` and the
//! `logs_not_read` alert, and warns about in its log once (then on change).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Problems found by one listing: path (or glob) → what is wrong.
pub(crate) type Problems = BTreeMap<String, String>;

/// How to let the walwatch service read the logs at `path`, for the two
/// layouts packagers use (see systemd/walwatch.service).
pub(crate) fn access_fix(path: &Path) -> String {
    access_fix_for(path, "walwatch")
}

/// [`access_fix`] for the service running as `user` (`walwatch doctor --user`).
pub(crate) fn access_fix_for(path: &Path, user: &str) -> String {
    if path.starts_with("/var/log/postgresql") {
        return format!(
            "Debian/Ubuntu keep these logs as postgres:adm 0640: run walwatch in group adm (the packaged \
             unit sets SupplementaryGroups=adm; by hand: `usermod -aG adm {user}`), then restart it"
        );
    }
    format!(
        "RHEL/PGDG keep $PGDATA and its log private to postgres (0700, log_file_mode = 0600): set log_file_mode = \
         0640 in postgresql.conf, give group postgres the way down to the log (`chmod 0750 /var/lib/pgsql $PGDATA \
         $PGDATA/log`, then restart PostgreSQL: it takes its files' mode from $PGDATA's at start), and the service \
         group postgres (`systemctl edit walwatch`: [Service] SupplementaryGroups=postgres; by hand: `usermod -aG \
         postgres {user}`); or point log_directory at a directory outside $PGDATA that group walwatch can read"
    )
}

/// The problem of a file or directory that cannot be read (`what`: "open",
/// "list", "read"): the error, and for a permission error the fix.
pub(crate) fn cannot(what: &str, path: &Path, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => format!("cannot {what}: {e}; {}", access_fix(path)),
        _ => format!("cannot {what}: {e}"),
    }
}

/// `$PGDATA/current_logfiles` as a source of log paths: its problem when
/// it cannot be read or names no file.
pub(crate) fn current_logfiles_problem(data_dir: &Path, read: &io::Result<Vec<(String, PathBuf)>>) -> Option<String> {
    match read {
        Ok(entries) if entries.is_empty() => Some(
            "names no log file: PostgreSQL lists its log files there only with logging_collector = on; \
             otherwise set logs in the cluster's [[cluster]] table"
                .into(),
        ),
        Ok(_) => None,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some(format!(
            "cannot read: {e}; PostgreSQL writes it only with logging_collector = on (is {} the data directory?); \
             otherwise set logs in the cluster's [[cluster]] table",
            data_dir.display()
        )),
        Err(e) => Some(cannot("read", &data_dir.join("current_logfiles"), e)),
    }
}

/// Why the directory `dir` a glob starts in cannot be listed, if it cannot.
pub(crate) fn listing_problem(dir: &Path) -> Option<String> {
    match std::fs::read_dir(dir) {
        Ok(_) => None,
        Err(e) => Some(cannot("list the directory", dir, &e)),
    }
}

/// The problem of a glob that matches no file.
pub(crate) fn no_match_problem() -> String {
    "matches no file: walwatch follows nothing here until one appears; check the path (`SHOW log_directory;`, \
     `SHOW log_filename;`)"
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_layout_gets_its_own_fix() {
        let debian = access_fix(Path::new("/var/log/postgresql/postgresql-15-main.log"));
        assert!(debian.contains("SupplementaryGroups=adm"), "{debian}");
        let rhel = access_fix(Path::new("/var/lib/pgsql/15/data/log"));
        assert!(rhel.contains("SupplementaryGroups=postgres") && rhel.contains("log_file_mode = 0640"), "{rhel}");
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        let text = cannot("list the directory", Path::new("/var/lib/pgsql/15/data/log"), &denied);
        assert!(text.starts_with("cannot list the directory: permission denied; RHEL/PGDG"), "{text}");
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(cannot("open", Path::new("/x"), &missing), "cannot open: entity not found");
    }

    #[test]
    fn current_logfiles_that_names_nothing_is_a_problem() {
        let dir = Path::new("/var/lib/pgsql/15/data");
        assert!(current_logfiles_problem(dir, &Ok(vec![])).unwrap().starts_with("names no log file"));
        let found = Ok(vec![("stderr".to_string(), dir.join("log/postgresql-Mon.log"))]);
        assert_eq!(current_logfiles_problem(dir, &found), None);
        let gone = Err(io::Error::from(io::ErrorKind::NotFound));
        assert!(current_logfiles_problem(dir, &gone).unwrap().contains("logging_collector = on"));
    }
}
