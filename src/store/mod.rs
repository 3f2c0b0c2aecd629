//! The SQLite store: one file, WAL journal, versioned migrations, UTC times.
//!
//! Writers go through [`Store::commit_batch`], which stores a chunk's events
//! and the source offset they were read up to in one transaction: after a
//! crash at any instant, the store and the offset agree.

pub mod alerts;
pub mod daemon;
pub mod history;
pub mod outbox;
pub mod query;
pub mod settings;
mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use rusqlite_migration::{Migrations, M};
use thiserror::Error;

pub use write::{SourceRow, SourceSpec};

/// Forward-only schema steps; the version is SQLite's user_version.
const MIGRATION_LIST: &[M<'static>] = &[
    M::up(include_str!("migrations/0001_init.sql")),
    M::up(include_str!("migrations/0002_daemon.sql")),
    M::up(include_str!("migrations/0003_alerts.sql")),
    M::up(include_str!("migrations/0004_outbox.sql")),
    M::up(include_str!("migrations/0005_settings.sql")),
    // 0006: reserved for the branch that adds migrations/0006_*.sql.
    M::up(include_str!("migrations/0007_event_ahead.sql")),
];

fn migrations() -> Migrations<'static> {
    Migrations::new(MIGRATION_LIST.to_vec())
}

/// How long a writer waits for another writer's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot create the store directory {path}: {source}")]
    Dir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the store {path}: {source}")]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("no store at {path} yet: run `walwatch import` (or the daemon) first, or pass --db")]
    Missing { path: PathBuf },
    #[error("cannot migrate the store {path}: {message}")]
    Migrate { path: PathBuf, message: String },
    #[error("the store {path} was written by a newer walwatch (schema {found}, this one knows {known})")]
    TooNew { path: PathBuf, found: i64, known: usize },
    #[error("store {path}: {}", describe(source))]
    Sql { path: PathBuf, source: rusqlite::Error },
}

/// Adds advice to the SQLite errors an operator can act on.
fn describe(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            format!("{e} (another process holds the write lock; is a walwatch daemon or import running?)")
        }
        Some(DiskFull) => format!("{e} (the disk holding the store is full; nothing after the last commit was lost)"),
        Some(ReadOnly) => format!("{e} (no write permission on the store or its directory)"),
        _ => e.to_string(),
    }
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating and migrating as needed) the store for writing.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir { path: dir.into(), source })?;
        }
        let mut conn = Connection::open(path).map_err(|source| StoreError::Open { path: path.into(), source })?;
        configure(&conn).map_err(|source| StoreError::Open { path: path.into(), source })?;
        check_not_too_new(&conn, path)?;
        migrations()
            .to_latest(&mut conn)
            .map_err(|e| StoreError::Migrate { path: path.into(), message: e.to_string() })?;
        Ok(Store { conn, path: path.into() })
    }

    /// Opens an existing store for writing (migrating it to this version);
    /// a missing file is an error instead of a new empty store.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing { path: path.into() });
        }
        Store::open(path)
    }

    /// Opens an existing store for queries only.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing { path: path.into() });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|source| StoreError::Open { path: path.into(), source })?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|source| StoreError::Open { path: path.into(), source })?;
        check_not_too_new(&conn, path)?;
        Ok(Store { conn, path: path.into() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql { path: self.path.clone(), source }
    }
}

/// Per-connection settings; kept out of migrations because journal_mode
/// cannot change inside a transaction and busy_timeout is per connection.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

fn check_not_too_new(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|source| StoreError::Open { path: path.into(), source })?;
    if found > MIGRATION_LIST.len() as i64 {
        return Err(StoreError::TooNew { path: path.into(), found, known: MIGRATION_LIST.len() });
    }
    Ok(())
}

/// The store path when none is given: the systemd StateDirectory for the
/// service, /var/lib/walwatch for the `walwatch` user, else the XDG state dir.
pub fn default_path() -> PathBuf {
    if let Some(dir) = std::env::var_os("STATE_DIRECTORY").filter(|d| !d.is_empty()) {
        let first = dir.to_string_lossy().split(':').next().unwrap_or_default().to_string();
        return PathBuf::from(first).join("walwatch.db");
    }
    if std::env::var("USER").is_ok_and(|u| u == "walwatch") {
        return PathBuf::from("/var/lib/walwatch/walwatch.db");
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    state.join("walwatch").join("walwatch.db")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    #[test]
    fn opens_in_wal_mode_and_refuses_missing_for_queries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/w.db");
        assert!(matches!(Store::open_read_only(&path), Err(StoreError::Missing { .. })));
        let store = Store::open(&path).unwrap();
        let mode: String = store.conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        drop(store);
        Store::open_read_only(&path).unwrap();
    }
}
