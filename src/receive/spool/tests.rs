//! A spool's files on their own, on a real filesystem: the index of the
//! generation before, taking back an uncommitted write, removal, and
//! giving read blocks back in steps.

use std::os::unix::fs::MetadataExt;

use super::*;

fn row(generation: i64) -> StreamRow {
    StreamRow {
        id: 7,
        host: "db1".into(),
        file: "/var/log/postgresql/postgresql-15-main.log".into(),
        cluster_id: 1,
        generation,
        accepted_end: 0,
        spool_len: 0,
        index_len: 0,
        lines: 0,
        duplicates: 0,
        next_offset: None,
    }
}

/// Writes `lines` (offset, hash, text) to `spool` and commits them as the store would.
fn commit(spool: &mut Spool, lines: &[(u64, u64, &[u8])]) {
    let mut pending = Pending::default();
    for &(offset, hash, text) in lines {
        pending.push(offset, hash, text, None);
    }
    spool.row = spool.write(&pending).unwrap();
}

#[test]
fn only_invalid_data_means_damaged() {
    assert!(damaged(&io::Error::new(io::ErrorKind::InvalidData, "cut")));
    for kind in [io::ErrorKind::NotFound, io::ErrorKind::StorageFull, io::ErrorKind::Other] {
        assert!(!damaged(&io::Error::new(kind, "x")), "{kind:?}");
    }
}

#[test]
fn pending_is_empty_until_a_line_is_pushed() {
    let mut pending = Pending::default();
    assert!(pending.is_empty());
    pending.push(0, 1, b"LOG:  checkpoint starting: time", None);
    assert!(!pending.is_empty());
}

/// A new generation finds the lines of the one before by its index; with
/// that index gone it finds none, without an error; an index that cannot
/// be opened for another reason is an error, never "nothing recorded".
#[test]
fn the_generation_before_is_known_by_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Spool::open(dir.path(), row(0)).unwrap();
    commit(&mut first, &[(0, 11, b"first line"), (11, 22, b"second line")]);
    drop(first);

    let mut second = Spool::open(dir.path(), row(1)).unwrap();
    assert_eq!(second.recorded_before(11).unwrap(), Some(22));
    assert_eq!(second.recorded_before(0).unwrap(), Some(11));
    assert_eq!(second.recorded_before(5).unwrap(), None);

    let before = dir.path().join(file_name(&row(0), 0, "idx"));
    std::fs::remove_file(&before).unwrap();
    let mut second = Spool::open(dir.path(), row(1)).unwrap();
    assert_eq!(second.recorded_before(11).unwrap(), None);

    // A symlink to itself: opening it fails, and not with NotFound.
    std::os::unix::fs::symlink(&before, &before).unwrap();
    let err = Spool::open(dir.path(), row(1)).err().expect("an unopenable index is an error");
    assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");
}

/// What a request wrote and the store did not commit is cut off, the
/// committed part kept.
#[test]
fn cut_back_takes_back_an_uncommitted_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut spool = Spool::open(dir.path(), row(0)).unwrap();
    commit(&mut spool, &[(0, 1, b"committed")]);
    let mut pending = Pending::default();
    pending.push(10, 2, b"never committed", None);
    spool.write(&pending).unwrap();
    let log_path = spool.log_path.clone();
    let len = |ext: &str| std::fs::metadata(log_path.with_extension(ext)).unwrap().len();
    assert_eq!((len("log"), len("idx")), (10 + 16, 2 * RECORD));
    spool.cut_back().unwrap();
    assert_eq!((len("log"), len("idx")), (10, RECORD));
    assert_eq!(std::fs::read(&log_path).unwrap(), b"committed\n");
}

/// Removing a generation removes its spool and the index of the one
/// before (its own index stays for the next); an index before that is
/// already gone is no error.
#[test]
fn remove_takes_the_spool_and_the_index_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = |g: i64, ext: &str| dir.path().join(file_name(&row(g), g, ext));
    for g in 0..2 {
        let mut spool = Spool::open(dir.path(), row(g)).unwrap();
        commit(&mut spool, &[(0, 1, b"a line")]);
    }
    Spool::open(dir.path(), row(1)).unwrap().remove().unwrap();
    let exists = |g, ext| path(g, ext).exists();
    assert_eq!((exists(0, "log"), exists(0, "idx"), exists(1, "log"), exists(1, "idx")), (true, false, false, true));
    let mut third = Spool::open(dir.path(), row(2)).unwrap();
    commit(&mut third, &[(0, 1, b"a line")]);
    std::fs::remove_file(path(1, "idx")).unwrap();
    third.remove().unwrap();
    assert!(!path(2, "log").exists() && path(2, "idx").exists());

    // An index before that cannot be removed (a directory in its place)
    // is an error, and the spool stays.
    let mut fourth = Spool::open(dir.path(), row(3)).unwrap();
    commit(&mut fourth, &[(0, 1, b"a line")]);
    std::fs::remove_file(path(2, "idx")).unwrap();
    std::fs::create_dir(path(2, "idx")).unwrap();
    assert!(fourth.remove().is_err());
    assert!(path(3, "log").exists());
}

/// Read blocks go back to the filesystem in steps of RELEASE_STEP, never
/// the head nor the last KEEP_BEHIND before the read position: one block
/// short of a step gives nothing back, a whole step gives it back.
#[test]
fn read_blocks_are_given_back_in_steps() {
    let dir = tempfile::tempdir().unwrap();
    let mut spool = Spool::open(dir.path(), row(0)).unwrap();
    let start = KEEP_HEAD.next_multiple_of(BLOCK);
    let total = start + 2 * RELEASE_STEP + KEEP_BEHIND;
    let text = vec![b'x'; total as usize - 1];
    commit(&mut spool, &[(0, 1, &text)]);
    let log_path = spool.log_path.clone();
    let sectors = || std::fs::metadata(&log_path).unwrap().blocks();
    let full = sectors();
    assert!(full * 512 >= total, "written out: {full} sectors");

    spool.release_read(start + RELEASE_STEP + KEEP_BEHIND - BLOCK).unwrap();
    assert_eq!(sectors(), full, "one block short of a step");
    spool.release_read(start + RELEASE_STEP + KEEP_BEHIND).unwrap();
    let released = (full - sectors()) * 512;
    assert_eq!(released, RELEASE_STEP, "a step");
    assert_eq!(std::fs::metadata(&log_path).unwrap().len(), total, "the length stays");
    let bytes = std::fs::read(&log_path).unwrap();
    assert!(bytes[..start as usize].iter().all(|&b| b == b'x'), "the head stays");
    assert!(bytes[start as usize..(start + RELEASE_STEP) as usize].iter().all(|&b| b == 0));
    assert_eq!(bytes[(start + RELEASE_STEP) as usize], b'x');
}
