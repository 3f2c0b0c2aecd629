//! Which cluster a shipped file belongs to: the first `[[ingest.cluster]]`
//! whose globs match its host and path, else `{host}:{file}`, where
//! `{file}` is a name for the server derived from the path that stays the
//! same across the server's log rotation.

use crate::config::{IngestCluster, DEFAULT_INGEST_NAME};

/// How a shipped file is read and where its events go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) cluster: String,
    pub(crate) format: String,
    pub(crate) prefix: String,
    pub(crate) timezone: Option<String>,
}

/// The placement of (`host`, `file`) by the first rule that matches.
pub(crate) fn place(rules: &[IngestCluster], host: &str, file: &str) -> Placement {
    let matches = |pattern: &str, text: &str| glob::Pattern::new(pattern).is_ok_and(|p| p.matches(text));
    match rules.iter().find(|r| matches(&r.host, host) && matches(&r.file, file)) {
        Some(rule) => Placement {
            cluster: name(&rule.name, host, file),
            format: rule.format.clone(),
            prefix: rule.prefix.clone(),
            timezone: rule.timezone.clone(),
        },
        None => Placement {
            cluster: name(DEFAULT_INGEST_NAME, host, file),
            format: "auto".into(),
            prefix: "auto".into(),
            timezone: None,
        },
    }
}

fn name(template: &str, host: &str, file: &str) -> String {
    template.replace("{host}", host).replace("{file}", &server_of(file))
}

/// Parts of a log's path that say nothing about which server wrote it.
const GENERIC: [&str; 13] =
    ["", "var", "lib", "log", "logs", "pg_log", "data", "pgdata", "postgresql", "postgres", "pgsql", "srv", "opt"];

/// A name for the server whose log `file` is, the same for each of its
/// rotated files: the file name without its extensions, dates, times,
/// weekdays and rotation numbers ("postgresql-15-main.log" → "15-main");
/// when nothing is left, the directories above it that are not generic
/// ("/var/lib/pgsql/15/data/log/postgresql-Mon.log" → "15").
pub(crate) fn server_of(file: &str) -> String {
    let (dirs, base) = file.rsplit_once('/').unwrap_or(("", file));
    let stem = base.split('.').next().unwrap_or("");
    // A date's month and day are digits like a version's ("15"): only those
    // after a year (four digits or more) are dropped.
    let mut dated = false;
    let mut words: Vec<&str> = Vec::new();
    for word in stem.split(['-', '_']) {
        let digits = !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit());
        dated |= digits && word.len() >= 4;
        let date_part = (digits && dated) || is_weekday_or_month(word);
        if !date_part && !GENERIC.contains(&word.to_ascii_lowercase().as_str()) {
            words.push(word);
        }
    }
    if !words.is_empty() {
        return words.join("-");
    }
    let dirs: Vec<&str> = dirs.split('/').filter(|d| !GENERIC.contains(&d.to_ascii_lowercase().as_str())).collect();
    if dirs.is_empty() {
        "postgresql".into()
    } else {
        dirs.join("-")
    }
}

/// log_filename's %a and %b.
fn is_weekday_or_month(word: &str) -> bool {
    const NAMES: [&str; 19] = [
        "mon", "tue", "wed", "thu", "fri", "sat", "sun", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
        "oct", "nov", "dec",
    ];
    NAMES.contains(&word.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_named_the_same_across_rotation() {
        let cases = [
            ("/var/log/postgresql/postgresql-15-main.log", "15-main"),
            ("/var/log/postgresql/postgresql-15-main.log.1", "15-main"),
            ("/var/lib/postgresql/15/main/log/postgresql-2026-11-25_000000.log", "15-main"),
            ("/var/lib/postgresql/15/main/log/postgresql-2026-11-25_000000.csv", "15-main"),
            ("/var/lib/pgsql/15/data/log/postgresql-Mon.log", "15"),
            ("/var/lib/pgsql/data/log/postgresql-Mon.log", "postgresql"),
            ("/srv/pg/orders/pg_log/postgresql-2026-11-25.log", "pg-orders"),
            ("postgresql.log", "postgresql"),
            ("/var/log/postgres/billing_2026-11-25_0700.json", "billing"),
        ];
        for (file, want) in cases {
            assert_eq!(server_of(file), want, "{file}");
        }
    }

    #[test]
    fn the_first_matching_rule_places_a_file() {
        let rule = |host: &str, file: &str, name: &str| IngestCluster {
            host: host.into(),
            file: file.into(),
            name: name.into(),
            format: "stderr".into(),
            prefix: "%m [%p] ".into(),
            timezone: Some("Europe/Paris".into()),
        };
        let rules = [rule("db-*", "/var/log/postgresql/*", "{host}"), rule("*", "*", "all-{file}")];
        let p = place(&rules, "db-7", "/var/log/postgresql/postgresql-15-main.log");
        assert_eq!((p.cluster.as_str(), p.prefix.as_str()), ("db-7", "%m [%p] "));
        assert_eq!(p.timezone.as_deref(), Some("Europe/Paris"));
        assert_eq!(place(&rules, "web-1", "/pg/log/postgresql-16-x.log").cluster, "all-16-x");
        let none = place(&[], "db-7", "/var/log/postgresql/postgresql-15-main.log");
        assert_eq!(
            none,
            Placement { cluster: "db-7:15-main".into(), format: "auto".into(), prefix: "auto".into(), timezone: None }
        );
    }
}
