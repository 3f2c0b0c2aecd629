//! The SQLite store: one file, WAL journal, versioned migrations, UTC times.
//!
//! Its queries are reached through one handle per aggregate, each in a file
//! of its own named after it and holding every query of the tables it owns:
//! `store.checkpoints()` reads, `store.sources_mut()` also writes (see
//! [`Store::checkpoints`] and the handles after it). A query is found by
//! what it reads, not by who asks for it.
//!
//! Events are written in batches (`store.events_mut().commit_batch(…)`),
//! each with the source offset it was read up to in one transaction: after
//! a crash at any instant, the store and the offset agree.
//!
//! Several processes may write one store at once (the daemon and a
//! `walwatch import`); SQLite serialises their transactions, and every
//! read-then-write step (migrating, finding or creating a source) takes the
//! write lock before it reads. Only one daemon runs per store ([`lock`]).
//! A store the user may not write is still opened for queries
//! (`Store::open_read_only`).

pub(crate) mod alerts;
pub(crate) mod batch;
pub(crate) mod checkpoints;
pub(crate) mod clusters;
mod columns;
pub(crate) mod daemon;
pub(crate) mod digests;
pub(crate) mod events;
pub(crate) mod fan_out;
mod filter;
pub(crate) mod listeners;
pub(crate) mod lock;
pub(crate) mod outbox;
pub mod retention;
pub(crate) mod settings;
pub(crate) mod silences;
pub(crate) mod sources;
pub(crate) mod streams;
#[cfg(test)]
pub(crate) mod shared_tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, DatabaseName, ErrorCode, OpenFlags, TransactionBehavior};
use thiserror::Error;

pub(crate) use checkpoints::{ByTrigger, CheckpointRow, PointCounts};
pub(crate) use events::{DatedAhead, LogTimes};
pub(crate) use filter::Filter;
pub(crate) use listeners::ListenerRow;
pub(crate) use sources::{LogGrowth, SourceRow, SourceSpec};
pub(crate) use streams::{Damage, StreamRow};

/// Forward-only schema steps; the version is SQLite's user_version (the
/// number of steps applied). Never edit a step once released: add one.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_daemon.sql"),
    include_str!("migrations/0003_alerts.sql"),
    include_str!("migrations/0004_outbox.sql"),
    include_str!("migrations/0005_settings.sql"),
    include_str!("migrations/0006_source_identity.sql"),
    include_str!("migrations/0007_event_ahead.sql"),
    include_str!("migrations/0008_unmatched.sql"),
    include_str!("migrations/0009_scale.sql"),
    include_str!("migrations/0010_rejected_lines.sql"),
    include_str!("migrations/0011_digest.sql"),
    include_str!("migrations/0012_retention.sql"),
    include_str!("migrations/0013_lifecycle.sql"),
    include_str!("migrations/0014_ingest_streams.sql"),
    include_str!("migrations/0015_tally_insert.sql"),
    include_str!("migrations/0016_fleet.sql"),
    include_str!("migrations/0017_server_uid.sql"),
    include_str!("migrations/0018_forgets.sql"),
    include_str!("migrations/0019_prune_progress.sql"),
    include_str!("migrations/0020_truncated.sql"),
    include_str!("migrations/0021_compact.sql"),
    include_str!("migrations/0022_point_lines.sql"),
];

/// `PRAGMA cache_size` for an import: negative is KiB (64 MiB).
const IMPORT_CACHE_KIB: i64 = -65_536;

/// Statements each connection keeps prepared: the per-cluster questions of
/// `status`, the alert rules and the metrics, asked of every cluster of a
/// fleet, are parsed once (rusqlite keeps 16 by default, fewer than a
/// status pass asks, so each pass parsed most of them again per cluster).
const STATEMENT_CACHE: usize = 64;

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
    // `error`, not `source`: the message includes it (see `Lock`).
    #[error("cannot read the store {path}: {error} (the service's store is readable by group walwatch: ask to be added to it, or run the command with sudo)")]
    NoAccess { path: PathBuf, error: std::io::Error },
    #[error("cannot migrate the store {path}: {message}")]
    Migrate { path: PathBuf, message: String },
    #[error("the store {path} was written by an older walwatch and this one cannot upgrade it ({reason}); run a walwatch command that may write it once (restarting the daemon does)")]
    TooOld { path: PathBuf, reason: String },
    #[error("the store {path} was written by a newer walwatch (schema {found}, this one knows {known})")]
    TooNew { path: PathBuf, found: i64, known: usize },
    #[error("cannot write the store {path}: {detail} (the store, its directory or its file system is read-only for this user; `summary`, `status`, `checkpoints` and `alerts` still read it, `import` and `run` need write access)")]
    ReadOnly { path: PathBuf, detail: String },
    #[error("cannot read the store {path} without write access: {wal} holds changes not yet copied into the store file, and reading them needs its index {shm}, which is missing (or unusable) and cannot be made here without write access; run a query once as a user who may write the store's directory, or copy the store together with its -wal file")]
    WalWithoutIndex { path: PathBuf, wal: PathBuf, shm: PathBuf },
    #[error("another walwatch daemon{} is already running on the store {path} (it holds the lock {lock}); stop it first, or give this one another store (--db, or path in [store])", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    DaemonRunning { path: PathBuf, lock: PathBuf, pid: Option<u32> },
    // `error`, not `source`: the message includes it already, and a source
    // would be printed a second time by `{:#}`.
    #[error("cannot take the daemon lock {path}: {error} (the daemon needs write access to the store's directory)")]
    Lock { path: PathBuf, error: std::io::Error },
    #[error("store {path}: {}", describe(source))]
    Sql { path: PathBuf, source: rusqlite::Error },
}

/// SQLite's extended result code of `e`, when it has one.
fn extended_code(e: &rusqlite::Error) -> Option<std::ffi::c_int> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
        _ => None,
    }
}

/// Adds advice to the SQLite errors an operator can act on.
fn describe(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            format!("{e} (another process holds the write lock; is a walwatch daemon or import running?)")
        }
        Some(DiskFull) => format!("{e} (the disk holding the store is full; nothing after the last commit was lost)"),
        Some(SystemIoFailure) if extended_code(e) == Some(rusqlite::ffi::SQLITE_IOERR_WRITE) => format!(
            "{e} (a write to the store failed: its disk is full or failing, or a file-size limit was reached; nothing \
             after the last commit was lost)"
        ),
        Some(ReadOnly) => format!("{e} (no write permission on the store or its directory)"),
        _ => e.to_string(),
    }
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Set by [`Store::use_import_settings`]: batches are committed without
    /// foreign-key checks.
    import: bool,
}

impl Store {
    /// Opens (creating and migrating as needed) the store for writing.
    /// A store this process may not write is refused with
    /// [`StoreError::ReadOnly`], never opened read-only behind the caller's back.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir { path: dir.into(), source })?;
        }
        let refused = |e| write_refused(path, e);
        let mut conn = Connection::open(path).map_err(refused)?;
        // SQLite falls back to read-only when the file cannot be opened for
        // writing (permissions, read-only mount); every write would then fail.
        if conn.is_readonly(DatabaseName::Main).map_err(refused)? {
            let detail = "the file cannot be opened for writing".to_string();
            return Err(StoreError::ReadOnly { path: path.into(), detail });
        }
        configure(&conn).map_err(refused)?;
        check_not_too_new(&conn, path)?;
        migrate(&mut conn, path)?;
        Ok(Store { conn, path: path.into(), import: false })
    }

    /// [`Store::open`], saying what it created: only the daemon and
    /// `import` make a store, and they say so (a typo in `--db` must not
    /// pass unnoticed).
    pub(crate) fn open_creating(path: &Path) -> Result<(Store, Option<Created>), StoreError> {
        let missing_dir = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf);
        // An empty file is no store yet either (a query calls it missing).
        let new = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let store = Store::open(path)?;
        Ok((store, new.then(|| Created { store: path.into(), dir: missing_dir })))
    }

    /// Opens an existing store for writing (migrating it to this version);
    /// a missing file is an error instead of a new empty store.
    pub(crate) fn open_existing(path: &Path) -> Result<Store, StoreError> {
        exists(path)?;
        Store::open(path)
    }

    /// Opens an existing store for queries only, also where this process may
    /// not write: a WAL store is read through its shared-memory index (-shm),
    /// which SQLite creates beside the store if it is missing; where it can
    /// do neither (a read-only directory or mount, and no -shm left by a
    /// writer), the store file is opened as immutable. That is safe only
    /// when no -wal file holds changes not yet in the store file, and
    /// nobody writes meanwhile: a writer would have created the -shm.
    pub(crate) fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        exists(path)?;
        let conn = match query_connection(path, false) {
            Ok(conn) => conn,
            Err(e) if cannot_index_wal(&e) => {
                let wal = sidecar(path, "-wal");
                if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
                    return Err(StoreError::WalWithoutIndex { path: path.into(), wal, shm: sidecar(path, "-shm") });
                }
                query_connection(path, true).map_err(|source| StoreError::Open { path: path.into(), source })?
            }
            Err(source) => return Err(StoreError::Open { path: path.into(), source }),
        };
        check_not_too_new(&conn, path)?;
        let version = schema_version(&conn).map_err(|source| StoreError::Open { path: path.into(), source })?;
        if version == 0 {
            // Nothing in it yet: a store being created (the daemon's first
            // start) or an empty file. Migrating it here would race the
            // process creating it, which could then fail its own open.
            return Err(StoreError::Missing { path: path.into() });
        }
        if version < MIGRATIONS.len() as i64 {
            // Written by an older walwatch (the daemon not restarted yet after
            // an upgrade): queries need the current schema, so upgrade it
            // here when we may write it, else say how.
            drop(conn);
            return match Store::open(path) {
                Ok(upgraded) => {
                    drop(upgraded);
                    Store::open_read_only(path)
                }
                Err(e) => Err(StoreError::TooOld { path: path.into(), reason: e.to_string() }),
            };
        }
        Ok(Store { conn, path: path.into(), import: false })
    }

    /// Runs `f` in one read transaction: every query in it sees the same
    /// rows, whatever another process commits meanwhile.
    pub(crate) fn in_snapshot<T, E: From<StoreError>>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.conn.execute_batch("BEGIN DEFERRED").map_err(|e| self.sql(e))?;
        let result = f();
        // Ends the transaction either way; a read-only one has nothing to keep.
        let ended = self.conn.execute_batch("COMMIT").map_err(|e| self.sql(e));
        let value = result?;
        ended?;
        Ok(value)
    }

    /// Settings for an import, on this connection only.
    ///
    /// A page cache large enough for an import's index pages (SQLite's
    /// default is 2 MB): a checkpoint-dense log of 100 000 lines makes a
    /// 30 MB store, whose index pages were read back from the file again and
    /// again. The cache grows only as pages are used; the daemon, which
    /// writes a few events at a time, keeps the default. Durability is
    /// unchanged: commits write and sync as before.
    ///
    /// And batches committed without foreign-key checks
    /// (`Events::commit_batch`): an immediate foreign key on a table with a
    /// trigger (checkpoint) makes every insert keep a statement journal, a
    /// copy of each page it changes, about 10 % of an import's CPU. A batch
    /// only refers to its cluster and source, found or made before it, and to
    /// the events it inserted itself, all under its write lock; every other
    /// write of the import (taking back a misfit's events) keeps the checks.
    pub(crate) fn use_import_settings(&mut self) -> Result<(), StoreError> {
        self.conn.pragma_update(None, "cache_size", IMPORT_CACHE_KIB).map_err(|e| self.sql(e))?;
        self.import = true;
        Ok(())
    }

    /// Foreign-key checks on or off; outside a transaction only (SQLite
    /// ignores the pragma inside one).
    fn foreign_keys(&self, on: bool) -> Result<(), StoreError> {
        self.conn.pragma_update(None, "foreign_keys", on).map_err(|e| self.sql(e))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Skips SQLite's checkpoint when the connection closes. Everything is
    /// committed in the WAL already (the next open replays it); the close-time
    /// checkpoint fsyncs the database and can take seconds on a busy disk,
    /// while systemd expects a prompt exit after SIGTERM.
    pub(crate) fn skip_checkpoint_on_close(&self) -> Result<(), StoreError> {
        use rusqlite::config::DbConfig;
        self.conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).map(drop).map_err(|e| self.sql(e))
    }

    /// Cancels this connection's running statement from another thread
    /// (SQLITE_INTERRUPT): the daemon's stop does not wait for an alert pass.
    pub(crate) fn interrupt_handle(&self) -> Interrupt {
        Interrupt(self.conn.get_interrupt_handle())
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql { path: self.path.clone(), source }
    }

    /// Runs `sql`, whose rows are one time each, handing every time to `each`.
    fn each_time(
        &self,
        sql: &str,
        values: impl rusqlite::Params,
        mut each: impl FnMut(jiff::Timestamp),
    ) -> Result<(), StoreError> {
        let q = move || -> rusqlite::Result<()> {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let mut rows = stmt.query(values)?;
            while let Some(r) = rows.next()? {
                each(columns::from_micros(r.get(0)?));
            }
            Ok(())
        };
        q().map_err(|e| self.sql(e))
    }
}

/// The handles, one per aggregate: `$read` takes `&Store` and reads;
/// `$write`, where the aggregate has writes, takes `&mut Store` and can do
/// both. A handle is a borrow of the store wrapped in the aggregate's type,
/// whose reads are defined for any `Deref<Target = Store>` and whose writes
/// for any `DerefMut<Target = Store>`: one type per aggregate, and a write
/// needs the store mutably as it always did.
macro_rules! handles {
    ($($(#[$doc:meta])* $module:ident::$handle:ident: $read:ident $(, $write:ident)?;)*) => {
        impl Store {
            $(
                $(#[$doc])*
                pub fn $read(&self) -> $module::$handle<&Store> {
                    $module::$handle(self)
                }
                $(
                    #[doc = concat!("[`Store::", stringify!($read), "`], with its writes.")]
                    pub fn $write(&mut self) -> $module::$handle<&mut Store> {
                        $module::$handle(self)
                    }
                )?
            )*
        }
    };
}

handles! {
    /// Checkpoints and restartpoints (table checkpoint and its day tally);
    /// written with the events that make them.
    checkpoints::Checkpoints: checkpoints;
    /// The events of the logs (table event), written in batches.
    events::Events: events, events_mut;
    /// The files and streams read, how far, and how (table source).
    sources::Sources: sources, sources_mut;
    /// The clusters' names and what is known of each as a whole (table cluster).
    clusters::Clusters: clusters, clusters_mut;
    /// The alerts (table alert), changed in a transaction per cluster.
    alerts::Alerts: alerts, alerts_mut;
    /// The silences of alert rules (table silence).
    silences::Silences: silences, silences_mut;
    /// The notices to deliver (table outbox).
    outbox::Outbox: outbox, outbox_mut;
    /// The daily digest's days (table digest).
    digests::Digests: digests, digests_mut;
    /// The settings timeline walwatch read itself (tables setting, setting_read).
    settings::Settings: settings, settings_mut;
    /// The files shipped by Vector agents (tables ingest_stream, ingest_damage, store_identity).
    streams::Streams: streams, streams_mut;
    /// The daemon's listeners (table listener).
    listeners::Listeners: listeners, listeners_mut;
    /// The daemon's heartbeat, its problems with followed paths, and the
    /// clusters' status facts (tables daemon, file_problem).
    daemon::Daemon: daemon, daemon_mut;
    /// The pruning of old rows and what it did (table retention).
    retention::Retention: retention, retention_mut;
}

/// Cancels the statement a store's connection is running, from another
/// thread ([`Store::interrupt_handle`]).
pub(crate) struct Interrupt(rusqlite::InterruptHandle);

impl Interrupt {
    pub(crate) fn interrupt(&self) {
        self.0.interrupt();
    }
}

/// The store file is there; "missing" only when it is known not to be: a
/// directory this user may not search hides it, which is said as such.
fn exists(path: &Path) -> Result<(), StoreError> {
    use std::io::ErrorKind::{NotADirectory, NotFound};
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), NotFound | NotADirectory) => Err(StoreError::Missing { path: path.into() }),
        Err(error) => Err(StoreError::NoAccess { path: path.into(), error }),
    }
}

/// A store made by [`Store::open_creating`], and the directory made for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Created {
    pub(crate) store: PathBuf,
    pub(crate) dir: Option<PathBuf>,
}

impl std::fmt::Display for Created {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "created the store {}", self.store.display())?;
        match &self.dir {
            Some(dir) => write!(f, " (and its directory {})", dir.display()),
            None => Ok(()),
        }
    }
}

/// Why a store could not be opened for writing; a read-only store (file,
/// directory or mount) gets an error that says so and what still works.
fn write_refused(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        // A directory where the store should be cannot be opened either; that is not read-only.
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied) if !path.is_dir() => {
            StoreError::ReadOnly { path: path.into(), detail: e.to_string() }
        }
        _ => StoreError::Open { path: path.into(), source: e },
    }
}

/// A read-only connection whose first read has succeeded (opening a WAL
/// store's index happens there, not at open). `immutable` skips the WAL and
/// all locking (see [`Store::open_read_only`]).
fn query_connection(path: &Path, immutable: bool) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = if immutable {
        Connection::open_with_flags(format!("{}?immutable=1", file_uri(path)), flags)?
    } else {
        Connection::open_with_flags(path, flags)?
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?;
    Ok(conn)
}

/// Whether a read-only open failed because the WAL index (-shm) could not
/// be opened or created, as in a directory or on a mount this user cannot write.
fn cannot_index_wal(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly))
}

/// `<store><suffix>`, e.g. the store's -wal file.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// An SQLite URI naming `path` (`%`, `?` and `#` escaped; an absolute path
/// gets an empty authority so that a leading `//` stays part of the path).
fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy();
    let escaped = text.replace('%', "%25").replace('?', "%3f").replace('#', "%23");
    if escaped.starts_with('/') {
        format!("file://{escaped}")
    } else {
        format!("file:{escaped}")
    }
}

/// Switches the store to WAL (a no-op once it is). On a new store that
/// needs the exclusive lock; while another process holds the reserved lock
/// (creating the same store, migrating it) SQLite refuses at once, without
/// the busy wait, as waiting could deadlock: "database is locked", which
/// killed a daemon started while an import created its store. Retried for as
/// long as the busy timeout, with this connection's lock released between.
fn wal_mode(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && started.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Per-connection settings; kept out of migrations because journal_mode
/// cannot change inside a transaction and busy_timeout is per connection.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Only on a new, empty file, before the first table (and before WAL
    // writes the header): then deleted rows' pages can be given back to the
    // file system (store/retention.rs). On an existing store it would change
    // nothing but cost a write transaction at every open.
    if conn.pragma_query_value(None, "page_count", |r| r.get::<_, i64>(0))? == 0 {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    wal_mode(conn)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Statement journals (an insert that fires the tally triggers, an
    // INSERT OR IGNORE) in memory, not in a temporary file: in a file they
    // were 16 pwrite calls per imported event, 40 % of an import's CPU.
    // They hold one statement's changes, so the memory is small.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

fn check_not_too_new(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let found = schema_version(conn).map_err(|source| StoreError::Open { path: path.into(), source })?;
    if found > MIGRATIONS.len() as i64 {
        return Err(StoreError::TooNew { path: path.into(), found, known: MIGRATIONS.len() });
    }
    Ok(())
}

fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Applies the migrations this store lacks, all in one transaction. The
/// write lock is taken (BEGIN IMMEDIATE) before the version is read: of
/// several processes opening a new store at once, one migrates while the
/// others wait (busy timeout), then find the schema up to date. Reading the
/// version first and migrating after let them all run the first step.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let failed = |e| migrate_failed(path, e);
    // Up to date: no write lock needed (every open but the first).
    if schema_version(conn).map_err(failed)? == MIGRATIONS.len() as i64 {
        return Ok(());
    }
    // Foreign keys off while the steps run (the pragma cannot change inside
    // a transaction): a step that rebuilds the event table drops the old
    // one, which with them on is a row-by-row delete of every event (minutes
    // at a million checkpoints) instead of freeing its pages. Steps copy
    // rows with their ids and make no reference dangle.
    conn.pragma_update(None, "foreign_keys", false).map_err(failed)?;
    let steps = migrate_steps(conn, path);
    let restored = conn.pragma_update(None, "foreign_keys", true).map_err(failed);
    steps?;
    restored
}

/// A migration's error: a store this process may not write, or a step that failed.
fn migrate_failed(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => write_refused(path, e),
        _ => StoreError::Migrate { path: path.into(), message: describe(&e) },
    }
}

/// [`migrate`]'s steps, in one write transaction.
fn migrate_steps(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let failed = |e| migrate_failed(path, e);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(failed)?;
    let found = schema_version(&tx).map_err(failed)?;
    let Some(missing) = usize::try_from(found).ok().and_then(|v| MIGRATIONS.get(v..)) else {
        return Err(StoreError::TooNew { path: path.into(), found, known: MIGRATIONS.len() });
    };
    for sql in missing {
        tx.execute_batch(sql).map_err(failed)?;
    }
    give_back_free_pages(&tx).map_err(failed)?;
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64).map_err(failed)?;
    tx.commit().map_err(failed)
}

/// Truncates the file by its free pages, where the store was made with
/// auto_vacuum = INCREMENTAL (elsewhere a no-op): a step that rewrites a
/// table (0021_compact.sql: half the file at a million checkpoints) leaves
/// the old one's pages free. The pragma frees one page per row stepped.
fn give_back_free_pages(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("PRAGMA incremental_vacuum")?;
    let mut rows = stmt.query([])?;
    while rows.next()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// .cargo/config.toml builds SQLite without the global page-cache and
    /// allocation mutexes that serialize parallel readers (store/fan_out.rs).
    #[test]
    fn sqlite_is_built_for_parallel_readers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("o.db")).unwrap();
        let mut stmt = store.conn.prepare("PRAGMA compile_options").unwrap();
        let options: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
        assert!(!options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"), "{options:?}");
        assert!(options.iter().any(|o| o == "THREADSAFE=1"), "{options:?}");
    }

    #[test]
    fn migrations_apply_in_order_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let store = Store::open(&path).unwrap();
        assert_eq!(schema_version(&store.conn).unwrap(), MIGRATIONS.len() as i64);
        let index: String = store
            .conn
            .query_row("SELECT sql FROM sqlite_master WHERE name = 'source_identity'", [], |r| r.get(0))
            .unwrap();
        assert!(index.starts_with("CREATE UNIQUE INDEX"), "{index}");
        drop(store);
        // A second open finds nothing to do (it would fail re-creating a table).
        let store = Store::open(&path).unwrap();
        assert_eq!(schema_version(&store.conn).unwrap(), MIGRATIONS.len() as i64);
    }

    /// A reader that has the new file open while the store is created (the
    /// daemon's first start, `walwatch status` polling it) holds a shared
    /// lock when the writer switches to WAL: the open waits for it.
    #[test]
    fn a_reader_on_the_new_file_does_not_fail_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        Connection::open(&path).unwrap().execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);").unwrap();
        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN; SELECT count(*) FROM t;").unwrap();
        let count: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(count, 1);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            reader.execute_batch("COMMIT").unwrap();
        });
        let started = std::time::Instant::now();
        let store = Store::open(&path).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(250), "the open waited for the reader");
        let mode: String = store.conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        release.join().unwrap();
    }

    /// Another process in the middle of a write (as when two processes
    /// create the store at once, one migrating) holds the reserved lock when
    /// this open switches the file to WAL; SQLite refuses that upgrade at
    /// once, without its busy wait (it could deadlock). The open retries.
    #[test]
    fn a_writer_on_the_new_file_does_not_fail_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        Connection::open(&path).unwrap().execute_batch("CREATE TABLE t(x);").unwrap();
        let writer = Connection::open(&path).unwrap();
        writer.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1);").unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            writer.execute_batch("COMMIT").unwrap();
        });
        let store = Store::open(&path).unwrap();
        let mode: String = store.conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        release.join().unwrap();
    }

    /// A store whose schema is not there yet (being created by another
    /// process) is "no store yet" to a query: never migrated from here,
    /// which would race its creator.
    #[test]
    fn a_query_leaves_a_store_being_created_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        Connection::open(&path).unwrap().execute_batch("CREATE TABLE t(x);").unwrap();
        let err = Store::open_read_only(&path).err().unwrap();
        assert!(matches!(err, StoreError::Missing { .. }), "{err}");
        let conn = Connection::open(&path).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), 0, "not migrated");
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).unwrap();
        assert_eq!(tables, 1);
        // An empty file too.
        std::fs::write(dir.path().join("e.db"), b"").unwrap();
        assert!(matches!(Store::open_read_only(&dir.path().join("e.db")), Err(StoreError::Missing { .. })));
    }

    /// What `import` and the daemon say: the store, and the directory only when it was made.
    #[test]
    fn creating_a_store_says_what_was_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/w.db");
        let (store, created) = Store::open_creating(&path).unwrap();
        drop(store);
        let made =
            format!("created the store {} (and its directory {})", path.display(), path.parent().unwrap().display());
        assert_eq!(created.unwrap().to_string(), made);
        assert_eq!(Store::open_creating(&path).unwrap().1, None, "an existing store");
        let beside = dir.path().join("new/v.db");
        let created = Store::open_creating(&beside).unwrap().1.unwrap();
        assert_eq!(created.to_string(), format!("created the store {}", beside.display()));
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.db");
        drop(Store::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", MIGRATIONS.len() as i64 + 1).unwrap();
        drop(conn);
        let err = Store::open(&path).err().unwrap();
        assert!(matches!(err, StoreError::TooNew { found, .. } if found == MIGRATIONS.len() as i64 + 1), "{err}");
    }

    #[test]
    fn uris_escape_what_sqlite_would_parse() {
        assert_eq!(file_uri(Path::new("/var/lib/w.db")), "file:///var/lib/w.db");
        assert_eq!(file_uri(Path::new("/a?b#c%d/w.db")), "file:///a%3fb%23c%25d/w.db");
        assert_eq!(file_uri(Path::new("rel/w.db")), "file:rel/w.db");
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
