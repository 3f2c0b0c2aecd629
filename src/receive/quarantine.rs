//! A damaged spool set aside: its files moved into the spool directory's
//! `quarantine/` under a name that says which stream, generation and time
//! they were (nothing is deleted: what is left of them is the evidence).

use std::io;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::spool::file_name;
use crate::store::StreamRow;

/// Moves the spool of `row`'s generation from `dir` into `kept_dir`; its
/// index is copied when it is whole (the next generation still answers a
/// batch sent again from it), moved when not. Returns where they went,
/// as `<kept_dir>/<stream>-<generation>-<time>`.
pub(crate) fn set_aside(dir: &Path, kept_dir: &Path, row: &StreamRow, at: Timestamp) -> io::Result<PathBuf> {
    std::fs::create_dir_all(kept_dir)?;
    let stem = format!("{}-{}-{}", row.id, row.generation, at.as_second());
    let base = kept_dir.join(&stem);
    let log = dir.join(file_name(row, row.generation, "log"));
    move_if_there(&log, &base.with_extension("log"))?;
    let index = dir.join(file_name(row, row.generation, "idx"));
    let whole = std::fs::metadata(&index).is_ok_and(|m| m.len() >= row.index_len);
    match whole {
        true => std::fs::copy(&index, base.with_extension("idx")).map(drop)?,
        false => move_if_there(&index, &base.with_extension("idx"))?,
    }
    Ok(base)
}

fn move_if_there(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index_len: u64) -> StreamRow {
        StreamRow {
            id: 3,
            host: "db-1".into(),
            file: "/var/log/postgresql/postgresql-15-main.log".into(),
            cluster_id: 1,
            generation: 2,
            accepted_end: 100,
            spool_len: 100,
            index_len,
            lines: 2,
            duplicates: 0,
            next_offset: Some(100),
        }
    }

    #[test]
    fn a_whole_index_stays_for_the_next_generation_a_cut_one_goes() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("quarantine");
        std::fs::write(dir.path().join("3-2.log"), b"cut").unwrap();
        std::fs::write(dir.path().join("3-2.idx"), [0u8; 32]).unwrap();
        let at = Timestamp::from_second(1_795_000_000).unwrap();
        let base = set_aside(dir.path(), &kept, &row(32), at).unwrap();
        assert_eq!(base, kept.join("3-2-1795000000"));
        assert_eq!(std::fs::read(base.with_extension("log")).unwrap(), b"cut");
        assert!(!dir.path().join("3-2.log").exists());
        assert!(dir.path().join("3-2.idx").exists() && base.with_extension("idx").exists());
        // An index shorter than committed is evidence too: moved, not kept.
        std::fs::write(dir.path().join("3-2.idx"), [0u8; 16]).unwrap();
        let later = Timestamp::from_second(1_795_000_060).unwrap();
        let base = set_aside(dir.path(), &kept, &row(32), later).unwrap();
        assert!(!dir.path().join("3-2.idx").exists());
        assert_eq!(std::fs::read(base.with_extension("idx")).unwrap().len(), 16);
        assert!(!base.with_extension("log").exists(), "no spool left to move");
    }
}
