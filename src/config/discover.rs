//! With no `[[cluster]]`, the clusters are found where the distributions put
//! them: Debian/Ubuntu's `/var/log/postgresql/postgresql-<version>-<name>.log`
//! and RHEL/PGDG's `/var/lib/pgsql/[<version>/]data`, whose
//! `current_logfiles` names the files the logging collector writes.
//! Everything found, and everything that could not be looked at, is reported:
//! a daemon that silently watches nothing is the failure to avoid.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::ClusterConfig;

/// What discovery found, with notes on what it could not use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    pub clusters: Vec<ClusterConfig>,
    /// Places that exist but could not be used, and why.
    pub notes: Vec<String>,
}

/// The formats listed in `current_logfiles`, the most informative first: the
/// structured ones carry the session fields that expose forged lines.
const PREFERRED_FORMATS: [&str; 3] = ["jsonlog", "csvlog", "stderr"];

/// Looks under `root` (`/` in production; tests pass a fake root).
pub fn discover(root: &Path) -> Discovery {
    let mut found = Discovery::default();
    debian(root, &mut found);
    pgdg(root, &mut found);
    found
}

/// The `(format, file)` lines of `$PGDATA/current_logfiles`, e.g.
/// `stderr log/postgresql-Sun.log`; relative paths are resolved against the
/// data directory, as the server writes them relative to it.
pub fn current_logfiles(data_dir: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let text = fs::read_to_string(data_dir.join("current_logfiles"))?;
    let entries = text.lines().filter_map(|line| {
        let (format, file) = line.split_once(' ')?;
        (!format.is_empty() && !file.is_empty()).then(|| (format.to_string(), data_dir.join(file)))
    });
    Ok(entries.collect())
}

/// Debian/Ubuntu: one cluster per `postgresql-<version>-<name>.log`, named
/// `<version>-<name>` as `import` names it; the glob takes the rotated copies.
fn debian(root: &Path, found: &mut Discovery) {
    let dir = root.join("var/log/postgresql");
    let Some(entries) = read_dir(&dir, found) else { return };
    let stems: BTreeSet<String> = entries.filter_map(|e| debian_stem(&e.ok()?.file_name().to_string_lossy())).collect();
    for stem in stems {
        let current = dir.join(format!("postgresql-{stem}.log"));
        if let Err(e) = fs::File::open(&current) {
            if e.kind() != io::ErrorKind::NotFound {
                found.notes.push(format!("cannot read {}: {e}", current.display()));
            }
        }
        let logs = vec![format!("{}/postgresql-{}.log*", glob_escape(&dir), glob_escape(Path::new(&stem)))];
        found.clusters.push(ClusterConfig { name: stem, logs, ..ClusterConfig::default() });
    }
}

/// A cluster name for a log file when none is given (`walwatch import`):
/// `15-main` for Debian's `postgresql-15-main.log` (the name discovery gives
/// it too), the data directory's name for `$PGDATA/log/…` and
/// `$PGDATA/pg_log/…` (see `data_dir_name` for versioned layouts),
/// else the directory name.
pub(crate) fn cluster_name(path: &str) -> String {
    if path == "-" {
        return "default".into();
    }
    let p = Path::new(path);
    if let Some(stem) = p.file_name().and_then(|f| f.to_str()).and_then(debian_stem) {
        return stem;
    }
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut dirs = abs.ancestors().skip(1).filter_map(|d| d.file_name()?.to_str());
    match dirs.next() {
        Some("log" | "pg_log" | "logs") => match dirs.next() {
            Some(data_dir) => data_dir_name(data_dir, dirs.next()),
            None => "default".into(),
        },
        Some(dir) => dir.to_string(),
        None => "default".into(),
    }
}

/// The cluster name of a data directory, given the directory above it: the
/// same name discovery gives the cluster, so that what is imported and what
/// the daemon follows land in one cluster. Under a version directory that is
/// `16` for PGDG's `/var/lib/pgsql/16/data` and `15-main` for Debian's
/// `/var/lib/postgresql/15/main`; elsewhere the data directory's own name.
fn data_dir_name(data_dir: &str, above: Option<&str>) -> String {
    match above.filter(|v| is_version(v)) {
        Some(version) if data_dir == "data" => version.to_string(),
        Some(version) => format!("{version}-{data_dir}"),
        None => data_dir.to_string(),
    }
}

/// `15-main` from `postgresql-15-main.log`, `.log.1` or `.log.2.gz`; None for
/// other files, such as the date-named `postgresql-2026-11-22_080420.log`.
fn debian_stem(file: &str) -> Option<String> {
    let (stem, suffix) = file.strip_prefix("postgresql-")?.split_once(".log")?;
    let (version, name) = stem.split_once('-')?;
    let named = !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit());
    (is_version(version) && named && (suffix.is_empty() || suffix.starts_with('.'))).then(|| stem.to_string())
}

/// RHEL/PGDG: `/var/lib/pgsql/<version>/data` (cluster `<version>`) and the
/// distribution's own `/var/lib/pgsql/data` (cluster `data`).
fn pgdg(root: &Path, found: &mut Discovery) {
    let base = root.join("var/lib/pgsql");
    let Some(entries) = read_dir(&base, found) else { return };
    let mut candidates: Vec<(String, PathBuf)> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            is_version(&name).then(|| (name.clone(), base.join(name).join("data")))
        })
        .collect();
    candidates.sort();
    candidates.push(("data".into(), base.join("data")));
    for (name, data_dir) in candidates.into_iter().filter(|(_, d)| d.is_dir()) {
        match pgdg_cluster(name, &data_dir) {
            Ok(cluster) => found.clusters.push(cluster),
            Err(note) => found.notes.push(note),
        }
    }
}

/// The cluster that follows what `current_logfiles` lists, in one format (the
/// formats hold the same events; reading two would count them twice).
fn pgdg_cluster(name: String, data_dir: &Path) -> Result<ClusterConfig, String> {
    let listed = current_logfiles(data_dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!(
            "{}: no current_logfiles (logging_collector off, or the server has not started): not followed",
            data_dir.display()
        ),
        _ => format!("cannot read {}: {e}", data_dir.join("current_logfiles").display()),
    })?;
    let (format, file) = PREFERRED_FORMATS
        .iter()
        .find_map(|f| listed.iter().find(|(format, _)| format == f))
        .ok_or_else(|| format!("{}: current_logfiles lists no stderr, csvlog or jsonlog file", data_dir.display()))?;
    Ok(ClusterConfig {
        name,
        logs: vec![sibling_glob(file)],
        data_directory: Some(data_dir.to_path_buf()),
        format: format.clone(),
        ..ClusterConfig::default()
    })
}

/// `<dir>/*.csv` for `<dir>/postgresql-Sun.csv`: every file of that format
/// in the log directory, whatever log_filename's pattern.
fn sibling_glob(file: &Path) -> String {
    let dir = glob_escape(file.parent().unwrap_or(Path::new("/")));
    match file.extension() {
        Some(ext) => format!("{dir}/*.{}", glob_escape(Path::new(ext))),
        None => format!("{dir}/*"),
    }
}

/// The entries of `dir`; None when it does not exist (nothing to report) or
/// cannot be read (noted: the user may need to grant access).
fn read_dir(dir: &Path, found: &mut Discovery) -> Option<fs::ReadDir> {
    match fs::read_dir(dir) {
        Ok(entries) => Some(entries),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            found.notes.push(format!("cannot read {}: {e}", dir.display()));
            None
        }
    }
}

/// "15", "9.6"
fn is_version(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// A literal path inside a glob: `*`, `?`, `[` and `]` match themselves.
fn glob_escape(path: &Path) -> String {
    glob::Pattern::escape(&path.to_string_lossy())
}

impl fmt::Display for Discovery {
    /// One line per cluster and per note, for `config check` and the
    /// daemon's startup log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.clusters.len() {
            0 => writeln!(
                f,
                "discovery found no PostgreSQL log (looked for /var/log/postgresql/postgresql-<version>-<name>.log \
                 and /var/lib/pgsql/[<version>/]data/current_logfiles); add a [[cluster]] to the config"
            )?,
            1 => writeln!(f, "discovery found 1 cluster:")?,
            n => writeln!(f, "discovery found {n} clusters:")?,
        }
        for cluster in &self.clusters {
            writeln!(f, "  {}", cluster.describe())?;
        }
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_follow_common_layouts() {
        assert_eq!(cluster_name("/var/log/postgresql/postgresql-15-main.log"), "15-main");
        assert_eq!(cluster_name("/var/log/postgresql/postgresql-15-main.log.1"), "15-main");
        // $PGDATA/log and $PGDATA/pg_log: the data directory's name, even a generic one.
        assert_eq!(cluster_name("/srv/pg/data/log/postgresql-2026-11-22_080420.log"), "data");
        assert_eq!(cluster_name("/srv/pg/pgdata/pg_log/postgresql-Sun.log"), "pgdata");
        assert_eq!(cluster_name("/var/lib/pgsql/data/log/postgresql-Sun.log"), "data");
        assert_eq!(cluster_name("/srv/main/pg_log/postgresql.csv"), "main");
        assert_eq!(cluster_name("/srv/mydata/log/postgresql.json"), "mydata");
        // Under a version directory, the names discovery gives: PGDG's and Debian's.
        assert_eq!(cluster_name("/var/lib/pgsql/16/data/log/postgresql-Sun.log"), "16");
        assert_eq!(cluster_name("/var/lib/postgresql/15/main/log/postgresql-2026-11-22_080420.log"), "15-main");
        assert_eq!(cluster_name("/var/lib/postgresql/9.6/main/pg_log/postgresql.csv"), "9.6-main");
        assert_eq!(cluster_name("/log/postgresql.log"), "default");
        assert_eq!(cluster_name("/tmp/x/run1/postgresql.csv"), "run1");
        assert_eq!(cluster_name("-"), "default");
        // The same Debian names as discovery: a date-named file is not a cluster name.
        assert_eq!(cluster_name("/var/log/postgresql/postgresql-9.6-my-db.log.2.gz"), "9.6-my-db");
        assert_eq!(cluster_name("/var/log/postgresql/postgresql-2026-11-22_080420.log"), "postgresql");
    }

    #[test]
    fn debian_stems_follow_import_naming() {
        assert_eq!(debian_stem("postgresql-15-main.log").as_deref(), Some("15-main"));
        assert_eq!(debian_stem("postgresql-15-main.log.1").as_deref(), Some("15-main"));
        assert_eq!(debian_stem("postgresql-9.6-my-db.log.2.gz").as_deref(), Some("9.6-my-db"));
        assert_eq!(debian_stem("postgresql-2026-11-22_080420.log"), None);
        assert_eq!(debian_stem("postgresql-15-main.logx"), None);
        assert_eq!(debian_stem("pg_upgradecluster-15-16-main.log"), None);
        assert_eq!(debian_stem("postgresql-15-.log"), None);
    }

    #[test]
    fn globs_escape_literal_metacharacters() {
        assert_eq!(glob_escape(Path::new("/srv/a[1]/b*?")), "/srv/a[[]1[]]/b[*][?]");
        assert_eq!(sibling_glob(Path::new("/d/log/postgresql-Sun.csv")), "/d/log/*.csv");
        assert_eq!(sibling_glob(Path::new("/d/log/postgresql")), "/d/log/*");
    }

    #[test]
    fn current_logfiles_resolves_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let text = "stderr log/postgresql-Sun.log\ncsvlog /abs/pg.csv\n\ngarbage\n";
        fs::write(dir.path().join("current_logfiles"), text).unwrap();
        let listed = current_logfiles(dir.path()).unwrap();
        assert_eq!(
            listed,
            [
                ("stderr".to_string(), dir.path().join("log/postgresql-Sun.log")),
                ("csvlog".to_string(), PathBuf::from("/abs/pg.csv")),
            ]
        );
    }
}
