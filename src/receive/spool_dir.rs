//! The directory a store's shipped files are kept in belongs to that store
//! alone: it names the store it belongs to (`STORE`, the store's identity)
//! and is locked while a receiver uses it. Two stores pointed at one
//! directory would overwrite each other's spools (they are named by stream
//! id); the second is refused with the reason instead.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

use crate::store::Store;

/// The file naming the store a spool directory belongs to.
const OWNER: &str = "STORE";
const LOCK: &str = ".lock";

/// A spool directory claimed by one store, locked until dropped.
#[derive(Debug)]
pub(crate) struct SpoolDir {
    path: PathBuf,
    /// Held: the flock lasts as long as the file is open.
    _lock: File,
}

impl SpoolDir {
    /// Creates `path` when missing, checks it belongs to `store` (or to no
    /// store yet, then records that it does) and locks it.
    pub(crate) fn claim(path: &Path, store: &mut Store) -> Result<SpoolDir, String> {
        let at = |e: io::Error| format!("{}: {e}", path.display());
        std::fs::create_dir_all(path).map_err(at)?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(path.join(LOCK)).map_err(at)?;
        if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Err(format!(
                "{} is in use by another walwatch daemon's receiver: give each store a spool of its own ([ingest] spool)",
                path.display()
            ));
        }
        let identity = store.streams().identity().map_err(|e| e.to_string())?;
        let owner_path = path.join(OWNER);
        match std::fs::read_to_string(&owner_path) {
            Ok(owner) if owner.trim() == identity => {}
            Ok(owner) => {
                return Err(format!(
                    "{} holds the shipped files of another store (its {OWNER} file names {:?}, this store is {identity:?}): give each store a spool of its own ([ingest] spool)",
                    path.display(),
                    owner.trim()
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => record_owner(&owner_path, &identity).map_err(at)?,
            Err(e) => return Err(at(e)),
        }
        Ok(SpoolDir { path: path.to_path_buf(), _lock: lock })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Where damaged spools are moved.
    pub(crate) fn quarantine(&self) -> PathBuf {
        self.path.join("quarantine")
    }
}

fn record_owner(path: &Path, identity: &str) -> io::Result<()> {
    let mut file = File::create(path)?;
    writeln!(file, "{identity}")?;
    file.sync_all()
}

/// The spool directory of the store at `db`: `[ingest] spool` or the
/// store's own (`<name>-ingest`); but an earlier release's shared
/// `ingest/` when it is this store's (it names this store, or names none
/// and holds this store's streams) and the store's own does not exist yet.
pub(crate) fn locate(section: &crate::config::IngestSection, db: &Path, store: &mut Store) -> PathBuf {
    let own = section.spool_dir(db);
    let Some(shared) = section.shared_spool_dir(db).filter(|s| s.is_dir() && !own.exists()) else { return own };
    let identity = store.streams().identity().unwrap_or_default();
    let owner = std::fs::read_to_string(shared.join(OWNER)).ok();
    let ours = match owner {
        Some(owner) => owner.trim() == identity,
        None => store
            .streams()
            .all()
            .unwrap_or_default()
            .iter()
            .any(|s| shared.join(super::spool::file_name(s, s.generation, "idx")).exists()),
    };
    match ours {
        true => shared,
        false => own,
    }
}
