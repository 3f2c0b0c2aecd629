//! One daemon per store. `walwatch run` holds an exclusive lock (flock) on
//! `<store>.lock` for as long as it runs; a second daemon on the same store
//! is refused with the first one's pid. The kernel releases the lock when
//! the process ends, however it ends (`kill -9`, a crash), so there is never
//! a stale lock to remove by hand.
//!
//! The lock is a separate file, not the store itself: closing any descriptor
//! of the store file would drop SQLite's own (POSIX) locks on it. The file
//! is never deleted: deleting it while a starting daemon has it open would
//! let two daemons lock two different files of the same name.
//!
//! `walwatch import` does not take the lock: importing while the daemon
//! runs is allowed, and the store keeps the two from counting anything twice.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::StoreError;

/// Held while the daemon runs; dropping it (or the process ending) releases the lock.
#[derive(Debug)]
pub(crate) struct DaemonLock {
    _file: File,
}

impl DaemonLock {
    /// Takes the lock of the store at `store`, or says which daemon has it.
    pub(crate) fn acquire(store: &Path) -> Result<DaemonLock, StoreError> {
        let path = lock_path(store);
        let failed = |error| StoreError::Lock { path: path.clone(), error };
        if let Some(dir) = store.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir { path: dir.into(), source })?;
        }
        // Not truncated on open: the holder's pid is in it.
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::DaemonRunning { path: store.into(), pid: holder(&mut file), lock: path });
            }
            Err(TryLockError::Error(e)) => return Err(failed(e)),
        }
        write_pid(&mut file).map_err(failed)?;
        Ok(DaemonLock { _file: file })
    }
}

/// `<store>.lock`, beside the store.
pub(crate) fn lock_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The pid the holder wrote; None in the moment between its lock and its write.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn write_pid(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    writeln!(file, "{}", std::process::id())?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_file_sits_beside_the_store() {
        assert_eq!(
            lock_path(Path::new("/var/lib/walwatch/walwatch.db")),
            Path::new("/var/lib/walwatch/walwatch.db.lock")
        );
    }

    /// Within one process a second open file description conflicts with the
    /// first (flock locks belong to the description), as another process would.
    #[test]
    fn a_second_holder_is_refused_with_the_pid_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("w.db");
        let first = DaemonLock::acquire(&store).unwrap();
        assert_eq!(std::fs::read_to_string(lock_path(&store)).unwrap(), format!("{}\n", std::process::id()));
        match DaemonLock::acquire(&store) {
            Err(StoreError::DaemonRunning { pid, lock, .. }) => {
                assert_eq!(pid, Some(std::process::id()));
                assert_eq!(lock, lock_path(&store));
            }
            other => panic!("expected DaemonRunning, got {other:?}"),
        }
        drop(first);
        DaemonLock::acquire(&store).unwrap();
    }
}
